// Kernels for test_gpu_pool: fill a buffer at once, or only after spinning
// on the device for a while (so the work is still queued when the host moves
// on). Launchers are extern "C" and take a stream; nothing runs on the
// legacy default stream. The prototypes are repeated in test_gpu_pool.c.
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 of each block spins for `ns` nanoseconds of the global timer
// (bounded by a cycle count too, should that timer not advance), then the
// block fills its share of p with v.
__global__ void delay_fill(uint32_t *p, size_t n, uint32_t v, uint64_t ns) {
  if (threadIdx.x == 0) {
    uint64_t t0 = now_ns();
    long long c0 = clock64();
    while (now_ns() - t0 < ns && clock64() - c0 < (1ll << 34)) {
    }
  }
  __syncthreads();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

__global__ void fill(uint32_t *p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

}  // namespace

extern "C" int gpt_delay_fill(uint32_t *p, size_t n, uint32_t v,
                              uint64_t ns, void *stream) {
  delay_fill<<<64, 256, 0, (cudaStream_t)stream>>>(p, n, v, ns);
  return (int)cudaGetLastError();
}

extern "C" int gpt_fill(uint32_t *p, size_t n, uint32_t v, void *stream) {
  fill<<<64, 256, 0, (cudaStream_t)stream>>>(p, n, v);
  return (int)cudaGetLastError();
}
