/* Web servers as a storage (http://, https://): each object a URL under
 * the root's, opened with HEAD (its size from Content-Length, its version
 * from ETag or Last-Modified) and read with ranged GETs that carry
 * If-Match, so that a reply of another version is refused rather than
 * taken; a stream (gf_object_stream) is one such GET whose body goes to
 * the caller's sink as it comes. No listing and no links: a server serves
 * built datasets, whose index names every object. The synchronous calls
 * here may come from any thread; each takes an easy handle from a small
 * pool, whose connections stay open between requests, and all of them
 * share one DNS cache and TLS session cache (a CURLSH with locks). The
 * reader's reads go through the engine (storage_http_engine.c) instead. */
#include "io/storage_http.h"

#include <curl/curl.h> /* the easy and share interfaces */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h> /* access */

_Static_assert(CURL_LOCK_DATA_LAST <= 8, "one mutex a curl_lock_data kind");

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* curl_global_init is thread-safe in the libcurls built with
 * CURL_VERSION_THREADSAFE (Debian 12's is); once for the process, never
 * cleaned up (a library cannot know the process is done with curl). */
static void curl_init(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool http_claims(const char *location) {
  return strncasecmp(location, "http://", 7) == 0 ||
         strncasecmp(location, "https://", 8) == 0;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access,
                       void *user) {
  (void)h;
  (void)access;
  gf_http_storage *s = user;
  pthread_mutex_lock(&s->share_mu[data % 8]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *user) {
  (void)h;
  gf_http_storage *s = user;
  pthread_mutex_unlock(&s->share_mu[data % 8]);
}

static void http_close(gf_storage *base) {
  gf_http_storage *s = (gf_http_storage *)base;
  if (s->sign_free)
    s->sign_free(s->sign_ctx);
  free(s->display_root);
  for (unsigned i = 0; i < s->npool; i++)
    gf_http_easy_free(s->pool[i]);
  if (s->share)
    curl_share_cleanup(s->share);
  curl_slist_free_all(s->headers);
  for (unsigned i = 0; i < 8; i++)
    pthread_mutex_destroy(&s->share_mu[i]);
  pthread_mutex_destroy(&s->pool_mu);
  gf_http_url_free(&s->url);
  free(s->ca_file);
  free(s->auth_header);
  free(s->base.display);
  free(s);
}

static void http_display(const char *location, const gf_remote_config *remote,
                         char *buf, size_t cap) {
  gf_http_url u;
  char why[160];
  if (gf_http_url_parse(location, &u, why, sizeof why) == 0)
    gf_http_url_display(&u, "", u.tls && remote && remote->tls_no_verify, buf,
                        cap);
  else
    gf_location_redact(location, buf, cap);
  gf_http_url_free(&u);
}

/* The bearer token of GPUFEED_HTTP_BEARER_TOKEN as a header line, or NULL
 * when unset. -EINVAL (said without the token) when it cannot be one. */
static int bearer(gf_http_storage *s) {
  const char *tok = getenv("GPUFEED_HTTP_BEARER_TOKEN");
  if (!tok || !tok[0] || s->url.user)
    return 0;
  for (const char *c = tok; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      return gf_fail(-EINVAL, s->base.display, GF_NO_INDEX, GF_NO_INDEX,
                     "GPUFEED_HTTP_BEARER_TOKEN holds a control character "
                     "(a line break?): it cannot be sent in a header");
  if (asprintf(&s->auth_header, "Authorization: Bearer %s", tok) < 0) {
    s->auth_header = NULL;
    return -ENOMEM;
  }
  struct curl_slist *l = curl_slist_append(NULL, s->auth_header);
  if (!l)
    return -ENOMEM;
  s->headers = l;
  return 0;
}

static int http_open(const char *location, const gf_remote_config *remote,
                     gf_storage **out) {
  *out = NULL;
  char shown[1024];
  gf_location_redact(location, shown, sizeof shown);
  gf_http_storage *s;
  int rc = gf_http_storage_open(location, shown, remote, &s);
  if (rc < 0)
    return rc;
  /* A web server's token; S3's flavour signs instead (storage_s3.c). */
  if ((rc = bearer(s)) < 0) {
    http_close(&s->base);
    return rc == -ENOMEM
               ? gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory")
               : rc;
  }
  *out = &s->base;
  return 0;
}

void gf_http_storage_display(const gf_http_storage *s, const char *name,
                             char *buf, size_t cap) {
  if (!s->display_root) {
    gf_http_url_display(&s->url, name, s->base.insecure, buf, cap);
    return;
  }
  if (name && name[0])
    snprintf(buf, cap, "%s/%s", s->display_root, name);
  else
    snprintf(buf, cap, "%s", s->display_root);
}

int gf_http_storage_open(const char *location, const char *shown,
                         const gf_remote_config *remote,
                         gf_http_storage **out) {
  *out = NULL;
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK)
    return gf_fail(GF_EREMOTE, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "libcurl did not initialise: %s",
                   curl_easy_strerror(curl_init_rc));
  gf_http_storage *s = calloc(1, sizeof *s);
  if (!s)
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  pthread_mutex_init(&s->pool_mu, NULL);
  for (unsigned i = 0; i < 8; i++)
    pthread_mutex_init(&s->share_mu[i], NULL);
  s->base.ops = &gf_storage_http;
  char why[160];
  int rc = gf_http_url_parse(location, &s->url, why, sizeof why);
  if (rc < 0) {
    http_close(&s->base);
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s",
                   rc == -ENOMEM ? "out of memory" : why);
  }
  if (remote->ca_file && access(remote->ca_file, R_OK) != 0) {
    int e = errno;
    http_close(&s->base);
    return gf_fail(-e, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "ca_file %.300s cannot be read: %s", remote->ca_file,
                   strerror(e));
  }
  s->remote = *remote;
  s->remote.cache_dir = NULL; /* not this storage's, and not kept */
  s->remote.s3 = NULL;
  s->remote.ca_file = NULL;
  s->base.insecure = s->url.tls && remote->tls_no_verify;
  char disp[1024];
  gf_http_url_display(&s->url, "", s->base.insecure, disp, sizeof disp);
  if (!(s->base.display = strdup(disp)) ||
      (remote->ca_file &&
       !(s->remote.ca_file = s->ca_file = strdup(remote->ca_file)))) {
    http_close(&s->base);
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  CURLSHcode sc = CURLSHE_NOMEM;
  if ((s->share = curl_share_init())) {
    sc = curl_share_setopt(s->share, CURLSHOPT_LOCKFUNC, share_lock);
    if (!sc)
      sc = curl_share_setopt(s->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    if (!sc)
      sc = curl_share_setopt(s->share, CURLSHOPT_USERDATA, s);
    if (!sc)
      sc = curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (!sc)
      sc = curl_share_setopt(s->share, CURLSHOPT_SHARE,
                             CURL_LOCK_DATA_SSL_SESSION);
  }
  /* Not CURL_LOCK_DATA_CONNECT: libcurl's shared connection cache is not
   * safe between threads (its known bug 11.11, curl issue 4915). Each
   * pooled easy handle and each engine's multi handle keeps its own
   * connections alive instead. */
  if (sc) {
    http_close(&s->base);
    return gf_fail(sc == CURLSHE_NOMEM ? -ENOMEM : GF_EREMOTE, shown,
                   GF_NO_INDEX, GF_NO_INDEX, "libcurl share: %s",
                   curl_share_strerror(sc));
  }
  if (s->base.insecure)
    gf_log(GF_LOG_WARN,
           "TLS verification is OFF for %s: neither the server's "
           "certificate nor its name is checked "
           "(gf_remote_config.tls_no_verify); its messages are marked "
           "\"%s\"",
           disp + strlen(GF_TLS_UNVERIFIED_MARK), GF_TLS_UNVERIFIED_MARK);
  *out = s;
  return 0;
}

/* ---- synchronous requests ----------------------------------------------- */

static CURL *pool_get(gf_http_storage *s) {
  CURL *e = NULL;
  pthread_mutex_lock(&s->pool_mu);
  if (s->npool)
    e = s->pool[--s->npool];
  pthread_mutex_unlock(&s->pool_mu);
  return e ? e : gf_http_easy_new(s);
}

static void pool_put(gf_http_storage *s, CURL *e) {
  /* Nothing of the request it served stays pointed at. */
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, (char *)NULL);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, (void *)NULL);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, (void *)NULL);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)NULL);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
  pthread_mutex_lock(&s->pool_mu);
  if (s->npool < GF_HTTP_POOL) {
    s->pool[s->npool++] = e;
    e = NULL;
  }
  pthread_mutex_unlock(&s->pool_mu);
  gf_http_easy_free(e);
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

int gf_http_run(gf_http_storage *s, gf_http_xfer *x, char *why, size_t cap) {
  x->st = s;
  if (!(x->easy = pool_get(s))) {
    snprintf(why, cap, "out of memory for a libcurl handle");
    return -ENOMEM;
  }
  gf_http_xfer_begin(x);
  int r;
  for (;;) {
    int64_t wait;
    r = gf_http_xfer_end(x, (int)curl_easy_perform(x->easy), &wait, why, cap);
    if (r != 0)
      break;
    sleep_ms(wait);
    gf_http_xfer_try(x);
  }
  pool_put(s, x->easy);
  return r > 0 ? 0 : r;
}

/* HEAD of name: its size and version tag. */
static int head(gf_http_storage *s, const char *name, const char *shown,
                uint64_t *size, char *version, size_t vcap) {
  char *url = gf_http_url_request(&s->url, name);
  if (!url)
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  gf_http_xfer x;
  memset(&x, 0, sizeof x);
  x.url = url;
  x.headers = s->headers;
  x.ask.head = true;
  char why[512];
  int rc = gf_http_run(s, &x, why, sizeof why);
  free(url);
  if (rc < 0)
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  gf_http_head_result(&x.reply, size, version, vcap);
  return 0;
}

static int http_stat(gf_storage *base, const char *name, bool follow,
                     gf_stat *out) {
  (void)follow;
  gf_http_storage *s = (gf_http_storage *)base;
  if (!name || !name[0]) {
    /* The root is a folder of objects; a server has nothing to say about
     * it (a HEAD of it may be an index page, a redirect or a 403). */
    out->type = GF_ENTRY_DIR;
    out->size = 0;
    return 0;
  }
  char shown[1024];
  gf_http_storage_display(s, name, shown, sizeof shown);
  int rc = head(s, name, shown, &out->size, out->version, sizeof out->version);
  if (rc == 0)
    out->type = GF_ENTRY_FILE;
  return rc;
}

static void http_obj_close(gf_object *base) {
  gf_http_object *o = (gf_http_object *)base;
  curl_slist_free_all(o->headers);
  free(o->url);
  free(o->base.display);
  free(o);
}

/* The object's header list: the storage's, and the condition that makes
 * the server refuse another version of it (412). A weak ETag cannot be
 * asked with If-Match (a weak one never matches); it is compared with
 * each reply's instead. */
static int object_headers(gf_http_storage *s, gf_http_object *o) {
  char line[GF_VERSION_TAG_MAX + 32] = "";
  const char *v = o->base.version;
  if (strncmp(v, "lm:", 3) == 0)
    snprintf(line, sizeof line, "If-Unmodified-Since: %s", v + 3);
  else if (v[0] == '"')
    snprintf(line, sizeof line, "If-Match: %s", v);
  struct curl_slist *l = NULL;
  if (s->auth_header && !(l = curl_slist_append(l, s->auth_header)))
    return -ENOMEM;
  if (line[0]) {
    struct curl_slist *m = curl_slist_append(l, line);
    if (!m) {
      curl_slist_free_all(l);
      return -ENOMEM;
    }
    l = m;
  }
  o->headers = l;
  return 0;
}

static int obj_open(gf_storage *base, const char *name, const gf_stat *known,
                    uint32_t flags, gf_object **out) {
  gf_http_storage *s = (gf_http_storage *)base;
  char shown[1024];
  gf_http_storage_display(s, name, shown, sizeof shown);
  if (flags & GF_OBJ_DIRECT)
    return gf_fail(-EINVAL, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "O_DIRECT is for local files, not a server's objects");
  if (!name || !name[0])
    return gf_fail(-EISDIR, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "the root is a folder of objects, not one");
  gf_http_object *o = calloc(1, sizeof *o);
  if (!o || !(o->base.display = strdup(shown)) ||
      !(o->url = gf_http_url_request(&s->url, name))) {
    if (o) {
      free(o->base.display);
      free(o);
    }
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  o->base.st = base;
  o->base.fd = -1;
  int rc = 0;
  if (known) {
    /* What a listing said: no HEAD. */
    o->base.size = known->size;
    gf_strlcpy(o->base.version, known->version, sizeof o->base.version);
  } else {
    rc = head(s, name, shown, &o->base.size, o->base.version,
              sizeof o->base.version);
  }
  if (rc == 0 && object_headers(s, o) < 0)
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  if (rc < 0) {
    http_obj_close(&o->base);
    return rc;
  }
  *out = &o->base;
  return 0;
}

static int http_obj_open(gf_storage *base, const char *name, uint32_t flags,
                         gf_object **out) {
  return obj_open(base, name, NULL, flags, out);
}

static int http_obj_open_known(gf_storage *base, const char *name,
                               const gf_stat *known, uint32_t flags,
                               gf_object **out) {
  return obj_open(base, name, known, flags, out);
}

static int64_t http_obj_read(gf_object *base, void *buf, uint64_t off,
                             uint64_t len) {
  gf_http_object *o = (gf_http_object *)base;
  gf_http_storage *s = (gf_http_storage *)base->st;
  if (off >= base->size || !len)
    return 0;
  if (len > base->size - off)
    len = base->size - off;
  gf_http_xfer x;
  memset(&x, 0, sizeof x);
  x.url = o->url;
  x.headers = o->headers;
  x.ask.off = off;
  x.ask.len = len;
  x.ask.size = base->size;
  x.ask.version = base->version;
  x.buf = buf;
  char why[512];
  int rc = gf_http_run(s, &x, why, sizeof why);
  if (rc < 0)
    return gf_fail(rc, base->display, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  return (int64_t)len;
}

/* One GET of the whole range whose body goes to sink as it comes; a try
 * that breaks is asked again from the first byte not handed, with the
 * object's condition (If-Match), as a read's is. */
static int64_t http_obj_stream(gf_object *base, uint64_t off, uint64_t len,
                               gf_stream_sink sink, void *ctx) {
  gf_http_object *o = (gf_http_object *)base;
  gf_http_storage *s = (gf_http_storage *)base->st;
  gf_http_xfer x;
  memset(&x, 0, sizeof x);
  x.url = o->url;
  x.headers = o->headers;
  x.ask.off = off;
  x.ask.len = len;
  x.ask.size = base->size;
  x.ask.version = base->version;
  x.sink = sink;
  x.sink_ctx = ctx;
  char why[512];
  int rc = gf_http_run(s, &x, why, sizeof why);
  if (rc < 0 && x.sink_rc < 0)
    return rc; /* the sink's, with the context it recorded */
  if (rc < 0)
    return gf_fail(rc, base->display, GF_NO_INDEX, off + x.got, "%s", why);
  return (int64_t)x.got;
}

/* The most a whole-object GET takes (http_slurp): an index or a sums
 * file of a shard of tens of thousands of samples. */
#define SLURP_BYTES (1u << 20)

/* A small object in one GET without a Range and without the HEAD an open
 * would make first (a shard's index, its sums: one round trip each at
 * create, not two). One larger than SLURP_BYTES: 1, opened and read. */
static int http_slurp(gf_storage *base, const char *name, uint64_t max,
                      char **buf, uint64_t *len) {
  gf_http_storage *s = (gf_http_storage *)base;
  if (!name || !name[0])
    return 1; /* obj_open says what the root is */
  uint64_t cap = max < SLURP_BYTES ? max : SLURP_BYTES;
  char shown[1024];
  gf_http_storage_display(s, name, shown, sizeof shown);
  char *url = gf_http_url_request(&s->url, name);
  char *b = malloc(cap + 1);
  if (!url || !b) {
    free(url);
    free(b);
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  gf_http_xfer x;
  memset(&x, 0, sizeof x);
  x.url = url;
  x.headers = s->headers;
  x.ask.whole = true;
  x.ask.len = cap;
  x.buf = (uint8_t *)b;
  char why[512];
  int rc = gf_http_run(s, &x, why, sizeof why);
  free(url);
  if (rc < 0) {
    free(b);
    if (x.overflow || (x.reply.length >= 0 && (uint64_t)x.reply.length > cap))
      return 1;
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  }
  b[x.got] = '\0';
  *buf = b;
  *len = x.got;
  return 0;
}

static void http_counters(gf_storage *st, gf_storage_counters *out) {
  gf_http_storage *s = (gf_http_storage *)st;
  out->requests = atomic_load_explicit(&s->requests, memory_order_relaxed);
  out->retries = atomic_load_explicit(&s->retries, memory_order_relaxed);
  out->failures = atomic_load_explicit(&s->failures, memory_order_relaxed);
  out->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
}

/* "http HOST:PORT", "https HOST:PORT, TLS verified" or "..., TLS NOT
 * VERIFIED": the server, never the path, user or query. */
static void http_describe(gf_storage *st, char *buf, size_t cap) {
  gf_http_storage *s = (gf_http_storage *)st;
  unsigned port = s->url.port ? s->url.port : s->url.tls ? 443 : 80;
  snprintf(buf, cap, "%s %s:%u%s",
           s->scheme ? s->scheme : s->url.tls ? "https" : "http", s->url.host,
           port,
           !s->url.tls        ? ""
           : s->base.insecure ? ", TLS NOT VERIFIED"
                              : ", TLS verified");
}

const gf_storage_ops gf_storage_http = {
    .name = "http",
    .caps = GF_STORAGE_REMOTE,
    .claims = http_claims,
    .open = http_open,
    .close = http_close,
    .stat = http_stat,
    .list = NULL,
    .resolve = NULL,
    .obj_open = http_obj_open,
    .obj_open_known = http_obj_open_known,
    .obj_close = http_obj_close,
    .obj_read = http_obj_read,
    .obj_stream = http_obj_stream,
    .slurp = http_slurp,
    .engine = &gf_http_engine,
    .counters = http_counters,
    .describe = http_describe,
    .display = http_display,
};
