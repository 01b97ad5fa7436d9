#include "spin.h"

static __device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void gf_spin_kernel(uint64_t ns) {
  uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

extern "C" cudaError_t gf_launch_spin(cudaStream_t s, uint64_t ns) {
  if (s == nullptr || s == cudaStreamLegacy)
    return cudaErrorInvalidValue;
  gf_spin_kernel<<<1, 256, 0, s>>>(ns);
  return cudaGetLastError();
}
