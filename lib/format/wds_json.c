/* The integer at a key of a JSON object (wds_json.h): a scanner that reads
 * the top level's members and skips every value it does not need. */
#include "format/wds_json.h"

#include <string.h>

typedef struct scan {
  const uint8_t *p;
  size_t n, i;
} scan;

static void ws(scan *s) {
  while (s->i < s->n && (s->p[s->i] == ' ' || s->p[s->i] == '\t' ||
                         s->p[s->i] == '\n' || s->p[s->i] == '\r'))
    s->i++;
}

/* A string from its opening quote: s->i past its closing one. *b and *e:
 * its raw bytes. false when it does not end, or holds a control byte. */
static bool string(scan *s, size_t *b, size_t *e) {
  if (s->i >= s->n || s->p[s->i] != '"')
    return false;
  *b = ++s->i;
  while (s->i < s->n) {
    uint8_t c = s->p[s->i];
    if (c == '"') {
      *e = s->i++;
      return true;
    }
    if (c < 0x20)
      return false;
    s->i += c == '\\' ? 2 : 1;
  }
  return false;
}

/* A bare word (a number, true, false, null): s->i past it. */
static bool word(scan *s) {
  size_t b = s->i;
  while (s->i < s->n &&
         ((s->p[s->i] >= '0' && s->p[s->i] <= '9') ||
          (s->p[s->i] >= 'a' && s->p[s->i] <= 'z') || s->p[s->i] == '-' ||
          s->p[s->i] == '+' || s->p[s->i] == '.' || s->p[s->i] == 'E'))
    s->i++;
  return s->i > b;
}

/* Skips one value: a string, a word, or an object or array with all it
 * holds (brackets counted, strings skipped). */
static bool skip_value(scan *s) {
  ws(s);
  if (s->i >= s->n)
    return false;
  uint8_t c = s->p[s->i];
  size_t b, e;
  if (c == '"')
    return string(s, &b, &e);
  if (c != '{' && c != '[')
    return word(s);
  uint8_t stack[GF_WDS_JSON_DEPTH];
  unsigned depth = 0;
  while (s->i < s->n) {
    c = s->p[s->i];
    if (c == '"') {
      if (!string(s, &b, &e))
        return false;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == GF_WDS_JSON_DEPTH)
        return false;
      stack[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (!depth || stack[depth - 1] != c)
        return false;
      if (--depth == 0) {
        s->i++;
        return true;
      }
    }
    s->i++;
  }
  return false;
}

/* A JSON integer: -?(0|[1-9][0-9]*) and nothing of a number after it. */
static int integer(scan *s, int64_t *out) {
  size_t i = s->i;
  bool neg = i < s->n && s->p[i] == '-';
  i += neg;
  if (i >= s->n || s->p[i] < '0' || s->p[i] > '9')
    return GF_WDS_JSON_NOT_INT;
  if (s->p[i] == '0' && i + 1 < s->n && s->p[i + 1] >= '0' &&
      s->p[i + 1] <= '9')
    return GF_WDS_JSON_NOT_INT;
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < s->n && s->p[i] >= '0' && s->p[i] <= '9'; i++) {
    uint64_t d = (uint64_t)(s->p[i] - '0');
    if (v > (lim - d) / 10)
      return GF_WDS_JSON_NOT_INT;
    v = v * 10 + d;
  }
  if (i < s->n && (s->p[i] == '.' || s->p[i] == 'e' || s->p[i] == 'E'))
    return GF_WDS_JSON_NOT_INT;
  s->i = i;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return GF_WDS_JSON_FOUND;
}

int gf_wds_json_int(const uint8_t *p, size_t n, const char *key, int64_t *out) {
  scan s = {p, n, 0};
  size_t kl = strlen(key);
  int found = GF_WDS_JSON_ABSENT;
  int64_t val = 0; /* *out only once the whole object was read */
  ws(&s);
  if (s.i >= n || p[s.i] != '{')
    return GF_WDS_JSON_BAD;
  s.i++;
  ws(&s);
  if (s.i < n && p[s.i] == '}')
    return GF_WDS_JSON_ABSENT;
  for (;;) {
    size_t b, e;
    ws(&s);
    if (!string(&s, &b, &e))
      return GF_WDS_JSON_BAD;
    ws(&s);
    if (s.i >= n || p[s.i] != ':')
      return GF_WDS_JSON_BAD;
    s.i++;
    ws(&s);
    if (e - b == kl && memcmp(p + b, key, kl) == 0) {
      int64_t v;
      int rc = integer(&s, &v);
      if (rc == GF_WDS_JSON_NOT_INT) {
        /* Read on: a later occurrence of the key would win. */
        if (!skip_value(&s))
          return GF_WDS_JSON_BAD;
        found = GF_WDS_JSON_NOT_INT;
      } else {
        val = v;
        found = GF_WDS_JSON_FOUND;
      }
    } else if (!skip_value(&s)) {
      return GF_WDS_JSON_BAD;
    }
    ws(&s);
    if (s.i < n && p[s.i] == ',') {
      s.i++;
      continue;
    }
    if (s.i < n && p[s.i] == '}') {
      if (found == GF_WDS_JSON_FOUND)
        *out = val;
      return found;
    }
    return GF_WDS_JSON_BAD;
  }
}
