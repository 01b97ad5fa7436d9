/* A kernel the GPU tests use to prove that a released batch is not
 * overwritten while a kernel still reads it: it keeps a stream busy for a
 * given time, then copies what a buffer holds. CUDA builds only. */
#ifndef GF_TEST_GPU_DELAY_H
#define GF_TEST_GPU_DELAY_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues one block that spins for `ns` nanoseconds of the GPU's global
 * timer, then, when `src` and `dst` are not NULL, copies `n` bytes from src
 * to dst (so a test can see what src held after the delay). On stream `s`:
 * a stream of the test's or cudaStreamLegacy (NULL is refused: name the
 * default stream meant). */
cudaError_t gf_test_launch_delay(cudaStream_t s, uint64_t ns, const void *src,
                                 void *dst, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif /* GF_TEST_GPU_DELAY_H */
