/* The streaming stage (stream.h): lanes that stream shards front to back
 * and parse them as the bytes come, the merge of the lanes' samples, the
 * shuffle buffer, and the positions handed to the takers. */
#include "pipeline/stream.h"

#include "format/wds_stream.h"
#include "pipeline/sampler.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* Entries a lane's queue holds (samples read ahead, or its epoch's end),
 * and their bytes at most (one sample whatever its size): a lane reads
 * ahead of the merge, so that one slower for a moment does not hold the
 * round robin up. */
#define QLEN 64u
#define LANE_AHEAD (8ull << 20)
/* How long a lane's stream waits for room in its ring before it ends its
 * request (a later request goes on from there): a transfer that moves no
 * byte for the storage's stall time counts as stalled. */
#define SINK_WAIT_NS (2ull * 1000000000ull)
#define NO_PAGE UINT32_MAX

enum { IT_FREE, IT_SAMPLE, IT_BAD, IT_END };

/* A sample (or a bad one, or a lane's epoch end) between a lane and a
 * taker. Its bytes lie in pages: its key (NUL-terminated), then its image,
 * or its error (a gf_error_info) for a bad one. */
typedef struct item {
  uint32_t kind;
  uint32_t page, npages; /* its first page; the others follow by next[] */
  uint32_t shard;
  uint64_t epoch, ordinal;
  uint64_t keylen, len; /* the key's bytes (with its NUL), the image's */
  uint64_t flen;        /* the asked fields' after it: per field its
                           length (8 bytes), then its bytes */
  int64_t label;
  int codec;
  uint32_t next_free;
} item;

/* A position handed out and not yet taken. */
typedef struct out_slot {
  bool used;
  uint64_t epoch, pos;
  uint32_t item;
} out_slot;

typedef struct lane {
  struct gf_stream *s;
  uint32_t id;
  pthread_t parse_th, pump_th;
  bool parse_started, pump_started;
  /* The ring between the pump (the shard's one GET) and the parser, under
   * mu: it holds the shard's bytes [lo, hi) (none below lo are needed:
   * the parser's back window). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *ring;
  uint64_t lo, hi;
  gf_object *job; /* the shard the pump streams, set by the parser */
  bool job_on, job_done, job_stop;
  bool paused;      /* the sink ended a request for want of room */
  bool pump_exited; /* the pump thread is gone (stopping) */
  int pump_rc;
  gf_error_info pump_err;
  uint8_t *scratch; /* max_sample bytes: a sample's taken members */
  /* Its queue to the merge, under the stage's mu. */
  uint32_t q[QLEN];
  uint32_t qhead, qlen;
  uint64_t qpages; /* the queued items' pages */
  bool done; /* the merge took its end of the current epoch */
} lane;

struct gf_stream {
  gf_stream_config c;
  uint32_t nlanes;
  pthread_mutex_t mu;
  /* Lanes wait on lane_cv (pages, room in their queue), takers on take_cv
   * (a lane's sample, a position's place); each is signalled only when
   * someone waits on it. */
  pthread_cond_t lane_cv, take_cv;
  uint32_t lane_waiting, take_waiting;
  bool emit_blocked;     /* a position's place was held: a free wakes takers */
  _Atomic bool stopping; /* the lanes end (restart, shutdown) */
  bool shut;             /* shutdown: takes fail */
  /* The arena and its pages. */
  uint8_t *arena;
  uint64_t arena_bytes;
  uint32_t npages;
  uint32_t *next;     /* a page's next in its item, or in the free list */
  uint32_t free_page; /* the free list's head */
  uint32_t free_pages;
  /* Items. */
  item *items;
  uint32_t nitems, free_item;
  /* The merge (under mu). */
  lane *lanes;
  uint64_t start_epoch;         /* where the lanes began */
  uint64_t cur_epoch;           /* the epoch being merged */
  uint64_t emitted;             /* its positions handed out */
  uint64_t skip_epoch, skip_to; /* positions before are dropped */
  uint32_t rr, lanes_done;
  uint64_t rng;
  uint32_t *buf; /* the shuffle buffer's items */
  uint32_t buf_count, buf_cap;
  uint64_t buf_pages;
  uint64_t shuffle_pages; /* the buffer is full at this many pages */
  uint32_t adds;          /* samples added since one last left */
  out_slot *out;
  uint32_t out_cap;
  /* Epoch lengths, published: slot e % 4 holds e + 1 and its length. */
  _Atomic uint64_t len_tag[4], len_val[4];
  /* Counters. */
  _Atomic uint64_t shards_done, samples, bytes, skipped, lost, restarts,
      wait_ns;
  /* Bad samples dropped (skip policy) by epoch: slot e % 8 holds epoch e's
   * (tag e + 1), for gf_stream_skipped. Under mu. */
  uint64_t skip_tag[8], skip_count[8];
  char last_skip[512];
  gf_error_info fatal; /* a lane's failure to start (code 0: none) */
};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint32_t lanes_of(const gf_stream_config *c) {
  uint32_t k = c->lanes ? c->lanes : GF_STREAM_LANES;
  uint32_t per_rank = (c->nshards + c->world - 1) / (c->world ? c->world : 1);
  if (k > per_rank)
    k = per_rank ? per_rank : 1;
  return k;
}

static uint64_t pages_for(uint64_t bytes) {
  return (bytes + GF_STREAM_PAGE - 1) / GF_STREAM_PAGE;
}

static uint32_t nfields_of(const gf_stream_config *c) {
  return c->fields ? c->fields->n : 0;
}

/* The asked fields' bytes in an item, at most. */
static uint64_t fields_max(const gf_stream_config *c) {
  return (uint64_t)nfields_of(c) * (8 + (c->fields ? c->fields->bytes : 0));
}

/* The most pages one item takes: its key, its image, its fields. */
static uint64_t item_pages(const gf_stream_config *c) {
  uint64_t payload = c->max_sample + fields_max(c);
  if (payload < sizeof(gf_error_info))
    payload = sizeof(gf_error_info);
  return pages_for(payload + GF_TAR_NAME_MAX + 1) + 1;
}

/* A lane's buffer for a sample's taken members: its image, its label,
 * its asked fields. */
static uint64_t scratch_of(const gf_stream_config *c) {
  return c->max_sample + fields_max(c) + 65536;
}

static uint64_t shuffle_bytes_of(const gf_stream_config *c) {
  return c->shuffle_bytes ? c->shuffle_bytes : GF_STREAM_SHUFFLE_BYTES;
}

static uint32_t shuffle_of(const gf_stream_config *c) {
  return c->shuffle && !c->ordered ? c->shuffle : 1;
}

/* Items alive at once, at most: the buffer's, the lanes' queues and the
 * ones each lane builds, the positions handed out, and one in the merge's
 * hands. */
static uint64_t items_of(const gf_stream_config *c, uint32_t lanes) {
  return (uint64_t)shuffle_of(c) + 1 + (uint64_t)lanes * (QLEN + 1) +
         c->takers + 1;
}

/* A lane's queue's pages at most, and one item it builds. */
static uint64_t lane_pages(const gf_stream_config *c) {
  uint64_t ip = item_pages(c), ahead = pages_for(LANE_AHEAD);
  return (ahead > ip ? ahead : ip) + ip;
}

static uint32_t out_cap_of(const gf_stream_config *c) {
  uint32_t n = 16;
  while (n < 2u * c->takers + 16u)
    n *= 2;
  return n;
}

void gf_stream_sizes(const gf_stream_config *c, uint64_t *arena,
                     uint64_t *tables) {
  uint32_t k = lanes_of(c);
  uint64_t ip = item_pages(c);
  /* The buffer: full at shuffle_bytes (in pages), one item more while
   * full; then every item that can be elsewhere at its largest. */
  uint64_t pages = pages_for(shuffle_bytes_of(c)) + ip +
                   (uint64_t)k * lane_pages(c) + ((uint64_t)c->takers + 1) * ip;
  uint64_t cap = (uint64_t)shuffle_of(c) + 1;
  /* A buffered sample of a page or two wastes up to a page: counted. */
  if (pages < cap + ip)
    pages = cap + ip;
  *arena = pages * GF_STREAM_PAGE;
  *tables = pages * sizeof(uint32_t) + items_of(c, k) * sizeof(item) +
            cap * sizeof(uint32_t) + out_cap_of(c) * sizeof(out_slot) +
            (uint64_t)k * (GF_STREAM_RING + scratch_of(c) + sizeof(lane));
}

/* ---- pages and items (under mu) ---------------------------------------- */

static void free_item(gf_stream *s, uint32_t i) {
  item *it = &s->items[i];
  uint32_t p = it->page;
  for (uint32_t k = 0; k < it->npages; k++) {
    uint32_t nx = s->next[p];
    s->next[p] = s->free_page;
    s->free_page = p;
    s->free_pages++;
    p = nx;
  }
  it->kind = IT_FREE;
  it->npages = 0;
  it->page = NO_PAGE;
  it->next_free = s->free_item;
  s->free_item = i;
  if (s->lane_waiting)
    pthread_cond_broadcast(&s->lane_cv);
  if (s->emit_blocked && s->take_waiting) {
    s->emit_blocked = false;
    pthread_cond_broadcast(&s->take_cv);
  }
}

/* Waits on cv under mu, counted in *waiting. */
static void wait_on(gf_stream *s, pthread_cond_t *cv, uint32_t *waiting) {
  (*waiting)++;
  pthread_cond_wait(cv, &s->mu);
  (*waiting)--;
}

/* An item of `bytes` bytes in pages; waits for them. Returns its index,
 * or UINT32_MAX when the lanes stop. */
static uint32_t alloc_item(gf_stream *s, uint64_t bytes) {
  uint64_t n = pages_for(bytes ? bytes : 1);
  while (!s->stopping && (s->free_pages < n || s->free_item == UINT32_MAX))
    wait_on(s, &s->lane_cv, &s->lane_waiting);
  if (s->stopping)
    return UINT32_MAX;
  uint32_t i = s->free_item;
  item *it = &s->items[i];
  s->free_item = it->next_free;
  memset(it, 0, sizeof *it);
  it->npages = (uint32_t)n;
  /* Pages popped from the free list, chained in order. */
  uint32_t first = NO_PAGE, last = NO_PAGE;
  for (uint64_t k = 0; k < n; k++) {
    uint32_t p = s->free_page;
    s->free_page = s->next[p];
    s->free_pages--;
    if (last == NO_PAGE)
      first = p;
    else
      s->next[last] = p;
    last = p;
  }
  it->page = first;
  return i;
}

/* Copies len bytes between an item's bytes at off and mem. */
static void item_io(gf_stream *s, const item *it, uint64_t off, uint8_t *mem,
                    uint64_t len, bool to_item) {
  uint32_t p = it->page;
  while (off >= GF_STREAM_PAGE) {
    p = s->next[p];
    off -= GF_STREAM_PAGE;
  }
  while (len) {
    uint64_t k = GF_STREAM_PAGE - off;
    if (k > len)
      k = len;
    uint8_t *pg = s->arena + (uint64_t)p * GF_STREAM_PAGE + off;
    if (to_item)
      memcpy(pg, mem, k);
    else
      memcpy(mem, pg, k);
    mem += k;
    len -= k;
    off = 0;
    p = s->next[p];
  }
}

/* ---- a lane: the pump (one GET) and the ring ---------------------------- */

static uint64_t held(const struct lane *ln);

static int sink(void *ctx, const uint8_t *data, size_t len) {
  lane *ln = ctx;
  pthread_mutex_lock(&ln->mu);
  size_t done = 0;
  uint64_t waited = 0;
  while (done < len) {
    if (ln->job_stop || ln->s->stopping) {
      pthread_mutex_unlock(&ln->mu);
      return done ? 0 : 1; /* stop before a call's first byte only */
    }
    uint64_t at = ln->hi;
    if (at < ln->lo) {
      /* Bytes the parser skipped past: not kept. */
      uint64_t k = ln->lo - at;
      if (k > len - done)
        k = len - done;
      ln->hi += k;
      done += k;
      continue;
    }
    uint64_t room = GF_STREAM_RING - held(ln);
    if (!room) {
      if (!done && waited >= SINK_WAIT_NS) {
        ln->paused = true;
        pthread_mutex_unlock(&ln->mu);
        return 1; /* the request ends; the pump asks again from hi */
      }
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100000000L;
      if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&ln->cv, &ln->mu, &ts);
      waited += 100000000ull;
      continue;
    }
    uint64_t k = len - done;
    if (k > room)
      k = room;
    uint64_t r = at % GF_STREAM_RING, first = GF_STREAM_RING - r;
    if (first > k)
      first = k;
    memcpy(ln->ring + r, data + done, first);
    memcpy(ln->ring, data + done + first, k - first);
    ln->hi += k;
    done += k;
    pthread_cond_broadcast(&ln->cv);
  }
  pthread_mutex_unlock(&ln->mu);
  atomic_fetch_add_explicit(&ln->s->bytes, len, memory_order_relaxed);
  return 0;
}

/* Bytes the ring holds now. Under the lane's mu. */
static uint64_t held(const lane *ln) {
  return ln->hi > ln->lo ? ln->hi - ln->lo : 0;
}

static void *pump_main(void *arg) {
  lane *ln = arg;
  pthread_mutex_lock(&ln->mu);
  for (;;) {
    while (!ln->job_on && !ln->s->stopping)
      pthread_cond_wait(&ln->cv, &ln->mu);
    if (ln->s->stopping)
      break;
    gf_object *o = ln->job;
    int rc = 0;
    while (!ln->job_stop && !ln->s->stopping && ln->hi < o->size) {
      /* A request that ended for want of room goes on once there is. */
      while (held(ln) >= GF_STREAM_RING && !ln->job_stop && !ln->s->stopping)
        pthread_cond_wait(&ln->cv, &ln->mu);
      if (ln->job_stop || ln->s->stopping)
        break;
      uint64_t from = ln->hi;
      ln->paused = false;
      pthread_mutex_unlock(&ln->mu);
      int64_t n = gf_object_stream(o, from, o->size - from, sink, ln);
      pthread_mutex_lock(&ln->mu);
      if (n < 0) {
        rc = (int)n;
        ln->pump_err = *gf_last_error();
        break;
      }
      if (!ln->paused && !ln->job_stop && !ln->s->stopping &&
          ln->hi < o->size) {
        rc = gf_fail(GF_ETRUNCATED, o->display, GF_NO_INDEX, ln->hi,
                     "the stream ended at byte %llu, before the shard's "
                     "size of %llu bytes",
                     (unsigned long long)ln->hi, (unsigned long long)o->size);
        ln->pump_err = *gf_last_error();
        break;
      }
    }
    ln->pump_rc = rc;
    ln->job_on = false;
    ln->job_done = true;
    pthread_cond_broadcast(&ln->cv);
  }
  /* Stopping: a parser that waits for its job's end is not left waiting. */
  ln->pump_exited = true;
  pthread_cond_broadcast(&ln->cv);
  pthread_mutex_unlock(&ln->mu);
  return NULL;
}

/* The parser's pull (gf_tar_read_fn): bytes [off, off + len) of the
 * shard from the ring, waiting for the pump. */
static int64_t pull(void *ctx, void *buf, uint64_t off, uint64_t len) {
  lane *ln = ctx;
  pthread_mutex_lock(&ln->mu);
  if (off < ln->lo) {
    pthread_mutex_unlock(&ln->mu);
    return gf_fail(GF_EINTERNAL, ln->job ? ln->job->display : NULL, GF_NO_INDEX,
                   off,
                   "the tar reader went back to byte %llu, before the "
                   "stream's window",
                   (unsigned long long)off);
  }
  /* Nothing before the back window of this pull is needed again. */
  uint64_t keep = off > GF_WDS_STREAM_BACK ? off - GF_WDS_STREAM_BACK : 0;
  if (keep > ln->lo) {
    ln->lo = keep;
    pthread_cond_broadcast(&ln->cv);
  }
  uint64_t got = 0;
  while (got < len) {
    uint64_t at = off + got;
    while (ln->hi <= at && !ln->job_done && !ln->s->stopping)
      pthread_cond_wait(&ln->cv, &ln->mu);
    if (ln->s->stopping) {
      pthread_mutex_unlock(&ln->mu);
      return gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "the stream was stopped");
    }
    if (ln->hi <= at) {
      int rc = ln->pump_rc;
      gf_error_info e = ln->pump_err;
      pthread_mutex_unlock(&ln->mu);
      if (rc < 0) {
        gf_error_restore(&e);
        return rc;
      }
      return (int64_t)got; /* the object ended */
    }
    uint64_t k = ln->hi - at;
    if (k > len - got)
      k = len - got;
    uint64_t r = at % GF_STREAM_RING, first = GF_STREAM_RING - r;
    if (first > k)
      first = k;
    memcpy((uint8_t *)buf + got, ln->ring + r, first);
    memcpy((uint8_t *)buf + got + first, ln->ring, k - first);
    got += k;
    uint64_t end = off + got;
    keep = end > GF_WDS_STREAM_BACK ? end - GF_WDS_STREAM_BACK : 0;
    if (keep > ln->lo && keep <= ln->hi) {
      ln->lo = keep;
      pthread_cond_broadcast(&ln->cv);
    }
  }
  pthread_mutex_unlock(&ln->mu);
  return (int64_t)got;
}

/* ---- a lane: the parser ------------------------------------------------- */

/* Puts item i in the lane's queue; waits for room. Returns 0, or
 * -ECANCELED when the lanes stop (the item freed). */
static int enqueue(lane *ln, uint32_t i) {
  gf_stream *s = ln->s;
  uint64_t n = s->items[i].npages, ahead = pages_for(LANE_AHEAD);
  while (!s->stopping &&
         (ln->qlen == QLEN || (ln->qlen && ln->qpages + n > ahead)))
    wait_on(s, &s->lane_cv, &s->lane_waiting);
  if (s->stopping) {
    free_item(s, i);
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
  uint32_t i = alloc_item(s, sizeof e + 1);
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
  item_io(s, it, 0, &nul, 1, true);
  item_io(s, it, 1, (uint8_t *)&e, sizeof e, true);
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
    uint32_t nf = nfields_of(&s->c);
    for (uint32_t f = 0; f < nf; f++)
      fl += 8 + (m->field_len[f] == GF_NO_INDEX ? 0 : m->field_len[f]);
    uint32_t i = alloc_item(s, kl + m->image_len + fl);
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
      item_io(s, it, 0, (uint8_t *)m->key, kl, true);
      item_io(s, it, kl, (uint8_t *)m->image, m->image_len, true);
      uint64_t at = kl + m->image_len;
      for (uint32_t f = 0; f < nf; f++) {
        uint8_t w[8];
        gf_put64(w, m->field_len[f]);
        item_io(s, it, at, w, 8, true);
        at += 8;
        if (m->field_len[f] != GF_NO_INDEX) {
          item_io(s, it, at, (uint8_t *)m->field[f], m->field_len[f], true);
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

/* Streams and parses one shard. Returns 0, -ECANCELED (stopping), or the
 * shard's error (recorded). */
static int read_shard(lane *ln, uint32_t shard, uint64_t epoch) {
  gf_stream *s = ln->s;
  gf_object *o = NULL;
  int rc = gf_object_open(s->c.st, s->c.shards[shard], 0, &o);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&ln->mu);
  ln->job = o;
  ln->lo = ln->hi = 0;
  ln->job_on = true;
  ln->job_done = ln->job_stop = false;
  ln->pump_rc = 0;
  pthread_cond_broadcast(&ln->cv);
  pthread_mutex_unlock(&ln->mu);
  parse_ctx p = {.ln = ln, .shard = shard, .epoch = epoch};
  gf_wds_stream_opts wo = {.rules = s->c.rules,
                           .fields = s->c.fields,
                           .buf = ln->scratch,
                           .max_bytes = scratch_of(&s->c)};
  gf_wds_stream_counts n;
  rc = gf_wds_stream_shard(o->display, o->size, pull, ln, &wo, on_sample, &p,
                           &n);
  gf_error_info e = *gf_last_error();
  pthread_mutex_lock(&ln->mu);
  ln->job_stop = true;
  pthread_cond_broadcast(&ln->cv);
  while (!ln->job_done && !ln->pump_exited)
    pthread_cond_wait(&ln->cv, &ln->mu);
  ln->job = NULL;
  pthread_mutex_unlock(&ln->mu);
  gf_object_close(o);
  if (rc < 0) {
    gf_error_restore(&e);
    return rc;
  }
  atomic_fetch_add_explicit(&s->shards_done, 1, memory_order_relaxed);
  return 0;
}

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

static void *parse_main(void *arg) {
  lane *ln = arg;
  gf_stream *s = ln->s;
  uint64_t count = rank_count(s);
  for (uint64_t e = s->start_epoch;; e++) {
    for (uint64_t j = ln->id; j < count; j += s->nlanes) {
      uint32_t sh = rank_shard(s, e, j);
      int rc = read_shard(ln, sh, e);
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
      wait_on(s, &s->lane_cv, &s->lane_waiting);
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

/* ---- the merge and the shuffle (under mu) ------------------------------- */

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void begin_epoch(gf_stream *s, uint64_t e) {
  s->cur_epoch = e;
  s->adds = 0;
  s->emitted = 0;
  s->rr = 0;
  s->lanes_done = 0;
  for (uint32_t i = 0; i < s->nlanes; i++)
    s->lanes[i].done = false;
  s->rng = gf_order_sub(gf_order_sub(s->c.seed, e), 4 + (uint64_t)s->c.rank);
}

static void publish_length(gf_stream *s, uint64_t e, uint64_t n) {
  atomic_store_explicit(&s->len_val[e % 4], n, memory_order_relaxed);
  atomic_store_explicit(&s->len_tag[e % 4], e + 1, memory_order_release);
}

/* Hands item i out at the current epoch's next position (dropped when
 * before the replay's start). Returns false when its place in the table
 * is still held (a position not yet taken). */
static bool emit(gf_stream *s, uint32_t i) {
  uint64_t pos = s->emitted;
  if (s->cur_epoch == s->skip_epoch && pos < s->skip_to) {
    free_item(s, i);
    s->emitted++;
    return true;
  }
  out_slot *o = &s->out[pos % s->out_cap];
  if (o->used) {
    s->emit_blocked = true;
    return false;
  }
  *o = (out_slot){.used = true, .epoch = s->cur_epoch, .pos = pos, .item = i};
  s->emitted++;
  return true;
}

/* One step of the merge. Returns 1 when it moved, 0 when it must wait
 * (a lane has nothing yet, or a position's place is held), and sets
 * *published when an epoch's length became known. */
static int step(gf_stream *s, bool *published) {
  if (s->lanes_done == s->nlanes && s->buf_count == 0) {
    publish_length(s, s->cur_epoch, s->emitted);
    *published = true;
    begin_epoch(s, s->cur_epoch + 1);
    return 1;
  }
  /* webdataset's shuffle(bufsize, initial): nothing leaves before the
   * buffer holds `initial` samples; then, while it is below its size, two
   * come in for each that leaves; full, one for one. */
  uint32_t size = shuffle_of(&s->c);
  uint32_t initial = size < GF_STREAM_INITIAL ? size : GF_STREAM_INITIAL;
  bool leave = s->buf_count > 0 &&
               (s->lanes_done == s->nlanes || s->buf_count >= size ||
                s->buf_pages >= s->shuffle_pages ||
                (s->buf_count >= initial && s->adds >= 2));
  if (leave) {
    uint32_t k = (uint32_t)(splitmix(&s->rng) % s->buf_count);
    uint32_t i = s->buf[k];
    if (!emit(s, i)) {
      s->rng -= 0x9E3779B97F4A7C15ull; /* not drawn after all */
      return 0;
    }
    s->buf[k] = s->buf[--s->buf_count];
    s->buf_pages -= s->items[i].npages;
    s->adds = 0;
    return 1;
  }
  lane *ln = &s->lanes[s->rr];
  while (ln->done) {
    s->rr = (s->rr + 1) % s->nlanes;
    ln = &s->lanes[s->rr];
  }
  if (!ln->qlen)
    return 0;
  uint32_t i = ln->q[ln->qhead];
  ln->qhead = (ln->qhead + 1) % QLEN;
  ln->qlen--;
  item *it = &s->items[i];
  ln->qpages -= it->npages;
  if (s->lane_waiting) /* the lane's queue has room */
    pthread_cond_broadcast(&s->lane_cv);
  s->rr = (s->rr + 1) % s->nlanes;
  if (it->kind == IT_END) {
    ln->done = true;
    s->lanes_done++;
    free_item(s, i);
    return 1;
  }
  if (it->kind == IT_BAD && s->c.skip_bad) {
    gf_error_info e;
    item_io(s, it, it->keylen, (uint8_t *)&e, sizeof e, false);
    gf_strlcpy(s->last_skip, e.message, sizeof s->last_skip);
    /* A replay meets again the ones dropped before its start. */
    if (s->cur_epoch != s->skip_epoch || s->emitted >= s->skip_to) {
      atomic_fetch_add_explicit(&s->skipped, 1, memory_order_relaxed);
      uint32_t r = (uint32_t)(s->cur_epoch % 8);
      if (s->skip_tag[r] != s->cur_epoch + 1) {
        s->skip_tag[r] = s->cur_epoch + 1;
        s->skip_count[r] = 0;
      }
      s->skip_count[r]++;
    }
    free_item(s, i);
    return 1;
  }
  s->buf[s->buf_count++] = i;
  s->buf_pages += it->npages;
  s->adds++;
  return 1;
}

/* ---- lanes started and stopped ------------------------------------------ */

static void stop_lanes(gf_stream *s) {
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_broadcast(&s->lane_cv);
  pthread_cond_broadcast(&s->take_cv);
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < s->nlanes; i++) {
    lane *ln = &s->lanes[i];
    pthread_mutex_lock(&ln->mu);
    pthread_cond_broadcast(&ln->cv);
    pthread_mutex_unlock(&ln->mu);
  }
  for (uint32_t i = 0; i < s->nlanes; i++) {
    lane *ln = &s->lanes[i];
    if (ln->parse_started)
      pthread_join(ln->parse_th, NULL);
    if (ln->pump_started)
      pthread_join(ln->pump_th, NULL);
    ln->parse_started = ln->pump_started = false;
  }
}

/* Drops every item and starts the lanes at position pos of epoch. */
static int start_lanes(gf_stream *s, uint64_t epoch, uint64_t pos) {
  s->stopping = false;
  s->free_page = NO_PAGE;
  s->free_pages = 0;
  for (uint32_t p = s->npages; p-- > 0;) {
    s->next[p] = s->free_page;
    s->free_page = p;
    s->free_pages++;
  }
  s->free_item = UINT32_MAX;
  for (uint32_t i = s->nitems; i-- > 0;) {
    s->items[i] = (item){.kind = IT_FREE, .page = NO_PAGE};
    s->items[i].next_free = s->free_item;
    s->free_item = i;
  }
  memset(s->out, 0, s->out_cap * sizeof *s->out);
  s->buf_count = 0;
  s->buf_pages = 0;
  s->adds = 0;
  s->start_epoch = epoch;
  s->skip_epoch = epoch;
  s->skip_to = pos;
  begin_epoch(s, epoch);
  for (uint32_t i = 0; i < s->nlanes; i++) {
    lane *ln = &s->lanes[i];
    ln->qhead = ln->qlen = 0;
    ln->qpages = 0;
    ln->job_on = ln->job_done = ln->job_stop = false;
    ln->pump_exited = false;
    ln->job = NULL;
    if (pthread_create(&ln->pump_th, NULL, pump_main, ln) != 0)
      return gf_fail(-EAGAIN, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot start a streaming lane's thread");
    ln->pump_started = true;
    if (pthread_create(&ln->parse_th, NULL, parse_main, ln) != 0)
      return gf_fail(-EAGAIN, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot start a streaming lane's thread");
    ln->parse_started = true;
  }
  return 0;
}

/* ---- the calls ---------------------------------------------------------- */

int gf_stream_create(const gf_stream_config *c, uint64_t epoch, uint64_t pos,
                     gf_stream **out) {
  *out = NULL;
  uint32_t world = c->world ? c->world : 1;
  if (c->nshards < world)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming mode deals shards to ranks whole: %u shards "
                   "cannot feed %u ranks (give at least one shard a rank, "
                   "or index the shards: `gpufeed index`)",
                   c->nshards, world);
  if (!c->max_sample || !c->rules || !c->st)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming stage: max_sample, rules and st are required");
  gf_stream *s = calloc(1, sizeof *s);
  if (!s)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  s->c = *c;
  s->c.world = world;
  s->nlanes = lanes_of(&s->c);
  uint64_t tables;
  gf_stream_sizes(&s->c, &s->arena_bytes, &tables);
  s->npages = (uint32_t)(s->arena_bytes / GF_STREAM_PAGE);
  s->nitems = (uint32_t)items_of(&s->c, s->nlanes);
  s->buf_cap = shuffle_of(&s->c) + 1;
  s->out_cap = out_cap_of(&s->c);
  s->shuffle_pages = pages_for(shuffle_bytes_of(&s->c));
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->lane_cv, NULL);
  pthread_cond_init(&s->take_cv, NULL);
  s->arena = mmap(NULL, s->arena_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s->arena == MAP_FAILED)
    s->arena = NULL;
  s->next = malloc((size_t)s->npages * sizeof *s->next);
  s->items = calloc(s->nitems, sizeof *s->items);
  s->buf = malloc((size_t)s->buf_cap * sizeof *s->buf);
  s->out = calloc(s->out_cap, sizeof *s->out);
  s->lanes = calloc(s->nlanes, sizeof *s->lanes);
  bool ok = s->arena && s->next && s->items && s->buf && s->out && s->lanes;
  for (uint32_t i = 0; ok && i < s->nlanes; i++) {
    lane *ln = &s->lanes[i];
    ln->s = s;
    ln->id = i;
    pthread_mutex_init(&ln->mu, NULL);
    pthread_cond_init(&ln->cv, NULL);
    ln->ring = malloc(GF_STREAM_RING);
    ln->scratch = malloc(scratch_of(c));
    ok = ln->ring && ln->scratch;
  }
  if (!ok) {
    gf_stream_destroy(s);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the streaming stage (%llu bytes of "
                   "arena)",
                   (unsigned long long)s->arena_bytes);
  }
  int rc = start_lanes(s, epoch, pos);
  if (rc < 0) {
    gf_stream_destroy(s);
    return rc;
  }
  *out = s;
  return 0;
}

void gf_stream_shutdown(gf_stream *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->shut = true;
  pthread_mutex_unlock(&s->mu);
  stop_lanes(s);
}

void gf_stream_destroy(gf_stream *s) {
  if (!s)
    return;
  gf_stream_shutdown(s);
  for (uint32_t i = 0; s->lanes && i < s->nlanes; i++) {
    lane *ln = &s->lanes[i];
    if (ln->s) {
      pthread_mutex_destroy(&ln->mu);
      pthread_cond_destroy(&ln->cv);
    }
    free(ln->ring);
    free(ln->scratch);
  }
  free(s->lanes);
  if (s->arena)
    munmap(s->arena, s->arena_bytes);
  free(s->next);
  free(s->items);
  free(s->buf);
  free(s->out);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->lane_cv);
  pthread_cond_destroy(&s->take_cv);
  free(s);
}

void gf_stream_restart(gf_stream *s, uint64_t epoch, uint64_t pos) {
  stop_lanes(s);
  atomic_fetch_add_explicit(&s->restarts, 1, memory_order_relaxed);
  pthread_mutex_lock(&s->mu);
  for (uint32_t e = 0; e < 4; e++)
    atomic_store(&s->len_tag[e], 0);
  int rc = start_lanes(s, epoch, pos);
  if (rc < 0)
    s->fatal = *gf_last_error();
  pthread_mutex_unlock(&s->mu);
}

void gf_stream_seek(gf_stream *s, uint64_t epoch, uint64_t pos) {
  pthread_mutex_lock(&s->mu);
  uint64_t n;
  bool ahead = false;
  if (s->cur_epoch == epoch && s->emitted <= pos) {
    ahead = true;
  } else if (s->cur_epoch == epoch + 1 && s->emitted == 0 &&
             gf_stream_epoch_length(s, epoch, &n) && pos >= n) {
    /* At the end of epoch: the merge has begun the next. */
    ahead = true;
    epoch = s->cur_epoch;
    pos = 0;
  }
  if (ahead && !s->fatal.code) {
    /* Positions handed out and not taken are dropped; the merge drops
     * the ones up to pos as they come. */
    for (uint32_t i = 0; i < s->out_cap; i++)
      if (s->out[i].used) {
        s->out[i].used = false;
        free_item(s, s->out[i].item);
      }
    s->skip_epoch = epoch;
    s->skip_to = pos;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  pthread_mutex_unlock(&s->mu);
  gf_stream_restart(s, epoch, pos);
}

int gf_stream_epoch_length(gf_stream *s, uint64_t epoch, uint64_t *n) {
  uint64_t tag =
      atomic_load_explicit(&s->len_tag[epoch % 4], memory_order_acquire);
  if (tag != epoch + 1)
    return 0;
  *n = atomic_load_explicit(&s->len_val[epoch % 4], memory_order_relaxed);
  return atomic_load_explicit(&s->len_tag[epoch % 4], memory_order_acquire) ==
         epoch + 1;
}

/* Takes position pos of epoch out of the table, if there: its item (now
 * the caller's until freed), else UINT32_MAX. Under mu. */
static uint32_t take_out(gf_stream *s, uint64_t epoch, uint64_t pos) {
  out_slot *o = &s->out[pos % s->out_cap];
  if (!o->used || o->epoch != epoch || o->pos != pos)
    return UINT32_MAX;
  o->used = false;
  return o->item;
}

/* Copies taken item i out (outside mu: its pages are the caller's until
 * freed; the copies of many takers run at once). Returns 1, or the
 * sample's error. */
static int copy_out(gf_stream *s, uint32_t i, uint8_t *dst, uint64_t cap,
                    const gf_stream_fields_out *fo, gf_stream_sample *out,
                    char *key, size_t keycap) {
  const item *it = &s->items[i];
  uint64_t kl = it->keylen < keycap ? it->keylen : keycap;
  item_io(s, it, 0, (uint8_t *)key, kl, false);
  if (kl)
    key[kl - 1] = '\0';
  *out = (gf_stream_sample){.len = it->len,
                            .label = it->label,
                            .codec = it->codec,
                            .shard = it->shard,
                            .ordinal = it->ordinal,
                            .id = ((uint64_t)it->shard << 40) |
                                  (it->ordinal & ((1ull << 40) - 1))};
  if (it->kind == IT_BAD) {
    gf_error_info e;
    item_io(s, it, it->keylen, (uint8_t *)&e, sizeof e, false);
    gf_error_restore(&e);
    return e.code < 0 ? e.code : GF_EINTERNAL;
  }
  if (it->len > cap) {
    char where[1100];
    gf_storage_name_display(s->c.st, s->c.shards[it->shard], where,
                            sizeof where);
    return gf_fail(GF_ELIMIT, where, GF_NO_INDEX, GF_NO_INDEX,
                   "sample '%s' (sample %llu of the shard): its image of %llu "
                   "bytes is larger than the %llu bytes of its place (raise "
                   "max_sample_bytes)",
                   key, (unsigned long long)it->ordinal,
                   (unsigned long long)it->len, (unsigned long long)cap);
  }
  item_io(s, it, it->keylen, dst, it->len, false);
  uint64_t at = it->keylen + it->len, fb = s->c.fields ? s->c.fields->bytes : 0;
  for (uint32_t f = 0; fo && f < nfields_of(&s->c); f++) {
    uint8_t w[8];
    item_io(s, it, at, w, 8, false);
    at += 8;
    uint64_t n = gf_le64(w);
    fo->len[f] = n;
    if (n != GF_NO_INDEX) {
      item_io(s, it, at, fo->data + (uint64_t)f * fb, n, false);
      at += n;
    }
  }
  atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
  return 1;
}

int gf_stream_take(gf_stream *s, uint64_t epoch, uint64_t pos, uint8_t *dst,
                   uint64_t cap, const gf_stream_fields_out *fo,
                   gf_stream_sample *out) {
  char key[256] = "";
  uint64_t waited = 0;
  bool published = false;
  uint32_t got = UINT32_MAX;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  for (;;) {
    if (s->shut) {
      rc = gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the streaming stage was shut down");
      break;
    }
    if (s->fatal.code) {
      gf_error_restore(&s->fatal);
      rc = s->fatal.code;
      break;
    }
    if ((got = take_out(s, epoch, pos)) != UINT32_MAX)
      break;
    uint64_t n;
    if (gf_stream_epoch_length(s, epoch, &n) && pos >= n) {
      rc = 0;
      break;
    }
    if (epoch < s->cur_epoch || (epoch == s->cur_epoch && pos < s->emitted)) {
      rc = gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming stage: position %llu of epoch %llu was taken "
                   "already or never handed out",
                   (unsigned long long)pos, (unsigned long long)epoch);
      break;
    }
    if (!step(s, &published)) {
      uint64_t w0 = now_ns();
      wait_on(s, &s->take_cv, &s->take_waiting);
      waited += now_ns() - w0;
    }
  }
  /* Positions this taker handed out on its way may be others'. */
  if (s->take_waiting)
    pthread_cond_broadcast(&s->take_cv);
  pthread_mutex_unlock(&s->mu);
  if (got != UINT32_MAX) {
    rc = copy_out(s, got, dst, cap, fo, out, key, sizeof key);
    pthread_mutex_lock(&s->mu);
    free_item(s, got);
    pthread_mutex_unlock(&s->mu);
  }
  if (rc < 0 && out && rc != -ECANCELED) {
    /* Name the sample's key where the error does not. */
    const gf_error_info *e = gf_last_error();
    if (!strstr(e->message, "sample '") && key[0] && rc != GF_EINTERNAL) {
      char what[300];
      snprintf(what, sizeof what, "sample '%.250s'", key);
      gf_fail_context(rc, NULL, GF_NO_INDEX, what);
    }
  }
  atomic_fetch_add_explicit(&s->wait_ns, waited, memory_order_relaxed);
  if (published && s->c.notify)
    s->c.notify(s->c.notify_ctx);
  return rc;
}

void gf_stream_counters_get(gf_stream *s, gf_stream_counters *out) {
  *out = (gf_stream_counters){.shards = atomic_load(&s->shards_done),
                              .samples = atomic_load(&s->samples),
                              .bytes = atomic_load(&s->bytes),
                              .skipped = atomic_load(&s->skipped),
                              .lost = atomic_load(&s->lost),
                              .restarts = atomic_load(&s->restarts),
                              .wait_ns = atomic_load(&s->wait_ns)};
}

uint64_t gf_stream_skipped(gf_stream *s, uint64_t epoch) {
  pthread_mutex_lock(&s->mu);
  uint64_t n = atomic_load(&s->skipped);
  for (uint32_t r = 0; r < 8; r++)
    if (s->skip_tag[r] > epoch) /* tag e + 1 > epoch: e >= epoch */
      n -= s->skip_count[r];
  pthread_mutex_unlock(&s->mu);
  return n;
}

void gf_stream_last_skip(gf_stream *s, char *buf, size_t cap) {
  pthread_mutex_lock(&s->mu);
  snprintf(buf, cap, "%s", s->last_skip);
  pthread_mutex_unlock(&s->mu);
}
