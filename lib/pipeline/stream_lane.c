/* A streaming lane (stream_impl.h): its pumps stream its shards, each in
 * one GET, into their rings, taking turns shard by shard; its parser
 * reads the rings' tar members as the bytes come and queues the samples
 * for the merge (stream.c). */
#include "pipeline/stream_impl.h"

#include "format/wds_stream.h"
#include "pipeline/sampler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a pump's stream waits for room in its ring before it ends its
 * request (a later request goes on from there): a transfer that moves no
 * byte for the storage's stall time counts as stalled. The pump of the
 * next shard fills its ring and waits there while the parser is in the
 * shard before. */
#define SINK_WAIT_NS (2ull * 1000000000ull)

/* ---- the lane's shards -------------------------------------------------- */

/* Rank's shard j of epoch e (j < its count), from the epoch's order. */
static uint32_t rank_shard(const gf_stream *s, uint64_t epoch, uint64_t j) {
  if (s->c.ordered)
    return (uint32_t)(s->c.rank + j * s->c.world);
  gf_perm p;
  uint64_t e = gf_order_sub(s->c.seed, epoch);
  gf_perm_init(&p, gf_order_sub(e, 3), s->c.nshards);
  return (uint32_t)gf_perm_apply(&p, s->c.rank + j * s->c.world);
}

static uint64_t rank_count(const gf_stream *s) {
  uint64_t n = s->c.nshards, r = s->c.rank, w = s->c.world;
  return n > r ? (n - r + w - 1) / w : 0;
}

/* The lane's shards an epoch: the rank's id, id + lanes, ... */
static uint64_t lane_count(const lane *ln) {
  uint64_t n = rank_count(ln->s);
  return n > ln->id ? (n - ln->id + ln->s->nlanes - 1) / ln->s->nlanes : 0;
}

/* The lane's shard number g of the run: its epoch and shard. */
static void lane_shard(const lane *ln, uint64_t g, uint64_t *epoch,
                       uint32_t *shard) {
  uint64_t per = lane_count(ln);
  *epoch = ln->s->start_epoch + g / per;
  *shard = rank_shard(ln->s, *epoch, ln->id + (g % per) * ln->s->nlanes);
}

/* ---- a pump: one GET a shard into its ring ------------------------------ */

/* Bytes the ring holds now. Under the pump's mu. */
static uint64_t held(const pump *pm) {
  return pm->hi > pm->lo ? pm->hi - pm->lo : 0;
}

static int sink(void *ctx, const uint8_t *data, size_t len) {
  pump *pm = ctx;
  gf_stream *s = pm->ln->s;
  pthread_mutex_lock(&pm->mu);
  size_t done = 0;
  uint64_t waited = 0;
  while (done < len) {
    if (pm->job_stop || s->stopping) {
      pthread_mutex_unlock(&pm->mu);
      return done ? 0 : 1; /* stop before a call's first byte only */
    }
    uint64_t at = pm->hi;
    if (at < pm->lo) {
      /* Bytes the parser skipped past: not kept. */
      uint64_t k = pm->lo - at;
      if (k > len - done)
        k = len - done;
      pm->hi += k;
      done += k;
      continue;
    }
    uint64_t room = GF_STREAM_RING - held(pm);
    if (!room) {
      if (!done && waited >= SINK_WAIT_NS) {
        pm->paused = true;
        pthread_mutex_unlock(&pm->mu);
        return 1; /* the request ends; the pump asks again from hi */
      }
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&pm->cv, &pm->mu, &ts);
      waited += 100000000ull;
      continue;
    }
    uint64_t k = len - done;
    if (k > room)
      k = room;
    uint64_t r = at % GF_STREAM_RING, first = GF_STREAM_RING - r;
    if (first > k)
      first = k;
    memcpy(pm->ring + r, data + done, first);
    memcpy(pm->ring, data + done + first, k - first);
    pm->hi += k;
    done += k;
    pthread_cond_broadcast(&pm->cv);
  }
  pthread_mutex_unlock(&pm->mu);
  atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
  return 0;
}

/* Streams the pump's job to its end, or until the parser stops it or the
 * stream fails (pump_rc). Under the pump's mu. */
static void stream_job(pump *pm) {
  gf_stream *s = pm->ln->s;
  gf_object *o = pm->job;
  int rc = 0;
  while (!pm->job_stop && !s->stopping && pm->hi < o->size) {
    /* A request that ended for want of room goes on once there is. */
    while (held(pm) >= GF_STREAM_RING && !pm->job_stop && !s->stopping)
      pthread_cond_wait(&pm->cv, &pm->mu);
    if (pm->job_stop || s->stopping)
      break;
    uint64_t from = pm->hi;
    pm->paused = false;
    pthread_mutex_unlock(&pm->mu);
    int64_t n = gf_object_stream(o, from, o->size - from, sink, pm);
    pthread_mutex_lock(&pm->mu);
    if (n < 0) {
      rc = (int)n;
      pm->pump_err = *gf_last_error();
      break;
    }
    if (!pm->paused && !pm->job_stop && !s->stopping && pm->hi < o->size) {
      rc = gf_fail(GF_ETRUNCATED, o->display, GF_NO_INDEX, pm->hi,
                   "the stream ended at byte %llu, before the shard's "
                   "size of %llu bytes",
                   (unsigned long long)pm->hi, (unsigned long long)o->size);
      pm->pump_err = *gf_last_error();
      break;
    }
  }
  pm->pump_rc = rc;
}

static void *pump_main(void *arg) {
  pump *pm = arg;
  lane *ln = pm->ln;
  gf_stream *s = ln->s;
  pthread_mutex_lock(&pm->mu);
  /* A lane with no shard (more lanes than a rank's shards) has no job. */
  for (uint64_t g = pm->idx; lane_count(ln) && !s->stopping;
       g += GF_STREAM_PUMPS) {
    uint64_t epoch;
    uint32_t shard;
    lane_shard(ln, g, &epoch, &shard);
    pthread_mutex_unlock(&pm->mu);
    gf_object *o = NULL;
    int rc = gf_object_open(s->c.st, s->c.shards[shard], 0, &o);
    gf_error_info e = *gf_last_error();
    pthread_mutex_lock(&pm->mu);
    pm->job = o;
    pm->job_g = g;
    pm->lo = pm->hi = 0;
    pm->open_rc = rc;
    pm->open_err = e;
    pm->pump_rc = 0;
    pm->job_ready = true;
    pm->job_done = pm->job_stop = pm->job_released = false;
    pthread_cond_broadcast(&pm->cv);
    if (rc == 0)
      stream_job(pm);
    pm->job_done = true;
    pthread_cond_broadcast(&pm->cv);
    while (!pm->job_released && !s->stopping)
      pthread_cond_wait(&pm->cv, &pm->mu);
    if (!pm->job_released)
      break; /* the parser may still name it: closed once joined */
    pm->job_ready = false;
    pm->job = NULL;
    gf_object_close(o);
  }
  while (!s->stopping)
    pthread_cond_wait(&pm->cv, &pm->mu);
  /* Stopping: a parser that waits for its job's end is not left waiting. */
  pm->exited = true;
  pthread_cond_broadcast(&pm->cv);
  pthread_mutex_unlock(&pm->mu);
  return NULL;
}

/* The parser's pull (gf_tar_read_fn): bytes [off, off + len) of the
 * shard from the pump's ring, waiting for it. */
static int64_t pull(void *ctx, void *buf, uint64_t off, uint64_t len) {
  pump *pm = ctx;
  gf_stream *s = pm->ln->s;
  pthread_mutex_lock(&pm->mu);
  if (off < pm->lo) {
    pthread_mutex_unlock(&pm->mu);
    return gf_fail(GF_EINTERNAL, pm->job ? pm->job->display : NULL, GF_NO_INDEX,
                   off,
                   "the tar reader went back to byte %llu, before the "
                   "stream's window",
                   (unsigned long long)off);
  }
  /* Nothing before the back window of this pull is needed again. */
  uint64_t keep = off > GF_WDS_STREAM_BACK ? off - GF_WDS_STREAM_BACK : 0;
  if (keep > pm->lo) {
    pm->lo = keep;
    pthread_cond_broadcast(&pm->cv);
  }
  uint64_t got = 0;
  while (got < len) {
    uint64_t at = off + got;
    while (pm->hi <= at && !pm->job_done && !s->stopping)
      pthread_cond_wait(&pm->cv, &pm->mu);
    if (s->stopping) {
      pthread_mutex_unlock(&pm->mu);
      return gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "the stream was stopped");
    }
    if (pm->hi <= at) {
      int rc = pm->pump_rc;
      gf_error_info e = pm->pump_err;
      pthread_mutex_unlock(&pm->mu);
      if (rc < 0) {
        gf_error_restore(&e);
        return rc;
      }
      return (int64_t)got; /* the object ended */
    }
    uint64_t k = pm->hi - at;
    if (k > len - got)
      k = len - got;
    uint64_t r = at % GF_STREAM_RING, first = GF_STREAM_RING - r;
    if (first > k)
      first = k;
    memcpy((uint8_t *)buf + got, pm->ring + r, first);
    memcpy((uint8_t *)buf + got + first, pm->ring, k - first);
    got += k;
    uint64_t end = off + got;
    keep = end > GF_WDS_STREAM_BACK ? end - GF_WDS_STREAM_BACK : 0;
    if (keep > pm->lo && keep <= pm->hi) {
      pm->lo = keep;
      pthread_cond_broadcast(&pm->cv);
    }
  }
  pthread_mutex_unlock(&pm->mu);
  return (int64_t)got;
}

/* ---- a lane: the parser ------------------------------------------------- */

/* Puts item i in the lane's queue; waits for room. Returns 0, or
 * -ECANCELED when the lanes stop (the item freed). Under the stage's mu. */
static int enqueue(lane *ln, uint32_t i) {
  gf_stream *s = ln->s;
  uint64_t n = s->items[i].npages, ahead = gf_stream__pages_for(LANE_AHEAD);
  while (!s->stopping &&
         (ln->qlen == QLEN || (ln->qlen && ln->qpages + n > ahead)))
    gf_stream__wait_on(s, &s->lane_cv, &s->lane_waiting);
  if (s->stopping) {
    gf_stream__free_item(s, i);
    return -ECANCELED;
  }
  ln->q[(ln->qhead + ln->qlen) % QLEN] = i;
  ln->qlen++;
  ln->qpages += n;
  if (s->take_waiting)
    pthread_cond_broadcast(&s->take_cv);
  return 0;
}

typedef struct parse_ctx {
  lane *ln;
  uint32_t shard;
  uint64_t epoch;
} parse_ctx;

/* A bad item holding the calling thread's last error. Under mu. */
static int post_error(lane *ln, uint32_t shard, uint64_t epoch,
                      uint64_t ordinal) {
  gf_stream *s = ln->s;
  gf_error_info e = *gf_last_error();
  uint32_t i = gf_stream__alloc_item(s, sizeof e + 1);
  if (i == UINT32_MAX)
    return -ECANCELED;
  item *it = &s->items[i];
  it->kind = IT_BAD;
  it->shard = shard;
  it->epoch = epoch;
  it->ordinal = ordinal;
  it->keylen = 1;
  it->len = sizeof e;
  uint8_t nul = 0;
  gf_stream__item_io(s, it, 0, &nul, 1, true);
  gf_stream__item_io(s, it, 1, (uint8_t *)&e, sizeof e, true);
  return enqueue(ln, i);
}

static int on_sample(void *ctx, const gf_wds_streamed *m) {
  parse_ctx *p = ctx;
  lane *ln = p->ln;
  gf_stream *s = ln->s;
  pthread_mutex_lock(&s->mu);
  int rc;
  if (m->rc < 0) {
    rc = post_error(ln, p->shard, p->epoch, m->ordinal);
  } else {
    uint64_t kl = strlen(m->key) + 1, fl = 0;
    uint32_t nf = gf_stream__nfields(&s->c);
    for (uint32_t f = 0; f < nf; f++)
      fl += 8 + (m->field_len[f] == GF_NO_INDEX ? 0 : m->field_len[f]);
    uint32_t i = gf_stream__alloc_item(s, kl + m->image_len + fl);
    if (i == UINT32_MAX) {
      rc = -ECANCELED;
    } else {
      item *it = &s->items[i];
      it->kind = IT_SAMPLE;
      it->shard = p->shard;
      it->epoch = p->epoch;
      it->ordinal = m->ordinal;
      it->keylen = kl;
      it->len = m->image_len;
      it->label = m->label;
      it->codec = m->codec;
      it->flen = fl;
      /* The pages are this lane's until queued: filled outside mu. */
      pthread_mutex_unlock(&s->mu);
      gf_stream__item_io(s, it, 0, (uint8_t *)m->key, kl, true);
      gf_stream__item_io(s, it, kl, (uint8_t *)m->image, m->image_len, true);
      uint64_t at = kl + m->image_len;
      for (uint32_t f = 0; f < nf; f++) {
        uint8_t w[8];
        gf_put64(w, m->field_len[f]);
        gf_stream__item_io(s, it, at, w, 8, true);
        at += 8;
        if (m->field_len[f] != GF_NO_INDEX) {
          gf_stream__item_io(s, it, at, (uint8_t *)m->field[f], m->field_len[f],
                             true);
          at += m->field_len[f];
        }
      }
      pthread_mutex_lock(&s->mu);
      rc = enqueue(ln, i);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* Parses the lane's shard g as its pump streams it. Returns 0, -ECANCELED
 * (stopping), or the shard's error (recorded). */
static int read_shard(lane *ln, uint64_t g, uint32_t shard, uint64_t epoch) {
  gf_stream *s = ln->s;
  pump *pm = &ln->pumps[g % GF_STREAM_PUMPS];
  pthread_mutex_lock(&pm->mu);
  while (!(pm->job_ready && pm->job_g == g) && !s->stopping)
    pthread_cond_wait(&pm->cv, &pm->mu);
  int rc = s->stopping ? -ECANCELED : pm->open_rc;
  if (rc < 0) { /* stopping, or the open failed (its error restored) */
    gf_error_info e = pm->open_err;
    pm->job_stop = pm->job_released = true;
    pthread_cond_broadcast(&pm->cv);
    pthread_mutex_unlock(&pm->mu);
    if (rc != -ECANCELED)
      gf_error_restore(&e);
    return rc;
  }
  gf_object *o = pm->job;
  pthread_mutex_unlock(&pm->mu);
  parse_ctx p = {.ln = ln, .shard = shard, .epoch = epoch};
  gf_wds_stream_opts wo = {.rules = s->c.rules,
                           .fields = s->c.fields,
                           .buf = ln->scratch,
                           .max_bytes = gf_stream__scratch(&s->c)};
  gf_wds_stream_counts n;
  rc = gf_wds_stream_shard(o->display, o->size, pull, pm, &wo, on_sample, &p,
                           &n);
  gf_error_info e = *gf_last_error();
  pthread_mutex_lock(&pm->mu);
  pm->job_stop = true;
  pthread_cond_broadcast(&pm->cv);
  while (!pm->job_done && !pm->exited)
    pthread_cond_wait(&pm->cv, &pm->mu);
  pm->job_released = true; /* the pump closes it and opens its next */
  pthread_cond_broadcast(&pm->cv);
  pthread_mutex_unlock(&pm->mu);
  if (rc < 0) {
    gf_error_restore(&e);
    return rc;
  }
  atomic_fetch_add_explicit(&s->shards_done, 1, memory_order_relaxed);
  return 0;
}

static void *parse_main(void *arg) {
  lane *ln = arg;
  gf_stream *s = ln->s;
  uint64_t per = lane_count(ln), g = 0;
  for (uint64_t e = s->start_epoch;; e++) {
    for (uint64_t k = 0; k < per; k++, g++) {
      uint64_t ge;
      uint32_t sh;
      lane_shard(ln, g, &ge, &sh); /* the pumps' mapping: ge == e */
      int rc = read_shard(ln, g, sh, e);
      if (rc == -ECANCELED || s->stopping)
        return NULL;
      if (rc < 0) {
        pthread_mutex_lock(&s->mu);
        if (s->c.skip_bad) {
          /* The rest of the shard is lost: said, counted. */
          atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
          gf_log(GF_LOG_WARN,
                 "streaming shards: the rest of a shard is skipped "
                 "(error_policy skip): %s",
                 gf_last_error()->message);
          gf_strlcpy(s->last_skip, gf_last_error()->message,
                     sizeof s->last_skip);
          rc = 0;
        } else {
          rc = post_error(ln, sh, e, UINT64_MAX);
        }
        pthread_mutex_unlock(&s->mu);
        if (rc == -ECANCELED)
          return NULL;
      }
    }
    pthread_mutex_lock(&s->mu);
    uint32_t i = UINT32_MAX;
    while (!s->stopping && s->free_item == UINT32_MAX)
      gf_stream__wait_on(s, &s->lane_cv, &s->lane_waiting);
    if (!s->stopping) {
      i = s->free_item;
      s->free_item = s->items[i].next_free;
      s->items[i] = (item){.kind = IT_END, .epoch = e, .page = NO_PAGE};
    }
    int rc = i == UINT32_MAX ? -ECANCELED : enqueue(ln, i);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
      return NULL;
  }
}

/* ---- set up, start, stop ------------------------------------------------ */

int gf_stream__lane_init(gf_stream *s, lane *ln, uint32_t id) {
  ln->s = s;
  ln->id = id;
  bool ok = true;
  for (uint32_t k = 0; k < GF_STREAM_PUMPS; k++) {
    pump *pm = &ln->pumps[k];
    pm->ln = ln;
    pm->idx = k;
    pthread_mutex_init(&pm->mu, NULL);
    pthread_cond_init(&pm->cv, NULL);
    pm->ring = malloc(GF_STREAM_RING);
    ok = ok && pm->ring;
  }
  ln->scratch = malloc(gf_stream__scratch(&s->c));
  return ok && ln->scratch ? 0 : -ENOMEM;
}

void gf_stream__lane_free(lane *ln) {
  if (!ln->s)
    return;
  for (uint32_t k = 0; k < GF_STREAM_PUMPS; k++) {
    pump *pm = &ln->pumps[k];
    pthread_mutex_destroy(&pm->mu);
    pthread_cond_destroy(&pm->cv);
    free(pm->ring);
  }
  free(ln->scratch);
}

int gf_stream__lane_start(lane *ln) {
  ln->qhead = ln->qlen = 0;
  ln->qpages = 0;
  for (uint32_t k = 0; k < GF_STREAM_PUMPS; k++) {
    pump *pm = &ln->pumps[k];
    pm->job_ready = pm->job_done = pm->job_stop = pm->job_released = false;
    pm->exited = false;
    pm->job = NULL;
    if (pthread_create(&pm->th, NULL, pump_main, pm) != 0)
      return gf_fail(-EAGAIN, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot start a streaming lane's thread");
    pm->started = true;
  }
  if (pthread_create(&ln->parse_th, NULL, parse_main, ln) != 0)
    return gf_fail(-EAGAIN, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot start a streaming lane's thread");
  ln->parse_started = true;
  return 0;
}

void gf_stream__lane_stop(lane *ln) {
  for (uint32_t k = 0; k < GF_STREAM_PUMPS; k++) {
    pump *pm = &ln->pumps[k];
    pthread_mutex_lock(&pm->mu);
    pthread_cond_broadcast(&pm->cv);
    pthread_mutex_unlock(&pm->mu);
  }
  if (ln->parse_started)
    pthread_join(ln->parse_th, NULL);
  ln->parse_started = false;
  for (uint32_t k = 0; k < GF_STREAM_PUMPS; k++) {
    pump *pm = &ln->pumps[k];
    if (pm->started)
      pthread_join(pm->th, NULL);
    pm->started = false;
    gf_object_close(pm->job);
    pm->job = NULL;
  }
}
