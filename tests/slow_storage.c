/* "slow://PATH": the local folder PATH served as a remote storage, for
 * tests of the fetch stage (slow_storage.h). */
#include "slow_storage.h"

#include "io/backend.h"
#include "io/storage.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Atomic uint32_t slow_storage_latency_us;
_Atomic uint32_t slow_storage_engine_threads;
_Atomic uint64_t slow_storage_fail_nth;
_Atomic int slow_storage_fail_sticky;
_Atomic uint64_t slow_storage_reads, slow_storage_bytes;
_Atomic uint64_t slow_storage_engine_reads;
_Atomic uint32_t slow_storage_inflight_max;
_Atomic uint64_t slow_storage_index_reads, slow_storage_index_bytes;
_Atomic uint64_t slow_storage_index_sync_reads;
_Atomic uint64_t slow_storage_heads;

void slow_storage_reset(void) {
  slow_storage_latency_us = 0;
  slow_storage_fail_nth = 0;
  slow_storage_fail_sticky = 0;
  slow_storage_reads = 0;
  slow_storage_engine_reads = 0;
  slow_storage_bytes = 0;
  slow_storage_inflight_max = 0;
  slow_storage_index_reads = 0;
  slow_storage_index_bytes = 0;
  slow_storage_index_sync_reads = 0;
  slow_storage_heads = 0;
  slow_storage_engine_threads = 0;
}

typedef struct slow_storage {
  gf_storage base;
  gf_storage *inner;
} slow_storage;

typedef struct slow_object {
  gf_object base;
  gf_object *inner;
  bool index; /* a dataset's index.gfi */
} slow_object;

extern const gf_storage_ops slow_storage_ops;

static void nap(void) {
  uint32_t us = slow_storage_latency_us;
  if (us) {
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
}

static bool slow_claims(const char *location) {
  return strncmp(location, "slow://", 7) == 0;
}

static int slow_open(const char *location, const gf_remote_config *remote,
                     gf_storage **out) {
  (void)remote;
  slow_storage *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  int rc = gf_storage_open(location + 7, NULL, &s->inner);
  if (rc < 0) {
    free(s);
    return rc;
  }
  s->base.ops = &slow_storage_ops;
  s->base.display = strdup(location);
  *out = &s->base;
  return 0;
}

static void slow_close(gf_storage *st) {
  slow_storage *s = (slow_storage *)st;
  gf_storage_close(s->inner);
  free(s->base.display);
  free(s);
}

static int slow_stat(gf_storage *st, const char *name, bool follow,
                     gf_stat *out) {
  slow_storage_heads++;
  nap();
  return gf_storage_stat(((slow_storage *)st)->inner, name, follow, out);
}

static int slow_obj_open(gf_storage *st, const char *name, uint32_t flags,
                         gf_object **out) {
  (void)flags;
  slow_storage_heads++;
  nap();
  slow_object *o = calloc(1, sizeof *o);
  if (!o)
    return -ENOMEM;
  size_t nl = strlen(name);
  o->index = nl >= 9 && strcmp(name + nl - 9, "index.gfi") == 0;
  int rc = gf_object_open(((slow_storage *)st)->inner, name, 0, &o->inner);
  if (rc < 0) {
    free(o);
    return rc;
  }
  char d[1100];
  snprintf(d, sizeof d, "%s/%s", st->display, name);
  o->base.st = st;
  o->base.fd = -1;
  o->base.size = o->inner->size;
  memcpy(o->base.version, o->inner->version, sizeof o->base.version);
  o->base.display = strdup(d);
  *out = &o->base;
  return 0;
}

static void slow_obj_close(gf_object *ob) {
  slow_object *o = (slow_object *)ob;
  gf_object_close(o->inner);
  free(o->base.display);
  free(o);
}

/* A read's fault, if this one is to fail. */
static int fault(void) {
  uint64_t n = ++slow_storage_reads, f = slow_storage_fail_nth;
  if (f && (n == f || (slow_storage_fail_sticky && n > f)))
    return -EIO;
  return 0;
}

static int64_t slow_obj_read(gf_object *ob, void *buf, uint64_t off,
                             uint64_t len) {
  nap();
  int e = fault();
  if (e)
    return gf_fail(e, ob->display, GF_NO_INDEX, off, "injected failure");
  slow_object *o = (slow_object *)ob;
  int64_t n = gf_object_read_upto(o->inner, buf, off, len);
  if (n > 0)
    slow_storage_bytes += (uint64_t)n;
  if (o->index) {
    slow_storage_index_reads++;
    slow_storage_index_sync_reads++;
    slow_storage_index_bytes += n > 0 ? (uint64_t)n : 0;
  }
  return n;
}

/* ---- the engine: threads that take slots from a queue ------------------ */

#define THREADS_DEFAULT 8
#define THREADS_MAX 256

typedef struct engine {
  gf_io_slot *slots;
  uint32_t cap;
  pthread_mutex_t mu;
  pthread_cond_t work, done_cv;
  uint32_t *queue, qh, qn; /* to run */
  uint32_t *done, dh, dn;  /* run */
  uint32_t running;
  bool stop, woken;
  pthread_t t[THREADS_MAX];
  int nt;
} engine;

static void *engine_main(void *arg) {
  engine *e = arg;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    while (!e->stop && !e->qn)
      pthread_cond_wait(&e->work, &e->mu);
    if (e->stop)
      break;
    uint32_t id = e->queue[e->qh];
    e->qh = (e->qh + 1) % e->cap;
    e->qn--;
    e->running++;
    uint32_t r = e->running;
    uint32_t m = slow_storage_inflight_max;
    while (r > m && !atomic_compare_exchange_weak(&slow_storage_inflight_max,
                                                  &m, r))
      ;
    pthread_mutex_unlock(&e->mu);
    gf_io_slot *s = &e->slots[id];
    slow_storage_engine_reads++;
    nap();
    int f = fault();
    if (f) {
      s->result = f;
      snprintf(s->why, sizeof s->why, "injected failure of read %llu",
               (unsigned long long)slow_storage_reads);
    } else {
      slow_object *o = (slow_object *)s->req.obj;
      int64_t n = gf_object_read_upto(o->inner, s->req.buf, s->req.offset,
                                      s->req.length);
      if (o->index) {
        slow_storage_index_reads++;
        slow_storage_index_bytes += n > 0 ? (uint64_t)n : 0;
      }
      if (n >= 0 && (uint64_t)n < s->req.length &&
          !(s->req.flags & GF_READ_EOF_OK))
        n = GF_ETRUNCATED;
      s->result = n;
      s->done = n > 0 ? (uint64_t)n : 0;
      if (n > 0)
        slow_storage_bytes += (uint64_t)n;
      if (n < 0)
        gf_strlcpy(s->why, gf_last_error()->message, sizeof s->why);
    }
    pthread_mutex_lock(&e->mu);
    e->running--;
    e->done[(e->dh + e->dn) % e->cap] = id;
    e->dn++;
    pthread_cond_broadcast(&e->done_cv);
  }
  pthread_mutex_unlock(&e->mu);
  return NULL;
}

static int eng_create(gf_storage *st, gf_io_slot *slots, uint32_t nslots,
                      unsigned depth, void **out, char *why, size_t cap) {
  (void)st;
  (void)depth;
  engine *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  e->slots = slots;
  e->cap = nslots;
  e->queue = calloc(nslots, sizeof *e->queue);
  e->done = calloc(nslots, sizeof *e->done);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->work, NULL);
  pthread_cond_init(&e->done_cv, NULL);
  uint32_t want = slow_storage_engine_threads;
  if (!want)
    want = THREADS_DEFAULT;
  if (want > THREADS_MAX)
    want = THREADS_MAX;
  for (uint32_t i = 0; i < want; i++)
    if (pthread_create(&e->t[i], NULL, engine_main, e) == 0)
      e->nt++;
  *out = e;
  return 0;
}

static void eng_destroy(void *p) {
  engine *e = p;
  if (!e)
    return;
  pthread_mutex_lock(&e->mu);
  e->stop = true;
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->mu);
  for (int i = 0; i < e->nt; i++)
    pthread_join(e->t[i], NULL);
  free(e->queue);
  free(e->done);
  free(e);
}

static int eng_push(void *p, const uint32_t *ids, unsigned n) {
  engine *e = p;
  pthread_mutex_lock(&e->mu);
  for (unsigned i = 0; i < n; i++) {
    e->queue[(e->qh + e->qn) % e->cap] = ids[i];
    e->qn++;
  }
  pthread_cond_broadcast(&e->work);
  pthread_mutex_unlock(&e->mu);
  return 0;
}

static int eng_reap(void *p, uint32_t *ids, unsigned max, unsigned min) {
  engine *e = p;
  pthread_mutex_lock(&e->mu);
  while (e->dn < min && !e->woken)
    pthread_cond_wait(&e->done_cv, &e->mu);
  e->woken = false;
  unsigned n = 0;
  while (n < max && e->dn) {
    ids[n++] = e->done[e->dh];
    e->dh = (e->dh + 1) % e->cap;
    e->dn--;
  }
  pthread_mutex_unlock(&e->mu);
  return (int)n;
}

static void eng_wake(void *p) {
  engine *e = p;
  pthread_mutex_lock(&e->mu);
  e->woken = true;
  pthread_cond_broadcast(&e->done_cv);
  pthread_mutex_unlock(&e->mu);
}

static const gf_io_engine_ops slow_engine = {
    .name = "slow",
    .create = eng_create,
    .destroy = eng_destroy,
    .push = eng_push,
    .reap = eng_reap,
    .wake = eng_wake,
};

const gf_storage_ops slow_storage_ops = {
    .name = "slow",
    .caps = GF_STORAGE_REMOTE,
    .claims = slow_claims,
    .open = slow_open,
    .close = slow_close,
    .stat = slow_stat,
    .obj_open = slow_obj_open,
    .obj_close = slow_obj_close,
    .obj_read = slow_obj_read,
    .engine = &slow_engine,
};

int slow_storage_register(void) {
  return gf_storage_register_test(&slow_storage_ops);
}
