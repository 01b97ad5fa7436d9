# The loader in GPU mode: compiled in every CUDA build, skips without a GPU.
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_loader
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_loader.c
            ${CMAKE_CURRENT_LIST_DIR}/gpu_delay.cu
    LABELS gpu TIMEOUT 600)
  target_link_libraries(test_gpu_loader PRIVATE gpufeed_loader_fixture CUDA::cudart_static)
endif()
# The staging slots pinned in the background: a failed pin, destroy while
# pinning.
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_stage_pin
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_stage_pin.c
    LABELS gpu TIMEOUT 300)
  target_link_libraries(test_gpu_stage_pin PRIVATE gpufeed_loader_fixture CUDA::cudart_static)
endif()
# JPEG decoded on the GPU by nvJPEG inside the loader: skips without a GPU
# or without nvJPEG (GPUFEED_REQUIRE_NVJPEG=1 makes the latter a failure).
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_loader_jpeg
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_loader_jpeg.c
    LABELS gpu TIMEOUT 300)
  target_link_libraries(test_gpu_loader_jpeg PRIVATE gpufeed_jpeg_fixture CUDA::cudart_static)
endif()
