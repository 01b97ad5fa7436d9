/* The S3 uploader's threads: what each takes from the queue (control
 * requests first, then parts), how each kind of request is made (its
 * method, query, body and hash) and what each needs of a 2xx reply (a
 * part's ETag, the upload id, CompleteMultipartUpload's body), and the
 * callers' side of the queue: hand work over, wait for it, cancel what
 * has not started. */
#include "io/s3_upload_queue.h"

#include "io/s3_sigv4.h"
#include "io/s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void count(_Atomic uint64_t *n, uint64_t v) {
  atomic_fetch_add_explicit(n, v, memory_order_relaxed);
}

/* One request of a call, as s3_request.c runs it, and what its
 * callbacks need. */
typedef struct request {
  gf_s3_req_desc d;
  gf_s3_kind kind;
  gf_s3_call *up;
  uint32_t part;  /* GF_S3_K_PART: 1-based */
  char hash[65];  /* the body's hex SHA-256 */
  char what[120]; /* for messages: "PUT part 3 of 5" */
} request;

static bool stopped(void *ctx) {
  const request *rq = ctx;
  return atomic_load(&rq->up->u->cancelled) || atomic_load(&rq->up->stop);
}

/* A 2xx: what the kind needs of it. */
static int accept_reply(void *ctx, const gf_s3_req *r, gf_s3_error *e,
                        bool *retry, char *cause, size_t cap) {
  const request *rq = ctx;
  gf_s3_call *up = rq->up;
  *retry = false;
  char why[300];
  switch (rq->kind) {
  case GF_S3_K_PART:
    if (!r->reply.etag[0] || r->reply.etag_long) {
      snprintf(cause, cap, "HTTP %d without %s ETag", r->reply.status,
               r->reply.etag_long ? "a usable (too long)" : "an");
      return GF_EREPLY;
    }
    /* The slot is this thread's alone until the part is counted done. */
    gf_strlcpy(up->etags[rq->part - 1], r->reply.etag, GF_VERSION_TAG_MAX);
    return 0;
  case GF_S3_K_CREATE:
    if (r->bover ||
        gf_s3_xml_upload_id(r->body, r->blen, up->upload_id,
                            sizeof up->upload_id, why, sizeof why) < 0) {
      snprintf(cause, cap, "HTTP %d with no upload id: %s", r->reply.status,
               r->bover ? "the body is too long" : why);
      return GF_EREPLY;
    }
    return 0;
  case GF_S3_K_COMPLETE: {
    int x = r->bover ? -EPROTO
                     : gf_s3_xml_complete(r->body, r->blen, NULL, 0, e, why,
                                          sizeof why);
    if (x == 0 || x == 1) /* 1: S3 may answer 200 and fail in the body */
      return x;
    snprintf(cause, cap, "HTTP %d, a reply that is not S3's: %s",
             r->reply.status, r->bover ? "the body is too long" : why);
    return GF_EREPLY;
  }
  default:
    return 0;
  }
}

/* Runs rq (its kind, up, what and body set) on this thread. */
static int perform(gf_s3_worker *w, request *rq, const char *method,
                   const char *url, char *why, size_t cap) {
  gf_s3_uploader *u = w->u;
  gf_s3_kind k = rq->kind;
  rq->d.method = method;
  rq->d.url = url;
  rq->d.hash = rq->hash;
  rq->d.reply_max = k == GF_S3_K_CREATE || k == GF_S3_K_COMPLETE
                        ? GF_S3_XML_MAX
                        : GF_S3_REQ_BODY_MAX;
  rq->d.data = k == GF_S3_K_PUT || k == GF_S3_K_PART;
  rq->d.gone_ok = k == GF_S3_K_DELETE || k == GF_S3_K_ABORT;
  rq->d.what = rq->what;
  rq->d.shown = rq->up->shown;
  /* An abort is never cut; nor a create, whose upload, made but not
   * known, could then not be aborted. */
  rq->d.stopped = k != GF_S3_K_ABORT && k != GF_S3_K_CREATE ? stopped : NULL;
  rq->d.accept = accept_reply;
  rq->d.ctx = rq;
  return gf_s3_req_run(&w->req, u->c, &u->remote, &rq->d, &u->n, why, cap);
}

/* ---- the threads' work -------------------------------------------------- */

/* The first failure of a call is its outcome; its other parts stop and no
 * more are handed out. Under u->mu. */
static void call_fail(gf_s3_call *up, int rc, const char *why) {
  gf_s3_uploader *u = up->u;
  if (!up->rc) {
    up->rc = rc;
    gf_strlcpy(up->why, why, sizeof up->why);
  }
  atomic_store(&up->stop, true);
  if (up->queued) {
    gf_s3_call **p = &u->qhead, *prev = NULL;
    while (*p && *p != up) {
      prev = *p;
      p = &(*p)->qnext;
    }
    if (*p) {
      *p = up->qnext;
      if (u->qtail == up)
        u->qtail = prev;
    }
    up->queued = false;
    up->qnext = NULL;
  }
  pthread_cond_broadcast(&up->cv);
}

/* Reads a part's bytes of the call's file into the thread's buffer.
 * Returns 0 or a code with why. */
static int read_part(gf_s3_worker *w, gf_s3_call *up, uint64_t off,
                     uint64_t len, char *why, size_t cap) {
  if (!w->buf && !(w->buf = malloc(w->u->part_size))) {
    snprintf(why, cap, "out of memory for a part buffer of %llu bytes",
             (unsigned long long)w->u->part_size);
    return -ENOMEM;
  }
  uint64_t got = 0;
  while (got < len) {
    size_t ask = len - got > (1u << 30) ? (1u << 30) : (size_t)(len - got);
    ssize_t n = pread(up->fd, w->buf + got, ask, (off_t)(off + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      snprintf(why, cap, "reading %.300s at byte %llu: %s", up->path,
               (unsigned long long)(off + got), strerror(e));
      return -e;
    }
    if (n == 0) {
      snprintf(why, cap,
               "%.300s ended at byte %llu, before its %llu bytes: it "
               "changed during the upload",
               up->path, (unsigned long long)(off + got),
               (unsigned long long)up->size);
      return GF_ECHANGED;
    }
    got += (uint64_t)n;
  }
  return 0;
}

/* Part k (0-based) of a call: read, hashed, PUT. */
static void run_part(gf_s3_worker *w, gf_s3_call *up, uint32_t k) {
  gf_s3_uploader *u = w->u;
  uint64_t off = (uint64_t)k * u->part_size;
  uint64_t len = !up->multipart                  ? up->size
                 : up->size - off < u->part_size ? up->size - off
                                                 : u->part_size;
  request rq = {.kind = up->multipart ? GF_S3_K_PART : GF_S3_K_PUT,
                .up = up,
                .d.len = len,
                .part = k + 1};
  char why[900];
  int rc = 0;
  char *url = NULL;
  if (up->multipart)
    snprintf(rq.what, sizeof rq.what, "PUT part %u of %u (bytes %llu-%llu)",
             k + 1, up->nparts, (unsigned long long)off,
             (unsigned long long)(off + len - 1));
  else
    snprintf(rq.what, sizeof rq.what, "PUT (%llu bytes)",
             (unsigned long long)len);
  if (up->mem) {
    rq.d.body = up->mem + off;
  } else {
    rc = read_part(w, up, off, len, why, sizeof why);
    rq.d.body = w->buf;
  }
  if (rc == 0 && up->multipart) {
    char q[3200];
    snprintf(q, sizeof q, "partNumber=%u&uploadId=%s", k + 1,
             up->upload_id_enc);
    if (!(url = gf_s3_client_url(u->c, up->key, q))) {
      snprintf(why, sizeof why, "%s: out of memory", rq.what);
      rc = -ENOMEM;
    }
  }
  if (rc == 0) {
    gf_sigv4_sha256_hex(len ? rq.d.body : (const uint8_t *)"", (size_t)len,
                        rq.hash);
    rc = perform(w, &rq, "PUT", url ? url : up->url, why, sizeof why);
  }
  free(url);
  pthread_mutex_lock(&u->mu);
  up->inflight--;
  if (rc == 0) {
    up->done_len[up->done++] = len;
    count(up->multipart ? &u->parts : &u->objects, 1);
    pthread_cond_broadcast(&up->cv);
  } else {
    call_fail(up, rc, why);
  }
  pthread_mutex_unlock(&u->mu);
}

/* A control request: create, complete, abort, delete. */
static void run_ctl(gf_s3_worker *w, gf_s3_ctl *j) {
  gf_s3_uploader *u = w->u;
  gf_s3_call *up = j->up;
  request rq = {.kind = j->kind, .up = up};
  const char *method = "DELETE";
  char q[3200] = "";
  switch (j->kind) {
  case GF_S3_K_CREATE:
    method = "POST";
    snprintf(q, sizeof q, "uploads");
    /* curl's POST would name a form's type, which S3 would keep as the
     * object's. */
    rq.d.ctype = "Content-Type:";
    snprintf(rq.what, sizeof rq.what,
             "CreateMultipartUpload (POST ?uploads) for %u parts", up->nparts);
    break;
  case GF_S3_K_COMPLETE:
    method = "POST";
    snprintf(q, sizeof q, "uploadId=%s", up->upload_id_enc);
    rq.d.body = (const uint8_t *)up->complete_body;
    rq.d.len = up->complete_len;
    rq.d.ctype = "Content-Type: application/xml";
    snprintf(rq.what, sizeof rq.what, "CompleteMultipartUpload of %u parts",
             up->nparts);
    break;
  case GF_S3_K_ABORT:
    snprintf(q, sizeof q, "uploadId=%s", up->upload_id_enc);
    snprintf(rq.what, sizeof rq.what, "AbortMultipartUpload");
    break;
  default:
    snprintf(rq.what, sizeof rq.what, "DELETE");
    break;
  }
  char *url = gf_s3_client_url(u->c, up->key, q[0] ? q : NULL);
  if (!url) {
    j->rc = -ENOMEM;
    snprintf(j->why, sizeof j->why, "%s: out of memory", rq.what);
    return;
  }
  if (rq.d.len)
    gf_sigv4_sha256_hex(rq.d.body, (size_t)rq.d.len, rq.hash);
  else
    gf_strlcpy(rq.hash, GF_SIGV4_EMPTY_SHA256, sizeof rq.hash);
  j->rc = perform(w, &rq, method, url, j->why, sizeof j->why);
  free(url);
  if (j->rc == 0 && j->kind == GF_S3_K_COMPLETE)
    count(&u->objects, 1);
  if (j->rc == 0 && j->kind == GF_S3_K_ABORT)
    count(&u->aborted, 1);
}

void *gf_s3_queue_thread(void *arg) {
  gf_s3_worker *w = arg;
  gf_s3_uploader *u = w->u;
  pthread_mutex_lock(&u->mu);
  while (!u->quit) {
    if (u->chead) {
      gf_s3_ctl *j = u->chead;
      if (!(u->chead = j->next))
        u->ctail = NULL;
      pthread_mutex_unlock(&u->mu);
      run_ctl(w, j);
      pthread_mutex_lock(&u->mu);
      j->done = true;
      pthread_cond_broadcast(&j->up->cv);
      continue;
    }
    if (u->qhead) {
      gf_s3_call *up = u->qhead;
      if (atomic_load(&up->stop) || atomic_load(&u->cancelled)) {
        call_fail(up, -ECANCELED, "cancelled");
        continue;
      }
      uint32_t k = up->next++;
      if (up->next == up->nparts) {
        if (!(u->qhead = up->qnext))
          u->qtail = NULL;
        up->queued = false;
        up->qnext = NULL;
      }
      up->inflight++;
      pthread_mutex_unlock(&u->mu);
      run_part(w, up, k);
      pthread_mutex_lock(&u->mu);
      continue;
    }
    pthread_cond_wait(&u->work, &u->mu);
  }
  pthread_mutex_unlock(&u->mu);
  return NULL;
}

/* ---- the callers' side -------------------------------------------------- */

int gf_s3_queue_ctl(gf_s3_call *up, gf_s3_kind kind, gf_s3_ctl *j) {
  gf_s3_uploader *u = up->u;
  memset(j, 0, sizeof *j);
  j->up = up;
  j->kind = kind;
  pthread_mutex_lock(&u->mu);
  if (u->ctail)
    u->ctail->next = j;
  else
    u->chead = j;
  u->ctail = j;
  pthread_cond_signal(&u->work);
  while (!j->done)
    pthread_cond_wait(&up->cv, &u->mu);
  pthread_mutex_unlock(&u->mu);
  return j->rc;
}

int gf_s3_queue_parts(gf_s3_call *up, void (*progress)(void *, uint64_t),
                      void *ctx) {
  gf_s3_uploader *u = up->u;
  pthread_mutex_lock(&u->mu);
  up->queued = true;
  if (u->qtail)
    u->qtail->qnext = up;
  else
    u->qhead = up;
  u->qtail = up;
  pthread_cond_broadcast(&u->work);
  uint32_t told = 0;
  uint64_t bytes = 0;
  for (;;) {
    if (progress && up->done > told) {
      /* Once a part, even where several completed meanwhile. */
      bytes += up->done_len[told++];
      pthread_mutex_unlock(&u->mu);
      progress(ctx, bytes);
      pthread_mutex_lock(&u->mu);
      continue;
    }
    if (up->rc ? !up->inflight && !up->queued : up->done == up->nparts)
      break;
    pthread_cond_wait(&up->cv, &u->mu);
  }
  int rc = up->rc;
  pthread_mutex_unlock(&u->mu);
  return rc;
}

void gf_s3_queue_cancel(gf_s3_uploader *u) {
  pthread_mutex_lock(&u->mu);
  /* Parts not handed out yet: their calls fail now. */
  while (u->qhead)
    call_fail(u->qhead, -ECANCELED, "cancelled (gf_s3_uploader_cancel)");
  /* Control requests not started, but aborts: done, cancelled. */
  gf_s3_ctl **p = &u->chead;
  u->ctail = NULL;
  while (*p) {
    gf_s3_ctl *j = *p;
    if (j->kind == GF_S3_K_ABORT) {
      u->ctail = j;
      p = &j->next;
      continue;
    }
    *p = j->next;
    j->rc = -ECANCELED;
    snprintf(j->why, sizeof j->why, "cancelled (gf_s3_uploader_cancel)");
    j->done = true;
    pthread_cond_broadcast(&j->up->cv);
  }
  pthread_mutex_unlock(&u->mu);
}
