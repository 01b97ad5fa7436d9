/* The codec dispatcher behind the public calls gf_codec_name,
 * gf_codec_parse, gf_decode_shape, gf_decode and gf_encode, and the
 * per-thread scratch buffer the codecs share. */
#include "decode/decode.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const codec_names[GF_CODEC_COUNT_] = {
    [GF_CODEC_RAW] = "raw",
    [GF_CODEC_PNG] = "png",
    [GF_CODEC_ZSTD] = "zstd",
    [GF_CODEC_GRADZSTD] = "gradzstd",
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
                 "unknown codec '%s' (expected raw, png, zstd or gradzstd)",
                 name ? name : "(null)");
}

/* ---- scratch ----------------------------------------------------------- */

/* Buffers up to this size stay with the thread between calls: they cover
 * the usual training images (a 1024x1024 RGBA u16 image is 8 MiB) without
 * a malloc and page faults per sample, and bound what an idle thread
 * holds. */
#define GF_SCRATCH_KEEP ((size_t)32 << 20)

typedef struct scratch_tls {
  void *buf;
  size_t cap;
} scratch_tls;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_err;

static void scratch_free(void *p) {
  scratch_tls *t = p;
  free(t->buf);
  free(t);
}

static void scratch_key_init(void) {
  scratch_key_err = pthread_key_create(&scratch_key, scratch_free);
}

static scratch_tls *scratch_tls_get(void) {
  if (pthread_once(&scratch_once, scratch_key_init) != 0 || scratch_key_err)
    return NULL;
  scratch_tls *t = pthread_getspecific(scratch_key);
  if (t)
    return t;
  t = calloc(1, sizeof *t);
  if (t && pthread_setspecific(scratch_key, t) != 0) {
    free(t);
    t = NULL;
  }
  return t;
}

void *gf_scratch_get(size_t n) {
  void *p = NULL;
  if (n <= GF_SCRATCH_KEEP) {
    scratch_tls *t = scratch_tls_get();
    if (t && t->cap >= n)
      return t->buf;
    if (t) {
      free(t->buf);
      t->cap = 0;
      /* Round up so slowly growing requests do not reallocate each time. */
      size_t want = n < 65536 ? 65536 : n + n / 4;
      if (want > GF_SCRATCH_KEEP)
        want = GF_SCRATCH_KEEP;
      t->buf = malloc(want);
      if (t->buf) {
        t->cap = want;
        return t->buf;
      }
    }
  }
  p = malloc(n ? n : 1);
  if (!p)
    gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
            "out of memory for a %zu-byte decode buffer", n);
  return p;
}

void gf_scratch_release(void *p) {
  if (!p)
    return;
  scratch_tls *t = scratch_key_err ? NULL : pthread_getspecific(scratch_key);
  if (t && t->buf == p)
    return;
  free(p);
}

/* ---- options and shapes ------------------------------------------------ */

int gf_decode_opts_resolve(const gf_decode_opts *in, gf_decode_opts *out) {
  gf_decode_opts def = GF_DECODE_OPTS_INIT;
  *out = def;
  if (!in)
    return 0;
  int rc = gf_check_struct_size(in->struct_size, sizeof *in, "gf_decode_opts");
  if (rc < 0)
    return rc;
  /* An older, smaller struct leaves the fields it lacks at their defaults. */
  memcpy(out, in, in->struct_size);
  out->struct_size = sizeof *out;
  bool reserved_set = out->reserved0 != 0;
  for (size_t i = 0; i < sizeof out->reserved / sizeof out->reserved[0]; i++)
    reserved_set = reserved_set || out->reserved[i] != 0;
  if (reserved_set)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_opts: reserved fields must be zero");
  if (out->channels > 4)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_decode_opts: channels %u is not valid (expected 0 to "
                   "keep the image's own, or 1, 3, 4)",
                   out->channels);
  return 0;
}

gf_shape gf_decode_out_shape(const gf_shape *stored, const gf_decode_opts *o) {
  gf_shape s = *stored;
  if (o->channels)
    s.channels = o->channels;
  if (s.dtype == GF_DTYPE_U16 && !o->keep_16bit)
    s.dtype = GF_DTYPE_U8;
  return s;
}

static int check_codec(int codec) {
  if (codec < 0 || codec >= GF_CODEC_COUNT_)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "unknown codec %d (expected 0 raw, 1 png, 2 zstd, 3 "
                   "gradzstd)",
                   codec);
  return 0;
}

/* The stored shape of a raw/zstd/gradzstd sample must be a valid shape
 * within the limits: it sizes the decode and any scratch buffer. */
static int check_stored(int codec, const gf_shape *stored,
                        const gf_decode_opts *o) {
  if (!stored)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a %s sample needs its stored shape", gf_codec_name(codec));
  int rc = gf_limits_check(&o->limits, stored, NULL, GF_NO_INDEX);
  return rc < 0 ? gf_fail_context(rc, NULL, GF_NO_INDEX, "stored shape") : 0;
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

/* A dataset record names the dimensions a PNG was built with (zero when
 * unknown): a file that disagrees is not the one the record describes. */
static int check_png_record(const gf_shape *stored, const gf_shape *png) {
  if (stored && stored->height && stored->width &&
      (stored->height != png->height || stored->width != png->width))
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "PNG is %ux%u, its record says %ux%u", png->width,
                   png->height, stored->width, stored->height);
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
  if (codec == GF_CODEC_PNG) {
    if ((rc = gf_png_shape(src, src_len, &o, out)) < 0)
      return rc;
    return check_png_record(stored, out);
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
    if (codec != GF_CODEC_RAW &&
        (rc = gf_zstd_check_frame(src, src_len, (size_t)want)) < 0)
      return rc;
  }
  *out = s;
  return 0;
}

/* Decompresses (and unfilters) a zstd/gradzstd sample of shape `st` into
 * buf, exactly gf_shape_bytes(st) bytes. */
static int unpack(int codec, const void *src, size_t len, const gf_shape *st,
                  uint8_t *buf, size_t n) {
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
  if (codec == GF_CODEC_PNG) {
    if ((rc = gf_png_decode(src, src_len, &o, dst, dst_cap, out)) < 0)
      return rc;
    return check_png_record(stored, out);
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
  if (codec == GF_CODEC_PNG)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_encode does not produce png (the builder stores "
                   "source PNG files as they are)");
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
