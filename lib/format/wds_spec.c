/* Shard lists (wds_spec.h): "::" parts, list files and brace patterns
 * expanded into one list, then the folder every shard lies under. */
#include "format/wds_spec.h"

#include "format/wds_braces.h"
#include "io/storage.h" /* gf_location_redact */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHARDS_MAX_DEFAULT 1000000u

static bool ends_with(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* A compressed shard's suffix, or NULL. */
static const char *compressed(const char *s, size_t n) {
  static const char *const z[] = {".tar.gz", ".tgz", ".tar.zst", ".tar.xz",
                                  ".tar.bz2"};
  for (size_t i = 0; i < sizeof z / sizeof z[0]; i++)
    if (ends_with(s, n, z[i]))
      return z[i];
  return NULL;
}

/* A URL's length without its query (where a signed URL's token travels). */
static size_t without_query(const char *s) {
  size_t n = strlen(s);
  if (strstr(s, "://")) {
    const char *q = strchr(s, '?');
    if (q)
      n = (size_t)(q - s);
  }
  return n;
}

bool gf_wds_spec_claims(const char *source) {
  if (!source || !source[0])
    return false;
  size_t n = without_query(source);
  return source[0] == '@' || strstr(source, "::") ||
         ends_with(source, n, ".tar") || compressed(source, n);
}

typedef struct list {
  char **v;
  uint64_t n, cap, max;
  const char *source; /* for messages */
} list;

static int push(list *l, char *s) {
  if (l->n >= l->max) {
    free(s);
    return gf_fail(GF_ELIMIT, l->source, GF_NO_INDEX, GF_NO_INDEX,
                   "names more than %llu shards", (unsigned long long)l->max);
  }
  if (l->n == l->cap) {
    uint64_t c = l->cap ? l->cap * 2 : 16;
    char **q = realloc(l->v, (size_t)c * sizeof *q);
    if (!q) {
      free(s);
      return -ENOMEM;
    }
    l->v = q;
    l->cap = c;
  }
  l->v[l->n++] = s;
  return 0;
}

/* Expands one pattern (no "::" in it) onto l; base: a folder that a
 * relative location is taken from (NULL: as it is). */
static int expand_onto(list *l, const char *pattern, const char *base) {
  char **v;
  uint64_t n;
  int rc = gf_wds_expand(pattern, false, l->max, &v, &n);
  if (rc < 0)
    return rc;
  for (uint64_t i = 0; i < n && rc == 0; i++) {
    const char *s = v[i];
    size_t len = strlen(s);
    const char *z = compressed(s, without_query(s));
    if (z) {
      rc = gf_fail(GF_EUNSUPPORTED, s, GF_NO_INDEX, GF_NO_INDEX,
                   "compressed shards (%s) are not read: gpufeed reads a "
                   "shard's samples at their offsets, which compression "
                   "hides; decompress the shards to plain .tar files "
                   "(gunzip, zstd -d, xz -d) and point gpufeed at those",
                   z);
      break;
    }
    char *loc;
    if (base && s[0] != '/' && !strstr(s, "://")) {
      size_t bl = strlen(base);
      loc = malloc(bl + 1 + len + 1);
      if (loc)
        snprintf(loc, bl + 1 + len + 1, "%s/%s", base, s);
    } else {
      loc = strdup(s);
    }
    rc = loc ? push(l, loc) : -ENOMEM;
  }
  gf_wds_strings_free(v, n);
  return rc;
}

int gf_wds_list_file(const char *file, gf_wds_line_fn fn, void *ctx) {
  FILE *f = fopen(file, "rb");
  if (!f)
    return gf_fail(-errno, file, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open the shard list file: %s", strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return gf_fail(-EINVAL, file, GF_NO_INDEX, GF_NO_INDEX,
                   "the shard list is not a regular file");
  }
  if ((uint64_t)sb.st_size > GF_WDS_LIST_BYTES_MAX) {
    fclose(f);
    return gf_fail(GF_ELIMIT, file, GF_NO_INDEX, GF_NO_INDEX,
                   "the shard list file holds more than %u bytes",
                   GF_WDS_LIST_BYTES_MAX);
  }
  /* Its size at open, and a byte more to see it grew. */
  size_t cap = (size_t)sb.st_size + 1;
  char *text = malloc(cap + 1);
  if (!text) {
    fclose(f);
    return gf_fail(-ENOMEM, file, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the shard list file");
  }
  size_t len = fread(text, 1, cap, f);
  int err = ferror(f);
  fclose(f);
  int rc = 0;
  if (err)
    rc = gf_fail(-EIO, file, GF_NO_INDEX, GF_NO_INDEX,
                 "cannot read the shard list file");
  else if (len == cap)
    rc = gf_fail(-EAGAIN, file, GF_NO_INDEX, GF_NO_INDEX,
                 "the shard list file grew while it was read");
  else if (memchr(text, '\0', len))
    rc = gf_fail(-EINVAL, file, GF_NO_INDEX, GF_NO_INDEX,
                 "the shard list file holds a NUL byte: not a text file");
  char *base = NULL;
  if (rc == 0) {
    const char *slash = strrchr(file, '/');
    base =
        slash ? strndup(file, slash > file ? (size_t)(slash - file) : 1) : NULL;
    if (slash && !base)
      rc = gf_fail(-ENOMEM, file, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  text[rc == 0 ? len : 0] = '\0';
  uint64_t line = 0;
  for (char *p = text; rc == 0 && *p;) {
    char *e = strchr(p, '\n');
    char *next = e ? e + 1 : p + strlen(p);
    if (e)
      *e = '\0';
    line++;
    /* Trim white space (a CR of a CRLF file included). */
    while (*p == ' ' || *p == '\t')
      p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
      p[--n] = '\0';
    if (n && p[0] != '#')
      rc = fn(ctx, p, base, line);
    p = next;
  }
  free(base);
  free(text);
  return rc;
}

typedef struct list_ctx {
  list *l;
  const char *file;
} list_ctx;

static int list_line(void *ctx, const char *line, const char *base,
                     uint64_t lineno) {
  list_ctx *c = ctx;
  int rc = expand_onto(c->l, line, base);
  if (rc < 0) {
    char where[64];
    snprintf(where, sizeof where, "shard list line %llu",
             (unsigned long long)lineno);
    gf_fail_context(rc, c->file, GF_NO_INDEX, where);
  }
  return rc;
}

/* A list file: one location or pattern a line. */
static int read_list(list *l, const char *file) {
  list_ctx c = {l, file};
  return gf_wds_list_file(file, list_line, &c);
}

/* The length of the folder part of location s (up to its last '/'; 0
 * when it has none). */
static size_t dir_len(const char *s) {
  const char *slash = strrchr(s, '/');
  return slash ? (size_t)(slash - s) : 0;
}

/* The root every shard lies under: the longest common prefix of their
 * folders that ends at a '/' boundary. URLs must share at least their
 * scheme and server (s3: the bucket). */
static int common_root(const list *l, char **root, size_t *cut) {
  const char *first = l->v[0];
  size_t len = dir_len(first);
  for (uint64_t i = 1; i < l->n; i++) {
    const char *s = l->v[i];
    size_t d = dir_len(s), k = 0;
    size_t m = d < len ? d : len;
    while (k < m && s[k] == first[k])
      k++;
    if (k < len && !(k == d && (k == len || first[k] == '/'))) {
      /* Back to the last '/' both share (or to none). */
      while (k > 0 && first[k] != '/')
        k--;
    }
    if (k < len)
      len = k;
  }
  const char *scheme = strstr(first, "://");
  if (scheme) {
    const char *host = scheme + 3;
    const char *end = strchr(host, '/');
    size_t need = end ? (size_t)(end - first) : strlen(first);
    if (len < need || host == end)
      return gf_fail(-EINVAL, first, GF_NO_INDEX, GF_NO_INDEX,
                     "the shards do not all lie on one server (or in one "
                     "bucket) under one scheme: give the shards of one "
                     "location at a time");
    for (uint64_t i = 0; i < l->n; i++)
      if (strncmp(l->v[i], first, need) != 0)
        return gf_fail(-EINVAL, l->v[i], GF_NO_INDEX, GF_NO_INDEX,
                       "the shards do not all lie on one server (or in one "
                       "bucket) under one scheme");
  } else {
    for (uint64_t i = 0; i < l->n; i++)
      if (strstr(l->v[i], "://"))
        return gf_fail(-EINVAL, l->v[i], GF_NO_INDEX, GF_NO_INDEX,
                       "local paths and URLs mixed in one shard list");
  }
  if (len == 0 && first[0] == '/') {
    *root = strdup("/");
    *cut = 1;
  } else if (len == 0) {
    *root = strdup(".");
    *cut = 0;
  } else {
    *root = strndup(first, len);
    *cut = len + 1;
  }
  return *root ? 0 : -ENOMEM;
}

/* The URLs in s (NUL-terminated, in a buffer of cap bytes) with what may
 * be a secret taken out (gf_location_redact): a URL runs from the word
 * holding "://" to white space, a quote, a parenthesis, ": " or "::" (a list's
 * next URL). The messages here quote patterns and locations as given. */
static void redact_urls(char *s, size_t cap) {
  char out[2048], tok[2048], shown[2048];
  size_t o = 0;
  const char *p = s;
  while (*p && o + 1 < sizeof out) {
    const char *u = strstr(p, "://");
    const char *st = u ? u : p + strlen(p);
    while (u && st > p && !strchr(" \t'\"()", st[-1]) &&
           !(st - p >= 2 && st[-1] == ':' && st[-2] == ':'))
      st--;
    size_t n = (size_t)(st - p);
    if (n > sizeof out - 1 - o)
      n = sizeof out - 1 - o;
    memcpy(out + o, p, n);
    o += n;
    if (!u)
      break;
    const char *en = u + 3;
    while (*en && !strchr(" \t'\"()", *en) &&
           !(en[0] == ':' && (en[1] == ':' || en[1] == ' ')))
      en++;
    size_t tl =
        (size_t)(en - st) < sizeof tok ? (size_t)(en - st) : sizeof tok - 1;
    memcpy(tok, st, tl);
    tok[tl] = '\0';
    gf_location_redact(tok, shown, sizeof shown);
    size_t sl = strlen(shown);
    if (sl > sizeof out - 1 - o)
      sl = sizeof out - 1 - o;
    memcpy(out + o, shown, sl);
    o += sl;
    p = en;
  }
  out[o] = '\0';
  gf_strlcpy(s, out, cap);
}

int gf_wds_spec_parse(const char *source, uint64_t max, char **root,
                      char ***names, uint32_t *n) {
  *root = NULL;
  *names = NULL;
  *n = 0;
  if (!source || !source[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX, "no shards named");
  list l = {.max = max ? max : SHARDS_MAX_DEFAULT, .source = source};
  if (l.max > UINT32_MAX)
    l.max = UINT32_MAX;
  char *copy = strdup(source);
  int rc = copy ? 0 : -ENOMEM;
  for (char *p = copy; rc == 0 && p;) {
    char *sep = strstr(p, "::");
    if (sep)
      *sep = '\0';
    if (p[0] == '@')
      rc = read_list(&l, p + 1);
    else if (p[0])
      rc = expand_onto(&l, p, NULL);
    p = sep ? sep + 2 : NULL;
  }
  free(copy);
  if (rc == 0 && l.n == 0)
    rc = gf_fail(-EINVAL, source, GF_NO_INDEX, GF_NO_INDEX, "names no shard");
  /* URLs' queries (a token) go to the root, which every request carries:
   * they must be the same for every shard. */
  char *query = NULL;
  for (uint64_t i = 0; rc == 0 && i < l.n; i++) {
    size_t end = without_query(l.v[i]);
    const char *q = l.v[i][end] ? l.v[i] + end : "";
    if (i == 0 && q[0] && !(query = strdup(q)))
      rc = -ENOMEM;
    else if (strcmp(q, query ? query : ""))
      rc = gf_fail(-EINVAL, source, GF_NO_INDEX, GF_NO_INDEX,
                   "the shards' URLs carry different queries: shards read "
                   "together share one query (a token)");
    l.v[i][end] = '\0';
  }
  size_t cut = 0;
  if (rc == 0)
    rc = common_root(&l, root, &cut);
  if (rc == 0 && query) {
    size_t rl = strlen(*root), ql = strlen(query);
    char *r = realloc(*root, rl + ql + 1);
    if (r) {
      memcpy(r + rl, query, ql + 1);
      *root = r;
    } else {
      rc = -ENOMEM;
    }
  }
  free(query);
  if (rc == 0) {
    /* Names under the root, in place. */
    for (uint64_t i = 0; i < l.n; i++) {
      size_t len = strlen(l.v[i]);
      if (cut >= len) {
        rc = gf_fail(-EINVAL, l.v[i], GF_NO_INDEX, GF_NO_INDEX,
                     "not a shard's location (it names a folder)");
        break;
      }
      memmove(l.v[i], l.v[i] + cut, len - cut + 1);
    }
  }
  if (rc < 0) {
    if (rc == -ENOMEM)
      gf_fail(-ENOMEM, source, GF_NO_INDEX, GF_NO_INDEX,
              "out of memory listing the shards");
    gf_error_info e = *gf_last_error();
    redact_urls(e.message, sizeof e.message);
    redact_urls(e.path, sizeof e.path);
    gf_error_restore(&e);
    gf_wds_spec_free(*root, l.v, (uint32_t)l.n);
    *root = NULL;
    return rc;
  }
  *names = l.v;
  *n = (uint32_t)l.n;
  return 0;
}

void gf_wds_spec_free(char *root, char **names, uint32_t n) {
  free(root);
  gf_wds_strings_free(names, n);
}
