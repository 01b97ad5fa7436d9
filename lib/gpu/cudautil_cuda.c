/* The bench's CUDA helpers (gpu/cudautil.h) with the CUDA runtime. */
#include "gpu/cudautil.h"

#include "spin.h"

#include <cuda_runtime.h>
#include <string.h>

static int cuda_fail(cudaError_t e, const char *what) {
  return gf_fail(e == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA, NULL,
                 GF_NO_INDEX, GF_NO_INDEX, "%s: %s (%s)", what,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

int gf_gpu_stream_create(int32_t device, void **stream) {
  *stream = NULL;
  cudaError_t e = cudaSetDevice(device);
  cudaStream_t s;
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return cuda_fail(e, "creating a stream");
  *stream = s;
  return 0;
}

void gf_gpu_stream_destroy(void *stream) {
  if (stream)
    cudaStreamDestroy((cudaStream_t)stream);
}

int gf_gpu_stream_sync(void *stream) {
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaStreamSynchronize");
}

int gf_gpu_event_create(int32_t device, void **ev) {
  *ev = NULL;
  cudaError_t e = cudaSetDevice(device);
  cudaEvent_t x;
  if (e == cudaSuccess)
    e = cudaEventCreateWithFlags(&x, cudaEventBlockingSync |
                                         cudaEventDisableTiming);
  if (e != cudaSuccess)
    return cuda_fail(e, "creating a blocking-sync event");
  *ev = x;
  return 0;
}

void gf_gpu_event_destroy(void *ev) {
  if (ev)
    cudaEventDestroy((cudaEvent_t)ev);
}

int gf_gpu_event_record(void *ev, void *stream) {
  cudaError_t e = cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream);
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaEventRecord");
}

int gf_gpu_event_wait(void *ev) {
  cudaError_t e = cudaEventSynchronize((cudaEvent_t)ev);
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaEventSynchronize");
}

int gf_gpu_spin(void *stream, double ms) {
  cudaError_t e = gf_launch_spin((cudaStream_t)stream, (uint64_t)(ms * 1e6));
  return e == cudaSuccess ? 0 : cuda_fail(e, "spin kernel");
}

int gf_gpu_h2d_probe(int32_t device, uint64_t bytes, int reps, double *gbps) {
  *gbps = 0;
  cudaError_t e = cudaSetDevice(device);
  void *h = NULL, *d = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t a = NULL, b = NULL;
  if (e == cudaSuccess)
    e = cudaHostAlloc(&h, bytes, cudaHostAllocDefault);
  if (e == cudaSuccess)
    e = cudaMalloc(&d, bytes);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaEventCreate(&a);
  if (e == cudaSuccess)
    e = cudaEventCreate(&b);
  if (e == cudaSuccess) {
    memset(h, 0x5a, bytes); /* real pages, not zero-page mappings */
    e = cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
  }
  if (e == cudaSuccess)
    e = cudaEventRecord(a, s);
  for (int i = 0; i < reps && e == cudaSuccess; i++)
    e = cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess)
    e = cudaEventRecord(b, s);
  if (e == cudaSuccess)
    e = cudaEventSynchronize(b);
  float ms = 0;
  if (e == cudaSuccess)
    e = cudaEventElapsedTime(&ms, a, b);
  if (e == cudaSuccess && ms > 0)
    *gbps = (double)bytes * reps / (ms * 1e-3) / 1e9;
  if (a)
    cudaEventDestroy(a);
  if (b)
    cudaEventDestroy(b);
  if (s)
    cudaStreamDestroy(s);
  cudaFree(d);
  cudaFreeHost(h);
  return e == cudaSuccess ? 0 : cuda_fail(e, "pinned host-to-device probe");
}

int gf_gpu_init(int32_t device) {
  cudaError_t e = cudaSetDevice(device < 0 ? 0 : device);
  if (e == cudaSuccess)
    e = cudaFree(0);
  return e == cudaSuccess ? 0 : cuda_fail(e, "creating the CUDA context");
}
