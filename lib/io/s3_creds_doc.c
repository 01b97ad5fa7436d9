/* The credential document of the container endpoint and the instance
 * metadata service (s3_creds.h's gf_aws_creds_parse): a JSON reader of its
 * own (one loop, no recursion), the fields' checks and Expiration's ISO 8601
 * time, over bytes in memory; no request is made here (s3_creds.c fetches).
 * Every buffer that held a secret (a decoded byte, the reader's copies) is
 * wiped before it is let go. */
#include "io/s3_creds.h"

#include "common/common.h" /* gf_say */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h> /* explicit_bzero */
#include <time.h>

/* The root object's fields read; every other one is skipped. */
enum { F_ACCESS, F_SECRET, F_TOKEN, F_EXPIRATION, F_CODE, F_N };

static const char *const FIELD_NAME[F_N] = {
    [F_ACCESS] = "AccessKeyId", [F_SECRET] = "SecretAccessKey",
    [F_TOKEN] = "Token",        [F_EXPIRATION] = "Expiration",
    [F_CODE] = "Code",
};

/* Deeper nesting is refused: the walk keeps one byte a level. */
#define JSON_DEPTH 64

typedef struct jdoc {
  const unsigned char *start, *p, *end;
  char *why;
  size_t cap;
  /* where each field's value goes, and what it was */
  char *dst[F_N];
  size_t dcap[F_N];
  bool have[F_N]; /* given as a string */
  bool odd[F_N];  /* holds a byte that cannot go into a header */
  char expiration[64];
  char code[64];
} jdoc;

static int jfail(jdoc *d, const char *what) {
  gf_say(d->why, d->cap, "the credentials document is not JSON: %s at byte %zu",
         what, (size_t)(d->p - d->start));
  return -EPROTO;
}

static void skip_blanks(jdoc *d) {
  while (d->p < d->end &&
         (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
    d->p++;
}

static int hex4(const unsigned char *p, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else
      return -1;
  }
  *out = v;
  return 0;
}

/* The length of the UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end) {
  size_t n = (size_t)(end - p);
  unsigned c = p[0];
  unsigned lo = 0x80, hi = 0xbf;
  size_t len;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0)
      lo = 0xa0;
    if (c == 0xed)
      hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0)
      lo = 0x90;
    if (c == 0xf4)
      hi = 0x8f;
  } else
    return 0;
  if (n < len || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return len;
}

/* Reads the string whose opening quote was just passed, to its closing
 * quote: into dst (dcap bytes with the NUL; NULL: only checked), setting
 * *len to its decoded length (dst holds nothing past dcap - 1 bytes) and
 * *odd when a decoded byte is not printable ASCII or is a space. */
static int jstring(jdoc *d, char *dst, size_t dcap, size_t *len, bool *odd) {
  size_t n = 0;
  bool o = false;
  for (;;) {
    if (d->p >= d->end)
      return jfail(d, "a string without its closing quote");
    unsigned c = *d->p;
    unsigned char b[4];
    size_t k;
    if (c == '"') {
      d->p++;
      break;
    }
    if (c < 0x20)
      return jfail(d, "a control byte in a string");
    if (c == '\\') {
      if (d->end - d->p < 2)
        return jfail(d, "a string without its closing quote");
      uint32_t cp;
      switch (d->p[1]) {
      case '"':
      case '\\':
      case '/':
        cp = d->p[1];
        break;
      case 'b':
        cp = '\b';
        break;
      case 'f':
        cp = '\f';
        break;
      case 'n':
        cp = '\n';
        break;
      case 'r':
        cp = '\r';
        break;
      case 't':
        cp = '\t';
        break;
      case 'u':
        if (d->end - d->p < 6 || hex4(d->p + 2, &cp) < 0)
          return jfail(d, "a bad \\u escape");
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return jfail(d, "a lone low surrogate");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t low;
          if (d->end - d->p < 12 || d->p[6] != '\\' || d->p[7] != 'u' ||
              hex4(d->p + 8, &low) < 0 || low < 0xdc00 || low > 0xdfff)
            return jfail(d, "a high surrogate without its low one");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          d->p += 6;
        }
        d->p += 4;
        break;
      default:
        return jfail(d, "an unknown escape");
      }
      d->p += 2;
      if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        k = 1;
      } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xc0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 2;
      } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xe0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 3;
      } else {
        b[0] = (unsigned char)(0xf0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (unsigned char)(0x80 | (cp & 0x3f));
        k = 4;
      }
      if (cp <= 0x20 || cp >= 0x7f)
        o = true;
    } else if (c < 0x80) {
      b[0] = (unsigned char)c;
      k = 1;
      d->p++;
      if (c == ' ' || c == 0x7f)
        o = true;
    } else {
      k = utf8_len(d->p, d->end);
      if (!k)
        return jfail(d, "a string that is not UTF-8");
      memcpy(b, d->p, k);
      d->p += k;
      o = true;
    }
    if (dst && n + k < dcap)
      memcpy(dst + n, b, k);
    n += k;
    explicit_bzero(b, sizeof b);
  }
  if (dst && dcap)
    dst[n < dcap ? n : dcap - 1] = '\0';
  *len = n;
  *odd = o;
  return 0;
}

/* RFC 8259's number, checked only (never converted: any size is one). */
static int jnumber(jdoc *d) {
  if (d->p < d->end && *d->p == '-')
    d->p++;
  if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9'))
    return jfail(d, "a bad number");
  if (*d->p == '0')
    d->p++;
  else
    while (d->p < d->end && *d->p >= '0' && *d->p <= '9')
      d->p++;
  if (d->p < d->end && *d->p == '.') {
    d->p++;
    if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9'))
      return jfail(d, "a bad number");
    while (d->p < d->end && *d->p >= '0' && *d->p <= '9')
      d->p++;
  }
  if (d->p < d->end && (*d->p == 'e' || *d->p == 'E')) {
    d->p++;
    if (d->p < d->end && (*d->p == '+' || *d->p == '-'))
      d->p++;
    if (d->p >= d->end || !(*d->p >= '0' && *d->p <= '9'))
      return jfail(d, "a bad number");
    while (d->p < d->end && *d->p >= '0' && *d->p <= '9')
      d->p++;
  }
  return 0;
}

static bool jliteral(jdoc *d, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(d->end - d->p) < n || memcmp(d->p, word, n) != 0)
    return false;
  d->p += n;
  return true;
}

/* A field's value that is not a string (null is the field's absence). */
static int not_string(jdoc *d, int f) {
  gf_say(d->why, d->cap, "the credentials document's %s is not a string",
         FIELD_NAME[f]);
  return -EPROTO;
}

/* The walk: one loop over the bytes with a stack of the open objects and
 * arrays, so that depth costs no C stack. States: a value is wanted; a key
 * (first: or the object's end); an array's first value (or its end); a
 * value was read (a ',' or the end of its container is wanted). */
enum { W_VALUE, W_FIRST_KEY, W_KEY, W_FIRST_VALUE, W_AFTER };

static int jwalk(jdoc *d) {
  char stack[JSON_DEPTH];
  int depth = 0, state = W_VALUE, field = -1;
  skip_blanks(d);
  if (d->p >= d->end || *d->p != '{')
    return jfail(d, "not an object");
  for (;;) {
    skip_blanks(d);
    if (state == W_AFTER) {
      if (depth == 0)
        break;
      if (d->p >= d->end)
        return jfail(d, "the end of the document, early");
      char open = stack[depth - 1];
      if (*d->p == ',') {
        d->p++;
        state = open == '{' ? W_KEY : W_VALUE;
      } else if (*d->p == (open == '{' ? '}' : ']')) {
        d->p++;
        depth--;
      } else
        return jfail(d, open == '{' ? "neither ',' nor '}'"
                                    : "neither ',' nor ']'");
      continue;
    }
    if (d->p >= d->end)
      return jfail(d, "the end of the document, early");
    unsigned c = *d->p;
    if ((state == W_FIRST_KEY && c == '}') ||
        (state == W_FIRST_VALUE && c == ']')) {
      d->p++;
      depth--;
      state = W_AFTER;
      continue;
    }
    if (state == W_FIRST_KEY || state == W_KEY) {
      if (c != '"')
        return jfail(d, "a key that is not a string");
      d->p++;
      char key[24];
      size_t n;
      bool odd;
      int rc = jstring(d, key, sizeof key, &n, &odd);
      if (rc < 0)
        return rc;
      field = -1;
      for (int f = 0; depth == 1 && f < F_N; f++)
        if (n == strlen(FIELD_NAME[f]) && memcmp(key, FIELD_NAME[f], n) == 0)
          field = f;
      skip_blanks(d);
      if (d->p >= d->end || *d->p != ':')
        return jfail(d, "no ':' after a key");
      d->p++;
      state = W_VALUE;
      continue;
    }
    /* A value (an array's or an object's). */
    int f = field;
    field = -1;
    state = W_AFTER;
    if (c == '{' || c == '[') {
      if (f >= 0)
        return not_string(d, f);
      if (depth == JSON_DEPTH) {
        gf_say(d->why, d->cap,
               "the credentials document is nested deeper than %d levels",
               JSON_DEPTH);
        return -EPROTO;
      }
      stack[depth++] = (char)c;
      d->p++;
      state = c == '{' ? W_FIRST_KEY : W_FIRST_VALUE;
    } else if (c == '"') {
      d->p++;
      size_t n;
      bool odd;
      if (f >= 0)
        explicit_bzero(d->dst[f], d->dcap[f]); /* a key given twice */
      int rc = jstring(d, f >= 0 ? d->dst[f] : NULL, f >= 0 ? d->dcap[f] : 0,
                       &n, &odd);
      if (rc < 0)
        return rc;
      if (f >= 0 && n >= d->dcap[f]) {
        gf_say(d->why, d->cap,
               "the credentials document's %s is longer than %zu bytes",
               FIELD_NAME[f], d->dcap[f] - 1);
        return -EPROTO;
      }
      if (f >= 0) {
        d->have[f] = true;
        d->odd[f] = odd;
      }
    } else if (jliteral(d, "null")) {
      if (f >= 0) {
        d->have[f] = false;
        explicit_bzero(d->dst[f], d->dcap[f]);
      }
    } else if (jliteral(d, "true") || jliteral(d, "false")) {
      if (f >= 0)
        return not_string(d, f);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      if (f >= 0)
        return not_string(d, f);
      int rc = jnumber(d);
      if (rc < 0)
        return rc;
    } else
      return jfail(d, "no value where one was wanted");
  }
  skip_blanks(d);
  if (d->p != d->end)
    return jfail(d, "bytes after the document");
  return 0;
}

/* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char **s, int n, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < n; i++) {
    char c = (*s)[i];
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (unsigned)(c - '0');
  }
  *s += n;
  *out = v;
  return true;
}

/* "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM|+HHMM|-HHMM)" as
 * seconds since the epoch (the fraction dropped: an expiry read early is
 * safe). False when it is not such a time, or is not after 1970. */
static bool iso8601(const char *s, time_t *out) {
  unsigned y, mo, d, h, mi, sec, oh = 0, om = 0;
  if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) || *s++ != '-' ||
      !digits(&s, 2, &d) || *s++ != 'T' || !digits(&s, 2, &h) || *s++ != ':' ||
      !digits(&s, 2, &mi) || *s++ != ':' || !digits(&s, 2, &sec))
    return false;
  if (*s == '.') {
    s++;
    if (*s < '0' || *s > '9')
      return false;
    while (*s >= '0' && *s <= '9')
      s++;
  }
  int sign = 0;
  if (*s == 'Z')
    s++;
  else if (*s == '+' || *s == '-') {
    sign = *s++ == '+' ? 1 : -1;
    if (!digits(&s, 2, &oh))
      return false;
    if (*s == ':')
      s++;
    if (!digits(&s, 2, &om) || oh > 23 || om > 59)
      return false;
  } else
    return false;
  if (*s)
    return false;
  static const unsigned char mdays[12] = {31, 29, 31, 30, 31, 30,
                                          31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
      (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 59)
    return false;
  int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
              sign * (int64_t)(oh * 3600 + om * 60);
  if (t <= 0 || (int64_t)(time_t)t != t)
    return false;
  *out = (time_t)t;
  return true;
}

/* A required credential: present, not empty, fit for a header. */
static int required(jdoc *d, int f) {
  if (!d->have[f] || !d->dst[f][0]) {
    gf_say(d->why, d->cap, "the credentials document has %s %s",
           d->have[f] ? "an empty" : "no", FIELD_NAME[f]);
    return -EPROTO;
  }
  if (d->odd[f]) {
    gf_say(d->why, d->cap,
           "the credentials document's %s holds a byte that is not printable "
           "ASCII",
           FIELD_NAME[f]);
    return -EPROTO;
  }
  return 0;
}

static int parse(jdoc *d, gf_aws_fetched *out) {
  int rc = jwalk(d);
  if (rc < 0)
    return rc;
  /* An IMDS error document (Code and Message, no keys) says so first. */
  if (d->have[F_CODE] && strcmp(d->code, "Success") != 0) {
    bool word = d->code[0] && !d->odd[F_CODE];
    for (const char *p = d->code; word && *p; p++)
      word = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
             (*p >= '0' && *p <= '9');
    if (word)
      gf_say(d->why, d->cap,
             "the credentials document's Code is %s, not Success", d->code);
    else
      gf_say(d->why, d->cap, "the credentials document's Code is not Success");
    return -EPROTO;
  }
  if ((rc = required(d, F_ACCESS)) < 0 || (rc = required(d, F_SECRET)) < 0)
    return rc;
  if (d->have[F_TOKEN] && out->session_token[0] && d->odd[F_TOKEN]) {
    gf_say(
        d->why, d->cap,
        "the credentials document's Token holds a byte that is not printable "
        "ASCII");
    return -EPROTO;
  }
  if (d->have[F_EXPIRATION] &&
      (d->odd[F_EXPIRATION] || !iso8601(d->expiration, &out->expires))) {
    gf_say(d->why, d->cap,
           "the credentials document's Expiration is not an ISO 8601 UTC time "
           "after 1970 (2026-11-28T06:00:00Z)");
    return -EPROTO;
  }
  return 0;
}

int gf_aws_creds_parse(const char *doc, size_t len, gf_aws_fetched *out,
                       char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  memset(out, 0, sizeof *out);
  jdoc d = {
      .start = (const unsigned char *)doc,
      .p = (const unsigned char *)doc,
      .end = (const unsigned char *)doc + len,
      .why = why,
      .cap = cap,
      .dst = {out->access_key, out->secret_key, out->session_token, NULL, NULL},
      .dcap = {sizeof out->access_key, sizeof out->secret_key,
               sizeof out->session_token, 0, 0}};
  d.dst[F_EXPIRATION] = d.expiration;
  d.dcap[F_EXPIRATION] = sizeof d.expiration;
  d.dst[F_CODE] = d.code;
  d.dcap[F_CODE] = sizeof d.code;
  int rc = doc ? parse(&d, out) : jfail(&d, "no document");
  explicit_bzero(&d, sizeof d);
  if (rc < 0)
    gf_aws_fetched_clear(out);
  return rc;
}

void gf_aws_fetched_clear(gf_aws_fetched *f) {
  if (f)
    explicit_bzero(f, sizeof *f);
}
