/* The batch transform (see gf_transform in gpufeed.h) on the CPU: the
 * per-sample random choices, the output shape rule, and the reference
 * implementation that host mode runs and that the CUDA kernels
 * (kernels/xform.cu) are held to, bit for bit.
 *
 * This header is plain C with no CUDA dependency; kernels/kernels.h
 * includes it so that the host code and the kernels share gf_xform_sample
 * and the float -> half conversions below (the only code compiled for
 * both sides).
 *
 * Every function may be called from any thread: none keeps state, except
 * gf_xform_ref's per-thread scratch buffer for gradient-filtered samples.
 *
 * The exact arithmetic, written down so any implementation can reproduce
 * it:
 *
 * Random choices. mix(z) is splitmix64's finaliser:
 *     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *     z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *     return z ^ (z >> 31);
 * with G = 0x9E3779B97F4A7C15 and all arithmetic mod 2^64:
 *     k = mix(seed + G);  k = mix((k ^ epoch) + G);  k = mix((k ^ index) + G);
 *     draw(i) = mix(k + (i + 1) * G)      i = 0: rows, 1: columns, 2: flip
 * A position among `count` choices is ((draw >> 32) * count) >> 32 (bias
 * below count / 2^32, far under any test's reach); flip is draw(2) >> 63.
 *
 * Crop window, per axis (source size s, output size o, pad p): the window's
 * first source row/column is
 *     centered (random_crop 0, or the padded image s + 2p is smaller than
 *     o):  (s - o) / 2 with C's division, i.e. rounded toward zero: an odd
 *     surplus row goes to the bottom, both when cropping (the extra row
 *     dropped is the last) and when padding (the extra zero row is added
 *     below), as TensorFlow's resize_with_crop_or_pad and torchvision's
 *     CenterCrop padding do;
 *     random: u - p with u uniform in 0 .. s + 2p - o.
 *
 * Values. Source pixel x (0..255, or 0 for padding) of channel c becomes
 *     float v = ((float)x - mean[c]) / std[c]      (std 0 taken as 1)
 * in IEEE single precision, round to nearest even, no fused operations;
 * f16 and bf16 round v to nearest even (gf_f32_to_f16/gf_f32_to_bf16); u8
 * is x itself. The kernels compute the same expression (__fsub_rn,
 * __fdiv_rn), so GPU and CPU outputs are identical bytes. */
#ifndef GF_TRANSFORM_H
#define GF_TRANSFORM_H

#include "gpufeed.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__CUDACC__)
#define GF_XFORM_HD __host__ __device__
#else
#define GF_XFORM_HD
#endif

/* Bounds that keep every index of the transform in 32-bit arithmetic on
 * the GPU (source and output sides up to 2^20, crop offsets within
 * +-2^22, one sample's output under 2^31 elements). */
#define GF_XFORM_MAX_DIM (1u << 20)
#define GF_XFORM_MAX_PAD 65535u
#define GF_XFORM_MAX_CROP (1 << 22)
#define GF_XFORM_MAX_SAMPLE_ELEMS (1ull << 31)
/* The GPU unfilters a gradient-filtered sample in shared memory, two rows
 * at least of the columns the crop window needs (from column 0 to the
 * window's right edge): width x channels may not exceed this (6826 RGB or
 * 5120 RGBA pixels). Wider filtered samples are refused with
 * GF_EUNSUPPORTED by gf_xform_validate(..., GF_XFORM_FOR_GPU): unfilter
 * them on the CPU (gf_decode does) and pass them unfiltered. */
#define GF_XFORM_GPU_FILTERED_ROW 20480u

/* One sample of a batch as the transform sees it. */
typedef struct gf_xform_sample {
  uint64_t src_offset; /* where its HWC uint8 bytes start in the source */
  uint32_t h, w, c;    /* its shape; c must equal the output's channels */
  int32_t crop_y;      /* top-left of the output window in source pixels; */
  int32_t crop_x;      /*   negative or past the edge: zero padding */
  uint32_t flip;       /* 1: the window is mirrored left-right */
  uint32_t filtered;   /* 1: the bytes are gradient-filtered (gradzstd
                          decompressed but not unfiltered): the transform
                          unfilters them first */
  uint32_t reserved0;  /* zero */
} gf_xform_sample;

/* Bytes of one output element of `dtype` (gf_out_dtype): 1, 4, 2, 2; 0 for
 * an unknown value. */
size_t gf_out_dtype_size(uint32_t dtype);

/* Checks a transform: known dtype and layout, random_crop/hflip 0 or 1,
 * height and width both zero or both set (each at most GF_XFORM_MAX_DIM),
 * pad at most GF_XFORM_MAX_PAD, means and stds finite, stds not negative,
 * reserved fields zero. Returns 0 or -EINVAL naming the field. */
int gf_xform_check(const gf_transform *t);

/* The output shape of a batch of n >= 1 samples of `shapes` (HWC u8):
 * out_h/out_w are t's height/width, or the samples' own when t's are 0
 * (every sample must then have the same height and width); out_c is the
 * samples' channel count, which all must share. Returns 0, GF_ESHAPE
 * (mixed shapes, naming the first sample that differs), GF_EUNSUPPORTED
 * (a 16-bit sample, or channels outside 1..4) or -EINVAL. */
int gf_xform_out_shape(const gf_transform *t, const gf_shape *shapes,
                       uint32_t n, uint32_t *out_h, uint32_t *out_w,
                       uint32_t *out_c);

/* Bytes of a dense output of n samples: n * out_h * out_w * out_c *
 * gf_out_dtype_size(dtype), in *bytes. Returns 0 or -EOVERFLOW. */
int gf_xform_out_bytes(uint32_t n, uint32_t out_h, uint32_t out_w,
                       uint32_t out_c, uint32_t dtype, uint64_t *bytes);

/* The random (or centered) crop position and flip of one sample of h x w
 * pixels cut to out_h x out_w, from (t->seed, epoch, sample_index) as the
 * header comment defines. When t->hflip is 0, *flip is 0. Any pointer
 * argument but t may be NULL when that output is not wanted. */
void gf_xform_params(const gf_transform *t, uint64_t epoch,
                     uint64_t sample_index, uint32_t h, uint32_t w,
                     uint32_t out_h, uint32_t out_w, int32_t *crop_y,
                     int32_t *crop_x, uint32_t *flip);

/* Fills *s for a sample of `shape` stored at src_offset (gf_xform_params
 * for the window and flip). filtered: 1 when the bytes are still
 * gradient-filtered. */
void gf_xform_sample_init(const gf_transform *t, uint64_t epoch,
                          uint64_t sample_index, uint64_t src_offset,
                          const gf_shape *shape, uint32_t out_h,
                          uint32_t out_w, uint32_t filtered,
                          gf_xform_sample *s);

/* Checks samples[0..n) against a source of src_len bytes and the output
 * shape before anything reads them: 1 <= h, w <= GF_XFORM_MAX_DIM, c ==
 * out_c (1..4), each sample's h*w*c bytes inside the source, |crop| <=
 * GF_XFORM_MAX_CROP, flip and filtered 0 or 1, reserved zero; the output
 * sides within GF_XFORM_MAX_DIM and a sample's output under
 * GF_XFORM_MAX_SAMPLE_ELEMS elements. With GF_XFORM_FOR_GPU, a filtered
 * sample must also fit GF_XFORM_GPU_FILTERED_ROW. Returns 0, GF_ESHAPE
 * (naming the sample), GF_EUNSUPPORTED or -EINVAL. */
#define GF_XFORM_FOR_GPU 1u
int gf_xform_validate(const gf_xform_sample *samples, uint32_t n,
                      uint64_t src_len, uint32_t out_h, uint32_t out_w,
                      uint32_t out_c, unsigned flags);

/* The CPU reference: writes the dense output of samples[0..n) (read from
 * src, src_len bytes) into dst, n * out_h * out_w * out_c elements of
 * t->out_dtype in t->layout. For output pixel (y, x) of a sample the
 * source pixel is (crop_y + y, crop_x + (flip ? out_w - 1 - x : x));
 * outside the source it is 0 (padding), inside it is the pixel (after
 * unfiltering when `filtered`); then the value rule of the header comment.
 * t's height/width are not consulted: out_h/out_w are the output's. src and
 * dst must not overlap. Returns 0, -EINVAL, GF_ESHAPE, GF_EUNSUPPORTED
 * (from gf_xform_check/gf_xform_validate; dst is untouched then) or -ENOMEM
 * (the scratch for a filtered sample). Any thread. */
int gf_xform_ref(const gf_transform *t, const uint8_t *src, uint64_t src_len,
                 const gf_xform_sample *samples, uint32_t n, uint32_t out_h,
                 uint32_t out_w, uint32_t out_c, void *dst);

/* mean[c] and std[c] as the value rule uses them (std 0 becomes 1), for
 * c < 4. */
void gf_xform_norm(const gf_transform *t, float mean[4], float std[4]);

/* IEEE binary32 (as its bits) to binary16 bits, round to nearest even:
 * overflow gives infinity, subnormal halves are produced, NaN stays a
 * (quiet) NaN with the sign and the payload's top bits. */
static inline GF_XFORM_HD uint16_t gf_f32_to_f16(uint32_t x) {
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) /* NaN */
    return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x1FFu));
  if (ax >= 0x477FF000u) /* at or past 65520, halfway above 65504: inf */
    return (uint16_t)(sign | 0x7C00u);
  if (ax >= 0x38800000u) { /* normal half: 2^-14 and up */
    uint32_t m = ax - 0x38000000u; /* exponent rebiased from 127 to 15 */
    m += 0xFFFu + ((m >> 13) & 1u);
    return (uint16_t)(sign | (m >> 13));
  }
  if (ax < 0x33000000u) /* under 2^-25, half the smallest subnormal: 0 */
    return (uint16_t)sign;
  /* Subnormal: the value in units of 2^-24 is mant * 2^(e - 126). */
  uint32_t e = ax >> 23;
  uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126u - e; /* 14 .. 24 */
  uint32_t r = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (r & 1u)))
    r++; /* may carry into the smallest normal: the right bits anyway */
  return (uint16_t)(sign | r);
}

/* IEEE binary32 bits to bfloat16 bits, round to nearest even; NaN stays a
 * quiet NaN with the sign and payload's top bits. */
static inline GF_XFORM_HD uint16_t gf_f32_to_bf16(uint32_t x) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return (uint16_t)((x >> 16) | 0x0040u);
  return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

#ifdef __cplusplus
}
#endif
#endif /* GF_TRANSFORM_H */
