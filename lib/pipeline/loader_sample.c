/* The loader's per-sample path: a sample from the cache, or read (one
 * submission a chunk through the worker's reader) and decoded straight into
 * its place in the slot; a failure recorded against its position. */
#include "pipeline/loader_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct cache_head {
  gf_shape shape;
  uint32_t filtered; /* 1: the bytes are still gradient-filtered, 2: they
                        are a loco record (GPU mode) */
  uint32_t has_label; /* a packed sample's label, found in its bytes */
  int64_t label;
  /* Bytes after the pixels: the sample's asked fields (nfields lengths,
   * GF_NO_INDEX for an absent one, then the present ones' bytes), so that
   * a hit delivers the fields of its own sample. */
  uint64_t tail;
  uint64_t pad_; /* the pixels stay 16-byte aligned (direct copies) */
} cache_head;
#define CACHE_HEAD ((size_t)sizeof(cache_head))

/* ---- one sample --------------------------------------------------------- */

/* Copies the asked fields found in an unpacked extent buf into their
 * places (each within field_bytes: unpack checked). */
static void put_fields(const gf_loader *l, const gf_src_span *sp,
                       const uint8_t *buf, const field_place *fp) {
  for (uint32_t i = 0; i < l->nfields; i++) {
    fp->len[i] = sp[i].offset == GF_NO_INDEX ? GF_NO_INDEX : sp[i].length;
    if (sp[i].offset != GF_NO_INDEX)
      memcpy(fp->data + (uint64_t)i * l->field_bytes, buf + sp[i].offset,
             (size_t)sp[i].length);
  }
}

/* Offers a decoded sample to the cache: its head, its out bytes at dst,
 * and its fields (fp) after them. */
static void cache_offer(gf_loader *l, uint64_t idx, cache_head *h,
                        const uint8_t *dst, uint64_t out,
                        const field_place *fp) {
  gf_cache_part parts[2 + 1 + GF_FIELDS_MAX];
  uint32_t n = 0;
  parts[n++] = (gf_cache_part){h, CACHE_HEAD};
  parts[n++] = (gf_cache_part){dst, (size_t)out};
  h->tail = 0;
  if (fp) {
    parts[n++] = (gf_cache_part){fp->len, l->nfields * sizeof *fp->len};
    h->tail += l->nfields * sizeof *fp->len;
    for (uint32_t i = 0; i < l->nfields; i++)
      if (fp->len[i] != GF_NO_INDEX) {
        parts[n++] = (gf_cache_part){fp->data + (uint64_t)i * l->field_bytes,
                                     (size_t)fp->len[i]};
        h->tail += fp->len[i];
      }
  }
  gf_cache_put_iov(l->cache, idx, parts, n);
}

/* The fields of a cache record's tail (cache_offer) into their places. */
static void fields_from_cache(const gf_loader *l, const uint8_t *tail,
                              const field_place *fp) {
  memcpy(fp->len, tail, l->nfields * sizeof *fp->len);
  const uint8_t *at = tail + l->nfields * sizeof *fp->len;
  for (uint32_t i = 0; i < l->nfields; i++)
    if (fp->len[i] != GF_NO_INDEX) {
      memcpy(fp->data + (uint64_t)i * l->field_bytes, at, (size_t)fp->len[i]);
      at += fp->len[i];
    }
}

/* Checks the stored bytes, decodes them into dst (unless they were read
 * there already as raw pixels: in_place) and offers the result to the
 * cache. Records context and returns the error on failure. */
/* GPU mode leaves a gradzstd sample gradient-filtered: the transform
 * kernel undoes the filter in the same pass as the conversion, so the CPU
 * only runs zstd. Only when nothing else changes the pixels (no channel or
 * bit-depth conversion) and a row fits the kernel's shared memory. */
static bool gpu_unfilters(const gf_loader *l, const gf_src_sample *smp) {
  if (!l->stage || l->identity ||
      !(gf_codec_caps(smp->codec) & GF_CODEC_CAP_GPU_UNFILTER) ||
      smp->stored.dtype != GF_DTYPE_U8 ||
      l->cfg.transform.resize != GF_RESIZE_NONE) /* resampled unfiltered */
    return false;
  if (l->dopts.channels && l->dopts.channels != smp->stored.channels)
    return false;
  return (uint64_t)smp->stored.width * smp->stored.channels <=
             GF_XFORM_GPU_FILTERED_ROW &&
         gf_shape_bytes(&smp->stored) <= l->stride;
}

/* GPU mode decodes a loco record on the GPU (kernels/loco.h): the CPU
 * checks its structure and puts the record in the sample's place.
 * Only when nothing else changes the pixels and the record fits the
 * sample's place (a 4-byte aligned stride: the kernel reads words). */
static bool gpu_decodes_loco(const gf_loader *l, const gf_src_sample *smp,
                             int codec, uint64_t len) {
  if (!l->loco_gpu || l->identity ||
      !(gf_codec_caps(codec) & GF_CODEC_CAP_GPU_RECORD) ||
      smp->stored.dtype != GF_DTYPE_U8 || l->stride % 4 != 0)
    return false;
  if (l->dopts.channels && l->dopts.channels != smp->stored.channels)
    return false;
  return len <= l->stride && gf_shape_bytes(&smp->stored) <= l->stride;
}

/* Decodes a PNG or JPEG sample whole (a folder's file, or a dataset's
 * png/jpeg record, whose shape it must match) into dst. */
static int decode_file(gf_loader *l, const gf_src_sample *smp, int codec,
                       const uint8_t *buf, uint64_t len, uint8_t *dst,
                       gf_shape *shape) {
  /* A jpeg record's dimensions are checked against the file's (a png
   * record's are not, as before JPEG came). */
  gf_shape dims = {smp->stored.height, smp->stored.width, 0, 0};
  bool check = smp->stored.height && codec == GF_CODEC_JPEG;
  int rc = gf_decode(codec, buf, (size_t)len, check ? &dims : NULL,
                     &l->dopts, dst, (size_t)l->stride, shape);
  if (rc == 0 && codec == GF_CODEC_JPEG)
    gf_loader__jpeg_count(l, 1, shape, shape->height, shape->width);
  return rc;
}

/* A verified image whose bytes no longer match (its shard changed since
 * `gpufeed index --verify`): decoded on the CPU, which judges it. Said
 * once a loader. */
static void unverified(gf_loader *l, const gf_src_sample *smp, uint32_t crc) {
  if (atomic_exchange(&l->unverified_said, true))
    return;
  char name[1100];
  gf_source_name(l->src, smp->index, name, sizeof name);
  gf_log(GF_LOG_WARN,
         "%s: the image's checksum is 0x%08x, its shard's verification sums "
         "give 0x%08x: the shard changed after `gpufeed index --verify`, so "
         "such images are decoded on the CPU (run it again with --force; "
         "said once)",
         name, crc, smp->crc);
}

/* Checks the stored bytes, decodes them into dst (unless they were read
 * there already as raw pixels: in_place) and offers the result to the
 * cache (not a JPEG window: it depends on the epoch) with its label and
 * fields. A folder's file is decoded by what its first bytes say it is
 * (gf_source_file_codec). A packed sample (a tar shard's) is checked and
 * taken apart first: its label goes to *label, its asked fields to fp
 * (NULL: none asked); with image_only, buf is its image alone, taken
 * apart before (*label and fp hold what that found). With gpu (a sample
 * the GPU may take), a JPEG nvJPEG decodes is not decoded here: its bytes
 * go to dst and *gpu gets their length (jpeg_gpu_take). Records context
 * and returns the error on failure. */
int gf_loader__finish_sample(gf_loader *l, uint32_t tid,
                             const gf_src_sample *smp, uint64_t epoch,
                             const uint8_t *buf, uint64_t len, bool in_place,
                             uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                             gf_xform_region *region, uint32_t *gpu,
                             int64_t *label, const field_place *fp,
                             bool image_only) {
  int rc;
  *filtered = 0;
  region->denom = 0;
  if (gpu)
    *gpu = 0;
  bool packed = gf_source_caps(l->src) & GF_SOURCE_PACKED;
  if (packed && !image_only) {
    uint64_t io, il;
    gf_src_span sp[GF_FIELDS_MAX];
    if ((rc = gf_source_unpack(l->src, smp, buf, len, &io, &il, label,
                               fp ? sp : NULL)) < 0)
      return rc;
    if (fp)
      put_fields(l, sp, buf, fp);
    buf += io;
    len = il;
  }
  /* Whether the bytes are the ones a checksum vouches for: only those go
   * to the JPEG engines under gpu_decode auto (jpeg_gpu_plan). */
  bool vouched = false;
  if (smp->has_crc) {
    uint32_t crc = gf_crc32c(0, buf, (size_t)len);
    vouched = crc == smp->crc;
    if (!vouched && smp->has_crc == GF_SRC_CRC_RECORD) {
      char name[1100];
      gf_source_name(l->src, smp->index, name, sizeof name);
      return gf_fail(GF_ECORRUPT, name, smp->index, smp->offset,
                     "checksum 0x%08x, expected 0x%08x: the %llu stored "
                     "bytes are damaged",
                     crc, smp->crc, (unsigned long long)len);
    }
    if (!vouched)
      unverified(l, smp, crc);
  }
  int codec = smp->codec;
  if (smp->sniff &&
      (codec = gf_source_file_codec(l->src, smp, buf, (size_t)len)) < 0)
    return codec;
  /* No checksum (a folder's file): known good by its CRC32C once a CPU
   * decode has read it whole (jpeg_checked.h); until then, decoded here,
   * read to its end. */
  bool nvjpeg = (gf_codec_caps(codec) & GF_CODEC_CAP_NVJPEG) && !in_place;
  bool judge = false;
  uint32_t crc = 0;
  if (nvjpeg && !smp->has_crc && l->jpeg_checked.count) {
    crc = gf_crc32c(0, buf, (size_t)len);
    vouched = gf_jpeg_checked_known(&l->jpeg_checked, smp->index, crc);
    judge = !vouched;
  }
  if (gpu && nvjpeg && (vouched || l->cfg.gpu_decode == GF_GPU_DECODE_ALL) &&
      gf_loader__jpeg_gpu_take(l, smp, buf, len, dst, shape)) {
    *gpu = (uint32_t)len; /* jpeg_gpu_take: below 4 GiB */
    return 0;
  }
  uint64_t t0 = now_ns();
  range_push(l, "decode");
  if (in_place) {
    *shape = smp->stored;
    rc = 0;
  } else if (gpu_decodes_loco(l, smp, codec, len)) {
    uint32_t rl, nb;
    rc = gf_decode_gpu_record(codec, buf, (size_t)len, true, &smp->stored,
                              &rl, &nb);
    if (rc == 0) {
      memcpy(dst, buf, (size_t)len);
      *shape = smp->stored;
      *filtered = 2;
    }
  } else if (gpu_unfilters(l, smp)) {
    rc = gf_decode_filtered(smp->codec, buf, (size_t)len, &smp->stored, dst,
                            (size_t)l->stride);
    *shape = smp->stored;
    *filtered = 1;
  } else {
    /* A JPEG as its window; 1: its header is not one sized here, so it is
     * decoded whole (libjpeg then gives its verdict). */
    rc = (gf_codec_caps(codec) & GF_CODEC_CAP_REGION) && l->jpeg_window
             ? gf_loader__jpeg_decode_window(l, smp, epoch, buf, len, judge,
                                             dst, shape, region)
             : 1;
    if (rc == 1 && (gf_codec_caps(codec) & GF_CODEC_CAP_FILE))
      rc = decode_file(l, smp, codec, buf, len, dst, shape);
    else if (rc == 1)
      rc = gf_decode(codec, buf, (size_t)len, &smp->stored, &l->dopts, dst,
                     (size_t)l->stride, shape);
  }
  range_pop(l);
  if (judge) /* the file read whole: its verdict, by its CRC32C */
    gf_jpeg_checked_record(&l->jpeg_checked, smp->index, crc, rc == 0);
  if (rc == GF_ESHAPE && !(gf_source_caps(l->src) & GF_SOURCE_RECORDS)) {
    /* Create sized the slot from every file's header: a file that no
     * longer fits was rewritten since. */
    char name[1100];
    gf_source_name(l->src, smp->index, name, sizeof name);
    return gf_fail_context(rc, name, smp->index,
                           "the file changed since the loader was created "
                           "(it is now larger than the largest file the "
                           "loader was sized for)");
  }
  if (rc < 0) {
    char name[1100];
    gf_source_name(l->src, smp->index, name, sizeof name);
    return gf_fail_context(rc, name, smp->index,
                           rc == GF_ESHAPE ? "decoding (it does not fit the "
                                             "batch's max_sample_bytes)"
                                           : "decoding");
  }
  /* A loco record the GPU decodes is kept (and cached) as it is. */
  uint64_t out = *filtered == 2 ? len : gf_shape_bytes(shape);
  uint64_t t1 = now_ns();
  span(l, GF_TR_DECODE, tid, t0, t1, smp->index);
  add(&l->st_decode.busy_ns, t1 - t0);
  add(&l->st_decode.samples, 1);
  add(&l->st_decode.bytes, out);
  if (l->cache && !region->denom) {
    cache_head h;
    memset(&h, 0, sizeof h);
    h.shape = *shape;
    h.filtered = *filtered;
    h.has_label = packed;
    h.label = packed ? *label : -1;
    cache_offer(l, smp->index, &h, dst, out, fp);
  }
  return 0;
}

/* Takes sample idx from the cache into dst. Returns true on a hit. With
 * dev (direct mode), a hit in a pinned chunk is not copied: *dev and *host
 * get the device and host addresses of its bytes (else *dev is 0). */
bool gf_loader__from_cache(gf_loader *l, uint32_t tid, uint64_t idx,
                           uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                           uint64_t *dev, const uint8_t **host, int64_t *label,
                           const field_place *fp) {
  if (!l->cache)
    return false;
  const void *data;
  size_t len;
  uint64_t d = 0;
  if (gf_cache_get_dev(l->cache, idx, &data, &len, dev ? &d : NULL) != 1) {
    add(&l->cache_misses, 1);
    return false;
  }
  cache_head h;
  memcpy(&h, data, CACHE_HEAD);
  *shape = h.shape;
  *filtered = (uint8_t)h.filtered;
  if (h.has_label)
    *label = h.label;
  size_t pixels = len - CACHE_HEAD - (size_t)h.tail;
  if (fp)
    fields_from_cache(l, (const uint8_t *)data + CACHE_HEAD + pixels, fp);
  if (d) {
    *dev = d + CACHE_HEAD;
    *host = (const uint8_t *)data + CACHE_HEAD;
    add(&l->cache_hits, 1);
    return true;
  }
  uint64_t t0 = now_ns();
  memcpy(dst, (const uint8_t *)data + CACHE_HEAD, pixels);
  uint64_t t1 = now_ns();
  span(l, GF_TR_CACHE, tid, t0, t1, idx);
  add(&l->st_cache.busy_ns, t1 - t0);
  add(&l->st_cache.samples, 1);
  add(&l->st_cache.bytes, pixels);
  add(&l->cache_hits, 1);
  return true;
}

/* Raw pixels that need no conversion can be read straight into the slot. */
bool gf_loader__raw_in_place(const gf_loader *l, const gf_src_sample *smp) {
  if (!(gf_codec_caps(smp->codec) & GF_CODEC_CAP_PIXELS) || l->direct_objs)
    return false;
  gf_shape out = smp->stored;
  if (l->dopts.channels)
    out.channels = l->dopts.channels;
  if (out.dtype == GF_DTYPE_U16 && !l->dopts.keep_16bit)
    out.dtype = GF_DTYPE_U8;
  return memcmp(&out, &smp->stored, sizeof out) == 0 &&
         smp->length <= l->stride;
}

/* Fails sample idx whose stored bytes (len) exceed the read buffer. A
 * folder's buffer holds its largest file within the limits as create
 * found it: a larger file is beyond the limits, or changed since. */
int gf_loader__too_large(const gf_loader *l, uint64_t idx, uint64_t len) {
  char name[1100];
  gf_source_name(l->src, idx, name, sizeof name);
  if (gf_source_caps(l->src) & GF_SOURCE_RECORDS)
    return gf_fail(GF_ELIMIT, name, idx, GF_NO_INDEX,
                   "stored sample of %llu bytes exceeds the read buffer of "
                   "%llu bytes (raise max_sample_bytes)",
                   (unsigned long long)len,
                   (unsigned long long)l->stored_cap);
  uint64_t max = gf_limits_resolve(&l->dopts.limits).max_bytes;
  if (len > max)
    return gf_fail(GF_ELIMIT, name, idx, GF_NO_INDEX,
                   "file of %llu bytes exceeds the limit of %llu bytes",
                   (unsigned long long)len, (unsigned long long)max);
  return gf_fail(GF_ESHAPE, name, idx, GF_NO_INDEX,
                 "the file changed since the loader was created: it is now "
                 "%llu bytes, beyond the read buffer of %llu bytes sized "
                 "from the largest file then",
                 (unsigned long long)len, (unsigned long long)l->stored_cap);
}

/* Loads one sample on the calling thread with plain preads (the consumer's
 * repair path, rare). */
int gf_loader__load_sync(gf_loader *l, uint64_t epoch, uint64_t idx,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, int64_t *label,
                         const field_place *fields) {
  gf_src_sample smp;
  region->denom = 0;
  int rc = gf_source_sample(l->src, idx, &smp);
  if (rc < 0)
    return rc;
  *label = smp.label;
  if (gf_loader__from_cache(l, GF_TRACE_TID_CONSUMER, idx, dst, shape, filtered,
                            NULL, NULL, label, fields))
    return 0;
  gf_object *obj = smp.obj, *own = NULL;
  if (!obj) {
    if ((rc = gf_source_open_sample(l->src, idx, &own)) < 0)
      return rc;
    obj = own;
    smp.length = own->size;
  }
  char name[1100];
  gf_source_name(l->src, idx, name, sizeof name);
  if (smp.length > l->stored_cap) {
    rc = gf_loader__too_large(l, idx, smp.length);
  } else {
    uint8_t *buf = malloc(smp.length ? smp.length : 1);
    if (!buf) {
      rc = -ENOMEM;
    } else {
      rc = gf_object_read(obj, buf, smp.offset, smp.length);
      if (rc < 0) {
        char why[512];
        gf_strlcpy(why, gf_last_error()->message, sizeof why);
        rc = gf_fail(rc, name, idx, gf_last_error()->offset,
                     "reading %llu bytes: %s", (unsigned long long)smp.length,
                     why);
      }
      if (rc == 0) {
        add(&l->st_read.samples, 1);
        add(&l->st_read.bytes, smp.length);
        rc = gf_loader__finish_sample(
            l, GF_TRACE_TID_CONSUMER, &smp, epoch, buf, smp.length, false, dst,
            shape, filtered, region, NULL, label, fields, false);
      }
      free(buf);
    }
  }
  gf_object_close(own);
  return rc;
}

/* ---- a position failed; a file the GPU refused, decoded again ---------- */

void gf_loader__record_failure(gf_loader *l, slot *s, uint32_t j, int rc,
                               uint64_t idx) {
  s->status[j] = rc;
  const gf_error_info *e = gf_last_error();
  pthread_mutex_lock(&l->mu);
  if (s->err_pos == UINT32_MAX || j < s->err_pos) {
    s->err = *e;
    if (s->err.code != rc) {
      s->err.code = rc;
      snprintf(s->err.message, sizeof s->err.message, "sample %llu: %s",
               (unsigned long long)idx, gf_strerror(rc));
    }
    s->err_pos = j;
  }
  pthread_mutex_unlock(&l->mu);
}

/* Whether position j of a batch may go to the GPU: the share's positions
 * (gpu_decode_percent, or the share the consumer's rate chose under auto),
 * spread evenly (floor((j + 1) p / 100) > floor(j p / 100)). */
bool gf_loader__gpu_position(const gf_loader *l, uint32_t j) {
  uint64_t p = atomic_load_explicit(&l->gpu_jpeg_pct, memory_order_relaxed);
  return l->gpu_jpeg && (p >= 100 || ((uint64_t)j + 1) * p / 100 >
                                         (uint64_t)j * p / 100);
}

int gf_loader__decode_again(gf_loader *l, slot *s, uint32_t j, uint32_t tid) {
  uint64_t len = s->gpu_len[j], idx = s->indices[j];
  uint8_t *dst = s->data + (uint64_t)j * l->stride;
  s->gpu_len[j] = 0;
  /* The file's bytes are where its pixels go: decoded from a copy. Rare
   * (a file nvJPEG refused), so a malloc. */
  uint8_t *copy = malloc(len ? len : 1);
  gf_src_sample smp;
  int rc = copy ? gf_source_sample(l->src, idx, &smp)
                : gf_fail(-ENOMEM, NULL, idx, GF_NO_INDEX,
                          "out of memory for a JPEG file of %llu bytes "
                          "the GPU refused",
                          (unsigned long long)len);
  if (rc == 0) {
    memcpy(copy, dst, len);
    smp.length = len;
    /* Its label and fields are in the slot already; the bytes are its
     * image alone. */
    field_place fp;
    rc = gf_loader__finish_sample(l, tid, &smp, s->epoch, copy, len, false, dst,
                                  &s->shapes[j], &s->filtered[j],
                                  &s->regions[j], NULL, &s->labels[j],
                                  slot_fields(s, j, &fp), true);
  }
  free(copy);
  if (rc < 0)
    gf_loader__record_failure(l, s, j, rc, idx);
  else
    s->status[j] = 0;
  return rc;
}
