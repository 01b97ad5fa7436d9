# Tracing and autotune (lib/pipeline/trace.c, the loader's trace and
# autotune, gpufeed bench --trace). Threaded: TSan runs them.
gpufeed_add_test(test_trace
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_trace.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_trace PRIVATE gpufeed_loader_fixture)
gpufeed_add_script_test(cli_trace SCRIPT cli_trace.sh TIMEOUT 120 LABELS cli threaded)
