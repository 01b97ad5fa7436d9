/* CUDA helpers for the CLI's bench (tools/bench.c), so CUDA stays out of
 * its code: the CUDA context, a stream, blocking-sync events, a spinning
 * kernel that stands for a training step, and a pinned host-to-device
 * bandwidth probe. The loader does not use them (its GPU stage is
 * gpu/stage.h); what only the tests use lives in tests/.
 *
 * cudautil_cuda.c implements them with the CUDA runtime; cudautil_nocuda.c,
 * in builds without CUDA, answers GF_ENODEVICE. Streams and events are
 * passed as void * (a cudaStream_t, a cudaEvent_t). Any thread. */
#ifndef GF_GPU_CUDAUTIL_H
#define GF_GPU_CUDAUTIL_H

#include "common/common.h"

/* Makes the CUDA context of `device` exist (cudaSetDevice + cudaFree(0)):
 * a training process has one before it creates a loader, so the bench
 * creates it first and reports its cost apart. */
int gf_gpu_init(int32_t device);
/* A non-blocking stream on `device` (*stream is a cudaStream_t). */
int gf_gpu_stream_create(int32_t device, void **stream);
void gf_gpu_stream_destroy(void *stream);
/* Waits on the host for everything queued on `stream`. */
int gf_gpu_stream_sync(void *stream);
/* An event for the host to wait on without spinning: recorded on a stream,
 * waited on with the calling thread asleep (cudaEventBlockingSync), so a
 * consumer waiting for its training step leaves its core to the workers.
 * *ev is a cudaEvent_t. */
int gf_gpu_event_create(int32_t device, void **ev);
void gf_gpu_event_destroy(void *ev);
int gf_gpu_event_record(void *ev, void *stream);
int gf_gpu_event_wait(void *ev);
/* Keeps `stream` busy for ms milliseconds (a spinning kernel). */
int gf_gpu_spin(void *stream, double ms);
/* Pinned host-to-device bandwidth: `bytes` from cudaHostAlloc'd memory to
 * a device buffer, `reps` copies timed with events on one stream (after a
 * warm-up copy). Writes GB/s (1e9 bytes/s). */
int gf_gpu_h2d_probe(int32_t device, uint64_t bytes, int reps, double *gbps);

#endif /* GF_GPU_CUDAUTIL_H */
