/* S3 and the stores that speak its API (s3://bucket/prefix): an HTTP
 * storage (storage_http.c: HEAD, ranged GETs with If-Match on the ETag,
 * retries, the engine's lanes) whose requests are signed by the location's
 * client (s3_client.c), each try anew, whose refused replies are read for
 * the store's error code and message (s3_xml.c; s3_codes.c says which
 * codes are retried, as the uploader's are), and which lists: the
 * whole prefix at the first list call (s3_list.c), the folders a walk asks
 * for then answered from that listing. Messages name objects as
 * s3://bucket/key, never the endpoint's credentials or the keys. */
#include "io/s3_client.h"
#include "io/s3_codes.h"
#include "io/s3_list.h"
#include "io/s3_xml.h"
#include "io/storage_http.h"

#include <curl/curl.h> /* the header lists */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The flavour's state (the HTTP storage's sign_ctx). */
typedef struct s3_state {
  gf_s3_client *c;
  pthread_mutex_t mu; /* listing */
  gf_s3_listing *listing;
  uint64_t pages; /* listing requests made */
} s3_state;

static void state_free(void *ctx) {
  s3_state *g = ctx;
  if (!g)
    return;
  gf_s3_client_free(g->c);
  gf_s3_listing_free(g->listing);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

static bool s3_claims(const char *location) {
  return strncasecmp(location, "s3://", 5) == 0;
}

static int sign(gf_http_storage *st, const gf_http_xfer *x, void **list,
                char *why, size_t cap) {
  s3_state *g = st->sign_ctx;
  struct curl_slist *l = NULL, *m;
  /* The request's own headers first (If-Match). */
  for (const struct curl_slist *h = x->headers; h; h = h->next) {
    if (!(m = curl_slist_append(l, h->data))) {
      curl_slist_free_all(l);
      snprintf(why, cap, "out of memory");
      return -ENOMEM;
    }
    l = m;
  }
  int rc = gf_s3_client_sign(g->c, x->ask.head ? "HEAD" : "GET", x->url, NULL,
                             &l, why, cap);
  if (rc < 0) {
    curl_slist_free_all(l);
    return rc;
  }
  *list = l;
  return 0;
}

/* A refused reply's XML error: its code and message in the cause;
 * ExpiredToken fetches the credentials again and retries. */
static void explain(gf_http_storage *st, const gf_http_xfer *x, int *code,
                    bool *retry, char *cause, size_t cap) {
  s3_state *g = st->sign_ctx;
  gf_s3_error e;
  if (!x->errlen || gf_s3_xml_error(x->errbody, x->errlen, &e) != 1 ||
      !e.code[0])
    return;
  char w[800] = "";
  if (gf_s3_code_expired(e.code)) {
    int r = gf_s3_client_expired(g->c, (time_t)x->signed_at, w, sizeof w);
    if (r == 1) {
      *code = GF_EREMOTE;
      *retry = true;
    } else if (r == 0) {
      snprintf(w, sizeof w, "the credentials from %s have expired: renew them",
               g->c->cred_source);
    }
  }
  if (gf_s3_code_retried(e.code)) {
    *code = GF_EREMOTE;
    *retry = true;
  }
  gf_http_scrub(st, e.message, sizeof e.message);
  char head[64];
  snprintf(head, sizeof head, "HTTP %d", x->reply.status);
  snprintf(cause, cap, "%s %s: %s%s%s%s", head, e.code,
           e.message[0] ? e.message : "(no message)",
           gf_s3_code_hint(e.code, false), w[0] ? "; " : "", w);
}

static void s3_display(const char *location, const gf_remote_config *remote,
                       char *buf, size_t cap) {
  (void)remote;
  /* An s3:// location holds no secret: shown as written, cut to fit. */
  snprintf(buf, cap, "%s", location);
}

/* ---- listing ------------------------------------------------------------ */

static s3_state *state_of(gf_storage *s) {
  return ((gf_http_storage *)s)->sign_ctx;
}

/* The listing, fetched at the first call. Under g->mu. */
static int listing(gf_storage *s, s3_state *g) {
  if (g->listing)
    return 0;
  char why[900];
  uint64_t pages = 0;
  int rc = gf_s3_listing_fetch((gf_http_storage *)s, g->c, &g->listing, &pages,
                               why, sizeof why);
  g->pages += pages;
  if (rc < 0)
    return gf_fail(rc, s->display, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  gf_log(GF_LOG_INFO, "s3: %s: %llu objects listed in %llu requests",
         s->display, (unsigned long long)gf_s3_listing_count(g->listing),
         (unsigned long long)pages);
  return 0;
}

static int s3_list(gf_storage *s, const char *dir, gf_list_fn fn, void *ctx) {
  s3_state *g = state_of(s);
  pthread_mutex_lock(&g->mu);
  int rc = listing(s, g);
  if (rc == 0) {
    rc = gf_s3_listing_dir(g->listing, dir, fn, ctx);
    if (rc == -ENOENT) {
      char where[1024];
      gf_http_storage_display((gf_http_storage *)s, dir, where, sizeof where);
      rc = gf_fail(-ENOENT, where, GF_NO_INDEX, GF_NO_INDEX,
                   "no object's name starts with it");
    }
  }
  pthread_mutex_unlock(&g->mu);
  return rc;
}

static void s3_list_done(gf_storage *s) {
  s3_state *g = state_of(s);
  pthread_mutex_lock(&g->mu);
  gf_s3_listing_free(g->listing);
  g->listing = NULL;
  pthread_mutex_unlock(&g->mu);
}

static int s3_stat(gf_storage *s, const char *name, bool follow, gf_stat *out) {
  s3_state *g = state_of(s);
  pthread_mutex_lock(&g->mu);
  if (g->listing) {
    int rc = gf_s3_listing_stat(g->listing, name, out);
    pthread_mutex_unlock(&g->mu);
    if (rc < 0) {
      char where[1024];
      gf_http_storage_display((gf_http_storage *)s, name, where, sizeof where);
      rc = gf_fail(rc, where, GF_NO_INDEX, GF_NO_INDEX,
                   "no such object (in the listing)");
    }
    return rc;
  }
  pthread_mutex_unlock(&g->mu);
  return gf_storage_http.stat(s, name, follow, out);
}

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static gf_storage_ops s3_ops;

/* The HTTP storage's table, with S3's listing: its reads and streams
 * (obj_stream) as they are, each try signed anew by sign. */
static void make_ops(void) {
  s3_ops = gf_storage_http;
  s3_ops.name = "s3";
  s3_ops.caps = GF_STORAGE_REMOTE | GF_STORAGE_LIST;
  s3_ops.claims = s3_claims;
  s3_ops.open = NULL; /* gf_storage_s3's */
  s3_ops.display = s3_display;
  s3_ops.stat = s3_stat;
  s3_ops.list = s3_list;
  s3_ops.list_done = s3_list_done;
}

static int s3_open(const char *location, const gf_remote_config *remote,
                   gf_storage **out) {
  *out = NULL;
  pthread_once(&ops_once, make_ops);
  char shown[1024];
  s3_display(location, remote, shown, sizeof shown);
  s3_state *g = calloc(1, sizeof *g);
  if (!g)
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  pthread_mutex_init(&g->mu, NULL);
  int rc = gf_s3_client_open(location, remote, &g->c);
  if (rc < 0) {
    state_free(g);
    return rc;
  }
  gf_http_storage *s;
  if ((rc = gf_http_storage_open(g->c->root_url, shown, remote, &s)) < 0) {
    state_free(g);
    return rc;
  }
  s->base.ops = &s3_ops;
  s->scheme = "s3";
  free(s->base.display);
  s->base.display = strdup(g->c->display_root);
  s->display_root = strdup(g->c->display_root);
  s->sign = sign;
  s->sign_ctx = g;
  s->sign_free = state_free;
  s->explain = explain;
  if (!s->base.display || !s->display_root) {
    s3_ops.close(&s->base);
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  *out = &s->base;
  return 0;
}

/* The registry's entry: what claims s3:// and opens it. The storage
 * opened is an HTTP storage with S3's flavour (its scheme, display root,
 * signer and listing). */
const gf_storage_ops gf_storage_s3 = {
    .name = "s3",
    .caps = GF_STORAGE_REMOTE | GF_STORAGE_LIST,
    .claims = s3_claims,
    .open = s3_open,
    .display = s3_display,
};
