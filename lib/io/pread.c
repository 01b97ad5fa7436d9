/* The pread backend: a few threads that each run one whole read at a time
 * (continuations and retries included) with pread, for kernels or
 * containers without io_uring. */
#include "io/backend.h"

#include "common/fault.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

struct gf_io_pool {
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* jobs queued or stop */
  pthread_cond_t done_cv; /* a read completed */
  gf_io_slot *slots;
  uint32_t cap;
  uint32_t *jobs; /* FIFO of slot ids to run */
  uint32_t jhead, jcount;
  uint32_t *done; /* FIFO of completed slot ids */
  uint32_t dhead, dcount;
  bool stop;
  unsigned nthreads;
  pthread_t *threads;
};

static void run_slot(gf_io_slot *s) {
  for (;;) {
    uint64_t off;
    void *buf;
    uint32_t len;
    gf_io_slot_next(s, &off, &buf, &len);
    s->ops++;
    ssize_t n = gf_sys_pread(s->req.obj->fd, buf, len, (off_t)off);
    if (gf_io_slot_step(s, n, len))
      return;
    if (n == -EAGAIN)
      sched_yield();
  }
}

static void *worker(void *arg) {
  gf_io_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && !p->jcount)
      pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop)
      break;
    uint32_t id = p->jobs[p->jhead];
    p->jhead = (p->jhead + 1) % p->cap;
    p->jcount--;
    pthread_mutex_unlock(&p->mu);
    /* The slot belongs to this thread until it is queued as done. */
    run_slot(&p->slots[id]);
    pthread_mutex_lock(&p->mu);
    p->done[(p->dhead + p->dcount) % p->cap] = id;
    p->dcount++;
    pthread_cond_signal(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void stop_and_join(gf_io_pool *p, unsigned started) {
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < started; i++)
    pthread_join(p->threads[i], NULL);
}

static void free_pool(gf_io_pool *p) {
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->mu);
  free(p->threads);
  free(p->jobs);
  free(p->done);
  free(p);
}

int gf_io_pool_create(gf_io_slot *slots, uint32_t nslots, unsigned threads,
                      gf_io_pool **out) {
  *out = NULL;
  gf_io_pool *p = calloc(1, sizeof *p);
  if (!p)
    return -ENOMEM;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->slots = slots;
  p->cap = nslots;
  p->jobs = malloc(nslots * sizeof *p->jobs);
  p->done = malloc(nslots * sizeof *p->done);
  p->threads = calloc(threads, sizeof *p->threads);
  if (!p->jobs || !p->done || !p->threads) {
    free_pool(p);
    return -ENOMEM;
  }
  /* The threads take no signals: the application's handlers run on its own
   * threads, and a pread here never sees EINTR from them. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  unsigned started = 0;
  for (; started < threads; started++) {
    rc = pthread_create(&p->threads[started], NULL, worker, p);
    if (rc)
      break;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) {
    stop_and_join(p, started);
    free_pool(p);
    return -rc;
  }
  p->nthreads = threads;
  *out = p;
  return 0;
}

void gf_io_pool_destroy(gf_io_pool *p) {
  if (!p)
    return;
  stop_and_join(p, p->nthreads);
  free_pool(p);
}

void gf_io_pool_push(gf_io_pool *p, const uint32_t *ids, unsigned n) {
  pthread_mutex_lock(&p->mu);
  for (unsigned i = 0; i < n; i++)
    p->jobs[(p->jhead + p->jcount + i) % p->cap] = ids[i];
  p->jcount += n;
  if (n == 1)
    pthread_cond_signal(&p->work_cv);
  else
    pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
}

unsigned gf_io_pool_reap(gf_io_pool *p, uint32_t *ids, unsigned max,
                         unsigned min) {
  pthread_mutex_lock(&p->mu);
  while (p->dcount < min)
    pthread_cond_wait(&p->done_cv, &p->mu);
  unsigned n = 0;
  while (n < max && p->dcount) {
    ids[n++] = p->done[p->dhead];
    p->dhead = (p->dhead + 1) % p->cap;
    p->dcount--;
  }
  pthread_mutex_unlock(&p->mu);
  return n;
}
