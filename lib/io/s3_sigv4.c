/* AWS Signature Version 4 (s3_sigv4.h). */
#include "io/s3_sigv4.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A string grown as it is written; err once a write failed. */
typedef struct sb {
  char *p;
  size_t len, cap;
  bool err;
} sb;

static void sb_put(sb *b, const char *s, size_t n) {
  if (b->err)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->err = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_str(sb *b, const char *s) { sb_put(b, s, strlen(s)); }

static bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

size_t gf_sigv4_encode(const char *s, bool keep_slash, char *buf, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char e[4] = {(char)*p, 0, 0, 0};
    size_t k = 1;
    if (!unreserved(*p) && !(keep_slash && *p == '/')) {
      e[0] = '%';
      e[1] = hex[*p >> 4];
      e[2] = hex[*p & 15];
      k = 3;
    }
    for (size_t i = 0; i < k; i++, n++)
      if (n + 1 < cap)
        buf[n] = e[i];
  }
  if (cap)
    buf[n < cap ? n : cap - 1] = '\0';
  return n;
}

static void sb_encode(sb *b, const char *s, bool keep_slash) {
  char small[256];
  size_t need = gf_sigv4_encode(s, keep_slash, small, sizeof small);
  if (need < sizeof small) {
    sb_put(b, small, need);
    return;
  }
  char *big = malloc(need + 1);
  if (!big) {
    b->err = true;
    return;
  }
  gf_sigv4_encode(s, keep_slash, big, need + 1);
  sb_put(b, big, need);
  free(big);
}

static void to_hex(const unsigned char *d, size_t n, char *out) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[2 * n] = '\0';
}

/* SHA-256 fetched once (OpenSSL 3's one-shot calls fetch it each time:
 * most of a signature's cost). */
static EVP_MD *g_md;
static pthread_once_t g_md_once = PTHREAD_ONCE_INIT;
static void fetch_md(void) { g_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

static const EVP_MD *md(void) {
  pthread_once(&g_md_once, fetch_md);
  return g_md ? g_md : EVP_sha256();
}

/* A digest context a thread keeps (freed at its exit). */
static pthread_key_t g_ctx_key;
static pthread_once_t g_ctx_once = PTHREAD_ONCE_INIT;
static void ctx_free(void *p) { EVP_MD_CTX_free(p); }
static void make_ctx_key(void) { pthread_key_create(&g_ctx_key, ctx_free); }

static EVP_MD_CTX *thread_ctx(void) {
  pthread_once(&g_ctx_once, make_ctx_key);
  EVP_MD_CTX *c = pthread_getspecific(g_ctx_key);
  if (!c && (c = EVP_MD_CTX_new()) && pthread_setspecific(g_ctx_key, c)) {
    EVP_MD_CTX_free(c);
    c = NULL;
  }
  return c;
}

/* SHA-256 of the concatenation of up to two parts. */
static bool sha256(const void *a, size_t alen, const void *b, size_t blen,
                   unsigned char out[32]) {
  EVP_MD_CTX *c = thread_ctx();
  unsigned int n = 0;
  return c && EVP_DigestInit_ex(c, md(), NULL) &&
         EVP_DigestUpdate(c, a, alen) &&
         (!blen || EVP_DigestUpdate(c, b, blen)) &&
         EVP_DigestFinal_ex(c, out, &n) && n == 32;
}

void gf_sigv4_sha256_hex(const void *data, size_t len, char hex[65]) {
  unsigned char d[32];
  if (!sha256(data, len, NULL, 0, d))
    SHA256(data, len, d);
  to_hex(d, sizeof d, hex);
}

/* HMAC-SHA256 (RFC 2104) over the fetched digest: key at most 64 bytes
 * here (the secret's "AWS4" + 256 bytes is hashed first, as the RFC
 * says). */
static bool hmac(const void *key, size_t klen, const char *msg, size_t mlen,
                 unsigned char out[32]) {
  unsigned char k[64] = {0}, pad[64], inner[32];
  if (klen > 64) {
    if (!sha256(key, klen, NULL, 0, k))
      return false;
  } else {
    memcpy(k, key, klen);
  }
  for (int i = 0; i < 64; i++)
    pad[i] = k[i] ^ 0x36;
  bool ok = sha256(pad, 64, msg, mlen, inner);
  for (int i = 0; i < 64; i++)
    pad[i] = k[i] ^ 0x5c;
  ok = ok && sha256(pad, 64, inner, 32, out);
  OPENSSL_cleanse(k, sizeof k);
  OPENSSL_cleanse(pad, sizeof pad);
  return ok;
}

/* The signing key of the last (secret, date, region, service) a thread
 * signed with: derived once a day, not once a request (4 HMACs). The
 * secret itself is not kept: its SHA-256 tells it apart. */
typedef struct key_cache {
  unsigned char secret_hash[32];
  char scope[200];
  unsigned char key[32];
  bool valid;
} key_cache;
static _Thread_local key_cache t_key;

/* A query parameter or header, encoded (query) or canonicalised (header),
 * for sorting. */
typedef struct item {
  char *name;
  char *value;
} item;

static int cmp_item(const void *a, const void *b) {
  const item *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

static char *dup_encoded(const char *s) {
  size_t need = gf_sigv4_encode(s, false, NULL, 0);
  char *p = malloc(need + 1);
  if (p)
    gf_sigv4_encode(s, false, p, need + 1);
  return p;
}

/* A header's name lower-cased, its value trimmed with runs of spaces
 * inside made one (the canonical form). NULL name: out of memory. */
static item canon_header(const char *name, const char *value) {
  item it = {NULL, NULL};
  size_t nl = strlen(name), vl = strlen(value);
  it.name = malloc(nl + 1);
  it.value = malloc(vl + 1);
  if (!it.name || !it.value) {
    free(it.name);
    free(it.value);
    it.name = it.value = NULL;
    return it;
  }
  for (size_t i = 0; i <= nl; i++)
    it.name[i] = (char)tolower((unsigned char)name[i]);
  size_t o = 0;
  bool space = false;
  for (size_t i = 0; i < vl; i++) {
    char c = value[i];
    if (c == ' ' || c == '\t') {
      space = o > 0;
      continue;
    }
    if (space)
      it.value[o++] = ' ';
    space = false;
    it.value[o++] = c;
  }
  it.value[o] = '\0';
  return it;
}

static bool has_crlf(const char *s) { return strpbrk(s, "\r\n") != NULL; }

static bool reserved_name(const char *name) {
  static const char *const ours[] = {"host", "x-amz-date",
                                     "x-amz-content-sha256",
                                     "x-amz-security-token", "authorization"};
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
    if (strcasecmp(name, ours[i]) == 0)
      return true;
  return false;
}

static void free_items(item *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) {
    free(v[i].name);
    free(v[i].value);
  }
  free(v);
}

int gf_sigv4_sign(const gf_sigv4_request *r, const gf_sigv4_key *k,
                  gf_sigv4_out *out, char *canon, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!r->method || !r->host || !r->path || r->path[0] != '/' || !r->region ||
      !r->service || !k->access_key || !k->secret_key ||
      strlen(k->secret_key) > 256 || strlen(r->region) > 64 ||
      strlen(r->service) > 64 || strlen(k->access_key) > 256 ||
      has_crlf(r->host))
    return -EINVAL;
  bool token = k->session_token && k->session_token[0];
  if (token && has_crlf(k->session_token))
    return -EINVAL;
  const char *ph = r->payload_hash ? r->payload_hash : GF_SIGV4_EMPTY_SHA256;
  if (strlen(ph) >= sizeof out->payload_hash)
    return -EINVAL;
  snprintf(out->payload_hash, sizeof out->payload_hash, "%s", ph);
  struct tm tm;
  if (!gmtime_r(&r->when, &tm))
    return -EINVAL;
  strftime(out->amz_date, sizeof out->amz_date, "%Y%m%dT%H%M%SZ", &tm);
  char date[9];
  memcpy(date, out->amz_date, 8);
  date[8] = '\0';

  int rc = -ENOMEM;
  size_t nh = r->nheaders + 3 + token, nq = r->nquery, h = 0, q = 0;
  item *hs = calloc(nh, sizeof *hs), *qs = calloc(nq ? nq : 1, sizeof *qs);
  sb c = {0}, s = {0};
  if (!hs || !qs)
    goto out;
  for (size_t i = 0; i < r->nheaders; i++) {
    const gf_sigv4_pair *p = &r->headers[i];
    if (!p->name || !p->value || !p->name[0] || has_crlf(p->name) ||
        has_crlf(p->value) || strchr(p->name, ':') || reserved_name(p->name)) {
      rc = -EINVAL;
      goto out;
    }
    if (!(hs[h] = canon_header(p->name, p->value)).name)
      goto out;
    h++;
  }
  const gf_sigv4_pair ours[4] = {
      {"host", r->host},
      {"x-amz-content-sha256", ph},
      {"x-amz-date", out->amz_date},
      {"x-amz-security-token", token ? k->session_token : ""}};
  for (size_t i = 0; i < 3u + token; i++) {
    if (!(hs[h] = canon_header(ours[i].name, ours[i].value)).name)
      goto out;
    h++;
  }
  for (size_t i = 0; i < nq; i++) {
    const gf_sigv4_pair *p = &r->query[i];
    if (!p->name) {
      rc = -EINVAL;
      goto out;
    }
    qs[q].name = dup_encoded(p->name);
    qs[q].value = dup_encoded(p->value ? p->value : "");
    q++;
    if (!qs[q - 1].name || !qs[q - 1].value)
      goto out;
  }
  qsort(hs, h, sizeof *hs, cmp_item);
  qsort(qs, q, sizeof *qs, cmp_item);
  for (size_t i = 1; i < h; i++)
    if (strcmp(hs[i].name, hs[i - 1].name) == 0) {
      rc = -EINVAL; /* a header given twice */
      goto out;
    }

  /* The canonical request. */
  sb_str(&c, r->method);
  sb_put(&c, "\n", 1);
  if (r->path_encoded)
    sb_str(&c, r->path);
  else
    sb_encode(&c, r->path, true);
  sb_put(&c, "\n", 1);
  for (size_t i = 0; i < q; i++) {
    if (i)
      sb_put(&c, "&", 1);
    sb_str(&c, qs[i].name);
    sb_put(&c, "=", 1);
    sb_str(&c, qs[i].value);
  }
  sb_put(&c, "\n", 1);
  for (size_t i = 0; i < h; i++) {
    sb_str(&c, hs[i].name);
    sb_put(&c, ":", 1);
    sb_str(&c, hs[i].value);
    sb_put(&c, "\n", 1);
  }
  sb_put(&c, "\n", 1);
  sb sh = {0};
  for (size_t i = 0; i < h; i++) {
    if (i)
      sb_put(&sh, ";", 1);
    sb_str(&sh, hs[i].name);
  }
  if (sh.err) {
    free(sh.p);
    goto out;
  }
  sb_str(&c, sh.p);
  sb_put(&c, "\n", 1);
  sb_str(&c, ph);
  if (c.err) {
    free(sh.p);
    goto out;
  }
  if (canon && cap)
    snprintf(canon, cap, "%s", c.p);

  /* The string to sign, the signing key, the signature. */
  char chash[65], scope[200];
  unsigned char cd[32];
  if (!sha256(c.p, c.len, NULL, 0, cd)) {
    free(sh.p);
    goto out;
  }
  to_hex(cd, sizeof cd, chash);
  snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, r->region,
           r->service);
  sb_str(&s, "AWS4-HMAC-SHA256\n");
  sb_str(&s, out->amz_date);
  sb_put(&s, "\n", 1);
  sb_str(&s, scope);
  sb_put(&s, "\n", 1);
  sb_str(&s, chash);
  unsigned char sh_secret[32], sig[32];
  bool ok = !s.err &&
            sha256(k->secret_key, strlen(k->secret_key), NULL, 0, sh_secret);
  if (ok && !(t_key.valid && strcmp(t_key.scope, scope) == 0 &&
              memcmp(t_key.secret_hash, sh_secret, 32) == 0)) {
    char secret[4 + 257];
    int sl = snprintf(secret, sizeof secret, "AWS4%s", k->secret_key);
    unsigned char k1[32], k2[32], k3[32];
    t_key.valid = false;
    ok = hmac(secret, (size_t)sl, date, 8, k1) &&
         hmac(k1, 32, r->region, strlen(r->region), k2) &&
         hmac(k2, 32, r->service, strlen(r->service), k3) &&
         hmac(k3, 32, "aws4_request", 12, t_key.key);
    OPENSSL_cleanse(secret, sizeof secret);
    OPENSSL_cleanse(k1, sizeof k1);
    OPENSSL_cleanse(k2, sizeof k2);
    OPENSSL_cleanse(k3, sizeof k3);
    if (ok) {
      memcpy(t_key.secret_hash, sh_secret, 32);
      snprintf(t_key.scope, sizeof t_key.scope, "%s", scope);
      t_key.valid = true;
    }
  }
  ok = ok && hmac(t_key.key, 32, s.p, s.len, sig);
  if (!ok) {
    free(sh.p);
    goto out;
  }
  to_hex(sig, sizeof sig, out->signature);
  int n = snprintf(out->authorization, sizeof out->authorization,
                   "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,"
                   "Signature=%s",
                   k->access_key, scope, sh.p, out->signature);
  free(sh.p);
  rc = n > 0 && (size_t)n < sizeof out->authorization ? 0 : -EINVAL;
out:
  free_items(hs, h);
  free_items(qs, q);
  if (c.p)
    OPENSSL_cleanse(c.p, c.cap); /* the session token may be there */
  free(c.p);
  free(s.p);
  return rc;
}
