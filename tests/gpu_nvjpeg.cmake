# The GPU JPEG decoder (lib/gpu/nvjpeg_*.c) with NVIDIA's libnvjpeg, loaded
# at run time: compiled in every CUDA build; skips without a GPU or without
# the library.
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_nvjpeg
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_nvjpeg.c
    LABELS gpu TIMEOUT 300)
  target_link_libraries(test_gpu_nvjpeg PRIVATE CUDA::cudart_static)
endif()
