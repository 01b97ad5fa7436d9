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

uint32_t gf_wds_name_id(const gf_wds_samples *s, const char *name) {
  for (uint32_t i = 0; i < s->name_count; i++)
    if (!strcmp(s->names[i], name))
      return i;
  return UINT32_MAX;
}

/* The id of name (n bytes, lower-cased here), interned when new. Returns
 * it, or a negative code (recorded by the caller). */
static int64_t intern(gf_wds_samples *s, const char *name, size_t n) {
  char small[64], *low = n < sizeof small ? small : malloc(n + 1);
  if (!low)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    low[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a')
                                              : name[i];
  low[n] = '\0';
  uint32_t id = gf_wds_name_id(s, low);
  int64_t rc = id;
  if (id == UINT32_MAX) {
    if (s->name_count >= GF_WDS_FIELD_NAMES_MAX) {
      rc = GF_ELIMIT;
    } else if (s->name_count == s->name_cap) {
      uint32_t c = s->name_cap ? s->name_cap * 2 : 8;
      char **q = realloc(s->names, c * sizeof *q);
      if (q) {
        s->names = q;
        s->name_cap = c;
      } else {
        rc = -ENOMEM;
      }
    }
    if (rc >= 0) {
      char *dup = malloc(n + 1);
      if (dup) {
        memcpy(dup, low, n + 1);
        s->names[s->name_count] = dup;
        rc = s->name_count++;
      } else {
        rc = -ENOMEM;
      }
    }
  }
  if (low != small)
    free(low);
  return rc;
}

static int add_key(gf_wds_samples *s, const char *key, size_t n, uint64_t *at) {
  if (!grow((void **)&s->keys, &s->keys_cap, s->keys_len + n + 1, 1))
    return -ENOMEM;
  *at = s->keys_len;
  memcpy(s->keys + s->keys_len, key, n);
  s->keys[s->keys_len + n] = '\0';
  s->keys_len += n + 1;
  return 0;
}

static int fail_add(int rc, const char *shard, const char *path,
                    uint64_t offset) {
  if (rc == -ENOMEM)
    return gf_fail(-ENOMEM, shard, GF_NO_INDEX, offset,
                   "out of memory grouping member '%s'", path);
  return gf_fail(GF_ELIMIT, shard, GF_NO_INDEX, offset,
                 "member '%s' (data at byte %llu): more than %u distinct "
                 "field names, 65,535 members in one sample, or a key of "
                 "4 GiB",
                 path, (unsigned long long)offset, GF_WDS_FIELD_NAMES_MAX);
}

int gf_wds_group_add(gf_wds_samples *s, const char *shard, const char *path,
                     uint64_t offset, uint64_t size) {
  size_t klen;
  const char *f;
  if (!gf_wds_split(path, &klen, &f)) {
    s->dropped++;
    return 0;
  }
  if (klen >= UINT32_MAX)
    return fail_add(GF_ELIMIT, shard, path, offset);
  gf_wds_sample *cur = s->count ? &s->samples[s->count - 1] : NULL;
  if (cur && (cur->key_len != klen || memcmp(s->keys + cur->key, path, klen)))
    cur = NULL;
  int64_t id = intern(s, f, strlen(f));
  if (id < 0)
    return fail_add((int)id, shard, path, offset);
  if (cur) {
    for (uint64_t j = cur->first; j < cur->first + cur->count; j++)
      if (s->fields[j].name == (uint32_t)id) {
        if (!(cur->flags & GF_WDS_DUP_FIELD))
          cur->dup = (uint32_t)id;
        cur->flags |= GF_WDS_DUP_FIELD;
        return 0;
      }
    if (cur->count == UINT16_MAX)
      return fail_add(GF_ELIMIT, shard, path, offset);
  }
  if (!grow((void **)&s->fields, &s->field_cap, s->field_count + 1,
            sizeof *s->fields))
    return fail_add(-ENOMEM, shard, path, offset);
  if (!cur) {
    uint64_t at;
    if (!grow((void **)&s->samples, &s->cap, s->count + 1,
              sizeof *s->samples) ||
        add_key(s, path, klen, &at) < 0)
      return fail_add(-ENOMEM, shard, path, offset);
    cur = &s->samples[s->count++];
    *cur = (gf_wds_sample){
        .key = at, .first = s->field_count, .key_len = (uint32_t)klen};
  }
  s->fields[s->field_count++] =
      (gf_wds_field){.name = (uint32_t)id, .offset = offset, .size = size};
  cur->count++;
  return 0;
}

int gf_wds_samples_append(gf_wds_samples *dst, const gf_wds_samples *src,
                          const char *what) {
  uint32_t map_small[64], *map = src->name_count <= 64
                                     ? map_small
                                     : malloc(src->name_count * sizeof *map);
  int rc = 0;
  if (!map)
    return gf_fail(-ENOMEM, what, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory merging samples");
  for (uint32_t i = 0; i < src->name_count && rc == 0; i++) {
    int64_t id = intern(dst, src->names[i], strlen(src->names[i]));
    if (id < 0)
      rc = (int)id;
    else
      map[i] = (uint32_t)id;
  }
  if (rc == 0 &&
      (!grow((void **)&dst->samples, &dst->cap, dst->count + src->count,
             sizeof *dst->samples) ||
       !grow((void **)&dst->fields, &dst->field_cap,
             dst->field_count + src->field_count, sizeof *dst->fields) ||
       !grow((void **)&dst->keys, &dst->keys_cap, dst->keys_len + src->keys_len,
             1)))
    rc = -ENOMEM;
  if (rc == 0) {
    for (uint64_t i = 0; i < src->count; i++) {
      gf_wds_sample m = src->samples[i];
      m.key += dst->keys_len;
      m.first += dst->field_count;
      if (m.flags & GF_WDS_DUP_FIELD)
        m.dup = map[m.dup];
      dst->samples[dst->count + i] = m;
    }
    for (uint64_t i = 0; i < src->field_count; i++) {
      gf_wds_field f = src->fields[i];
      f.name = map[f.name];
      dst->fields[dst->field_count + i] = f;
    }
    if (src->keys_len)
      memcpy(dst->keys + dst->keys_len, src->keys, src->keys_len);
    dst->count += src->count;
    dst->field_count += src->field_count;
    dst->keys_len += src->keys_len;
    dst->dropped += src->dropped;
  }
  if (map != map_small)
    free(map);
  if (rc < 0)
    return gf_fail(rc, what, GF_NO_INDEX, GF_NO_INDEX,
                   rc == -ENOMEM ? "out of memory merging samples"
                                 : "more than %u distinct field names",
                   GF_WDS_FIELD_NAMES_MAX);
  return 0;
}

void gf_wds_samples_keep_last(gf_wds_samples *s) {
  if (s->count <= 1)
    return;
  gf_wds_sample m = s->samples[s->count - 1];
  memmove(s->fields, s->fields + m.first, m.count * sizeof *s->fields);
  memmove(s->keys, s->keys + m.key, m.key_len + 1);
  m.first = 0;
  m.key = 0;
  s->samples[0] = m;
  s->count = 1;
  s->field_count = m.count;
  s->keys_len = m.key_len + 1;
}

void gf_wds_samples_free(gf_wds_samples *s) {
  if (!s)
    return;
  for (uint32_t i = 0; i < s->name_count; i++)
    free(s->names[i]);
  free(s->names);
  free(s->samples);
  free(s->fields);
  free(s->keys);
  *s = (gf_wds_samples){0};
}
