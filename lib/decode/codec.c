/* The codec dispatcher behind the public calls gf_codec_name,
 * gf_codec_parse, gf_decode_shape, gf_decode and gf_encode, and the
 * loader's gf_decode_filtered. It calls the codecs; they never call it. */
#include "decode/decode.h"
#include "decode/loco_band.h" /* GF_LOCO_BAND_ROWS */
#include "common/scratch.h"

#include <stdlib.h>
#include <string.h>

static const char *const codec_names[GF_CODEC_COUNT_] = {
    [GF_CODEC_RAW] = "raw",
    [GF_CODEC_PNG] = "png",
    [GF_CODEC_ZSTD] = "zstd",
    [GF_CODEC_GRADZSTD] = "gradzstd",
    [GF_CODEC_JPEG] = "jpeg",
    [GF_CODEC_LOCO] = "loco",
};

const char *gf_codec_name(int codec) {
  if (codec < 0 || codec >= GF_CODEC_COUNT_)
    return NULL;
  return codec_names[codec];
}

int gf_codec_parse(const char *name) {
  if (name)
    for (int i = 0; i < GF_CODEC_COUNT_; i++)
      if (strcmp(name, codec_names[i]) == 0)
        return i;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "unknown codec '%s' (expected raw, png, zstd, gradzstd, "
                 "jpeg or loco)",
                 name ? name : "(null)");
}

static int check_codec(int codec) {
  if (codec < 0 || codec >= GF_CODEC_COUNT_)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "unknown codec %d (expected 0 raw, 1 png, 2 zstd, 3 "
                   "gradzstd, 4 jpeg, 5 loco)",
                   codec);
  return 0;
}

/* The stored shape of a raw/zstd/gradzstd/loco sample must be a valid
 * shape within the limits: it sizes the decode and any scratch buffer. A
 * loco sample's is 8-bit: the codec codes nothing else. */
static int check_stored(int codec, const gf_shape *stored,
                        const gf_decode_opts *o) {
  if (!stored)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a %s sample needs its stored shape", gf_codec_name(codec));
  int rc = gf_limits_check(&o->limits, stored, NULL, GF_NO_INDEX);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "stored shape");
  if (codec == GF_CODEC_LOCO && stored->dtype != GF_DTYPE_U8)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a loco sample's stored shape %ux%ux%u is u16: loco codes "
                   "8-bit samples only",
                   stored->height, stored->width, stored->channels);
  return 0;
}

static int check_src_len(size_t len, const gf_decode_opts *o) {
  gf_limits l = gf_limits_resolve(&o->limits);
  if (len > l.max_bytes)
    return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "stored sample of %zu bytes exceeds the limit of %llu "
                   "bytes",
                   len, (unsigned long long)l.max_bytes);
  return 0;
}

/* The codecs whose samples are files stored as they are, which carry
 * their own shape. */
static bool is_file_codec(int codec) {
  return codec == GF_CODEC_PNG || codec == GF_CODEC_JPEG;
}

/* A dataset record names the dimensions a PNG or JPEG was built with (zero
 * when unknown): a file that disagrees is not the one the record
 * describes. */
static int check_file_record(int codec, const gf_shape *stored,
                             const gf_shape *got) {
  if (stored && stored->height && stored->width &&
      (stored->height != got->height || stored->width != got->width))
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s is %ux%u, its record says %ux%u",
                   codec == GF_CODEC_PNG ? "PNG" : "JPEG", got->width,
                   got->height, stored->width, stored->height);
  return 0;
}

int gf_decode_shape(int codec, const void *src, size_t src_len,
                    const gf_shape *stored, const gf_decode_opts *opts,
                    gf_shape *out) {
  gf_decode_opts o;
  int rc = gf_decode_opts_resolve(opts, &o);
  if (rc < 0)
    return rc;
  if (!out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_shape: NULL output shape");
  if ((rc = check_codec(codec)) < 0 ||
      (src && (rc = check_src_len(src_len, &o)) < 0))
    return rc;
  if (is_file_codec(codec)) {
    rc = codec == GF_CODEC_PNG ? gf_png_shape(src, src_len, &o, out)
                               : gf_jpeg_shape(src, src_len, &o, out);
    if (rc < 0)
      return rc;
    return check_file_record(codec, stored, out);
  }
  if ((rc = check_stored(codec, stored, &o)) < 0)
    return rc;
  gf_shape s = gf_decode_out_shape(stored, &o);
  if ((rc = gf_limits_check(&o.limits, &s, NULL, GF_NO_INDEX)) < 0)
    return rc;
  /* With the bytes at hand, the cheap header checks come for free. */
  if (src) {
    uint64_t want = gf_shape_bytes(stored);
    if (codec == GF_CODEC_RAW && src_len != want)
      return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "raw sample is %zu bytes, expected %llu for shape "
                     "%ux%ux%u %s",
                     src_len, (unsigned long long)want, stored->height,
                     stored->width, stored->channels,
                     stored->dtype == GF_DTYPE_U16 ? "u16" : "u8");
    if (codec == GF_CODEC_LOCO &&
        (rc = gf_loco_check(src, src_len, stored->height, stored->width,
                            stored->channels)) < 0)
      return rc;
    if ((codec == GF_CODEC_ZSTD || codec == GF_CODEC_GRADZSTD) &&
        (rc = gf_zstd_check_frame(src, src_len, (size_t)want)) < 0)
      return rc;
  }
  *out = s;
  return 0;
}

/* Decodes a zstd/gradzstd/loco sample of shape `st` into buf, exactly
 * gf_shape_bytes(st) bytes (n). */
static int unpack(int codec, const void *src, size_t len, const gf_shape *st,
                  uint8_t *buf, size_t n) {
  if (codec == GF_CODEC_LOCO)
    return gf_loco_decode(src, len, st->height, st->width, st->channels, buf);
  int rc = gf_zstd_decompress(src, len, buf, n);
  if (rc < 0)
    return rc;
  if (codec == GF_CODEC_GRADZSTD)
    gf_grad_unfilter(buf, st->height, st->width,
                     st->channels * (st->dtype == GF_DTYPE_U16 ? 2u : 1u));
  return 0;
}

int gf_decode(int codec, const void *src, size_t src_len,
              const gf_shape *stored, const gf_decode_opts *opts, void *dst,
              size_t dst_cap, gf_shape *out) {
  gf_decode_opts o;
  int rc = gf_decode_opts_resolve(opts, &o);
  if (rc < 0)
    return rc;
  if (!out || (!dst && dst_cap) || (!src && src_len))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode: NULL argument");
  if ((rc = check_codec(codec)) < 0 || (rc = check_src_len(src_len, &o)) < 0)
    return rc;
  if (is_file_codec(codec)) {
    rc = codec == GF_CODEC_PNG
             ? gf_png_decode(src, src_len, &o, dst, dst_cap, out)
             : gf_jpeg_decode(src, src_len, &o, dst, dst_cap, out);
    if (rc < 0)
      return rc;
    return check_file_record(codec, stored, out);
  }

  if ((rc = check_stored(codec, stored, &o)) < 0)
    return rc;
  gf_shape s = gf_decode_out_shape(stored, &o);
  if ((rc = gf_limits_check(&o.limits, &s, NULL, GF_NO_INDEX)) < 0)
    return rc;
  size_t in_bytes = (size_t)gf_shape_bytes(stored);
  size_t out_bytes = (size_t)gf_shape_bytes(&s);
  if (dst_cap < out_bytes)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "destination holds %zu bytes, the %ux%ux%u %s image needs "
                   "%zu",
                   dst_cap, s.height, s.width, s.channels,
                   s.dtype == GF_DTYPE_U16 ? "u16" : "u8", out_bytes);
  bool direct = s.channels == stored->channels && s.dtype == stored->dtype;
  size_t npx = (size_t)stored->height * stored->width;

  if (codec == GF_CODEC_RAW) {
    if (src_len != in_bytes)
      return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "raw sample is %zu bytes, expected %zu for shape "
                     "%ux%ux%u %s",
                     src_len, in_bytes, stored->height, stored->width,
                     stored->channels,
                     stored->dtype == GF_DTYPE_U16 ? "u16" : "u8");
    if (direct)
      memcpy(dst, src, in_bytes);
    else
      gf_convert_pixels(src, stored, dst, &s, npx);
  } else if (direct) {
    rc = unpack(codec, src, src_len, stored, dst, in_bytes);
  } else {
    uint8_t *tmp = gf_scratch_get(in_bytes);
    if (!tmp)
      return -ENOMEM;
    rc = unpack(codec, src, src_len, stored, tmp, in_bytes);
    if (rc == 0)
      gf_convert_pixels(tmp, stored, dst, &s, npx);
    gf_scratch_release(tmp);
  }
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, gf_codec_name(codec));
  *out = s;
  return 0;
}

int gf_decode_filtered(int codec, const void *src, size_t src_len,
                       const gf_shape *stored, void *dst, size_t dst_cap) {
  if (!src || !stored || !dst)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_filtered: NULL argument");
  if (codec != GF_CODEC_GRADZSTD)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "only a gradzstd sample can be left filtered, not %s",
                   gf_codec_name(codec) ? gf_codec_name(codec) : "unknown");
  uint64_t want = gf_shape_bytes(stored);
  if (want > dst_cap)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "destination holds %zu bytes, the filtered %ux%ux%u image "
                   "needs %llu",
                   dst_cap, stored->height, stored->width, stored->channels,
                   (unsigned long long)want);
  return gf_zstd_decompress(src, src_len, dst, (size_t)want);
}

/* loco's level is the rows of a band (0: the default). */
static int encode_loco(const uint8_t *pixels, const gf_shape *shape, int level,
                       void **dst, size_t *dst_len) {
  if (shape->dtype != GF_DTYPE_U8)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco codes 8-bit samples; use gradzstd for 16-bit "
                   "images");
  if (level < 0 || level > 255)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco level %d: the level is the rows of a band, 1 to "
                   "255 (0: the default %u)",
                   level, GF_LOCO_BAND_ROWS);
  uint32_t rows = level ? (uint32_t)level : GF_LOCO_BAND_ROWS;
  return gf_loco_encode(pixels, shape->height, shape->width, shape->channels,
                        rows, dst, dst_len);
}

int gf_encode(int codec, const void *pixels, const gf_shape *shape, int level,
              void **dst, size_t *dst_len) {
  if (!pixels || !shape || !dst || !dst_len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode: NULL argument");
  *dst = NULL;
  *dst_len = 0;
  int rc = check_codec(codec);
  if (rc < 0)
    return rc;
  if (is_file_codec(codec))
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode does not produce %s (the builder stores "
                   "source %s files as they are)",
                   gf_codec_name(codec),
                   codec == GF_CODEC_PNG ? "PNG" : "JPEG");
  uint64_t n64 = gf_shape_bytes(shape);
  if (!n64 || n64 > SIZE_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode: invalid shape %ux%ux%u dtype %u",
                   shape->height, shape->width, shape->channels,
                   shape->dtype);
  size_t n = (size_t)n64;
  if (codec == GF_CODEC_RAW) {
    void *p = malloc(n);
    if (!p)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for a %zu-byte raw sample", n);
    memcpy(p, pixels, n);
    *dst = p;
    *dst_len = n;
    return 0;
  }
  if (codec == GF_CODEC_ZSTD)
    return gf_zstd_compress(pixels, n, level ? level : 3, dst, dst_len);
  if (codec == GF_CODEC_LOCO)
    return encode_loco(pixels, shape, level, dst, dst_len);
  uint8_t *tmp = malloc(n);
  if (!tmp)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a %zu-byte gradzstd buffer", n);
  memcpy(tmp, pixels, n);
  gf_grad_filter(tmp, shape->height, shape->width,
                 shape->channels * (shape->dtype == GF_DTYPE_U16 ? 2u : 1u));
  rc = gf_zstd_compress(tmp, n, level ? level : 1, dst, dst_len);
  free(tmp);
  return rc;
}

int gf_decode_gpu_record(int codec, const void *src, size_t src_len,
                         bool exact, const gf_shape *stored, uint32_t *len,
                         uint32_t *bands) {
  if (!src || !stored || !bands || !len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_gpu_record: NULL argument");
  if (codec != GF_CODEC_LOCO || stored->dtype != GF_DTYPE_U8)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "only an 8-bit loco record is decoded on the GPU");
  const uint8_t *p = src;
  size_t n = src_len;
  if (!exact && n >= 3 && p[2] && stored->height) {
    /* The record's own length, from the end of its last band. */
    uint64_t nb = (stored->height + p[2] - 1) / p[2];
    uint64_t at = 4 + 4 * (nb - 1);
    if (at + 4 <= n) {
      uint64_t end = (uint64_t)p[at] | (uint64_t)p[at + 1] << 8 |
                     (uint64_t)p[at + 2] << 16 | (uint64_t)p[at + 3] << 24;
      uint64_t want = 4 + 4 * nb + 4 * end;
      if (want <= n)
        n = (size_t)want;
    }
  }
  int rc = gf_loco_check(src, n, stored->height, stored->width,
                         stored->channels);
  if (rc < 0)
    return rc;
  if (n > UINT32_MAX)
    return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a loco record of %zu bytes is beyond the GPU decode's "
                   "4 GiB",
                   n);
  *len = (uint32_t)n;
  *bands = (stored->height + p[2] - 1) / p[2];
  return 0;
}
