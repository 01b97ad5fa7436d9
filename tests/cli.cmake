# The gpufeed CLI (tools/): usage, build round trips, corrupt datasets,
# atomic builds, PngSuite sources and labels files. The scripts get
# $GPUFEED, $GPUFEED_TEST_DATA and $GPUFEED_TEST_TMP from ctest.
gpufeed_add_script_test(cli_usage SCRIPT cli_usage.sh TIMEOUT 60 LABELS cli)
gpufeed_add_test(test_build_roundtrip
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_build_roundtrip.c
  TIMEOUT 120 LABELS cli)
gpufeed_add_test(test_build_verify
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_build_verify.c
  TIMEOUT 60 LABELS cli)
# They run the CLI: make sure building them builds it.
add_dependencies(test_build_roundtrip gpufeed_cli)
add_dependencies(test_build_verify gpufeed_cli)
gpufeed_add_script_test(cli_corrupt SCRIPT cli_corrupt.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_atomic SCRIPT cli_atomic.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_pngsuite SCRIPT cli_pngsuite.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_labels SCRIPT cli_labels.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_bench SCRIPT cli_bench.sh TIMEOUT 120 LABELS cli)
gpufeed_add_script_test(cli_floats SCRIPT cli_floats.sh TIMEOUT 120 LABELS cli)
gpufeed_add_script_test(cli_log_env SCRIPT cli_log_env.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_create_phases SCRIPT cli_create_phases.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_json SCRIPT cli_json.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_umask SCRIPT cli_umask.sh TIMEOUT 60 LABELS cli)
gpufeed_add_script_test(cli_bench_small SCRIPT cli_bench_small.sh TIMEOUT 60 LABELS cli)
# bench --worker-sched: the workers' policy seen in /proc while it runs.
gpufeed_add_script_test(cli_worker_sched SCRIPT cli_worker_sched.sh TIMEOUT 120 LABELS cli)
gpufeed_add_script_test(cli_build_sources SCRIPT cli_build_sources.sh TIMEOUT 120 LABELS cli)
# `synth --sizes` and inspect's size histogram.
gpufeed_add_script_test(cli_sizes SCRIPT cli_sizes.sh TIMEOUT 60 LABELS cli)
# `synth --format jpeg --quality Q`.
gpufeed_add_script_test(cli_synth_jpeg SCRIPT cli_synth_jpeg.sh TIMEOUT 60 LABELS cli jpeg)
# bench --rrc / --eval-crop / --resize / --mean / --std.
gpufeed_add_script_test(cli_bench_resize SCRIPT cli_bench_resize.sh TIMEOUT 60 LABELS cli)
# `gpufeed index`: WebDataset shards' sidecar indexes against tarfile's
# offsets, patterns and list files, atomic writes, failures named, http
# secrets, SIGINT (tests/cli_index.sh); the testing CLI drives the write
# path's fault sites when it is built.
gpufeed_add_script_test(cli_index SCRIPT cli_index.sh TIMEOUT 120 LABELS cli)
set_property(TEST cli_index APPEND PROPERTY ENVIRONMENT
             "GPUFEED_TESTING_CLI=$<TARGET_FILE:gpufeed_cli_testing>")
# `build --format wds`: WebDataset tar shards, read back with tarfile (and
# webdataset when installed).
gpufeed_add_script_test(cli_build_wds SCRIPT cli_build_wds.sh TIMEOUT 180 LABELS cli)
# `gpufeed index --verify`: the sums of a shard's images against tarfile's
# offsets and a CRC32C of their own, failures named, changed images read,
# sums refused (tests/cli_index_verify.sh).
gpufeed_add_script_test(cli_index_verify SCRIPT cli_index_verify.sh TIMEOUT 60 LABELS cli)
