# What ships has no fault injection and no test hooks (lib/CMakeLists.txt:
# gpufeed_obj feeds libgpufeed.so and .a, the gpufeed CLI and the Python
# extension; the tests link gpufeed_testing): nm and strings of each, and
# GPUFEED_FAULT set around the CLI and the extension, against the tests'
# build of the same (check_shipped.sh).
set(_shipped $<TARGET_FILE:gpufeed> $<TARGET_FILE:gpufeed_static>
    $<TARGET_FILE:gpufeed_testing> $<TARGET_FILE:gpufeed_cli_testing>)
if(GPUFEED_PYTHON)
  list(APPEND _shipped $<TARGET_FILE:gpufeed_python>)
endif()
add_test(NAME check_shipped
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_shipped.sh ${_shipped})
gpufeed_test_props(check_shipped 300 "cli;fault")
