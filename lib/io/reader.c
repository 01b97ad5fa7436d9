/* The reader: request slots, queues, and the choice between io_uring, the
 * pread pool (objects with descriptors) and a storage's engine (remote
 * objects), whose calls it drives (the per-read semantics the two local
 * backends share are slot.c's). */
#include "io/io.h"
#include "io/backend.h"

#include "common/fault.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GF_IO_DEFAULT_DEPTH 64u
#define GF_IO_MAX_DEPTH 4096u
#define GF_IO_MAX_PENDING (1u << 20)
#define GF_IO_DEFAULT_THREADS 4u
#define GF_IO_MAX_THREADS 64u
#define GF_IO_DEFAULT_ALIGN 4096u
#define GF_IO_MAX_REGIONS 1024u
#define GF_IO_MAX_REGION_BYTES (1ull << 30)

/* A fixed-capacity FIFO of slot ids. */
typedef struct id_fifo {
  uint32_t *ids;
  uint32_t cap, head, count;
} id_fifo;

static void fifo_push(id_fifo *f, uint32_t id) {
  f->ids[(f->head + f->count) % f->cap] = id;
  f->count++;
}

static uint32_t fifo_pop(id_fifo *f) {
  uint32_t id = f->ids[f->head];
  f->head = (f->head + 1) % f->cap;
  f->count--;
  return id;
}

/* The third backend: a storage's engine (backend.h). */
#define GF_IO_ENGINE_ 100

struct gf_reader {
  int backend; /* GF_IO_URING, GF_IO_PREAD or GF_IO_ENGINE_ */
  char reason[512];
  uint32_t nslots;
  uint32_t depth;
  uint32_t direct_align; /* 0: not direct */
  gf_io_slot *slots;
  uint32_t *free_ids; /* stack of free slot ids */
  uint32_t nfree;
  id_fifo waiting;       /* io_uring: accepted, not yet in the ring */
  id_fifo done;          /* complete, not yet returned by wait */
  uint32_t *scratch_ids; /* nslots */
  int64_t *scratch_res;  /* depth */
  unsigned outstanding;  /* accepted, not yet returned */
  bool registered;
  gf_io_uring *uring;
  gf_io_pool *pool;
  const gf_io_engine_ops *engine;
  void *engine_state;
  gf_reader_stats stats;
};

/* ---- options and backend choice ------------------------------------------ */

static int resolve_opts(const gf_reader_opts *in, gf_reader_opts *o) {
  *o = (gf_reader_opts)GF_READER_OPTS_INIT;
  if (in) {
    int rc =
        gf_check_struct_size(in->struct_size, sizeof *in, "gf_reader_opts");
    if (rc < 0)
      return rc;
    memcpy(o, in, in->struct_size);
    o->struct_size = sizeof *o;
    for (size_t i = 0; i < sizeof o->reserved / sizeof o->reserved[0]; i++)
      if (o->reserved[i])
        return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "gf_reader_opts.reserved[%zu] is %u; reserved fields "
                       "must be zero",
                       i, o->reserved[i]);
  }
  if (o->storage && o->storage->ops->engine) {
    if (o->backend != GF_IO_AUTO || o->direct)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_reader_opts: %s storage's objects are read by its "
                     "engine: backend and direct do not apply",
                     o->storage->ops->name);
  } else if (o->storage && !(gf_storage_caps(o->storage) & GF_STORAGE_FD)) {
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_opts: %s storage has neither descriptors nor "
                   "an engine to read with",
                   o->storage->ops->name);
  }
  /* The environment decides only what the caller left to auto, so an
   * operator can turn io_uring off (or insist on it) without a rebuild. */
  const bool engine = o->storage && o->storage->ops->engine;
  const char *env =
      o->backend == GF_IO_AUTO && !engine ? getenv("GPUFEED_IO") : NULL;
  if (env && env[0]) {
    if (!strcmp(env, "uring") || !strcmp(env, "io_uring"))
      o->backend = GF_IO_URING;
    else if (!strcmp(env, "pread"))
      o->backend = GF_IO_PREAD;
    else if (!strcmp(env, "auto"))
      o->backend = GF_IO_AUTO;
    else
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "GPUFEED_IO=%.100s: expected uring, pread or auto", env);
  }
  if (o->backend != GF_IO_AUTO && o->backend != GF_IO_URING &&
      o->backend != GF_IO_PREAD)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_opts.backend %d: expected GF_IO_AUTO (0), "
                   "GF_IO_URING (1) or GF_IO_PREAD (2)",
                   o->backend);
  if (!o->queue_depth)
    o->queue_depth = GF_IO_DEFAULT_DEPTH;
  if (o->queue_depth > GF_IO_MAX_DEPTH)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_opts.queue_depth %u exceeds %u", o->queue_depth,
                   GF_IO_MAX_DEPTH);
  if (!o->max_pending)
    o->max_pending = 4 * o->queue_depth;
  if (o->max_pending > GF_IO_MAX_PENDING)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_opts.max_pending %u exceeds %u", o->max_pending,
                   GF_IO_MAX_PENDING);
  if (!o->pread_threads)
    o->pread_threads = GF_IO_DEFAULT_THREADS;
  if (o->pread_threads > GF_IO_MAX_THREADS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_opts.pread_threads %u exceeds %u",
                   o->pread_threads, GF_IO_MAX_THREADS);
  if (o->direct) {
    if (!o->direct_align)
      o->direct_align = GF_IO_DEFAULT_ALIGN;
    uint32_t a = o->direct_align;
    if (a < 512 || a > (1u << 20) || (a & (a - 1)))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_reader_opts.direct_align %u: expected a power of "
                     "two from 512 to 1048576",
                     a);
  } else {
    o->direct_align = 0;
  }
  return 0;
}

/* Logs the first fallback of the process only: every reader of a loader
 * falls back for the same reason. */
static void log_fallback_once(const char *reason) {
  static atomic_flag logged = ATOMIC_FLAG_INIT;
  if (!atomic_flag_test_and_set(&logged))
    gf_log(GF_LOG_INFO, "%s", reason);
}

int gf_reader_create(const gf_reader_opts *opts, gf_reader **out) {
  if (!out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_create: out is NULL");
  *out = NULL;
  gf_reader_opts o;
  int rc = resolve_opts(opts, &o);
  if (rc < 0)
    return rc;

  gf_reader *r = calloc(1, sizeof *r);
  if (!r)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a reader");
  r->nslots = o.max_pending;
  r->depth = o.queue_depth;
  r->direct_align = o.direct_align;
  r->slots = calloc(r->nslots, sizeof *r->slots);
  r->free_ids = malloc(r->nslots * sizeof *r->free_ids);
  r->waiting.ids = malloc(r->nslots * sizeof(uint32_t));
  r->done.ids = malloc(r->nslots * sizeof(uint32_t));
  r->scratch_ids = malloc(r->nslots * sizeof *r->scratch_ids);
  r->scratch_res = malloc(r->depth * sizeof *r->scratch_res);
  if (!r->slots || !r->free_ids || !r->waiting.ids || !r->done.ids ||
      !r->scratch_ids || !r->scratch_res) {
    gf_reader_destroy(r);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a reader for %u pending reads",
                   o.max_pending);
  }
  r->waiting.cap = r->done.cap = r->nslots;
  for (uint32_t i = 0; i < r->nslots; i++)
    r->free_ids[i] = r->nslots - 1 - i;
  r->nfree = r->nslots;

  if (o.storage && o.storage->ops->engine) {
    char why[400];
    r->backend = GF_IO_ENGINE_;
    r->engine = o.storage->ops->engine;
    rc = r->engine->create(o.storage, r->slots, r->nslots, o.queue_depth,
                           &r->engine_state, why, sizeof why);
    if (rc < 0) {
      gf_reader_destroy(r);
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
    }
    *out = r;
    return 0;
  }
  r->backend = GF_IO_PREAD;
  if (o.backend != GF_IO_PREAD) {
    char why[400];
    rc = gf_io_uring_create(o.queue_depth, &r->uring, why, sizeof why);
    if (rc == 0) {
      r->backend = GF_IO_URING;
    } else if (o.backend == GF_IO_URING) {
      gf_reader_destroy(r);
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s; io_uring was required (GF_IO_URING or "
                     "GPUFEED_IO=uring), so there is no pread fallback",
                     why);
    } else {
      snprintf(r->reason, sizeof r->reason, "%s; using pread", why);
      log_fallback_once(r->reason);
    }
  }
  if (r->backend == GF_IO_PREAD) {
    rc = gf_io_pool_create(r->slots, r->nslots, o.pread_threads, &r->pool);
    if (rc < 0) {
      gf_reader_destroy(r);
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot start %u pread threads: %s", o.pread_threads,
                     gf_strerror(rc));
    }
  }
  *out = r;
  return 0;
}

void gf_reader_destroy(gf_reader *r) {
  if (!r)
    return;
  gf_io_uring_destroy(r->uring);
  gf_io_pool_destroy(r->pool);
  if (r->engine)
    r->engine->destroy(r->engine_state);
  free(r->slots);
  free(r->free_ids);
  free(r->waiting.ids);
  free(r->done.ids);
  free(r->scratch_ids);
  free(r->scratch_res);
  free(r);
}

/* ---- submit and wait ----------------------------------------------------- */

static int check_req(const gf_reader *r, const gf_read_req *q, unsigned i) {
  uint64_t end;
  if (!q->obj)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, q->offset,
                   "read request %u: no object", i);
  if (!q->buf && q->length)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, q->offset,
                   "read request %u (%s): buffer is NULL", i, q->obj->display);
  if (!gf_add_u64(q->offset, q->length, &end) || end > (uint64_t)INT64_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, q->offset,
                   "read request %u (%s): offset + length %llu passes "
                   "the largest file offset",
                   i, q->obj->display, (unsigned long long)q->length);
  if (q->flags & ~GF_READ_EOF_OK)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, q->offset,
                   "read request %u (%s): unknown flags 0x%x", i,
                   q->obj->display, q->flags);
  uint32_t a = r->direct_align;
  if (a && (((uintptr_t)q->buf | q->offset | q->length) & (a - 1)))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, q->offset,
                   "read request %u (%s): direct I/O needs buffer %p, "
                   "offset %llu and length %llu aligned to %u bytes",
                   i, q->obj->display, q->buf, (unsigned long long)q->offset,
                   (unsigned long long)q->length, a);
  return 0;
}

/* Moves waiting reads into the ring while it has room; one submit call. */
static int uring_pump(gf_reader *r) {
  bool queued = false;
  while (r->waiting.count && gf_io_uring_space(r->uring)) {
    uint32_t id = r->waiting.ids[r->waiting.head];
    if (!gf_io_uring_prep(r->uring, id, &r->slots[id]))
      break;
    fifo_pop(&r->waiting);
    queued = true;
  }
  if (!queued)
    return 0;
  int rc = gf_io_uring_submit(r->uring, &r->stats.submit_calls);
  if (rc < 0)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "io_uring_submit: %s (%s)", gf_strerror(rc),
                   gf_err_name(rc));
  return 0;
}

/* Takes the ring's completions (waiting for one when `wait`), moves the
 * reads that are complete to `done` and the others back to `waiting`, and
 * refills the ring. */
static int uring_collect(gf_reader *r, bool wait) {
  int k = gf_io_uring_reap(r->uring, wait, r->scratch_ids, r->scratch_res,
                           r->depth);
  if (k < 0)
    return gf_fail(k, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "waiting for io_uring completions: %s (%s)", gf_strerror(k),
                   gf_err_name(k));
  for (int i = 0; i < k; i++) {
    uint32_t id = r->scratch_ids[i];
    if (id >= r->nslots)
      return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "io_uring completion for unknown slot %u", id);
    gf_io_slot *s = &r->slots[id];
    uint32_t asked;
    uint64_t off;
    void *buf;
    gf_io_slot_next(s, &off, &buf, &asked);
    if (gf_io_slot_step(s, r->scratch_res[i], asked))
      fifo_push(&r->done, id);
    else
      fifo_push(&r->waiting, id);
  }
  return uring_pump(r);
}

int gf_reader_submit(gf_reader *r, const gf_read_req *reqs, unsigned n) {
  if (!r || (!reqs && n))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_submit: reader or requests are NULL");
  if (n > r->nfree)
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_submit: %u more reads would pass the %u that "
                   "may be outstanding (%u are); wait for some first",
                   n, r->nslots, r->outstanding);
  for (unsigned i = 0; i < n; i++) {
    int rc = check_req(r, &reqs[i], i);
    if (rc < 0)
      return rc;
  }
  unsigned npool = 0;
  for (unsigned i = 0; i < n; i++) {
    uint32_t id = r->free_ids[--r->nfree];
    gf_io_slot *s = &r->slots[id];
    memset(s, 0, sizeof *s);
    s->req = reqs[i];
    s->direct_align = r->direct_align;
    if (!s->req.length)
      fifo_push(&r->done, id); /* s->result is 0 */
    else if (r->backend == GF_IO_URING)
      fifo_push(&r->waiting, id);
    else
      r->scratch_ids[npool++] = id;
  }
  r->outstanding += n;
  r->stats.accepted += n;
  if (npool && r->backend == GF_IO_ENGINE_) {
    int rc = r->engine->push(r->engine_state, r->scratch_ids, npool);
    if (rc < 0)
      return rc;
  } else if (npool) {
    gf_io_pool_push(r->pool, r->scratch_ids, npool);
  }
  if (r->backend == GF_IO_URING)
    return uring_pump(r);
  return 0;
}

/* Returns slot `id`'s completion in *d and frees the slot. */
static void finish(gf_reader *r, uint32_t id, gf_read_done *d) {
  gf_io_slot *s = &r->slots[id];
  d->user_data = s->req.user_data;
  d->result = s->result;
  d->stop_offset = s->req.offset + s->done;
  d->why = s->result < 0 ? s->why : "";
  r->stats.completed++;
  r->stats.failed += s->result < 0;
  r->stats.ops += s->ops;
  r->stats.fixed_ops += s->fixed_ops;
  r->stats.continued += s->continued;
  r->stats.retried += s->retried;
  r->free_ids[r->nfree++] = id;
  r->outstanding--;
}

static unsigned drain_done(gf_reader *r, gf_read_done *out, unsigned max) {
  unsigned n = 0;
  while (n < max && r->done.count)
    finish(r, fifo_pop(&r->done), &out[n++]);
  return n;
}

int gf_reader_wait(gf_reader *r, gf_read_done *out, unsigned max,
                   unsigned min) {
  if (!r || !out || !max || min > max)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_wait: expected a reader, an output array, "
                   "max > 0 and min <= max (max %u, min %u)",
                   max, min);
  /* The reader_wait site: this call fails as a whole, before it takes
   * anything, as a ring's own error does; the reads outstanding stay in
   * the kernel, the ring's queue or the pool until destroy, which is what
   * a caller must then do (io.h). */
  int err = gf_fault_check(GF_FAULT_READER_WAIT);
  if (err)
    return gf_fail(err, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "waiting for %s completions: %s (%s)", gf_reader_backend(r),
                   gf_strerror(err), gf_err_name(err));
  unsigned n = drain_done(r, out, max);
  if (r->backend != GF_IO_URING) {
    /* Everything outstanding now is in the pool or the engine. */
    unsigned want = max - n;
    if (want > r->outstanding)
      want = r->outstanding;
    unsigned need = min > n ? min - n : 0;
    if (need > want)
      need = want;
    if (!want)
      return (int)n;
    int k;
    if (r->backend == GF_IO_PREAD) {
      k = (int)gf_io_pool_reap(r->pool, r->scratch_ids, want, need);
    } else {
      k = r->engine->reap(r->engine_state, r->scratch_ids, want, need);
      if (k < 0)
        return k;
    }
    for (int i = 0; i < k; i++)
      finish(r, r->scratch_ids[i], &out[n++]);
    return (int)n;
  }
  bool block = false;
  while (n < max) {
    int rc = uring_collect(r, block);
    if (rc < 0)
      return rc;
    n += drain_done(r, out + n, max - n);
    if (n >= min || r->outstanding == 0)
      break;
    if (r->waiting.count == 0 && gf_io_uring_space(r->uring) == r->depth)
      return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_reader_wait: %u reads outstanding but none queued "
                     "or in the ring",
                     r->outstanding);
    block = true;
  }
  return (int)n;
}

/* ---- the rest ------------------------------------------------------------ */

bool gf_reader_wakeable(const gf_reader *r) {
  return r && r->backend == GF_IO_ENGINE_ && r->engine->wake;
}

bool gf_reader_wake(gf_reader *r) {
  if (!gf_reader_wakeable(r))
    return false;
  r->engine->wake(r->engine_state);
  return true;
}

unsigned gf_reader_inflight(const gf_reader *r) {
  return r ? r->outstanding : 0;
}

const char *gf_reader_backend(const gf_reader *r) {
  if (!r)
    return "";
  if (r->backend == GF_IO_ENGINE_)
    return r->engine->name;
  return r->backend == GF_IO_URING ? "io_uring" : "pread";
}

const char *gf_reader_fallback_reason(const gf_reader *r) {
  return r ? r->reason : "";
}

void gf_reader_get_stats(const gf_reader *r, gf_reader_stats *out) {
  if (!out)
    return;
  if (!r) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = r->stats;
}

int gf_reader_register(gf_reader *r, const struct iovec *iov, unsigned n) {
  if (!r || !iov || !n || n > GF_IO_MAX_REGIONS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_register: expected 1 to %u regions (got %u)",
                   GF_IO_MAX_REGIONS, n);
  for (unsigned i = 0; i < n; i++)
    if (!iov[i].iov_base || !iov[i].iov_len ||
        iov[i].iov_len > GF_IO_MAX_REGION_BYTES)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_reader_register: region %u (%p, %zu bytes) must "
                     "be non-NULL, non-empty and at most 1 GiB",
                     i, iov[i].iov_base, iov[i].iov_len);
  if (r->registered || r->outstanding)
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_register: %s",
                   r->registered ? "buffers are already registered"
                                 : "reads are outstanding");
  if (r->backend == GF_IO_URING) {
    int rc = gf_io_uring_register(r->uring, iov, n);
    if (rc < 0)
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "io_uring_register_buffers (%u regions): %s (%s)%s", n,
                     gf_strerror(rc), gf_err_name(rc),
                     rc == -ENOMEM ? ": RLIMIT_MEMLOCK (ulimit -l) is too "
                                     "low to pin these buffers"
                                   : "");
  }
  r->registered = true;
  return 0;
}

int gf_reader_unregister(gf_reader *r) {
  if (!r)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_unregister: reader is NULL");
  if (r->outstanding)
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_reader_unregister: %u reads are outstanding",
                   r->outstanding);
  if (r->registered && r->backend == GF_IO_URING) {
    int rc = gf_io_uring_unregister(r->uring);
    if (rc < 0)
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "io_uring_unregister_buffers: %s", gf_strerror(rc));
  }
  r->registered = false;
  return 0;
}
