/* Response heads of the HTTP(S) storage: the status line and the headers
 * gpufeed reads (Content-Length, Content-Range, ETag, Last-Modified,
 * Retry-After, Content-Encoding), and the judgement of a reply against
 * what was asked, made before any byte of its body is taken: a body is
 * taken only when it is exactly the bytes asked of the version opened.
 * No libcurl here: the bytes come from curl's header callback, or from a
 * fuzzer (tests/fuzz/fuzz_http_reply.c). */
#include "io/storage_http.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void gf_http_reply_init(gf_http_reply *r) {
  memset(r, 0, sizeof *r);
  r->length = -1;
  r->total = -1;
  r->retry_after_ms = -1;
}

/* Leading and trailing spaces and tabs (and a line's CR LF) off. */
static void trim(const char **s, size_t *n) {
  while (*n && (**s == ' ' || **s == '\t'))
    (*s)++, (*n)--;
  while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' ||
                (*s)[*n - 1] == '\r' || (*s)[*n - 1] == '\n'))
    (*n)--;
}

/* Digits [s, s + n) as a number <= max: the count of digits taken (0:
 * none, or past max). */
static size_t digits(const char *s, size_t n, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < n && isdigit((unsigned char)s[i]); i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (max - d) / 10)
      return 0;
    v = v * 10 + d;
  }
  *out = v;
  return i;
}

int gf_http_parse_content_range(const char *v, size_t len, uint64_t *first,
                                uint64_t *last, int64_t *total) {
  trim(&v, &len);
  if (len < 6 || strncasecmp(v, "bytes ", 6) != 0)
    return -EINVAL;
  v += 6, len -= 6;
  uint64_t a, b, t;
  size_t k = digits(v, len, INT64_MAX, &a);
  if (!k || k == len || v[k] != '-')
    return -EINVAL;
  v += k + 1, len -= k + 1;
  k = digits(v, len, INT64_MAX, &b);
  if (!k || k == len || v[k] != '/' || b < a)
    return -EINVAL;
  v += k + 1, len -= k + 1;
  if (len == 1 && v[0] == '*') {
    *total = -1;
  } else {
    k = digits(v, len, INT64_MAX, &t);
    if (!k || k != len || b >= t)
      return -EINVAL;
    *total = (int64_t)t;
  }
  *first = a;
  *last = b;
  return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

/* An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the form HTTP
 * servers send, as seconds since the epoch. */
static int parse_http_date(const char *s, size_t n, int64_t *out) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
      s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' ||
      memcmp(s + 26, "GMT", 3) != 0)
    return -EINVAL;
  unsigned m = 0;
  for (; m < 12; m++)
    if (memcmp(months + 3 * m, s + 8, 3) == 0)
      break;
  uint64_t day, year, hh, mm, ss;
  if (m == 12 || digits(s + 5, 2, 99, &day) != 2 ||
      digits(s + 12, 4, 9999, &year) != 4 || digits(s + 17, 2, 99, &hh) != 2 ||
      digits(s + 20, 2, 99, &mm) != 2 || digits(s + 23, 2, 99, &ss) != 2 ||
      day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60)
    return -EINVAL;
  *out = days_from_civil((int64_t)year, m + 1, (unsigned)day) * 86400 +
         (int64_t)(hh * 3600 + mm * 60 + ss);
  return 0;
}

int gf_http_parse_retry_after(const char *v, size_t len, int64_t now_s,
                              int64_t *ms) {
  trim(&v, &len);
  uint64_t s;
  /* A day at most: a server asking for more is not waited for anyway
   * (the retry budget is shorter). */
  if (len && isdigit((unsigned char)v[0])) {
    if (digits(v, len, UINT64_MAX, &s) != len)
      return -EINVAL;
    *ms = (int64_t)(s > 86400 ? 86400 : s) * 1000;
    return 0;
  }
  int64_t t;
  if (parse_http_date(v, len, &t) < 0)
    return -EINVAL;
  int64_t d = t - now_s;
  *ms = d <= 0 ? 0 : (d > 86400 ? 86400 : d) * 1000;
  return 0;
}

/* Copies value [v, v + n) into out (cap bytes); false when it does not
 * fit. */
static bool keep(char *out, size_t cap, const char *v, size_t n) {
  if (n >= cap) {
    out[0] = '\0';
    return false;
  }
  memcpy(out, v, n);
  out[n] = '\0';
  return true;
}

void gf_http_reply_line(gf_http_reply *r, const char *line, size_t len,
                        int64_t now_s) {
  trim(&line, &len);
  if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
    /* A new head: what came before belonged to an interim (1xx) reply. */
    gf_http_reply_init(r);
    const char *sp = memchr(line, ' ', len);
    uint64_t code;
    if (sp && (size_t)(line + len - sp) >= 4 &&
        digits(sp + 1, 3, 999, &code) == 3 &&
        (sp + 4 == line + len || sp[4] == ' ') && code >= 100)
      r->status = (int)code;
    return;
  }
  const char *colon = memchr(line, ':', len);
  if (!colon)
    return;
  const char *name = line;
  size_t nlen = (size_t)(colon - line);
  const char *v = colon + 1;
  size_t vlen = len - nlen - 1;
  trim(&v, &vlen);
#define IS(s) (nlen == sizeof(s) - 1 && strncasecmp(name, s, nlen) == 0)
  if (IS("content-length")) {
    uint64_t n;
    r->length =
        vlen && digits(v, vlen, INT64_MAX, &n) == vlen ? (int64_t)n : -1;
  } else if (IS("content-range")) {
    r->range = gf_http_parse_content_range(v, vlen, &r->first, &r->last,
                                           &r->total) == 0
                   ? 1
                   : -1;
  } else if (IS("etag")) {
    r->etag_long = !keep(r->etag, sizeof r->etag, v, vlen);
  } else if (IS("last-modified")) {
    keep(r->modified, sizeof r->modified, v, vlen);
  } else if (IS("retry-after")) {
    if (gf_http_parse_retry_after(v, vlen, now_s, &r->retry_after_ms) < 0)
      r->retry_after_ms = -1;
  } else if (IS("content-encoding")) {
    r->encoded = !(vlen == 8 && strncasecmp(v, "identity", 8) == 0);
  }
#undef IS
}

/* An ETag without its weakness mark. */
static const char *strong(const char *etag) {
  return strncmp(etag, "W/", 2) == 0 ? etag + 2 : etag;
}

static int fail(int code, bool may_retry, bool *retry, char *why, size_t cap,
                const char *fmt, ...) GF_PRINTF(6, 7);
static int fail(int code, bool may_retry, bool *retry, char *why, size_t cap,
                const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
  *retry = may_retry;
  return code;
}

/* Whether the reply is of the version opened (what it tells of it). */
static int same_version(const gf_http_reply *r, const gf_http_ask *a,
                        bool *retry, char *why, size_t cap) {
  const char *v = a->version ? a->version : "";
  if (strncmp(v, "lm:", 3) == 0) {
    if (r->modified[0] && strcmp(r->modified, v + 3) != 0)
      return fail(GF_ECHANGED, false, retry, why, cap,
                  "HTTP %d, Last-Modified %.40s: the object changed since "
                  "it was opened (Last-Modified %.40s)",
                  r->status, r->modified, v + 3);
  } else if (v[0] && (r->etag[0] || r->etag_long)) {
    if (r->etag_long || strcmp(strong(r->etag), strong(v)) != 0)
      return fail(GF_ECHANGED, false, retry, why, cap,
                  "HTTP %d, ETag %.40s: the object changed since it was "
                  "opened (ETag %.40s)",
                  r->status, r->etag_long ? "(too long)" : r->etag, v);
  }
  return 0;
}

int gf_http_judge(const gf_http_reply *r, const gf_http_ask *a, bool *retry,
                  char *why, size_t cap) {
  *retry = false;
  why[0] = '\0';
  const int st = r->status;
  const unsigned long long off = a->off, last = a->off + a->len - 1;
  if (a->head && st == 200) {
    if (r->length < 0)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 200 to HEAD without a Content-Length: the object's "
                  "size is unknown");
    if (r->encoded)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 200 to HEAD with a Content-Encoding: the stored "
                  "bytes are not served as they are");
    return 0;
  }
  if (a->whole && st == 200) {
    if (r->encoded)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 200 with a Content-Encoding not asked for");
    if (r->length >= 0 && (uint64_t)r->length > a->len)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 200 of %lld bytes: more than the %llu bytes such a "
                  "reply may have",
                  (long long)r->length, (unsigned long long)a->len);
    return 0;
  }
  if (a->whole && st == 206)
    return fail(GF_EREPLY, false, retry, why, cap,
                "HTTP 206 to a request without a range");
  if (!a->head && (st == 200 || st == 206)) {
    if (r->encoded)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP %d with a Content-Encoding: the stored bytes are "
                  "not served as they are",
                  st);
    if (st == 200) {
      if (a->off != 0 || a->len != a->size)
        return fail(GF_EREPLY, false, retry, why, cap,
                    "HTTP 200 with the whole object to a request for bytes "
                    "%llu-%llu: the server ignores Range",
                    off, last);
      if (r->length >= 0 && (uint64_t)r->length != a->size)
        return fail(GF_ECHANGED, false, retry, why, cap,
                    "HTTP 200 of %lld bytes: the object was %llu bytes "
                    "when opened",
                    (long long)r->length, (unsigned long long)a->size);
      return same_version(r, a, retry, why, cap);
    }
    if (r->range != 1)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 206 %s for bytes %llu-%llu",
                  r->range ? "with a Content-Range that is not one range"
                           : "without a Content-Range",
                  off, last);
    if (r->total >= 0 && (uint64_t)r->total != a->size)
      return fail(GF_ECHANGED, false, retry, why, cap,
                  "HTTP 206 says the object is %lld bytes: it was %llu "
                  "bytes when opened",
                  (long long)r->total, (unsigned long long)a->size);
    if (r->first != a->off || r->last != a->off + a->len - 1)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 206 with bytes %llu-%llu for bytes %llu-%llu",
                  (unsigned long long)r->first, (unsigned long long)r->last,
                  off, last);
    if (r->length >= 0 && (uint64_t)r->length != a->len)
      return fail(GF_EREPLY, false, retry, why, cap,
                  "HTTP 206 with a Content-Length of %lld for bytes "
                  "%llu-%llu (%llu bytes)",
                  (long long)r->length, off, last, (unsigned long long)a->len);
    return same_version(r, a, retry, why, cap);
  }
  switch (st) {
  case 0:
    return fail(GF_EREPLY, false, retry, why, cap, "no HTTP status line");
  case 404:
  case 410:
    return fail(-ENOENT, false, retry, why, cap, "HTTP %d (not found)", st);
  case 401:
  case 403:
    return fail(-EACCES, false, retry, why, cap, "HTTP %d (%s)", st,
                st == 401 ? "unauthorized: credentials missing or refused"
                          : "forbidden");
  case 412:
    return fail(GF_ECHANGED, false, retry, why, cap,
                "HTTP 412: the object is no longer the version %.40s it was "
                "when opened",
                a->version ? a->version : "");
  case 416:
    return fail(GF_ECHANGED, false, retry, why, cap,
                "HTTP 416: bytes %llu-%llu lie past the object's end now (it "
                "was %llu bytes when opened)",
                off, last, (unsigned long long)a->size);
  case 408:
  case 429:
  case 500:
  case 502:
  case 503:
  case 504:
    return fail(GF_EREMOTE, true, retry, why, cap, "HTTP %d", st);
  default:
    return fail(GF_EREMOTE, false, retry, why, cap, "HTTP %d%s", st,
                st >= 300 && st < 400 ? " (a redirect: not followed)" : "");
  }
}

void gf_http_head_result(const gf_http_reply *r, uint64_t *size, char *version,
                         size_t cap) {
  *size = r->length < 0 ? 0 : (uint64_t)r->length;
  if (r->etag[0])
    snprintf(version, cap, "%s", r->etag);
  else if (r->modified[0])
    snprintf(version, cap, "lm:%s", r->modified);
  else if (cap)
    version[0] = '\0';
}
