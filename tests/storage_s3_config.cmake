# lib/io/s3_config.c: the AWS credential and configuration chain, over an
# environment and shared files of the test's own. No server, no network.
gpufeed_add_test(test_s3_config
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_s3_config.c TIMEOUT 60
  LABELS io s3)
