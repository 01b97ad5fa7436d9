# lib/gpu/pool.c (the device pool's allocator, on the CPU) and the public
# device pool (lib/gpu/devpool_*.c).
gpufeed_add_test(test_pool_stress
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pool_stress.c TIMEOUT 300 LABELS pool)
gpufeed_add_test(test_pool_oom
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pool_oom.c TIMEOUT 60 LABELS pool)
gpufeed_add_test(test_pool_api
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pool_api.c TIMEOUT 60 LABELS pool)
# The printable memory plan (lib/pipeline/memory_plan.c).
gpufeed_add_test(test_pool_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_pool_plan.c TIMEOUT 60 LABELS pool)
# On a real device (skips with 77 where there is none).
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_pool
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_pool.c
            ${CMAKE_CURRENT_LIST_DIR}/gpu_pool_kernels.cu
    TIMEOUT 300 LABELS pool gpu)
endif()
