/* A kernel that keeps a stream busy for a given time: the simulated
 * training step of `gpufeed bench --step-ms` (gf_gpu_spin in
 * lib/gpu/cudautil.h). CUDA builds only. */
#ifndef GF_KERNELS_SPIN_H
#define GF_KERNELS_SPIN_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues one block that spins for `ns` nanoseconds of the GPU's global
 * timer. Returns cudaSuccess, cudaErrorInvalidValue (a NULL or legacy
 * stream) or the launch's error. */
cudaError_t gf_launch_spin(cudaStream_t s, uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif /* GF_KERNELS_SPIN_H */
