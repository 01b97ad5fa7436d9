# Network test infrastructure (docs/TESTING.md): a private nginx on the
# loopback (tests/net/nginx.sh) and netproxy, a fault and latency proxy of
# our own (tests/net/netproxy*.c: a test helper, not part of the library),
# with the tests of both. Each test starts its own nginx on a free port and
# its own proxy, in its own GPUFEED_TEST_TMP, and stops them. Without nginx
# or curl they skip (77); GPUFEED_REQUIRE_HTTP=1 (CI) makes that a failure.
add_executable(netproxy
  ${CMAKE_CURRENT_LIST_DIR}/net/netproxy.c
  ${CMAKE_CURRENT_LIST_DIR}/net/netproxy_loop.c
  ${CMAKE_CURRENT_LIST_DIR}/net/netproxy_conn.c
  ${CMAKE_CURRENT_LIST_DIR}/net/netproxy_rules.c)
target_link_libraries(netproxy PRIVATE gpufeed_flags)

# The fixtures for C tests (tests/net/nettest.h).
add_library(gpufeed_nettest STATIC ${CMAKE_CURRENT_LIST_DIR}/net/nettest.c)
target_include_directories(gpufeed_nettest PUBLIC ${CMAKE_CURRENT_LIST_DIR}/net)
target_compile_definitions(gpufeed_nettest PRIVATE
  GF_NET_NGINX_SH="${CMAKE_CURRENT_LIST_DIR}/net/nginx.sh"
  GF_NET_NETPROXY="$<TARGET_FILE:netproxy>")
target_link_libraries(gpufeed_nettest PUBLIC gpufeed_flags)
add_dependencies(gpufeed_nettest netproxy)

# Every network test gets the proxy's path, and the labels net and http.
function(gpufeed_net_test name)
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
               "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>")
  set_property(TEST ${name} APPEND PROPERTY LABELS net)
endfunction()

# Shell tests (tests/net/netlib.sh).
foreach(t nginx nginx_tls proxy_forward proxy_latency)
  add_test(NAME net_${t}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net/test_${t}.sh)
  gpufeed_test_props(net_${t} 120 "")
  gpufeed_net_test(net_${t})
endforeach()

# pytest files (tests/net/test_*.py; tests/net/netfixture.py), one test a
# file, run by /usr/bin/python3.
file(GLOB _gf_net_py CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/net/test_*.py)
foreach(f ${_gf_net_py})
  get_filename_component(stem ${f} NAME_WE)
  string(REGEX REPLACE "^test_" "" stem ${stem})
  add_test(NAME net_py_${stem}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net/run_pytest.sh ${f})
  gpufeed_test_props(net_py_${stem} 300 "python")
  gpufeed_net_test(net_py_${stem})
endforeach()

# The C fixtures, used as a C test would.
gpufeed_add_test(test_net_fixture
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/net/test_net_fixture.c TIMEOUT 120)
target_link_libraries(test_net_fixture PRIVATE gpufeed_nettest)
gpufeed_net_test(test_net_fixture)

# gf_object_stream (lib/io/storage*.c): local files, and HTTP from nginx
# through netproxy: one GET, resumed after a cut, refused when the object
# changed (tests/test_storage_stream.c).
gpufeed_add_test(test_storage_stream
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_storage_stream.c TIMEOUT 180
  LABELS io http threaded)
target_link_libraries(test_storage_stream PRIVATE gpufeed_http_fixture)
gpufeed_net_test(test_storage_stream)
# The same over S3, from moto (tests/storage_stream_s3.sh); skips without
# moto and boto3 unless GPUFEED_REQUIRE_S3=1.
gpufeed_add_script_test(storage_stream_s3 SCRIPT storage_stream_s3.sh
  TIMEOUT 240 LABELS io s3 net)
set_property(TEST storage_stream_s3 APPEND PROPERTY ENVIRONMENT
  "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>"
  "GPUFEED_STREAM_TEST=$<TARGET_FILE:test_storage_stream>")
