# lib/pipeline: the loader's order (sampler.c) and the host sample cache
# (cache.c). test_cache_threads is the one to run under
# -DGPUFEED_SANITIZE=thread.
foreach(t test_sampler_perm test_sampler_split test_sampler_block
          test_sampler_resume test_cache test_cache_threads test_cache_pin)
  gpufeed_add_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                   TIMEOUT 120 LABELS pipeline)
endforeach()
target_link_libraries(test_sampler_perm PRIVATE m)
