/* One signed S3 request on an easy handle: the handle's options for each
 * try (every option again: the handle served another kind of request
 * last), curl's callbacks (the body sent from memory, the reply's head
 * and body kept, the stop checked), what a try's end means (done, a
 * refusal, a transport failure, the caller's judgement of a 2xx), and
 * the waits between tries. */
#include "io/s3_request.h"

#include "io/remote_failure.h"
#include "io/s3_codes.h"

#include <curl/curl.h> /* the easy interface */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(((gf_s3_req *)0)->errbuf) >= CURL_ERROR_SIZE,
               "curl's error buffer");

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* Once for the process, never cleaned up (storage_http.c does the same;
 * curl counts the calls). */
static void curl_init(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int gf_s3_req_init(gf_s3_req *r, char *why, size_t cap) {
  memset(r, 0, sizeof *r);
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK) {
    snprintf(why, cap, "libcurl did not initialise: %s",
             curl_easy_strerror(curl_init_rc));
    return GF_EREMOTE;
  }
  if (!(r->easy = curl_easy_init())) {
    snprintf(why, cap, "out of memory (a curl handle)");
    return -ENOMEM;
  }
  return 0;
}

void gf_s3_req_free(gf_s3_req *r) {
  if (r->easy)
    curl_easy_cleanup(r->easy);
  free(r->body);
  r->easy = NULL;
  r->body = NULL;
  r->bcap = r->blen = 0;
}

static void count(_Atomic uint64_t *n, uint64_t v) {
  atomic_fetch_add_explicit(n, v, memory_order_relaxed);
}

/* The client's secrets out of text (curl's words, the store's message). */
static void scrub(gf_s3_client *c, char *text, size_t cap) {
  pthread_mutex_lock(&c->mu);
  gf_scrub_secret(text, cap, c->secret_key);
  gf_scrub_secret(text, cap, c->session_token);
  pthread_mutex_unlock(&c->mu);
}

/* ---- curl's callbacks --------------------------------------------------- */

static size_t on_read(char *p, size_t size, size_t n, void *ud) {
  gf_s3_req *r = ud;
  uint64_t left = r->d->len - r->send_off;
  size_t k = size * n;
  if (k > left)
    k = (size_t)left;
  memcpy(p, r->d->body + r->send_off, k);
  r->send_off += k;
  return k;
}

static int on_seek(void *ud, curl_off_t off, int origin) {
  gf_s3_req *r = ud;
  if (origin != SEEK_SET || off < 0 || (uint64_t)off > r->d->len)
    return CURL_SEEKFUNC_CANTSEEK;
  r->send_off = (uint64_t)off;
  return CURL_SEEKFUNC_OK;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  gf_s3_req *r = ud;
  gf_http_reply_line(&r->reply, p, size * n, (int64_t)time(NULL));
  return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  gf_s3_req *r = ud;
  size_t len = size * n;
  if (len > r->bmax - r->blen) {
    r->bover = true;
    return 0; /* ends the transfer: CURLE_WRITE_ERROR */
  }
  if (r->blen + len > r->bcap) {
    size_t cap = r->bcap ? r->bcap : 4096;
    while (cap < r->blen + len)
      cap *= 2;
    if (cap > r->bmax)
      cap = r->bmax;
    char *b = realloc(r->body, cap);
    if (!b)
      return 0;
    r->body = b;
    r->bcap = cap;
  }
  memcpy(r->body + r->blen, p, len);
  r->blen += len;
  return len;
}

static bool stopped(const gf_s3_req *r) {
  return r->d->stopped && r->d->stopped(r->d->ctx);
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow) {
  (void)dltotal;
  (void)dlnow;
  (void)ultotal;
  (void)ulnow;
  return stopped(ud) ? 1 : 0;
}

/* ---- what a try's end means --------------------------------------------- */

/* A refusal (status, and the store's error document when there is one):
 * the code, whether to try again, the cause. */
static int refusal(gf_s3_req *r, gf_s3_client *c, int status,
                   const gf_s3_error *e, time_t signed_at, bool *retry,
                   char *cause, size_t cap) {
  int code = GF_EREMOTE;
  *retry = false;
  if (status == 401 || status == 403)
    code = -EACCES;
  else if (status == 404)
    code = -ENOENT;
  else if (status == 408 || status == 429 || status >= 500)
    *retry = true;
  char more[400] = "";
  if (e && e->code[0]) {
    if (gf_s3_code_retried(e->code)) {
      code = GF_EREMOTE;
      *retry = true;
    } else if (gf_s3_code_expired(e->code)) {
      int x = gf_s3_client_expired(c, signed_at, more, sizeof more);
      if (x == 1) {
        code = GF_EREMOTE;
        *retry = true;
      } else if (x == 0) {
        snprintf(more, sizeof more,
                 "the credentials from %.300s have expired: renew them",
                 c->cred_source);
      }
    }
    bool writing = strcmp(r->d->method, "GET") && strcmp(r->d->method, "HEAD");
    char msg[sizeof e->message];
    gf_strlcpy(msg, e->message, sizeof msg);
    scrub(c, msg, sizeof msg);
    snprintf(cause, cap, "HTTP %d %s: %s%s%s%s", status, e->code,
             msg[0] ? msg : "(no message)", gf_s3_code_hint(e->code, writing),
             more[0] ? "; " : "", more);
  } else {
    snprintf(cause, cap, "HTTP %d%s", status,
             r->bover ? " (its body too long to read)" : "");
  }
  return code;
}

/* A transport failure: the code, whether to try again, the cause. */
static int transport(gf_s3_req *r, gf_s3_client *c, CURLcode rc, bool *retry,
                     char *cause, size_t cap) {
  const char *what;
  int code = gf_curl_failure(r->easy, (int)rc, retry, &what);
  char words[CURL_ERROR_SIZE];
  gf_strlcpy(words, r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc),
             sizeof words);
  scrub(c, words, sizeof words);
  snprintf(cause, cap, "%s (curl: %.150s)", what, words);
  return code;
}

/* ---- a try -------------------------------------------------------------- */

/* Sets the handle up for one try of d; *list gets its headers. Returns
 * 0, or a negative code with the cause (signing failed). */
static int setup(gf_s3_req *r, gf_s3_client *c, const gf_remote_config *rc,
                 struct curl_slist **list, char *cause, size_t cap) {
  const gf_s3_req_desc *d = r->d;
  CURL *e = r->easy;
  /* Every option again: the handle served another kind of request last.
   * The reset keeps the live connections and the DNS and TLS caches. */
  curl_easy_reset(e);
  *list = NULL;
  /* No "Expect: 100-continue": a round trip more before each body. */
  struct curl_slist *l = curl_slist_append(NULL, "Expect:"), *m = l;
  if (l && d->ctype && !(m = curl_slist_append(l, d->ctype)))
    curl_slist_free_all(l);
  if (!m) {
    snprintf(cause, cap, "out of memory");
    return -ENOMEM;
  }
  int x = gf_s3_client_sign(c, d->method, d->url, d->hash, &l, cause, cap);
  *list = l;
  if (x < 0) {
    scrub(c, cause, cap);
    return x;
  }
  gf_http_reply_init(&r->reply);
  r->blen = 0;
  r->bover = false;
  r->bmax = d->reply_max;
  r->send_off = 0;
  r->errbuf[0] = '\0';
  long stall_s = (long)((rc->stall_ms + 999) / 1000);
  CURLcode res = CURLE_OK;
#define SET(opt, val)                                                          \
  do {                                                                         \
    if (res == CURLE_OK)                                                       \
      res = curl_easy_setopt(e, opt, val);                                     \
  } while (0)
  SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_CONNECTTIMEOUT_MS, (long)rc->connect_timeout_ms);
  /* No byte either way for stall_ms: abandoned and retried (a whole-
   * request timeout would cut a slow 5 GiB part). */
  SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
  SET(CURLOPT_LOW_SPEED_TIME, stall_s);
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  /* One request at a time a handle: HTTP/2 would add nothing (S3 speaks
   * HTTP/1.1). */
  SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  SET(CURLOPT_USERAGENT, "gpufeed/"
                         "0.1");
  SET(CURLOPT_SSL_VERIFYPEER, rc->tls_no_verify ? 0L : 1L);
  SET(CURLOPT_SSL_VERIFYHOST, rc->tls_no_verify ? 0L : 2L);
  if (rc->ca_file)
    SET(CURLOPT_CAINFO, rc->ca_file);
  SET(CURLOPT_ERRORBUFFER, r->errbuf);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, r);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  SET(CURLOPT_WRITEDATA, r);
  SET(CURLOPT_NOPROGRESS, 0L);
  SET(CURLOPT_XFERINFOFUNCTION, on_progress);
  SET(CURLOPT_XFERINFODATA, r);
  SET(CURLOPT_URL, d->url);
  SET(CURLOPT_HTTPHEADER, l);
  if (!strcmp(d->method, "PUT")) {
    SET(CURLOPT_UPLOAD, 1L);
    SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)d->len);
    SET(CURLOPT_READFUNCTION, on_read);
    SET(CURLOPT_READDATA, r);
    SET(CURLOPT_SEEKFUNCTION, on_seek);
    SET(CURLOPT_SEEKDATA, r);
  } else if (!strcmp(d->method, "POST")) {
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->len);
    SET(CURLOPT_POSTFIELDS, d->len ? (const char *)d->body : "");
  } else {
    SET(CURLOPT_CUSTOMREQUEST, d->method);
  }
#undef SET
  if (res != CURLE_OK) {
    snprintf(cause, cap, "curl refused an option: %s", curl_easy_strerror(res));
    return res == CURLE_OUT_OF_MEMORY ? -ENOMEM : GF_EREMOTE;
  }
  return 0;
}

/* Sleeps ms, or less when stopped. */
static void nap(const gf_s3_req *r, int64_t ms) {
  uint64_t end = gf_http_now_ms() + (uint64_t)ms;
  for (;;) {
    uint64_t now = gf_http_now_ms();
    if (now >= end || stopped(r))
      return;
    uint64_t slice = end - now < 50 ? end - now : 50;
    struct timespec ts = {0, (long)slice * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* One try's outcome: 0, or a code with *again and the cause. */
static int judge(gf_s3_req *r, gf_s3_client *c, CURLcode res, time_t signed_at,
                 bool *again, char *cause, size_t cap) {
  const gf_s3_req_desc *d = r->d;
  int status = r->reply.status;
  gf_s3_error e;
  *again = false;
  if (res != CURLE_OK && !(res == CURLE_WRITE_ERROR && r->bover))
    return transport(r, c, res, again, cause, cap);
  if (status >= 200 && status < 300) {
    int x = d->accept ? d->accept(d->ctx, r, &e, again, cause, cap) : 0;
    if (x != 1)
      return x;
    /* S3 may answer 200 and fail in the body. */
    return refusal(r, c, status, &e, signed_at, again, cause, cap);
  }
  if (status == 404 && d->gone_ok)
    return 0; /* gone already: what was asked */
  bool doc = !r->bover && r->blen && gf_s3_xml_error(r->body, r->blen, &e) == 1;
  return refusal(r, c, status, doc ? &e : NULL, signed_at, again, cause, cap);
}

/* ---- the tries ---------------------------------------------------------- */

int gf_s3_req_run(gf_s3_req *r, gf_s3_client *c, const gf_remote_config *remote,
                  const gf_s3_req_desc *d, gf_s3_req_counters *n, char *why,
                  size_t cap) {
  r->d = d;
  gf_http_retry retry;
  gf_http_retry_start(&retry, remote->max_attempts, remote->retry_ms,
                      gf_http_retry_seed(), gf_http_now_ms());
  char cause[700];
  for (;;) {
    if (stopped(r)) {
      snprintf(why, cap, "%s: cancelled", d->what);
      return -ECANCELED;
    }
    struct curl_slist *list;
    time_t signed_at = time(NULL);
    int code = setup(r, c, remote, &list, cause, sizeof cause);
    if (code < 0) {
      curl_slist_free_all(list);
      snprintf(why, cap, "%s: cannot sign the request: %s", d->what, cause);
      return code;
    }
    CURLcode res = curl_easy_perform(r->easy);
    curl_slist_free_all(list);
    count(&n->requests, 1);
    int status = r->reply.status;
    if (status)
      retry.last_status = status;
    if (res == CURLE_ABORTED_BY_CALLBACK) {
      snprintf(why, cap, "%s: cancelled", d->what);
      return -ECANCELED;
    }
    bool again;
    code = judge(r, c, res, signed_at, &again, cause, sizeof cause);
    if (code == 0) {
      if (d->data)
        count(&n->bytes, d->len);
      if (r->bcap > GF_S3_REQ_BODY_MAX) { /* a large XML result: not kept */
        free(r->body);
        r->body = NULL;
        r->bcap = 0;
      }
      return 0;
    }
    const char *stop = "";
    if (again) {
      int64_t wait = gf_http_retry_next(&retry, gf_http_now_ms(),
                                        r->reply.retry_after_ms, &stop);
      if (wait >= 0) {
        gf_log(GF_LOG_DEBUG, "s3: %s of %s: %s; try %u in %lld ms", d->what,
               d->shown, cause, retry.attempts, (long long)wait);
        nap(r, wait);
        if (stopped(r)) {
          snprintf(why, cap, "%s: cancelled while retrying after %.300s",
                   d->what, cause);
          return -ECANCELED;
        }
        /* Counted as the try goes: one cancelled never went. */
        count(&n->retries, 1);
        if (d->data)
          count(&n->retried_bytes, d->len);
        continue;
      }
    }
    char tries[96];
    unsigned k = retry.attempts;
    if (!again)
      snprintf(tries, sizeof tries, "%u attempt%s, not retried", k,
               k == 1 ? "" : "s");
    else
      snprintf(tries, sizeof tries, "%u attempts in %.1f s, %s", k,
               (double)(gf_http_now_ms() - retry.first_ms) / 1000,
               stop[0] == 'a' ? "max_attempts reached" : "retry_ms spent");
    char last[40] = "";
    if (retry.last_status && retry.last_status != status)
      snprintf(last, sizeof last, "; last HTTP status %d", retry.last_status);
    snprintf(why, cap, "%.119s: %.600s (%.95s%.39s)", d->what, cause, tries,
             last);
    return code;
  }
}
