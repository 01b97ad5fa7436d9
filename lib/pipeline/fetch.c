/* The fetch stage (fetch.h): a thread that plans the loader's order ahead
 * into read units, reads them through a reader over the source's storage
 * (its engine: many reads in flight), and hands each position's bytes to
 * the worker that takes it. */
#include "pipeline/fetch.h"

#include "io/io.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NONE UINT64_MAX
/* A run of adjacent samples read as one unit: at most this many bytes, and
 * gaps between them (a dataset's alignment padding) of at most GAP. */
#define UNIT_MAX (64ull << 20)
#define GAP (1ull << 20)
/* Records read ahead at once (a source with gf_source_prepare: a remote
 * index's pages, read together): at most this many positions, at least a
 * batch's (the first batch's records come in one wave of reads). */
#define PREP_MAX 2048u

enum { U_PLANNED, U_INFLIGHT, U_DONE, U_FAILED };

typedef struct unit {
  const gf_object *obj;
  gf_object *own; /* obj when the unit opened it (a sample that is an
                     object of its own: a folder's file); closed with it */
  uint64_t off, len;
  uint64_t aoff;  /* arena offset (monotonic) once issued */
  uint32_t refs;  /* planned positions not yet released */
  uint32_t nsamp; /* positions it holds (block reads: more than one) */
  int state;
  int err;
  uint64_t t0;    /* issue time (trace) */
  uint64_t epoch; /* of the positions it serves (trace) */
  char why[256];
} unit;

typedef struct entry {
  uint64_t idx;
  uint64_t unit; /* the unit's number, or NONE (not read) */
  uint64_t off;  /* in the unit */
  uint64_t len;
  bool released;
} entry;

struct gf_fetch {
  gf_fetch_config cfg;
  pthread_t thread;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the thread: room, a restart, stop */
  pthread_cond_t done_cv; /* takers: a read done; restart acknowledged */
  bool stop;
  bool joined;
  bool thread_blocked; /* in the reader's wait: wake it for new room */
  /* A restart asked (gen > ack) and acknowledged by the thread. */
  uint64_t gen, ack;
  gf_sampler next_sm;
  uint64_t next_epoch, next_pos;
  /* The plan's cursor, in the thread's sampler copy. */
  gf_sampler sm;
  uint64_t p_epoch, p_pos, p_end;
  bool p_ready;
  /* Positions planned: seq in [e_head, e_tail). */
  entry *ent;
  uint64_t ecap, e_head, e_tail;
  /* Units in allocation order: [u_head, u_tail); [u_issue, u_tail) not
   * issued yet. */
  unit *units;
  uint64_t ucap, u_head, u_tail, u_issue;
  /* The arena: monotonic offsets, [a_head, a_tail) held. */
  uint8_t *arena;
  uint64_t abytes, a_head, a_tail;
  uint32_t inflight;
  gf_reader *reader;
  uint64_t bsize; /* block size (1 outside GF_ORDER_BLOCK) */
  gf_fetch_counters st;
  bool warned_window;
  /* The records read ahead (a source with gf_source_prepare), by a thread
   * of their own so that the plan never waits on the network under mu:
   * it walks the plan's positions from the same cursor, a chunk at a time,
   * at most ecap ahead; the plan takes only positions already prepared
   * (planned <= prepared: counts since the last reset). bad[] marks the
   * positions of a chunk whose read failed (a ring of ecap): the plan
   * leaves them to the workers, which read their records again and
   * report. */
  bool prep;
  pthread_t prep_thread;
  bool prep_started;
  pthread_cond_t prep_cv;
  gf_sampler rsm;
  uint64_t r_epoch, r_pos, r_end;
  bool r_ready;
  uint64_t r_gen; /* a reset moves it: a chunk read meanwhile is dropped */
  uint64_t planned, prepared;
  uint8_t *bad;
  uint64_t *ridx;
  uint8_t *runready; /* a chunk's samples not made ready */
};

static void poke(gf_fetch *f);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gf_fetch_sizes(uint64_t batch_size, uint32_t slots, uint64_t window,
                    uint32_t requests, uint32_t *positions,
                    uint64_t *table_bytes) {
  /* Every position dispatched and not yet released must fit, and the
   * reads in flight beyond them (one a position in shuffled order), or a
   * window planned at once beside them, and a window ahead. */
  uint64_t p = (uint64_t)(slots + 2) * batch_size + requests;
  if (p < 2 * window + batch_size)
    p = 2 * window + batch_size;
  if (p > (1u << 24))
    p = 1u << 24;
  *positions = (uint32_t)p;
  /* The ring, the units, and the records read ahead (a flag a position,
   * a chunk's indices). */
  *table_bytes = p * (sizeof(entry) + sizeof(unit) + 1) +
                 PREP_MAX * (sizeof(uint64_t) + 1);
}

/* ---- the arena and the units ------------------------------------------- */

static unit *U(gf_fetch *f, uint64_t u) { return &f->units[u % f->ucap]; }

/* Closes what a unit opened; its reads are done or dropped. */
static void unit_drop(unit *u) {
  gf_object_close(u->own);
  u->own = NULL;
}
static entry *E(gf_fetch *f, uint64_t s) { return &f->ent[s % f->ecap]; }

/* Room for len contiguous bytes at the arena's tail: its offset, or NONE
 * when the held bytes leave no room now. A unit never wraps: the tail
 * skips to the start when it would. */
static uint64_t arena_alloc(gf_fetch *f, uint64_t len) {
  uint64_t t = f->a_tail, pos = t % f->abytes;
  if (pos + len > f->abytes)
    t += f->abytes - pos;
  if (t + len - f->a_head > f->abytes)
    return NONE;
  f->a_tail = t + len;
  return t;
}

/* Frees the released positions at the head and the units no position
 * holds any more, in order. Under mu. */
static void reclaim(gf_fetch *f) {
  while (f->e_head < f->e_tail && E(f, f->e_head)->released)
    f->e_head++;
  while (f->u_head < f->u_issue) {
    unit *u = U(f, f->u_head);
    if (u->refs || u->state == U_INFLIGHT)
      break;
    unit_drop(u);
    f->u_head++;
  }
  if (f->u_head < f->u_issue)
    f->a_head = U(f, f->u_head)->aoff;
  else
    f->a_head = f->a_tail;
  if (f->u_head > f->u_issue) /* units freed before being issued */
    f->u_issue = f->u_head;
}

/* ---- planning ------------------------------------------------------------ */

typedef struct planned {
  uint64_t seq;
  const gf_object *obj;
  gf_object *own; /* opened for this position (else NULL) */
  uint64_t off, len;
  uint64_t block; /* GF_ORDER_BLOCK: the sample's block */
} planned;

static int cmp_extent(const void *a, const void *b) {
  const planned *x = a, *y = b;
  if (x->obj != y->obj)
    return (uintptr_t)x->obj < (uintptr_t)y->obj ? -1 : 1;
  return (x->off > y->off) - (x->off < y->off);
}

/* A new unit for [off, off + len) of obj at the tail. Under mu. */
static uint64_t new_unit(gf_fetch *f, const gf_object *obj, uint64_t off,
                         uint64_t len) {
  uint64_t n = f->u_tail++;
  unit *u = U(f, n);
  memset(u, 0, sizeof *u);
  u->obj = obj;
  u->off = off;
  u->len = len;
  u->state = U_PLANNED;
  u->epoch = f->p_epoch;
  return n;
}

/* Moves the cursor to a position it can plan: the next epoch past the
 * current one's end. Returns false when there is none (epochs without a
 * position, which the loader never configures). */
static bool walk_ready(const gf_fetch *f, gf_sampler *sm, uint64_t *epoch,
                       uint64_t *pos, uint64_t *end, bool *ready) {
  for (int tries = 0; tries < 3; tries++) {
    if (!*ready) {
      if (gf_sampler_epoch(sm) != *epoch)
        gf_sampler_set_epoch(sm, *epoch);
      uint64_t share = gf_sampler_samples_per_epoch(sm);
      uint64_t B = f->cfg.batch_size;
      *end = f->cfg.drop_last ? share - share % B : share;
      *ready = true;
    }
    if (*pos < *end)
      return true;
    ++*epoch;
    *pos = 0;
    *ready = false;
  }
  return false;
}

static bool cursor_ready(gf_fetch *f) {
  return walk_ready(f, &f->sm, &f->p_epoch, &f->p_pos, &f->p_end, &f->p_ready);
}

/* Plans the next group of positions (a window in GF_ORDER_BLOCK, else one
 * position) when the ring has room. Returns whether it did. Under mu;
 * scratch holds at least ecap entries. */
static bool plan(gf_fetch *f, planned *scratch) {
  if (!cursor_ready(f))
    return false;
  uint64_t a, b;
  gf_sampler_window(&f->sm, f->p_pos, &a, &b);
  if (b > f->p_end)
    b = f->p_end;
  if (a < f->p_pos)
    a = f->p_pos; /* a restart inside a window */
  uint64_t count = b - a;
  if (count > f->ecap / 2)
    count = 1; /* never: the ring is sized for a window (gf_fetch_sizes) */
  if (f->e_tail + count - f->e_head > f->ecap ||
      f->u_tail + count - f->u_head > f->ucap)
    return false;
  if (f->prep && f->planned + count > f->prepared)
    return false; /* the records are still being read: the prep thread
                     pokes when they are in */
  /* The positions, their samples and extents. */
  uint64_t n = 0, bytes = 0;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t seq = f->e_tail + i;
    entry *e = E(f, seq);
    memset(e, 0, sizeof *e);
    e->unit = NONE;
    e->idx = gf_sampler_get(&f->sm, a + i);
    if (f->prep && f->bad[(f->planned + i) % f->ecap]) {
      f->st.unprepared++;
      continue;
    } /* its record could not be read ahead: the worker reads
                   it (and its bytes) and reports */
    gf_src_sample smp;
    /* A damaged record fails its worker before it takes (not read); so
     * does a file whose size no listing told. */
    if (gf_source_sample(f->cfg.src, e->idx, &smp) < 0 ||
        (!smp.obj && !smp.length)) {
      gf_error_clear();
      continue;
    }
    const void *cd;
    size_t cl;
    if (f->cfg.cache && gf_cache_get(f->cfg.cache, e->idx, &cd, &cl) == 1) {
      f->st.cached++;
      continue;
    }
    /* A file of its own (a remote folder's): opened with the size and
     * version its listing told, which costs no request. One that cannot
     * be is left to its worker, which opens it again and reports. */
    gf_object *own = NULL;
    if (!smp.obj) {
      if (gf_source_open_sample(f->cfg.src, e->idx, &own) < 0) {
        gf_error_clear();
        continue;
      }
      smp.obj = own;
      smp.offset = 0;
      smp.length = own->size;
    }
    e->len = smp.length;
    scratch[n++] =
        (planned){seq, smp.obj, own, smp.offset, smp.length, e->idx / f->bsize};
    bytes += smp.length;
  }
  f->st.samples += n;
  bool runs = count > 1 && bytes <= f->abytes / 2;
  if (count > 1 && !runs && !f->warned_window) {
    f->warned_window = true;
    gf_log(GF_LOG_WARN,
           "fetch: a window of %llu samples (%llu bytes) does not fit half "
           "the read-ahead budget of %llu bytes: its samples are read one "
           "by one (raise gf_remote_config.fetch_bytes, or lower "
           "window_blocks)",
           (unsigned long long)count, (unsigned long long)bytes,
           (unsigned long long)f->abytes);
  }
  if (runs) {
    /* The window's samples by extent: runs of adjacent samples (the
     * blocks) become one unit each, issued in the order of their first
     * position. */
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_extent);
    uint64_t first_unit = f->u_tail;
    for (uint64_t i = 0; i < n;) {
      uint64_t j = i + 1, end = scratch[i].off + scratch[i].len;
      while (j < n && scratch[j].obj == scratch[i].obj &&
             scratch[j].block == scratch[i].block && scratch[j].off >= end &&
             scratch[j].off - end <= GAP &&
             scratch[j].off + scratch[j].len - scratch[i].off <= UNIT_MAX) {
        end = scratch[j].off + scratch[j].len;
        j++;
      }
      uint64_t u = new_unit(f, scratch[i].obj, scratch[i].off,
                            end - scratch[i].off);
      U(f, u)->own = scratch[i].own; /* a run shares one object */
      U(f, u)->nsamp = (uint32_t)(j - i);
      for (uint64_t k = i; k < j; k++) {
        entry *e = E(f, scratch[k].seq);
        e->unit = u;
        e->off = scratch[k].off - scratch[i].off;
        U(f, u)->refs++;
      }
      i = j;
    }
    /* Issue order: by first position. Few units (a window's blocks):
     * insertion sort of the unit table's new part by its entries' first
     * seq. */
    uint64_t nu = f->u_tail - first_unit;
    uint64_t *first_seq = calloc(nu ? nu : 1, sizeof *first_seq);
    if (first_seq) {
      for (uint64_t k = 0; k < nu; k++)
        first_seq[k] = NONE;
      for (uint64_t s = f->e_tail; s < f->e_tail + count; s++) {
        entry *e = E(f, s);
        if (e->unit != NONE && first_seq[e->unit - first_unit] == NONE)
          first_seq[e->unit - first_unit] = s;
      }
      /* Reorder the units (and the entries that point at them). */
      uint64_t *order = calloc(nu ? nu : 1, sizeof *order);
      unit *copy = calloc(nu ? nu : 1, sizeof *copy);
      if (order && copy) {
        for (uint64_t k = 0; k < nu; k++)
          order[k] = k;
        for (uint64_t k = 1; k < nu; k++) {
          uint64_t v = order[k], m = k;
          while (m && first_seq[order[m - 1]] > first_seq[v]) {
            order[m] = order[m - 1];
            m--;
          }
          order[m] = v;
        }
        uint64_t *where = first_seq; /* reused: old -> new */
        for (uint64_t k = 0; k < nu; k++) {
          copy[k] = *U(f, first_unit + order[k]);
          where[order[k]] = k;
        }
        for (uint64_t k = 0; k < nu; k++)
          *U(f, first_unit + k) = copy[k];
        for (uint64_t s = f->e_tail; s < f->e_tail + count; s++) {
          entry *e = E(f, s);
          if (e->unit != NONE)
            e->unit = first_unit + where[e->unit - first_unit];
        }
      }
      free(order);
      free(copy);
      free(first_seq);
    }
    f->st.block_reads += nu;
  } else {
    /* One unit a position, merged in sequential order with the unit
     * before it when the sample follows it in the same object. */
    bool merge = f->cfg.order == GF_ORDER_SEQUENTIAL;
    for (uint64_t i = 0; i < n; i++) {
      entry *e = E(f, scratch[i].seq);
      unit *last = merge && f->u_tail > f->u_issue ? U(f, f->u_tail - 1) : NULL;
      if (last && last->obj == scratch[i].obj &&
          last->off + last->len == scratch[i].off &&
          last->len + scratch[i].len <= UNIT_MAX &&
          last->len + scratch[i].len <= f->abytes / 4) {
        e->unit = f->u_tail - 1;
        e->off = last->len;
        last->len += scratch[i].len;
        last->refs++;
        last->nsamp++;
        continue;
      }
      e->unit = new_unit(f, scratch[i].obj, scratch[i].off, scratch[i].len);
      U(f, e->unit)->own = scratch[i].own;
      e->off = 0;
      U(f, e->unit)->refs = 1;
      U(f, e->unit)->nsamp = 1;
    }
  }
  f->e_tail += count;
  f->p_pos = a + count;
  /* A position left to its worker (no unit: cached, or its record not
   * read ahead) is never announced by a read: its taker may be waiting. */
  if (n < count)
    pthread_cond_broadcast(&f->done_cv);
  if (f->prep) {
    f->planned += count;
    pthread_cond_signal(&f->prep_cv); /* room ahead */
  }
  return true;
}

/* ---- the records read ahead ------------------------------------------- */

static void *prep_main(void *arg) {
  gf_fetch *f = arg;
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    uint64_t lead = f->prepared - f->planned;
    if (lead >= f->ecap || !walk_ready(f, &f->rsm, &f->r_epoch, &f->r_pos,
                                       &f->r_end, &f->r_ready)) {
      pthread_cond_wait(&f->prep_cv, &f->mu);
      continue;
    }
    uint64_t n = f->r_end - f->r_pos, room = f->ecap - lead;
    uint64_t chunk =
        f->cfg.batch_size < PREP_MAX ? f->cfg.batch_size : PREP_MAX;
    if (chunk < 64)
      chunk = 64;
    if (n > room)
      n = room;
    if (n > chunk)
      n = chunk;
    for (uint64_t i = 0; i < n; i++)
      f->ridx[i] = gf_sampler_get(&f->rsm, f->r_pos + i);
    uint64_t gen = f->r_gen;
    pthread_mutex_unlock(&f->mu);
    gf_error_info saved = *gf_last_error();
    int rc = gf_source_prepare(f->cfg.src, f->ridx, (size_t)n, f->runready);
    if (rc < 0)
      gf_log(GF_LOG_WARN,
             "fetch: reading the records of %llu samples ahead: %s (their "
             "workers read them again)",
             (unsigned long long)n, gf_last_error()->message);
    gf_error_restore(&saved);
    pthread_mutex_lock(&f->mu);
    if (gen != f->r_gen)
      continue; /* a restart: the cursor moved meanwhile */
    /* A position whose record or shard is not ready is left to its
     * worker: the plan, under mu, never goes to the network for it. */
    for (uint64_t i = 0; i < n; i++)
      f->bad[(f->prepared + i) % f->ecap] = rc < 0 || f->runready[i];
    f->prepared += n;
    f->r_pos += n;
    poke(f);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* ---- reading ------------------------------------------------------------- */

static void unit_failed(gf_fetch *f, unit *u, int err, const char *why) {
  u->state = U_FAILED;
  u->err = err;
  gf_strlcpy(u->why, why && why[0] ? why : gf_strerror(err), sizeof u->why);
  f->st.failed++;
}

/* Issues the planned units that the budget and the request bound allow.
 * Under mu; submits with mu released. Returns whether it issued any. */
static bool issue(gf_fetch *f) {
  gf_read_req reqs[64];
  unsigned nreq = 0;
  while (f->u_issue < f->u_tail && nreq < 64 &&
         f->inflight + nreq < f->cfg.requests) {
    unit *u = U(f, f->u_issue);
    if (!u->refs) { /* every position it held was released untaken */
      u->state = U_DONE;
      f->u_issue++;
      continue;
    }
    if (u->len > f->abytes) {
      char why[200];
      snprintf(why, sizeof why,
               "a read of %llu bytes is larger than the read-ahead budget of "
               "%llu bytes (gf_remote_config.fetch_bytes)",
               (unsigned long long)u->len, (unsigned long long)f->abytes);
      unit_failed(f, u, GF_ELIMIT, why);
      f->u_issue++;
      continue;
    }
    uint64_t at = arena_alloc(f, u->len);
    if (at == NONE)
      break;
    u->aoff = at;
    u->state = U_INFLIGHT;
    u->t0 = now_ns();
    reqs[nreq] = (gf_read_req){.obj = u->obj, .flags = 0, .offset = u->off,
                               .length = u->len,
                               .buf = f->arena + at % f->abytes,
                               .user_data = f->u_issue};
    nreq++;
    f->u_issue++;
  }
  if (!nreq)
    return false;
  f->inflight += nreq;
  if (f->inflight > f->st.inflight_max)
    f->st.inflight_max = f->inflight;
  if (f->a_tail - f->a_head > f->st.bytes_max)
    f->st.bytes_max = f->a_tail - f->a_head;
  pthread_mutex_unlock(&f->mu);
  int rc = gf_reader_submit(f->reader, reqs, nreq);
  pthread_mutex_lock(&f->mu);
  if (rc < 0) {
    char why[256];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    /* Accepted or not, these reads are lost with the reader, which is
     * made again (as a worker's, after a ring error). */
    for (unsigned i = 0; i < nreq; i++)
      unit_failed(f, U(f, reqs[i].user_data), rc, why);
    f->inflight -= nreq;
    gf_reader_destroy(f->reader);
    f->reader = NULL;
    pthread_cond_broadcast(&f->done_cv);
  }
  return true;
}

/* Takes what the reader has done: blocking for one when `block`. Under
 * mu; waits with mu released. */
static void collect(gf_fetch *f, bool block) {
  gf_read_done done[64];
  f->thread_blocked = block;
  pthread_mutex_unlock(&f->mu);
  int got = gf_reader_wait(f->reader, done, 64, block ? 1 : 0);
  uint64_t t1 = now_ns();
  pthread_mutex_lock(&f->mu);
  f->thread_blocked = false;
  if (got < 0) {
    char why[256];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    gf_log(GF_LOG_WARN, "fetch: the reader failed as a whole (%s): its %u "
                        "reads fail and a fresh reader replaces it",
           why, f->inflight);
    for (uint64_t n = f->u_head; n < f->u_issue; n++)
      if (U(f, n)->state == U_INFLIGHT)
        unit_failed(f, U(f, n), got, why);
    f->inflight = 0;
    gf_reader_destroy(f->reader); /* waits for what it still runs */
    f->reader = NULL;
    pthread_cond_broadcast(&f->done_cv);
    return;
  }
  for (int i = 0; i < got; i++) {
    unit *u = U(f, done[i].user_data);
    f->inflight--;
    if (done[i].result < 0) {
      unit_failed(f, u, (int)done[i].result, done[i].why);
      continue;
    }
    u->state = U_DONE;
    f->st.requests++;
    f->st.bytes += u->len;
    if (f->cfg.trace)
      gf_trace_span(f->cfg.trace, GF_TR_FETCH, GF_TRACE_TID_FETCH, u->t0, t1,
                    GF_TRACE_FETCH_ARG(u->nsamp, u->epoch));
  }
  if (got > 0)
    pthread_cond_broadcast(&f->done_cv);
}

static int new_reader(gf_fetch *f) {
  gf_reader_opts ro = GF_READER_OPTS_INIT;
  ro.storage = gf_source_storage(f->cfg.src);
  ro.queue_depth = f->cfg.requests < 4096 ? f->cfg.requests : 4096;
  ro.max_pending = f->cfg.requests;
  return gf_reader_create(&ro, &f->reader);
}

/* Drops every position and unit and moves to the restart's cursor. Under
 * mu, the reader idle or gone. */
static void reset(gf_fetch *f) {
  for (uint64_t n = f->u_head; n < f->u_tail; n++)
    unit_drop(U(f, n));
  f->sm = f->next_sm;
  f->p_epoch = f->next_epoch;
  f->p_pos = f->next_pos;
  f->p_ready = false;
  f->e_head = f->e_tail = 0;
  f->u_head = f->u_tail = f->u_issue = 0;
  f->a_head = f->a_tail = 0;
  f->inflight = 0;
  f->rsm = f->next_sm;
  f->r_epoch = f->next_epoch;
  f->r_pos = f->next_pos;
  f->r_ready = false;
  f->r_gen++;
  f->planned = f->prepared = 0;
  if (f->prep)
    pthread_cond_signal(&f->prep_cv);
}

static void *fetch_main(void *arg) {
  gf_fetch *f = arg;
  planned *scratch = malloc((size_t)f->ecap * sizeof *scratch);
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    if (f->ack != f->gen) {
      /* A restart: what is in flight is dropped with the reader. */
      pthread_mutex_unlock(&f->mu);
      gf_reader_destroy(f->reader);
      pthread_mutex_lock(&f->mu);
      f->reader = NULL;
      reset(f);
      f->ack = f->gen;
      pthread_cond_broadcast(&f->done_cv);
    }
    if (!f->reader) {
      pthread_mutex_unlock(&f->mu);
      int rc = new_reader(f);
      pthread_mutex_lock(&f->mu);
      if (rc < 0) {
        char why[256];
        gf_strlcpy(why, gf_last_error()->message, sizeof why);
        gf_log(GF_LOG_ERROR, "fetch: no reader: %s", why);
        /* Everything planned fails with that reason; try again later. */
        for (uint64_t n = f->u_issue; n < f->u_tail; n++)
          unit_failed(f, U(f, n), rc, why);
        f->u_issue = f->u_tail;
        pthread_cond_broadcast(&f->done_cv);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&f->work_cv, &f->mu, &ts);
        continue;
      }
    }
    reclaim(f);
    bool did = false;
    while (scratch && plan(f, scratch))
      did = true;
    if (issue(f))
      did = true;
    if (f->stop || f->ack != f->gen)
      continue;
    if (!f->reader)
      continue;
    if (f->inflight) {
      /* Block for a completion only when the reader can be woken for new
       * room, a restart or stop; else look again soon. */
      bool wake = gf_reader_wakeable(f->reader);
      collect(f, !did && wake);
      if (!did && !wake) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000) {
          ts.tv_sec++;
          ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&f->work_cv, &f->mu, &ts);
      }
    } else if (!did) {
      pthread_cond_wait(&f->work_cv, &f->mu);
    }
  }
  pthread_mutex_unlock(&f->mu);
  free(scratch);
  return NULL;
}

/* ---- the loader's side --------------------------------------------------- */

/* Wakes the thread: it may have room now, or a restart or stop. Under mu. */
static void poke(gf_fetch *f) {
  pthread_cond_signal(&f->work_cv);
  if (f->prep)
    pthread_cond_signal(&f->prep_cv);
  if (f->thread_blocked && f->reader)
    gf_reader_wake(f->reader);
}

int gf_fetch_create(const gf_fetch_config *c, const gf_sampler *s,
                    uint64_t epoch, uint64_t pos, gf_fetch **out) {
  *out = NULL;
  if (!c->budget || !c->requests || c->positions < 2)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fetch: budget, requests and positions must be set");
  gf_fetch *f = calloc(1, sizeof *f);
  if (!f)
    return -ENOMEM;
  f->cfg = *c;
  f->bsize = c->order != GF_ORDER_BLOCK ? 1
             : c->block_size            ? c->block_size
                                        : GF_SAMPLER_DEFAULT_BLOCK_SIZE;
  f->ecap = f->ucap = c->positions;
  f->abytes = c->budget;
  f->ent = calloc((size_t)f->ecap, sizeof *f->ent);
  f->units = calloc((size_t)f->ucap, sizeof *f->units);
  f->arena = malloc((size_t)f->abytes);
  f->prep = gf_source_can_prepare(c->src);
  f->bad = calloc((size_t)f->ecap, 1);
  f->ridx = malloc(PREP_MAX * sizeof *f->ridx);
  f->runready = malloc(PREP_MAX);
  if (!f->ent || !f->units || !f->arena || !f->bad || !f->ridx ||
      !f->runready) {
    gf_fetch_destroy(f);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the fetch stage's %llu bytes",
                   (unsigned long long)c->budget);
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->work_cv, NULL);
  pthread_cond_init(&f->done_cv, NULL);
  pthread_cond_init(&f->prep_cv, NULL);
  f->next_sm = *s;
  f->next_epoch = epoch;
  f->next_pos = pos;
  reset(f);
  int rc = new_reader(f);
  if (rc < 0) {
    gf_fetch_destroy(f);
    return rc;
  }
  if ((rc = pthread_create(&f->thread, NULL, fetch_main, f)) != 0) {
    gf_fetch_destroy(f);
    return gf_fail(-rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot start the fetch thread: %s", strerror(rc));
  }
  f->started = true;
  if (f->prep) {
    if ((rc = pthread_create(&f->prep_thread, NULL, prep_main, f)) != 0) {
      gf_fetch_destroy(f);
      return gf_fail(-rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot start the fetch stage's record thread: %s",
                     strerror(rc));
    }
    f->prep_started = true;
  }
  *out = f;
  return 0;
}

void gf_fetch_shutdown(gf_fetch *f) {
  if (!f || !f->started)
    return;
  pthread_mutex_lock(&f->mu);
  f->stop = true;
  poke(f);
  pthread_cond_broadcast(&f->done_cv);
  bool join = !f->joined;
  f->joined = true;
  pthread_mutex_unlock(&f->mu);
  if (join) {
    pthread_join(f->thread, NULL);
    if (f->prep_started)
      pthread_join(f->prep_thread, NULL);
  }
}

void gf_fetch_destroy(gf_fetch *f) {
  if (!f)
    return;
  if (f->started) {
    gf_fetch_shutdown(f);
    pthread_cond_destroy(&f->work_cv);
    pthread_cond_destroy(&f->done_cv);
    pthread_cond_destroy(&f->prep_cv);
    pthread_mutex_destroy(&f->mu);
  }
  free(f->bad);
  free(f->ridx);
  free(f->runready);
  gf_reader_destroy(f->reader);
  for (uint64_t n = f->u_head; f->units && n < f->u_tail; n++)
    unit_drop(U(f, n));
  free(f->ent);
  free(f->units);
  free(f->arena);
  free(f);
}

void gf_fetch_restart(gf_fetch *f, const gf_sampler *s, uint64_t epoch,
                      uint64_t pos) {
  pthread_mutex_lock(&f->mu);
  f->next_sm = *s;
  f->next_epoch = epoch;
  f->next_pos = pos;
  uint64_t g = ++f->gen;
  poke(f);
  while (f->ack < g && !f->stop)
    pthread_cond_wait(&f->done_cv, &f->mu);
  pthread_mutex_unlock(&f->mu);
}

int gf_fetch_take(gf_fetch *f, uint64_t seq, uint64_t idx,
                  const uint8_t **data, uint64_t *len) {
  *data = NULL;
  *len = 0;
  uint64_t t0 = now_ns();
  pthread_mutex_lock(&f->mu);
  while (seq >= f->e_tail && !f->stop) {
    poke(f);
    pthread_cond_wait(&f->done_cv, &f->mu);
  }
  if (f->stop) {
    pthread_mutex_unlock(&f->mu);
    return gf_fail(-ECANCELED, NULL, idx, GF_NO_INDEX,
                   "fetch: the loader is stopping");
  }
  if (seq < f->e_head || E(f, seq)->idx != idx) {
    pthread_mutex_unlock(&f->mu);
    return gf_fail(GF_EINTERNAL, NULL, idx, GF_NO_INDEX,
                   "fetch: position %llu is not planned for sample %llu",
                   (unsigned long long)seq, (unsigned long long)idx);
  }
  entry *e = E(f, seq);
  if (e->unit == NONE) {
    pthread_mutex_unlock(&f->mu);
    return 0;
  }
  unit *u = U(f, e->unit);
  while ((u->state == U_PLANNED || u->state == U_INFLIGHT) && !f->stop)
    pthread_cond_wait(&f->done_cv, &f->mu);
  if (f->stop && u->state != U_DONE && u->state != U_FAILED) {
    pthread_mutex_unlock(&f->mu);
    return gf_fail(-ECANCELED, NULL, idx, GF_NO_INDEX,
                   "fetch: the loader is stopping");
  }
  uint64_t waited = now_ns() - t0;
  f->st.take_wait_ns += waited;
  if (u->state == U_FAILED) {
    int err = u->err;
    char why[256], where[1024];
    gf_strlcpy(why, u->why, sizeof why);
    gf_strlcpy(where, u->obj->display, sizeof where);
    uint64_t off = u->off + e->off, n = e->len;
    pthread_mutex_unlock(&f->mu);
    /* The message names the object and the offset first: a why that
     * starts with the object's name (a storage engine's) says it once. */
    size_t wl = strlen(where);
    const char *w = why;
    if (wl && !strncmp(w, where, wl) && !strncmp(w + wl, ": ", 2))
      w += wl + 2;
    return gf_fail(err, where, idx, off, "reading %llu bytes: %s",
                   (unsigned long long)n, w);
  }
  *data = f->arena + u->aoff % f->abytes + e->off;
  *len = e->len;
  pthread_mutex_unlock(&f->mu);
  return 1;
}

void gf_fetch_release(gf_fetch *f, uint64_t seq) {
  pthread_mutex_lock(&f->mu);
  /* A worker may give a position up before it is planned (its record
   * could not be read): the release waits for the plan, or the position
   * would stay held once planned and the ring would fill. */
  uint64_t gen = f->gen;
  while (seq >= f->e_tail && !f->stop && f->gen == gen) {
    poke(f);
    pthread_cond_wait(&f->done_cv, &f->mu);
  }
  if (seq >= f->e_head && seq < f->e_tail) {
    entry *e = E(f, seq);
    if (!e->released) {
      e->released = true;
      bool freed = seq == f->e_head;
      if (e->unit != NONE) {
        unit *u = U(f, e->unit);
        if (u->refs && --u->refs == 0)
          freed = true;
      }
      if (freed)
        poke(f);
    }
  }
  pthread_mutex_unlock(&f->mu);
}

void gf_fetch_counters_get(gf_fetch *f, gf_fetch_counters *out) {
  pthread_mutex_lock(&f->mu);
  *out = f->st;
  pthread_mutex_unlock(&f->mu);
}

void gf_fetch_now(gf_fetch *f, uint32_t *inflight, uint64_t *bytes) {
  pthread_mutex_lock(&f->mu);
  *inflight = f->inflight;
  *bytes = f->a_tail - f->a_head;
  pthread_mutex_unlock(&f->mu);
}
