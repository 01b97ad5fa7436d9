# lib/io/s3_*.c: the S3 storage's parts. Unit tests need no server.
gpufeed_add_test(test_s3_sigv4
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_s3_sigv4.c TIMEOUT 60
  LABELS io s3)
