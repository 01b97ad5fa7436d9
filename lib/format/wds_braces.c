/* WebDataset's shard URL patterns (wds_braces.h): braceexpand 0.1.7's
 * parse_pattern, parse_expression and parse_sequence, followed step by
 * step (stray '}' and '{' handled as it handles them), with every
 * intermediate list bounded by the caller's count and byte limits (no
 * group can yield an empty list, so an intermediate list is never larger
 * than the result). */
#include "format/wds_braces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct list {
  char **v;
  uint64_t n, cap, bytes; /* bytes: the strings' lengths, summed */
} list;

typedef struct ctx {
  const char *pattern; /* for messages */
  uint64_t max;
} ctx;

static void list_free(list *l) {
  for (uint64_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
  *l = (list){0};
}

static int nomem(const ctx *c) {
  return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "out of memory expanding the shard pattern '%s'", c->pattern);
}

static int too_many(const ctx *c) {
  return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "the shard pattern '%s' expands to more than %llu names or "
                 "%u bytes",
                 c->pattern, (unsigned long long)c->max,
                 GF_WDS_EXPAND_BYTES_MAX);
}

/* Appends a copy of p[0..len) to *l. */
static int push(const ctx *c, list *l, const char *p, size_t len) {
  if (l->n >= c->max || l->bytes + len > GF_WDS_EXPAND_BYTES_MAX)
    return too_many(c);
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? l->cap * 2 : 8;
    char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v)
      return nomem(c);
    l->v = v;
    l->cap = cap;
  }
  char *s = malloc(len + 1);
  if (!s)
    return nomem(c);
  memcpy(s, p, len);
  s[len] = '\0';
  l->v[l->n++] = s;
  l->bytes += len;
  return 0;
}

/* *acc = every a + b, a from *acc (slowest), b from *item. */
static int product(const ctx *c, list *acc, const list *item) {
  uint64_t n, b1, b2, b;
  if (!gf_mul_u64(acc->n, item->n, &n) ||
      !gf_mul_u64(acc->n, item->bytes, &b1) ||
      !gf_mul_u64(item->n, acc->bytes, &b2) || !gf_add_u64(b1, b2, &b) ||
      n > c->max || b > GF_WDS_EXPAND_BYTES_MAX)
    return too_many(c);
  list out = {0};
  for (uint64_t i = 0; i < acc->n; i++) {
    size_t la = strlen(acc->v[i]);
    for (uint64_t j = 0; j < item->n; j++) {
      size_t lb = strlen(item->v[j]);
      int rc = push(c, &out, "", 0);
      if (rc) {
        list_free(&out);
        return rc;
      }
      char *s = realloc(out.v[out.n - 1], la + lb + 1);
      if (!s) {
        list_free(&out);
        return nomem(c);
      }
      memcpy(s, acc->v[i], la);
      memcpy(s + la, item->v[j], lb + 1);
      out.v[out.n - 1] = s;
      out.bytes += la + lb;
    }
  }
  list_free(acc);
  *acc = out;
  return 0;
}

static int pattern(const ctx *c, const char *p, size_t len, list *out);

/* An integer of regex -?\d+ in p[0..len) into *v: 1, 0 (not one), or
 * -EINVAL (beyond 64 bits). */
static int parse_int(const ctx *c, const char *p, size_t len, int64_t *v) {
  size_t i = len && p[0] == '-';
  if (i == len)
    return 0;
  for (size_t k = i; k < len; k++)
    if (p[k] < '0' || p[k] > '9')
      return 0;
  int64_t x = 0;
  for (size_t k = i; k < len; k++)
    if (__builtin_mul_overflow(x, 10, &x) ||
        __builtin_add_overflow(x, (int64_t)(p[k] - '0'), &x))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "the shard pattern '%s' has a range end beyond 64 bits",
                     c->pattern);
  *v = i ? -x : x;
  return 1;
}

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* A range {L..R} or {L..R..S} (S: -?\d+, its sign ignored, 0 means 1):
 * 1 with the items in *out, 0 when expr is not one, or an error. */
static int range(const ctx *c, const char *e, size_t len, list *out) {
  const char *d1 = NULL, *d2 = NULL;
  for (size_t i = 0; i + 1 < len; i++)
    if (e[i] == '.' && e[i + 1] == '.') {
      if (!d1)
        d1 = e + i;
      else if (!d2 && e + i >= d1 + 2)
        d2 = e + i;
    }
  if (!d1)
    return 0;
  const char *l = e, *r = d1 + 2, *end = e + len;
  size_t ll = (size_t)(d1 - e), rl = (size_t)((d2 ? d2 : end) - r);
  uint64_t step = 1;
  if (d2) {
    const char *s = d2 + 2;
    if (s < end && *s == '-')
      s++;
    if (s == end)
      return 0;
    uint64_t x = 0;
    for (const char *q = s; q < end; q++) {
      if (*q < '0' || *q > '9')
        return 0;
      x = x > UINT64_MAX / 10 ? UINT64_MAX : x * 10 + (uint64_t)(*q - '0');
    }
    step = x ? x : 1;
  }
  int64_t a, b;
  bool chars = false;
  int ra = parse_int(c, l, ll, &a), rb = ra == 1 ? parse_int(c, r, rl, &b) : 0;
  if (ra < 0 || rb < 0)
    return ra < 0 ? ra : rb;
  if (ra == 0 || rb == 0) {
    const char *ca, *cb;
    if (ll != 1 || rl != 1 || !(ca = strchr(alphabet, l[0])) || !l[0] ||
        !(cb = strchr(alphabet, r[0])) || !r[0])
      return 0;
    a = ca - alphabet;
    b = cb - alphabet;
    chars = true;
  }
  int pad = 0;
  if (!chars) {
    bool zero = false;
    const char *ends[2] = {l, r};
    size_t lens[2] = {ll, rl};
    for (int k = 0; k < 2; k++) {
      const char *s = ends[k];
      size_t n = lens[k];
      bool is_zero = (n == 1 && s[0] == '0') || (n == 2 && !memcmp(s, "-0", 2));
      if (!is_zero && (s[0] == '0' || (n >= 2 && !memcmp(s, "-0", 2))))
        zero = true;
    }
    if (zero)
      pad = (int)(ll > rl ? ll : rl);
  }
  uint64_t span = a < b ? (uint64_t)b - (uint64_t)a : (uint64_t)a - (uint64_t)b;
  if (span / step >= c->max)
    return too_many(c);
  uint64_t count = span / step + 1;
  /* A number zero-padded to the wider end: as wide as that end's text
   * (which may be far wider than 20 digits), plus a sign. */
  size_t cap = (size_t)pad + 24;
  char small[64], *buf = cap <= sizeof small ? small : malloc(cap);
  if (!buf)
    return nomem(c);
  int rc = 1;
  for (uint64_t i = 0; i < count && rc == 1; i++) {
    uint64_t d = i * step;
    int64_t v = a < b ? (int64_t)((uint64_t)a + d) : (int64_t)((uint64_t)a - d);
    int n;
    if (chars) {
      buf[0] = alphabet[v];
      n = 1;
    } else {
      n = snprintf(buf, cap, "%0*lld", pad, (long long)v);
    }
    int err =
        n < 0 || (size_t)n >= cap ? nomem(c) : push(c, out, buf, (size_t)n);
    if (err)
      rc = err;
  }
  if (buf != small)
    free(buf);
  return rc;
}

/* parse_sequence: the comma-separated alternatives at depth 0, each a
 * pattern, chained. 1 with *out, 0 without a comma, or an error. */
static int sequence(const ctx *c, const char *s, size_t len, list *out) {
  size_t start = 0, pos = 0;
  long depth = 0;
  while (pos < len) {
    if (s[pos] == '\\') {
      pos += 2;
      continue;
    } else if (s[pos] == '{') {
      depth++;
    } else if (s[pos] == '}') {
      depth--;
    } else if (s[pos] == ',' && depth == 0) {
      list part = {0};
      int rc = pattern(c, s + start, pos - start, &part);
      for (uint64_t i = 0; !rc && i < part.n; i++)
        rc = push(c, out, part.v[i], strlen(part.v[i]));
      list_free(&part);
      if (rc)
        return rc;
      start = pos + 1;
    }
    pos++;
  }
  if (start == 0)
    return 0;
  list part = {0};
  int rc = pattern(c, s + start, len - start, &part);
  for (uint64_t i = 0; !rc && i < part.n; i++)
    rc = push(c, out, part.v[i], strlen(part.v[i]));
  list_free(&part);
  return rc ? rc : 1;
}

/* Multiplies *acc by the one-string item p[0..len). */
static int literal(const ctx *c, list *acc, const char *p, size_t len) {
  list item = {0};
  int rc = push(c, &item, p, len);
  if (!rc)
    rc = product(c, acc, &item);
  list_free(&item);
  return rc;
}

/* parse_pattern: literal runs and brace groups, multiplied. */
static int pattern(const ctx *c, const char *p, size_t len, list *out) {
  list acc = {0};
  int rc = push(c, &acc, "", 0);
  size_t start = 0, pos = 0;
  long depth = 0;
  while (!rc && pos < len) {
    if (p[pos] == '\\') {
      pos += 2;
      continue;
    } else if (p[pos] == '{') {
      if (depth == 0 && pos > start) {
        rc = literal(c, &acc, p + start, pos - start);
        start = pos;
      }
      depth++;
    } else if (p[pos] == '}') {
      depth--;
      if (depth == 0) {
        const char *e = p + start + 1;
        size_t elen = pos - start - 1;
        list item = {0};
        rc = range(c, e, elen, &item);
        if (rc == 0)
          rc = sequence(c, e, elen, &item);
        if (rc == 1) {
          rc = product(c, &acc, &item);
        } else if (rc == 0) { /* not a range nor a set: kept as text */
          list_free(&item);
          rc = literal(c, &acc, "{", 1);
          if (!rc)
            rc = pattern(c, e, elen, &item);
          if (!rc)
            rc = product(c, &acc, &item);
          if (!rc)
            rc = literal(c, &acc, "}", 1);
        }
        list_free(&item);
        start = pos + 1;
      }
    }
    pos++;
  }
  if (!rc && depth != 0)
    rc = gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "the shard pattern '%s' has unbalanced braces", c->pattern);
  if (!rc && start < len)
    rc = literal(c, &acc, p + start, len - start);
  if (rc) {
    list_free(&acc);
    return rc;
  }
  *out = acc;
  return 0;
}

/* braceexpand's _flatten: every backslash-escaped character but a
 * newline loses its backslash. */
static void unescape(char *s) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (r[0] == '\\' && r[1] && r[1] != '\n')
      r++;
    *w++ = *r;
  }
  *w = '\0';
}

int gf_wds_expand(const char *pat, bool split_urls, uint64_t max, char ***out,
                  uint64_t *n) {
  *out = NULL;
  *n = 0;
  ctx c = {.pattern = pat, .max = max ? max : GF_WDS_EXPAND_MAX_DEFAULT};
  list all = {0};
  size_t len = strlen(pat);
  size_t start = 0;
  for (;;) {
    const char *sep = NULL;
    if (split_urls)
      for (size_t i = start; i + 1 < len && !sep; i++)
        if (pat[i] == ':' && pat[i + 1] == ':')
          sep = pat + i;
    size_t end = sep ? (size_t)(sep - pat) : len;
    list part = {0};
    int rc = pattern(&c, pat + start, end - start, &part);
    for (uint64_t i = 0; !rc && i < part.n; i++) {
      unescape(part.v[i]);
      rc = push(&c, &all, part.v[i], strlen(part.v[i]));
    }
    list_free(&part);
    if (rc) {
      list_free(&all);
      return rc;
    }
    if (!sep)
      break;
    start = end + 2;
  }
  *out = all.v;
  *n = all.n;
  return 0;
}

void gf_wds_strings_free(char **v, uint64_t n) {
  for (uint64_t i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}
