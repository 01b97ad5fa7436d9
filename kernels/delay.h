/* A kernel that keeps a stream busy for a given time: the simulated
 * training step of `gpufeed bench --step-ms` and the delay the GPU tests
 * use to prove that a released batch is not overwritten while a kernel
 * still reads it. CUDA builds only. */
#ifndef GF_KERNELS_DELAY_H
#define GF_KERNELS_DELAY_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues one thread that spins for `ns` nanoseconds of the GPU's global
 * timer, then, when `src` and `dst` are not NULL, copies `n` bytes from src
 * to dst (so a test can see what src held after the delay). */
cudaError_t gf_launch_spin(cudaStream_t s, uint64_t ns, const void *src,
                           void *dst, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
