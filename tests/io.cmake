# lib/io (the reader: io_uring and the pread pool) and lib/common/fault.c.
gpufeed_add_test(test_fault SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_fault.c
                 TIMEOUT 60 LABELS io)
gpufeed_add_test(test_io_reader SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_io_reader.c
                 TIMEOUT 120 LABELS io)
gpufeed_add_test(test_io_faults SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_io_faults.c
                 TIMEOUT 120 LABELS io)
gpufeed_add_test(test_io_direct SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_io_direct.c
                 TIMEOUT 60 LABELS io)
gpufeed_add_test(test_io_fixed SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_io_fixed.c
                 TIMEOUT 60 LABELS io)
# The same program driven by GPUFEED_FAULT alone, as CLI tests use it.
add_test(NAME test_io_env_fault COMMAND test_io_faults env)
gpufeed_test_props(test_io_env_fault 60 io)
set_property(TEST test_io_env_fault APPEND PROPERTY ENVIRONMENT
             "GPUFEED_FAULT=uring_setup:1:EPERM:sticky" "GPUFEED_LOG=info")
