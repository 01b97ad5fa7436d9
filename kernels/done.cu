#include "done.h"

__global__ void gf_done_word_kernel(volatile uint64_t *word, uint64_t value) {
  // Kernels of a stream run one after another: everything before this one
  // on its stream has completed, and its writes are visible device-wide.
  *word = value;
  __threadfence_system();
}

extern "C" cudaError_t gf_launch_done_word(uint64_t *word, uint64_t value,
                                           cudaStream_t s) {
  if (!word || s == nullptr || s == cudaStreamLegacy)
    return cudaErrorInvalidValue;
  gf_done_word_kernel<<<1, 1, 0, s>>>(word, value);
  return cudaGetLastError();
}
