/* The loader's two sources: a built dataset or a folder of PNG and JPEG
 * files. */
#include "pipeline/source.h"

#include "decode/decode.h"
#include "format/format.h"
#include "pipeline/sampler.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gf_source {
  gf_dataset *ds;
  gf_folder *folder;
  int root_fd; /* folder: files are opened relative to it */
  uint64_t count;
};

int gf_source_open(const char *path, const char *labels_file,
                   gf_source **out) {
  *out = NULL;
  if (!path || !path[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loader config: source is not set (a dataset folder or a "
                   "folder of PNG or JPEG files)");
  gf_source *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->root_fd = -1;
  char index[4096];
  snprintf(index, sizeof index, "%s/%s", path, GF_INDEX_NAME);
  struct stat st;
  int rc;
  if (stat(index, &st) == 0 && !labels_file) {
    rc = gf_dataset_open(path, &s->ds);
    if (rc < 0)
      goto fail;
    s->count = gf_dataset_count(s->ds);
  } else {
    rc = gf_folder_scan(path, labels_file, &s->folder);
    if (rc < 0)
      goto fail;
    s->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->root_fd < 0) {
      rc = gf_fail(-errno, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open the source folder: %s", strerror(errno));
      goto fail;
    }
    s->count = s->folder->count;
  }
  if (s->count == 0) {
    rc = gf_fail(GF_EBADSOURCE, path, GF_NO_INDEX, GF_NO_INDEX,
                 "the source holds no samples");
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
  gf_dataset_close(s->ds);
  gf_folder_free(s->folder);
  if (s->root_fd >= 0)
    close(s->root_fd);
  free(s);
}

uint64_t gf_source_count(const gf_source *s) { return s->count; }
bool gf_source_is_dataset(const gf_source *s) { return s->ds != NULL; }
uint32_t gf_source_alignment(const gf_source *s) {
  return s->ds ? gf_dataset_alignment(s->ds) : 1;
}

uint32_t gf_source_num_shards(const gf_source *s) {
  return s->ds ? gf_dataset_num_shards(s->ds) : 0;
}
const char *gf_source_shard_path(const gf_source *s, uint32_t i) {
  return s->ds ? gf_dataset_shard_path(s->ds, i) : NULL;
}

int gf_source_sample(const gf_source *s, uint64_t idx, gf_src_sample *out) {
  memset(out, 0, sizeof *out);
  out->index = idx;
  if (idx >= s->count)
    return gf_fail(-ERANGE, NULL, idx, GF_NO_INDEX,
                   "sample index beyond the %llu samples of the source",
                   (unsigned long long)s->count);
  if (s->folder) {
    out->fd = -1;
    out->codec = s->folder->entries[idx].codec;
    out->label = s->folder->entries[idx].label;
    return 0;
  }
  gf_sample_info info;
  int rc = gf_dataset_sample_info(s->ds, idx, &info);
  if (rc < 0)
    return rc;
  out->fd = gf_dataset_shard_fd(s->ds, info.shard);
  out->shard = info.shard;
  out->offset = info.offset;
  out->length = info.length;
  out->codec = (int)info.codec;
  out->stored = info.shape;
  out->label = info.label;
  out->crc = info.checksum;
  out->has_crc = 1;
  return 0;
}

/* Chains the fields with splitmix64's finalizer (sampler.h, section 1). */
static uint64_t fp_mix(uint64_t h, uint64_t v) { return gf_order_mix(h ^ v); }

uint64_t gf_source_fingerprint(const gf_source *s) {
  uint64_t h = fp_mix(0x9E3779B97F4A7C15ull, s->count);
  if (s->folder) {
    h = fp_mix(h, 0x666f6c646572ull); /* "folder" */
    for (uint64_t i = 0; i < s->count; i++) {
      const gf_folder_entry *e = &s->folder->entries[i];
      size_t len = strlen(e->path);
      /* The path in 8-byte words, then its length: no two listings of
       * different names hash alike by shifting bytes between entries. */
      for (size_t o = 0; o < len; o += 8) {
        uint8_t w[8] = {0};
        memcpy(w, e->path + o, len - o < 8 ? len - o : 8);
        h = fp_mix(h, gf_le64(w));
      }
      h = fp_mix(h, len);
      h = fp_mix(h, (uint64_t)e->label);
    }
    return h;
  }
  h = fp_mix(h, 0x64617461736574ull); /* "dataset" */
  /* gf_dataset_sample_info reports a damaged entry as an error: keep the
   * caller's error context. */
  gf_error_info saved = *gf_last_error();
  for (uint64_t i = 0; i < s->count; i++) {
    gf_sample_info info;
    if (gf_dataset_sample_info(s->ds, i, &info) < 0) {
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

void gf_source_name(const gf_source *s, uint64_t idx, char *buf, size_t cap) {
  if (s->folder && idx < s->count) {
    snprintf(buf, cap, "%s/%s", s->folder->root, s->folder->entries[idx].path);
    return;
  }
  gf_sample_info info;
  if (s->ds && gf_dataset_sample_info(s->ds, idx, &info) == 0) {
    const char *shard = gf_dataset_shard_path(s->ds, info.shard);
    snprintf(buf, cap, "%s", shard ? shard : "");
    return;
  }
  snprintf(buf, cap, "%s", "");
}

int gf_source_open_file(const gf_source *s, uint64_t idx, int *fd,
                        uint64_t *size) {
  *fd = -1;
  *size = 0;
  if (!s->folder || idx >= s->count)
    return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                   "not a file of a folder source");
  const char *rel = s->folder->entries[idx].path;
  int f = openat(s->root_fd, rel, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (f < 0 || fstat(f, &st) != 0) {
    int e = errno;
    if (f >= 0)
      close(f);
    char name[4200];
    snprintf(name, sizeof name, "%s/%s", s->folder->root, rel);
    return gf_fail(-e, name, idx, GF_NO_INDEX, "cannot open: %s",
                   strerror(e));
  }
  *fd = f;
  *size = (uint64_t)st.st_size;
  return 0;
}

int gf_source_file_codec(const gf_source *s, uint64_t idx, const void *head,
                         size_t len) {
  if (!s->folder || idx >= s->count)
    return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                   "not a file of a folder source");
  int rc = gf_folder_file_codec(s->folder->entries[idx].codec, NULL, head,
                                len);
  if (rc >= 0)
    return rc;
  /* The name only on the way out: this runs for every sample. */
  char name[4200];
  gf_source_name(s, idx, name, sizeof name);
  return gf_fail_context(rc, name, idx, NULL);
}

/* Decoded bytes of a record's output under opts: the conversion rules of
 * gf_decode (channels as requested, 16-bit kept only when asked). A png
 * record's shape was taken with 16-bit reduced, so keep_16bit may double
 * it. */
static uint64_t out_bytes(int codec, const gf_shape *stored,
                          const gf_decode_opts *o) {
  gf_shape s = *stored;
  if (o->channels)
    s.channels = o->channels;
  if (codec == GF_CODEC_PNG && o->keep_16bit)
    s.dtype = GF_DTYPE_U16;
  else if (s.dtype == GF_DTYPE_U16 && !o->keep_16bit)
    s.dtype = GF_DTYPE_U8;
  return gf_shape_bytes(&s);
}

typedef struct scan_ctx {
  const gf_decode_opts *opts;
  gf_decode_opts native; /* no conversion: channels 0, 16 bits kept */
  gf_limits lim;
  uint64_t max_decoded, max_stored, max_native;
  uint32_t max_channels;
  uint64_t by_codec[GF_CODEC_COUNT_];
} scan_ctx;

/* A damaged record cannot make the buffers larger than the limits allow:
 * sizes beyond them are left out here and refused when the sample is read. */
static void scan_one(void *ctx, int codec, const gf_shape *shape,
                     uint64_t length) {
  scan_ctx *c = ctx;
  if (codec >= 0 && codec < GF_CODEC_COUNT_)
    c->by_codec[codec]++;
  uint64_t d = out_bytes(codec, shape, c->opts);
  uint64_t nat = out_bytes(codec, shape, &c->native);
  if (nat <= c->lim.max_bytes && nat > c->max_native)
    c->max_native = nat;
  if (d <= c->lim.max_bytes && d > c->max_decoded)
    c->max_decoded = d;
  uint32_t ch = c->opts->channels ? c->opts->channels : shape->channels;
  if (d <= c->lim.max_bytes && ch > c->max_channels)
    c->max_channels = ch;
  if (length <= c->lim.max_bytes && length > c->max_stored)
    c->max_stored = length;
}

int gf_source_max_sizes(const gf_source *s, const gf_decode_opts *opts,
                        uint64_t *max_decoded, uint64_t *max_stored,
                        uint64_t *max_native, uint32_t *max_channels,
                        uint64_t *by_codec) {
  if (!s->ds)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_source_max_sizes: a folder is sized from its headers "
                   "(gf_source_extent_scan)");
  scan_ctx c = {.opts = opts, .native = *opts,
                .lim = gf_limits_resolve(&opts->limits)};
  c.native.channels = 0;
  c.native.keep_16bit = 1;
  gf_dataset_scan_sizes(s->ds, scan_one, &c);
  *max_decoded = c.max_decoded;
  *max_stored = c.max_stored;
  if (by_codec)
    memcpy(by_codec, c.by_codec, sizeof c.by_codec);
  *max_native = c.max_native > c.max_decoded ? c.max_native : c.max_decoded;
  /* No record with a channel count: any of the 4. */
  *max_channels = opts->channels ? opts->channels
                                 : (c.max_channels ? c.max_channels : 4);
  return 0;
}

uint32_t gf_source_class_count(const gf_source *s) {
  return s->ds ? gf_dataset_num_classes(s->ds) : s->folder->class_count;
}

const char *gf_source_class_name(const gf_source *s, uint32_t i) {
  if (s->ds)
    return gf_dataset_class_name(s->ds, i);
  return i < s->folder->class_count ? s->folder->classes[i] : NULL;
}

int gf_source_sample_path(const gf_source *s, uint64_t idx, const char **name,
                          size_t *len) {
  *name = "";
  *len = 0;
  if (idx >= s->count)
    return -ERANGE;
  if (s->folder) {
    *name = s->folder->entries[idx].path;
    *len = strlen(*name);
    return 0;
  }
  gf_sample_info info;
  int rc = gf_dataset_sample_info(s->ds, idx, &info);
  if (rc < 0)
    return rc;
  *name = info.source ? info.source : "";
  *len = info.source ? info.source_len : 0;
  return 0;
}
