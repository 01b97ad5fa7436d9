#include "gpu_testutil.h"

#include "common/common.h"

#ifdef GPUFEED_HAVE_CUDA
#include <cuda_runtime.h>

static int cuda_fail(cudaError_t e, const char *what) {
  return gf_fail(e == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA, NULL,
                 GF_NO_INDEX, GF_NO_INDEX, "%s: %s (%s)", what,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

int gf_test_copy_to_host(void *dst, const void *src, size_t n) {
  cudaError_t e = cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaMemcpy (device to host)");
}

int gf_test_gpu_mem_info(int32_t device, uint64_t *free_bytes,
                         uint64_t *total) {
  size_t f = 0, t = 0;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess)
    e = cudaMemGetInfo(&f, &t);
  *free_bytes = f;
  *total = t;
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaMemGetInfo");
}
#else
int gf_test_copy_to_host(void *dst, const void *src, size_t n) {
  (void)dst, (void)src, (void)n;
  return GF_ENODEVICE;
}

int gf_test_gpu_mem_info(int32_t device, uint64_t *free_bytes,
                         uint64_t *total) {
  (void)device;
  *free_bytes = *total = 0;
  return GF_ENODEVICE;
}
#endif
