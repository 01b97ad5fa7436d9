/* The GPU stage's insides, shared by its three files: stage_cuda.c (the
 * staging slots, their pinning and the submit), stage_stream_cuda.c (the
 * handoff to and from the caller's streams) and stage_jpeg_cuda.c (JPEG
 * decoding on the stage's copy stream). Included only there. The CUDA types are written as the runtime defines them
 * (cudaStream_t is `struct CUstream_st *`, cudaEvent_t `struct CUevent_st
 * *`): only the _cuda.c files include the runtime's header. */
#ifndef GF_GPU_STAGE_IMPL_H
#define GF_GPU_STAGE_IMPL_H

#include "gpu/stage.h"

#include "gather_seg.h"
#include "gpu/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct CUevent_st;
struct CUstream_st;

typedef struct stage_slot {
  uint8_t *host;           /* staging bytes, then the parameters, the
                              gather list and the labels */
  uint64_t host_dev;       /* the mapping's device address (once pinned) */
  size_t map_len;
  bool registered;         /* pinned (gf_stage_pin) */
  gf_xform_sample *h_params; /* inside the pinned mapping */
  gf_gather_seg *h_segs;     /* inside the pinned mapping, after h_params
                                at the same offset as d_segs after d_params */
  int64_t *h_labels;         /* after h_segs, as d_labels after d_segs */
  uint64_t *h_done;          /* after h_labels: the done word (done.h),
                                written by the GPU once a submit's work is
                                finished, with that submit's gen */
  uint64_t gen;              /* submits of this slot so far */
  gf_stage_loco *h_loco;     /* after h_segs (the loco items) */
  uint32_t *h_loco_err;      /* beside the done word: the decode's error
                                word (gf_loco_launch.error) */
  uint64_t loco_gen;         /* the submit whose batch had loco records */
  void *d_in, *d_out;
  void *d_loco_in;           /* loco batches land here (in_bytes), or NULL */
  gf_xform_sample *d_params;
  gf_gather_seg *d_segs;
  gf_stage_loco *d_loco;      /* after d_segs (kernels/loco.h's items) */
  int64_t *d_labels;
  /* Engine gathers: the batched copy's arguments (max_samples each). */
  void **e_dst;
  const void **e_src;
  size_t *e_len;
  struct CUevent_st *copied, *ready;
  /* One per caller stream: */
  struct CUevent_st *released[GF_RELEASE_STREAMS_MAX];
  bool events;
  bool submitted;          /* a copy was enqueued from this slot */
  uint32_t release_pending; /* released[0..n) recorded on caller streams */
  bool fence_due;          /* released on the legacy default stream: its
                              event is recorded by the worker about to
                              refill the slot (gf_stage_copy_done), under
                              fence_mu with release_pending */
  /* Trace mode: around copy + kernel: */
  struct CUevent_st *t_start, *t_end;
  bool timed;              /* t_start/t_end recorded and not yet taken */
} stage_slot;

struct gf_stage {
  gf_stage_config cfg;
  gf_device_pool *pool;
  struct CUstream_st *copy;
  bool have_stream;
  stage_slot *slots;
  bool timing;             /* trace mode (gf_stage_timing_enable) */
  struct CUevent_st *t_ref; /* recorded when the host clock read t_ref_ns */
  uint64_t t_ref_ns;
  gf_direct_copy direct;   /* how gathers reach the device */
  uint32_t gather_blocks;  /* kernel gathers: grid bound */
  size_t params_span;      /* round256(max_samples * sizeof params) */
  size_t segs_span;        /* round256(max_samples * sizeof gather seg) */
  size_t loco_span;        /* round256(max_samples * sizeof loco item);
                              0 without loco */
  struct CUstream_st *up;  /* loco: the upload stream (a batch's copy
                              overlaps the previous batch's decode) */
  bool have_up;
  /* JPEG decoders (gf_stage_jpeg_open): jpeg_n of them, each on its own
   * stream, used by one thread at a time (jpeg_mu[k]: nvJPEG's states are
   * not thread-safe), several slots finalised at once by different
   * workers each taking a free one. */
  gf_nvjpeg *jpeg[GF_STAGE_DECODERS_MAX];
  struct CUstream_st *jstream[GF_STAGE_DECODERS_MAX];
  uint32_t jpeg_n;
  pthread_mutex_t jpeg_mu[GF_STAGE_DECODERS_MAX];
  uint32_t jpeg_mu_n;         /* of jpeg_mu initialised */
  _Atomic uint32_t jpeg_next; /* where the search for a free one starts */
  gf_nvjpeg_stats jpeg_snap[GF_STAGE_DECODERS_MAX]; /* each decoder's
                              statistics after its last call, under
                              snap_mu: read without waiting for a decode */
  pthread_mutex_t snap_mu;
  bool snap_mu_init;
  pthread_mutex_t fence_mu; /* the slots' release events: the consumer
                              records them (gf_stage_release), a worker
                              the deferred one (gf_stage_copy_done) */
  bool fence_mu_init;

};

/* GF_EDEVOOM (cudaErrorMemoryAllocation) or GF_ECUDA with context: what
 * failed and the runtime's words for e (an int: a cudaError_t). */
int gf_stage__cuda_fail(int e, const char *what);
#define cuda_fail(e, what) gf_stage__cuda_fail((int)(e), (what))

/* Closes the JPEG decoders (each waits for its stream) and frees their
 * streams and locks (stage_cuda.c: the stage's destroy and a failed open
 * call it). */
void gf_stage__jpeg_close(gf_stage *st);

#endif /* GF_GPU_STAGE_IMPL_H */
