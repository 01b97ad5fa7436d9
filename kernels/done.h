/* A word the host reads to learn, without a CUDA call, that a stream has
 * passed a point: one thread writes a value into host memory (pinned and
 * mapped) once the work queued before it on that stream is done. The
 * stage uses it so that handing a finished batch to the caller's stream
 * needs no cudaStreamWaitEvent (lib/gpu/stage.h). CUDA builds only. */
#ifndef GF_KERNELS_DONE_H
#define GF_KERNELS_DONE_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues on s a single thread that stores `value` at `word` (the device
 * address of 8-byte-aligned mapped host memory) and fences it to the
 * system, after everything queued on s before it. Returns cudaSuccess,
 * cudaErrorInvalidValue (a NULL word, a NULL or legacy stream) or the
 * launch's error. */
cudaError_t gf_launch_done_word(uint64_t *word, uint64_t value,
                                cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* GF_KERNELS_DONE_H */
