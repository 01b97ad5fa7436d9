/* The largest sample of a source (source_shapes.h): a dataset's from its
 * index, an image folder's from every file's header (PNG or JPEG), read in
 * parallel. */
#include "pipeline/source_shapes.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

int gf_png_header_shape(const uint8_t *p, size_t len,
                        const gf_decode_opts *opts, gf_shape *out,
                        gf_shape *native, int *has_trns, uint64_t *next) {
  static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  *has_trns = -1;
  *next = 33;
  if (len < 33 || memcmp(p, sig, 8) != 0 || be32(p + 8) != 13 ||
      memcmp(p + 12, "IHDR", 4) != 0)
    return GF_EDECODE;
  uint32_t w = be32(p + 16), h = be32(p + 20);
  uint8_t depth = p[24], ctype = p[25];
  if (!w || !h || w > 0x7fffffffu || h > 0x7fffffffu)
    return GF_EDECODE;
  bool ok;
  uint32_t ch;
  switch (ctype) {
  case 0:
    ok = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
    ch = 1;
    break;
  case 2:
    ok = depth == 8 || depth == 16;
    ch = 3;
    break;
  case 3:
    ok = depth == 1 || depth == 2 || depth == 4 || depth == 8;
    ch = 3;
    break;
  case 4:
    ok = depth == 8 || depth == 16;
    ch = 2;
    break;
  case 6:
    ok = depth == 8 || depth == 16;
    ch = 4;
    break;
  default:
    ok = false;
    ch = 0;
    break;
  }
  if (!ok)
    return GF_EDECODE;
  /* The chunks before the image data: a tRNS adds alpha (libpng's
   * png_set_expand), to gray, RGB and palette images. */
  uint64_t k = 33;
  while (k + 8 <= len) {
    const uint8_t *t = p + k + 4;
    if (!memcmp(t, "IDAT", 4)) {
      *has_trns = 0;
      break;
    }
    if (!memcmp(t, "tRNS", 4)) {
      *has_trns = 1;
      break;
    }
    k += 12 + (uint64_t)be32(p + k);
  }
  *next = k;
  if (*has_trns == 1 && (ctype == 0 || ctype == 2 || ctype == 3))
    ch++;
  native->height = h;
  native->width = w;
  native->channels = ch;
  native->dtype = depth == 16 && opts->keep_16bit ? GF_DTYPE_U16 : GF_DTYPE_U8;
  *out = *native;
  if (opts->channels)
    out->channels = opts->channels;
  return 0;
}

int gf_jpeg_header_scan(const uint8_t *p, size_t len, uint64_t base,
                        uint64_t *pos, gf_jpeg_frame *out) {
  uint64_t at = *pos;
  for (;;) {
    if (at < base)
      return GF_EDECODE;
    uint64_t i = at - base; /* the marker's place in p */
    /* Fill bytes (FF) may precede a marker's code. */
    while (i + 1 < len && p[i] == 0xFF && p[i + 1] == 0xFF)
      i++, at++;
    if (i + 2 > len) {
      *pos = at;
      return 1;
    }
    if (p[i] != 0xFF)
      return GF_EDECODE; /* not a marker where one must be */
    uint8_t m = p[i + 1];
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
      at += 2; /* TEM, RSTn: no length */
      continue;
    }
    if (m == 0xD8 || m == 0xD9 || m == 0xDA || m == 0x00)
      return GF_EDECODE; /* SOI again, EOI or a scan before the frame */
    bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    size_t need = sof ? 10 : 4;
    if (i + need > len) {
      *pos = at;
      return 1;
    }
    uint32_t seg = (uint32_t)p[i + 2] << 8 | p[i + 3];
    if (sof) {
      if (seg < 8)
        return GF_EDECODE;
      out->marker = m;
      out->precision = p[i + 4];
      out->height = (uint32_t)p[i + 5] << 8 | p[i + 6];
      out->width = (uint32_t)p[i + 7] << 8 | p[i + 8];
      out->components = p[i + 9];
      *pos = at;
      return 0;
    }
    /* A length below 2 (the length field's own bytes) is read as 2, as
     * libjpeg does (fuzz_jpeg_header's regression): the next marker
     * follows the length field. */
    at += 2 + (uint64_t)(seg < 2 ? 2 : seg);
  }
}

int gf_jpeg_frame_shape(const gf_jpeg_frame *f, const gf_decode_opts *opts,
                        gf_shape *out, gf_shape *native) {
  /* What libjpeg-turbo decodes here (decode.h): 8-bit baseline, extended
   * and progressive frames, Huffman or arithmetic, gray or 3 components.
   * Lossless and hierarchical frames, other precisions and component
   * counts, and a height left to a DNL marker (0) are not sized here. */
  bool kind = f->marker == 0xC0 || f->marker == 0xC1 || f->marker == 0xC2 ||
              f->marker == 0xC9 || f->marker == 0xCA;
  if (!kind || f->precision != 8 || !f->height || !f->width ||
      (f->components != 1 && f->components != 3))
    return GF_EUNSUPPORTED;
  native->height = f->height;
  native->width = f->width;
  native->channels = f->components;
  native->dtype = GF_DTYPE_U8;
  *out = *native;
  if (opts->channels)
    out->channels = opts->channels;
  return 0;
}

/* ---- a folder, in parallel -------------------------------------------- */

#define SCAN_BLOCK 512u
#define SCAN_HEAD 4096u
#define SCAN_MAX_CHUNKS 4096
#define SCAN_MAX_SEGMENTS 4096 /* JPEG segments read past the first 4 KiB */

typedef struct scan_part {
  uint64_t max_decoded, max_index, max_stored, max_native, counted, uncounted;
  uint64_t jpeg;      /* of the counted, JPEG files */
  uint64_t first_bad; /* the first file that did not count, or GF_NO_INDEX */
  uint32_t max_channels;
} scan_part;

typedef struct scan_job {
  const gf_source *src;
  const gf_decode_opts *opts;
  gf_limits lim;
  uint64_t count;
  _Atomic uint64_t next;
} scan_job;

typedef struct scan_thread {
  scan_job *job;
  scan_part part;
  pthread_t thread;
} scan_thread;

/* A sample's file: an object of its own, or its image's bytes inside an
 * object (a packed sample's, at base). */
typedef struct view {
  gf_object *o;
  gf_object *own; /* o, when opened for the view */
  uint64_t base, size;
} view;

static int view_open(const gf_source *src, uint64_t idx,
                     const gf_src_sample *smp, view *v) {
  *v = (view){0};
  if (smp->obj && (gf_source_caps(src) & GF_SOURCE_PACKED)) {
    v->o = smp->obj;
    v->base = smp->offset + smp->inner_offset;
    v->size = smp->inner_length;
    return 0;
  }
  int rc = gf_source_open_sample(src, idx, &v->own);
  if (rc < 0)
    return rc;
  v->o = v->own;
  v->size = v->own->size;
  return 0;
}

static int64_t view_read(const view *v, void *buf, uint64_t off, uint64_t len) {
  if (off >= v->size)
    return 0;
  if (len > v->size - off)
    len = v->size - off;
  return gf_object_read_upto(v->o, buf, v->base + off, len);
}

/* Whether a tRNS chunk comes before the image data, by the chunk headers
 * from offset `at` on; 1 (alpha, the larger) when it cannot be told. */
static int trns_after(const view *o, uint64_t at, uint64_t size) {
  for (int i = 0; i < SCAN_MAX_CHUNKS && at + 8 <= size; i++) {
    uint8_t hd[8];
    if (view_read(o, hd, at, 8) != 8)
      return 1;
    if (!memcmp(hd + 4, "IDAT", 4))
      return 0;
    if (!memcmp(hd + 4, "tRNS", 4))
      return 1;
    at += 12 + (uint64_t)be32(hd);
  }
  return 1;
}

/* A JPEG's shape from its frame header: in the first `got` bytes (head),
 * else further on in the file (after a large EXIF APP1, say), a few bytes
 * a segment, at most SCAN_MAX_SEGMENTS reads. */
static int jpeg_shape(const view *o, uint8_t *head, size_t got, uint64_t size,
                      const gf_decode_opts *opts, gf_shape *out,
                      gf_shape *native) {
  uint64_t pos = 2, base = 0; /* after the SOI */
  size_t have = got;
  gf_jpeg_frame f;
  for (int reads = 0;; reads++) {
    int rc = gf_jpeg_header_scan(head, have, base, &pos, &f);
    if (rc == 0)
      return gf_jpeg_frame_shape(&f, opts, out, native);
    if (rc < 0 || reads >= SCAN_MAX_SEGMENTS || pos >= size)
      return GF_EDECODE;
    /* Only the marker and the frame header's first bytes are needed. */
    int64_t n = view_read(o, head, pos, 16);
    if (n <= 0)
      return GF_EDECODE;
    base = pos;
    have = (size_t)n;
  }
}

/* One file: counts it in *pt when its header is a PNG or a JPEG within the
 * limits. */
static void scan_file(scan_job *j, uint64_t idx, scan_part *pt) {
  view vw, *o = &vw;
  gf_src_sample smp;
  if (gf_source_sample(j->src, idx, &smp) < 0 ||
      view_open(j->src, idx, &smp, o) < 0) {
    pt->uncounted++;
    if (idx < pt->first_bad)
      pt->first_bad = idx;
    return;
  }
  uint64_t size = o->size;
  uint8_t head[SCAN_HEAD];
  int64_t got = view_read(o, head, 0, sizeof head);
  gf_shape out, native;
  int rc = got < 0 ? GF_EDECODE
                   : gf_source_file_codec(j->src, &smp, head, (size_t)got);
  bool jpeg = rc == GF_CODEC_JPEG;
  if (rc == GF_CODEC_JPEG) {
    rc = jpeg_shape(o, head, (size_t)got, size, j->opts, &out, &native);
  } else if (rc == GF_CODEC_PNG) {
    int trns;
    uint64_t next;
    rc = gf_png_header_shape(head, (size_t)got, j->opts, &out, &native, &trns,
                             &next);
    if (rc == 0 && trns < 0 && trns_after(o, next, size) == 1 &&
        (native.channels == 1 || native.channels == 3) && head[25] != 4 &&
        head[25] != 6) {
      native.channels++;
      if (!j->opts->channels)
        out.channels++;
    }
  }
  gf_object_close(o->own);
  if (rc < 0 || size > j->lim.max_bytes ||
      gf_limits_check(&j->lim, &out, NULL, GF_NO_INDEX) < 0) {
    pt->uncounted++;
    if (idx < pt->first_bad)
      pt->first_bad = idx;
    return;
  }
  uint64_t d = gf_shape_bytes(&out), n = gf_shape_bytes(&native);
  pt->counted++;
  pt->jpeg += jpeg;
  /* Ties keep the first file: the same name whatever the thread count. */
  if (d > pt->max_decoded || (d == pt->max_decoded && idx < pt->max_index)) {
    pt->max_decoded = d;
    pt->max_index = idx;
  }
  /* A packed sample is read as its whole extent (its label and asked
   * fields with it): that is what a read buffer holds. */
  uint64_t stored = o->own ? size : smp.length;
  if (stored < size)
    stored = size;
  if (stored > pt->max_stored)
    pt->max_stored = stored;
  if (n > pt->max_native)
    pt->max_native = n;
  if (out.channels > pt->max_channels)
    pt->max_channels = out.channels;
}

static void *scan_main(void *arg) {
  scan_thread *t = arg;
  scan_job *j = t->job;
  for (;;) {
    uint64_t b = atomic_fetch_add(&j->next, SCAN_BLOCK);
    if (b >= j->count)
      break;
    uint64_t e = b + SCAN_BLOCK < j->count ? b + SCAN_BLOCK : j->count;
    for (uint64_t i = b; i < e; i++)
      scan_file(j, i, &t->part);
  }
  return NULL;
}

static void merge(scan_part *a, const scan_part *b) {
  if (b->max_decoded > a->max_decoded ||
      (b->max_decoded == a->max_decoded && b->max_index < a->max_index)) {
    a->max_decoded = b->max_decoded;
    a->max_index = b->max_index;
  }
  if (b->max_stored > a->max_stored)
    a->max_stored = b->max_stored;
  if (b->max_native > a->max_native)
    a->max_native = b->max_native;
  if (b->max_channels > a->max_channels)
    a->max_channels = b->max_channels;
  a->counted += b->counted;
  a->uncounted += b->uncounted;
  a->jpeg += b->jpeg;
  if (b->first_bad < a->first_bad)
    a->first_bad = b->first_bad;
}

/* The file idx whose header did not count, read whole and decoded as far
 * as its header by its codec (libpng, libjpeg), for the error that names it
 * (the fail policy). Returns that error, or 0 with *shape when the codec
 * reads the header after all. */
static int recheck(const gf_source *src, const gf_decode_opts *opts,
                   uint64_t idx, gf_shape *shape, uint64_t *size) {
  view vw, *o = &vw;
  gf_src_sample smp;
  int rc = gf_source_sample(src, idx, &smp);
  if (rc < 0 || (rc = view_open(src, idx, &smp, o)) < 0)
    return rc;
  /* A packed sample: its whole extent, checked and taken apart as a
   * loader does (an image header that did not count may be bytes the
   * source's index placed wrongly). */
  bool packed = !o->own;
  if (packed) {
    o->base = smp.offset;
    o->size = smp.length;
  }
  *size = o->size;
  gf_limits lim = gf_limits_resolve(&opts->limits);
  char name[4200];
  gf_source_name(src, idx, name, sizeof name);
  if (*size > lim.max_bytes) {
    gf_object_close(o->own);
    return gf_fail(GF_ELIMIT, name, idx, GF_NO_INDEX,
                   "file of %llu bytes exceeds the limit of %llu bytes",
                   (unsigned long long)*size,
                   (unsigned long long)lim.max_bytes);
  }
  uint8_t *buf = malloc(*size ? *size : 1);
  if (!buf) {
    gf_object_close(o->own);
    return -ENOMEM;
  }
  int64_t got = view_read(o, buf, 0, *size);
  gf_object_close(o->own);
  uint64_t io = 0, il = *size;
  int64_t label;
  if (got != (int64_t)*size) {
    rc = gf_fail(got < 0 ? (int)got : GF_ETRUNCATED, name, idx, GF_NO_INDEX,
                 "cannot read the file");
  } else if (packed && (rc = gf_source_unpack(src, &smp, buf, *size, &io, &il,
                                              &label, NULL)) < 0) {
    free(buf);
    return rc; /* named */
  } else if ((rc = gf_source_file_codec(src, &smp, buf + io, il)) >= 0) {
    rc = gf_decode_shape(rc, buf + io, il, NULL, opts, shape);
  }
  *size = packed ? smp.length : il; /* what a read buffer holds */
  free(buf);
  return rc < 0 ? gf_fail_context(rc, name, idx, NULL) : 0;
}

static int scan_folder(const gf_source *src, const gf_decode_opts *opts,
                       uint32_t threads, bool strict, gf_source_extent *out) {
  scan_job job = {.src = src,
                  .opts = opts,
                  .lim = gf_limits_resolve(&opts->limits),
                  .count = gf_source_count(src)};
  atomic_init(&job.next, 0);
  uint64_t blocks = (job.count + SCAN_BLOCK - 1) / SCAN_BLOCK;
  if (threads < 1)
    threads = 1;
  if (threads > blocks)
    threads = (uint32_t)(blocks ? blocks : 1);
  scan_thread *t = calloc(threads, sizeof *t);
  if (!t)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for %u header-scan threads", threads);
  /* Failures to open or read a file are noted per file, not reported:
   * keep the caller's error context. */
  gf_error_info saved = *gf_last_error();
  int rc = 0;
  uint32_t started = 1;
  for (uint32_t i = 0; i < threads; i++) {
    t[i].job = &job;
    t[i].part.max_index = GF_NO_INDEX;
    t[i].part.first_bad = GF_NO_INDEX;
  }
  for (; started < threads; started++) {
    int e = pthread_create(&t[started].thread, NULL, scan_main, &t[started]);
    if (e) {
      rc = -e;
      break;
    }
  }
  scan_main(&t[0]); /* the calling thread takes its share */
  for (uint32_t i = 1; i < started; i++)
    pthread_join(t[i].thread, NULL);
  gf_error_restore(&saved);
  if (rc < 0) {
    free(t);
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot start the threads that read the image headers: %s",
                   strerror(-rc));
  }
  scan_part all = t[0].part;
  for (uint32_t i = 1; i < threads; i++)
    merge(&all, &t[i].part);
  free(t);
  if (strict && all.first_bad != GF_NO_INDEX) {
    /* The fail policy: the first file that did not count fails create,
     * named, unless libpng reads its header after all (then it counts). */
    gf_shape sh;
    uint64_t size;
    if ((rc = recheck(src, opts, all.first_bad, &sh, &size)) < 0)
      return rc;
    uint64_t d = gf_shape_bytes(&sh);
    if (d > all.max_decoded) {
      all.max_decoded = d;
      all.max_index = all.first_bad;
    }
    if (size > all.max_stored)
      all.max_stored = size;
    if (d > all.max_native)
      all.max_native = d;
    if (sh.channels > all.max_channels)
      all.max_channels = sh.channels;
    all.counted++;
    all.uncounted--;
  }
  out->max_decoded = all.max_decoded;
  out->max_index = all.max_index;
  out->max_stored = all.max_stored;
  out->max_native = all.max_native;
  out->counted = all.counted;
  out->uncounted = all.uncounted;
  out->jpeg = all.jpeg;
  /* Any file may be rewritten with another channel count: a folder's
   * outputs are sized for 4 unless the options fix the count. */
  out->max_channels = opts->channels ? opts->channels : 4;
  return 0;
}

int gf_source_extent_listed(const gf_source *src, const gf_decode_opts *opts,
                            gf_source_extent *out) {
  memset(out, 0, sizeof *out);
  out->max_index = GF_NO_INDEX;
  if (gf_source_caps(src) & GF_SOURCE_RECORDS)
    return -EINVAL;
  uint64_t n = gf_source_count(src);
  bool packed = gf_source_caps(src) & GF_SOURCE_PACKED;
  for (uint64_t i = 0; i < n; i++) {
    gf_src_sample smp;
    int rc = gf_source_sample(src, i, &smp);
    if (rc < 0 && packed) {
      /* A packed sample that is not one (no image field): it fails when
       * loaded, under the error policy. */
      out->uncounted++;
      continue;
    }
    if (rc < 0 || !smp.length)
      return -ENOENT;
    if (smp.length > out->max_stored)
      out->max_stored = smp.length;
    if (smp.codec == GF_CODEC_JPEG)
      out->jpeg++;
  }
  out->max_channels = opts->channels ? opts->channels : 4;
  return 0;
}

int gf_source_extent_scan(const gf_source *src, const gf_decode_opts *opts,
                          uint32_t threads, bool strict,
                          gf_source_extent *out) {
  memset(out, 0, sizeof *out);
  out->max_index = GF_NO_INDEX;
  if (!(gf_source_caps(src) & GF_SOURCE_RECORDS))
    return scan_folder(src, opts, threads, strict, out);
  uint64_t by_codec[GF_CODEC_COUNT_];
  int rc = gf_source_max_sizes(src, opts, &out->max_decoded, &out->max_stored,
                               &out->max_native, &out->max_channels, by_codec);
  if (rc < 0)
    return rc;
  out->jpeg = by_codec[GF_CODEC_JPEG];
  out->raw = by_codec[GF_CODEC_RAW];
  out->loco = by_codec[GF_CODEC_LOCO];
  out->counted = gf_source_count(src);
  return 0;
}
