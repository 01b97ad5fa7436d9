# lib/io/storage_http*.c: the HTTP(S) storage. Unit tests need no server;
# the others read datasets built by the CLI from a private nginx on
# 127.0.0.1, through netproxy for the faults (tests/net/, docs/TESTING.md),
# and skip (77) without nginx unless GPUFEED_REQUIRE_HTTP=1.
foreach(t url reply retry replies)
  gpufeed_add_test(test_http_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_http_${t}.c TIMEOUT 60
    LABELS io http)
endforeach()

add_library(gpufeed_http_fixture STATIC ${CMAKE_CURRENT_LIST_DIR}/http_fixture.c)
target_link_libraries(gpufeed_http_fixture PUBLIC gpufeed_nettest gpufeed_testutil)

# name, timeout, labels
foreach(spec "dataset;180;io http threaded" "faults;300;io http"
             "loader;240;pipeline http threaded"
             "outage;240;pipeline http threaded"
             "records;300;pipeline http threaded")
  list(GET spec 0 t)
  list(GET spec 1 secs)
  list(GET spec 2 labels)
  string(REPLACE " " ";" labels "${labels}")
  gpufeed_add_test(test_http_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_http_${t}.c TIMEOUT ${secs}
    LABELS ${labels})
  target_link_libraries(test_http_${t} PRIVATE gpufeed_http_fixture)
  gpufeed_net_test(test_http_${t})
endforeach()

# The CLI over HTTP: a secret in the URL (user:password, ?token=) appears
# in no output of a failing run.
gpufeed_add_script_test(cli_http_secrets SCRIPT cli_http_secrets.sh
  TIMEOUT 180 LABELS cli http)
gpufeed_net_test(cli_http_secrets)
