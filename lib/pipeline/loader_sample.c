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
static int finish_sample(gf_loader *l, uint32_t tid, const gf_src_sample *smp,
                         uint64_t epoch, const uint8_t *buf, uint64_t len,
                         bool in_place, uint8_t *dst, gf_shape *shape,
                         uint8_t *filtered, gf_xform_region *region,
                         uint32_t *gpu, int64_t *label, const field_place *fp,
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
  if (smp->has_crc) {
    uint32_t crc = gf_crc32c(0, buf, (size_t)len);
    if (crc != smp->crc) {
      char name[1100];
      gf_source_name(l->src, smp->index, name, sizeof name);
      return gf_fail(GF_ECORRUPT, name, smp->index, smp->offset,
                     "checksum 0x%08x, expected 0x%08x: the %llu stored "
                     "bytes are damaged",
                     crc, smp->crc, (unsigned long long)len);
    }
  }
  int codec = smp->codec;
  if (smp->sniff &&
      (codec = gf_source_file_codec(l->src, smp, buf, (size_t)len)) < 0)
    return codec;
  if (gpu && (gf_codec_caps(codec) & GF_CODEC_CAP_NVJPEG) && !in_place &&
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
             ? gf_loader__jpeg_decode_window(l, smp, epoch, buf, len, dst,
                                             shape, region)
             : 1;
    if (rc == 1 && (gf_codec_caps(codec) & GF_CODEC_CAP_FILE))
      rc = decode_file(l, smp, codec, buf, len, dst, shape);
    else if (rc == 1)
      rc = gf_decode(codec, buf, (size_t)len, &smp->stored, &l->dopts, dst,
                     (size_t)l->stride, shape);
  }
  range_pop(l);
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
static bool from_cache(gf_loader *l, uint32_t tid, uint64_t idx, uint8_t *dst,
                       gf_shape *shape, uint8_t *filtered, uint64_t *dev,
                       const uint8_t **host, int64_t *label,
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
static bool raw_in_place(const gf_loader *l, const gf_src_sample *smp) {
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
static int too_large(const gf_loader *l, uint64_t idx, uint64_t len) {
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
  if (from_cache(l, GF_TRACE_TID_CONSUMER, idx, dst, shape, filtered, NULL,
                 NULL, label, fields))
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
    rc = too_large(l, idx, smp.length);
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
        rc = finish_sample(l, GF_TRACE_TID_CONSUMER, &smp, epoch, buf,
                           smp.length, false, dst, shape, filtered, region,
                           NULL, label, fields, false);
      }
      free(buf);
    }
  }
  gf_object_close(own);
  return rc;
}

/* ---- workers ------------------------------------------------------------ */

typedef struct pending {
  uint32_t j;       /* position in the slot */
  gf_src_sample smp;
  gf_object *own;   /* a sample that is an object of its own, to close */
  uint8_t *buf;     /* where the read lands */
  uint64_t skew;    /* direct: sample start within buf */
  bool in_place;
  bool returned; /* the reader gave back its read */
} pending;

static void record_failure(gf_loader *l, slot *s, uint32_t j, int rc,
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

/* Whether position j of a batch may go to the GPU: gpu_decode_percent of
 * the positions, spread evenly (floor((j + 1) p / 100) > floor(j p / 100)),
 * the same ones every batch whatever the timing. */
static bool gpu_position(const gf_loader *l, uint32_t j) {
  uint64_t p = l->gpu_jpeg_pct;
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
    rc = finish_sample(l, tid, &smp, s->epoch, copy, len, false, dst,
                       &s->shapes[j], &s->filtered[j], &s->regions[j], NULL,
                       &s->labels[j], slot_fields(s, j, &fp), true);
  }
  free(copy);
  if (rc < 0)
    record_failure(l, s, j, rc, idx);
  else
    s->status[j] = 0;
  return rc;
}

/* Fails position p->j of s as lost with the worker's reader (SAMPLE_LOST),
 * `why` (the reader's error) saying how, and closes its file. */
static void lose(gf_loader *l, slot *s, pending *p, const gf_error_info *why,
                 const char *how) {
  gf_object_close(p->own);
  p->own = NULL;
  char name[1100];
  gf_source_name(l->src, p->smp.index, name, sizeof name);
  gf_fail(why->code, name, p->smp.index, GF_NO_INDEX,
          "reading %llu bytes at offset %llu: %s (%s)",
          (unsigned long long)p->smp.length, (unsigned long long)p->smp.offset,
          how, why->message);
  record_failure(l, s, p->j, why->code, p->smp.index);
  s->status[p->j] = SAMPLE_LOST;
}

/* The worker's reader failed as a whole (its wait or its submit, with
 * reads accepted: a ring error, `rc`): the reads it has not given back
 * may still be in the kernel or in a pread call, writing into the read
 * buffer or the slot and using their fds, and it must not be used again
 * (io.h). Destroying it waits for them; only then are their files closed
 * (a number closed earlier could be reused by another open while a read
 * still names it) and their positions failed. The worker makes a fresh
 * reader before its next chunk (worker_main). */
static void reader_failed(worker *w, slot *s, pending *pend, uint32_t nreq,
                          int rc) {
  gf_loader *l = w->l;
  gf_error_info why = *gf_last_error();
  if (why.code != rc) {
    why.code = rc;
    snprintf(why.message, sizeof why.message, "%s", gf_strerror(rc));
  }
  gf_log(GF_LOG_WARN,
         "worker %u: its reader failed as a whole (%s): the reads it had "
         "not given back (%u) fail, and a fresh reader replaces it",
         (unsigned)(w - l->workers), why.message,
         gf_reader_inflight(w->reader));
  gf_reader_destroy(w->reader);
  w->reader = NULL;
  for (uint32_t i = 0; i < nreq; i++)
    if (!pend[i].returned)
      lose(l, s, &pend[i], &why,
           "lost with the reader, which failed as a whole");
}

/* A position the fetch stage did not read (the cache held its sample when
 * it was planned, and no longer gives it): read here, with one request
 * through its storage. Returns 0 with *buf (malloc'd, the caller frees
 * it) or the error with context. */
static int read_unfetched(gf_loader *l, const gf_src_sample *smp, uint8_t **buf,
                          uint64_t *got) {
  *buf = NULL;
  if (smp->length > l->stored_cap)
    return too_large(l, smp->index, smp->length);
  gf_object *own = NULL;
  uint64_t len = smp->length;
  if (!smp->obj) {
    /* A file of its own (a remote folder's), opened here. */
    int rc = gf_source_open_sample(l->src, smp->index, &own);
    if (rc < 0)
      return rc;
    len = own->size;
    if (len > l->stored_cap) {
      gf_object_close(own);
      return too_large(l, smp->index, len);
    }
  }
  uint8_t *b = malloc(len ? len : 1);
  if (!b) {
    gf_object_close(own);
    return gf_fail(-ENOMEM, NULL, smp->index, GF_NO_INDEX, "out of memory");
  }
  int rc = own ? gf_object_read(own, b, 0, len)
               : gf_object_read(smp->obj, b, smp->offset, len);
  gf_object_close(own);
  if (rc < 0) {
    free(b);
    return rc;
  }
  *buf = b;
  *got = len;
  return 0;
}

/* Processes positions [j0, j0 + n) of slot s of a remote source: each
 * sample's bytes come from the fetch stage, which read them ahead (it
 * frees them once released, taken or not). */
static void run_chunk_fetched(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    uint64_t idx = s->indices[j], seq = s->fseq + j;
    uint8_t *dst = s->data + (uint64_t)j * l->stride;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break; /* a restart follows and drops what the stage holds */
    gf_src_sample smp;
    int rc = gf_source_sample(l->src, idx, &smp);
    if (rc < 0) {
      gf_fetch_release(l->fetch, seq);
      gf_fail_context(rc, NULL, idx, NULL);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    s->labels[j] = smp.label;
    s->regions[j].denom = 0;
    if (s->gpu_len)
      s->gpu_len[j] = 0;
    if (s->dsrc_dev)
      s->dsrc_dev[j] = 0;
    field_place fp;
    const field_place *fields = slot_fields(s, j, &fp);
    if (from_cache(l, w->tid, idx, dst, &s->shapes[j], &s->filtered[j],
                   s->dsrc_dev ? &s->dsrc_dev[j] : NULL,
                   s->dsrc_dev ? &s->dsrc_host[j] : NULL, &s->labels[j],
                   fields)) {
      gf_fetch_release(l->fetch, seq);
      s->status[j] = 0;
      continue;
    }
    const uint8_t *data;
    uint64_t len;
    uint8_t *own = NULL;
    uint64_t t0 = now_ns();
    rc = gf_fetch_take(l->fetch, seq, idx, &data, &len);
    if (rc == 0 && (rc = read_unfetched(l, &smp, &own, &len)) == 0)
      data = own;
    uint64_t t1 = now_ns();
    add(&l->st_read.busy_ns, t1 - t0);
    if (rc >= 0 && len > l->stored_cap)
      rc = too_large(l, idx, len);
    if (rc < 0) {
      free(own);
      gf_fetch_release(l->fetch, seq);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    span(l, GF_TR_READ, w->tid, t0, t1, idx);
    add(&l->st_read.samples, 1);
    add(&l->st_read.bytes, len);
    rc = finish_sample(l, w->tid, &smp, s->epoch, data, len, false, dst,
                       &s->shapes[j], &s->filtered[j], &s->regions[j],
                       gpu_position(l, j) ? &s->gpu_len[j] : NULL,
                       &s->labels[j], fields, false);
    free(own);
    gf_fetch_release(l->fetch, seq);
    if (rc < 0)
      record_failure(l, s, j, rc, idx);
    else
      s->status[j] = 0;
  }
}

/* ---- a streaming source ------------------------------------------------ */

/* Takes position pos of epoch from the streaming stage into buf (the
 * stored cap) and decodes it into dst. Returns 1 with *id and *label, 0
 * past the epoch's end, or the error (context added). */
static int take_streamed(gf_loader *l, uint32_t tid, uint64_t epoch,
                         uint64_t pos, uint8_t *buf, uint8_t *dst,
                         gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, uint32_t *gpu, int64_t *label,
                         const field_place *fp, uint64_t *id) {
  gf_stream_sample m;
  region->denom = 0;
  if (gpu)
    *gpu = 0;
  *id = GF_NO_INDEX;
  uint64_t t0 = now_ns();
  gf_stream_fields_out fo = {.len = fp ? fp->len : NULL,
                             .data = fp ? fp->data : NULL};
  int rc = gf_stream_take(l->stream, epoch, pos, buf, l->stored_cap,
                          fp ? &fo : NULL, &m);
  uint64_t t1 = now_ns();
  add(&l->st_read.busy_ns, t1 - t0);
  if (rc <= 0)
    return rc;
  *id = m.id;
  *label = m.label;
  span(l, GF_TR_READ, tid, t0, t1, m.id);
  add(&l->st_read.samples, 1);
  add(&l->st_read.bytes, m.len);
  /* The image alone (the stage took the shard apart): no unpack. */
  gf_src_sample smp;
  if ((rc = gf_source_sample(l->src, m.id, &smp)) < 0)
    return rc;
  smp.codec = m.codec;
  smp.length = m.len;
  rc = finish_sample(l, tid, &smp, epoch, buf, m.len, false, dst, shape,
                     filtered, region, gpu, label, fp, true);
  return rc < 0 ? rc : 1;
}

/* Processes positions [j0, j0 + n) of slot s of a streaming source. */
static void run_chunk_streamed(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break; /* a restart follows and drops what the stage holds */
    if (s->dsrc_dev)
      s->dsrc_dev[j] = 0;
    s->labels[j] = -1;
    uint64_t id;
    field_place fp;
    int rc = take_streamed(l, w->tid, s->epoch, s->first_pos + j, w->rbuf,
                           s->data + (uint64_t)j * l->stride, &s->shapes[j],
                           &s->filtered[j], &s->regions[j],
                           gpu_position(l, j) ? &s->gpu_len[j] : NULL,
                           &s->labels[j], slot_fields(s, j, &fp), &id);
    s->indices[j] = id;
    if (rc < 0)
      record_failure(l, s, j, rc, id);
    else
      s->status[j] = rc == 0 ? SAMPLE_PAST_END : 0;
  }
}

int gf_loader__take_sync(gf_loader *l, uint64_t epoch, uint64_t pos,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, int64_t *label,
                         const field_place *fp, uint64_t *id) {
  uint8_t *buf = malloc(l->stored_cap ? l->stored_cap : 1);
  if (!buf)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a sample of %llu bytes",
                   (unsigned long long)l->stored_cap);
  int rc = take_streamed(l, GF_TRACE_TID_CONSUMER, epoch, pos, buf, dst, shape,
                         filtered, region, NULL, label, fp, id);
  free(buf);
  return rc;
}

/* Processes positions [j0, j0 + n) of slot s. */
void gf_loader__run_chunk(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  if (l->fetch) {
    run_chunk_fetched(w, s, j0, n);
    return;
  }
  if (l->stream) {
    run_chunk_streamed(w, s, j0, n);
    return;
  }
  pending pend[64];
  gf_read_req reqs[64];
  uint32_t nreq = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    uint64_t idx = s->indices[j];
    uint8_t *dst = s->data + (uint64_t)j * l->stride;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break;
    pending *p = &pend[nreq];
    int rc = gf_source_sample(l->src, idx, &p->smp);
    if (rc < 0) {
      gf_fail_context(rc, NULL, idx, NULL);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    s->labels[j] = p->smp.label;
    s->regions[j].denom = 0;
    if (s->gpu_len)
      s->gpu_len[j] = 0;
    if (s->dsrc_dev)
      s->dsrc_dev[j] = 0;
    field_place fp;
    if (from_cache(l, w->tid, idx, dst, &s->shapes[j], &s->filtered[j],
                   s->dsrc_dev ? &s->dsrc_dev[j] : NULL,
                   s->dsrc_dev ? &s->dsrc_host[j] : NULL, &s->labels[j],
                   slot_fields(s, j, &fp))) {
      s->status[j] = 0;
      continue;
    }
    p->j = j;
    p->own = NULL;
    p->skew = 0;
    p->returned = false;
    const gf_object *obj = p->smp.obj;
    if (!obj) {
      rc = gf_source_open_sample(l->src, idx, &p->own);
      if (rc < 0) {
        record_failure(l, s, j, rc, idx);
        continue;
      }
      obj = p->own;
      p->smp.length = p->own->size;
    }
    uint64_t off = p->smp.offset, len = p->smp.length;
    p->in_place = raw_in_place(l, &p->smp);
    p->buf = p->in_place ? dst : w->rbuf + (uint64_t)nreq * l->stored_cap;
    uint32_t flags = 0;
    if (l->direct_objs && !p->own) {
      obj = l->direct_objs[p->smp.object];
      uint64_t a = l->direct_align;
      uint64_t start = off & ~(a - 1);
      p->skew = off - start;
      len = (off + len + a - 1) / a * a - start;
      off = start;
      flags = GF_READ_EOF_OK;
    }
    if (len > l->stored_cap && !p->in_place) {
      rc = too_large(l, idx, p->smp.length);
      gf_object_close(p->own);
      record_failure(l, s, j, rc, idx);
      continue;
    }
    reqs[nreq] = (gf_read_req){.obj = obj,
                               .flags = flags,
                               .offset = off,
                               .length = len,
                               .buf = p->buf,
                               .user_data = nreq};
    nreq++;
  }
  if (nreq == 0)
    return;
  if (GF_UNLIKELY(!w->reader)) {
    /* Its reader failed and no fresh one could be made (worker_main):
     * these samples are not bad, there is nothing to read them with. */
    for (uint32_t i = 0; i < nreq; i++)
      lose(l, s, &pend[i], &w->reader_err,
           "no reader to read with: its worker's reader failed and a fresh "
           "one could not be made");
    return;
  }
  uint64_t t0 = now_ns(), t_sub = t0;
  range_push(l, "read");
  int rc = gf_reader_submit(w->reader, reqs, nreq);
  if (rc < 0 && gf_reader_inflight(w->reader)) {
    /* Accepted, then the ring's submit failed: a ring error. */
    range_pop(l);
    reader_failed(w, s, pend, nreq, rc);
    return;
  }
  if (rc < 0) {
    range_pop(l);
    for (uint32_t i = 0; i < nreq; i++) {
      gf_object_close(pend[i].own);
      gf_fail_context(rc, NULL, pend[i].smp.index, "submitting reads");
      record_failure(l, s, pend[i].j, rc, pend[i].smp.index);
    }
    return;
  }
  uint32_t left = nreq;
  gf_read_done done[64];
  while (left) {
    int got = gf_reader_wait(w->reader, done, left, 1);
    if (got <= 0) {
      /* A ring error (or a reader that lost count of its reads, which is
       * no better): the reads still out cannot be trusted. */
      if (got == 0)
        got = gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                      "gf_reader_wait gave back none of %u reads", left);
      range_pop(l);
      reader_failed(w, s, pend, nreq, got);
      return;
    }
    uint64_t t_got = now_ns();
    add(&l->st_read.busy_ns, t_got - t0);
    if ((uint32_t)got == left) {
      /* The chunk's last reads are in: its read span ends here, before
       * the decodes that follow, so spans nest on the worker's track. */
      range_pop(l);
      span(l, GF_TR_READ, w->tid, t_sub, t_got, pend[0].smp.index);
    }
    for (int g = 0; g < got; g++) {
      pending *p = &pend[done[g].user_data];
      p->returned = true;
      left--;
      int64_t res = done[g].result;
      gf_object_close(p->own);
      p->own = NULL;
      uint8_t *dst = s->data + (uint64_t)p->j * l->stride;
      if (res >= 0 && (uint64_t)res < p->skew + p->smp.length)
        res = GF_ETRUNCATED;
      if (res < 0) {
        char name[1100];
        gf_source_name(l->src, p->smp.index, name, sizeof name);
        gf_fail((int)res, name, p->smp.index, done[g].stop_offset,
                "reading %llu bytes at offset %llu: %s",
                (unsigned long long)p->smp.length,
                (unsigned long long)p->smp.offset,
                done[g].why && done[g].why[0] ? done[g].why
                                             : gf_strerror((int)res));
        record_failure(l, s, p->j, (int)res, p->smp.index);
        continue;
      }
      add(&l->st_read.samples, 1);
      add(&l->st_read.bytes, p->smp.length);
      field_place fp;
      rc = finish_sample(l, w->tid, &p->smp, s->epoch, p->buf + p->skew,
                         p->smp.length, p->in_place, dst, &s->shapes[p->j],
                         &s->filtered[p->j], &s->regions[p->j],
                         gpu_position(l, p->j) ? &s->gpu_len[p->j] : NULL,
                         &s->labels[p->j], slot_fields(s, p->j, &fp), false);
      if (rc < 0)
        record_failure(l, s, p->j, rc, p->smp.index);
      else
        s->status[p->j] = 0;
    }
    t0 = now_ns();
  }
}
