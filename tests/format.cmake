# lib/format and lib/common/crc32c.c: the dataset format (docs/FORMAT.md),
# its reader, writer, atomic commit and source folder listing.
set(_fmt ${CMAKE_CURRENT_LIST_DIR})
gpufeed_add_test(test_crc32c SOURCES ${_fmt}/test_crc32c.c TIMEOUT 60)
gpufeed_add_test(test_format_roundtrip SOURCES ${_fmt}/test_format_roundtrip.c
                 TIMEOUT 120)
gpufeed_add_test(test_format_corrupt SOURCES ${_fmt}/test_format_corrupt.c
                 TIMEOUT 120)
gpufeed_add_test(test_format_summary SOURCES ${_fmt}/test_format_summary.c
                 TIMEOUT 60)
gpufeed_add_test(test_format_faults SOURCES ${_fmt}/test_format_faults.c
                 TIMEOUT 60)
gpufeed_add_test(test_format_commit SOURCES ${_fmt}/test_format_commit.c
                 TIMEOUT 60)
gpufeed_add_test(test_format_stream SOURCES ${_fmt}/test_format_stream.c
                 TIMEOUT 60)
gpufeed_add_test(test_format_bigindex SOURCES ${_fmt}/test_format_bigindex.c
                 TIMEOUT 120)
gpufeed_add_test(test_format_threads SOURCES ${_fmt}/test_format_threads.c
                 TIMEOUT 120 LABELS threaded)
# A remote dataset (slow://) from many threads at once: pages read once,
# shards opened once, every answer the local open's.
gpufeed_add_test(test_dataset_lazy_threads
                 SOURCES ${_fmt}/test_dataset_lazy_threads.c
                 TIMEOUT 300 LABELS threaded)
gpufeed_add_test(test_folder_scan SOURCES ${_fmt}/test_folder_scan.c
                 TIMEOUT 60)
gpufeed_add_test(test_folder_opts SOURCES ${_fmt}/test_folder_opts.c
                 TIMEOUT 60)
