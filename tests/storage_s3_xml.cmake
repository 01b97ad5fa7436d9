# lib/io/s3_xml.c: S3's XML replies (ListObjectsV2 pages, errors, the
# multipart replies) from bodies as moto and AWS write them, and every
# refusal. No server, no network.
gpufeed_add_test(test_s3_xml
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_s3_xml.c TIMEOUT 120
  LABELS io s3)
