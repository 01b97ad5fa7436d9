/* The loader's private header: the state every loader_*.c file shares
 * (the loader, its batch slots and workers) and the functions they call
 * across files. Nothing outside lib/pipeline/loader_*.c includes it.
 *
 * Files, one job each:
 *   loader_chunk.c     a worker's chunk of positions: read locally, taken
 *                      from the fetch stage or from the streaming stage
 *   loader_sample.c    one sample: cache, decode into the slot, failures
 *   loader_jpeg.c      a JPEG sample decoded as its window; JPEG statistics;
 *                      which JPEG samples nvJPEG decodes (plan, open, route)
 *   loader_dispatch.c  dispatch and claim, the worker loop (its read buffer
 *                      readied first), cancel
 *   loader_finalize.c  a filled slot's final form (nvJPEG's decode, dense
 *                      array, transform)
 *   loader_plan.c      config resolution, sizing, autotune, the memory plan
 *   loader_create.c    create / destroy: slots, workers, direct fds, pinning
 *   loader_consumer.c  next / release, the skip policy's repair
 *   loader_info.c      dataset metadata (epoch size, classes, paths)
 *   loader_fields.c    tar shards' other fields: names, a batch's bytes
 *   loader_state.c     epochs, resume state export / import, seek
 *   loader_stats.c     statistics, the trace file, the device pool
 *
 * The design. A pool of workers fills batch slots in dispatch order; the
 * consumer takes them in the same order.
 *
 * Batches form one sequence numbered by `seq` across epochs: the
 * dispatcher (whichever worker finds a free slot) assigns the next batch
 * of the current dispatch epoch to a free slot, and moves on to the next
 * epoch by itself, so the first batches of epoch e+1 load while the
 * consumer finishes epoch e. Workers claim chunks of a filling slot's
 * samples (oldest slot first), read them with one submission through their
 * own reader, and decode each straight into its place in the slot. The
 * consumer waits for the slot holding the next seq.
 *
 * Order is decided at dispatch from the sampler alone, so it never depends
 * on thread count or timing. The skip policy keeps that: when a delivered
 * batch has bad samples, every later batch already dispatched is
 * cancelled, the holes are filled on the consumer's thread from the
 * following positions, and dispatch restarts after them: the sequence is
 * the epoch's order with the bad samples removed, whatever the timing.
 *
 * Locking: one mutex guards slot states, cursors and claims; the sample
 * work runs outside it: the workers' reads, decodes and finalize, and the
 * consumer's repair (its reads, decodes and finalize, on a slot marked
 * REPAIRING while dispatch is paused or moves on past it). Statistics are
 * relaxed atomics.
 *
 * Tracing (config trace_events): each stage records a span into the
 * trace (trace.h), guarded by one branch when off; in GPU mode the same
 * stages are NVTX ranges too. */
#ifndef GF_PIPELINE_LOADER_IMPL_H
#define GF_PIPELINE_LOADER_IMPL_H

#include "common/common.h"
#include "decode/decode.h"
#include "gpu/pool.h"
#include "gpu/stage.h"
#include "io/io.h"
#include "pipeline/cache.h"
#include "pipeline/fetch.h"
#include "pipeline/jpeg_checked.h"
#include "pipeline/jpeg_share.h"
#include "pipeline/loader_plan.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"
#include "pipeline/stream.h"
#include "pipeline/trace.h"
#include "xform/transform.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

/* A slot's life: FREE -> FILLING (workers) -> READY (finalised: output
 * made, or submitted to the GPU) -> LENT (the caller holds it) -> FREE.
 * A slot freed in GPU mode may still be read by its staging copy: it is
 * FREE with copy_wait set, and a worker about to refill it first asks
 * whether that copy is done (worker_main, outside mu; a slot still copied
 * is passed over), so that release asks the GPU nothing.
 * CANCELLED: dropped by a seek or a repair while workers still touch it.
 * REPAIRING: the consumer fills its holes and finalises it outside mu
 * (skip policy); no one else touches a slot in that state.
 * RELEASING: lent, being handed back by release(), which records its
 * events outside mu (counted as lent until it is FREE).
 * PINNING (GPU mode, slots after the first): its staging memory is not
 * pinned yet; the pinning thread makes it FREE, or leaves it PINNING for
 * good when the pin failed (the loader goes on without it). */
enum {
  SLOT_FREE,
  SLOT_FILLING,
  SLOT_READY,
  SLOT_LENT,
  SLOT_CANCELLED,
  SLOT_REPAIRING,
  SLOT_PINNING,
  SLOT_RELEASING
};

/* A sample's status in its slot (slot.status) besides 0 (done) and a
 * negative error: */
enum {
  SAMPLE_PENDING = 1, /* dispatched, not done yet */
  /* Failed with the worker's reader, not by itself: the reader failed as a
   * whole (a ring error) before the sample's read came back, or there was
   * no reader to read with. Its error is recorded as any failure's (the
   * fail policy returns it); the skip policy's repair reads the sample
   * again before giving its place away, so a ring error loses no sample. */
  SAMPLE_LOST = 2,
  /* A streaming source's epoch ended before this position (its length is
   * known only at its end: a batch is dispatched whole and cut when its
   * positions turn out past the end). Not a failure. */
  SAMPLE_PAST_END = 3
};

typedef struct slot {
  gf_batch batch; /* the view lent to the caller; first member */
  uint8_t *data;
  gf_shape *shapes;
  uint64_t *offsets;
  int64_t *labels;
  uint64_t *indices;
  int32_t *status;          /* per sample: 0, the error, or SAMPLE_* */
  uint8_t *filtered;        /* per sample: bytes still gradient-filtered */
  gf_xform_region *regions; /* per sample: the part of its image decoded
                               (a JPEG window; denom 0: the whole image) */
  gf_xform_sample *params;  /* per sample: the transform's view */
  uint8_t *out_host;        /* host mode: the transform's output */
  uint32_t index;           /* the slot's number (its staging slot) */
  int fin_rc;               /* finalising failed (output shape, GPU) */
  gf_error_info fin_err;
  uint64_t seq, epoch, k, first_pos, end_pos;
  uint64_t fseq; /* remote source: the fetch stage's seq of first_pos */
  uint32_t count;
  uint32_t claimed; /* samples handed to workers */
  uint32_t busy;    /* workers processing a chunk of this slot */
  uint32_t done;    /* samples finished */
  int state;
  bool failed;    /* a sample's status was set (slot_failed) when the slot
                     became READY: what next() reads, without scanning the
                     statuses the workers wrote */
  bool empty;     /* streaming: every position was past its epoch's end
                     (or drop_last cut it): READY with nothing to lend,
                     next() passes over it */
  bool copy_wait; /* GPU mode: its staging memory may still be read by the
                     copy of its last batch; not refilled before it ends */
  uint64_t free_gen; /* times it was made FREE (slot_free) */
  _Atomic int cancel;
  gf_error_info err; /* the first failed position's error */
  uint32_t err_pos;  /* UINT32_MAX: none */
  uint64_t lent_ns;  /* trace: when next() lent it (the step starts) */
  uint64_t gpu_seq;  /* trace: the batch whose GPU work was last timed */
  uint64_t nvtx_step; /* NVTX range of the caller's step, or 0 */
  /* Direct mode (GPU, pinned cache): per sample, the device address of
   * its bytes in the pinned cache (0: they are in the staging slot) and
   * their host address; the gather list made from them; how many. */
  uint64_t *dsrc_dev;
  const uint8_t **dsrc_host;
  gf_stage_seg *segs;
  uint32_t ndirect;
  /* JPEG on the GPU (l->gpu_jpeg; NULL otherwise): per sample, the bytes
   * of its file in its place in the slot (0: pixels are there, as for
   * every other sample); the decode call's images, their device offsets
   * and positions; how many samples of the finalised batch nvJPEG
   * decoded. */
  uint32_t *gpu_len;
  /* loco records the GPU decodes (l->loco_gpu; NULL otherwise): per
   * sample its record's bytes and first band (filtered[j] == 2: the slot
   * holds its record); how many of the finalised batch's. */
  gf_stage_loco *loco;
  uint32_t nloco;
  gf_nvjpeg_image *jimg;
  uint64_t *joff;
  uint32_t *jpos;
  uint32_t ngpu;
  /* Other fields (tar shards' gf_shards_config.fields; nfields 0: none):
   * per sample and field, its length (GF_NO_INDEX: absent) and its bytes,
   * field_bytes a place (field_place); copied from the loader so that
   * gf_batch_field needs only the batch. */
  uint32_t nfields;
  uint64_t field_bytes;
  uint64_t *field_len;
  uint8_t *fields;
} slot;

/* Where one sample's asked fields go: nfields lengths (GF_NO_INDEX:
 * absent) and nfields places of field_bytes. */
typedef struct field_place {
  uint64_t *len;
  uint8_t *data;
} field_place;

/* Sample j's field places in s; NULL when no field is asked. */
static inline const field_place *slot_fields(const slot *s, uint32_t j,
                                             field_place *fp) {
  if (!s->nfields)
    return NULL;
  fp->len = s->field_len + (uint64_t)j * s->nfields;
  fp->data = s->fields + (uint64_t)j * s->nfields * s->field_bytes;
  return fp;
}

/* The most batch slots a loader has (config prefetch). */
#define GF_LOADER_MAX_SLOTS 64

typedef struct worker {
  struct gf_loader *l;
  uint32_t tid; /* trace track */
  pthread_t thread;
  bool started;
  /* NULL after it failed as a whole (its reads waited for, their fds
   * closed): the worker makes a fresh one before its next chunk, and while
   * that fails, reader_err says why and its chunks' reads fail with it. */
  gf_reader *reader;
  uint32_t ask[GF_LOADER_MAX_SLOTS]; /* claim's slots to ask the GPU about */
  gf_error_info reader_err;
  uint8_t *rbuf; /* chunk * stored_cap bytes, for reads that decode */
  size_t rbuf_len; /* its length, whole pages; its pages are made and it
                      is registered with the reader by the worker itself,
                      before its first read (off create's path) */
} worker;

typedef struct stage_atomic {
  _Atomic uint64_t samples, bytes, busy_ns, wait_ns;
} stage_atomic;

struct gf_loader {
  gf_loader_config cfg;
  char *source_path, *labels_path;
  gf_source *src;
  /* The asked fields (gf_source_field_count) and the bound on each. */
  uint32_t nfields;
  uint64_t field_bytes;
  gf_sampler sampler; /* the dispatcher's; under mu */
  uint64_t share;     /* samples of this rank's share of a full epoch */
  /* The source's fingerprint for resume states, made at the first export
   * or import (consumer thread only). */
  uint64_t fingerprint;
  bool have_fingerprint;
  gf_decode_opts dopts;
  gf_cache *cache;
  uint64_t stride;     /* bytes a sample in a slot */
  uint64_t stored_cap; /* bytes a read buffer entry */
  uint32_t chunk;
  uint32_t direct_align; /* 0: buffered reads */
  gf_object **direct_objs; /* the source's objects opened with O_DIRECT
                              (NULL when not direct) */
  uint32_t ndirect_objs;

  gf_stage *stage;      /* NULL: host mode */
  int32_t device;       /* the GPU in use, or GF_DEVICE_CPU */
  char host_reason[256];/* why host mode under GF_DEVICE_AUTO */
  bool identity;        /* the transform changes nothing */
  uint64_t out_cap;     /* output bytes a slot */

  uint32_t nslots;
  slot *slots;
  uint32_t nworkers;
  worker *workers;
  gf_reader_opts reader_opts; /* each worker's reader's, a fresh one's too */

  pthread_mutex_t mu;
  pthread_cond_t work_cv;  /* workers: a slot to fill or to dispatch */
  pthread_cond_t ready_cv; /* consumer: a slot ready or a cancel drained */
  bool stop;
  /* An idle worker is waiting with a timeout and will look for work again
   * by itself (loader_dispatch.c, the poller): release() frees a slot
   * without waking anyone then. */
  bool poller;
  bool paused; /* no dispatch while the cursors are being moved */
  /* Workers run under SCHED_BATCH (cfg.worker_sched, default batch): a
   * thread of the caller that wakes (the consumer taking its batch, a
   * training loop launching kernels) preempts a decoding worker at once
   * instead of waiting for its time slice. */
  bool worker_batch;

  /* dispatch cursor; d_fseq: the fetch stage's seq of (d_epoch, d_pos) */
  uint64_t d_epoch, d_pos, d_k, next_seq, d_fseq;
  /* A remote source: its samples are read ahead by the fetch stage, not
   * by the workers (fetch.h). NULL otherwise. */
  gf_fetch *fetch;
  /* A source that comes as a stream (tar shards in streaming mode): the
   * streaming stage hands out each epoch's positions (stream.h), the
   * sampler is not asked. NULL otherwise. */
  gf_stream *stream;
  /* consumer cursor: the next batch to deliver */
  uint64_t c_epoch, c_pos, c_k, c_seq;

  bool jpeg_window;      /* JPEG samples decoded as their windows
                            (jpeg_windows()) */
  stage_atomic st_read, st_decode, st_cache;
  /* JPEG decodes by DCT scale (1, 1/2, 1/4, 1/8) and their pixels:
   * decoded, and the same images' at full size. */
  _Atomic uint64_t jpeg_decoded[4], jpeg_px_decoded, jpeg_px_full;
  /* JPEG on the GPU (loader_jpeg.c): whether samples go to nvJPEG (the
   * stage's decoder is open), the share of a batch's positions that may
   * (percent), the slot tables made for it (the plan's), the backend or
   * why none, and the samples decoded there and refused there. */
  bool gpu_jpeg;
  bool gpu_jpeg_tables;
  bool gather_tables;      /* GPU mode as planned: every slot has its gather
                              list (segs) */
  bool loco_gpu;           /* GPU mode, a dataset with loco records: the
                              GPU decodes them (the stage's loco block) */
  bool gpu_progressive; /* the decoder takes progressive JPEG (a probe at
                           open: the JPEG engines of nvJPEG 13.0 on an
                           H200 took none; the GPU hybrid backend does) */
  _Atomic uint32_t gpu_jpeg_pct; /* set by the consumer (share_on), read
                              by the workers as they route samples */
  bool share_on;           /* gpu_decode auto with no gpu_decode_percent: the
                              share follows the consumer's rate (gpu_share) */
  gf_jpeg_share gpu_share; /* the consumer's (jpeg_share.h) */
  gf_jpeg_checked jpeg_checked; /* auto, files without a checksum: those
                                   checked once (jpeg_checked.h) */
  char jpeg_gpu_backend[16];
  char jpeg_gpu_why[256];
  _Atomic uint64_t jpeg_gpu_decoded, jpeg_gpu_refused;
  atomic_bool unverified_said; /* a verified image's bytes differed */
  _Atomic uint64_t batches, consumer_wait_ns, skipped, cache_hits,
      cache_misses, next_calls, ready_sum;
  pthread_mutex_t stat_mu; /* last_skip_reason */
  char last_skip_reason[512];
  char io_backend[16];
  char io_fallback[256];
  char tuning[256];  /* how threads and prefetch were chosen */
  gf_trace *trace;   /* NULL: tracing off */
  bool nvtx;         /* GPU mode: NVTX ranges around the stages */
  bool direct;       /* GPU mode with a pinned cache: cached samples go to
                        the device from where they lie in the cache */
  _Atomic uint64_t cache_direct;
  gf_loader_allocs allocs; /* what create allocated (loader_plan.h) */
  /* GPU mode: the thread pinning the staging slots after the first (under
   * mu: the slots' states and these fields). */
  pthread_t pinner;
  bool pinner_started;
  uint32_t unpinned;      /* slots left PINNING for good (a pin failed) */
  bool pin_err_pending;   /* next() has yet to return pin_err */
  gf_error_info pin_err;
  /* A batch was made READY (in GPU mode: submitted to the device): the
   * pinning thread waits for it, so that the first batch has the driver
   * and the address space to itself. Under mu; work_cv says it. */
  bool first_ready;
  bool warned_empty_epoch; /* warn_empty_epoch said it (under mu) */
};

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits on cv (under mu) at most `ns` nanoseconds. The loader's condition
 * variables run on CLOCK_REALTIME (the default condattr). */
static inline void cond_wait_ns(pthread_cond_t *cv, pthread_mutex_t *mu,
                                uint64_t ns) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)(ns / 1000000000u);
  ts.tv_nsec += (long)(ns % 1000000000u);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(cv, mu, &ts);
}

static inline void add(_Atomic uint64_t *a, uint64_t v) {
  atomic_fetch_add_explicit(a, v, memory_order_relaxed);
}

/* A span of the trace; off, it costs the branch. */
static inline void span(gf_loader *l, gf_trace_kind k, uint32_t tid,
                        uint64_t t0, uint64_t t1, uint64_t arg) {
  if (GF_UNLIKELY(l->trace != NULL))
    gf_trace_span(l->trace, k, tid, t0, t1, arg);
}
static inline void range_push(const gf_loader *l, const char *name) {
  if (l->nvtx)
    gf_gpu_range_push(name);
}
static inline void range_pop(const gf_loader *l) {
  if (l->nvtx)
    gf_gpu_range_pop();
}

/* Functions called across the loader's files. Their names carry a
 * gf_loader__ prefix (liburing's "__" for internal names), written out where
 * they are defined and called, so that a program linking the static library
 * meets no short name of ours and grep, nm and gdb agree. */

/* loader_sample.c */
/* Loads one sample of `epoch` on the calling thread with one read through
 * its storage (the consumer's repair path, rare). */
int gf_loader__load_sync(gf_loader *l, uint64_t epoch, uint64_t idx,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, int64_t *label,
                         const field_place *fields);
/* Finishes sample smp read into buf (len bytes; in_place: into dst
 * already, as raw pixels): decoded into dst (or, for the GPU, its bytes
 * left there with *gpu their length), its label and fields taken, the
 * result offered to the cache. Returns 0 or the error with context. */
int gf_loader__finish_sample(gf_loader *l, uint32_t tid,
                             const gf_src_sample *smp, uint64_t epoch,
                             const uint8_t *buf, uint64_t len, bool in_place,
                             uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                             gf_xform_region *region, uint32_t *gpu,
                             int64_t *label, const field_place *fp,
                             bool image_only);
/* Takes sample idx from the cache into dst: true on a hit (dev: a pinned
 * chunk's hit not copied, *dev and *host its addresses). */
bool gf_loader__from_cache(gf_loader *l, uint32_t tid, uint64_t idx,
                           uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                           uint64_t *dev, const uint8_t **host, int64_t *label,
                           const field_place *fp);
/* Raw pixels that need no conversion: read straight into the slot. */
bool gf_loader__raw_in_place(const gf_loader *l, const gf_src_sample *smp);
/* Fails sample idx whose stored bytes (len) exceed the read buffer,
 * naming it and the limit. */
int gf_loader__too_large(const gf_loader *l, uint64_t idx, uint64_t len);
/* Records position j of s failed with rc (the first failure of the slot
 * keeps its error). */
void gf_loader__record_failure(gf_loader *l, slot *s, uint32_t j, int rc,
                               uint64_t idx);
/* Whether position j of a batch may go to the GPU (the share's positions:
 * gpu_decode_percent, or what the consumer's rate chose, share_on). */
bool gf_loader__gpu_position(const gf_loader *l, uint32_t j);
/* The consumer took a batch (share_on): the share may move (jpeg_share.h).
 * The consumer's thread. */
void gf_loader__jpeg_share_batch(gf_loader *l);
/* Sample j of slot s, whose file bytes wait in its place for the GPU
 * (gpu_len[j]), decoded on the CPU instead, by the worker's own path (the
 * CPU decoder's verdict): its pixels, shape and region replace the file;
 * on failure the sample is recorded failed (its status and, when it is
 * the first, the slot's error). Returns 0 or the error. The thread
 * finalising s. */
int gf_loader__decode_again(gf_loader *l, slot *s, uint32_t j, uint32_t tid);

/* loader_jpeg.c */
/* Whether a resolved config decodes JPEG samples as their windows (a fixed
 * output size; not with the DCT scaling off and a cache, which caches
 * whole images instead). */
bool gf_loader__jpeg_windows(const gf_loader_config *c);
/* Counts one JPEG decode at scale 1/denom into `decoded`, of an image of
 * full_h x full_w, in the statistics. Any thread. */
void gf_loader__jpeg_count(gf_loader *l, uint32_t denom,
                           const gf_shape *decoded, uint32_t full_h,
                           uint32_t full_w);
/* Decodes JPEG sample smp (its len stored bytes in buf) of `epoch` as its
 * window into dst (at most the slot's stride), *shape the region's and
 * *region where it lies (transform.h). Returns 0, 1 when the frame header
 * is not one sized here (the caller decodes the file whole, for libjpeg's
 * verdict), or the decode's error (GF_ESHAPE also for a dataset record
 * that disagrees with the file), context to be added by the caller. With
 * to_end the file is read on to its end past the window, for a full
 * decode's verdict (jpeg_checked.h). Any worker. */
int gf_loader__jpeg_decode_window(gf_loader *l, const gf_src_sample *smp,
                                  uint64_t epoch, const uint8_t *buf,
                                  uint64_t len, bool to_end, uint8_t *dst,
                                  gf_shape *shape, gf_xform_region *region);
/* Sizing (config and source alone): whether the GPU may decode JPEG
 * samples under the resolved config c in GPU mode (gpu) and, if so, the
 * decoder's mode and reservations; else why not. Fills z's jpeg_gpu_*
 * fields and jpeg_checked (z's jpeg_samples, unchecked and identity
 * already set); count: the source's samples (0: not known ahead, a
 * stream). */
void gf_loader__jpeg_gpu_plan(const gf_loader_config *c, bool gpu,
                              uint64_t count, gf_loader_sizes *z);
/* Create, GPU mode: opens the stage's nvJPEG decoder when the sizes say
 * the GPU may decode JPEG (z->jpeg_gpu_mode), and says in
 * l->jpeg_gpu_backend or l->jpeg_gpu_why how it went; a decoder that does
 * not open leaves JPEG to the CPU (not an error). */
void gf_loader__jpeg_gpu_open(gf_loader *l, const gf_loader_sizes *z);
/* Whether JPEG sample smp (its len stored bytes in buf) goes to the GPU:
 * its headers are ones nvJPEG decodes into what the transform expects, its
 * file and its pixels fit its place. Then its bytes are copied to dst,
 * *shape is its full decoded shape, and 1 is returned; else 0 (the CPU
 * decodes it, and says what is wrong with it if anything is). Any
 * worker. */
int gf_loader__jpeg_gpu_take(gf_loader *l, const gf_src_sample *smp,
                             const uint8_t *buf, uint64_t len, uint8_t *dst,
                             gf_shape *shape);

/* loader_dispatch.c */
#ifdef GPUFEED_TESTING
/* Test builds only (common/fault.h says which those are): when set, called
 * on a worker's thread at its events (outside mu): "read buffer" once its
 * read buffer's pages are made and the registration was tried (before its
 * first read), "ready" when a filled slot was finalised (submitted, in GPU
 * mode) and before it is made READY, "reader replaced" when it made a
 * fresh reader after its reader failed as a whole, "reader refused" when
 * making one failed. NULL in every program but those tests. */
extern void (*gf_loader__event_hook)(gf_loader *l, const char *event);
#endif
bool gf_loader__slot_failed(const slot *s);
/* A worker thread's loop: claims chunks, runs them, finalises full slots. */
void *gf_loader__worker_main(void *arg);
/* Cancels every slot that is filling or ready (not lent) and waits until no
 * worker touches them. Under mu. */
void gf_loader__cancel_all(gf_loader *l);
/* Slots the caller holds. Under mu. */
uint32_t gf_loader__lent_count(const gf_loader *l);
/* Makes s FREE; in GPU mode it is refilled only once the staging copy
 * that may still read it has ended (copy_wait). No CUDA call. Under mu. */
void gf_loader__slot_free(gf_loader *l, slot *s);

/* loader_finalize.c */
/* Makes the batch's final form once every sample is in (see the file). */
void gf_loader__finalize(gf_loader *l, slot *s, uint32_t tid);
/* The copy stream's span of the slot's previous batch, if not yet taken. */
void gf_loader__take_gpu_span(gf_loader *l, slot *s, bool wait);

/* loader_plan.c */
/* -EINVAL with "loader config: <field> <why>". */
int gf_loader__cfg_fail(const char *field, const char *why);
/* Checks *in and fills *c with it and the defaults. */
int gf_loader__resolve_config(const gf_loader_config *in, gf_loader_config *c);
/* The decode options a resolved config asks for. */
void gf_loader__decode_opts_of(const gf_loader_config *c, gf_decode_opts *d);

/* loader_consumer.c */
#ifdef GPUFEED_TESTING
/* Test builds only: when set, called on the consumer's thread where the
 * skip policy's repair loads a sample and where it finalises the repaired
 * batch (both outside mu). NULL in every program but that test. */
extern void (*gf_loader__test_hook)(gf_loader *l, const char *where);
#endif

/* loader_chunk.c */
/* Processes positions [j0, j0 + n) of slot s (a worker, outside mu). */
void gf_loader__run_chunk(worker *w, slot *s, uint32_t j0, uint32_t n);
/* loader_chunk.c, streaming */
/* Position pos of `epoch` from the streaming stage, decoded on the calling
 * thread (the consumer's repair) into dst, its fields into fp (NULL: none
 * asked). Returns 1 with *id (the sample's), 0 when the epoch ended
 * before pos, or the error. */
int gf_loader__take_sync(gf_loader *l, uint64_t epoch, uint64_t pos,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, int64_t *label,
                         const field_place *fp, uint64_t *id);

/* loader_state.c */
/* Restarts dispatch at (epoch, pos, k) with the next seq the consumer
 * expects. Under mu, after cancel_all. */
void gf_loader__restart_at(gf_loader *l, uint64_t epoch, uint64_t pos,
                           uint64_t k);

#endif /* GF_PIPELINE_LOADER_IMPL_H */
