/* Size limits, applied before any allocation a sample's header asks for. */
#include "common/common.h"

gf_limits gf_limits_resolve(const gf_limits *in) {
  gf_limits l = {0, 0, 0, 0};
  if (in)
    l = *in;
  if (!l.max_width) l.max_width = GF_LIMIT_DEFAULT_DIM;
  if (!l.max_height) l.max_height = GF_LIMIT_DEFAULT_DIM;
  if (!l.max_pixels) l.max_pixels = GF_LIMIT_DEFAULT_PIXELS;
  if (!l.max_bytes) l.max_bytes = GF_LIMIT_DEFAULT_BYTES;
  return l;
}

uint64_t gf_shape_bytes(const gf_shape *s) {
  if (!s || !s->height || !s->width || !s->channels || s->channels > 4 ||
      s->dtype > GF_DTYPE_U16)
    return 0;
  uint64_t n;
  if (!gf_mul_u64(s->height, s->width, &n) || !gf_mul_u64(n, s->channels, &n) ||
      !gf_mul_u64(n, s->dtype == GF_DTYPE_U16 ? 2 : 1, &n))
    return 0;
  return n;
}

int gf_limits_check(const gf_limits *lim, const gf_shape *s, const char *path,
                    uint64_t sample) {
  gf_limits l = gf_limits_resolve(lim);
  if (!s->height || !s->width || !s->channels || s->channels > 4 ||
      s->dtype > GF_DTYPE_U16)
    return gf_fail(GF_ESHAPE, path, sample, GF_NO_INDEX,
                   "invalid shape %ux%ux%u dtype %u (expected nonzero "
                   "height and width, 1-4 channels, dtype u8 or u16)",
                   s->height, s->width, s->channels, s->dtype);
  uint64_t pixels = (uint64_t)s->height * s->width;
  uint64_t bytes = gf_shape_bytes(s);
  if (s->width > l.max_width || s->height > l.max_height ||
      pixels > l.max_pixels || bytes > l.max_bytes)
    return gf_fail(GF_ELIMIT, path, sample, GF_NO_INDEX,
                   "image %ux%u (%llu pixels, %llu decoded bytes) exceeds the "
                   "limits: width %u, height %u, %llu pixels, %llu bytes",
                   s->width, s->height, (unsigned long long)pixels,
                   (unsigned long long)bytes, l.max_width, l.max_height,
                   (unsigned long long)l.max_pixels,
                   (unsigned long long)l.max_bytes);
  return 0;
}
