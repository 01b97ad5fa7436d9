/* The loader: a pool of workers fills batch slots in dispatch order; the
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
 * work runs outside it. Statistics are relaxed atomics.
 *
 * Tracing (config trace_events): each stage records a span into the
 * trace (trace.h), guarded by one branch when off; in GPU mode the same
 * stages are NVTX ranges too. */
#include "common/common.h"
#include "decode/decode.h"
#include "gpu/pool.h"
#include "gpu/stage.h"
#include "io/io.h"
#include "pipeline/cache.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"
#include "pipeline/trace.h"
#include "pipeline/transform.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A slot's life: FREE -> FILLING (workers) -> READY (finalised: output
 * made, or submitted to the GPU) -> LENT (the caller holds it) -> FREE, or
 * DRAINING while the GPU still copies out of its staging memory.
 * CANCELLED: dropped by a seek or a repair while workers still touch it. */
enum {
  SLOT_FREE,
  SLOT_FILLING,
  SLOT_READY,
  SLOT_LENT,
  SLOT_CANCELLED,
  SLOT_DRAINING
};

/* The cache keeps a sample as this head followed by its bytes. */
typedef struct cache_head {
  gf_shape shape;
  uint32_t filtered; /* the bytes are still gradient-filtered (GPU mode) */
  uint32_t pad[3];
} cache_head;
#define CACHE_HEAD ((size_t)sizeof(cache_head))

typedef struct slot {
  gf_batch batch; /* the view lent to the caller; first member */
  uint8_t *data;
  gf_shape *shapes;
  uint64_t *offsets;
  int64_t *labels;
  uint64_t *indices;
  int32_t *status; /* per sample: 0 or the error */
  uint8_t *filtered;        /* per sample: bytes still gradient-filtered */
  gf_xform_sample *params;  /* per sample: the transform's view */
  uint8_t *out_host;        /* host mode: the transform's output */
  uint32_t index;           /* the slot's number (its staging slot) */
  int fin_rc;               /* finalising failed (output shape, GPU) */
  gf_error_info fin_err;
  uint64_t seq, epoch, k, first_pos, end_pos;
  uint32_t count;
  uint32_t claimed; /* samples handed to workers */
  uint32_t busy;    /* workers processing a chunk of this slot */
  uint32_t done;    /* samples finished */
  int state;
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
} slot;

typedef struct worker {
  struct gf_loader *l;
  uint32_t tid; /* trace track */
  pthread_t thread;
  bool started;
  gf_reader *reader;
  uint8_t *rbuf; /* chunk * stored_cap bytes, for reads that decode */
} worker;

typedef struct stage_atomic {
  _Atomic uint64_t samples, bytes, busy_ns, wait_ns;
} stage_atomic;

struct gf_loader {
  gf_loader_config cfg;
  char *source_path, *labels_path;
  gf_source *src;
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
  int *direct_fds;       /* per shard, O_DIRECT; NULL when not direct */
  uint32_t nshards;

  gf_stage *stage;      /* NULL: host mode */
  int32_t device;       /* the GPU in use, or GF_DEVICE_CPU */
  char host_reason[256];/* why host mode under GF_DEVICE_AUTO */
  bool identity;        /* the transform changes nothing */
  uint64_t out_cap;     /* output bytes a slot */

  uint32_t nslots;
  slot *slots;
  uint32_t nworkers;
  worker *workers;

  pthread_mutex_t mu;
  pthread_cond_t work_cv;  /* workers: a slot to fill or to dispatch */
  pthread_cond_t ready_cv; /* consumer: a slot ready or a cancel drained */
  bool stop;
  bool paused; /* no dispatch while the cursors are being moved */

  /* dispatch cursor */
  uint64_t d_epoch, d_pos, d_k, next_seq;
  /* consumer cursor: the next batch to deliver */
  uint64_t c_epoch, c_pos, c_k, c_seq;

  stage_atomic st_read, st_decode, st_cache;
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
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void add(_Atomic uint64_t *a, uint64_t v) {
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

/* ---- one sample --------------------------------------------------------- */

/* Checks the stored bytes, decodes them into dst (unless they were read
 * there already as raw pixels: in_place) and offers the result to the
 * cache. Records context and returns the error on failure. */
/* GPU mode leaves a gradzstd sample gradient-filtered: the transform
 * kernel undoes the filter in the same pass as the conversion, so the CPU
 * only runs zstd. Only when nothing else changes the pixels (no channel or
 * bit-depth conversion) and a row fits the kernel's shared memory. */
static bool gpu_unfilters(const gf_loader *l, const gf_src_sample *smp) {
  if (!l->stage || l->identity || smp->codec != GF_CODEC_GRADZSTD ||
      smp->stored.dtype != GF_DTYPE_U8)
    return false;
  if (l->dopts.channels && l->dopts.channels != smp->stored.channels)
    return false;
  return (uint64_t)smp->stored.width * smp->stored.channels <=
             GF_XFORM_GPU_FILTERED_ROW &&
         gf_shape_bytes(&smp->stored) <= l->stride;
}

/* Checks the stored bytes, decodes them into dst (unless they were read
 * there already as raw pixels: in_place) and offers the result to the
 * cache. Records context and returns the error on failure. */
static int finish_sample(gf_loader *l, uint32_t tid, const gf_src_sample *smp,
                         const uint8_t *buf, uint64_t len, bool in_place,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered) {
  int rc;
  *filtered = 0;
  if (smp->has_crc) {
    uint32_t crc = gf_crc32c(0, buf, (size_t)len);
    if (crc != smp->crc) {
      char name[1100];
      gf_source_name(l->src, smp->index, name, sizeof name);
      return gf_fail(GF_ECORRUPT, name, smp->index, smp->offset,
                     "checksum 0x%08x, expected 0x%08x: the %llu stored "
                     "bytes are damaged",
                     crc, smp->crc, (unsigned long long)len);
    }
  }
  uint64_t t0 = now_ns();
  range_push(l, "decode");
  if (in_place) {
    *shape = smp->stored;
    rc = 0;
  } else if (gpu_unfilters(l, smp)) {
    rc = gf_zstd_decompress(buf, (size_t)len, dst,
                            (size_t)gf_shape_bytes(&smp->stored));
    *shape = smp->stored;
    *filtered = 1;
  } else {
    rc = gf_decode(smp->codec, buf, (size_t)len,
                   smp->codec == GF_CODEC_PNG ? NULL : &smp->stored, &l->dopts,
                   dst, (size_t)l->stride, shape);
  }
  range_pop(l);
  if (rc < 0) {
    char name[1100];
    gf_source_name(l->src, smp->index, name, sizeof name);
    return gf_fail_context(rc, name, smp->index,
                           rc == GF_ESHAPE ? "decoding (it does not fit the "
                                             "batch's max_sample_bytes)"
                                           : "decoding");
  }
  uint64_t out = gf_shape_bytes(shape);
  uint64_t t1 = now_ns();
  span(l, GF_TR_DECODE, tid, t0, t1, smp->index);
  add(&l->st_decode.busy_ns, t1 - t0);
  add(&l->st_decode.samples, 1);
  add(&l->st_decode.bytes, out);
  if (l->cache) {
    cache_head h;
    memset(&h, 0, sizeof h);
    h.shape = *shape;
    h.filtered = *filtered;
    gf_cache_put_parts(l->cache, smp->index, &h, CACHE_HEAD, dst, (size_t)out);
  }
  return 0;
}

/* Takes sample idx from the cache into dst. Returns true on a hit. With
 * dev (direct mode), a hit in a pinned chunk is not copied: *dev and *host
 * get the device and host addresses of its bytes (else *dev is 0). */
static bool from_cache(gf_loader *l, uint32_t tid, uint64_t idx, uint8_t *dst,
                       gf_shape *shape, uint8_t *filtered, uint64_t *dev,
                       const uint8_t **host) {
  if (!l->cache)
    return false;
  const void *data;
  size_t len;
  uint64_t d = 0;
  if (gf_cache_get_dev(l->cache, idx, &data, &len, dev ? &d : NULL) != 1) {
    add(&l->cache_misses, 1);
    return false;
  }
  cache_head h;
  memcpy(&h, data, CACHE_HEAD);
  *shape = h.shape;
  *filtered = (uint8_t)h.filtered;
  if (d) {
    *dev = d + CACHE_HEAD;
    *host = (const uint8_t *)data + CACHE_HEAD;
    add(&l->cache_hits, 1);
    return true;
  }
  uint64_t t0 = now_ns();
  memcpy(dst, (const uint8_t *)data + CACHE_HEAD, len - CACHE_HEAD);
  uint64_t t1 = now_ns();
  span(l, GF_TR_CACHE, tid, t0, t1, idx);
  add(&l->st_cache.busy_ns, t1 - t0);
  add(&l->st_cache.samples, 1);
  add(&l->st_cache.bytes, len - CACHE_HEAD);
  add(&l->cache_hits, 1);
  return true;
}

/* Raw pixels that need no conversion can be read straight into the slot. */
static bool raw_in_place(const gf_loader *l, const gf_src_sample *smp) {
  if (smp->codec != GF_CODEC_RAW || l->direct_fds)
    return false;
  gf_shape out = smp->stored;
  if (l->dopts.channels)
    out.channels = l->dopts.channels;
  if (out.dtype == GF_DTYPE_U16 && !l->dopts.keep_16bit)
    out.dtype = GF_DTYPE_U8;
  return memcmp(&out, &smp->stored, sizeof out) == 0 &&
         smp->length <= l->stride;
}

/* Loads one sample on the calling thread with plain preads (the consumer's
 * repair path, rare). */
static int load_sync(gf_loader *l, uint64_t idx, uint8_t *dst, gf_shape *shape,
                     uint8_t *filtered, int64_t *label) {
  gf_src_sample smp;
  int rc = gf_source_sample(l->src, idx, &smp);
  if (rc < 0)
    return rc;
  *label = smp.label;
  if (from_cache(l, GF_TRACE_TID_CONSUMER, idx, dst, shape, filtered, NULL,
                 NULL))
    return 0;
  int fd = smp.fd;
  bool own_fd = false;
  if (fd < 0) {
    if ((rc = gf_source_open_file(l->src, idx, &fd, &smp.length)) < 0)
      return rc;
    own_fd = true;
  }
  char name[1100];
  gf_source_name(l->src, idx, name, sizeof name);
  if (smp.length > l->stored_cap) {
    rc = gf_fail(GF_ELIMIT, name, idx, GF_NO_INDEX,
                 "stored sample of %llu bytes exceeds the read buffer of %llu "
                 "bytes (raise max_sample_bytes)",
                 (unsigned long long)smp.length,
                 (unsigned long long)l->stored_cap);
  } else {
    uint8_t *buf = malloc(smp.length ? smp.length : 1);
    if (!buf) {
      rc = -ENOMEM;
    } else {
      uint64_t got = 0;
      rc = 0;
      while (got < smp.length) {
        ssize_t n = pread(fd, buf + got, smp.length - got,
                          (off_t)(smp.offset + got));
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0) {
          rc = gf_fail(n < 0 ? -errno : GF_ETRUNCATED, name, idx,
                       smp.offset + got, "reading %llu bytes: %s",
                       (unsigned long long)smp.length,
                       n < 0 ? strerror(errno) : "end of file");
          break;
        }
        got += (uint64_t)n;
      }
      if (rc == 0) {
        add(&l->st_read.samples, 1);
        add(&l->st_read.bytes, smp.length);
        rc = finish_sample(l, GF_TRACE_TID_CONSUMER, &smp, buf, smp.length,
                           false, dst, shape, filtered);
      }
      free(buf);
    }
  }
  if (own_fd)
    close(fd);
  return rc;
}

/* ---- workers ------------------------------------------------------------ */

typedef struct pending {
  uint32_t j;       /* position in the slot */
  gf_src_sample smp;
  int fd_owned;     /* folder file to close, or -1 */
  uint8_t *buf;     /* where the read lands */
  uint64_t skew;    /* direct: sample start within buf */
  bool in_place;
} pending;

static void record_failure(gf_loader *l, slot *s, uint32_t j, int rc,
                           uint64_t idx) {
  s->status[j] = rc;
  const gf_error_info *e = gf_last_error();
  pthread_mutex_lock(&l->mu);
  if (s->err_pos == UINT32_MAX || j < s->err_pos) {
    s->err = *e;
    if (s->err.code != rc) {
      s->err.code = rc;
      snprintf(s->err.message, sizeof s->err.message, "sample %llu: %s",
               (unsigned long long)idx, gf_strerror(rc));
    }
    s->err_pos = j;
  }
  pthread_mutex_unlock(&l->mu);
}

/* Processes positions [j0, j0 + n) of slot s. */
static void run_chunk(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  pending pend[64];
  gf_read_req reqs[64];
  uint32_t nreq = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    uint64_t idx = s->indices[j];
    uint8_t *dst = s->data + (uint64_t)j * l->stride;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break;
    pending *p = &pend[nreq];
    int rc = gf_source_sample(l->src, idx, &p->smp);
    if (rc < 0) {
      gf_fail_context(rc, NULL, idx, NULL);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    s->labels[j] = p->smp.label;
    if (s->dsrc_dev)
      s->dsrc_dev[j] = 0;
    if (from_cache(l, w->tid, idx, dst, &s->shapes[j], &s->filtered[j],
                   s->dsrc_dev ? &s->dsrc_dev[j] : NULL,
                   s->dsrc_dev ? &s->dsrc_host[j] : NULL)) {
      s->status[j] = 0;
      continue;
    }
    p->j = j;
    p->fd_owned = -1;
    p->skew = 0;
    int fd = p->smp.fd;
    if (fd < 0) {
      rc = gf_source_open_file(l->src, idx, &fd, &p->smp.length);
      if (rc < 0) {
        record_failure(l, s, j, rc, idx);
        continue;
      }
      p->fd_owned = fd;
    }
    uint64_t off = p->smp.offset, len = p->smp.length;
    p->in_place = raw_in_place(l, &p->smp);
    p->buf = p->in_place ? dst : w->rbuf + (uint64_t)nreq * l->stored_cap;
    uint32_t flags = 0;
    if (l->direct_fds && p->fd_owned < 0) {
      fd = l->direct_fds[p->smp.shard];
      uint64_t a = l->direct_align;
      uint64_t start = off & ~(a - 1);
      p->skew = off - start;
      len = (off + len + a - 1) / a * a - start;
      off = start;
      flags = GF_READ_EOF_OK;
    }
    if (len > l->stored_cap && !p->in_place) {
      char name[1100];
      gf_source_name(l->src, idx, name, sizeof name);
      rc = gf_fail(GF_ELIMIT, name, idx, GF_NO_INDEX,
                   "stored sample of %llu bytes exceeds the read buffer of "
                   "%llu bytes (raise max_sample_bytes)",
                   (unsigned long long)p->smp.length,
                   (unsigned long long)l->stored_cap);
      if (p->fd_owned >= 0)
        close(p->fd_owned);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    reqs[nreq] = (gf_read_req){.fd = fd, .flags = flags, .offset = off,
                               .length = len, .buf = p->buf,
                               .user_data = nreq};
    nreq++;
  }
  if (nreq == 0)
    return;
  uint64_t t0 = now_ns(), t_sub = t0;
  range_push(l, "read");
  int rc = gf_reader_submit(w->reader, reqs, nreq);
  if (rc < 0) {
    range_pop(l);
    for (uint32_t i = 0; i < nreq; i++) {
      if (pend[i].fd_owned >= 0)
        close(pend[i].fd_owned);
      gf_fail_context(rc, NULL, pend[i].smp.index, "submitting reads");
      record_failure(l, s, pend[i].j, rc, pend[i].smp.index);
    }
    return;
  }
  uint32_t left = nreq;
  gf_read_done done[64];
  while (left) {
    int got = gf_reader_wait(w->reader, done, left, 1);
    if (got <= 0) {
      /* A ring error: the reads still out cannot be trusted. */
      range_pop(l);
      gf_log(GF_LOG_ERROR, "reader wait failed: %s", gf_strerror(got));
      break;
    }
    uint64_t t_got = now_ns();
    add(&l->st_read.busy_ns, t_got - t0);
    if ((uint32_t)got == left) {
      /* The chunk's last reads are in: its read span ends here, before
       * the decodes that follow, so spans nest on the worker's track. */
      range_pop(l);
      span(l, GF_TR_READ, w->tid, t_sub, t_got, pend[0].smp.index);
    }
    for (int g = 0; g < got; g++) {
      pending *p = &pend[done[g].user_data];
      left--;
      int64_t res = done[g].result;
      if (p->fd_owned >= 0) {
        close(p->fd_owned);
        p->fd_owned = -1;
      }
      uint8_t *dst = s->data + (uint64_t)p->j * l->stride;
      if (res >= 0 && (uint64_t)res < p->skew + p->smp.length)
        res = GF_ETRUNCATED;
      if (res < 0) {
        char name[1100];
        gf_source_name(l->src, p->smp.index, name, sizeof name);
        gf_fail((int)res, name, p->smp.index, done[g].stop_offset,
                "reading %llu bytes at offset %llu: %s",
                (unsigned long long)p->smp.length,
                (unsigned long long)p->smp.offset, gf_strerror((int)res));
        record_failure(l, s, p->j, (int)res, p->smp.index);
        continue;
      }
      add(&l->st_read.samples, 1);
      add(&l->st_read.bytes, p->smp.length);
      rc = finish_sample(l, w->tid, &p->smp, p->buf + p->skew, p->smp.length,
                         p->in_place, dst, &s->shapes[p->j],
                         &s->filtered[p->j]);
      if (rc < 0)
        record_failure(l, s, p->j, rc, p->smp.index);
      else
        s->status[p->j] = 0;
    }
    t0 = now_ns();
  }
}

/* Assigns the next batch of the dispatch order to free slot s. Under mu. */
static void dispatch(gf_loader *l, slot *s) {
  uint64_t B = l->cfg.batch_size, share;
  for (;;) {
    /* A resumed epoch's share differs from a full one's. */
    if (gf_sampler_epoch(&l->sampler) != l->d_epoch)
      gf_sampler_set_epoch(&l->sampler, l->d_epoch);
    share = gf_sampler_samples_per_epoch(&l->sampler);
    uint64_t left = share - l->d_pos;
    if (l->d_pos < share && !(l->cfg.drop_last && left < B))
      break;
    l->d_epoch++;
    l->d_pos = 0;
    l->d_k = 0;
  }
  uint64_t left = share - l->d_pos;
  uint32_t count = (uint32_t)(left < B ? left : B);
  s->seq = l->next_seq++;
  s->epoch = l->d_epoch;
  s->k = l->d_k++;
  s->first_pos = l->d_pos;
  s->end_pos = l->d_pos + count;
  l->d_pos += count;
  s->count = count;
  for (uint32_t j = 0; j < count; j++) {
    s->indices[j] = gf_sampler_get(&l->sampler, s->first_pos + j);
    s->status[j] = 1; /* not done */
  }
  s->claimed = 0;
  s->busy = 0;
  s->done = 0;
  s->err_pos = UINT32_MAX;
  atomic_store(&s->cancel, 0);
  s->state = SLOT_FILLING;
}

/* Finds a chunk to work on, dispatching a batch when a slot is free. Under
 * mu. Returns the slot or NULL. */
static slot *claim(gf_loader *l, uint32_t *j0, uint32_t *n) {
  slot *best = NULL;
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if (s->state == SLOT_FILLING && s->claimed < s->count &&
        (!best || s->seq < best->seq))
      best = s;
  }
  if (!best && !l->paused) {
    for (uint32_t i = 0; i < l->nslots; i++)
      if (l->slots[i].state == SLOT_DRAINING &&
          gf_stage_host_free(l->stage, i))
        l->slots[i].state = SLOT_FREE;
    for (uint32_t i = 0; i < l->nslots; i++)
      if (l->slots[i].state == SLOT_FREE) {
        best = &l->slots[i];
        dispatch(l, best);
        break;
      }
  }
  if (!best)
    return NULL;
  uint32_t left = best->count - best->claimed;
  *j0 = best->claimed;
  *n = left < l->chunk ? left : l->chunk;
  best->claimed += *n;
  best->busy++;
  return best;
}

/* Makes the batch's final form once every sample is in: one dense array
 * when all samples share a shape, then the transform, on the CPU (host
 * mode) or submitted to the GPU. Runs on the worker that finished the slot
 * (or the consumer after a repair), outside the lock: nothing else touches
 * the slot meanwhile. A failure is kept in fin_rc for next() to return. */
static void finalize_body(gf_loader *l, slot *s);
static void finalize(gf_loader *l, slot *s, uint32_t tid) {
  uint64_t t0 = l->trace ? now_ns() : 0;
  range_push(l, "finalize");
  finalize_body(l, s);
  range_pop(l);
  span(l, GF_TR_FINALIZE, tid, t0, l->trace ? now_ns() : 0, s->seq);
}

/* The copy stream's span of the slot's previous batch, if not yet taken:
 * its timing events are about to be recorded again. */
static void take_gpu_span(gf_loader *l, slot *s, bool wait) {
  uint64_t g0, gd;
  if (l->trace && l->stage &&
      gf_stage_timing_take(l->stage, s->index, wait, &g0, &gd) == 1)
    gf_trace_span(l->trace, GF_TR_GPU_COPY, GF_TRACE_TID_COPY_STREAM, g0,
                  g0 + gd, s->gpu_seq);
}

/* Direct mode: copies the samples that are still in the pinned cache into
 * the staging slot (for a batch whose host pixels the caller gets). */
static void materialize(gf_loader *l, slot *s) {
  for (uint32_t j = 0; j < s->count; j++)
    if (s->dsrc_dev[j]) {
      memcpy(s->data + (uint64_t)j * l->stride, s->dsrc_host[j],
             gf_shape_bytes(&s->shapes[j]));
      s->dsrc_dev[j] = 0;
    }
}

/* Direct mode: the gather list of slot s (its samples at offsets[j] of the
 * device input, from the cache or from the staging slot). */
static uint32_t make_segs(gf_loader *l, slot *s) {
  uint64_t base = gf_stage_host_dev(l->stage, s->index);
  uint32_t n = 0;
  for (uint32_t j = 0; j < s->count; j++) {
    uint64_t len = gf_shape_bytes(&s->shapes[j]);
    if (len == 0)
      continue;
    gf_stage_seg *g = &s->segs[n++];
    g->dst = s->offsets[j];
    g->len = len;
    if (s->dsrc_dev[j]) {
      g->host = s->dsrc_host[j];
      g->dev = s->dsrc_dev[j];
    } else {
      g->host = s->data + (uint64_t)j * l->stride;
      g->dev = base + (uint64_t)j * l->stride;
    }
  }
  return n;
}

static void finalize_body(gf_loader *l, slot *s) {
  s->fin_rc = 0;
  uint64_t stride = l->stride;
  bool same = s->count > 0;
  for (uint32_t j = 1; j < s->count && same; j++)
    same = memcmp(&s->shapes[j], &s->shapes[0], sizeof(gf_shape)) == 0;
  uint32_t nd = 0;
  for (uint32_t j = 0; s->dsrc_dev && j < s->count; j++)
    nd += s->dsrc_dev[j] != 0;
  if (nd && !same && l->identity) {
    /* A ragged batch with nothing asked of the transform: the caller gets
     * the host pixels, so they must all be there. */
    materialize(l, s);
    nd = 0;
  }
  s->ndirect = nd;
  s->batch.uniform = same;
  if (same) {
    uint64_t bytes = gf_shape_bytes(&s->shapes[0]);
    /* One dense array; when gathering, the gather list places each sample
     * where it belongs and the staging copies stay where they are. */
    if (bytes < stride && !nd)
      for (uint32_t j = 1; j < s->count; j++)
        memmove(s->data + j * bytes, s->data + (uint64_t)j * stride, bytes);
    stride = bytes;
    s->batch.shape = s->shapes[0];
  }
  s->batch.stride = stride;
  for (uint32_t j = 0; j < s->count; j++)
    s->offsets[j] = (uint64_t)j * stride;
  s->batch.data_bytes = (uint64_t)s->count * stride;
  s->batch.output = NULL;
  s->batch.output_bytes = 0;
  s->batch.on_device = 0;
  const gf_transform *t = &l->cfg.transform;
  s->batch.out_dtype = t->out_dtype;
  s->batch.out_layout = t->layout;
  if (l->identity && !l->stage) {
    /* Nothing to do: the pixels are the output when they are dense. */
    if (same) {
      s->batch.output = s->data;
      s->batch.output_bytes = s->batch.data_bytes;
      s->batch.out_height = s->shapes[0].height;
      s->batch.out_width = s->shapes[0].width;
      s->batch.out_channels = s->shapes[0].channels;
    }
    return;
  }
  uint32_t oh, ow, oc, nf = 0;
  int rc = gf_xform_out_shape(t, s->shapes, s->count, &oh, &ow, &oc);
  if (rc == GF_ESHAPE && l->identity) {
    /* A ragged batch and nothing asked of the transform: the caller gets
     * the samples as they are (shapes and offsets), no dense output. */
    gf_error_clear();
    return;
  }
  if (rc == 0) {
    for (uint32_t j = 0; j < s->count; j++) {
      gf_xform_sample_init(t, s->epoch, s->indices[j], s->offsets[j],
                           &s->shapes[j], oh, ow, s->filtered[j],
                           &s->params[j]);
      nf += s->filtered[j];
    }
    if (l->stage) {
      void *out;
      uint64_t len;
      take_gpu_span(l, s, true);
      s->gpu_seq = s->seq;
      uint32_t nsegs = nd ? make_segs(l, s) : 0;
      rc = gf_stage_submit(l->stage, s->index, t, s->params, s->count, nf,
                           s->batch.data_bytes, nd ? s->segs : NULL, nsegs,
                           oh, ow, oc, &out, &len);
      if (rc == 0) {
        s->batch.output = out;
        s->batch.output_bytes = len;
        s->batch.on_device = 1;
      }
    } else {
      uint64_t len;
      rc = gf_xform_out_bytes(s->count, oh, ow, oc, t->out_dtype, &len);
      if (rc == 0 && len > l->out_cap)
        rc = gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch output of %llu bytes exceeds the %llu bytes "
                     "planned a batch",
                     (unsigned long long)len, (unsigned long long)l->out_cap);
      if (rc == 0)
        rc = gf_xform_ref(t, s->data, s->batch.data_bytes, s->params,
                          s->count, oh, ow, oc, s->out_host);
      if (rc == 0) {
        s->batch.output = s->out_host;
        s->batch.output_bytes = len;
      }
    }
  }
  if (rc < 0) {
    s->fin_rc = rc;
    s->fin_err = *gf_last_error();
    if (s->fin_err.code != rc) {
      memset(&s->fin_err, 0, sizeof s->fin_err);
      s->fin_err.code = rc;
      s->fin_err.sample = s->fin_err.offset = GF_NO_INDEX;
      snprintf(s->fin_err.message, sizeof s->fin_err.message,
               "making batch %llu of epoch %llu: %s",
               (unsigned long long)s->k, (unsigned long long)s->epoch,
               gf_strerror(rc));
    }
    return;
  }
  s->batch.out_height = oh;
  s->batch.out_width = ow;
  s->batch.out_channels = oc;
}

static bool slot_failed(const slot *s) {
  for (uint32_t j = 0; j < s->count; j++)
    if (s->status[j] != 0)
      return true;
  return false;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  gf_loader *l = w->l;
  pthread_mutex_lock(&l->mu);
  while (!l->stop) {
    uint32_t j0, n;
    slot *s = claim(l, &j0, &n);
    if (!s) {
      uint64_t t0 = now_ns();
      pthread_cond_wait(&l->work_cv, &l->mu);
      add(&l->st_read.wait_ns, now_ns() - t0);
      continue;
    }
    pthread_mutex_unlock(&l->mu);
    run_chunk(w, s, j0, n);
    pthread_mutex_lock(&l->mu);
    s->busy--;
    s->done += n;
    if (s->state == SLOT_CANCELLED) {
      if (s->busy == 0)
        pthread_cond_broadcast(&l->ready_cv);
    } else if (s->done == s->count) {
      /* Finalise outside the lock; busy keeps cancel_all waiting. */
      s->busy++;
      bool failed = slot_failed(s);
      pthread_mutex_unlock(&l->mu);
      if (!failed)
        finalize(l, s, w->tid);
      pthread_mutex_lock(&l->mu);
      s->busy--;
      if (s->state == SLOT_CANCELLED) {
        if (s->busy == 0)
          pthread_cond_broadcast(&l->ready_cv);
      } else {
        s->state = SLOT_READY;
        pthread_cond_broadcast(&l->ready_cv);
      }
    }
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* Cancels every slot that is filling or ready (not lent) and waits until no
 * worker touches them. Under mu. */
static void cancel_all(gf_loader *l) {
  /* Waiting below releases mu: without the pause a worker could dispatch
   * a batch from the old cursor meanwhile. restart_at() lifts it. */
  l->paused = true;
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if (s->state == SLOT_FILLING || s->state == SLOT_READY) {
      s->state = SLOT_CANCELLED;
      atomic_store(&s->cancel, 1);
    }
  }
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    while (s->state == SLOT_CANCELLED && s->busy > 0)
      pthread_cond_wait(&l->ready_cv, &l->mu);
    if (s->state == SLOT_CANCELLED)
      s->state = l->stage && !gf_stage_host_free(l->stage, s->index)
                     ? SLOT_DRAINING
                     : SLOT_FREE;
  }
}

/* ---- create / destroy --------------------------------------------------- */

static int cfg_fail(const char *field, const char *why) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "loader config: %s %s", field, why);
}

static int resolve_config(const gf_loader_config *in, gf_loader_config *c) {
  gf_loader_config def = GF_LOADER_CONFIG_INIT;
  *c = def;
  if (!in)
    return cfg_fail("source", "is not set: pass a config");
  int rc = gf_check_struct_size(in->struct_size, sizeof *in, "gf_loader_config");
  if (rc < 0)
    return rc;
  memcpy(c, in, in->struct_size);
  c->struct_size = sizeof *c;
  for (size_t i = 0; i < sizeof c->reserved / sizeof c->reserved[0]; i++)
    if (c->reserved[i])
      return cfg_fail("reserved", "fields must be zero");
  if (!c->batch_size)
    c->batch_size = 256;
  if (c->batch_size > (1u << 24))
    return cfg_fail("batch_size", "is above 16M samples");
  if (!c->world)
    c->world = 1;
  if (c->rank >= c->world)
    return cfg_fail("rank", "must be below world");
  /* threads / prefetch 0: chosen by autotune() once the buffer sizes are
   * known. */
  if (c->threads > 1024)
    return cfg_fail("threads", "is above 1024");
  if (c->trace_events > (1ull << 26))
    return cfg_fail("trace_events", "is above 2^26 events");
  if (c->prefetch > 64)
    return cfg_fail("prefetch", "is above 64 slots");
  if (c->order > GF_ORDER_BLOCK)
    return cfg_fail("order", "is not a gf_order value");
  if (c->partition > GF_PARTITION_DROP)
    return cfg_fail("partition", "is not a gf_partition value");
  if (c->error_policy > GF_ON_ERROR_SKIP)
    return cfg_fail("error_policy", "is not a gf_error_policy value");
  if (c->io_backend > GF_IO_PREAD)
    return cfg_fail("io_backend", "is not a gf_io_backend value");
  if (c->channels == 2 || c->channels > 4)
    return cfg_fail("channels", "must be 0 (native), 1, 3 or 4");
  if (!c->io_queue_depth)
    c->io_queue_depth = 16;
  if (c->io_queue_depth > 64)
    c->io_queue_depth = 64;
  if (c->reserved0)
    return cfg_fail("reserved0", "must be zero");
  if (c->cache_direct > GF_CACHE_DIRECT_OFF)
    return cfg_fail("cache_direct", "is not a gf_cache_direct value");
  if (c->staging_slots > 64)
    return cfg_fail("staging_slots", "is above 64");
  if (c->device < GF_DEVICE_AUTO)
    return cfg_fail("device", "must be GF_DEVICE_AUTO, GF_DEVICE_CPU or a "
                              "device index");
  if ((rc = gf_xform_check(&c->transform)) < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "loader config: transform");
  return 0;
}

static int alloc_slot(gf_loader *l, slot *s, uint32_t index) {
  uint64_t B = l->cfg.batch_size, bytes;
  if (!gf_mul_u64(B, l->stride, &bytes))
    return -ENOMEM;
  s->index = index;
  /* GPU mode: the stage's pinned staging memory; host mode: our own. */
  s->data = l->stage ? gf_stage_host(l->stage, index)
                     : aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  s->filtered = calloc(B, 1);
  s->params = calloc(B, sizeof *s->params);
  if (!l->stage && !l->identity) {
    s->out_host = aligned_alloc(64, (l->out_cap + 63) / 64 * 64);
    if (!s->out_host)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch output of %llu bytes",
                     (unsigned long long)l->out_cap);
  }
  if (l->direct) {
    s->dsrc_dev = calloc(B, sizeof *s->dsrc_dev);
    s->dsrc_host = calloc(B, sizeof *s->dsrc_host);
    s->segs = calloc(B, sizeof *s->segs);
    if (!s->dsrc_dev || !s->dsrc_host || !s->segs)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's gather list");
  }
  s->shapes = calloc(B, sizeof *s->shapes);
  s->offsets = calloc(B, sizeof *s->offsets);
  s->labels = calloc(B, sizeof *s->labels);
  s->indices = calloc(B, sizeof *s->indices);
  s->status = calloc(B, sizeof *s->status);
  if (!s->data || !s->shapes || !s->offsets || !s->labels || !s->indices ||
      !s->status || !s->filtered || !s->params)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a batch slot of %llu bytes",
                   (unsigned long long)bytes);
  s->state = SLOT_FREE;
  s->err_pos = UINT32_MAX;
  return 0;
}

static void free_slot(gf_loader *l, slot *s) {
  if (!l->stage)
    free(s->data);
  free(s->filtered);
  free(s->params);
  free(s->out_host);
  free(s->shapes);
  free(s->offsets);
  free(s->labels);
  free(s->indices);
  free(s->status);
  free(s->dsrc_dev);
  free(s->dsrc_host);
  free(s->segs);
}

/* MemAvailable from /proc/meminfo, else the free pages; 0 when unknown. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  uint64_t kb = 0;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
        break;
    fclose(f);
  }
  if (kb)
    return kb * 1024;
  long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* Read-buffer samples a worker gets (the chunk), as create computes it. */
static uint32_t chunk_for(const gf_loader *l, uint32_t threads) {
  uint32_t chunk = l->cfg.io_queue_depth;
  uint32_t per = l->cfg.batch_size / (2 * threads);
  if (per < chunk)
    chunk = per ? per : 1;
  return chunk;
}

/* Host bytes the loader's buffers take with these counts: the batch slots
 * (staging, plus the output in host mode) and each worker's read buffer. */
static uint64_t host_bytes(const gf_loader *l, uint32_t threads,
                           uint32_t prefetch, bool gpu) {
  uint64_t per_slot = l->cfg.batch_size * l->stride;
  if (!gpu && !l->identity)
    per_slot += l->out_cap;
  uint64_t slots = l->cfg.staging_slots ? l->cfg.staging_slots : prefetch;
  return per_slot * slots +
         (uint64_t)threads * chunk_for(l, threads) * l->stored_cap;
}

static void fmt_gb(uint64_t b, char *buf, size_t cap) {
  if (b >= 1000000000ull)
    snprintf(buf, cap, "%.1f GB", (double)b / 1e9);
  else if (b >= 1000000ull)
    snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
  else
    snprintf(buf, cap, "%.1f kB", (double)b / 1e3);
}

/* Chooses threads and prefetch where the config left them 0: threads
 * within a CPU budget (online cores, one kept for the consumer above 2
 * cores, which otherwise would compete with the workers it waits on) and a
 * RAM budget (the loader's host buffers at most 1/8 of MemAvailable, so a
 * training process keeps the rest); prefetch 2 (double buffering), up to 4
 * with 8 threads or more, where fast workers finish batches in bursts and
 * the extra slots absorb them. Writes the choice and why to l->tuning. */
static void autotune(gf_loader *l, bool gpu) {
  bool auto_t = l->cfg.threads == 0, auto_p = l->cfg.prefetch == 0;
  if (!auto_t && !auto_p) {
    snprintf(l->tuning, sizeof l->tuning,
             "%u threads, prefetch %u (as configured)", l->cfg.threads,
             l->cfg.prefetch);
    return;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = n > 0 ? (uint32_t)(n > 1024 ? 1024 : n) : 1;
  uint32_t cpu_budget = cores > 2 ? cores - 1 : cores;
  uint64_t avail = mem_available();
  uint64_t budget = avail ? avail / 8 : UINT64_MAX;
  uint32_t p = auto_p ? 2 : l->cfg.prefetch;
  uint32_t t = auto_t ? cpu_budget : l->cfg.threads;
  bool ram_cut = false;
  while (auto_t && t > 1 && host_bytes(l, t, p, gpu) > budget) {
    t--;
    ram_cut = true;
  }
  /* In GPU mode the slots are device memory too: the plan (2 slots) must
   * not depend on the machine, so only host mode takes more. */
  if (auto_p && t >= 8 && !gpu)
    for (uint32_t q = 4; q > 2; q--)
      if (host_bytes(l, t, q, gpu) <= budget) {
        p = q;
        break;
      }
  l->cfg.threads = t;
  l->cfg.prefetch = p;
  char ram[32], need[32], why_t[96], why_p[96];
  fmt_gb(budget == UINT64_MAX ? 0 : budget, ram, sizeof ram);
  fmt_gb(host_bytes(l, t, p, gpu), need, sizeof need);
  if (!auto_t)
    snprintf(why_t, sizeof why_t, "%u threads (as configured)", t);
  else if (ram_cut)
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, cut to fit RAM)", t,
             cores);
  else
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, %s)", t, cores,
             cores > 2 ? "1 for the consumer" : "none kept for the consumer");
  if (!auto_p)
    snprintf(why_p, sizeof why_p, "prefetch %u (as configured)", p);
  else
    snprintf(why_p, sizeof why_p, "prefetch %u", p);
  char msg[512];
  if (!avail)
    snprintf(msg, sizeof msg, "%s, %s (RAM budget unknown)", why_t, why_p);
  else
    snprintf(msg, sizeof msg, "%s, %s (RAM budget %s, %s used%s)", why_t,
             why_p, ram, need,
             host_bytes(l, t, p, gpu) > budget ? ", over budget"
                                               : "");
  gf_strlcpy(l->tuning, msg, sizeof l->tuning);
}

/* O_DIRECT: a second set of shard descriptors opened with O_DIRECT; reads
 * are widened to the alignment and land in the aligned read buffers. A
 * filesystem that refuses O_DIRECT (tmpfs) keeps buffered reads, said in
 * the log. */
static int open_direct(gf_loader *l) {
  uint32_t align = gf_source_alignment(l->src);
  const char *why = NULL;
  if (!gf_source_is_dataset(l->src))
    why = "the source is a PNG folder";
  else if (align < 512)
    why = "the dataset was built without --align 4096";
  if (why) {
    gf_log(GF_LOG_WARN, "io_direct ignored: %s", why);
    return 0;
  }
  l->nshards = gf_source_num_shards(l->src);
  l->direct_fds = malloc(l->nshards * sizeof *l->direct_fds);
  if (!l->direct_fds)
    return -ENOMEM;
  for (uint32_t i = 0; i < l->nshards; i++)
    l->direct_fds[i] = -1;
  for (uint32_t i = 0; i < l->nshards; i++) {
    const char *path = gf_source_shard_path(l->src, i);
    l->direct_fds[i] = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (l->direct_fds[i] < 0) {
      int e = errno;
      gf_log(GF_LOG_WARN, "io_direct ignored: %s: %s", path, strerror(e));
      for (uint32_t k = 0; k < i; k++)
        close(l->direct_fds[k]);
      free(l->direct_fds);
      l->direct_fds = NULL;
      return 0;
    }
  }
  l->direct_align = align;
  /* The widened read can start up to align - 1 bytes early and end up to
   * align - 1 bytes late. */
  l->stored_cap = (l->stored_cap + 2ull * align + align - 1) / align * align;
  return 0;
}

/* The sizes every buffer follows from: a sample's slot in a batch
 * (stride), a read buffer entry, whether the transform is the identity,
 * and a batch's output. From the config and the source alone: create and
 * gf_loader_plan share it. */
static int plan_sizes(gf_loader *l) {
  int rc;
  uint64_t max_dec, max_stored;
  uint32_t cmax;
  if ((rc = gf_source_max_sizes(l->src, &l->dopts, &max_dec, &max_stored,
                                &cmax)) < 0)
    return rc;
  l->stride = l->cfg.max_sample_bytes ? l->cfg.max_sample_bytes : max_dec;
  if (l->stride < max_dec && gf_source_is_dataset(l->src))
    return gf_fail(-EINVAL, l->source_path, GF_NO_INDEX, GF_NO_INDEX,
                   "max_sample_bytes %llu is below the largest sample (%llu "
                   "bytes decoded)",
                   (unsigned long long)l->stride, (unsigned long long)max_dec);
  /* A PNG file is smaller than its pixels but for tiny or noisy images;
   * the margin bounds the read buffer without a scan of every file. */
  l->stored_cap = max_stored ? max_stored : l->stride + l->stride / 4 + 65536;
  const gf_transform *t = &l->cfg.transform;
  l->identity = t->out_dtype == GF_OUT_U8 && t->layout == GF_LAYOUT_NHWC &&
                !t->height && !t->width && !t->random_crop && !t->pad &&
                !t->hflip;
  /* A sized output holds out_h x out_w pixels of the most channels a
   * sample can have (a dataset's index says; a folder: 4). */
  uint64_t per;
  if (t->height)
    per = (uint64_t)t->height * t->width * cmax;
  else
    per = l->stride; /* a sample's own pixels, at most stride bytes */
  if (!gf_mul_u64(per, gf_out_dtype_size(t->out_dtype), &per) ||
      !gf_mul_u64(per, l->cfg.batch_size, &l->out_cap))
    return cfg_fail("transform", "gives a batch output beyond 2^64 bytes");
  return 0;
}

/* The host cache's pinner in GPU mode. */
static int pin_cb(void *ctx, void *addr, size_t len, uint64_t *dev) {
  const gf_loader *l = ctx;
  int rc = gf_gpu_pin(l->device, addr, len, dev);
  if (rc < 0)
    gf_log(GF_LOG_WARN, "cache: %s (its samples are copied through the "
                        "staging slots instead)",
           gf_last_error()->message);
  return rc;
}
static void unpin_cb(void *ctx, void *addr, size_t len) {
  const gf_loader *l = ctx;
  (void)len;
  gf_gpu_unpin(l->device, addr);
}

int gf_loader_create(const gf_loader_config *cfg, gf_loader **out) {
  if (!out)
    return cfg_fail("out", "is NULL");
  *out = NULL;
  uint64_t t_create = now_ns();
  gf_loader *l = calloc(1, sizeof *l);
  if (!l)
    return -ENOMEM;
  int rc = resolve_config(cfg, &l->cfg);
  if (rc < 0) {
    free(l);
    return rc;
  }
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->stat_mu, NULL);
  pthread_cond_init(&l->work_cv, NULL);
  pthread_cond_init(&l->ready_cv, NULL);
  l->source_path = strdup(cfg->source ? cfg->source : "");
  l->labels_path = cfg->labels_file ? strdup(cfg->labels_file) : NULL;
  l->cfg.source = l->source_path;
  l->cfg.labels_file = l->labels_path;
  gf_decode_opts d = GF_DECODE_OPTS_INIT;
  d.channels = l->cfg.channels;
  d.keep_16bit = l->cfg.keep_16bit;
  d.limits = l->cfg.limits;
  l->dopts = d;

  if ((rc = gf_source_open(l->source_path, l->labels_path, &l->src)) < 0)
    goto fail;
  uint64_t n = gf_source_count(l->src);
  gf_sampler_config sc = GF_SAMPLER_CONFIG_INIT;
  sc.n = n;
  sc.seed = l->cfg.seed;
  sc.order = l->cfg.order;
  sc.partition = l->cfg.partition;
  sc.rank = l->cfg.rank;
  sc.world = l->cfg.world;
  sc.batch_size = l->cfg.batch_size;
  sc.drop_last = l->cfg.drop_last;
  sc.block_size = l->cfg.block_size;
  if ((rc = gf_sampler_init(&l->sampler, &sc)) < 0)
    goto fail;
  l->share = gf_sampler_samples_per_epoch(&l->sampler);
  if (l->share == 0 || gf_sampler_batches_per_epoch(&l->sampler) == 0) {
    rc = gf_fail(-EINVAL, l->source_path, GF_NO_INDEX, GF_NO_INDEX,
                 "rank %u of %u gets no batch of %u from %llu samples",
                 l->cfg.rank, l->cfg.world, l->cfg.batch_size,
                 (unsigned long long)n);
    goto fail;
  }

  if ((rc = plan_sizes(l)) < 0)
    goto fail;
  if (l->cfg.io_direct && (rc = open_direct(l)) < 0)
    goto fail;

  if (l->cfg.cache_bytes &&
      (rc = gf_cache_create(l->cfg.cache_bytes, n, &l->cache)) < 0)
    goto fail;

  /* The device: GPU mode when one is asked for or, under AUTO, found. */
  l->device = GF_DEVICE_CPU;
  if (l->cfg.device != GF_DEVICE_CPU) {
    char why[256];
    if (gf_stage_probe(l->cfg.device, why, sizeof why)) {
      l->device = l->cfg.device < 0 ? 0 : l->cfg.device;
    } else if (l->cfg.device == GF_DEVICE_AUTO) {
      gf_strlcpy(l->host_reason, why, sizeof l->host_reason);
      gf_log(GF_LOG_INFO, "host mode: %s", why);
    } else {
      rc = gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loader config: device %d: %s", l->cfg.device, why);
      goto fail;
    }
  }
  autotune(l, l->device >= 0);
  l->chunk = chunk_for(l, l->cfg.threads);
  l->nslots = l->cfg.staging_slots ? l->cfg.staging_slots : l->cfg.prefetch;
  if (l->device >= 0) {
    gf_stage_config sc2;
    memset(&sc2, 0, sizeof sc2);
    sc2.device = l->device;
    sc2.slots = l->nslots;
    sc2.max_samples = l->cfg.batch_size;
    sc2.in_bytes = l->cfg.batch_size * l->stride;
    sc2.out_bytes = l->out_cap;
    sc2.pool_bytes = l->cfg.device_pool_bytes;
    if ((rc = gf_stage_create(&sc2, &l->stage)) < 0)
      goto fail;
    l->nvtx = true;
    if (l->cache && l->cfg.cache_direct == GF_CACHE_DIRECT_AUTO) {
      gf_cache_pinner pn = {pin_cb, unpin_cb, l, 0};
      if ((rc = gf_cache_set_pinner(l->cache, &pn)) < 0)
        goto fail;
      l->direct = true;
      gf_log(GF_LOG_INFO, "cache: pinned as it fills; cached samples go to "
                          "the device from it (%s)",
             gf_stage_direct_copy(l->stage));
    }
  }
  l->slots = calloc(l->nslots, sizeof *l->slots);
  if (!l->slots) {
    rc = -ENOMEM;
    goto fail;
  }
  for (uint32_t i = 0; i < l->nslots; i++)
    if ((rc = alloc_slot(l, &l->slots[i], i)) < 0)
      goto fail;

  l->nworkers = l->cfg.threads;
  if (l->cfg.trace_events) {
    if ((rc = gf_trace_create(l->cfg.trace_events, l->nworkers, t_create,
                              l->stage != NULL, &l->trace)) < 0)
      goto fail;
    if (l->stage && (rc = gf_stage_timing_enable(l->stage)) < 0)
      goto fail;
  }
  l->workers = calloc(l->nworkers, sizeof *l->workers);
  if (!l->workers) {
    rc = -ENOMEM;
    goto fail;
  }
  gf_reader_opts ro = GF_READER_OPTS_INIT;
  ro.backend = (int32_t)l->cfg.io_backend;
  ro.queue_depth = l->chunk;
  ro.max_pending = l->chunk;
  ro.pread_threads = 2;
  ro.direct = l->direct_fds != NULL;
  ro.direct_align = l->direct_align;
  for (uint32_t i = 0; i < l->nworkers; i++) {
    worker *w = &l->workers[i];
    w->l = l;
    w->tid = GF_TRACE_TID_WORKER(i);
    uint64_t rb;
    if (!gf_mul_u64(l->chunk, l->stored_cap, &rb) ||
        !(w->rbuf = aligned_alloc(4096, (rb + 4095) / 4096 * 4096))) {
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a read buffer of %llu bytes",
                   (unsigned long long)rb);
      goto fail;
    }
    if ((rc = gf_reader_create(&ro, &w->reader)) < 0)
      goto fail;
    /* Fixed buffers save pinning the read buffer's pages on every read;
     * a kernel that refuses (RLIMIT_MEMLOCK) only costs that saving. */
    struct iovec iov = {w->rbuf, (size_t)((rb + 4095) / 4096 * 4096)};
    if (iov.iov_len <= (1ull << 30) && gf_reader_register(w->reader, &iov, 1) < 0)
      gf_log(GF_LOG_INFO, "read buffers not registered: %s",
             gf_last_error()->message);
  }
  gf_strlcpy(l->io_backend, gf_reader_backend(l->workers[0].reader),
             sizeof l->io_backend);
  gf_strlcpy(l->io_fallback, gf_reader_fallback_reason(l->workers[0].reader),
             sizeof l->io_fallback);
  for (uint32_t i = 0; i < l->nworkers; i++) {
    if ((rc = -pthread_create(&l->workers[i].thread, NULL, worker_main,
                              &l->workers[i])) < 0) {
      gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
              "cannot start worker thread %u", i);
      goto fail;
    }
    l->workers[i].started = true;
  }
  *out = l;
  return 0;
fail:
  {
    gf_error_info saved = *gf_last_error();
    gf_loader_destroy(l);
    if (saved.code == rc)
      gf_fail(rc, saved.path[0] ? saved.path : NULL, saved.sample,
              saved.offset, "%s", saved.message);
  }
  return rc;
}

void gf_loader_destroy(gf_loader *l) {
  if (!l)
    return;
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  for (uint32_t i = 0; i < l->nslots && l->slots; i++)
    atomic_store(&l->slots[i].cancel, 1);
  pthread_cond_broadcast(&l->work_cv);
  pthread_mutex_unlock(&l->mu);
  for (uint32_t i = 0; i < l->nworkers && l->workers; i++) {
    worker *w = &l->workers[i];
    if (w->started)
      pthread_join(w->thread, NULL);
    gf_reader_destroy(w->reader);
    free(w->rbuf);
  }
  free(l->workers);
  for (uint32_t i = 0; i < l->nslots && l->slots; i++)
    free_slot(l, &l->slots[i]);
  free(l->slots);
  /* After the workers: the stage owns the staging memory they wrote. */
  gf_stage_destroy(l->stage);
  if (l->direct_fds) {
    for (uint32_t i = 0; i < l->nshards; i++)
      if (l->direct_fds[i] >= 0)
        close(l->direct_fds[i]);
    free(l->direct_fds);
  }
  gf_trace_destroy(l->trace);
  gf_cache_destroy(l->cache);
  gf_source_close(l->src);
  free(l->source_path);
  free(l->labels_path);
  pthread_cond_destroy(&l->work_cv);
  pthread_cond_destroy(&l->ready_cv);
  pthread_mutex_destroy(&l->mu);
  pthread_mutex_destroy(&l->stat_mu);
  free(l);
}

/* ---- the consumer ------------------------------------------------------- */

static slot *find_seq(gf_loader *l, uint64_t seq) {
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if ((s->state == SLOT_FILLING || s->state == SLOT_READY) && s->seq == seq)
      return s;
  }
  return NULL;
}

static uint32_t lent_count(const gf_loader *l) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->nslots; i++)
    n += l->slots[i].state == SLOT_LENT;
  return n;
}

/* Restarts dispatch at (epoch, pos, k) with the next seq the consumer
 * expects. Under mu, after cancel_all. */
static void restart_at(gf_loader *l, uint64_t epoch, uint64_t pos,
                       uint64_t k) {
  l->d_epoch = epoch;
  l->d_pos = pos;
  l->d_k = k;
  l->next_seq = l->c_seq;
  l->paused = false;
  pthread_cond_broadcast(&l->work_cv);
}

/* Skip policy: fills the holes of ready slot s from the positions after
 * it, on this thread, after cancelling everything dispatched later. Under
 * mu. */
static void repair(gf_loader *l, slot *s) {
  s->state = SLOT_LENT; /* keep cancel_all off it */
  cancel_all(l);
  if (gf_sampler_epoch(&l->sampler) != s->epoch)
    gf_sampler_set_epoch(&l->sampler, s->epoch);
  uint64_t pos = s->end_pos;
  uint32_t out = 0;
  for (uint32_t j = 0; j < s->count; j++) {
    while (s->status[j] != 0) {
      pthread_mutex_lock(&l->stat_mu);
      gf_strlcpy(l->last_skip_reason,
                 s->err_pos == j ? s->err.message : gf_last_error()->message,
                 sizeof l->last_skip_reason);
      pthread_mutex_unlock(&l->stat_mu);
      add(&l->skipped, 1);
      s->batch.skipped++;
      if (pos >= gf_sampler_samples_per_epoch(&l->sampler))
        break;
      uint64_t idx = gf_sampler_get(&l->sampler, pos++);
      uint8_t *dst = s->data + (uint64_t)j * l->stride;
      s->indices[j] = idx;
      if (s->dsrc_dev)
        s->dsrc_dev[j] = 0;
      s->status[j] = load_sync(l, idx, dst, &s->shapes[j], &s->filtered[j],
                               &s->labels[j]);
      if (s->status[j] != 0) {
        s->err_pos = j;
        s->err = *gf_last_error();
      }
    }
    if (s->status[j] != 0)
      continue; /* the epoch ran out: compact below */
    if (out != j) {
      memmove(s->data + (uint64_t)out * l->stride,
              s->data + (uint64_t)j * l->stride, l->stride);
      s->shapes[out] = s->shapes[j];
      s->labels[out] = s->labels[j];
      s->indices[out] = s->indices[j];
      s->filtered[out] = s->filtered[j];
      s->status[out] = 0;
      if (s->dsrc_dev) {
        s->dsrc_dev[out] = s->dsrc_dev[j];
        s->dsrc_host[out] = s->dsrc_host[j];
      }
    }
    out++;
  }
  s->count = out;
  s->end_pos = pos;
  s->state = SLOT_READY;
  restart_at(l, s->epoch, pos, s->k + 1);
  /* c_seq is s->seq: the next dispatched batch must follow it. */
  l->next_seq = s->seq + 1;
}

/* A slot given up: free, or draining while the GPU still copies out of
 * its staging memory. Under mu. */
static void free_or_drain(gf_loader *l, slot *s) {
  s->state = l->stage && !gf_stage_host_free(l->stage, s->index)
                 ? SLOT_DRAINING
                 : SLOT_FREE;
  pthread_cond_broadcast(&l->work_cv);
}

/* Fills the parts of s->batch that finalize() does not. */
static void present(slot *s) {
  gf_batch *b = &s->batch;
  b->epoch = s->epoch;
  b->index = s->k;
  b->count = s->count;
  /* Samples gathered from the pinned cache never passed through the host
   * slot: its pixels are not the batch's. */
  b->data = s->ndirect ? NULL : s->data;
  b->direct_count = s->ndirect;
  b->shapes = s->shapes;
  b->offsets = s->offsets;
  b->labels = s->labels;
  b->indices = s->indices;
  b->filtered = s->filtered;
}

/* Waits on ready_cv; while a slot drains (the GPU still copies out of its
 * staging memory: rare, only when a batch was released before its copy
 * ran) nothing else would wake the loader when the copy ends, so the wait
 * is short and the draining slots are checked again. Under mu. */
static void wait_ready(gf_loader *l) {
  bool draining = false;
  for (uint32_t i = 0; i < l->nslots; i++)
    if (l->slots[i].state == SLOT_DRAINING) {
      if (gf_stage_host_free(l->stage, i))
        l->slots[i].state = SLOT_FREE;
      else
        draining = true;
    }
  pthread_cond_broadcast(&l->work_cv);
  if (!draining) {
    pthread_cond_wait(&l->ready_cv, &l->mu);
    return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 200000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&l->ready_cv, &l->mu, &ts);
}

static int next_impl(gf_loader *l, void *stream, gf_batch **out) {
  *out = NULL;
  uint64_t t0 = now_ns();
  pthread_mutex_lock(&l->mu);
  uint64_t ready = 0;
  for (uint32_t i = 0; i < l->nslots; i++)
    ready += l->slots[i].state == SLOT_READY;
  add(&l->next_calls, 1);
  add(&l->ready_sum, ready);
  slot *s;
  for (;;) {
    s = find_seq(l, l->c_seq);
    if (s && s->state == SLOT_READY)
      break;
    if (!s && lent_count(l) == l->nslots) {
      pthread_mutex_unlock(&l->mu);
      return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "the caller holds all %u batches (prefetch); release "
                     "one before taking the next",
                     l->nslots);
    }
    wait_ready(l);
  }
  add(&l->consumer_wait_ns, now_ns() - t0);
  if (s->epoch != l->c_epoch) {
    /* The current epoch is over; the next call delivers s. */
    l->c_epoch = s->epoch;
    l->c_pos = 0;
    l->c_k = 0;
    pthread_mutex_unlock(&l->mu);
    return GF_EEPOCHEND;
  }
  bool failed = slot_failed(s);
  if (failed && l->cfg.error_policy == GF_ON_ERROR_FAIL) {
    gf_error_info e = s->err;
    free_or_drain(l, s);
    l->c_seq++;
    l->c_pos = s->end_pos;
    l->c_k++;
    pthread_mutex_unlock(&l->mu);
    gf_error_restore(&e);
    return e.code;
  }
  if (failed) {
    s->batch.skipped = 0;
    repair(l, s);
    if (s->count == 0 || (l->cfg.drop_last && s->count < l->cfg.batch_size)) {
      /* Nothing left of the epoch for this batch. */
      s->state = SLOT_FREE;
      l->c_seq++;
      l->c_pos = s->end_pos;
      /* repair() left the sampler at s->epoch. */
      restart_at(l, s->epoch, gf_sampler_samples_per_epoch(&l->sampler),
                 s->k + 1);
      l->next_seq = l->c_seq;
      pthread_mutex_unlock(&l->mu);
      return next_impl(l, stream, out);
    }
    finalize(l, s, GF_TRACE_TID_CONSUMER);
  } else {
    s->batch.skipped = 0;
  }
  l->c_seq++;
  l->c_pos = s->end_pos;
  l->c_k = s->k + 1;
  if (s->fin_rc < 0) {
    gf_error_info e = s->fin_err;
    free_or_drain(l, s);
    pthread_mutex_unlock(&l->mu);
    gf_error_restore(&e);
    return e.code;
  }
  present(s);
  add(&l->cache_direct, s->ndirect); /* counted as delivered */
  s->state = SLOT_LENT;
  pthread_mutex_unlock(&l->mu);
  if (l->stage) {
    int rc = gf_stage_handoff(l->stage, s->index, stream);
    if (rc < 0) {
      pthread_mutex_lock(&l->mu);
      free_or_drain(l, s);
      pthread_mutex_unlock(&l->mu);
      return rc;
    }
  }
  add(&l->batches, 1);
  *out = &s->batch;
  return 0;
}

int gf_loader_next_on(gf_loader *l, void *stream, gf_batch **out) {
  if (!l || !out)
    return cfg_fail("next", "needs a loader and an output pointer");
  if (GF_LIKELY(!l->trace && !l->nvtx))
    return next_impl(l, stream, out);
  uint64_t t0 = now_ns();
  range_push(l, "next");
  int rc = next_impl(l, stream, out);
  range_pop(l);
  uint64_t t1 = now_ns();
  slot *s = rc == 0 ? (slot *)(void *)*out : NULL;
  span(l, GF_TR_NEXT, GF_TRACE_TID_CONSUMER, t0, t1, s ? s->seq : GF_NO_INDEX);
  if (s) {
    s->lent_ns = t1;
    /* Not a push: the caller may hold several batches and release them in
     * any order. */
    if (l->nvtx)
      s->nvtx_step = gf_gpu_range_start("step");
  }
  return rc;
}

int gf_loader_next(gf_loader *l, gf_batch **out) {
  return gf_loader_next_on(l, NULL, out);
}

int gf_loader_release_on(gf_loader *l, gf_batch *b, void *stream) {
  if (!l || !b)
    return cfg_fail("release", "needs a loader and a batch");
  uint64_t t0 = l->trace ? now_ns() : 0;
  pthread_mutex_lock(&l->mu);
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if (&s->batch == b && s->state == SLOT_LENT) {
      if (GF_UNLIKELY(l->trace || l->nvtx)) {
        if (s->nvtx_step) {
          gf_gpu_range_end(s->nvtx_step);
          s->nvtx_step = 0;
        }
        span(l, GF_TR_STEP, GF_TRACE_TID_CONSUMER, s->lent_ns, t0, s->seq);
        take_gpu_span(l, s, false);
      }
      int rc = l->stage ? gf_stage_release(l->stage, s->index, stream) : 0;
      span(l, GF_TR_RELEASE, GF_TRACE_TID_CONSUMER, t0,
           l->trace ? now_ns() : 0, s->seq);
      free_or_drain(l, s);
      pthread_mutex_unlock(&l->mu);
      return rc;
    }
  }
  pthread_mutex_unlock(&l->mu);
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "release: not a batch this loader has lent");
}

int gf_loader_release(gf_loader *l, gf_batch *b) {
  return gf_loader_release_on(l, b, NULL);
}

/* Moves both cursors to (epoch, pos, k), the epoch starting at global
 * position `start` (0: a full epoch; sampler.h section 4). Under mu. */
static void seek(gf_loader *l, uint64_t epoch, uint64_t start, uint64_t pos,
                 uint64_t k) {
  cancel_all(l);
  /* Paused now: no worker dispatches from the sampler until restart_at. */
  gf_sampler_set_resume(&l->sampler, epoch, start);
  l->c_epoch = epoch;
  l->c_pos = pos;
  l->c_k = k;
  restart_at(l, epoch, pos, k);
}

int gf_loader_set_epoch(gf_loader *l, uint64_t epoch) {
  if (!l)
    return cfg_fail("set_epoch", "needs a loader");
  pthread_mutex_lock(&l->mu);
  /* Already there (the usual call right after GF_EEPOCHEND): keep what the
   * workers prefetched; a resumed epoch is not its beginning. */
  if (!(l->c_epoch == epoch && l->c_pos == 0 && l->c_k == 0 &&
        gf_sampler_epoch_start(&l->sampler, epoch) == 0))
    seek(l, epoch, 0, 0, 0);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

static uint64_t fingerprint(gf_loader *l) {
  if (!l->have_fingerprint) {
    l->fingerprint = gf_source_fingerprint(l->src);
    l->have_fingerprint = true;
  }
  return l->fingerprint;
}

int gf_loader_state_export(gf_loader *l, gf_loader_state *st) {
  if (!l || !st)
    return cfg_fail("state_export", "needs a loader and a state");
  uint64_t fp = fingerprint(l);
  /* Under the lock: workers move the sampler's epoch while dispatching. */
  pthread_mutex_lock(&l->mu);
  gf_sampler s = l->sampler;
  uint64_t epoch = l->c_epoch, pos = l->c_pos, k = l->c_k;
  pthread_mutex_unlock(&l->mu);
  return gf_sampler_state_export(&s, fp, epoch, pos, k, st);
}

int gf_loader_state_import(gf_loader *l, const gf_loader_state *st) {
  if (!l || !st)
    return cfg_fail("state_import", "needs a loader and a state");
  uint64_t fp = fingerprint(l);
  pthread_mutex_lock(&l->mu);
  gf_sampler s = l->sampler;
  pthread_mutex_unlock(&l->mu);
  uint64_t pos, k;
  int rc = gf_sampler_state_import(&s, fp, st, &pos, &k);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&l->mu);
  if (lent_count(l)) {
    pthread_mutex_unlock(&l->mu);
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release every batch before importing a state");
  }
  seek(l, gf_sampler_epoch(&s), gf_sampler_epoch_start(&s, st->epoch), pos,
       k);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

static void stage_get(const stage_atomic *a, gf_stage_stats *o) {
  o->samples = atomic_load_explicit(&a->samples, memory_order_relaxed);
  o->bytes = atomic_load_explicit(&a->bytes, memory_order_relaxed);
  o->busy_ns = atomic_load_explicit(&a->busy_ns, memory_order_relaxed);
  o->wait_ns = atomic_load_explicit(&a->wait_ns, memory_order_relaxed);
}

gf_device_pool *gf_loader_device_pool(gf_loader *l) {
  return l && l->stage ? gf_stage_pool(l->stage) : NULL;
}

int gf_loader_stats_get(gf_loader *l, gf_loader_stats *st) {
  if (!l || !st)
    return cfg_fail("stats", "needs a loader and a stats struct");
  int rc = gf_check_struct_size(st->struct_size, sizeof *st, "gf_loader_stats");
  if (rc < 0)
    return rc;
  gf_loader_stats o;
  memset(&o, 0, sizeof o);
  o.struct_size = st->struct_size;
  o.threads = l->nworkers;
  stage_get(&l->st_read, &o.read);
  stage_get(&l->st_decode, &o.decode);
  stage_get(&l->st_cache, &o.cache);
  o.cache_hits = atomic_load(&l->cache_hits);
  o.cache_misses = atomic_load(&l->cache_misses);
  if (l->cache) {
    gf_cache_counters cc;
    gf_cache_stats(l->cache, &cc);
    o.cache_bytes = cc.bytes_used;
    o.cache_budget = cc.budget;
    o.cache_pinned_bytes = cc.pinned_bytes;
    o.cache_pin_failures = cc.pin_failures;
  }
  o.cache_direct = atomic_load(&l->cache_direct);
  o.batches = atomic_load(&l->batches);
  o.consumer_wait_ns = atomic_load(&l->consumer_wait_ns);
  o.next_calls = atomic_load(&l->next_calls);
  o.ready_sum = atomic_load(&l->ready_sum);
  o.slots = l->nslots;
  o.skipped = atomic_load(&l->skipped);
  pthread_mutex_lock(&l->stat_mu);
  memcpy(o.last_skip_reason, l->last_skip_reason, sizeof o.last_skip_reason);
  pthread_mutex_unlock(&l->stat_mu);
  memcpy(o.io_backend, l->io_backend, sizeof o.io_backend);
  memcpy(o.io_fallback_reason, l->io_fallback, sizeof o.io_fallback_reason);
  o.device = l->device;
  memcpy(o.host_mode_reason, l->host_reason, sizeof o.host_mode_reason);
  memcpy(o.tuning, l->tuning, sizeof o.tuning);
  gf_trace_counts(l->trace, &o.trace_recorded, &o.trace_dropped);
  if (l->stage) {
    gf_device_pool_stats ps = {.struct_size = sizeof ps};
    if (gf_device_pool_stats_get(gf_stage_pool(l->stage), &ps) == 0) {
      o.device_pool_in_use = ps.in_use;
      o.device_pool_peak = ps.peak_in_use;
      o.device_pool_reserved = ps.reserved_bytes;
    }
  }
  memcpy(st, &o, st->struct_size);
  return 0;
}

int gf_loader_trace_write(gf_loader *l, const char *path) {
  if (!l || !path)
    return cfg_fail("trace_write", "needs a loader and a path");
  if (!l->trace)
    return cfg_fail("trace_events",
                    "is 0: the loader records no trace (set it at create)");
  /* Batches the caller still holds: their GPU spans, if done by now. */
  pthread_mutex_lock(&l->mu);
  for (uint32_t i = 0; i < l->nslots; i++)
    if (l->slots[i].state == SLOT_LENT)
      take_gpu_span(l, &l->slots[i], false);
  pthread_mutex_unlock(&l->mu);
  return gf_trace_write(l->trace, path);
}

/* The plan of a loader whose sizes are set: host and device bytes. */
static int format_plan(const gf_loader *l, uint32_t slots, uint32_t threads,
                       char *buf, size_t cap) {
  gf_memory_plan p;
  memset(&p, 0, sizeof p);
  p.pinned_slots = slots;
  p.pinned_slot_bytes = (uint64_t)l->cfg.batch_size * l->stride;
  p.read_buffers = threads;
  p.read_buffer_bytes = (uint64_t)chunk_for(l, threads) * l->stored_cap;
  p.cache_budget = l->cfg.cache_bytes;
  p.cache_pinned = l->cfg.device != GF_DEVICE_CPU &&
                   l->cfg.cache_direct == GF_CACHE_DIRECT_AUTO;
  p.device_slots = slots;
  gf_stage_config sc;
  memset(&sc, 0, sizeof sc);
  sc.slots = 1;
  sc.max_samples = l->cfg.batch_size;
  sc.in_bytes = p.pinned_slot_bytes;
  sc.out_bytes = l->out_cap;
  p.device_slot_bytes = gf_stage_pool_need(&sc);
  p.device_pool_bytes = l->cfg.device_pool_bytes;
  return gf_memory_plan_format(&p, buf, cap);
}

int gf_loader_plan(const gf_loader_config *cfg, char *buf, size_t cap) {
  gf_loader *l = calloc(1, sizeof *l);
  if (!l)
    return -ENOMEM;
  int rc = resolve_config(cfg, &l->cfg);
  if (rc == 0) {
    l->source_path = (char *)l->cfg.source;
    l->dopts = (gf_decode_opts)GF_DECODE_OPTS_INIT;
    l->dopts.channels = l->cfg.channels;
    l->dopts.keep_16bit = l->cfg.keep_16bit;
    l->dopts.limits = l->cfg.limits;
    rc = gf_source_open(l->cfg.source, l->cfg.labels_file, &l->src);
  }
  if (rc == 0)
    rc = plan_sizes(l);
  if (rc == 0) {
    /* Device slots: as configured, else the 2 autotune keeps in GPU mode;
     * read buffers: as configured, else one per online core. */
    uint32_t slots = l->cfg.staging_slots ? l->cfg.staging_slots
                     : l->cfg.prefetch    ? l->cfg.prefetch
                                          : 2;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t threads = l->cfg.threads ? l->cfg.threads : (n > 0 ? (uint32_t)n : 1);
    rc = format_plan(l, slots, threads, buf, cap);
  }
  gf_source_close(l->src);
  free(l);
  return rc;
}
