/* WebDataset tar shards in streaming mode (GF_SHARDS_INDEX_STREAM) as a
 * source: the shards a path names (format/wds_spec.h) and the rules that
 * pick a sample's image and label, nothing read at open; the loader reads
 * them through the streaming stage (stream.h), which this source sets up
 * (gf_source_stream_config). A sample's "index" is the stage's id:
 * (shard << 40) | its number in the shard. */
#include "pipeline/source.h"

#include "format/format.h"
#include "format/wds_rules.h"
#include "format/wds_spec.h"
#include "pipeline/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stream_src {
  gf_storage *st; /* owned by the gf_source */
  char *root;
  char **names;
  uint32_t n;
  gf_wds_rules rules;
  gf_wds_fields fields;
  gf_shards_config cfg;
} stream_src;

static bool ss_claims(const char *path, const gf_shards_config *shards) {
  return shards && shards->index == GF_SHARDS_INDEX_STREAM &&
         gf_wds_spec_claims(path);
}

static void ss_close(void *impl) {
  stream_src *s = impl;
  if (!s)
    return;
  gf_wds_spec_free(s->root, s->names, s->n);
  free(s);
}

static int ss_open_at(const char *path, const gf_shards_config *cfg,
                      const gf_remote_config *remote, gf_storage **st,
                      void **impl) {
  *st = NULL;
  stream_src *s = calloc(1, sizeof *s);
  if (!s)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  int rc = gf_source_shards_config(cfg, &s->cfg);
  if (rc == 0)
    rc = gf_wds_rules_parse(&s->rules, s->cfg.image_fields, s->cfg.label);
  if (rc == 0)
    rc = gf_wds_fields_parse(&s->fields, s->cfg.fields, s->cfg.field_bytes);
  if (rc == 0)
    rc = gf_wds_spec_parse(path, 0, &s->root, &s->names, &s->n);
  if (rc == 0)
    rc = gf_storage_open(s->root, remote, st);
  if (rc < 0) {
    ss_close(s);
    return rc;
  }
  /* The config's strings are the caller's: the rules hold copies. */
  s->cfg.image_fields = NULL;
  s->cfg.label = NULL;
  s->cfg.fields = NULL;
  s->st = *st;
  *impl = s;
  return 0;
}

static int ss_probe(gf_storage *st, const char *labels_file) {
  (void)st;
  (void)labels_file;
  return 0; /* claimed by path */
}

static int ss_open(gf_storage *st, const char *labels_file, void **impl) {
  (void)st;
  (void)labels_file;
  (void)impl;
  return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "shards are opened by their path (open_at)");
}

static uint64_t ss_count(const void *impl) {
  (void)impl;
  return 0; /* known as the stream is read */
}

static int ss_sample(const void *impl, uint64_t idx, gf_src_sample *out) {
  (void)impl;
  out->index = idx;
  out->object = (uint32_t)(idx >> 40);
  out->codec = GF_FOLDER_CODEC_UNKNOWN;
  out->sniff = true;
  out->label = -1;
  return 0;
}

/* FNV-1a over the shards' names and the options that shape the stream:
 * a resume state made for other shards is refused. */
static uint64_t ss_fingerprint(const void *impl) {
  const stream_src *s = impl;
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t i = 0; i < s->n; i++)
    for (const char *c = s->names[i];; c++) {
      h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
      if (!*c)
        break;
    }
  uint64_t opts[3] = {s->n, s->cfg.shuffle, s->cfg.shuffle_bytes};
  for (size_t i = 0; i < 3; i++)
    h = (h ^ opts[i]) * 0x100000001b3ull;
  return h ^ 0x73747265616dull; /* "stream" */
}

static void ss_name(const void *impl, uint64_t idx, char *buf, size_t cap) {
  const stream_src *s = impl;
  uint32_t sh = (uint32_t)(idx >> 40);
  char where[1100];
  gf_storage_name_display(s->st, sh < s->n ? s->names[sh] : "?", where,
                          sizeof where);
  snprintf(buf, cap, "%s: sample #%llu", where,
           (unsigned long long)(idx & ((1ull << 40) - 1)));
}

static uint32_t ss_class_count(const void *impl) {
  (void)impl;
  return 0;
}

static const char *ss_class_name(const void *impl, uint32_t i) {
  (void)impl;
  (void)i;
  return NULL;
}

static int ss_sample_path(const void *impl, uint64_t idx, const char **name,
                          size_t *len) {
  (void)impl;
  (void)idx;
  *name = "";
  *len = 0;
  return -ENOENT; /* keys come with the stream */
}

static uint32_t ss_objects(const void *impl) {
  (void)impl;
  return 0; /* opened by the stage, one at a time a lane */
}

static const char *ss_object_name(const void *impl, uint32_t i, char *buf,
                                  size_t cap) {
  (void)impl;
  (void)i;
  (void)buf;
  (void)cap;
  return NULL;
}

static uint32_t ss_alignment(const void *impl) {
  (void)impl;
  return 1;
}

static void ss_stream_config(const void *impl, gf_stream_config *out) {
  const stream_src *s = impl;
  out->st = s->st;
  out->shards = s->names;
  out->nshards = s->n;
  out->rules = &s->rules;
  out->fields = s->fields.n ? &s->fields : NULL;
  out->lanes = s->cfg.threads;
  out->shuffle = s->cfg.shuffle ? s->cfg.shuffle : GF_STREAM_SHUFFLE;
  out->shuffle_bytes = s->cfg.shuffle_bytes;
}

static uint32_t ss_field_count(const void *impl) {
  return ((const stream_src *)impl)->fields.n;
}

static const char *ss_field_name(const void *impl, uint32_t i) {
  const stream_src *s = impl;
  return i < s->fields.n ? s->fields.names[i] : NULL;
}

static uint64_t ss_field_bytes(const void *impl) {
  return ((const stream_src *)impl)->fields.bytes;
}

const gf_source_ops gf_source_shards_stream = {
    .name = "shards (streaming)",
    .caps = GF_SOURCE_STREAM,
    .claims = ss_claims,
    .open_at = ss_open_at,
    .probe = ss_probe,
    .open = ss_open,
    .close = ss_close,
    .count = ss_count,
    .sample = ss_sample,
    .fingerprint = ss_fingerprint,
    .sample_name = ss_name,
    .open_sample = NULL,
    .max_sizes = NULL,
    .class_count = ss_class_count,
    .class_name = ss_class_name,
    .sample_path = ss_sample_path,
    .objects = ss_objects,
    .object_name = ss_object_name,
    .alignment = ss_alignment,
    .unpack = NULL,
    .field_count = ss_field_count,
    .field_name = ss_field_name,
    .field_bytes = ss_field_bytes,
    .stream_config = ss_stream_config,
};
