/* The disk cache tier's engine (io/backend.h's gf_io_engine_ops, for a
 * cached storage's reader). A few threads of its own take each read the
 * reader pushes: what the entries hold is read from them into the read's
 * buffer; what they do not is claimed and read by the inner storage's
 * engine, on slots of this engine's own (the same ids), into the same
 * buffer; the threads then write it as an entry and complete the read. A
 * read whose range another reader has claimed waits (polled, not holding a
 * thread) for its entry.
 *
 * The inner engine's push and reap are called from the reader's thread
 * only (inside this engine's reap), as the engine contract wants; the
 * threads reach it only through its wake. */
#include "io/backend.h"
#include "io/dcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Threads: 4, or one a two cores on a machine of 8 or more (at most
 * THREADS_MAX), where hits are served on them too: a hit's copy on the
 * pushing thread alone caps a tier at one core's copy rate. */
#define THREADS_MIN 4
#define THREADS_MAX 8

enum { J_NEW, J_WAIT, J_INNER, J_STORE, J_PASS };

typedef struct job {
  int state;
  uint64_t off, len;   /* the read */
  uint64_t goff, glen; /* what the inner storage reads */
  bool claimed;
  int rounds;
  uint64_t deadline, next; /* waiting on a claim */
} job;

typedef struct fifo {
  uint32_t *ids;
  uint32_t cap, head, count;
} fifo;

static void fifo_push(fifo *f, uint32_t id) {
  f->ids[(f->head + f->count) % f->cap] = id;
  f->count++;
}

static uint32_t fifo_pop(fifo *f) {
  uint32_t id = f->ids[f->head];
  f->head = (f->head + 1) % f->cap;
  f->count--;
  return id;
}

typedef struct ceng {
  gf_dcache_store *cs;
  gf_io_slot *slots;  /* the reader's */
  gf_io_slot *islots; /* the inner engine's */
  job *jobs;
  uint32_t nslots;
  void *inner;
  const gf_io_engine_ops *iops;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the threads: a job, a waiter due, stop */
  pthread_cond_t done_cv; /* the reaper: a completion, work for the inner */
  fifo todo, toinner, done;
  uint32_t *waiting, nwaiting;
  uint32_t *scratch;  /* ids to and from the inner engine (reaper only) */
  uint32_t inner_out; /* pushed to the inner engine, not reaped */
  bool stop, woken, reaper_in_inner;
  pthread_t th[THREADS_MAX];
  int nth;
  bool hits_inline; /* hits served on the pushing thread (few cores) */
} ceng;

/* Makes the reaper look: it may be blocked in the inner engine's reap.
 * Called with mu held; returns whether the inner engine must be woken
 * (after mu is released). */
static bool poke_reaper(ceng *e) {
  pthread_cond_broadcast(&e->done_cv);
  return e->reaper_in_inner && e->iops->wake;
}

static void complete(ceng *e, uint32_t id) {
  pthread_mutex_lock(&e->mu);
  fifo_push(&e->done, id);
  bool wake = poke_reaper(e);
  pthread_mutex_unlock(&e->mu);
  if (wake)
    e->iops->wake(e->inner);
}

/* Sends [goff, goff + glen) of read id to the inner engine (pass: the
 * read as it is, its result the inner's). */
static void to_inner(ceng *e, uint32_t id, uint64_t goff, uint64_t glen,
                     bool pass) {
  gf_io_slot *s = &e->slots[id], *is = &e->islots[id];
  job *j = &e->jobs[id];
  const gf_cached_object *o = (const gf_cached_object *)s->req.obj;
  memset(is, 0, sizeof *is);
  is->req = s->req;
  is->req.obj = o->inner;
  if (!pass) {
    e->cs->c.misses++;
    is->req.flags = 0;
    is->req.offset = goff;
    is->req.length = glen;
    is->req.buf = (uint8_t *)s->req.buf + (goff - j->off);
    j->goff = goff;
    j->glen = glen;
  }
  j->state = pass ? J_PASS : J_INNER;
  pthread_mutex_lock(&e->mu);
  fifo_push(&e->toinner, id);
  bool wake = poke_reaper(e);
  pthread_mutex_unlock(&e->mu);
  if (wake)
    e->iops->wake(e->inner);
}

static void wait_later(ceng *e, uint32_t id) {
  job *j = &e->jobs[id];
  j->state = J_WAIT;
  j->next = gf_dcache_now_ns() + GF_DCACHE_WAIT_POLL_NS;
  pthread_mutex_lock(&e->mu);
  e->waiting[e->nwaiting++] = id;
  pthread_cond_signal(&e->work_cv); /* an idle thread times its wait */
  pthread_mutex_unlock(&e->mu);
}

/* Serves read id from the entries, or sends what they lack to the inner
 * engine (claimed), or waits for another reader's claim. */
static void lookup(ceng *e, uint32_t id) {
  gf_io_slot *s = &e->slots[id];
  job *j = &e->jobs[id];
  gf_cached_object *o = (gf_cached_object *)s->req.obj;
  gf_dcache_store *cs = e->cs;
  while (j->rounds++ < 8) {
    uint64_t go, gl;
    gf_dcache_serve(cs, o->co, j->off, j->len, s->req.buf, &go, &gl);
    if (!gl) {
      cs->c.hits++;
      s->result = (int64_t)j->len;
      s->done = j->len;
      complete(e, id);
      return;
    }
    bool covered;
    int c = gf_dcache_claim(cs, o->co, go, gl, &covered);
    if (covered)
      continue;
    if (c == GF_CLAIM_HELD) {
      uint64_t now = gf_dcache_now_ns();
      if (!j->deadline) {
        j->deadline = now + cs->claim_wait_ns;
        cs->c.claim_waits++;
      }
      if (now < j->deadline) {
        j->goff = go;
        j->glen = gl;
        wait_later(e, id);
        return;
      }
      cs->c.claim_timeouts++;
    }
    j->claimed = c == GF_CLAIM_MINE;
    to_inner(e, id, go, gl, false);
    return;
  }
  to_inner(e, id, j->off, j->len, false); /* entries that keep vanishing */
}

/* A waiting read's look: its entry, or its claim gone, or the bound. */
static void recheck(ceng *e, uint32_t id) {
  job *j = &e->jobs[id];
  gf_io_slot *s = &e->slots[id];
  gf_cached_object *o = (gf_cached_object *)s->req.obj;
  bool expired;
  if (!gf_dcache_wait_over(e->cs, o->co, j->goff, j->glen, j->deadline,
                           &expired)) {
    wait_later(e, id);
    return;
  }
  if (expired) {
    e->cs->c.claim_timeouts++;
    j->claimed = false;
    to_inner(e, id, j->goff, j->glen, false);
    return;
  }
  lookup(e, id);
}

/* The inner engine read job id's gap: keep it, complete the read. */
static void store(ceng *e, uint32_t id) {
  job *j = &e->jobs[id];
  gf_io_slot *s = &e->slots[id], *is = &e->islots[id];
  gf_cached_object *o = (gf_cached_object *)s->req.obj;
  if (is->result < 0 || (uint64_t)is->result < j->glen) {
    s->result = is->result < 0 ? is->result : GF_ETRUNCATED;
    s->done = (j->goff - j->off) + is->done;
    memcpy(s->why, is->why, sizeof s->why);
    if (j->claimed)
      gf_dcache_unclaim(e->cs, o->co, j->goff, j->glen);
  } else {
    gf_dcache_store_entry(e->cs, o->co, j->goff, j->glen, is->req.buf,
                          j->claimed);
    s->result = (int64_t)j->len;
    s->done = j->len;
  }
  j->claimed = false;
  complete(e, id);
}

static void run(ceng *e, uint32_t id) {
  job *j = &e->jobs[id];
  gf_io_slot *s = &e->slots[id];
  if (j->state == J_STORE) {
    store(e, id);
    return;
  }
  const gf_cached_object *o = (const gf_cached_object *)s->req.obj;
  if (!gf_dcache_cacheable(o, s->req.offset, s->req.length)) {
    e->cs->c.uncached++;
    to_inner(e, id, 0, 0, true);
    return;
  }
  j->off = s->req.offset;
  j->len = s->req.length;
  lookup(e, id);
}

static void *thread_main(void *arg) {
  ceng *e = arg;
  pthread_mutex_lock(&e->mu);
  while (!e->stop) {
    if (e->todo.count) {
      uint32_t id = fifo_pop(&e->todo);
      pthread_mutex_unlock(&e->mu);
      run(e, id);
      pthread_mutex_lock(&e->mu);
      continue;
    }
    uint64_t now = gf_dcache_now_ns(), first = UINT64_MAX;
    uint32_t due = UINT32_MAX;
    for (uint32_t i = 0; i < e->nwaiting && due == UINT32_MAX; i++) {
      uint64_t t = e->jobs[e->waiting[i]].next;
      if (t <= now) {
        due = e->waiting[i];
        e->waiting[i] = e->waiting[--e->nwaiting];
      } else if (t < first) {
        first = t;
      }
    }
    if (due != UINT32_MAX) {
      pthread_mutex_unlock(&e->mu);
      recheck(e, due);
      pthread_mutex_lock(&e->mu);
    } else if (e->nwaiting) {
      struct timespec ts = {(time_t)(first / 1000000000ull),
                            (long)(first % 1000000000ull)};
      pthread_cond_timedwait(&e->work_cv, &e->mu, &ts);
    } else {
      pthread_cond_wait(&e->work_cv, &e->mu);
    }
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static void eng_destroy(void *p);

static int eng_create(gf_storage *st, gf_io_slot *slots, uint32_t nslots,
                      unsigned depth, void **out, char *why, size_t cap) {
  *out = NULL;
  gf_dcache_store *cs = (gf_dcache_store *)st;
  ceng *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(why, cap, "out of memory for the disk cache's engine");
    return -ENOMEM;
  }
  e->cs = cs;
  e->slots = slots;
  e->nslots = nslots;
  e->iops = cs->inner->ops->engine;
  e->islots = calloc(nslots, sizeof *e->islots);
  e->jobs = calloc(nslots, sizeof *e->jobs);
  e->todo.ids = calloc(nslots, sizeof(uint32_t));
  e->toinner.ids = calloc(nslots, sizeof(uint32_t));
  e->done.ids = calloc(nslots, sizeof(uint32_t));
  e->waiting = calloc(nslots, sizeof(uint32_t));
  e->scratch = calloc(nslots, sizeof(uint32_t));
  e->todo.cap = e->toinner.cap = e->done.cap = nslots;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->work_cv, &ca);
  pthread_cond_init(&e->done_cv, &ca);
  pthread_condattr_destroy(&ca);
  if (!e->islots || !e->jobs || !e->todo.ids || !e->toinner.ids ||
      !e->done.ids || !e->waiting || !e->scratch) {
    eng_destroy(e);
    snprintf(why, cap, "out of memory for the disk cache's engine");
    return -ENOMEM;
  }
  int rc =
      e->iops->create(cs->inner, e->islots, nslots, depth, &e->inner, why, cap);
  if (rc < 0) {
    e->iops = NULL;
    eng_destroy(e);
    return rc;
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int want = THREADS_MIN;
  if (cores >= 8)
    want = cores / 2 > THREADS_MAX ? THREADS_MAX : (int)(cores / 2);
  e->hits_inline = cores < 8;
  for (int i = 0; i < want; i++) {
    if ((rc = pthread_create(&e->th[i], NULL, thread_main, e)) != 0)
      break;
    e->nth++;
  }
  if (!e->nth) {
    eng_destroy(e);
    snprintf(why, cap, "cannot start the disk cache's threads: %s",
             strerror(rc));
    return -rc;
  }
  *out = e;
  return 0;
}

static void eng_destroy(void *p) {
  ceng *e = p;
  if (!e)
    return;
  pthread_mutex_lock(&e->mu);
  e->stop = true;
  pthread_cond_broadcast(&e->work_cv);
  pthread_mutex_unlock(&e->mu);
  for (int i = 0; i < e->nth; i++)
    pthread_join(e->th[i], NULL);
  if (e->iops)
    e->iops->destroy(e->inner); /* no transfer runs after it */
  /* Claims of reads that will not finish: others need not wait for them. */
  for (uint32_t id = 0; e->jobs && id < e->nslots; id++)
    if (e->jobs[id].claimed) {
      const gf_cached_object *o =
          (const gf_cached_object *)e->slots[id].req.obj;
      gf_dcache_unclaim(e->cs, o->co, e->jobs[id].goff, e->jobs[id].glen);
    }
  pthread_cond_destroy(&e->work_cv);
  pthread_cond_destroy(&e->done_cv);
  pthread_mutex_destroy(&e->mu);
  free(e->islots);
  free(e->jobs);
  free(e->todo.ids);
  free(e->toinner.ids);
  free(e->done.ids);
  free(e->waiting);
  free(e->scratch);
  free(e);
}

/* With few cores, a hit the page cache holds is served at once, on the
 * pushing thread: no handoff to a thread and back (two wakeups a read);
 * anything else (not held, or the disk would be waited for) goes to the
 * threads. With many, every read goes to the threads, which copy in
 * parallel. */
static bool serve_inline(ceng *e, uint32_t id) {
  if (!e->hits_inline)
    return false;
  gf_io_slot *s = &e->slots[id];
  gf_cached_object *o = (gf_cached_object *)s->req.obj;
  if (!gf_dcache_cacheable(o, s->req.offset, s->req.length) ||
      !gf_dcache_serve_now(e->cs, o->co, s->req.offset, s->req.length,
                           s->req.buf))
    return false;
  s->result = (int64_t)s->req.length;
  s->done = s->req.length;
  return true;
}

static int eng_push(void *p, const uint32_t *ids, unsigned n) {
  ceng *e = p;
  for (unsigned i = 0; i < n; i++) {
    job *j = &e->jobs[ids[i]];
    memset(j, 0, sizeof *j);
    j->state = J_NEW;
    bool hit = serve_inline(e, ids[i]);
    pthread_mutex_lock(&e->mu);
    if (hit) {
      fifo_push(&e->done, ids[i]);
    } else {
      fifo_push(&e->todo, ids[i]);
      pthread_cond_signal(&e->work_cv);
    }
    pthread_mutex_unlock(&e->mu);
  }
  return 0;
}

/* The inner engine completed slot id. Under mu. */
static void inner_done(ceng *e, uint32_t id) {
  job *j = &e->jobs[id];
  if (j->state == J_PASS) {
    gf_io_slot *s = &e->slots[id], *is = &e->islots[id];
    s->result = is->result;
    s->done = is->done;
    memcpy(s->why, is->why, sizeof s->why);
    fifo_push(&e->done, id);
    return;
  }
  j->state = J_STORE; /* a thread writes it (or fails it) */
  fifo_push(&e->todo, id);
  pthread_cond_signal(&e->work_cv);
}

/* Takes what the inner engine has done (at least min of it). Under mu,
 * released while the inner engine runs. Returns 0 or its error. */
static int inner_reap(ceng *e, unsigned min) {
  uint32_t max = e->inner_out;
  if (min)
    e->reaper_in_inner = true;
  pthread_mutex_unlock(&e->mu);
  int k = e->iops->reap(e->inner, e->scratch, max, min);
  pthread_mutex_lock(&e->mu);
  e->reaper_in_inner = false;
  if (k < 0)
    return k;
  e->inner_out -= (uint32_t)k;
  for (int i = 0; i < k; i++)
    inner_done(e, e->scratch[i]);
  return 0;
}

static int eng_reap(void *p, uint32_t *ids, unsigned max, unsigned min) {
  ceng *e = p;
  int rc = 0;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    if (e->toinner.count) {
      unsigned n = 0;
      while (e->toinner.count)
        e->scratch[n++] = fifo_pop(&e->toinner);
      pthread_mutex_unlock(&e->mu);
      int prc = e->iops->push(e->inner, e->scratch, n);
      pthread_mutex_lock(&e->mu);
      if (prc < 0) { /* the inner engine as a whole: this one's too */
        rc = prc;
        break;
      }
      e->inner_out += n;
      continue;
    }
    if (e->inner_out && (rc = inner_reap(e, 0)) < 0)
      break;
    if (e->done.count >= min || e->woken)
      break;
    if (e->toinner.count)
      continue;
    if (e->inner_out && e->iops->wake) {
      if ((rc = inner_reap(e, 1)) < 0)
        break;
    } else if (e->inner_out) { /* an inner engine that cannot be woken */
      uint64_t t = gf_dcache_now_ns() + 1000000;
      struct timespec ts = {(time_t)(t / 1000000000ull),
                            (long)(t % 1000000000ull)};
      pthread_cond_timedwait(&e->done_cv, &e->mu, &ts);
    } else {
      pthread_cond_wait(&e->done_cv, &e->mu);
    }
  }
  unsigned n = 0;
  while (rc == 0 && n < max && e->done.count)
    ids[n++] = fifo_pop(&e->done);
  e->woken = false;
  pthread_mutex_unlock(&e->mu);
  return rc < 0 ? rc : (int)n;
}

static void eng_wake(void *p) {
  ceng *e = p;
  pthread_mutex_lock(&e->mu);
  e->woken = true;
  bool wake = poke_reaper(e);
  pthread_mutex_unlock(&e->mu);
  if (wake)
    e->iops->wake(e->inner);
}

const gf_io_engine_ops gf_dcache_engine = {
    .name = "cache",
    .create = eng_create,
    .destroy = eng_destroy,
    .push = eng_push,
    .reap = eng_reap,
    .wake = eng_wake,
};
