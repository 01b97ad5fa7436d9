/* WebDataset's naming rules (wds_keys.c), exactly as webdataset 1.0.2
 * applies them (notes: WEBDATASET.md): a member path's key and field, and
 * members grouped into samples. (Shard URL patterns: wds_braces.h.)
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_KEYS_H
#define GF_FORMAT_WDS_KEYS_H

#include "common/common.h"

/* Splits a member path as webdataset does:
 *   - names webdataset skips as metadata (a top-level name starting and
 *     ending with "__", or a first component matching __[^/]*__ followed
 *     by '/' or the end) and names with no key/field split (the regex
 *     ^((?:.*\/|)[^.]+)[.]([^/]*)$ does not match: no dot in the last
 *     component, or nothing before it) return false;
 *   - else true, with *key_len the key's length (the key is path's first
 *     *key_len bytes: up to the first dot of the last component) and
 *     *field the rest after that dot (inside path).
 * The field is not lower-cased here (gf_wds_group does that). */
bool gf_wds_split(const char *path, size_t *key_len, const char **field);

/* Distinct field names a gf_wds_samples may hold: a shard with more is
 * refused (GF_ELIMIT), so that the name table stays small. */
#define GF_WDS_FIELD_NAMES_MAX 1024u

/* One member of a sample: its field's name (an id into the names table)
 * and where its data lies in the shard. */
typedef struct gf_wds_field {
  uint64_t offset, size;
  uint32_t name; /* gf_wds_samples.names[name] */
  uint32_t pad_;
} gf_wds_field;

/* gf_wds_sample.flags. */
enum {
  /* A field came twice (after lower-casing): the later member was left
   * out; webdataset refuses such a sample, and so does a loader when it
   * reads it (the error policy decides). */
  GF_WDS_DUP_FIELD = 1u << 0,
};

typedef struct gf_wds_sample {
  uint64_t key;   /* its key: keys + key, key_len bytes, NUL after */
  uint64_t first; /* its fields: fields[first .. first + count) */
  uint32_t key_len;
  uint16_t count;
  uint16_t flags; /* GF_WDS_* */
  uint32_t dup;   /* GF_WDS_DUP_FIELD: the repeated field's name id */
  uint32_t pad_;
} gf_wds_sample;

/* Samples of one shard (or several: gf_wds_samples_append), built member
 * by member, compactly: keys in one arena, field names interned. Zero it
 * to start; gf_wds_samples_free frees what it holds. */
typedef struct gf_wds_samples {
  gf_wds_sample *samples;
  uint64_t count, cap;
  gf_wds_field *fields;
  uint64_t field_count, field_cap;
  char *keys; /* NUL-terminated keys, back to back */
  uint64_t keys_len, keys_cap;
  char **names; /* distinct field names, lower-cased (ASCII) */
  uint32_t name_count, name_cap;
  uint64_t dropped; /* members whose names gf_wds_split refused */
} gf_wds_samples;

/* Adds the member `path` (data at offset, size bytes) of `shard` to *s,
 * in the shard's order: a member whose key differs from the last sample's
 * starts a sample; one whose name gf_wds_split refuses is counted in
 * s->dropped; one whose (lower-cased) field the last sample already has
 * flags that sample GF_WDS_DUP_FIELD and is left out. Returns 0, or
 * GF_ELIMIT (more than GF_WDS_FIELD_NAMES_MAX names, or 65,535 members in
 * one sample, or a key of 4 GiB) or -ENOMEM, naming the shard and the
 * member. */
int gf_wds_group_add(gf_wds_samples *s, const char *shard, const char *path,
                     uint64_t offset, uint64_t size);
/* Appends everything src holds to *dst (field names re-interned), leaving
 * src as it was. Returns 0, GF_ELIMIT or -ENOMEM (naming `what`). */
int gf_wds_samples_append(gf_wds_samples *dst, const gf_wds_samples *src,
                          const char *what);
/* Sample i's key (NUL-terminated) and field j's name. */
static inline const char *gf_wds_key(const gf_wds_samples *s, uint64_t i) {
  return s->keys + s->samples[i].key;
}
static inline const char *gf_wds_field_name(const gf_wds_samples *s,
                                            const gf_wds_field *f) {
  return s->names[f->name];
}
/* The id of the field name `name` (lower-case), or UINT32_MAX. */
uint32_t gf_wds_name_id(const gf_wds_samples *s, const char *name);
/* Drops every sample but the last (which becomes sample 0), keeping the
 * field names: a reader that takes samples as they complete holds one
 * sample's members, not a shard's. */
void gf_wds_samples_keep_last(gf_wds_samples *s);
/* NULL accepted; leaves *s zero. */
void gf_wds_samples_free(gf_wds_samples *s);

#endif
