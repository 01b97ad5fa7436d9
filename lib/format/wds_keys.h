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

/* One member of a sample: its field (lower-cased in ASCII; webdataset's
 * str.lower() also lowers non-ASCII letters, which this leaves as they
 * are) and where its data lies. */
typedef struct gf_wds_field {
  char *name;
  uint64_t offset, size;
} gf_wds_field;

typedef struct gf_wds_sample {
  char *key;
  uint64_t first; /* its fields: fields[first .. first + count) */
  uint32_t count;
} gf_wds_sample;

/* Samples of one shard, built member by member (gf_wds_group_add). Zero
 * it to start; gf_wds_samples_free frees what it holds. */
typedef struct gf_wds_samples {
  gf_wds_sample *samples;
  uint64_t count, cap;
  gf_wds_field *fields;
  uint64_t field_count, field_cap;
} gf_wds_samples;

/* Adds the member `path` (data at offset, size bytes) of `shard` to *s,
 * in the shard's order: a member whose key differs from the last sample's
 * starts a sample; one whose name gf_wds_split refuses is dropped.
 * Returns 0, GF_ECORRUPT when the last sample already has this field
 * (naming the shard, the key and the field), or -ENOMEM. */
int gf_wds_group_add(gf_wds_samples *s, const char *shard, const char *path,
                     uint64_t offset, uint64_t size);
/* NULL accepted; leaves *s zero. */
void gf_wds_samples_free(gf_wds_samples *s);

#endif
