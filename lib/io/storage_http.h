/* The HTTP(S) storage's parts, between the files of lib/io only: objects
 * served by a web server, read with HEAD (size and version tag) and
 * ranged GETs, through libcurl. docs/REMOTE.md says what is sent and how
 * failures are retried.
 *
 *   storage_http.c         the storage's table: open, stat, objects,
 *                          reads from any thread (a pool of easy handles)
 *   storage_http_engine.c  the reader's engine: reads spread over lanes,
 *                          completions gathered for the reader
 *   storage_http_lanes.c   a lane: a thread, its multi handle, many
 *                          transfers on the wire, retries on timers
 *   storage_http_xfer.c    one request on an easy handle: its options,
 *                          callbacks and outcome
 *   storage_http_url.c     URLs: parsing, object URLs, display forms
 *   storage_http_reply.c   response heads: status, headers, and whether
 *                          a reply is what was asked
 *   storage_http_retry.c   the retry policy: which failures, how long
 *
 * Only the files of this storage, the S3 client's (s3_client.c,
 * s3_creds.c, s3_request.c) and remote_failure.c include curl.h
 * (tests/check_layers.py);
 * this header does not: handles are kept as void pointers here. Calls go
 * storage_http -> engine -> lanes -> xfer -> url, reply, retry, never back.
 *
 * Secrets (a URL's user:password and query, the bearer token of
 * GPUFEED_HTTP_BEARER_TOKEN) live in gf_http_url, the request URLs and
 * header lists only: no message, log line or display form is made from
 * them (gf_http_scrub takes them out of text that came from elsewhere). */
#ifndef GF_IO_STORAGE_HTTP_H
#define GF_IO_STORAGE_HTTP_H

#include "io/slot.h"
#include "io/storage.h"

#include <pthread.h>
#include <stdatomic.h>

/* ---- URLs (storage_http_url.c) ------------------------------------------ */

typedef struct gf_http_url {
  bool tls;       /* https */
  char *host;     /* as written (lowercased); an IPv6 literal keeps its
                     brackets */
  unsigned port;  /* 0 when the URL names none */
  char *path;     /* the root's path, percent-encoded where the URL was
                     not, without trailing '/'s ("" for the server's root) */
  char *query;    /* after '?', without it; NULL when none. A secret. */
  char *user;     /* user information, percent-decoded; NULL when none. */
  char *password; /* Secrets. */
} gf_http_url;

/* Parses an http:// or https:// location (scheme in any case):
 * scheme://[user[:password]@]host[:port][/path][?query][#fragment] (the
 * fragment is dropped). Returns 0, -ENOMEM, or -EINVAL with the reason
 * in why (no secret in it). *out is freed with gf_http_url_free (also
 * after a failure). */
int gf_http_url_parse(const char *location, gf_http_url *out, char *why,
                      size_t cap);
void gf_http_url_free(gf_http_url *u);
/* The URL requested for object `name` ("" the root itself): root + '/' +
 * name, name's bytes outside RFC 3986's unreserved set and '/'
 * percent-encoded, and the query. malloc'd (a secret: never shown), NULL
 * when out of memory. */
char *gf_http_url_request(const gf_http_url *u, const char *name);
/* The display form of root/name: scheme://host[:port]/path[/name], name
 * encoded as in the request, without user information or query, with
 * GF_TLS_UNVERIFIED_MARK first when `insecure`. Cut to fit cap (> 0).
 * Returns buf. */
char *gf_http_url_display(const gf_http_url *u, const char *name, bool insecure,
                          char *buf, size_t cap);
/* name's bytes outside unreserved and '/' as %XX into buf (cap > 0, cut
 * to fit). Returns the length the whole encoding needs. */
size_t gf_http_encode_name(const char *name, char *buf, size_t cap);

/* ---- response heads (storage_http_reply.c) ------------------------------ */

/* What a response's head said, from its lines as they came. */
typedef struct gf_http_reply {
  int status;                    /* 0 until a status line came */
  int64_t length;                /* Content-Length, -1 when absent or invalid */
  int range;                     /* Content-Range: 0 absent, 1 "bytes a-b/c" or
                                    "bytes a-b/x" parsed, -1 present but not
                                    that */
  uint64_t first, last;          /* its range */
  int64_t total;                 /* its complete length, -1 for '*' */
  int64_t retry_after_ms;        /* Retry-After, -1 when absent or invalid */
  char etag[GF_VERSION_TAG_MAX]; /* ETag as sent ("" when none) */
  bool etag_long;                /* an ETag longer than kept: not comparable */
  char modified[64];             /* Last-Modified ("" when none) */
  bool encoded;                  /* a Content-Encoding other than identity */
} gf_http_reply;

void gf_http_reply_init(gf_http_reply *r);
/* Takes one line of a response head as received (its CR LF or LF
 * included or not): a status line ("HTTP/1.1 206 ...", "HTTP/2 200")
 * starts a new head (after a 1xx, say), a header line sets the field it
 * names (the last one of a name wins), anything else is ignored. now_s:
 * the time an HTTP-date in Retry-After is counted from. */
void gf_http_reply_line(gf_http_reply *r, const char *line, size_t len,
                        int64_t now_s);
/* "bytes first-last/total" (total '*': -1). Returns 0 or -EINVAL. */
int gf_http_parse_content_range(const char *v, size_t len, uint64_t *first,
                                uint64_t *last, int64_t *total);
/* Retry-After: delta-seconds or an HTTP-date (then counted from now_s,
 * 0 when past). Returns 0 with *ms, or -EINVAL. */
int gf_http_parse_retry_after(const char *v, size_t len, int64_t now_s,
                              int64_t *ms);

/* What was asked of the server, to judge its reply by. */
typedef struct gf_http_ask {
  bool head;           /* HEAD: the object's size and version */
  uint64_t off, len;   /* GET: bytes [off, off + len), len > 0 */
  uint64_t size;       /* GET: the object's size at open */
  const char *version; /* GET: its version tag at open ("" none) */
  bool whole;          /* GET of a document whose length is not known
                          (a listing page): no Range, a 200 of at most len
                          bytes; off, size and version unused */
} gf_http_ask;

/* Judges a reply's head before any byte of its body is taken. Returns 0
 * when the body that follows is exactly what was asked (a HEAD: a 200
 * with a Content-Length), else the read's code with its reason in why
 * (cap > 0) and *retry saying whether another try may succeed:
 *   -ENOENT (404, 410), -EACCES (401, 403): not retried;
 *   GF_EREMOTE: 408, 429, 500, 502, 503, 504 (retried), any other status
 *     (not retried; redirects are not followed);
 *   GF_ECHANGED: 412 (If-Match failed), 416 (the range is past the end
 *     now), an ETag or a complete length other than the object's;
 *   GF_EREPLY: a 200 to a range that is not the whole object, a 206
 *     without the exact Content-Range asked, a Content-Length other than
 *     the length asked, an encoded body, a HEAD without Content-Length.
 * A 200 is taken only where the whole object was asked. */
int gf_http_judge(const gf_http_reply *r, const gf_http_ask *ask, bool *retry,
                  char *why, size_t cap);
/* A HEAD reply judged good: the object's size and version tag (the ETag,
 * else "lm:" + Last-Modified, else ""). */
void gf_http_head_result(const gf_http_reply *r, uint64_t *size, char *version,
                         size_t cap);

/* ---- the retry policy (storage_http_retry.c) ---------------------------- */

/* Backoff: exponential with full jitter (AWS's standard mode): before
 * retry k (1 for the first), a wait drawn uniformly from [0, min(cap,
 * base * 2^(k-1))] ms. */
#define GF_HTTP_BACKOFF_BASE_MS 100u
#define GF_HTTP_BACKOFF_CAP_MS 20000u

typedef struct gf_http_retry {
  uint32_t max_attempts; /* tries, the first included */
  uint32_t budget_ms;    /* from the first try's start to the last's */
  uint32_t attempts;     /* tries started */
  uint64_t first_ms;     /* when the first started (monotonic ms) */
  uint64_t rng;          /* the jitter's generator (splitmix64) */
  int last_status;       /* the last HTTP status seen (0: none) */
} gf_http_retry;

/* A request's first try starts at now_ms; seed: the jitter's (the same
 * seed, the same waits). */
void gf_http_retry_start(gf_http_retry *r, uint32_t max_attempts,
                         uint32_t budget_ms, uint64_t seed, uint64_t now_ms);
/* After a try that failed in a way worth retrying, at now_ms: the wait
 * before the next try, in ms (at least the server's retry_after_ms when
 * >= 0, at most the time left), or -1 when the tries or the time are
 * spent (*stop then says which: "attempts" or "time"). Counts the next
 * try as started. */
int64_t gf_http_retry_next(gf_http_retry *r, uint64_t now_ms,
                           int64_t retry_after_ms, const char **stop);
/* The jitter's draw for retry k alone (tests, docs). */
uint64_t gf_http_backoff_ms(uint32_t k, uint64_t *rng);
/* A seed for a request's jitter, different each call (any thread). */
uint64_t gf_http_retry_seed(void);
/* Monotonic milliseconds. */
uint64_t gf_http_now_ms(void);

/* ---- the storage and its objects (storage_http.c) ----------------------- */

/* Easy handles kept for the synchronous calls (connections stay open in
 * them between requests). */
#define GF_HTTP_POOL 16

struct gf_http_xfer;

typedef struct gf_http_storage {
  gf_storage base;
  gf_http_url url;
  gf_remote_config remote; /* resolved; ca_file points at ca_file below */
  char *ca_file;
  char *auth_header;           /* "Authorization: Bearer ..." or NULL */
  void *headers;               /* struct curl_slist *: auth_header, for
                                  requests without their own list */
  void *share;                 /* CURLSH *: DNS cache and TLS sessions */
  pthread_mutex_t share_mu[8]; /* one a curl_lock_data kind */
  pthread_mutex_t pool_mu;
  void *pool[GF_HTTP_POOL]; /* CURL *: idle easy handles */
  unsigned npool;
  /* gf_storage_counters: tries made (HEADs and GETs, synchronous and the
   * engines'), of which retried and failed for good; body bytes taken */
  _Atomic uint64_t requests, retries, failures, bytes;
  /* A store that speaks HTTP with a protocol of its own on top (S3,
   * storage_s3.c), NULLs otherwise: its scheme for reports ("s3"), the
   * display form of the root that messages show instead of the URL
   * ("s3://bucket/prefix"), and a signer that gives each try the headers
   * to send (the request's own, then its signature's), as a struct
   * curl_slist * the xfer frees after the try; it returns 0 or a negative
   * code with the reason in why (no secret in it). */
  const char *scheme;
  char *display_root;
  int (*sign)(struct gf_http_storage *st, const struct gf_http_xfer *x,
              void **list, char *why, size_t cap);
  void *sign_ctx;
  void (*sign_free)(void *ctx);
  /* The flavour's reading of a refused reply (NULL: none): from the
   * status and x->errbody, it may change the try's code and whether it
   * is retried, and rewrite cause (cap bytes) with the store's words. */
  void (*explain)(struct gf_http_storage *st, const struct gf_http_xfer *x,
                  int *code, bool *retry, char *cause, size_t cap);
} gf_http_storage;

/* Opens an HTTP storage at url (http:// or https://), named `shown` in
 * the messages of its failure. The caller may set the flavour's fields
 * above before the first request. Returns 0 or the error with context. */
int gf_http_storage_open(const char *url, const char *shown,
                         const gf_remote_config *remote, gf_http_storage **out);
/* The display form of the root's object `name` (the flavour's root when
 * set), cut to fit cap. */
void gf_http_storage_display(const gf_http_storage *s, const char *name,
                             char *buf, size_t cap);

/* Runs request x synchronously (its ask, url, headers and buf or sink
 * set; the rest zero) with its tries, on a pooled handle. Returns 0, or
 * the request's code with its words in why (the range, the cause, the
 * tries; not the object's name); a sink's code leaves why empty (the sink
 * recorded its error). Any thread. */
int gf_http_run(gf_http_storage *s, struct gf_http_xfer *x, char *why,
                size_t cap);

typedef struct gf_http_object {
  gf_object base;
  char *url;     /* the request URL (a secret) */
  void *headers; /* struct curl_slist *: If-Match (a strong ETag) or
                    If-Unmodified-Since, and the storage's */
} gf_http_object;

/* ---- one request (storage_http_xfer.c) ---------------------------------- */

/* One request and its tries, on one easy handle (synchronous or in the
 * engine's multi handle). */
typedef struct gf_http_xfer {
  void *easy; /* CURL * */
  gf_http_storage *st;
  const char *url;     /* object's or a name's request URL */
  const void *headers; /* struct curl_slist * */
  char display[192];   /* what the messages name (cut to fit) */
  gf_http_ask ask;     /* the whole request */
  uint8_t *buf;        /* GET: ask.len bytes (NULL with a sink) */
  /* A streamed GET (gf_object_stream): the body handed to sink as it
   * comes instead of into buf, once the head is judged good. Its 1 ends
   * the request as complete with got < ask.len, its negative code ends it
   * with that code (sink_rc says which); neither is retried. */
  gf_stream_sink sink;
  void *sink_ctx;
  int sink_rc;  /* the sink's last answer: 0, 1 (stopped) or its code */
  uint64_t got; /* body bytes taken into buf or by sink */
  gf_http_retry retry;
  /* the try in progress */
  gf_http_reply reply;
  uint64_t try_off;   /* this try's first byte (ask.off + got at start) */
  bool judged;        /* its head was judged */
  int verdict;        /* the judgement: 0 or a code */
  bool verdict_retry; /* whether that code may be retried */
  bool overflow;      /* the server sent more than asked */
  uint64_t dropped;   /* body bytes of a refused reply thrown away */
  char errbuf[256];   /* curl's words (CURL_ERROR_SIZE) */
  char verdict_why[160];
  char cause[256]; /* the last failed try's cause, without the URL */
  void *signed_headers; /* struct curl_slist *: this try's, from st->sign;
                           freed by the next try and gf_http_xfer_end */
  bool sign_failed;     /* this try could not be signed (cause set) */
  int64_t signed_at;    /* when this try was signed (time(NULL)) */
  /* A refused reply's body, kept for a flavour's explain (at most
   * GF_HTTP_ERRBODY_MAX bytes; allocated at the first, freed at the
   * request's end) */
  char *errbody;
  size_t errlen;
} gf_http_xfer;

/* The most of a refused reply's body kept for the flavour to read. */
#define GF_HTTP_ERRBODY_MAX 16384u

/* A new easy handle with the storage's options (TLS, timeouts, stall,
 * protocols, credentials, its share). NULL when out of memory. */
void *gf_http_easy_new(gf_http_storage *st);
void gf_http_easy_free(void *easy);
/* Sets a request up on x->easy (x->st, url, headers, ask, buf or sink set
 * by the caller; got 0) and starts its retry state. */
void gf_http_xfer_begin(gf_http_xfer *x);
/* Prepares the next try (the range still missing when a body was cut). */
void gf_http_xfer_try(gf_http_xfer *x);
/* A try ended with curl's result `res` (a CURLcode). Returns 1 when the
 * request is complete, 0 when another try should follow after *wait_ms,
 * or a negative code (the request failed: the message, with the URL, the
 * range, the status or curl's words and the tries, is in why). */
int gf_http_xfer_end(gf_http_xfer *x, int res, int64_t *wait_ms, char *why,
                     size_t cap);
/* Frees what a try that will not end holds (a transfer removed from its
 * multi handle before it completed). */
void gf_http_xfer_drop(gf_http_xfer *x);
/* Replaces every secret of the storage found in text with "<redacted>"
 * (text cap bytes, in place). */
void gf_http_scrub(const gf_http_storage *st, char *text, size_t cap);

/* ---- the engine's lanes (storage_http_lanes.c) -------------------------- */

/* Lanes: threads, each driving its own libcurl multi handle over the
 * reader's slots. A slot pushed to a lane is its until handed back. */
typedef struct gf_http_lanes gf_http_lanes;
/* Called from a lane's thread with the ids it completed (each slot's
 * result, done and why set, as backend.h says). */
typedef void (*gf_http_lanes_done)(void *ctx, const uint32_t *ids, unsigned n);
/* nlanes lanes (at least 1, at most depth) sharing depth transfers on the
 * wire and st's max_connections. Returns 0, or a negative code with the
 * reason in why. */
int gf_http_lanes_create(gf_http_storage *st, gf_io_slot *slots,
                         uint32_t nslots, unsigned depth, unsigned nlanes,
                         gf_http_lanes_done done, void *ctx,
                         gf_http_lanes **out, char *why, size_t why_len);
/* Stops the threads and every transfer: no slot buffer is written and no
 * callback made after it returns. NULL accepted. */
void gf_http_lanes_destroy(gf_http_lanes *a);
unsigned gf_http_lanes_count(const gf_http_lanes *a);
/* Starts the reads of slots ids[0..n) on lane k (0 <= k < count). */
void gf_http_lanes_push(gf_http_lanes *a, unsigned k, const uint32_t *ids,
                        unsigned n);

/* ---- the engine (storage_http_engine.c) --------------------------------- */

extern const gf_io_engine_ops gf_http_engine;
/* The lanes an engine runs: rc->fetch_threads, else one a two cores of
 * the machine, from 1 to 8. */
unsigned gf_http_lanes_auto(const gf_remote_config *rc);

#endif /* GF_IO_STORAGE_HTTP_H */
