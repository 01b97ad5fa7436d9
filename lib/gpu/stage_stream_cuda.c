/* The GPU stage's handoff to and from the caller's streams (see stage.h):
 * a batch handed to a stream (or to the host), its release events on the
 * caller's streams -- the legacy default stream's recorded by the worker
 * about to refill the slot -- and whether a slot's staging copy is over. */
#include "gpu/stage.h"
#include "gpu/stage_impl.h"

#include <cuda_runtime.h>
#include <pthread.h>

int gf_stage_handoff(gf_stage *st, uint32_t i, void *stream) {
  stage_slot *s = &st->slots[i];
  /* Its work over (the GPU wrote this submit's gen): nothing to wait for,
   * and no CUDA call. */
  if (s->gen && __atomic_load_n(s->h_done, __ATOMIC_ACQUIRE) == s->gen)
    return 0;
  cudaError_t e = stream ? cudaStreamWaitEvent((cudaStream_t)stream, s->ready, 0)
                         : cudaEventSynchronize(s->ready);
  return e == cudaSuccess ? 0 : cuda_fail(e, "handing the batch over");
}

int gf_stage_release(gf_stage *st, uint32_t i, void *const *streams,
                     uint32_t n) {
  stage_slot *s = &st->slots[i];
  if (n > GF_RELEASE_STREAMS_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release: %u streams (at most %u)", n,
                   GF_RELEASE_STREAMS_MAX);
  int rc = 0;
  /* Uncontended but for a worker that asked about the slot's previous
   * release and was held up until now. */
  pthread_mutex_lock(&st->fence_mu);
  s->release_pending = 0;
  s->fence_due = false;
  for (uint32_t k = 0; k < n; k++) {
    if (!streams[k])
      continue; /* the caller promises nothing there reads the batch */
    if ((cudaStream_t)streams[k] == cudaStreamLegacy) {
      s->fence_due = true; /* the worker records it (copy_done) */
      continue;
    }
    cudaError_t e = cudaEventRecord(s->released[s->release_pending],
                                    (cudaStream_t)streams[k]);
    if (e != cudaSuccess) {
      /* The events recorded so far stay pending: the next submit still
       * waits for those streams. */
      rc = cuda_fail(e, "cudaEventRecord (release)");
      break;
    }
    s->release_pending++;
  }
  pthread_mutex_unlock(&st->fence_mu);
  return rc;
}

/* Records the release event gf_stage_release left to the worker: on the
 * legacy default stream of the stage's device (the calling thread's
 * current device), after everything queued there so far, so after all
 * that was queued before the release. Should the record fail, the host
 * waits for that stream instead (the slot must not be refilled under a
 * kernel still reading it). Any thread. */
static void record_fence(gf_stage *st, stage_slot *s) {
  pthread_mutex_lock(&st->fence_mu);
  if (s->fence_due) {
    s->fence_due = false;
    cudaError_t e = cudaEventRecord(s->released[s->release_pending],
                                    cudaStreamLegacy);
    if (e == cudaSuccess) {
      s->release_pending++;
    } else {
      gf_log(GF_LOG_ERROR,
             "release event on the legacy default stream: %s; waiting for "
             "that stream instead",
             cudaGetErrorString(e));
      e = cudaStreamSynchronize(cudaStreamLegacy);
      if (e != cudaSuccess)
        gf_log(GF_LOG_ERROR, "waiting for the legacy default stream: %s",
               cudaGetErrorString(e));
    }
  }
  pthread_mutex_unlock(&st->fence_mu);
}

int gf_stage_copy_done(gf_stage *st, uint32_t i) {
  stage_slot *s = &st->slots[i];
  cudaSetDevice(st->cfg.device);
  record_fence(st, s);
  if (!s->submitted)
    return 1;
  cudaError_t e = cudaEventQuery(s->copied);
  if (e == cudaErrorNotReady)
    return 0;
  if (e != cudaSuccess)
    gf_log(GF_LOG_ERROR, "staging copy event: %s", cudaGetErrorString(e));
  return 1;
}
