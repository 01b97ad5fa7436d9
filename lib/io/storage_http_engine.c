/* The HTTP(S) storage's engine for the reader (io/backend.h): one libcurl
 * multi handle per reader, driven from the reader's thread. Up to `depth`
 * transfers are on the wire at once (the rest wait in a queue), each a
 * ranged GET whose body goes straight into its slot's buffer; the multi
 * handle keeps the connections alive, at most max_connections to the
 * server, multiplexed over HTTP/2 where the server offers it. A try that
 * failed in a way worth retrying waits for its time apart (a timer per
 * transfer, looked at by reap) while the others go on; a retry goes on
 * the wire before the queue's new reads. */
#include "io/storage_http.h"

#include "io/backend.h"

#include <curl/curl.h> /* the multi interface */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { X_IDLE, X_QUEUED, X_WIRE, X_WAIT };

typedef struct eng_xfer {
  gf_http_xfer x;  /* first: CURLOPT_PRIVATE points at it */
  uint64_t want;   /* bytes asked of the server: the read, cut at the
                      object's end */
  uint64_t due_ms; /* X_WAIT: when the next try may start */
  uint8_t state;
  bool started; /* its first try was made */
} eng_xfer;

typedef struct http_engine {
  gf_http_storage *st;
  gf_io_slot *slots;
  uint32_t nslots;
  unsigned depth;
  CURLM *multi;
  eng_xfer *xs;          /* one a slot id */
  CURL **idle;           /* easy handles off the wire (depth at most) */
  unsigned nidle, nmade; /* in idle; made in all */
  uint32_t *queue;       /* ids waiting for a place on the wire */
  uint32_t qhead, qcount;
  uint32_t *done; /* ids complete, not yet reaped */
  uint32_t dhead, dcount;
  uint32_t *waiting; /* ids waiting for a retry's time */
  uint32_t nwaiting;
  unsigned wire;     /* transfers in the multi handle */
  atomic_bool woken; /* engine_wake since reap last looked */
} http_engine;

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

static void complete(http_engine *e, uint32_t id) {
  e->xs[id].state = X_IDLE;
  push_back(e->done, e->nslots, &e->dhead, &e->dcount, id);
}

/* Slot id's read failed with code: its why names the object (the end of
 * a long name, so that the range, the answer and the tries fit). */
static void fail(http_engine *e, uint32_t id, int code, const char *why) {
  gf_io_slot *s = &e->slots[id];
  const char *name = s->req.obj->display;
  size_t n = strlen(name);
  s->result = code;
  int k = snprintf(s->why, sizeof s->why, "%s%s: ", n > 100 ? "..." : "",
                   n > 100 ? name + n - 97 : name);
  if (k > 0 && (size_t)k < sizeof s->why) /* the rest cut to fit */
    gf_strlcpy(s->why + k, why, sizeof s->why - (size_t)k);
  complete(e, id);
}

/* The server gave the `want` bytes asked: the read's result, as a local
 * file's read would have it where the object ends first. */
static void succeed(http_engine *e, uint32_t id) {
  gf_io_slot *s = &e->slots[id];
  eng_xfer *x = &e->xs[id];
  s->done = x->want;
  if (x->want == s->req.length || (s->req.flags & GF_READ_EOF_OK)) {
    s->result = (int64_t)x->want;
    complete(e, id);
    return;
  }
  char why[160];
  snprintf(why, sizeof why,
           "the object ends at byte %llu, inside bytes %llu-%llu asked",
           (unsigned long long)s->req.obj->size,
           (unsigned long long)s->req.offset,
           (unsigned long long)(s->req.offset + s->req.length - 1));
  fail(e, id, GF_ETRUNCATED, why);
}

static void engine_destroy(void *p) {
  http_engine *e = p;
  if (!e)
    return;
  if (e->xs && e->multi) {
    /* Removing a transfer stops it: no callback, no byte written into
     * a slot's buffer after this. */
    for (uint32_t i = 0; i < e->nslots; i++)
      if (e->xs[i].state == X_WIRE) {
        curl_multi_remove_handle(e->multi, e->xs[i].x.easy);
        gf_http_easy_free(e->xs[i].x.easy);
      }
  }
  for (unsigned i = 0; i < e->nidle; i++)
    gf_http_easy_free(e->idle[i]);
  if (e->multi)
    curl_multi_cleanup(e->multi);
  free(e->xs);
  free(e->idle);
  free(e->queue);
  free(e->done);
  free(e->waiting);
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
  e->st = (gf_http_storage *)st;
  e->slots = slots;
  e->nslots = nslots ? nslots : 1;
  e->depth = depth ? depth : 1;
  if (e->depth > e->nslots)
    e->depth = e->nslots;
  e->xs = calloc(e->nslots, sizeof *e->xs);
  e->idle = calloc(e->depth, sizeof *e->idle);
  e->queue = calloc(e->nslots, sizeof *e->queue);
  e->done = calloc(e->nslots, sizeof *e->done);
  e->waiting = calloc(e->nslots, sizeof *e->waiting);
  e->multi = curl_multi_init();
  CURLMcode mc = CURLM_OUT_OF_MEMORY;
  if (e->xs && e->idle && e->queue && e->done && e->waiting && e->multi) {
    mc = curl_multi_setopt(e->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                           (long)e->st->remote.max_connections);
    if (!mc)
      mc = curl_multi_setopt(e->multi, CURLMOPT_PIPELINING,
                             (long)CURLPIPE_MULTIPLEX);
  }
  if (mc) {
    snprintf(why, why_len, "an http engine: libcurl multi handle: %s",
             curl_multi_strerror(mc));
    engine_destroy(e);
    return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE;
  }
  *out = e;
  return 0;
}

/* Puts queued transfers on the wire while there is room. */
static void pump(http_engine *e) {
  while (e->qcount && e->wire < e->depth) {
    uint32_t id = pop_front(e->queue, e->nslots, &e->qhead, &e->qcount);
    eng_xfer *x = &e->xs[id];
    CURL *h = NULL;
    if (e->nidle)
      h = e->idle[--e->nidle];
    else if (e->nmade < e->depth && (h = gf_http_easy_new(e->st)))
      e->nmade++;
    if (!h) {
      fail(e, id, -ENOMEM, "out of memory for a libcurl handle");
      continue;
    }
    x->x.easy = h;
    if (!x->started) {
      x->started = true;
      gf_http_xfer_begin(&x->x);
    } else {
      gf_http_xfer_try(&x->x);
    }
    CURLMcode mc = curl_multi_add_handle(e->multi, h);
    if (mc) {
      e->idle[e->nidle++] = h;
      char why[128];
      snprintf(why, sizeof why, "libcurl: %s", curl_multi_strerror(mc));
      fail(e, id, mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE, why);
      continue;
    }
    e->slots[id].ops++;
    x->state = X_WIRE;
    e->wire++;
  }
}

static int engine_push(void *p, const uint32_t *ids, unsigned n) {
  http_engine *e = p;
  for (unsigned i = 0; i < n; i++) {
    uint32_t id = ids[i];
    gf_io_slot *s = &e->slots[id];
    eng_xfer *x = &e->xs[id];
    const gf_object *o = s->req.obj;
    s->done = 0;
    s->result = 0;
    s->why[0] = '\0';
    if (o->st != &e->st->base) {
      fail(e, id, -EINVAL, "an object of another storage");
      continue;
    }
    memset(x, 0, sizeof *x);
    x->want = s->req.offset >= o->size ? 0 : o->size - s->req.offset;
    if (x->want > s->req.length)
      x->want = s->req.length;
    if (!x->want) {
      succeed(e, id);
      continue;
    }
    const gf_http_object *ho = (const gf_http_object *)o;
    x->x.st = e->st;
    x->x.url = ho->url;
    x->x.headers = ho->headers;
    x->x.ask.off = s->req.offset;
    x->x.ask.len = x->want;
    x->x.ask.size = o->size;
    x->x.ask.version = o->version;
    x->x.buf = s->req.buf;
    x->state = X_QUEUED;
    push_back(e->queue, e->nslots, &e->qhead, &e->qcount, id);
  }
  pump(e);
  return 0;
}

/* Takes the transfers curl has finished. */
static void collect(http_engine *e) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(e->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    CURL *h = m->easy_handle;
    CURLcode res = m->data.result;
    char *priv = NULL;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
    eng_xfer *x = (eng_xfer *)(void *)priv;
    uint32_t id = (uint32_t)(x - e->xs);
    curl_multi_remove_handle(e->multi, h);
    e->idle[e->nidle++] = h;
    e->wire--;
    int64_t wait;
    char why[512];
    int r = gf_http_xfer_end(&x->x, (int)res, &wait, why, sizeof why);
    if (r > 0) {
      succeed(e, id);
    } else if (r == 0) {
      x->state = X_WAIT;
      x->due_ms = gf_http_now_ms() + (uint64_t)wait;
      e->waiting[e->nwaiting++] = id;
      e->slots[id].retried++;
    } else {
      e->slots[id].done = x->x.got;
      fail(e, id, r, why);
    }
  }
}

/* Retries whose time has come go to the front of the queue; returns the
 * ms until the next one's (or `cap`). */
static uint64_t promote(http_engine *e, uint64_t now, uint64_t cap) {
  uint64_t next = cap;
  for (uint32_t i = 0; i < e->nwaiting;) {
    uint32_t id = e->waiting[i];
    eng_xfer *x = &e->xs[id];
    if (x->due_ms <= now) {
      e->waiting[i] = e->waiting[--e->nwaiting];
      e->qhead = (e->qhead + e->nslots - 1) % e->nslots;
      e->queue[e->qhead] = id;
      e->qcount++;
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

static int engine_reap(void *p, uint32_t *ids, unsigned max, unsigned min) {
  http_engine *e = p;
  unsigned n = 0;
  for (;;) {
    promote(e, gf_http_now_ms(), 0);
    pump(e);
    int running;
    CURLMcode mc = curl_multi_perform(e->multi, &running);
    if (mc)
      return gf_fail(mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE,
                     gf_storage_display(&e->st->base), GF_NO_INDEX, GF_NO_INDEX,
                     "libcurl multi handle: %s", curl_multi_strerror(mc));
    collect(e);
    while (n < max && e->dcount)
      ids[n++] = pop_front(e->done, e->nslots, &e->dhead, &e->dcount);
    if (n >= min || n == max)
      return (int)n;
    if (!e->wire && !e->qcount && !e->nwaiting && !e->dcount)
      return (int)n; /* nothing outstanding: the caller asked too much */
    if (e->qcount && e->wire < e->depth)
      continue; /* a retry just queued: put it on the wire first */
    /* Wait for the wire, curl's own timers, or the next retry's time. */
    uint64_t t = promote(e, gf_http_now_ms(), 1000);
    if (t == 0)
      continue;
    if (atomic_exchange(&e->woken, false))
      return (int)n; /* woken before the wait: return what there is */
    mc = curl_multi_poll(e->multi, NULL, 0, (int)t, NULL);
    if (mc)
      return gf_fail(mc == CURLM_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE,
                     gf_storage_display(&e->st->base), GF_NO_INDEX, GF_NO_INDEX,
                     "libcurl multi handle: %s", curl_multi_strerror(mc));
    if (atomic_exchange(&e->woken, false))
      return (int)n; /* engine_wake: the reader's owner has work */
  }
}

/* Makes a reap blocked in curl_multi_poll return (curl_multi_wakeup is
 * safe from any thread), or the next one return before it waits. */
static void engine_wake(void *p) {
  http_engine *e = p;
  atomic_store(&e->woken, true);
  curl_multi_wakeup(e->multi);
}

const gf_io_engine_ops gf_http_engine = {
    .name = "http",
    .create = engine_create,
    .destroy = engine_destroy,
    .push = engine_push,
    .reap = engine_reap,
    .wake = engine_wake,
};
