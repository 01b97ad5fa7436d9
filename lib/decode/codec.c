/* The codec table (each codec's entry, registered here by id) and the
 * dispatcher behind the public calls gf_codec_name, gf_codec_parse,
 * gf_decode_shape, gf_decode and gf_encode, and the loader's
 * gf_decode_filtered and gf_decode_gpu_record. It calls the codecs
 * through their entries; they never call it. */
#include "common/scratch.h"
#include "decode/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registration: one line a codec. */
static const gf_codec_ops *const codecs[GF_CODEC_COUNT_] = {
    [GF_CODEC_RAW] = &gf_codec_raw,   [GF_CODEC_PNG] = &gf_codec_png,
    [GF_CODEC_ZSTD] = &gf_codec_zstd, [GF_CODEC_GRADZSTD] = &gf_codec_gradzstd,
    [GF_CODEC_JPEG] = &gf_codec_jpeg, [GF_CODEC_LOCO] = &gf_codec_loco,
};

const gf_codec_ops *gf_codec_ops_of(int codec) {
  return codec >= 0 && codec < GF_CODEC_COUNT_ ? codecs[codec] : NULL;
}

const char *gf_codec_name(int codec) {
  const gf_codec_ops *c = gf_codec_ops_of(codec);
  return c ? c->name : NULL;
}

/* "raw, png, ..." in id order, for messages. */
static void codec_list(char *buf, size_t cap, bool numbered) {
  size_t n = 0;
  buf[0] = '\0';
  for (int i = 0; i < GF_CODEC_COUNT_ && n < cap; i++) {
    int w = numbered ? snprintf(buf + n, cap - n, "%s%d %s", i ? ", " : "", i,
                                codecs[i]->name)
                     : snprintf(buf + n, cap - n, "%s%s",
                                i == 0                     ? ""
                                : i + 1 == GF_CODEC_COUNT_ ? " or "
                                                           : ", ",
                                codecs[i]->name);
    if (w < 0)
      break;
    n += (size_t)w;
  }
}

int gf_codec_parse(const char *name) {
  if (name)
    for (int i = 0; i < GF_CODEC_COUNT_; i++)
      if (strcmp(name, codecs[i]->name) == 0)
        return i;
  char list[256];
  codec_list(list, sizeof list, false);
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "unknown codec '%s' (expected %s)", name ? name : "(null)",
                 list);
}

static const gf_codec_ops *check_codec(int codec) {
  const gf_codec_ops *c = gf_codec_ops_of(codec);
  if (!c) {
    char list[256];
    codec_list(list, sizeof list, true);
    gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
            "unknown codec %d (expected %s)", codec, list);
  }
  return c;
}

/* The stored shape of a pixel codec's sample must be a valid shape within
 * the limits: it sizes the decode and any scratch buffer. A loco sample's
 * is 8-bit: the codec codes nothing else. */
static int check_stored(const gf_codec_ops *c, const gf_shape *stored,
                        const gf_decode_opts *o) {
  if (!stored)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a %s sample needs its stored shape", c->name);
  int rc = gf_limits_check(&o->limits, stored, NULL, GF_NO_INDEX);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "stored shape");
  if ((c->caps & GF_CODEC_CAP_GPU_RECORD) && stored->dtype != GF_DTYPE_U8)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a %s sample's stored shape %ux%ux%u is u16: %s codes "
                   "8-bit samples only",
                   c->name, stored->height, stored->width, stored->channels,
                   c->name);
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

/* A dataset record names the dimensions a PNG or JPEG was built with (zero
 * when unknown): a file that disagrees is not the one the record
 * describes. */
static int check_file_record(const gf_codec_ops *c, const gf_shape *stored,
                             const gf_shape *got) {
  if (stored && stored->height && stored->width &&
      (stored->height != got->height || stored->width != got->width)) {
    char upper[16];
    size_t i = 0;
    for (; c->name[i] && i + 1 < sizeof upper; i++)
      upper[i] =
          (char)(c->name[i] >= 'a' && c->name[i] <= 'z' ? c->name[i] - 'a' + 'A'
                                                        : c->name[i]);
    upper[i] = '\0';
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s is %ux%u, its record says %ux%u", upper, got->width,
                   got->height, stored->width, stored->height);
  }
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
  const gf_codec_ops *c = check_codec(codec);
  if (!c)
    return GF_EUNSUPPORTED;
  if (src && (rc = check_src_len(src_len, &o)) < 0)
    return rc;
  if (c->caps & GF_CODEC_CAP_FILE) {
    if ((rc = c->file_shape(src, src_len, &o, out)) < 0)
      return rc;
    return check_file_record(c, stored, out);
  }
  if ((rc = check_stored(c, stored, &o)) < 0)
    return rc;
  gf_shape s = gf_decode_out_shape(stored, &o);
  if ((rc = gf_limits_check(&o.limits, &s, NULL, GF_NO_INDEX)) < 0)
    return rc;
  /* With the bytes at hand, the cheap header checks come for free. */
  if (src && c->check && (rc = c->check(src, src_len, stored)) < 0)
    return rc;
  *out = s;
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
  const gf_codec_ops *c = check_codec(codec);
  if (!c)
    return GF_EUNSUPPORTED;
  if ((rc = check_src_len(src_len, &o)) < 0)
    return rc;
  if (c->caps & GF_CODEC_CAP_FILE) {
    if ((rc = c->file_decode(src, src_len, &o, dst, dst_cap, out)) < 0)
      return rc;
    return check_file_record(c, stored, out);
  }

  if ((rc = check_stored(c, stored, &o)) < 0)
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

  if (direct) {
    rc = c->unpack(src, src_len, stored, dst, in_bytes);
  } else if (c->caps & GF_CODEC_CAP_PIXELS) {
    /* The stored bytes are the pixels: converted straight from them. */
    if ((rc = c->check(src, src_len, stored)) == 0)
      gf_convert_pixels(src, stored, dst, &s, npx);
  } else {
    uint8_t *tmp = gf_scratch_get(in_bytes);
    if (!tmp)
      return -ENOMEM;
    rc = c->unpack(src, src_len, stored, tmp, in_bytes);
    if (rc == 0)
      gf_convert_pixels(tmp, stored, dst, &s, npx);
    gf_scratch_release(tmp);
  }
  if (rc < 0)
    return (c->caps & GF_CODEC_CAP_PIXELS)
               ? rc
               : gf_fail_context(rc, NULL, GF_NO_INDEX, c->name);
  *out = s;
  return 0;
}

int gf_decode_filtered(int codec, const void *src, size_t src_len,
                       const gf_shape *stored, void *dst, size_t dst_cap) {
  if (!src || !stored || !dst)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_filtered: NULL argument");
  const gf_codec_ops *c = gf_codec_ops_of(codec);
  if (!c || !(c->caps & GF_CODEC_CAP_GPU_UNFILTER))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "only a gradzstd sample can be left filtered, not %s",
                   c ? c->name : "unknown");
  uint64_t want = gf_shape_bytes(stored);
  if (want > dst_cap)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "destination holds %zu bytes, the filtered %ux%ux%u image "
                   "needs %llu",
                   dst_cap, stored->height, stored->width, stored->channels,
                   (unsigned long long)want);
  return c->unpack_filtered(src, src_len, stored, dst, (size_t)want);
}

int gf_encode(int codec, const void *pixels, const gf_shape *shape, int level,
              void **dst, size_t *dst_len) {
  if (!pixels || !shape || !dst || !dst_len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode: NULL argument");
  *dst = NULL;
  *dst_len = 0;
  const gf_codec_ops *c = check_codec(codec);
  if (!c)
    return GF_EUNSUPPORTED;
  if (!c->encode)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode does not produce %s (the builder stores "
                   "source %s files as they are)",
                   c->name, codec == GF_CODEC_PNG ? "PNG" : "JPEG");
  uint64_t n64 = gf_shape_bytes(shape);
  if (!n64 || n64 > SIZE_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode: invalid shape %ux%ux%u dtype %u",
                   shape->height, shape->width, shape->channels,
                   shape->dtype);
  return c->encode(pixels, shape, level, dst, dst_len);
}

int gf_decode_gpu_record(int codec, const void *src, size_t src_len,
                         bool exact, const gf_shape *stored, uint32_t *len,
                         uint32_t *bands) {
  if (!src || !stored || !bands || !len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_gpu_record: NULL argument");
  const gf_codec_ops *c = gf_codec_ops_of(codec);
  if (!c || !(c->caps & GF_CODEC_CAP_GPU_RECORD) ||
      stored->dtype != GF_DTYPE_U8)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "only an 8-bit loco record is decoded on the GPU");
  return c->gpu_record(src, src_len, exact, stored, len, bands);
}
