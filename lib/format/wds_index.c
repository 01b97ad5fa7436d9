/* DALI's WebDataset index files (wds_index.h): the parser, which checks
 * every field and names the file and line of the first bad one, and the
 * writer, which follows tools/wds2idx.py's create_index and split_name
 * (DALI 1.x) byte for byte. */
#include "format/wds_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' ||
         c == '\n';
}

/* The next white-space-separated token of [*p, end): NUL-terminated in
 * place; NULL when none is left. */
static char *token(char **p, char *end) {
  char *s = *p;
  while (s < end && is_space(*s))
    s++;
  if (s == end)
    return NULL;
  char *t = s;
  while (s < end && !is_space(*s))
    s++;
  /* end is the line's '\n' or the copy's final NUL: writable. */
  *s = '\0';
  *p = s < end ? s + 1 : s;
  return t;
}

/* A decimal number with no sign into *v; false when t is not one. */
static bool number(const char *t, uint64_t *v) {
  if (!*t)
    return false;
  uint64_t x = 0;
  for (; *t; t++) {
    if (*t < '0' || *t > '9')
      return false;
    if (!gf_mul_u64(x, 10, &x) || !gf_add_u64(x, (uint64_t)(*t - '0'), &x))
      return false;
  }
  *v = x;
  return true;
}

static bool grow(void **p, uint64_t *cap, uint64_t need, size_t elem) {
  if (need <= *cap)
    return true;
  uint64_t c = *cap ? *cap * 2 : 64;
  if (c < need)
    c = need;
  if (c > SIZE_MAX / elem)
    return false;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q)
    return false;
  *p = q;
  *cap = c;
  return true;
}

#define BAD(code, line, off, ...)                                              \
  gf_fail(code, name, GF_NO_INDEX, (uint64_t)(off), __VA_ARGS__)

int gf_wds_index_parse(const char *name, const char *text, size_t len,
                       uint64_t shard_size, gf_wds_index **out) {
  *out = NULL;
  if (!name)
    name = "(index)";
  if (memchr(text, '\0', len)) {
    size_t at = (size_t)((const char *)memchr(text, '\0', len) - text);
    return BAD(GF_ECORRUPT, 0, at,
               "a NUL byte at byte %zu: not a DALI index file", at);
  }
  gf_wds_index *ix = calloc(1, sizeof *ix);
  char *buf = malloc(len + 1);
  if (!ix || !buf) {
    free(ix);
    free(buf);
    return BAD(-ENOMEM, 0, 0, "out of memory reading the index");
  }
  memcpy(buf, text, len);
  buf[len] = '\0';
  ix->text_ = buf;
  int rc = 0;
  uint64_t first_cap = 0, entry_cap = 0, lines = 0, lineno = 1;
  char *end = buf + len, *p = buf;
  char *nl = memchr(p, '\n', len);
  char *le = nl ? nl : end;
  char *q = p;
  char *ver = token(&q, le), *cnt = token(&q, le), *extra = token(&q, le);
  if (!ver || ver[0] != 'v' || !cnt || extra) {
    rc = BAD(GF_EFORMAT, 1, 0,
             "line 1: not a DALI index file: the first line "
             "should be 'v1.2 <number of samples>'");
    goto out;
  }
  if (!strcmp(ver, "v1.2") || !strcmp(ver, "v1.1")) {
    ix->minor = ver[3] - '0';
  } else {
    rc = BAD(GF_EVERSION, 1, 0,
             "line 1: DALI index version '%s' is not read "
             "(only v1.1 and v1.2: make it again with DALI's wds2idx.py)",
             ver);
    goto out;
  }
  if (!number(cnt, &ix->sample_count)) {
    rc = BAD(GF_EFORMAT, 1, 0, "line 1: '%s' is not a number of samples", cnt);
    goto out;
  }
  unsigned group = ix->minor == 2 ? 4 : 3;
  p = nl ? nl + 1 : end;
  while (p < end) {
    lineno++;
    uint64_t at = (uint64_t)(p - buf);
    nl = memchr(p, '\n', (size_t)(end - p));
    le = nl ? nl : end;
    q = p;
    p = nl ? nl + 1 : end;
    if (!grow((void **)&ix->first, &first_cap, lines + 2, sizeof *ix->first)) {
      rc = BAD(-ENOMEM, lineno, at, "out of memory reading the index");
      goto out;
    }
    ix->first[lines] = ix->entry_count;
    unsigned k = 0;
    char *t[4];
    for (char *tok; (tok = token(&q, le));) {
      t[k++] = tok;
      if (k < group)
        continue;
      k = 0;
      gf_wds_index_entry e = {.ext = t[0],
                              .filename = group == 4 ? t[3] : NULL};
      uint64_t stop;
      if (!number(t[1], &e.offset) || !number(t[2], &e.size)) {
        rc = BAD(GF_ECORRUPT, lineno, at,
                 "line %llu: member '%s': '%s %s' is "
                 "not an offset and a size",
                 (unsigned long long)lineno, group == 4 ? t[3] : t[0], t[1],
                 t[2]);
        goto out;
      }
      if (e.offset % 512 || e.offset < 512) {
        rc = BAD(GF_ECORRUPT, lineno, at,
                 "line %llu: member '%s': offset %llu "
                 "is not a tar member's data offset (a multiple of 512, at "
                 "least 512)",
                 (unsigned long long)lineno, group == 4 ? t[3] : t[0],
                 (unsigned long long)e.offset);
        goto out;
      }
      if (!gf_add_u64(e.offset, e.size, &stop) || stop > shard_size) {
        rc = BAD(GF_ECORRUPT, lineno, at,
                 "line %llu: member '%s': %llu bytes "
                 "at %llu run past the shard's end (%llu bytes)",
                 (unsigned long long)lineno, group == 4 ? t[3] : t[0],
                 (unsigned long long)e.size, (unsigned long long)e.offset,
                 (unsigned long long)shard_size);
        goto out;
      }
      if (!grow((void **)&ix->entries, &entry_cap, ix->entry_count + 1,
                sizeof *ix->entries)) {
        rc = BAD(-ENOMEM, lineno, at, "out of memory reading the index");
        goto out;
      }
      ix->entries[ix->entry_count++] = e;
    }
    if (k != 0 || ix->first[lines] == ix->entry_count) {
      rc = BAD(GF_ECORRUPT, lineno, at,
               "line %llu: %s: a sample's line holds "
               "groups of %u fields (<ext> <offset> <size>%s)",
               (unsigned long long)lineno,
               k ? "an incomplete group" : "an empty line", group,
               group == 4 ? " <filename>" : "");
      goto out;
    }
    lines++;
  }
  if (lines != ix->sample_count) {
    rc = BAD(GF_ECORRUPT, lineno, len,
             "line 1: the header says %llu samples "
             "but the file has %llu",
             (unsigned long long)ix->sample_count, (unsigned long long)lines);
    goto out;
  }
  if (!grow((void **)&ix->first, &first_cap, lines + 1, sizeof *ix->first)) {
    rc = BAD(-ENOMEM, lineno, len, "out of memory reading the index");
    goto out;
  }
  ix->first[lines] = ix->entry_count;
out:
  if (rc) {
    gf_wds_index_free(ix);
    return rc;
  }
  *out = ix;
  return 0;
}

void gf_wds_index_free(gf_wds_index *ix) {
  if (!ix)
    return;
  free(ix->first);
  free(ix->entries);
  free(ix->text_);
  free(ix);
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool failed;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->failed)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t c = (b->len + n + 1) * 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->failed = true;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

/* wds2idx.py's split_name: the key's length (dot_pos; -1 without a dot). */
static long long key_len(const char *path) {
  const char *last = strrchr(path, '/');
  const char *from = last ? last + 1 : path;
  const char *dot = strchr(from, '.');
  return dot ? (long long)(dot - path) : -1;
}

int gf_wds_index_write(const char *shard, const gf_tar_member *members,
                       uint64_t n, char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  if (!shard)
    shard = "(shard)";
  sbuf body = {0};
  uint64_t samples = 0;
  const char *last = NULL; /* the last sample's key: members[..].path */
  size_t last_len = 0;
  for (uint64_t i = 0; i < n; i++) {
    const char *path = members[i].path;
    size_t plen = strlen(path);
    for (const char *c = path; *c; c++)
      if (is_space(*c)) {
        free(body.p);
        return gf_fail(GF_EUNSUPPORTED, shard, GF_NO_INDEX,
                       members[i].data_offset,
                       "member '%s' has white space in its name, which a "
                       "DALI index line cannot hold",
                       path);
      }
    long long d = key_len(path);
    /* basename = path[:dot_pos]; without a dot, path[:-1]. */
    size_t klen = d >= 0 ? (size_t)d : (plen ? plen - 1 : 0);
    const char *ext = d >= 0 ? path + d + 1 : path;
    if (klen == 0 || path[klen - 1] == '/')
      continue;
    bool same = last && last_len == klen && !memcmp(last, path, klen);
    if (!same) {
      if (last)
        put(&body, "\n", 1);
      samples++;
      last = path;
      last_len = klen;
    } else {
      put(&body, " ", 1);
    }
    char nums[64];
    int k = snprintf(nums, sizeof nums, " %llu %llu ",
                     (unsigned long long)members[i].data_offset,
                     (unsigned long long)members[i].size);
    put(&body, ext, strlen(ext));
    put(&body, nums, (size_t)k);
    put(&body, path, plen);
  }
  if (last)
    put(&body, "\n", 1);
  if (!samples) {
    free(body.p);
    return gf_fail(GF_EBADSOURCE, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "no sample to index (DALI's wds2idx.py refuses an "
                   "empty shard too)");
  }
  sbuf out = {0};
  char head[64];
  int k =
      snprintf(head, sizeof head, "v1.2 %llu\n", (unsigned long long)samples);
  put(&out, head, (size_t)k);
  if (body.p)
    put(&out, body.p, body.len);
  free(body.p);
  if (out.failed || body.failed) {
    free(out.p);
    return gf_fail(-ENOMEM, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory writing its index");
  }
  *text = out.p;
  *len = out.len;
  return 0;
}

int gf_wds_sidecar_named(const char *shard, const char *ext, const char *what,
                         char *buf, size_t cap) {
  size_t n = strlen(shard), e = strlen(ext);
  if (n >= 4 && memcmp(shard + n - 4, ".tar", 4) == 0)
    n -= 4;
  if (n + e + 1 > cap)
    return gf_fail(GF_ELIMIT, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "the %s's name for this shard is longer than %zu bytes",
                   what, cap - 1);
  memcpy(buf, shard, n);
  memcpy(buf + n, ext, e + 1);
  return 0;
}

int gf_wds_sidecar_name(const char *shard, char *buf, size_t cap) {
  return gf_wds_sidecar_named(shard, ".idx", "index", buf, cap);
}
