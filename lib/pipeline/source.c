/* The source registry (one line a kind) and the calls that go through a
 * source's table of operations. */
#include "pipeline/source.h"

#include "format/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Asked in order whether the storage's root holds a source of their kind;
 * the image folder last: it takes what no other kind claims. */
static const gf_source_ops *const kinds[] = {
    &gf_source_dataset,
    &gf_source_folder,
};
/* Asked first whether the path itself names a source of their kind. */
static const gf_source_ops *const path_kinds[] = {
    &gf_source_shards_stream,
    &gf_source_shards,
};

struct gf_source {
  const gf_source_ops *ops;
  void *impl;
  gf_storage *st;
  uint64_t count;
  uint32_t caps; /* ops->caps and what caps_more adds */
};

int gf_source_open(const char *path, const char *labels_file,
                   const gf_shards_config *shards,
                   const gf_remote_config *remote, gf_source **out) {
  *out = NULL;
  if (!path || !path[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loader config: source is not set (a dataset folder or a "
                   "folder of PNG or JPEG files)");
  gf_source *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  int rc;
  for (size_t i = 0; i < sizeof path_kinds / sizeof path_kinds[0]; i++) {
    if (!path_kinds[i]->claims(path, shards))
      continue;
    if (labels_file && labels_file[0]) {
      free(s);
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "a labels file is for a folder of images: %s take "
                     "their labels from a field (gf_shards_config.label)",
                     path_kinds[i]->name);
    }
    if ((rc = path_kinds[i]->open_at(path, shards, remote, &s->st, &s->impl)) <
        0) {
      free(s);
      return rc;
    }
    s->ops = path_kinds[i];
    goto opened;
  }
  rc = gf_storage_open(path, remote, &s->st);
  if (rc < 0) {
    free(s);
    return rc;
  }
  const size_t n = sizeof kinds / sizeof kinds[0];
  for (size_t i = 0; i < n; i++) {
    if (i + 1 < n) {
      rc = kinds[i]->probe(s->st, labels_file);
      if (rc < 0)
        goto fail;
      if (rc == 0)
        continue;
    }
    s->ops = kinds[i];
    break;
  }
  gf_error_clear(); /* what the probes met is no error */
  if ((rc = s->ops->open(s->st, labels_file, &s->impl)) < 0) {
    s->ops = NULL;
    goto fail;
  }
opened:
  s->count = s->ops->count(s->impl);
  s->caps = s->ops->caps | (s->ops->caps_more ? s->ops->caps_more(s->impl) : 0);
  if (s->count == 0 && !(s->ops->caps & GF_SOURCE_STREAM)) {
    rc = gf_fail(GF_EBADSOURCE, gf_storage_display(s->st), GF_NO_INDEX,
                 GF_NO_INDEX, "the source holds no samples");
    goto fail;
  }
  *out = s;
  return 0;
fail:
  gf_source_close(s);
  return rc;
}

void gf_source_close(gf_source *s) {
  if (!s)
    return;
  if (s->ops)
    s->ops->close(s->impl);
  gf_storage_close(s->st);
  free(s);
}

uint64_t gf_source_count(const gf_source *s) { return s->count; }
uint32_t gf_source_caps(const gf_source *s) { return s->caps; }
const char *gf_source_kind(const gf_source *s) { return s->ops->name; }
gf_storage *gf_source_storage(const gf_source *s) { return s->st; }
uint32_t gf_source_alignment(const gf_source *s) {
  return s->ops->alignment(s->impl);
}
uint32_t gf_source_objects(const gf_source *s) {
  return s->ops->objects(s->impl);
}
const char *gf_source_object_name(const gf_source *s, uint32_t i, char *buf,
                                  size_t cap) {
  return s->ops->object_name(s->impl, i, buf, cap);
}

/* A stream's samples are named by the stage's ids, not counted. */
static bool in_range(const gf_source *s, uint64_t idx) {
  return idx < s->count || (s->ops->caps & GF_SOURCE_STREAM);
}

int gf_source_sample(const gf_source *s, uint64_t idx, gf_src_sample *out) {
  memset(out, 0, sizeof *out);
  out->index = idx;
  if (!in_range(s, idx))
    return gf_fail(-ERANGE, NULL, idx, GF_NO_INDEX,
                   "sample index beyond the %llu samples of the source",
                   (unsigned long long)s->count);
  return s->ops->sample(s->impl, idx, out);
}

uint64_t gf_source_fingerprint(const gf_source *s) {
  return s->ops->fingerprint(s->impl);
}

void gf_source_name(const gf_source *s, uint64_t idx, char *buf, size_t cap) {
  if (!in_range(s, idx)) {
    snprintf(buf, cap, "%s", "");
    return;
  }
  s->ops->sample_name(s->impl, idx, buf, cap);
}

int gf_source_open_sample(const gf_source *s, uint64_t idx, gf_object **out) {
  *out = NULL;
  if (!s->ops->open_sample || idx >= s->count)
    return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                   "not a sample that is an object of its own");
  return s->ops->open_sample(s->impl, idx, out);
}

int gf_source_file_codec(const gf_source *s, const gf_src_sample *smp,
                         const void *head, size_t len) {
  int rc = gf_folder_file_codec(smp->codec, NULL, head, len);
  if (rc >= 0)
    return rc;
  /* The name only on the way out: this runs for every sample. */
  char name[4200];
  gf_source_name(s, smp->index, name, sizeof name);
  return gf_fail_context(rc, name, smp->index, NULL);
}

int gf_source_max_sizes(const gf_source *s, const gf_decode_opts *opts,
                        uint64_t *max_decoded, uint64_t *max_stored,
                        uint64_t *max_native, uint32_t *max_channels,
                        uint64_t *by_codec) {
  if (!(s->ops->caps & GF_SOURCE_RECORDS))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_source_max_sizes: a %s is sized from its headers "
                   "(gf_source_extent_scan)",
                   s->ops->name);
  return s->ops->max_sizes(s->impl, opts, max_decoded, max_stored, max_native,
                           max_channels, by_codec);
}

uint32_t gf_source_class_count(const gf_source *s) {
  return s->ops->class_count(s->impl);
}

const char *gf_source_class_name(const gf_source *s, uint32_t i) {
  return s->ops->class_name(s->impl, i);
}

int gf_source_unpack(const gf_source *s, const gf_src_sample *smp,
                     const uint8_t *buf, uint64_t len, uint64_t *image_off,
                     uint64_t *image_len, int64_t *label, gf_src_span *fields) {
  if (!s->ops->unpack)
    return gf_fail(GF_EINTERNAL, NULL, smp->index, GF_NO_INDEX,
                   "gf_source_unpack: a %s holds no packed samples",
                   s->ops->name);
  return s->ops->unpack(s->impl, smp, buf, len, image_off, image_len, label,
                        fields);
}

uint32_t gf_source_field_count(const gf_source *s) {
  return s->ops->field_count ? s->ops->field_count(s->impl) : 0;
}

const char *gf_source_field_name(const gf_source *s, uint32_t i) {
  return s->ops->field_name ? s->ops->field_name(s->impl, i) : NULL;
}

uint64_t gf_source_field_bytes(const gf_source *s) {
  return s->ops->field_bytes ? s->ops->field_bytes(s->impl) : 0;
}

int gf_source_stream_config(const gf_source *s, struct gf_stream_config *out) {
  if (!(s->ops->caps & GF_SOURCE_STREAM) || !s->ops->stream_config)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_source_stream_config: a %s is read by index",
                   s->ops->name);
  s->ops->stream_config(s->impl, out);
  return 0;
}

int gf_source_prepare(const gf_source *s, const uint64_t *idx, size_t n,
                      uint8_t *unready) {
  if (unready && n)
    memset(unready, 0, n);
  if (!s->ops->prepare || !n)
    return 0;
  return s->ops->prepare(s->impl, idx, n, unready);
}

void gf_source_record_counters(const gf_source *s, uint64_t *reads,
                               uint64_t *bytes, uint64_t *pages) {
  *reads = *bytes = *pages = 0;
  if (s->ops->record_counters)
    s->ops->record_counters(s->impl, reads, bytes, pages);
}

bool gf_source_can_prepare(const gf_source *s) {
  return s->ops->prepare && s->ops->prepare(s->impl, NULL, 0, NULL) == 1;
}

int gf_source_sample_path(const gf_source *s, uint64_t idx, const char **name,
                          size_t *len) {
  *name = "";
  *len = 0;
  if (idx >= s->count)
    return -ERANGE;
  return s->ops->sample_path(s->impl, idx, name, len);
}
