# The disk cache tier (lib/io/storage_cached.c and the cache_*.c beside it),
# over the test storage slow:// (tests/slow_storage.c): epochs served from
# the disk, changed objects and damaged or half-written entries, processes
# sharing one folder, eviction under a small limit, a full disk.
add_library(gpufeed_cache_testutil STATIC ${CMAKE_CURRENT_LIST_DIR}/cache_testutil.c)
target_link_libraries(gpufeed_cache_testutil PUBLIC gpufeed_testutil)
foreach(t epochs entries evict faults procs)
  gpufeed_add_test(test_cache_tier_${t}
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cache_tier_${t}.c
    LABELS threaded cache TIMEOUT 300)
  target_link_libraries(test_cache_tier_${t} PRIVATE gpufeed_loader_fixture
                        gpufeed_cache_testutil)
endforeach()
