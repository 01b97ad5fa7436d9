/* The HTTP(S) engine's lanes (storage_http.h): a lane is a thread that
 * drives one libcurl multi handle. Up to its depth transfers are on the
 * wire at once (the rest wait in its queue), each a ranged GET whose body
 * goes straight into its slot's buffer; the multi handle keeps the lane's
 * connections alive, at most its share of max_connections, multiplexed
 * over HTTP/2 where the server offers it. A try that failed in a way
 * worth retrying waits for its time apart (a timer per transfer) while
 * the others go on; a retry goes on the wire before the queue's new
 * reads. Several lanes take the copies out of the sockets on several
 * cores: one thread tops out near 2 GB/s. */
#include "io/storage_http.h"

#include <curl/curl.h> /* the multi interface */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X_IDLE, X_QUEUED, X_WIRE, X_WAIT };

typedef struct lane_xfer {
  gf_http_xfer x;  /* first: CURLOPT_PRIVATE points at it */
  uint64_t want;   /* bytes asked of the server: the read, cut at the
                      object's end */
  uint64_t due_ms; /* X_WAIT: when the next try may start */
  uint8_t state;
  bool started;  /* its first try was made */
  uint16_t lane; /* the lane it was pushed to */
} lane_xfer;

typedef struct lane {
  struct gf_http_lanes *all;
  unsigned k; /* its index */
  pthread_t thread;
  bool started;
  unsigned depth; /* on the wire at most */
  CURLM *multi;
  CURL **idle;           /* easy handles off the wire (depth at most) */
  unsigned nidle, nmade; /* in idle; made in all */
  /* Pushed by gf_http_lanes_push, not yet taken by the thread: under mu. */
  pthread_mutex_t mu;
  uint32_t *in;
  uint32_t ihead, icount;
  bool stop;
  /* The thread's own. */
  uint32_t *queue; /* ids waiting for a place on the wire */
  uint32_t qhead, qcount;
  uint32_t *waiting; /* ids waiting for a retry's time */
  uint32_t nwaiting;
  uint32_t *done; /* ids complete, not yet handed on */
  uint32_t ndone;
  unsigned wire;   /* transfers in the multi handle */
  uint32_t *taken; /* scratch: what the thread took from in */
} lane;

struct gf_http_lanes {
  gf_http_storage *st;
  gf_io_slot *slots;
  uint32_t nslots;
  lane_xfer *xs; /* one a slot id: a slot is on one lane at a time */
  gf_http_lanes_done done;
  void *ctx;
  unsigned n;
  lane *lanes;
};

static void push_back(uint32_t *ring, uint32_t cap, uint32_t *head,
                      uint32_t *count, uint32_t id) {
  ring[(*head + *count) % cap] = id;
  (*count)++;
}

static uint32_t pop_front(uint32_t *ring, uint32_t cap, uint32_t *head,
                          uint32_t *count) {
  uint32_t id = ring[*head];
  *head = (*head + 1) % cap;
  (*count)--;
  return id;
}

static void complete(lane *l, uint32_t id) {
  l->all->xs[id].state = X_IDLE;
  l->done[l->ndone++] = id;
}

/* Slot id's read failed with code: its why names the object (the end of
 * a long name, so that the range, the answer and the tries fit). */
static void fail(lane *l, uint32_t id, int code, const char *why) {
  gf_io_slot *s = &l->all->slots[id];
  const char *name = s->req.obj->display;
  size_t n = strlen(name);
  s->result = code;
  int k = snprintf(s->why, sizeof s->why, "%s%s: ", n > 100 ? "..." : "",
                   n > 100 ? name + n - 97 : name);
  if (k > 0 && (size_t)k < sizeof s->why) /* the rest cut to fit */
    gf_strlcpy(s->why + k, why, sizeof s->why - (size_t)k);
  complete(l, id);
}

/* The server gave the `want` bytes asked: the read's result, as a local
 * file's read would have it where the object ends first. */
static void succeed(lane *l, uint32_t id) {
  gf_io_slot *s = &l->all->slots[id];
  lane_xfer *x = &l->all->xs[id];
  s->done = x->want;
  if (x->want == s->req.length || (s->req.flags & GF_READ_EOF_OK)) {
    s->result = (int64_t)x->want;
    complete(l, id);
    return;
  }
  char why[160];
  snprintf(why, sizeof why,
           "the object ends at byte %llu, inside bytes %llu-%llu asked",
           (unsigned long long)s->req.obj->size,
           (unsigned long long)s->req.offset,
           (unsigned long long)(s->req.offset + s->req.length - 1));
  fail(l, id, GF_ETRUNCATED, why);
}

/* A read pushed to this lane: set up, then queued (or complete at once). */
static void start(lane *l, uint32_t id) {
  gf_http_lanes *a = l->all;
  gf_io_slot *s = &a->slots[id];
  lane_xfer *x = &a->xs[id];
  const gf_object *o = s->req.obj;
  s->done = 0;
  s->result = 0;
  s->why[0] = '\0';
  if (o->st != &a->st->base) {
    fail(l, id, -EINVAL, "an object of another storage");
    return;
  }
  memset(x, 0, sizeof *x);
  x->lane = (uint16_t)l->k;
  x->want = s->req.offset >= o->size ? 0 : o->size - s->req.offset;
  if (x->want > s->req.length)
    x->want = s->req.length;
  if (!x->want) {
    succeed(l, id);
    return;
  }
  const gf_http_object *ho = (const gf_http_object *)o;
  x->x.st = a->st;
  x->x.url = ho->url;
  x->x.headers = ho->headers;
  x->x.ask.off = s->req.offset;
  x->x.ask.len = x->want;
  x->x.ask.size = o->size;
  x->x.ask.version = o->version;
  x->x.buf = s->req.buf;
  x->state = X_QUEUED;
  push_back(l->queue, a->nslots, &l->qhead, &l->qcount, id);
}

/* Puts queued transfers on the wire while there is room. */
static void pump(lane *l) {
  gf_http_lanes *a = l->all;
  while (l->qcount && l->wire < l->depth) {
    uint32_t id = pop_front(l->queue, a->nslots, &l->qhead, &l->qcount);
    lane_xfer *x = &a->xs[id];
    CURL *h = NULL;
    if (l->nidle)
      h = l->idle[--l->nidle];
    else if (l->nmade < l->depth && (h = gf_http_easy_new(a->st)))
      l->nmade++;
    if (!h) {
      fail(l, id, -ENOMEM, "out of memory for a libcurl handle");
      continue;
    }
    x->x.easy = h;
    if (!x->started) {
      x->started = true;
      gf_http_xfer_begin(&x->x);
    } else {
      gf_http_xfer_try(&x->x);
    }
    CURLMcode mc = curl_multi_add_handle(l->multi, h);
    if (mc) {
      l->idle[l->nidle++] = h;
      char why[128];
      snprintf(why, sizeof why, "libcurl: %s", curl_multi_strerror(mc));
      fail(l, id, mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE, why);
      continue;
    }
    a->slots[id].ops++;
    x->state = X_WIRE;
    l->wire++;
  }
}

/* Takes the transfers curl has finished. */
static void collect(lane *l) {
  gf_http_lanes *a = l->all;
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(l->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    CURL *h = m->easy_handle;
    CURLcode res = m->data.result;
    char *priv = NULL;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
    lane_xfer *x = (lane_xfer *)(void *)priv;
    uint32_t id = (uint32_t)(x - a->xs);
    curl_multi_remove_handle(l->multi, h);
    l->idle[l->nidle++] = h;
    l->wire--;
    int64_t wait;
    char why[512];
    int r = gf_http_xfer_end(&x->x, (int)res, &wait, why, sizeof why);
    if (r > 0) {
      succeed(l, id);
    } else if (r == 0) {
      x->state = X_WAIT;
      x->due_ms = gf_http_now_ms() + (uint64_t)wait;
      l->waiting[l->nwaiting++] = id;
      a->slots[id].retried++;
    } else {
      a->slots[id].done = x->x.got;
      fail(l, id, r, why);
    }
  }
}

/* The multi handle failed as a whole (out of memory): every transfer on
 * it fails with the reason, none is left on the wire. */
static void fail_wire(lane *l, CURLMcode mc) {
  gf_http_lanes *a = l->all;
  char why[128];
  snprintf(why, sizeof why, "libcurl multi handle: %s",
           curl_multi_strerror(mc));
  int code = mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE;
  for (uint32_t id = 0; id < a->nslots && l->wire; id++) {
    lane_xfer *x = &a->xs[id];
    if (x->state != X_WIRE || x->lane != l->k)
      continue;
    CURL *h = x->x.easy;
    if (curl_multi_remove_handle(l->multi, h) != CURLM_OK)
      continue;
    gf_http_xfer_drop(&x->x);
    l->idle[l->nidle++] = h;
    l->wire--;
    fail(l, id, code, why);
  }
}

/* Retries whose time has come go to the front of the queue; returns the
 * ms until the next one's (or `cap`). */
static uint64_t promote(lane *l, uint64_t now, uint64_t cap) {
  gf_http_lanes *a = l->all;
  uint64_t next = cap;
  for (uint32_t i = 0; i < l->nwaiting;) {
    uint32_t id = l->waiting[i];
    lane_xfer *x = &a->xs[id];
    if (x->due_ms <= now) {
      l->waiting[i] = l->waiting[--l->nwaiting];
      l->qhead = (l->qhead + a->nslots - 1) % a->nslots;
      l->queue[l->qhead] = id;
      l->qcount++;
      x->state = X_QUEUED;
      next = 0;
      continue;
    }
    if (x->due_ms - now < next)
      next = x->due_ms - now;
    i++;
  }
  return next;
}

/* Hands the completed ids on, in one call. */
static void flush(lane *l) {
  if (l->ndone) {
    l->all->done(l->all->ctx, l->done, l->ndone);
    l->ndone = 0;
  }
}

static void *lane_main(void *p) {
  lane *l = p;
  gf_http_lanes *a = l->all;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    bool stop = l->stop;
    uint32_t n = 0;
    while (!stop && l->icount)
      l->taken[n++] = pop_front(l->in, a->nslots, &l->ihead, &l->icount);
    pthread_mutex_unlock(&l->mu);
    if (stop)
      break;
    for (uint32_t i = 0; i < n; i++)
      start(l, l->taken[i]);
    promote(l, gf_http_now_ms(), 0);
    pump(l);
    int running;
    CURLMcode mc = curl_multi_perform(l->multi, &running);
    if (mc)
      fail_wire(l, mc);
    collect(l);
    flush(l);
    if (l->qcount && l->wire < l->depth)
      continue; /* a retry just queued: put it on the wire first */
    /* Wait for the wire, curl's own timers, the next retry's time, or a
     * push (curl_multi_wakeup: remembered for the next poll when it comes
     * before it). */
    uint64_t t = promote(l, gf_http_now_ms(), 1000);
    if (t == 0)
      continue;
    mc = curl_multi_poll(l->multi, NULL, 0, (int)t, NULL);
    if (mc)
      fail_wire(l, mc);
    flush(l);
  }
  return NULL;
}

static void lane_free(lane *l) {
  gf_http_lanes *a = l->all;
  if (l->multi && a->xs) {
    /* Removing a transfer stops it: no callback, no byte written into a
     * slot's buffer after this. The thread is gone: the wire is ours. */
    for (uint32_t i = 0; i < a->nslots && l->wire; i++) {
      lane_xfer *x = &a->xs[i];
      if (x->state == X_WIRE && x->lane == l->k &&
          curl_multi_remove_handle(l->multi, x->x.easy) == CURLM_OK) {
        gf_http_xfer_drop(&x->x);
        gf_http_easy_free(x->x.easy);
        x->state = X_IDLE;
        l->wire--;
      }
    }
  }
  for (unsigned i = 0; i < l->nidle; i++)
    gf_http_easy_free(l->idle[i]);
  if (l->multi)
    curl_multi_cleanup(l->multi);
  pthread_mutex_destroy(&l->mu);
  free(l->idle);
  free(l->in);
  free(l->queue);
  free(l->waiting);
  free(l->done);
  free(l->taken);
}

void gf_http_lanes_destroy(gf_http_lanes *a) {
  if (!a)
    return;
  for (unsigned k = 0; k < a->n; k++) {
    lane *l = &a->lanes[k];
    if (!l->started)
      continue;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_mutex_unlock(&l->mu);
    curl_multi_wakeup(l->multi);
    pthread_join(l->thread, NULL);
  }
  for (unsigned k = 0; k < a->n; k++)
    if (a->lanes[k].all)
      lane_free(&a->lanes[k]);
  free(a->lanes);
  free(a->xs);
  free(a);
}

static int lane_init(gf_http_lanes *a, lane *l, unsigned depth,
                     unsigned conns) {
  l->all = a;
  l->k = (unsigned)(l - a->lanes);
  l->depth = depth ? depth : 1;
  pthread_mutex_init(&l->mu, NULL);
  uint32_t c = a->nslots;
  l->idle = calloc(l->depth, sizeof *l->idle);
  l->in = calloc(c, sizeof *l->in);
  l->queue = calloc(c, sizeof *l->queue);
  l->waiting = calloc(c, sizeof *l->waiting);
  l->done = calloc(c, sizeof *l->done);
  l->taken = calloc(c, sizeof *l->taken);
  l->multi = curl_multi_init();
  if (!l->idle || !l->in || !l->queue || !l->waiting || !l->done || !l->taken ||
      !l->multi)
    return CURLM_OUT_OF_MEMORY;
  CURLMcode mc = curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                                   (long)(conns ? conns : 1));
  /* Idle connections kept: its share, not libcurl's default (four a
   * transfer under way at the time), which closes connections whenever
   * fewer transfers run for a moment and opens them again later. */
  if (!mc)
    mc = curl_multi_setopt(l->multi, CURLMOPT_MAXCONNECTS,
                           (long)(conns ? conns : 1));
  if (!mc)
    mc = curl_multi_setopt(l->multi, CURLMOPT_PIPELINING,
                           (long)CURLPIPE_MULTIPLEX);
  return (int)mc;
}

int gf_http_lanes_create(gf_http_storage *st, gf_io_slot *slots,
                         uint32_t nslots, unsigned depth, unsigned nlanes,
                         gf_http_lanes_done done, void *ctx,
                         gf_http_lanes **out, char *why, size_t why_len) {
  *out = NULL;
  gf_http_lanes *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(why, why_len, "out of memory for an http engine");
    return -ENOMEM;
  }
  a->st = st;
  a->slots = slots;
  a->nslots = nslots ? nslots : 1;
  a->done = done;
  a->ctx = ctx;
  if (!depth)
    depth = 1;
  if (depth > a->nslots)
    depth = a->nslots;
  a->n = nlanes < 1 ? 1 : nlanes > depth ? depth : nlanes;
  a->xs = calloc(a->nslots, sizeof *a->xs);
  a->lanes = calloc(a->n, sizeof *a->lanes);
  if (!a->xs || !a->lanes) {
    free(a->xs);
    free(a->lanes);
    free(a);
    snprintf(why, why_len, "out of memory for an http engine");
    return -ENOMEM;
  }
  /* The depth and the connections shared out, the remainders to the
   * first lanes. */
  unsigned conns = st->remote.max_connections;
  for (unsigned k = 0; k < a->n; k++) {
    lane *l = &a->lanes[k];
    unsigned d = depth / a->n + (k < depth % a->n);
    unsigned c = conns / a->n + (k < conns % a->n);
    int mc = lane_init(a, l, d, c);
    if (mc) {
      snprintf(why, why_len, "an http engine: libcurl multi handle: %s",
               curl_multi_strerror((CURLMcode)mc));
      gf_http_lanes_destroy(a);
      return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE;
    }
  }
  for (unsigned k = 0; k < a->n; k++) {
    lane *l = &a->lanes[k];
    int rc = pthread_create(&l->thread, NULL, lane_main, l);
    if (rc) {
      snprintf(why, why_len, "an http engine: pthread_create: %s",
               strerror(rc));
      gf_http_lanes_destroy(a);
      return -rc;
    }
    l->started = true;
  }
  *out = a;
  return 0;
}

unsigned gf_http_lanes_count(const gf_http_lanes *a) { return a->n; }

void gf_http_lanes_push(gf_http_lanes *a, unsigned k, const uint32_t *ids,
                        unsigned n) {
  lane *l = &a->lanes[k];
  pthread_mutex_lock(&l->mu);
  for (unsigned i = 0; i < n; i++)
    push_back(l->in, a->nslots, &l->ihead, &l->icount, ids[i]);
  pthread_mutex_unlock(&l->mu);
  curl_multi_wakeup(l->multi);
}
