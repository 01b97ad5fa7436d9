/* One request of the HTTP(S) storage on a libcurl easy handle: the
 * handle's options (TLS, timeouts, the stall rule, credentials), each
 * try's range and headers, the callbacks that judge the reply's head and
 * take its body straight into the caller's buffer or hand it to the
 * caller's sink (never more than asked, never a byte of a reply judged
 * wrong, never a byte twice), and what a try's end means: done, another
 * try after a wait, or the request's error. The same code serves the
 * synchronous calls (storage_http.c) and the reader's engine
 * (storage_http_engine.c). */
#include "io/storage_http.h"

#include "io/remote_failure.h"

#include <curl/curl.h> /* the easy interface */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Static_assert(sizeof(((gf_http_xfer *)0)->errbuf) >= CURL_ERROR_SIZE,
               "curl's error buffer");

/* A body refused as an error page (a 503's text) is read to its end, up
 * to this much, so its connection can serve the retry; a larger one is
 * cut off. */
#define GF_HTTP_DROP_MAX (64u << 10)

void *gf_http_easy_new(gf_http_storage *st) {
  CURL *e = curl_easy_init();
  if (!e)
    return NULL;
  const gf_remote_config *rc = &st->remote;
  long stall_s = (long)((rc->stall_ms + 999) / 1000);
  CURLcode c = CURLE_OK;
#define SET(opt, val)                                                          \
  do {                                                                         \
    if (c == CURLE_OK)                                                         \
      c = curl_easy_setopt(e, opt, val);                                       \
  } while (0)
  SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_SHARE, st->share);
  SET(CURLOPT_CONNECTTIMEOUT_MS, (long)rc->connect_timeout_ms);
  /* A transfer that moves no byte for stall_ms (whole seconds: curl's
   * unit) is abandoned and retried, rather than a whole-transfer timeout
   * that would cut a slow large read, or a streamed GET of a whole shard.
   * A stream's sink runs inside the body callback, so while it blocks no
   * byte moves: one that blocks long counts as a stall to curl (this rule
   * judges the speed over its last seconds, so a single block of a few
   * stall_ms may pass, a slower one not) and to the server's own send
   * timeout, and costs a try (made again from the first byte not handed).
   * Callers bound how long their sink blocks and return 1 instead, then
   * stream again from where they stopped. */
  SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
  SET(CURLOPT_LOW_SPEED_TIME, stall_s);
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  SET(CURLOPT_PIPEWAIT, 1L);
  SET(CURLOPT_USERAGENT, "gpufeed/"
                         "0.1");
  SET(CURLOPT_SSL_VERIFYPEER, rc->tls_no_verify ? 0L : 1L);
  SET(CURLOPT_SSL_VERIFYHOST, rc->tls_no_verify ? 0L : 2L);
  if (rc->ca_file)
    SET(CURLOPT_CAINFO, rc->ca_file);
  if (st->url.user) {
    SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    SET(CURLOPT_USERNAME, st->url.user);
    SET(CURLOPT_PASSWORD, st->url.password ? st->url.password : "");
  }
#undef SET
  if (c != CURLE_OK) {
    curl_easy_cleanup(e);
    return NULL;
  }
  return e;
}

void gf_http_easy_free(void *easy) {
  if (easy)
    curl_easy_cleanup(easy);
}

/* ---- secrets out of text ------------------------------------------------ */

void gf_http_scrub(const gf_http_storage *st, char *text, size_t cap) {
  gf_scrub_secret(text, cap, st->url.password);
  gf_scrub_secret(text, cap, st->url.user);
  gf_scrub_secret(text, cap, st->url.query);
  static const char bearer[] = "Authorization: Bearer ";
  if (st->auth_header)
    gf_scrub_secret(text, cap, st->auth_header + sizeof bearer - 1);
}

/* ---- callbacks ---------------------------------------------------------- */

/* The range this try asks: [try_off, ask.off + ask.len). */
static gf_http_ask try_ask(const gf_http_xfer *x) {
  gf_http_ask a = x->ask;
  if (!a.head && !a.whole) {
    a.len -= x->try_off - a.off;
    a.off = x->try_off;
  }
  return a;
}

static void judge(gf_http_xfer *x) {
  x->judged = true;
  gf_http_ask a = try_ask(x);
  x->verdict = gf_http_judge(&x->reply, &a, &x->verdict_retry, x->verdict_why,
                             sizeof x->verdict_why);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud) {
  gf_http_xfer *x = ud;
  gf_http_reply_line(&x->reply, p, size * n, (int64_t)time(NULL));
  return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) {
  gf_http_xfer *x = ud;
  size_t len = size * n;
  if (!x->judged)
    judge(x);
  if (x->verdict) {
    if (x->st->explain && x->errlen < GF_HTTP_ERRBODY_MAX &&
        (x->errbody || (x->errbody = malloc(GF_HTTP_ERRBODY_MAX)))) {
      size_t k = GF_HTTP_ERRBODY_MAX - x->errlen;
      if (k > len)
        k = len;
      memcpy(x->errbody + x->errlen, p, k);
      x->errlen += k;
    }
    x->dropped += len;
    return x->verdict_retry && x->dropped <= GF_HTTP_DROP_MAX ? len : 0;
  }
  if (x->ask.head)
    return len;
  if (len > x->ask.len - x->got) {
    x->overflow = true;
    return 0; /* ends the transfer: CURLE_WRITE_ERROR */
  }
  if (x->sink) {
    if (!len)
      return 0; /* libcurl's call for an empty body: a sink takes len > 0 */
    int r = x->sink(x->sink_ctx, (const uint8_t *)p, len);
    if (r == 0) {
      x->got += len;
      return len;
    }
    /* Stopped (these bytes taken) or failed: either ends the transfer
     * (CURLE_WRITE_ERROR), which xfer_verdict reads by sink_rc. */
    x->sink_rc = r < 0 ? r : 1;
    if (r > 0)
      x->got += len;
    return 0;
  }
  memcpy(x->buf + x->got, p, len);
  x->got += len;
  return len;
}

/* ---- a request and its tries -------------------------------------------- */

void gf_http_xfer_begin(gf_http_xfer *x) {
  x->got = 0;
  x->sink_rc = 0;
  x->cause[0] = '\0';
  gf_http_retry_start(&x->retry, x->st->remote.max_attempts,
                      x->st->remote.retry_ms, gf_http_retry_seed(),
                      gf_http_now_ms());
  gf_http_xfer_try(x);
}

void gf_http_xfer_try(gf_http_xfer *x) {
  CURL *e = x->easy;
  gf_http_reply_init(&x->reply);
  if (x->ask.whole)
    x->got = 0; /* a document is asked again whole */
  x->errlen = 0;
  x->try_off = x->ask.off + x->got;
  x->judged = false;
  x->verdict = 0;
  x->verdict_retry = false;
  x->overflow = false;
  x->dropped = 0;
  x->errbuf[0] = '\0';
  x->verdict_why[0] = '\0';
  /* Options of a live handle only fail when out of memory, which the
   * transfer then reports. */
  curl_easy_setopt(e, CURLOPT_URL, x->url);
  /* A signing store: this try's headers, signed now (a signature holds
   * the time it was made). */
  curl_slist_free_all(x->signed_headers);
  x->signed_headers = NULL;
  x->sign_failed = false;
  x->signed_at = (int64_t)time(NULL);
  if (x->st->sign &&
      x->st->sign(x->st, x, &x->signed_headers, x->cause, sizeof x->cause) < 0)
    x->sign_failed = true;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER,
                   x->signed_headers ? x->signed_headers : x->headers);
  if (x->ask.head) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(e, CURLOPT_RANGE, (char *)NULL);
  } else if (x->ask.whole) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_RANGE, (char *)NULL);
  } else {
    char range[48];
    snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)x->try_off,
             (unsigned long long)(x->ask.off + x->ask.len - 1));
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_RANGE, range);
  }
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_PRIVATE, x);
}

/* curl's words for a failed try, secrets out. */
static const char *curl_words(gf_http_xfer *x, CURLcode rc) {
  if (!x->errbuf[0])
    gf_strlcpy(x->errbuf, curl_easy_strerror(rc), sizeof x->errbuf);
  gf_http_scrub(x->st, x->errbuf, sizeof x->errbuf);
  return x->errbuf;
}

/* What a failed try's transport error means: *retry, the code, the cause
 * (remote_failure.c's words, then curl's). */
static int transport(gf_http_xfer *x, CURLcode rc, bool *retry) {
  const char *what;
  int code = gf_curl_failure(x->easy, (int)rc, retry, &what);
  snprintf(x->cause, sizeof x->cause, "%s (curl: %.150s)", what,
           curl_words(x, rc));
  return code;
}

static int xfer_verdict(gf_http_xfer *x, int res, int64_t *wait_ms, char *why,
                        size_t cap) {
  CURLcode rc = (CURLcode)res;
  bool retry = false;
  int code;
  *wait_ms = 0;
  if (x->reply.status)
    x->retry.last_status = x->reply.status;
  /* The sink ended the transfer: what it took is the request's result
   * (stopped), or its code is (it recorded its error: why stays empty).
   * Neither is the server's doing, so neither is retried. */
  if (x->sink_rc > 0)
    return 1;
  if (x->sink_rc < 0) {
    if (cap)
      why[0] = '\0';
    return x->sink_rc;
  }
  /* The head is whole when the transfer ended well, or when curl knew
   * how many body bytes were still to come (a cut body); a body callback
   * judged it already. */
  if (!x->judged &&
      (rc == CURLE_OK || (rc == CURLE_PARTIAL_FILE && x->reply.status)))
    judge(x);
  if (x->judged && x->verdict) {
    code = x->verdict;
    retry = x->verdict_retry;
    snprintf(x->cause, sizeof x->cause, "%s", x->verdict_why);
    if (x->st->explain)
      x->st->explain(x->st, x, &code, &retry, x->cause, sizeof x->cause);
  } else if (x->judged && x->overflow) {
    code = GF_EREPLY;
    snprintf(x->cause, sizeof x->cause,
             "HTTP %d: the body holds more than the %llu bytes asked",
             x->reply.status,
             (unsigned long long)(x->ask.off + x->ask.len - x->try_off));
  } else if (rc == CURLE_OK &&
             (x->ask.head || x->ask.whole || x->got == x->ask.len)) {
    return 1;
  } else if (x->judged) {
    /* The body stopped short: the connection closed, was reset or
     * stalled inside it. The next try asks for the rest. */
    uint64_t want = x->ask.off + x->ask.len - x->try_off;
    uint64_t came = x->ask.off + x->got - x->try_off;
    char words[200];
    if (rc == CURLE_OK) {
      snprintf(words, sizeof words, "closed early");
      code = GF_EREMOTE;
      retry = true;
    } else {
      code = transport(x, rc, &retry);
      gf_strlcpy(words, x->cause, sizeof words);
    }
    snprintf(x->cause, sizeof x->cause,
             "HTTP %d: the body ended after %llu of its %llu bytes: %s",
             x->reply.status, (unsigned long long)came,
             (unsigned long long)want, words);
  } else {
    code = transport(x, rc, &retry);
  }

  const char *stop = "";
  if (retry) {
    int64_t w = gf_http_retry_next(&x->retry, gf_http_now_ms(),
                                   x->reply.retry_after_ms, &stop);
    if (w >= 0) {
      *wait_ms = w;
      return 0;
    }
  }
  /* The request's error: the range, the cause, the tries. */
  char range[64];
  if (x->ask.head)
    snprintf(range, sizeof range, "HEAD");
  else if (x->ask.whole)
    snprintf(range, sizeof range, "GET");
  else
    snprintf(range, sizeof range, "bytes %llu-%llu",
             (unsigned long long)x->ask.off,
             (unsigned long long)(x->ask.off + x->ask.len - 1));
  char tries[96];
  unsigned n = x->retry.attempts;
  if (!retry)
    snprintf(tries, sizeof tries, "%u attempt%s, not retried", n,
             n == 1 ? "" : "s");
  else
    snprintf(tries, sizeof tries, "%u attempts in %.1f s, %s", n,
             (double)(gf_http_now_ms() - x->retry.first_ms) / 1000,
             stop[0] == 'a' ? "max_attempts reached" : "retry_ms spent");
  char last[40] = "";
  if (x->retry.last_status && x->retry.last_status != x->reply.status)
    snprintf(last, sizeof last, "; last HTTP status %d", x->retry.last_status);
  snprintf(why, cap, "%s: %s (%s%s)", range, x->cause, tries, last);
  return code;
}

void gf_http_xfer_drop(gf_http_xfer *x) {
  curl_slist_free_all(x->signed_headers);
  x->signed_headers = NULL;
  free(x->errbody);
  x->errbody = NULL;
  x->errlen = 0;
}

int gf_http_xfer_end(gf_http_xfer *x, int res, int64_t *wait_ms, char *why,
                     size_t cap) {
  int r;
  if (x->sign_failed) {
    *wait_ms = 0;
    snprintf(why, cap, "cannot sign the request: %s", x->cause);
    r = -EINVAL;
  } else {
    r = xfer_verdict(x, res, wait_ms, why, cap);
  }
  gf_http_xfer_drop(x);
  gf_http_storage *st = x->st;
  atomic_fetch_add_explicit(&st->requests, 1, memory_order_relaxed);
  /* A sink's code is the caller's failure, not the server's. */
  if (r == 0)
    atomic_fetch_add_explicit(&st->retries, 1, memory_order_relaxed);
  else if (r < 0 && !x->sink_rc)
    atomic_fetch_add_explicit(&st->failures, 1, memory_order_relaxed);
  else if (!x->ask.head)
    atomic_fetch_add_explicit(&st->bytes, x->got, memory_order_relaxed);
  return r;
}
