/* The HTTP(S) storage's engine for the reader (io/backend.h): the
 * reader's reads spread over lanes (storage_http_lanes.c: threads, each
 * with its own libcurl multi handle and connections), each read to the
 * lane with the fewest outstanding, and their completions gathered into
 * one queue that reap takes from. The reader's thread never touches a
 * socket: it plans and hands on while the lanes copy bytes. */
#include "io/storage_http.h"

#include "io/backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lanes of an engine left to choose them (remote.fetch_threads 0): one a
 * two cores, at most this many (a lane moves 2-5 GB/s; 8 took raw samples
 * from 13,000 a second with 2 to 42,000 on an H100 machine of 16 cores). */
#define AUTO_LANES_MAX 8u

typedef struct http_engine {
  gf_http_lanes *lanes;
  uint32_t nslots;
  uint16_t *lane_of; /* the lane each outstanding id was pushed to */
  uint32_t *load;    /* outstanding ids a lane */
  uint32_t *scratch; /* push: one lane's share */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* reap: a completion, or a wake */
  uint32_t *done;    /* ids complete, not yet reaped (a ring) */
  uint32_t dhead, dcount;
  uint32_t out; /* pushed, not yet reaped */
  bool woken;   /* engine_wake since reap last looked */
} http_engine;

unsigned gf_http_lanes_auto(const gf_remote_config *rc) {
  if (rc->fetch_threads)
    return rc->fetch_threads;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned k = n >= 2 ? (unsigned)(n / 2) : 1;
  return k > AUTO_LANES_MAX ? AUTO_LANES_MAX : k;
}

/* A lane's completions (its thread): into the queue, the reaper woken. */
static void on_done(void *ctx, const uint32_t *ids, unsigned n) {
  http_engine *e = ctx;
  pthread_mutex_lock(&e->mu);
  for (unsigned i = 0; i < n; i++) {
    e->done[(e->dhead + e->dcount) % e->nslots] = ids[i];
    e->dcount++;
    e->load[e->lane_of[ids[i]]]--;
  }
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

static void engine_destroy(void *p) {
  http_engine *e = p;
  if (!e)
    return;
  gf_http_lanes_destroy(e->lanes); /* no callback after it returns */
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
  free(e->lane_of);
  free(e->load);
  free(e->scratch);
  free(e->done);
  free(e);
}

static int engine_create(gf_storage *st, gf_io_slot *slots, uint32_t nslots,
                         unsigned depth, void **out, char *why,
                         size_t why_len) {
  *out = NULL;
  if (st->ops->engine != &gf_http_engine) {
    snprintf(why, why_len, "the http engine reads http storages only");
    return -EINVAL;
  }
  http_engine *e = calloc(1, sizeof *e);
  if (!e) {
    snprintf(why, why_len, "out of memory for an http engine");
    return -ENOMEM;
  }
  gf_http_storage *hs = (gf_http_storage *)st;
  e->nslots = nslots ? nslots : 1;
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  unsigned lanes = gf_http_lanes_auto(&hs->remote);
  e->lane_of = calloc(e->nslots, sizeof *e->lane_of);
  e->load = calloc(lanes, sizeof *e->load);
  e->scratch = calloc(e->nslots, sizeof *e->scratch);
  e->done = calloc(e->nslots, sizeof *e->done);
  if (!e->lane_of || !e->load || !e->scratch || !e->done) {
    snprintf(why, why_len, "out of memory for an http engine");
    engine_destroy(e);
    return -ENOMEM;
  }
  int rc = gf_http_lanes_create(hs, slots, e->nslots, depth, lanes, on_done, e,
                                &e->lanes, why, why_len);
  if (rc < 0) {
    engine_destroy(e);
    return rc;
  }
  *out = e;
  return 0;
}

static int engine_push(void *p, const uint32_t *ids, unsigned n) {
  http_engine *e = p;
  unsigned lanes = gf_http_lanes_count(e->lanes);
  /* Each id to the lane with the fewest outstanding at that moment. */
  pthread_mutex_lock(&e->mu);
  for (unsigned i = 0; i < n; i++) {
    unsigned best = 0;
    for (unsigned k = 1; k < lanes; k++)
      if (e->load[k] < e->load[best])
        best = k;
    e->lane_of[ids[i]] = (uint16_t)best;
    e->load[best]++;
  }
  e->out += n;
  pthread_mutex_unlock(&e->mu);
  /* Each lane's share in one call (lane_of[id] is the pusher's until the
   * push: the lane's completion reads it only after). */
  for (unsigned k = 0; k < lanes; k++) {
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++)
      if (e->lane_of[ids[i]] == k)
        e->scratch[m++] = ids[i];
    if (m)
      gf_http_lanes_push(e->lanes, k, e->scratch, m);
  }
  return 0;
}

static int engine_reap(void *p, uint32_t *ids, unsigned max, unsigned min) {
  http_engine *e = p;
  unsigned n = 0;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    while (n < max && e->dcount) {
      ids[n++] = e->done[e->dhead];
      e->dhead = (e->dhead + 1) % e->nslots;
      e->dcount--;
      e->out--;
    }
    if (n >= min || n == max)
      break;
    if (!e->out)
      break; /* nothing outstanding: the caller asked too much */
    if (e->woken) {
      e->woken = false; /* the reader's owner has work */
      break;
    }
    pthread_cond_wait(&e->cv, &e->mu);
  }
  pthread_mutex_unlock(&e->mu);
  return (int)n;
}

/* Makes a reap blocked in another thread return, or the next one return
 * before it waits. */
static void engine_wake(void *p) {
  http_engine *e = p;
  pthread_mutex_lock(&e->mu);
  e->woken = true;
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

const gf_io_engine_ops gf_http_engine = {
    .name = "http",
    .create = engine_create,
    .destroy = engine_destroy,
    .push = engine_push,
    .reap = engine_reap,
    .wake = engine_wake,
};
