/* Channel conversion and 16 -> 8 bit reduction, shared by every codec so
 * that a request (channels, bit depth) gives the same pixels whichever way
 * the sample was stored. */
#include "decode/decode.h"

#include <string.h>

/* BT.601 luma with weights summing to 256, so white stays 255 (65535). */
#define GF_LUMA(r, g, b) ((77u * (r) + 150u * (g) + 29u * (b) + 128u) >> 8)

void gf_convert_channels_u8(const uint8_t *src, uint32_t src_c, uint8_t *dst,
                            uint32_t dst_c, size_t n) {
  const uint8_t *s = src;
  uint8_t *d = dst;
  size_t i;
  switch (src_c * 8 + dst_c) {
  case 1 * 8 + 2:
    for (i = 0; i < n; i++, s += 1, d += 2) {
      d[0] = s[0];
      d[1] = 255;
    }
    break;
  case 1 * 8 + 3:
    for (i = 0; i < n; i++, s += 1, d += 3)
      d[0] = d[1] = d[2] = s[0];
    break;
  case 1 * 8 + 4:
    for (i = 0; i < n; i++, s += 1, d += 4) {
      d[0] = d[1] = d[2] = s[0];
      d[3] = 255;
    }
    break;
  case 2 * 8 + 1:
    for (i = 0; i < n; i++, s += 2, d += 1)
      d[0] = s[0];
    break;
  case 2 * 8 + 3:
    for (i = 0; i < n; i++, s += 2, d += 3)
      d[0] = d[1] = d[2] = s[0];
    break;
  case 2 * 8 + 4:
    for (i = 0; i < n; i++, s += 2, d += 4) {
      d[0] = d[1] = d[2] = s[0];
      d[3] = s[1];
    }
    break;
  case 3 * 8 + 1:
    for (i = 0; i < n; i++, s += 3, d += 1)
      d[0] = (uint8_t)GF_LUMA(s[0], s[1], s[2]);
    break;
  case 3 * 8 + 2:
    for (i = 0; i < n; i++, s += 3, d += 2) {
      d[0] = (uint8_t)GF_LUMA(s[0], s[1], s[2]);
      d[1] = 255;
    }
    break;
  case 3 * 8 + 4:
    for (i = 0; i < n; i++, s += 3, d += 4) {
      d[0] = s[0];
      d[1] = s[1];
      d[2] = s[2];
      d[3] = 255;
    }
    break;
  case 4 * 8 + 1:
    for (i = 0; i < n; i++, s += 4, d += 1)
      d[0] = (uint8_t)GF_LUMA(s[0], s[1], s[2]);
    break;
  case 4 * 8 + 2:
    for (i = 0; i < n; i++, s += 4, d += 2) {
      d[0] = (uint8_t)GF_LUMA(s[0], s[1], s[2]);
      d[1] = s[3];
    }
    break;
  case 4 * 8 + 3:
    for (i = 0; i < n; i++, s += 4, d += 3) {
      d[0] = s[0];
      d[1] = s[1];
      d[2] = s[2];
    }
    break;
  default:
    if (src_c == dst_c && src_c >= 1 && src_c <= 4)
      memcpy(dst, src, n * src_c);
    break;
  }
}

static inline uint16_t ld16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
static inline void st16(uint8_t *p, uint32_t v) {
  uint16_t x = (uint16_t)v;
  memcpy(p, &x, 2);
}

void gf_convert_channels_u16(const void *src, uint32_t src_c, void *dst,
                             uint32_t dst_c, size_t n) {
  const uint8_t *s = src;
  uint8_t *d = dst;
  if (src_c == dst_c) {
    if (src_c >= 1 && src_c <= 4)
      memcpy(dst, src, n * src_c * 2);
    return;
  }
  if (src_c < 1 || src_c > 4 || dst_c < 1 || dst_c > 4)
    return;
  size_t ss = (size_t)src_c * 2, ds = (size_t)dst_c * 2;
  bool src_alpha = src_c == 2 || src_c == 4;
  bool src_color = src_c >= 3;
  for (size_t i = 0; i < n; i++, s += ss, d += ds) {
    uint32_t g, r = 0, gg = 0, b = 0;
    if (src_color) {
      r = ld16(s);
      gg = ld16(s + 2);
      b = ld16(s + 4);
      g = GF_LUMA(r, gg, b);
    } else {
      g = r = gg = b = ld16(s);
    }
    uint32_t a = src_alpha ? ld16(s + ss - 2) : 65535u;
    switch (dst_c) {
    case 1:
      st16(d, g);
      break;
    case 2:
      st16(d, g);
      st16(d + 2, a);
      break;
    case 3:
    case 4:
      st16(d, r);
      st16(d + 2, gg);
      st16(d + 4, b);
      if (dst_c == 4)
        st16(d + 6, a);
      break;
    default:
      break;
    }
  }
}

void gf_scale16_to_u8(const void *src, uint8_t *dst, size_t n) {
  const uint8_t *s = src;
  for (size_t i = 0; i < n; i++)
    dst[i] = (uint8_t)(((uint32_t)ld16(s + 2 * i) * 255u + 32895u) >> 16);
}

void gf_convert_pixels(const void *src, const gf_shape *in, void *dst,
                       const gf_shape *out, size_t n) {
  if (in->dtype == GF_DTYPE_U16 && out->dtype == GF_DTYPE_U16) {
    gf_convert_channels_u16(src, in->channels, dst, out->channels, n);
    return;
  }
  if (in->dtype == GF_DTYPE_U8) {
    gf_convert_channels_u8(src, in->channels, dst, out->channels, n);
    return;
  }
  /* u16 -> u8: reduce a chunk into a small buffer, then convert it, so no
   * image-sized temporary is needed. */
  enum { CHUNK = 1024 };
  uint8_t tmp[CHUNK * 4];
  const uint8_t *s = src;
  uint8_t *d = dst;
  size_t sstride = (size_t)in->channels * 2, dstride = out->channels;
  while (n) {
    size_t k = n < CHUNK ? n : CHUNK;
    if (in->channels == out->channels) {
      gf_scale16_to_u8(s, d, k * in->channels);
    } else {
      gf_scale16_to_u8(s, tmp, k * in->channels);
      gf_convert_channels_u8(tmp, in->channels, d, out->channels, k);
    }
    s += k * sstride;
    d += k * dstride;
    n -= k;
  }
}
