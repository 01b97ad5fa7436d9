# lib/io/s3_*.c: the S3 storage's parts. Unit tests need no server.
gpufeed_add_test(test_s3_sigv4
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_s3_sigv4.c TIMEOUT 60
  LABELS io s3)

# The CLI over S3: moto's server checking signatures (tests/s3/s3_server.py);
# skips without moto and boto3 unless GPUFEED_REQUIRE_S3=1.
gpufeed_add_script_test(cli_s3 SCRIPT cli_s3.sh TIMEOUT 240 LABELS cli s3 net)

# WebDataset tar shards in a bucket, with and without their indexes
# (tests/cli_s3_shards.sh).
gpufeed_add_script_test(cli_s3_shards SCRIPT cli_s3_shards.sh TIMEOUT 240 LABELS cli s3 net)
set_property(TEST cli_s3_shards APPEND PROPERTY ENVIRONMENT
             "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>")

# An image folder on S3: listed (pages, no HEAD), built and read as a local
# folder would be (tests/cli_s3_folder.sh).
gpufeed_add_script_test(cli_s3_folder SCRIPT cli_s3_folder.sh TIMEOUT 300 LABELS cli s3 net)

# S3 through the fault proxy, with container credentials
# (tests/cli_s3_faults.sh).
gpufeed_add_script_test(cli_s3_faults SCRIPT cli_s3_faults.sh TIMEOUT 300 LABELS cli s3 net)
set_property(TEST cli_s3_faults APPEND PROPERTY ENVIRONMENT
             "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>")

# The builder's output in a bucket: shards uploaded as they are written,
# the index last; refusals, --force and SIGINT leave no index and nothing
# open (tests/cli_s3_build.sh).
gpufeed_add_script_test(cli_s3_build SCRIPT cli_s3_build.sh TIMEOUT 300 LABELS cli s3 net)
set_property(TEST cli_s3_build APPEND PROPERTY ENVIRONMENT
             "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>")

# `gpufeed index s3://...`: each shard's index an object beside it (one
# PUT), against tarfile's offsets; indexes there left alone unless --force;
# failures named (tests/cli_index_s3.sh).
gpufeed_add_script_test(cli_index_s3 SCRIPT cli_index_s3.sh TIMEOUT 300 LABELS cli s3 net)
set_property(TEST cli_index_s3 APPEND PROPERTY ENVIRONMENT
             "GPUFEED_NETPROXY=$<TARGET_FILE:netproxy>")
