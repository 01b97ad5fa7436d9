# The batch transform: its CPU reference (lib/xform/xform_ref.c) and the
# CUDA kernels held to it (kernels/xform.cu); the gather kernel
# (kernels/gather.cu).
gpufeed_add_test(test_transform_ref
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_transform_ref.c
  TIMEOUT 120 LABELS transform)
if(GPUFEED_HAVE_CUDA)
  gpufeed_add_test(test_gpu_kernels
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_kernels.c
    TIMEOUT 300 LABELS transform gpu)
  target_include_directories(test_gpu_kernels PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
  target_link_libraries(test_gpu_kernels PRIVATE CUDA::cudart_static)
  # The gather kernel that takes cached samples from pinned host memory.
  gpufeed_add_test(test_gpu_gather
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_gather.c
    TIMEOUT 300 LABELS transform gpu)
  target_include_directories(test_gpu_gather PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
  target_link_libraries(test_gpu_gather PRIVATE CUDA::cudart_static)
endif()
# The GPU resize's tiles (kernels/resize_tile.h) run step by step on the
# host against the CPU reference: no device needed.
gpufeed_add_test(test_resize_tiles
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_resize_tiles.c
  TIMEOUT 120 LABELS transform)
target_include_directories(test_resize_tiles PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
# The resize transforms: the window (against torchvision's get_params
# restated) and the CPU reference (hand-computed cases, a naive version).
gpufeed_add_test(test_resize_ref
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_resize_ref.c
  TIMEOUT 120 LABELS transform)
# A sample decoded as a region of its image (a JPEG window, possibly at a
# reduced DCT scale): the window in the region's coordinates against the
# documented arithmetic.
gpufeed_add_test(test_xform_region
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_xform_region.c
  TIMEOUT 120 LABELS transform jpeg)
