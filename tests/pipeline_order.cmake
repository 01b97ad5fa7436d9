# lib/pipeline: the loader's order (sampler.c) and the host sample cache
# (cache.c). test_cache_threads is the one to run under
# -DGPUFEED_SANITIZE=thread.
foreach(t test_sampler_perm test_sampler_split test_sampler_block
          test_sampler_resume test_cache test_cache_threads test_cache_pin)
  gpufeed_add_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c
                   TIMEOUT 120 LABELS pipeline)
endforeach()
target_link_libraries(test_sampler_perm PRIVATE m)
# The C sampler against the Python port of sampler.h's description.
add_executable(sampler_dump ${CMAKE_CURRENT_LIST_DIR}/sampler_dump.c)
target_link_libraries(sampler_dump PRIVATE gpufeed_testutil)
gpufeed_add_script_test(test_sampler_ref SCRIPT test_sampler_ref.sh
                        TIMEOUT 300 LABELS pipeline)
