# lib/io/s3_creds.c: container and EC2 instance credentials; the document's
# reader is s3_creds_doc.c. The reader and the URLs need no server; the
# fetches go to tests/s3/creds_server.py on 127.0.0.1 (the standard
# library's Python), never to another address. Skips without python3.
gpufeed_add_test(test_s3_creds
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_s3_creds.c TIMEOUT 60
  LABELS io s3)
