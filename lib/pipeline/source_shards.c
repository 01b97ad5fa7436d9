/* WebDataset tar shards as a source: the shards a path names
 * (format/wds_spec.h) in the storage they share, opened as a set
 * (format/wds_set.h: sidecar indexes, else header scans); each sample one
 * extent of its shard that holds its image, label and asked fields'
 * members, checked and taken apart once read (gf_source_unpack). A shard
 * verified by `gpufeed index --verify` gives its images' checksums
 * (GF_SRC_CRC_VERIFIED). */
#include "pipeline/source.h"

#include "format/format.h"
#include "format/wds_set.h"
#include "format/wds_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool sh_claims(const char *path, const gf_shards_config *shards) {
  return gf_wds_spec_claims(path) &&
         !(shards && shards->index == GF_SHARDS_INDEX_STREAM);
}

static int sh_open_at(const char *path, const gf_shards_config *cfg,
                      const gf_remote_config *remote, gf_storage **st,
                      void **impl) {
  *st = NULL;
  gf_shards_config c;
  int rc = gf_source_shards_config(cfg, &c);
  if (rc < 0)
    return rc;
  char *root, **names;
  uint32_t n;
  rc = gf_wds_spec_parse(path, 0, &root, &names, &n);
  if (rc < 0)
    return rc;
  rc = gf_storage_open(root, remote, st);
  if (rc == 0) {
    gf_wds_set_opts o = {
        .image_fields = c.image_fields,
        .label = c.label,
        .index = c.index == GF_SHARDS_INDEX_REQUIRE ? GF_WDS_INDEX_REQUIRE
                 : c.index == GF_SHARDS_INDEX_SCAN  ? GF_WDS_INDEX_SCAN
                                                    : GF_WDS_INDEX_AUTO,
        .threads = c.threads,
        .index_bytes = c.index_bytes,
        .fields = c.fields,
        .field_bytes = c.field_bytes};
    gf_wds_set *set;
    rc = gf_wds_set_open(*st, names, n, &o, &set);
    if (rc == 0) {
      *impl = set;
    } else {
      gf_storage_close(*st);
      *st = NULL;
    }
  }
  gf_wds_spec_free(root, names, n);
  return rc;
}

static int sh_probe(gf_storage *st, const char *labels_file) {
  (void)st;
  (void)labels_file;
  return 0; /* never at a storage's root: claimed by path */
}

static int sh_open(gf_storage *st, const char *labels_file, void **impl) {
  (void)st;
  (void)labels_file;
  (void)impl;
  return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "shards are opened by their path (open_at)");
}

static void sh_close(void *impl) { gf_wds_set_close(impl); }

static uint64_t sh_count(const void *impl) { return gf_wds_set_count(impl); }

static int sh_sample(const void *impl, uint64_t idx, gf_src_sample *out) {
  gf_wds_extent x;
  int rc = gf_wds_set_extent(impl, idx, &x);
  if (rc < 0)
    return rc;
  out->obj = x.obj;
  out->object = x.shard;
  out->offset = x.offset;
  out->length = x.length;
  out->codec = x.codec;
  out->sniff = true;
  out->label = -1;
  out->inner_offset = x.image_offset;
  out->inner_length = x.image_length;
  out->has_crc = x.has_crc ? GF_SRC_CRC_VERIFIED : GF_SRC_CRC_NONE;
  out->crc = x.crc;
  return 0;
}

static uint32_t sh_caps_more(const void *impl) {
  gf_wds_set_info in;
  gf_wds_set_info_get(impl, &in);
  return in.verified ? GF_SOURCE_CHECKSUMS : 0;
}

static uint64_t sh_fingerprint(const void *impl) {
  return gf_wds_set_fingerprint(impl);
}

static void sh_name(const void *impl, uint64_t idx, char *buf, size_t cap) {
  gf_wds_set_name(impl, idx, buf, cap);
}

static uint32_t sh_class_count(const void *impl) {
  (void)impl;
  return 0;
}

static const char *sh_class_name(const void *impl, uint32_t i) {
  (void)impl;
  (void)i;
  return NULL;
}

static int sh_sample_path(const void *impl, uint64_t idx, const char **name,
                          size_t *len) {
  *name = gf_wds_set_key(impl, idx);
  *len = strlen(*name);
  return 0;
}

static uint32_t sh_objects(const void *impl) { return gf_wds_set_shards(impl); }

static const char *sh_object_name(const void *impl, uint32_t i, char *buf,
                                  size_t cap) {
  const char *n = gf_wds_set_shard_name(impl, i);
  if (!n)
    return NULL;
  gf_strlcpy(buf, n, cap);
  return buf;
}

static uint32_t sh_alignment(const void *impl) {
  (void)impl;
  return 1;
}

static int sh_unpack(const void *impl, const gf_src_sample *smp,
                     const uint8_t *buf, uint64_t len, uint64_t *image_off,
                     uint64_t *image_len, int64_t *label, gf_src_span *fields) {
  /* gf_src_span and gf_wds_span are the same two offsets (the format
   * layer knows no pipeline type). */
  _Static_assert(sizeof(gf_src_span) == sizeof(gf_wds_span),
                 "gf_src_span and gf_wds_span differ");
  gf_wds_span spans[GF_FIELDS_MAX];
  int rc = gf_wds_set_unpack(impl, smp->index, buf, len, image_off, image_len,
                             label, fields ? spans : NULL);
  uint32_t n = gf_wds_set_field_count(impl);
  for (uint32_t i = 0; rc == 0 && fields && i < n; i++)
    fields[i] =
        (gf_src_span){.offset = spans[i].offset, .length = spans[i].length};
  return rc;
}

static uint32_t sh_field_count(const void *impl) {
  return gf_wds_set_field_count(impl);
}

static const char *sh_field_name(const void *impl, uint32_t i) {
  return gf_wds_set_field_name(impl, i);
}

static uint64_t sh_field_bytes(const void *impl) {
  return gf_wds_set_field_bytes(impl);
}

const gf_source_ops gf_source_shards = {
    .name = "shards",
    .caps = GF_SOURCE_PACKED,
    .caps_more = sh_caps_more,
    .claims = sh_claims,
    .open_at = sh_open_at,
    .probe = sh_probe,
    .open = sh_open,
    .close = sh_close,
    .count = sh_count,
    .sample = sh_sample,
    .fingerprint = sh_fingerprint,
    .sample_name = sh_name,
    .open_sample = NULL,
    .max_sizes = NULL,
    .class_count = sh_class_count,
    .class_name = sh_class_name,
    .sample_path = sh_sample_path,
    .objects = sh_objects,
    .object_name = sh_object_name,
    .alignment = sh_alignment,
    .unpack = sh_unpack,
    .field_count = sh_field_count,
    .field_name = sh_field_name,
    .field_bytes = sh_field_bytes,
};
