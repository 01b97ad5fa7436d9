# lib/common: errors, version, limits.
gpufeed_add_test(test_errors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_errors.c)
gpufeed_add_test(test_log_env SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_log_env.c)
