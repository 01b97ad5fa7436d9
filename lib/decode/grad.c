/* The gradient filter of the gradzstd codec and its inverse.
 *
 * d = p - left - up + upleft is a horizontal difference of a vertical one
 * (they commute), so the inverse is, per row, a horizontal prefix sum t of
 * the row, then p = t + the row above. Decode speed rests on the prefix
 * sum, a serial chain per byte lane: on x86-64 it runs on 16-byte vectors
 * (log-step shifted adds inside a vector, the running pixel carried from
 * one vector to the next by a byte shuffle) and stores t + up in the same
 * pass; elsewhere (other CPUs, or x86-64 without SSSE3) a scalar loop keeps
 * the running pixel in registers. */
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GF_GRAD_SSSE3 1
#include <immintrin.h>
#endif

void gf_grad_filter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp) {
  size_t stride = (size_t)w * bpp;
  /* Bottom-up so each row is differenced against the original row above. */
  for (uint32_t y = h; y-- > 1;) {
    uint8_t *r = px + (size_t)y * stride;
    const uint8_t *up = r - stride;
    for (size_t i = 0; i < stride; i++)
      r[i] = (uint8_t)(r[i] - up[i]);
  }
  /* Right to left within a row for the same reason. */
  for (uint32_t y = 0; y < h; y++) {
    uint8_t *r = px + (size_t)y * stride;
    for (size_t i = stride; i-- > bpp;)
      r[i] = (uint8_t)(r[i] - r[i - bpp]);
  }
}

/* Scalar rows: the running pixel t[0..bpp) stays in registers. */
static void row_scalar(uint8_t *r, const uint8_t *up, size_t n, uint32_t bpp) {
  uint8_t t[8] = {0};
  for (size_t i = 0; i < n; i += bpp)
    for (uint32_t k = 0; k < bpp; k++) {
      t[k] = (uint8_t)(t[k] + r[i + k]);
      r[i + k] = up ? (uint8_t)(t[k] + up[i + k]) : t[k];
    }
}

#ifdef GF_GRAD_SSSE3
/* One row on 16-byte vectors for any pixel size up to 8 bytes. Inside a
 * vector, shifted adds (by bpp, 2 bpp, 4 bpp, 8 bpp bytes while under 16)
 * sum each byte with the earlier bytes of its lane. Between vectors the
 * carry is the last bpp bytes repeated from byte 0 on: byte j of the next
 * vector belongs to the same lane as byte 16 - bpp + j % bpp of this one
 * (their positions differ by bpp + j - j % bpp, a multiple of bpp). The
 * last bytes, fewer than 16, continue in scalar code from that carry. */
#define GF_ROW_SIMD(NAME, SHIFTS)                                            \
  __attribute__((target("ssse3"))) static void NAME(                         \
      uint8_t *r, const uint8_t *up, size_t n, uint32_t bpp) {               \
    uint8_t m[16];                                                           \
    for (uint32_t j = 0; j < 16; j++)                                        \
      m[j] = (uint8_t)(16 - bpp + j % bpp);                                  \
    const __m128i bcast = _mm_loadu_si128((const __m128i *)m);               \
    __m128i carry = _mm_setzero_si128();                                     \
    size_t i = 0;                                                            \
    for (; i + 16 <= n; i += 16) {                                           \
      __m128i x = _mm_loadu_si128((const __m128i *)(r + i));                 \
      SHIFTS;                                                                \
      x = _mm_add_epi8(x, carry);                                            \
      carry = _mm_shuffle_epi8(x, bcast);                                    \
      if (up)                                                                \
        x = _mm_add_epi8(x, _mm_loadu_si128((const __m128i *)(up + i)));     \
      _mm_storeu_si128((__m128i *)(r + i), x);                               \
    }                                                                        \
    uint8_t c[32]; /* the carry, then the tail's running values */     \
    _mm_storeu_si128((__m128i *)c, carry);                                   \
    for (uint32_t j = 0; i < n; i++, j++) {                                  \
      c[j + bpp] = (uint8_t)(c[j] + r[i]);                                   \
      r[i] = up ? (uint8_t)(c[j + bpp] + up[i]) : c[j + bpp];                \
    }                                                                        \
  }
#define SH(k) x = _mm_add_epi8(x, _mm_slli_si128(x, k))
GF_ROW_SIMD(row_simd_1, (SH(1), SH(2), SH(4), SH(8)))
GF_ROW_SIMD(row_simd_2, (SH(2), SH(4), SH(8)))
GF_ROW_SIMD(row_simd_3, (SH(3), SH(6), SH(12)))
GF_ROW_SIMD(row_simd_4, (SH(4), SH(8)))
GF_ROW_SIMD(row_simd_5, (SH(5), SH(10)))
GF_ROW_SIMD(row_simd_6, (SH(6), SH(12)))
GF_ROW_SIMD(row_simd_7, (SH(7), SH(14)))
GF_ROW_SIMD(row_simd_8, (SH(8)))
#undef SH

static bool have_ssse3(void) {
  static int cached = -1; /* a benign race: every thread computes the same */
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("ssse3") ? 1 : 0;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}
#endif

typedef void (*row_fn)(uint8_t *, const uint8_t *, size_t, uint32_t);

static void unfilter_rows(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp,
                          row_fn row) {
  size_t stride = (size_t)w * bpp;
  for (uint32_t y = 0; y < h; y++) {
    uint8_t *r = px + (size_t)y * stride;
    row(r, y ? r - stride : NULL, stride, bpp);
  }
}

void gf_grad_unfilter_generic(uint8_t *px, uint32_t h, uint32_t w,
                              uint32_t bpp) {
  if (bpp >= 1 && bpp <= 8)
    unfilter_rows(px, h, w, bpp, row_scalar);
}

void gf_grad_unfilter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp) {
  if (bpp < 1 || bpp > 8)
    return; /* bpp is channels x bytes a sample: 1 to 8 */
  row_fn row = row_scalar;
#ifdef GF_GRAD_SSSE3
  static void (*const simd[9])(uint8_t *, const uint8_t *, size_t,
                               uint32_t) = {
      NULL,       row_simd_1, row_simd_2, row_simd_3, row_simd_4,
      row_simd_5, row_simd_6, row_simd_7, row_simd_8};
  if (have_ssse3())
    row = simd[bpp];
#endif
  unfilter_rows(px, h, w, bpp, row);
}

/* ---- the gradzstd codec: the gradient filter, then zstd --------------- */

static uint32_t grad_bpp(const gf_shape *s) {
  return s->channels * (s->dtype == GF_DTYPE_U16 ? 2u : 1u);
}

static int gradzstd_check(const void *src, size_t len, const gf_shape *stored) {
  return gf_zstd_check_frame(src, len, (size_t)gf_shape_bytes(stored));
}

static int gradzstd_filtered(const void *src, size_t len,
                             const gf_shape *stored, uint8_t *dst, size_t n) {
  (void)stored;
  return gf_zstd_decompress(src, len, dst, n);
}

static int gradzstd_unpack(const void *src, size_t len, const gf_shape *stored,
                           uint8_t *dst, size_t n) {
  int rc = gf_zstd_decompress(src, len, dst, n);
  if (rc == 0)
    gf_grad_unfilter(dst, stored->height, stored->width, grad_bpp(stored));
  return rc;
}

static int gradzstd_encode(const void *pixels, const gf_shape *shape, int level,
                           void **dst, size_t *dst_len) {
  size_t n = (size_t)gf_shape_bytes(shape);
  uint8_t *tmp = malloc(n);
  if (!tmp)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a %zu-byte gradzstd buffer", n);
  memcpy(tmp, pixels, n);
  gf_grad_filter(tmp, shape->height, shape->width, grad_bpp(shape));
  int rc = gf_zstd_compress(tmp, n, level ? level : 1, dst, dst_len);
  free(tmp);
  return rc;
}

const gf_codec_ops gf_codec_gradzstd = {
    .id = GF_CODEC_GRADZSTD,
    .name = "gradzstd",
    .caps = GF_CODEC_CAP_GPU_UNFILTER,
    .check = gradzstd_check,
    .unpack = gradzstd_unpack,
    .unpack_filtered = gradzstd_filtered,
    .encode = gradzstd_encode,
};
