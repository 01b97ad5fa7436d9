/* gpufeed's verification sidecar of a tar shard (wds_sums.h): the parser,
 * which checks every field against the shard and names the file, line and
 * byte of the first bad one, the writer, and the lookup by offset. */
#include "format/wds_sums.h"

#include "format/wds_index.h" /* gf_wds_sidecar_named */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "gpufeed-sums"
/* The shortest member line: "512 0 00000000\n". */
#define LINE_MIN 15u

#define BAD(code, off, ...)                                                    \
  gf_fail(code, name, GF_NO_INDEX, (uint64_t)(off), __VA_ARGS__)

/* Splits [p, le) at single spaces into at most max fields (more: returns
 * max + 1). Each NUL-terminated in place (le is writable). */
static unsigned fields(char *p, char *le, char **f, unsigned max) {
  unsigned k = 0;
  *le = '\0';
  while (p < le) {
    if (k == max)
      return max + 1;
    f[k++] = p;
    char *sp = memchr(p, ' ', (size_t)(le - p));
    if (!sp)
      break;
    *sp = '\0';
    p = sp + 1;
    if (p == le) /* a trailing space: an empty last field */
      return max + 1;
  }
  return k;
}

/* A decimal number without sign or leading zero into *v. */
static bool number(const char *t, uint64_t *v) {
  if (!*t || (t[0] == '0' && t[1]))
    return false;
  uint64_t x = 0;
  for (; *t; t++) {
    if (*t < '0' || *t > '9' || !gf_mul_u64(x, 10, &x) ||
        !gf_add_u64(x, (uint64_t)(*t - '0'), &x))
      return false;
  }
  *v = x;
  return true;
}

static bool hex8(const char *t, uint32_t *v) {
  uint32_t x = 0;
  size_t i = 0;
  for (; t[i]; i++) {
    char c = t[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : -1;
    if (d < 0 || i == 8)
      return false;
    x = x << 4 | (uint32_t)d;
  }
  *v = x;
  return i == 8;
}

int gf_wds_sums_parse(const char *name, const char *text, size_t len,
                      uint64_t shard_size, gf_wds_sums **out) {
  *out = NULL;
  if (!name)
    name = "(sums)";
  const char *nul = memchr(text, '\0', len);
  if (nul)
    return BAD(GF_ECORRUPT, nul - text,
               "a NUL byte at byte %zu: not a gpufeed sums file",
               (size_t)(nul - text));
  char *buf = malloc(len + 1);
  gf_wds_sums *s = calloc(1, sizeof *s);
  if (!buf || !s) {
    free(buf);
    free(s);
    return BAD(-ENOMEM, 0, "out of memory reading the sums");
  }
  memcpy(buf, text, len);
  buf[len] = '\0';
  int rc = 0;
  char *end = buf + len, *p = buf, *f[4];
  char *nl = memchr(p, '\n', len);
  char *le = nl ? nl : end;
  unsigned k = fields(p, le, f, 4);
  uint64_t size = 0;
  /* A version is told apart from other words by its 'v'. */
  bool magic = k >= 2 && k <= 4 && strcmp(f[0], MAGIC) == 0;
  bool version = magic && f[1][0] == 'v';
  if (version && strcmp(f[1], "v1") != 0) {
    rc = BAD(GF_EVERSION, 0,
             "line 1: sums version '%s' is not read (only v1: `gpufeed "
             "index --verify --force` writes it again)",
             f[1]);
    goto out;
  }
  if (!version || k != 4) {
    rc = BAD(GF_EFORMAT, 0,
             "line 1: not a gpufeed sums file: the first line should be "
             "'" MAGIC " v1 <shard size> <count>'");
    goto out;
  }
  if (!number(f[2], &size) || !number(f[3], &s->count)) {
    rc = BAD(GF_EFORMAT, 0, "line 1: '%s %s' is not a size and a count", f[2],
             f[3]);
    goto out;
  }
  if (size != shard_size) {
    rc = BAD(GF_ECORRUPT, 0,
             "line 1: made for a shard of %" PRIu64
             " bytes, this one has %" PRIu64,
             size, shard_size);
    goto out;
  }
  s->shard_size = size;
  if (s->count > len / LINE_MIN) {
    rc = BAD(GF_ECORRUPT, 0,
             "line 1: %" PRIu64 " members cannot fit in %zu bytes", s->count,
             len);
    goto out;
  }
  if (!(s->v = calloc(s->count ? s->count : 1, sizeof *s->v))) {
    rc = BAD(-ENOMEM, 0, "out of memory reading the sums");
    goto out;
  }
  uint64_t n = 0, lineno = 2, next = 512;
  for (p = nl ? nl + 1 : end; p < end; lineno++) {
    uint64_t at = (uint64_t)(p - buf);
    nl = memchr(p, '\n', (size_t)(end - p));
    le = nl ? nl : end;
    char *line = p;
    p = nl ? nl + 1 : end;
    gf_wds_sum e;
    uint64_t stop;
    if (fields(line, le, f, 3) != 3 || !number(f[0], &e.offset) ||
        !number(f[1], &e.size) || !hex8(f[2], &e.crc)) {
      rc = BAD(GF_ECORRUPT, at,
               "line %" PRIu64 ": not '<offset> <size> <crc32c in 8 hex "
               "digits>'",
               lineno);
      goto out;
    }
    if (n == s->count) {
      rc = BAD(GF_ECORRUPT, at,
               "line %" PRIu64 ": more members than the %" PRIu64
               " the first line gives",
               lineno, s->count);
      goto out;
    }
    if (e.offset % 512 || e.offset < next ||
        !gf_add_u64(e.offset, e.size, &stop) || stop > size) {
      rc = BAD(GF_ECORRUPT, at,
               "line %" PRIu64 ": a member of %" PRIu64 " bytes at %" PRIu64
               " is %s",
               lineno, e.size, e.offset,
               e.offset % 512    ? "not at a multiple of 512"
               : e.offset < next ? "not after the one before"
                                 : "past the shard's end");
      goto out;
    }
    /* The next member's header follows; after the last byte there can be
     * none (stop + 1 would wrap to 0). */
    next = stop < UINT64_MAX ? stop + 1 : UINT64_MAX;
    s->v[n++] = e;
  }
  if (n != s->count)
    rc = BAD(GF_ECORRUPT, len,
             "%" PRIu64 " members listed, the first line gives %" PRIu64, n,
             s->count);
out:
  free(buf);
  if (rc < 0)
    gf_wds_sums_free(s);
  else
    *out = s;
  return rc;
}

void gf_wds_sums_free(gf_wds_sums *s) {
  if (!s)
    return;
  free(s->v);
  free(s);
}

int gf_wds_sums_write(const gf_wds_sum *v, uint64_t n, uint64_t shard_size,
                      char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  /* The longest line: two 20-digit numbers, 8 digits, 2 spaces, '\n'. */
  uint64_t cap;
  if (!gf_mul_u64(n + 1, 64, &cap) || cap > SIZE_MAX)
    return -ENOMEM;
  char *buf = malloc((size_t)cap);
  if (!buf)
    return -ENOMEM;
  int w =
      snprintf(buf, 64, MAGIC " v1 %" PRIu64 " %" PRIu64 "\n", shard_size, n);
  size_t at = (size_t)w;
  uint64_t next = 512, stop;
  for (uint64_t i = 0; i < n; i++) {
    if (v[i].offset % 512 || v[i].offset < next ||
        !gf_add_u64(v[i].offset, v[i].size, &stop) || stop > shard_size) {
      free(buf);
      return -EINVAL;
    }
    next = stop < UINT64_MAX ? stop + 1 : UINT64_MAX;
    at += (size_t)snprintf(buf + at, 64,
                           "%" PRIu64 " %" PRIu64 " %08" PRIx32 "\n",
                           v[i].offset, v[i].size, v[i].crc);
  }
  *text = buf;
  *len = at;
  return 0;
}

const gf_wds_sum *gf_wds_sums_find(const gf_wds_sums *s, uint64_t offset,
                                   uint64_t size) {
  uint64_t lo = 0, hi = s ? s->count : 0;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (s->v[mid].offset < offset)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < (s ? s->count : 0) && s->v[lo].offset == offset &&
      s->v[lo].size == size)
    return &s->v[lo];
  return NULL;
}

int gf_wds_sums_name(const char *shard, char *buf, size_t cap) {
  return gf_wds_sidecar_named(shard, ".sums", "sums file", buf, cap);
}
