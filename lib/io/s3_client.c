/* An S3 location's client (s3_client.h): the location parsed, where its
 * requests go, who signs them, and the signing. */
#include "io/s3_client.h"

#include "io/s3_config.h"
#include "io/s3_creds.h"
#include "io/s3_sigv4.h"
#include "io/storage_http.h" /* gf_http_url_parse, gf_http_encode_name */

#include <curl/curl.h> /* curl_slist */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Credentials that expire are fetched again this long before they do. */
#define REFRESH_AHEAD_S 300
#define REFRESH_EVERY_S 1

static void wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

static void drop_token(gf_s3_client *c) {
  if (c->session_token) {
    wipe(c->session_token, strlen(c->session_token));
    free(c->session_token);
    c->session_token = NULL;
  }
}

void gf_s3_client_free(gf_s3_client *c) {
  if (!c)
    return;
  drop_token(c);
  free(c->prefix);
  free(c->bucket_url);
  free(c->root_url);
  free(c->display_root);
  pthread_mutex_destroy(&c->mu);
  wipe(c, sizeof *c);
  free(c);
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

/* The caller's gf_s3_config checked. */
static int check_s3(const gf_s3_config *s, char *why, size_t cap) {
  if (s->struct_size < offsetof(gf_s3_config, reserved32) ||
      s->struct_size > sizeof *s) {
    snprintf(why, cap,
             "remote config: s3.struct_size %u is not sizeof(gf_s3_config) "
             "%zu (built against another gpufeed.h?)",
             s->struct_size, sizeof *s);
    return -EINVAL;
  }
  if (s->struct_size == sizeof *s) {
    for (size_t i = 0; i < sizeof s->reserved / sizeof s->reserved[0]; i++)
      if (s->reserved[i]) {
        snprintf(why, cap, "remote config: s3.reserved must be zero");
        return -EINVAL;
      }
    if (s->reserved32) {
      snprintf(why, cap, "remote config: s3.reserved32 must be zero");
      return -EINVAL;
    }
  }
  if (s->anonymous > 1) {
    snprintf(why, cap, "remote config: s3.anonymous is neither 0 nor 1");
    return -EINVAL;
  }
  if (s->addressing > 2) {
    snprintf(why, cap,
             "remote config: s3.addressing is not 0 (auto), 1 (path) or 2 "
             "(virtual)");
    return -EINVAL;
  }
  bool ak = s->access_key_id && s->access_key_id[0];
  bool sk = s->secret_access_key && s->secret_access_key[0];
  if (ak != sk) {
    snprintf(why, cap,
             "remote config: s3.access_key_id and s3.secret_access_key go "
             "together (one is given without the other)");
    return -EINVAL;
  }
  if (s->anonymous && ak) {
    snprintf(why, cap,
             "remote config: s3.anonymous with credentials given: choose one");
    return -EINVAL;
  }
  const char *fields[] = {s->access_key_id, s->secret_access_key,
                          s->session_token, s->region,
                          s->endpoint_url,  s->profile};
  const char *names[] = {"access_key_id", "secret_access_key", "session_token",
                         "region",        "endpoint_url",      "profile"};
  size_t caps[] = {128, 256, 4096, 64, 1024, 128};
  for (int i = 0; i < 6; i++) {
    if (!fields[i])
      continue;
    size_t n = strlen(fields[i]);
    if (n >= caps[i]) {
      snprintf(why, cap, "remote config: s3.%s is longer than %zu bytes",
               names[i], caps[i] - 1);
      return -EINVAL;
    }
    for (size_t k = 0; k < n; k++)
      if ((unsigned char)fields[i][k] < 0x20 || fields[i][k] == 0x7f) {
        snprintf(why, cap, "remote config: s3.%s holds a control character",
                 names[i]);
        return -EINVAL;
      }
  }
  if (s->endpoint_url && s->endpoint_url[0] &&
      strncasecmp(s->endpoint_url, "http://", 7) != 0 &&
      strncasecmp(s->endpoint_url, "https://", 8) != 0) {
    snprintf(why, cap,
             "remote config: s3.endpoint_url is not an http:// or https:// "
             "URL");
    return -EINVAL;
  }
  return 0;
}

/* The environment, with the caller's profile in place of AWS_PROFILE. */
static const char *env_with_profile(void *ctx, const char *name) {
  const char *profile = ctx;
  if (profile && (strcmp(name, "AWS_PROFILE") == 0 ||
                  strcmp(name, "AWS_DEFAULT_PROFILE") == 0))
    return profile;
  return getenv(name);
}

/* Returns 0 or -ENOMEM. */
static int set_creds(gf_s3_client *c, const char *ak, const char *sk,
                     const char *token) {
  snprintf(c->access_key, sizeof c->access_key, "%s", ak);
  snprintf(c->secret_key, sizeof c->secret_key, "%s", sk);
  drop_token(c);
  if (token && token[0] && !(c->session_token = strdup(token)))
    return -ENOMEM;
  return 0;
}

/* From the container or instance metadata service. Returns 1 (taken), 0
 * (none there: why says what was tried) or a negative code with why. */
static int fetch_creds(gf_s3_client *c, char *why, size_t cap) {
  gf_aws_fetched *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  int rc = gf_aws_creds_fetch(NULL, NULL, f, why, cap);
  if (rc == 1) {
    if (set_creds(c, f->access_key, f->secret_key, f->session_token) < 0)
      rc = -ENOMEM;
    c->expires = f->expires;
    c->fetched_at = time(NULL);
    snprintf(c->cred_source, sizeof c->cred_source, "%s", f->source);
  }
  gf_aws_fetched_clear(f);
  free(f);
  if (rc == -ENOMEM)
    snprintf(why, cap, "out of memory");
  return rc;
}

static int find_creds(gf_s3_client *c, const gf_s3_config *s3,
                      const gf_aws_config *cfg, const char *shown) {
  char why[600];
  if (s3 && s3->anonymous) {
    c->anonymous = true;
    snprintf(c->cred_source, sizeof c->cred_source,
             "none: unsigned requests (s3.anonymous)");
    return 0;
  }
  int rc = 0;
  if (s3 && s3->access_key_id && s3->access_key_id[0]) {
    rc = set_creds(c, s3->access_key_id, s3->secret_access_key,
                   s3->session_token);
    snprintf(c->cred_source, sizeof c->cred_source,
             "the caller's configuration (remote.s3)");
  } else if (cfg->have_credentials) {
    rc = set_creds(c, cfg->access_key, cfg->secret_key, cfg->session_token);
    snprintf(c->cred_source, sizeof c->cred_source, "%s", cfg->cred_source);
  } else {
    rc = fetch_creds(c, why, sizeof why);
    if (rc < 0)
      return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "AWS credentials: %s",
                     why);
    if (rc == 0)
      return gf_fail(
          -EACCES, shown, GF_NO_INDEX, GF_NO_INDEX,
          "no AWS credentials found: not in the environment "
          "(AWS_ACCESS_KEY_ID), not in profile %s of the shared files%s%s; "
          "%s. Set them as for the AWS CLI, or read a public bucket "
          "unsigned (--no-sign-request; remote.s3.anonymous)",
          cfg->profile, cfg->cred_note[0] ? " (" : "", cfg->cred_note, why);
    c->refreshable = true;
    rc = 0;
  }
  if (rc < 0)
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  return 0;
}

/* The bucket's request URL, from the endpoint and addressing. */
static char *bucket_url(const gf_s3_client *c, int addressing) {
  char *url = NULL;
  int k;
  const char *ep = c->endpoint, *sep = strstr(ep, "://");
  if (ep[0] && sep && addressing == GF_AWS_ADDRESSING_VIRTUAL) {
    /* scheme://bucket.host[:port][/path] */
    size_t el = strlen(ep);
    while (el && ep[el - 1] == '/')
      el--;
    size_t sl = (size_t)(sep + 3 - ep);
    k = asprintf(&url, "%.*s%s.%.*s", (int)sl, ep, c->bucket, (int)(el - sl),
                 sep + 3);
  } else if (ep[0]) {
    /* Path-style: what MinIO, Ceph and the emulators answer. */
    size_t el = strlen(ep);
    while (el && ep[el - 1] == '/')
      el--;
    k = asprintf(&url, "%.*s/%s", (int)el, ep, c->bucket);
  } else if (addressing == GF_AWS_ADDRESSING_PATH) {
    k = asprintf(&url, "https://s3.%s.amazonaws.com/%s", c->region, c->bucket);
  } else {
    k = asprintf(&url, "https://%s.s3.%s.amazonaws.com", c->bucket, c->region);
  }
  return k < 0 ? NULL : url;
}

char *gf_s3_client_url(const gf_s3_client *c, const char *key,
                       const char *query) {
  size_t n = gf_http_encode_name(key, NULL, 0);
  char *enc = malloc(n + 1), *url = NULL;
  if (!enc)
    return NULL;
  gf_http_encode_name(key, enc, n + 1);
  if (asprintf(&url, "%s/%s%s%s", c->bucket_url, enc, query ? "?" : "",
               query ? query : "") < 0)
    url = NULL;
  free(enc);
  return url;
}

int gf_s3_client_open(const char *location, const gf_remote_config *remote,
                      gf_s3_client **out) {
  *out = NULL;
  char shown[1024], why[600];
  snprintf(shown, sizeof shown, "%s", location);
  const gf_s3_config *s3 = remote ? remote->s3 : NULL;
  int rc;
  if (s3 && (rc = check_s3(s3, why, sizeof why)) < 0)
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  gf_s3_client *c = calloc(1, sizeof *c);
  gf_aws_config *cfg = calloc(1, sizeof *cfg);
  if (!c || !cfg) {
    free(c);
    free(cfg);
    return gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  pthread_mutex_init(&c->mu, NULL);
  const char *prefix;
  size_t plen;
  if ((rc = parse(location, c->bucket, sizeof c->bucket, &prefix, &plen, why,
                  sizeof why)) < 0) {
    rc = gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
    goto out;
  }
  if (!(c->prefix = strndup(prefix, plen)) ||
      asprintf(&c->display_root, "s3://%s%s%s", c->bucket, plen ? "/" : "",
               c->prefix) < 0) {
    c->display_root = NULL;
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  const char *profile =
      s3 && s3->profile && s3->profile[0] ? s3->profile : NULL;
  if ((rc = gf_aws_config_resolve(env_with_profile, (void *)profile, cfg, why,
                                  sizeof why)) < 0) {
    rc = gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
    goto out;
  }
  snprintf(c->region, sizeof c->region, "%s",
           s3 && s3->region && s3->region[0] ? s3->region : cfg->region);
  snprintf(c->endpoint, sizeof c->endpoint, "%s",
           s3 && s3->endpoint_url && s3->endpoint_url[0] ? s3->endpoint_url
                                                         : cfg->endpoint);
  int addressing = s3 && s3->addressing ? (int)s3->addressing : cfg->addressing;
  if ((rc = find_creds(c, s3, cfg, shown)) < 0)
    goto out;
  if (!(c->bucket_url = bucket_url(c, addressing)) ||
      !(c->root_url = plen ? gf_s3_client_url(c, c->prefix, NULL)
                           : strdup(c->bucket_url))) {
    rc = gf_fail(-ENOMEM, shown, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto out;
  }
  gf_http_url u;
  if ((rc = gf_http_url_parse(c->bucket_url, &u, why, sizeof why)) < 0) {
    rc = gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "the endpoint: %s", why);
    goto out;
  }
  unsigned def = u.tls ? 443 : 80;
  if (u.port && u.port != def)
    snprintf(c->host, sizeof c->host, "%s:%u", u.host, u.port);
  else
    snprintf(c->host, sizeof c->host, "%s", u.host);
  gf_http_url_free(&u);
  gf_log(GF_LOG_DEBUG, "s3: %s at %s, region %s (%s), credentials: %s",
         c->display_root, c->endpoint[0] ? c->endpoint : "AWS", c->region,
         s3 && s3->region && s3->region[0] ? "remote.s3" : cfg->region_source,
         c->cred_source);
  *out = c;
  c = NULL;
  rc = 0;
out:
  gf_aws_config_clear(cfg);
  free(cfg);
  gf_s3_client_free(c);
  return rc;
}

/* ---- signing ------------------------------------------------------------ */

static int hexv(int ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  ch = tolower(ch);
  return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* s[0..n) percent-decoded into out (n + 1 bytes). */
static void unescape(const char *s, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int a, b;
    if (s[i] == '%' && i + 2 < n && (a = hexv((unsigned char)s[i + 1])) >= 0 &&
        (b = hexv((unsigned char)s[i + 2])) >= 0) {
      out[k++] = (char)(a * 16 + b);
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
}

#define MAX_QUERY 16

/* Credentials fetched again when they expire within REFRESH_AHEAD_S, at
 * most once every REFRESH_EVERY_S (a service that keeps handing out ones
 * about to expire is not asked at every request); while a fetch fails the
 * current ones serve until they expire. Under c->mu. */
static int refresh_if_due(gf_s3_client *c, char *why, size_t cap) {
  time_t now = time(NULL);
  if (!c->refreshable || !c->expires || now + REFRESH_AHEAD_S < c->expires ||
      now - c->fetched_at < REFRESH_EVERY_S)
    return 0;
  int rc = fetch_creds(c, why, cap);
  if (rc == 1) {
    c->refreshes++;
    gf_log(GF_LOG_INFO, "s3: %s: credentials fetched again from %s",
           c->display_root, c->cred_source);
    return 0;
  }
  if (now < c->expires) {
    c->fetched_at = now; /* asked again in REFRESH_EVERY_S */
    gf_log(GF_LOG_WARN,
           "s3: %s: fetching fresh credentials from %s failed (%s): the "
           "current ones serve until they expire, in %lld s",
           c->display_root, c->cred_source, rc == 0 ? "none given" : why,
           (long long)(c->expires - now));
    return 0;
  }
  if (rc == 0) {
    snprintf(why, cap, "the credentials from %s expired and none came again",
             c->cred_source);
    rc = -EACCES;
  }
  return rc;
}

int gf_s3_client_sign(gf_s3_client *c, const char *method, const char *url,
                      const char *payload_hash, struct curl_slist **list,
                      char *why, size_t cap) {
  if (c->anonymous)
    return 0;
  /* The path as requested: after scheme://host[:port], up to the query. */
  const char *p = strstr(url, "://");
  p = p ? strchr(p + 3, '/') : NULL;
  char path[4096];
  size_t n = p ? strcspn(p, "?#") : 0;
  if (!p || n >= sizeof path) {
    snprintf(why, cap, "an object name too long to sign");
    return -EINVAL;
  }
  memcpy(path, p, n);
  path[n] = '\0';
  /* The query's pairs, decoded (the signer encodes them again, as S3). */
  gf_sigv4_pair q[MAX_QUERY];
  size_t nq = 0;
  char *qbuf = NULL;
  if (p[n] == '?') {
    const char *qs = p + n + 1;
    size_t ql = strcspn(qs, "#");
    if (!(qbuf = malloc(2 * ql + 2))) {
      snprintf(why, cap, "out of memory");
      return -ENOMEM;
    }
    char *w = qbuf;
    for (size_t i = 0; i < ql && nq < MAX_QUERY;) {
      size_t l = strcspn(qs + i, "&");
      if (l > ql - i)
        l = ql - i;
      const char *eq = memchr(qs + i, '=', l);
      size_t nl = eq ? (size_t)(eq - (qs + i)) : l;
      q[nq].name = w;
      unescape(qs + i, nl, w);
      w += strlen(w) + 1;
      q[nq].value = w;
      if (eq)
        unescape(eq + 1, l - nl - 1, w);
      else
        *w = '\0';
      w += strlen(w) + 1;
      nq++;
      i += l + 1;
    }
  }
  pthread_mutex_lock(&c->mu);
  int rc = refresh_if_due(c, why, cap);
  gf_sigv4_out o;
  if (rc == 0) {
    gf_sigv4_key k = {c->access_key, c->secret_key, c->session_token};
    gf_sigv4_request r = {
        method,     c->host,
        path,       q,
        nq,         NULL,
        0,          payload_hash ? payload_hash : GF_SIGV4_UNSIGNED,
        c->region,  "s3",
        time(NULL), true};
    rc = gf_sigv4_sign(&r, &k, &o, NULL, 0);
    if (rc < 0)
      snprintf(why, cap, "%s",
               rc == -ENOMEM ? "out of memory"
                             : "SigV4 refused the request's fields");
  }
  char *tok = NULL;
  if (rc == 0 && c->session_token &&
      asprintf(&tok, "x-amz-security-token: %s", c->session_token) < 0) {
    tok = NULL;
    rc = -ENOMEM;
    snprintf(why, cap, "out of memory");
  }
  pthread_mutex_unlock(&c->mu);
  free(qbuf);
  if (rc < 0)
    return rc;
  char line[1200];
  const char *name[] = {"Authorization", "x-amz-date", "x-amz-content-sha256"};
  const char *val[] = {o.authorization, o.amz_date, o.payload_hash};
  struct curl_slist *m;
  for (int i = 0; i < 4; i++) {
    if (i == 3 && !tok)
      break;
    if (i < 3)
      snprintf(line, sizeof line, "%s: %s", name[i], val[i]);
    m = curl_slist_append(*list, i < 3 ? line : tok);
    if (!m) {
      rc = -ENOMEM;
      snprintf(why, cap, "out of memory");
      break;
    }
    *list = m;
  }
  if (tok) {
    wipe(tok, strlen(tok));
    free(tok);
  }
  wipe(&o, sizeof o);
  wipe(line, sizeof line);
  return rc;
}

int gf_s3_client_expired(gf_s3_client *c, time_t signed_at, char *why,
                         size_t cap) {
  if (!c->refreshable)
    return 0;
  pthread_mutex_lock(&c->mu);
  int rc = 1; /* fetched again since this request was signed: use those */
  if (c->fetched_at <= signed_at) {
    rc = fetch_creds(c, why, cap);
    if (rc == 1) {
      c->refreshes++;
      gf_log(GF_LOG_INFO,
             "s3: %s: the store said the credentials expired: fetched "
             "again from %s",
             c->display_root, c->cred_source);
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}
