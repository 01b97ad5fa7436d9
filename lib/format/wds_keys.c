/* WebDataset's naming rules (wds_keys.h): webdataset 1.0.2's
 * tar_file_iterator (metadata names skipped), base_plus_ext (the regex
 * ^((?:.*\/|)[^.]+)[.]([^/]*)$, written out here byte by byte, which is
 * exact for UTF-8 names since '/', '.' and '\n' are ASCII) and
 * group_by_keys (adjacent members with one key make a sample; a field
 * twice in one sample is an error). */
#include "format/wds_keys.h"

#include <stdlib.h>
#include <string.h>

/* webdataset's skip of metadata: a top-level name "__..__" (meta_prefix,
 * meta_suffix), and re.match(r"__[^/]*__($|/)", name). */
static bool is_meta(const char *p, size_t len) {
  const char *slash = memchr(p, '/', len);
  if (!slash && len >= 2 && !memcmp(p, "__", 2) &&
      !memcmp(p + len - 2, "__", 2))
    return true;
  size_t c = slash ? (size_t)(slash - p) : len;
  if (c >= 4 && !memcmp(p, "__", 2) && !memcmp(p + c - 2, "__", 2))
    return true;
  /* `$` also matches before a final newline. */
  if (!slash && len >= 5 && p[len - 1] == '\n' && !memcmp(p, "__", 2) &&
      !memcmp(p + len - 3, "__", 2))
    return true;
  return false;
}

bool gf_wds_split(const char *path, size_t *key_len, const char **field) {
  size_t len = strlen(path);
  if (is_meta(path, len))
    return false;
  const char *last = strrchr(path, '/');
  size_t cs = last ? (size_t)(last - path) + 1 : 0;
  const char *dot = memchr(path + cs, '.', len - cs);
  if (!dot)
    return false;
  size_t i = (size_t)(dot - path);
  /* [^.]+ is path[k..i): no dot in it, k < i, and k is 0 (an empty
   * (?:.*\/|)) or follows a '/' with no newline before it (`.` does not
   * match a newline). */
  size_t s = i;
  while (s > 0 && path[s - 1] != '.')
    s--;
  const char *nl = memchr(path, '\n', len);
  size_t nlpos = nl ? (size_t)(nl - path) : len;
  bool ok = false;
  for (size_t k = s; k < i && !ok; k++)
    ok = k == 0 || (path[k - 1] == '/' && k - 1 <= nlpos);
  if (!ok)
    return false;
  *key_len = i;
  *field = path + i + 1;
  return true;
}

static char *copy(const char *p, size_t n) {
  char *c = malloc(n + 1);
  if (c) {
    memcpy(c, p, n);
    c[n] = '\0';
  }
  return c;
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

int gf_wds_group_add(gf_wds_samples *s, const char *shard, const char *path,
                     uint64_t offset, uint64_t size) {
  size_t klen;
  const char *f;
  if (!gf_wds_split(path, &klen, &f))
    return 0;
  gf_wds_sample *cur = s->count ? &s->samples[s->count - 1] : NULL;
  if (cur && (strlen(cur->key) != klen || memcmp(cur->key, path, klen)))
    cur = NULL;
  char *name = copy(f, strlen(f));
  if (!name)
    goto nomem;
  for (char *c = name; *c; c++)
    if (*c >= 'A' && *c <= 'Z')
      *c = (char)(*c - 'A' + 'a');
  if (cur) {
    for (uint64_t j = cur->first; j < cur->first + cur->count; j++)
      if (!strcmp(s->fields[j].name, name)) {
        int rc = gf_fail(GF_ECORRUPT, shard, GF_NO_INDEX, offset,
                         "sample '%s' has field '%s' twice (member "
                         "'%s', data at byte %llu): webdataset refuses a "
                         "repeated field",
                         cur->key, name, path, (unsigned long long)offset);
        free(name);
        return rc;
      }
    if (cur->count == UINT32_MAX) {
      free(name);
      return gf_fail(GF_ELIMIT, shard, GF_NO_INDEX, offset,
                     "sample '%s' has too many fields", cur->key);
    }
  }
  if (!grow((void **)&s->fields, &s->field_cap, s->field_count + 1,
            sizeof *s->fields)) {
    free(name);
    goto nomem;
  }
  if (!cur) {
    char *key = copy(path, klen);
    if (!key || !grow((void **)&s->samples, &s->cap, s->count + 1,
                      sizeof *s->samples)) {
      free(key);
      free(name);
      goto nomem;
    }
    cur = &s->samples[s->count++];
    *cur = (gf_wds_sample){.key = key, .first = s->field_count, .count = 0};
  }
  s->fields[s->field_count++] =
      (gf_wds_field){.name = name, .offset = offset, .size = size};
  cur->count++;
  return 0;
nomem:
  return gf_fail(-ENOMEM, shard, GF_NO_INDEX, offset,
                 "out of memory grouping member '%s'", path);
}

void gf_wds_samples_free(gf_wds_samples *s) {
  if (!s)
    return;
  for (uint64_t i = 0; i < s->count; i++)
    free(s->samples[i].key);
  for (uint64_t i = 0; i < s->field_count; i++)
    free(s->fields[i].name);
  free(s->samples);
  free(s->fields);
  *s = (gf_wds_samples){0};
}
