# The loader (lib/pipeline/loader_*.c): exactly once, determinism, resume,
# cache, bad samples, injected I/O faults, lifetime. All are threaded.
add_library(gpufeed_loader_fixture STATIC ${CMAKE_CURRENT_LIST_DIR}/loader_fixture.c)
target_link_libraries(gpufeed_loader_fixture PUBLIC gpufeed_testutil)
foreach(t once order errors lifetime resume_identity elastic release_streams
        read_buffer sched ring_error fetch)
  gpufeed_add_test(test_loader_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_${t}.c
    LABELS threaded loader TIMEOUT 600)
  target_link_libraries(test_loader_${t} PRIVATE gpufeed_loader_fixture)
endforeach()
# The same exactly-once suite with io_uring refused: forced off by the
# environment override, and refused by a simulated setup failure (EPERM,
# as a container's seccomp profile answers).
add_test(NAME test_loader_once_pread COMMAND test_loader_once)
gpufeed_test_props(test_loader_once_pread 600 "threaded;loader")
set_property(TEST test_loader_once_pread APPEND PROPERTY ENVIRONMENT
  "GPUFEED_IO=pread;GPUFEED_TEST_CONFIGS=60")
add_test(NAME test_loader_once_uring_refused COMMAND test_loader_once)
gpufeed_test_props(test_loader_once_uring_refused 600 "threaded;loader")
set_property(TEST test_loader_once_uring_refused APPEND PROPERTY ENVIRONMENT
  "GPUFEED_FAULT=uring_setup:1:EPERM:sticky;GPUFEED_TEST_CONFIGS=60")
# loco datasets built by the CLI and by the writer, in host mode.
gpufeed_add_test(test_loader_loco
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_loco.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_loader_loco PRIVATE gpufeed_loader_fixture)
add_dependencies(test_loader_loco gpufeed_cli)
gpufeed_add_test(test_loader_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_plan.c LABELS loader)
target_link_libraries(test_loader_plan PRIVATE gpufeed_loader_fixture)
# Autotune's reads-alone rule (O_DIRECT raw datasets: 2 threads x 64).
gpufeed_add_test(test_loader_reads_alone
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_reads_alone.c
  LABELS threaded loader TIMEOUT 120)
target_link_libraries(test_loader_reads_alone PRIVATE gpufeed_loader_fixture)
# The memory plan against what create really allocates (host mode; GPU mode
# too where a device is found).
gpufeed_add_test(test_loader_plan_create
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_plan_create.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_loader_plan_create PRIVATE gpufeed_loader_fixture gpufeed_jpeg_fixture)
# Versioned structs of the API: only the published sizes accepted.
gpufeed_add_test(test_struct_size
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_struct_size.c LABELS loader TIMEOUT 60)
target_link_libraries(test_struct_size PRIVATE gpufeed_loader_fixture)
# Errors raised while a loader is created: the inner message kept, the file
# named once; the batch-larger-than-the-share error says why and what to do.
gpufeed_add_test(test_loader_create_errors
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_create_errors.c
  LABELS loader TIMEOUT 60)
target_link_libraries(test_loader_create_errors PRIVATE gpufeed_loader_fixture)
# The skip policy's repair and its finalize run outside the loader's mutex.
gpufeed_add_test(test_loader_repair_unlocked
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_repair_unlocked.c
  LABELS threaded loader TIMEOUT 120)
target_link_libraries(test_loader_repair_unlocked PRIVATE gpufeed_loader_fixture)
# No valid image refused for its size: a mixed folder (sizes, channels, bit
# depths, the first file the smallest) and its datasets deliver every image
# once an epoch under both policies; a file grown after create fails naming
# it. PngSuite's valid images the same (skips without the test data).
gpufeed_add_test(test_loader_sizes
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_sizes.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_loader_sizes PRIVATE gpufeed_loader_fixture)
add_test(NAME test_loader_sizes_pngsuite COMMAND test_loader_sizes pngsuite)
gpufeed_test_props(test_loader_sizes_pngsuite 300 "threaded;loader")
# Dataset metadata: epoch size (counted against a delivered epoch), class
# names and source paths, on a PNG folder, a labels-file folder and the
# datasets built from them, world 1 and 4, drop_last on and off.
gpufeed_add_test(test_loader_info
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_loader_info.c
  LABELS threaded loader TIMEOUT 300)
target_link_libraries(test_loader_info PRIVATE gpufeed_loader_fixture)
