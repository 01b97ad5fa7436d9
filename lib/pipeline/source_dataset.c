/* A dataset made by `gpufeed build` as a source: records from its index,
 * each sample an extent of a shard object (format/dataset.c reads both
 * through the storage it lies in). */
#include "pipeline/source.h"

#include "format/format.h"
#include "pipeline/sampler.h" /* gf_order_mix */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ds_probe(gf_storage *st, const char *labels_file) {
  if (labels_file)
    return 0;
  gf_stat sb;
  int rc = gf_storage_stat(st, GF_INDEX_NAME, true, &sb);
  if (rc == 0)
    return 1;
  /* No index: an image folder, which says what is wrong with it if
   * anything is. Where folders cannot be listed, the index is the only
   * thing a source can be, and a server's refusal (a 403: a wrong key, a
   * policy) is no absence: their error is the answer. */
  uint32_t caps = gf_storage_caps(st);
  if (rc == -ENOENT ||
      ((caps & GF_STORAGE_LIST) && !(caps & GF_STORAGE_REMOTE)))
    return 0;
  return rc;
}

static int ds_open(gf_storage *st, const char *labels_file, void **impl) {
  (void)labels_file;
  gf_dataset *ds;
  int rc = gf_dataset_open_in(st, false, &ds);
  if (rc == 0)
    *impl = ds;
  return rc;
}

static void ds_close(void *impl) { gf_dataset_close(impl); }

static uint64_t ds_count(const void *impl) { return gf_dataset_count(impl); }

static int ds_sample(const void *impl, uint64_t idx, gf_src_sample *out) {
  const gf_dataset *ds = impl;
  gf_sample_info info;
  int rc = gf_dataset_record(ds, idx, &info);
  if (rc < 0)
    return rc;
  if ((rc = gf_dataset_shard_open(ds, info.shard, &out->obj)) < 0)
    return gf_fail_context(rc, NULL, idx, NULL);
  out->object = info.shard;
  out->offset = info.offset;
  out->length = info.length;
  out->codec = (int)info.codec;
  out->stored = info.shape;
  out->label = info.label;
  out->crc = info.checksum;
  out->has_crc = GF_SRC_CRC_RECORD;
  return 0;
}

/* Chains the fields with splitmix64's finalizer (sampler.h, section 1). */
static uint64_t fp_mix(uint64_t h, uint64_t v) { return gf_order_mix(h ^ v); }

static uint64_t ds_fingerprint(const void *impl) {
  const gf_dataset *ds = impl;
  uint64_t n = gf_dataset_count(ds);
  uint64_t h = fp_mix(0x9E3779B97F4A7C15ull, n);
  h = fp_mix(h, 0x64617461736574ull); /* "dataset" */
  /* gf_dataset_record reports a damaged entry as an error: keep the
   * caller's error context. A remote index is read whole first, many reads
   * at once (a record that still cannot be read hashes as damaged). */
  gf_error_info saved = *gf_last_error();
  (void)gf_dataset_load_index(ds);
  for (uint64_t i = 0; i < n; i++) {
    gf_sample_info info;
    if (gf_dataset_record(ds, i, &info) < 0) {
      h = fp_mix(h, UINT64_MAX);
      continue;
    }
    h = fp_mix(h, info.length);
    h = fp_mix(h, ((uint64_t)info.checksum << 32) | info.codec);
    h = fp_mix(h, (uint64_t)info.label);
    h = fp_mix(h, ((uint64_t)info.shape.height << 32) | info.shape.width);
    h = fp_mix(h, ((uint64_t)info.shape.channels << 8) | info.shape.dtype);
  }
  gf_error_restore(&saved);
  return h;
}

static int ds_prepare(const void *impl, const uint64_t *idx, size_t n,
                      uint8_t *unready) {
  if (!idx && !n)
    return gf_dataset_paged(impl) ? 1 : 0;
  return gf_dataset_prepare(impl, idx, n, unready);
}

static void ds_record_counters(const void *impl, uint64_t *reads,
                               uint64_t *bytes, uint64_t *pages) {
  gf_dataset_index_counters(impl, reads, bytes, pages);
}

static void ds_name(const void *impl, uint64_t idx, char *buf, size_t cap) {
  gf_sample_info info;
  gf_error_info saved = *gf_last_error(); /* a name for another's error */
  int rc = gf_dataset_record(impl, idx, &info);
  gf_error_restore(&saved);
  if (rc == 0) {
    const char *shard = gf_dataset_shard_path(impl, info.shard);
    snprintf(buf, cap, "%s", shard ? shard : "");
    return;
  }
  snprintf(buf, cap, "%s", "");
}

static int ds_max_sizes(const void *impl, const gf_decode_opts *opts,
                        uint64_t *max_decoded, uint64_t *max_stored,
                        uint64_t *max_native, uint32_t *max_channels,
                        uint64_t *by_codec) {
  /* The summary table when it is exact (O(1): a remote index needs no
   * record for it), else a pass over every record. */
  gf_record_sizes z;
  int rc = gf_dataset_max_sizes(impl, opts, true, &z);
  if (rc < 0)
    return rc;
  *max_decoded = z.max_decoded;
  *max_stored = z.max_stored;
  if (by_codec)
    memcpy(by_codec, z.by_codec, sizeof z.by_codec);
  *max_native = z.max_native > z.max_decoded ? z.max_native : z.max_decoded;
  /* No record with a channel count: any of the 4. */
  *max_channels =
      opts->channels ? opts->channels : (z.max_channels ? z.max_channels : 4);
  return 0;
}

static uint32_t ds_class_count(const void *impl) {
  return gf_dataset_num_classes(impl);
}

static const char *ds_class_name(const void *impl, uint32_t i) {
  return gf_dataset_class_name(impl, i);
}

static int ds_sample_path(const void *impl, uint64_t idx, const char **name,
                          size_t *len) {
  gf_sample_info info;
  int rc = gf_dataset_sample_info(impl, idx, &info);
  if (rc < 0)
    return rc;
  *name = info.source ? info.source : "";
  *len = info.source ? info.source_len : 0;
  return 0;
}

static uint32_t ds_objects(const void *impl) {
  return gf_dataset_num_shards(impl);
}

static const char *ds_object_name(const void *impl, uint32_t i, char *buf,
                                  size_t cap) {
  if (i >= gf_dataset_num_shards(impl))
    return NULL;
  snprintf(buf, cap, GF_SHARD_FMT, i);
  return buf;
}

static uint32_t ds_alignment(const void *impl) {
  return gf_dataset_alignment(impl);
}

const gf_source_ops gf_source_dataset = {
    .name = "dataset",
    .caps = GF_SOURCE_RECORDS | GF_SOURCE_CHECKSUMS,
    .probe = ds_probe,
    .open = ds_open,
    .close = ds_close,
    .count = ds_count,
    .sample = ds_sample,
    .fingerprint = ds_fingerprint,
    .sample_name = ds_name,
    .open_sample = NULL,
    .max_sizes = ds_max_sizes,
    .class_count = ds_class_count,
    .class_name = ds_class_name,
    .sample_path = ds_sample_path,
    .objects = ds_objects,
    .object_name = ds_object_name,
    .alignment = ds_alignment,
    .prepare = ds_prepare,
    .record_counters = ds_record_counters,
};
