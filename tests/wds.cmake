# lib/format/tar_scan.c and wds_*.c: WebDataset tar shards' header scan,
# WebDataset's key/field and brace rules, DALI's index files.
set(_wds ${CMAKE_CURRENT_LIST_DIR})
gpufeed_add_test(test_tar_scan SOURCES ${_wds}/test_tar_scan.c TIMEOUT 120)
gpufeed_add_test(test_wds_keys SOURCES ${_wds}/test_wds_keys.c TIMEOUT 60)
gpufeed_add_test(test_wds_index SOURCES ${_wds}/test_wds_index.c TIMEOUT 60)
gpufeed_add_test(test_wds_sums SOURCES ${_wds}/test_wds_sums.c TIMEOUT 60)
gpufeed_add_test(test_wds_source SOURCES ${_wds}/test_wds_source.c TIMEOUT 120
                 LABELS threaded loader)
# Other fields handed with each batch (gf_shards_config.fields,
# gf_batch_field): their bytes, the bound, the cache, the skip repair.
gpufeed_add_test(test_wds_fields SOURCES ${_wds}/test_wds_fields.c TIMEOUT 120
                 LABELS threaded loader)
# The CLI over tar shards, locally and from nginx (tests/cli_shards.sh).
gpufeed_add_script_test(cli_shards SCRIPT cli_shards.sh TIMEOUT 240
                        LABELS cli http)
gpufeed_net_test(cli_shards)
# The same shards in streaming mode (--shard-index stream) from nginx and
# through the fault proxy: one GET a shard an epoch, resumed after a cut,
# the seed's order (tests/cli_stream_shards.sh).
gpufeed_add_script_test(cli_stream_shards SCRIPT cli_stream_shards.sh
                        TIMEOUT 240 LABELS cli http)
gpufeed_net_test(cli_stream_shards)
# Shards written by the webdataset library and GNU tar, read by webdataset
# and by gpufeed, compared sample by sample (tests/cli_wds_interop.sh).
gpufeed_add_script_test(cli_wds_interop SCRIPT cli_wds_interop.sh TIMEOUT 120
                        LABELS cli)
# lib/format/wds_writer.c: WebDataset shards written, read back with the
# tar scan and the key rules above.
gpufeed_add_test(test_wds_writer SOURCES ${_wds}/test_wds_writer.c TIMEOUT 60)
gpufeed_add_test(test_wds_json SOURCES ${_wds}/test_wds_json.c TIMEOUT 60)
# lib/format/wds_stream.c: a shard read front to back, checked against the
# indexed reader of the same shard.
gpufeed_add_test(test_wds_stream SOURCES ${_wds}/test_wds_stream.c TIMEOUT 60)
# Tar shards in streaming mode through the loader (lib/pipeline/stream.c).
gpufeed_add_test(test_wds_stream_loader SOURCES ${_wds}/test_wds_stream_loader.c
                 TIMEOUT 120 LABELS threaded loader)
