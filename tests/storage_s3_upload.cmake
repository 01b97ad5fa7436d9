# lib/io/s3_upload.c: uploads to S3 against moto's server checking
# signatures. tests/s3_upload.sh starts moto, runs the C test
# (test_s3_upload, built here but not registered alone: it needs the
# server) and checks the bucket with boto3; skips without moto and boto3
# unless GPUFEED_REQUIRE_S3=1.
add_executable(test_s3_upload ${CMAKE_CURRENT_LIST_DIR}/test_s3_upload.c)
target_link_libraries(test_s3_upload PRIVATE gpufeed_testutil)
gpufeed_add_script_test(s3_upload SCRIPT s3_upload.sh TIMEOUT 240 LABELS s3 net)
set_property(TEST s3_upload APPEND PROPERTY ENVIRONMENT
             "GPUFEED_S3_UPLOAD_TEST=$<TARGET_FILE:test_s3_upload>")
