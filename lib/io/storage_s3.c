/* S3 and the stores that speak its API (s3://bucket/prefix): an HTTP
 * storage (storage_http.c: HEAD, ranged GETs with If-Match on the ETag,
 * retries, the engine's lanes) whose requests are signed with AWS
 * Signature Version 4 (s3_sigv4.c), each try anew. Where the store is
 * and who asks come from the AWS conventions (s3_config.c): an endpoint
 * configured (MinIO, Ceph, moto, R2...) is addressed path-style,
 * endpoint/bucket/key; none means AWS itself, virtual-hosted,
 * https://bucket.s3.REGION.amazonaws.com/key. Messages name objects as
 * s3://bucket/key, never the endpoint's credentials or the keys. The
 * storage opened is an HTTP storage with S3's flavour: gf_storage_s3
 * below only claims and opens. */
#include "io/s3_config.h"
#include "io/s3_sigv4.h"
#include "io/storage_http.h"

#include <curl/curl.h> /* the header lists */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct s3_signer {
  char access_key[128];
  char secret_key[256]; /* a secret */
  char *session_token;  /* a secret; NULL when none */
  char region[64];
  bool anonymous; /* no credentials: requests go unsigned */
} s3_signer;

static void wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

static void signer_free(void *ctx) {
  s3_signer *g = ctx;
  if (!g)
    return;
  if (g->session_token) {
    wipe(g->session_token, strlen(g->session_token));
    free(g->session_token);
  }
  wipe(g, sizeof *g);
  free(g);
}

static bool s3_claims(const char *location) {
  return strncasecmp(location, "s3://", 5) == 0;
}

/* s3://bucket[/prefix]: the bucket (S3's rules for names: 3 to 63 of
 * a-z 0-9 . -) and the prefix without leading or trailing '/'. */
static int parse(const char *location, char *bucket, size_t bcap,
                 const char **prefix, size_t *plen, char *why, size_t cap) {
  const char *p = location + 5, *slash = strchr(p, '/');
  size_t n = slash ? (size_t)(slash - p) : strlen(p);
  if (n < 3 || n > 63 || n >= bcap) {
    snprintf(why, cap, "a bucket name has 3 to 63 characters");
    return -EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '-')) {
      snprintf(why, cap,
               "a bucket name holds only a-z, 0-9, '.' and '-' (character "
               "%zu)",
               i + 1);
      return -EINVAL;
    }
  }
  memcpy(bucket, p, n);
  bucket[n] = '\0';
  const char *q = slash ? slash : p + n;
  while (*q == '/')
    q++;
  size_t m = strlen(q);
  while (m && q[m - 1] == '/')
    m--;
  if (memchr(q, '?', m) || memchr(q, '#', m)) {
    snprintf(why, cap, "an s3:// location has no query or fragment");
    return -EINVAL;
  }
  *prefix = q;
  *plen = m;
  return 0;
}

/* The Host header curl sends for the storage's URL. */
static void host_of(const gf_http_storage *s, char *buf, size_t cap) {
  unsigned def = s->url.tls ? 443 : 80;
  if (s->url.port && s->url.port != def)
    snprintf(buf, cap, "%s:%u", s->url.host, s->url.port);
  else
    snprintf(buf, cap, "%s", s->url.host);
}

static int sign(gf_http_storage *st, const gf_http_xfer *x, void **list,
                char *why, size_t cap) {
  s3_signer *g = st->sign_ctx;
  struct curl_slist *l = NULL, *m;
  /* The request's own headers first (If-Match). */
  for (const struct curl_slist *h = x->headers; h; h = h->next) {
    if (!(m = curl_slist_append(l, h->data)))
      goto oom;
    l = m;
  }
  if (g->anonymous) {
    *list = l;
    return 0;
  }
  /* The path as requested: after scheme://host[:port], up to the query. */
  const char *p = strstr(x->url, "://");
  p = p ? strchr(p + 3, '/') : NULL;
  char path[4096];
  size_t n = p ? strcspn(p, "?#") : 0;
  if (!p || n >= sizeof path) {
    snprintf(why, cap, "an object name too long to sign");
    curl_slist_free_all(l);
    return -EINVAL;
  }
  memcpy(path, p, n);
  path[n] = '\0';
  char host[300];
  host_of(st, host, sizeof host);
  gf_sigv4_key k = {g->access_key, g->secret_key, g->session_token};
  gf_sigv4_request r = {x->ask.head ? "HEAD" : "GET",
                        host,
                        path,
                        NULL,
                        0,
                        NULL,
                        0,
                        GF_SIGV4_UNSIGNED,
                        g->region,
                        "s3",
                        time(NULL),
                        true};
  gf_sigv4_out o;
  int rc = gf_sigv4_sign(&r, &k, &o, NULL, 0);
  if (rc < 0) {
    snprintf(why, cap, "%s",
             rc == -ENOMEM ? "out of memory"
                           : "SigV4 refused the request's fields");
    curl_slist_free_all(l);
    return rc;
  }
  char line[1200];
  const char *name[] = {"Authorization", "x-amz-date", "x-amz-content-sha256"};
  const char *val[] = {o.authorization, o.amz_date, o.payload_hash};
  for (int i = 0; i < 3; i++) {
    snprintf(line, sizeof line, "%s: %s", name[i], val[i]);
    if (!(m = curl_slist_append(l, line)))
      goto oom;
    l = m;
  }
  if (g->session_token) {
    char *t = NULL;
    if (asprintf(&t, "x-amz-security-token: %s", g->session_token) < 0)
      goto oom;
    m = curl_slist_append(l, t);
    wipe(t, strlen(t));
    free(t);
    if (!m)
      goto oom;
    l = m;
  }
  wipe(&o, sizeof o);
  *list = l;
  return 0;
oom:
  curl_slist_free_all(l);
  snprintf(why, cap, "out of memory");
  return -ENOMEM;
}

static void s3_display(const char *location, const gf_remote_config *remote,
                       char *buf, size_t cap) {
  (void)remote;
  /* An s3:// location holds no secret: shown as written, cut to fit. */
  snprintf(buf, cap, "%s", location);
}

static int s3_open(const char *location, const gf_remote_config *remote,
                   gf_storage **out) {
  *out = NULL;
  char shown[1024];
  s3_display(location, remote, shown, sizeof shown);
  char bucket[64], why[256];
  const char *prefix;
  size_t plen;
  int rc =
      parse(location, bucket, sizeof bucket, &prefix, &plen, why, sizeof why);
  if (rc < 0)
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  gf_aws_config *cfg = calloc(1, sizeof *cfg);
  s3_signer *g = calloc(1, sizeof *g);
  char *pfx = malloc(plen + 1), *enc = NULL, *url = NULL;
  if (!cfg || !g || !pfx) {
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  memcpy(pfx, prefix, plen);
  pfx[plen] = '\0';
  if ((rc = gf_aws_config_resolve(NULL, NULL, cfg, why, sizeof why)) < 0) {
    rc = gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
    goto out;
  }
  size_t elen = gf_sigv4_encode(pfx, true, NULL, 0);
  if (!(enc = malloc(elen + 1))) {
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  gf_sigv4_encode(pfx, true, enc, elen + 1);
  int k;
  const char *sep = strstr(cfg->endpoint, "://");
  if (cfg->endpoint[0] && sep && cfg->addressing == GF_AWS_ADDRESSING_VIRTUAL) {
    /* scheme://bucket.host[:port][/path]/prefix */
    size_t el = strlen(cfg->endpoint);
    while (el && cfg->endpoint[el - 1] == '/')
      el--;
    k = asprintf(&url, "%.*s%s.%.*s/%s", (int)(sep + 3 - cfg->endpoint),
                 cfg->endpoint, bucket,
                 (int)(el - (size_t)(sep + 3 - cfg->endpoint)), sep + 3, enc);
  } else if (cfg->endpoint[0]) {
    /* Path-style: what MinIO, Ceph and the emulators answer. */
    size_t el = strlen(cfg->endpoint);
    while (el && cfg->endpoint[el - 1] == '/')
      el--;
    k = asprintf(&url, "%.*s/%s%s%s", (int)el, cfg->endpoint, bucket,
                 enc[0] ? "/" : "", enc);
  } else if (cfg->addressing == GF_AWS_ADDRESSING_PATH) {
    k = asprintf(&url, "https://s3.%s.amazonaws.com/%s%s%s", cfg->region,
                 bucket, enc[0] ? "/" : "", enc);
  } else {
    k = asprintf(&url, "https://%s.s3.%s.amazonaws.com/%s", bucket, cfg->region,
                 enc);
  }
  if (k < 0) {
    url = NULL;
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  gf_http_storage *s;
  if ((rc = gf_http_storage_open(url, shown, remote, &s)) < 0)
    goto out;
  s->scheme = "s3";
  char root[1024];
  snprintf(root, sizeof root, "s3://%s%s%s", bucket, pfx[0] ? "/" : "", pfx);
  free(s->base.display);
  s->base.display = strdup(root);
  s->display_root = strdup(root);
  if (!s->base.display || !s->display_root) {
    gf_storage_http.close(&s->base);
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  g->anonymous = !cfg->have_credentials;
  snprintf(g->access_key, sizeof g->access_key, "%s", cfg->access_key);
  snprintf(g->secret_key, sizeof g->secret_key, "%s", cfg->secret_key);
  snprintf(g->region, sizeof g->region, "%s", cfg->region);
  if (cfg->session_token[0] &&
      !(g->session_token = strdup(cfg->session_token))) {
    gf_storage_http.close(&s->base);
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  s->sign = sign;
  s->sign_ctx = g;
  s->sign_free = signer_free;
  g = NULL;
  gf_log(GF_LOG_DEBUG, "s3: %s at %s, region %s (%s), credentials: %s", root,
         cfg->endpoint[0] ? cfg->endpoint : "AWS", cfg->region,
         cfg->region_source,
         cfg->have_credentials ? cfg->cred_source : "none (unsigned requests)");
  *out = &s->base;
  rc = 0;
out:
  if (cfg) {
    gf_aws_config_clear(cfg);
    free(cfg);
  }
  signer_free(g);
  free(pfx);
  free(enc);
  free(url);
  return rc;
}

/* The registry's entry: what claims s3:// and opens it. The storage
 * opened is an HTTP storage with S3's flavour (its scheme, display root
 * and signer): its table is gf_storage_http's, engine and all. */
const gf_storage_ops gf_storage_s3 = {
    .name = "s3",
    .caps = GF_STORAGE_REMOTE,
    .claims = s3_claims,
    .open = s3_open,
    .display = s3_display,
};
