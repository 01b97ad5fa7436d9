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
 * gf_xform_ref's per-thread scratch buffer (common/scratch.h) for
 * gradient-filtered samples and a resized sample's weight tables (out_h x
 * (8 + 4 k) + out_w x (8 + 4 k) bytes, k <= 2 x in/out + 3 taps: about
 * 20 KiB at 224x224 from 500 px, kept by the thread up to 32 MiB). The GPU
 * resamples a band of up to 32 output rows a block, a thread an output
 * column (kernels/resize_band.cuh: a column's taps and weights once a band,
 * in registers; the horizontal sums once a source row and output column,
 * kept in shared memory for the vertical pass), about (2 in/out + 3) x
 * (in/out + 1) taps an output pixel, where the output is at most 256 wide
 * and the shrink under ~3.2x across (nearly every photo to 224); other
 * samples go as 32x32 tiles in two passes through shared memory
 * (kernels/resize_tile.h), and a tile whose taps do not fit (shrinks
 * beyond ~20-40x a side) pixel by pixel, about (2 in/out + 3)^2 taps a
 * pixel (a 4000-pixel window to 224 reads ~1600 pixels an output pixel).
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
 * __fdiv_rn), so GPU and CPU outputs are identical bytes.
 *
 * Resize modes (gf_transform.resize != GF_RESIZE_NONE). gf_xform_window
 * gives, from (seed, epoch, index, source h x w) alone, before any decode:
 * a source window (y, x, wh, ww) inside the image, the size rs_h x rs_w it
 * is resampled to, and the output's top-left (off_y, off_x) inside that
 * resampled window (outside it: zero padding, as CenterCrop pads), plus
 * the flip. Output H x W = t->height x t->width.
 *   RANDOM_RESIZED_CROP, torchvision's RandomResizedCrop.get_params in
 *   double precision: s0, s1 = scale (default 0.08, 1.0), r0, r1 = ratio
 *   (default 3.0/4.0, 4.0/3.0; given floats are widened to double);
 *   U(i) = (draw(i) >> 11) * 2^-53; for try t = 0..9, i = 3 + 4t:
 *     target = h*w * (s0 + (s1 - s0) * U(i));
 *     ar = exp(log r0 + (log r1 - log r0) * U(i+1));
 *     cw = rint(sqrt(target * ar)); ch = rint(sqrt(target / ar))
 *     (rint: round half to even, as Python's round);
 *     accepted when 0 < cw <= w and 0 < ch <= h: y = position among
 *     h - ch + 1 from draw(i+2), x = position among w - cw + 1 from
 *     draw(i+3) (the position rule above).
 *   Fallback: w/h < r0: cw = w, ch = rint(w / r0); w/h > r1: ch = h,
 *   cw = rint(h * r1); else the whole image; both at least 1; y = (h -
 *   ch) / 2, x = (w - cw) / 2. rs = H x W, off = 0.
 *   SHORTER_CENTER_CROP, torchvision's Resize(S) then CenterCrop(H, W): S
 *   = resize_size, or (256 * H + 112) / 224 when 0; the window is the
 *   whole image; w <= h: rs_w = S, rs_h = (uint32)((double)(S * h) / w),
 *   else rs_h = S, rs_w = (uint32)((double)(S * w) / h) (Python's
 *   int(S * long / short); gf_xform_geom, also run by the kernel, so a
 *   sample carries only its window); per axis (rs, out o): rs >= o: off = (rs - o)
 *   / 2 rounded half to even (Python's round); else off = -((o - rs) / 2)
 *   (the padding CenterCrop adds). The crop is thus exact: the output is
 *   the resampled whole image's pixels, not a re-derived source window.
 *   EXACT: the whole image, rs = H x W, off = 0.
 *   Flip: draw(2) >> 63 when hflip, in every mode.
 *   The libm functions exp, log and sqrt are the only non-IEEE-exact
 *   steps (glibc's are correctly rounded in practice).
 *
 * Decoded regions (a JPEG decoded as only its window, gf_xform_region).
 * The window is chosen from the full image's size as above, before the
 * decode. The decoder gets the full-scale rectangle gf_xform_region_rect
 * names and a scale 1/d (d in 1, 2, 4, 8; always 1 with DCT scaling off
 * and without a resize mode) and returns rows [y0, y1) and columns
 * [x0, x1) of the image scaled to ceil(h/d) x ceil(w/d), those that cover
 * the rectangle. The sample's window in the region's coordinates is then,
 * per axis (full-scale window start a, size n; region [y0, y1)):
 *     lo = (2a + d) / (2d);  hi = (2(a + n) + d) / (2d)
 * (a/d and (a + n)/d rounded half up; integer division), clamped into
 * [y0, y1) with lo < hi; the window starts at lo - y0, its size is
 * hi - lo. With d = 1 that is the window itself moved by the region's
 * origin: the output is byte-identical to a full decode's. With d > 1,
 * geom_h x geom_w is the full-scale window's size, so SHORTER_CENTER_CROP's
 * resampled size and crop offsets follow from the full image and the eval
 * crop stays centred where a full decode puts it (RANDOM_RESIZED_CROP and
 * EXACT resample to the output size whatever the window). Flip is
 * unchanged. The filter below then runs over the scaled window as over any
 * window: the output differs from a full decode's by the scaled IDCT's own
 * smoothing and the rounding of the window's edges to whole scaled pixels
 * (at most d/2 source pixels; measured in docs/TRANSFORMS.md).
 * GF_RESIZE_NONE: d = 1, the crop's top-left moved by the region's origin
 * (negative where the crop pads).
 *
 * Resampling (the same in gf_xform_ref and the kernel; the helpers below
 * are compiled for both). The weights are made in single precision with
 * no fused operations, then turned into 14-bit fixed point; the sums are
 * integer arithmetic, exact on any machine. Per axis, window size in,
 * resampled size out:
 *     scale = in / out; antialias (resize 1) and scale >= 1: support =
 *     scale, invscale = 1 / scale; else support = 1, invscale = 1;
 *     for resampled index i: center = scale * ((float)i + 0.5);
 *     lo = max((int)(center - support + 0.5), 0);
 *     hi = min((int)(center + support + 0.5), in);
 *     w_j = tri(((float)j - center + 0.5) * invscale), j = lo .. hi-1,
 *     tri(t) = max(0, 1 - |t|); total = sum of w_j in order; w_j / total
 *     when total != 0;
 *     W_j = (int)(w_j * 16384 + 0.5)   (float; both steps exact: 0 <= w_j
 *     <= 1, so W_j = floor(w_j * 2^14 + 1/2), 0 .. 16384)
 * This is torch's antialiased upsample (the "aa" path, antialias=True,
 * also PIL's BILINEAR); with no_antialias (resize 2) it is plain bilinear
 * with align_corners=False. A resampled pixel of channel ch, with
 * clip8(a) = min(a >> 14, 255) (a is never negative):
 *     for each row tap i: h_i = clip8(8192 + sum over column taps j of
 *     WX_j * p[i][j])  (the horizontal pass: a uint8 intermediate);
 *     x = clip8(8192 + sum over row taps i of WY_i * h_i)
 * in unsigned 32-bit integers (no sum reaches 2^23): horizontal then
 * vertical, each pass rounded to uint8 half up, as torch's uint8 CPU
 * resize (torchvision.transforms.v2 on uint8 tensors) and PIL do; x is the
 * resampled uint8 pixel, which the value rule above turns into the output
 * (torchvision's uint8 recipe: resize the uint8 image, then convert and
 * normalise). The output (y, x) is resampled pixel (off_y + y, off_x +
 * (flip ? W - 1 - x : x)), 0 outside rs_h x rs_w. The kernel makes the
 * weights with the same float operations (__fmul_rn, __fadd_rn,
 * __fdiv_rn) and the sums in integers, so GPU and CPU outputs are
 * identical bytes. Against torch's uint8 path, whose weights are the same
 * formula in double precision scaled by 2^P with P = 14 whenever the
 * largest weight of the axis is 1/2 or more (shrinks under about 2x) and
 * more bits beyond, a weight differs only where float and double round
 * w_j * 2^14 to different sides of a half, and the output by one pixel
 * unit, rarely; against the float image path (torchvision's v1 tensor
 * resize, torch on CUDA: no intermediate rounding) by at most one pixel
 * unit, often (measured by bench/resize_vs_torchvision.py). */
#ifndef GF_TRANSFORM_H
#define GF_TRANSFORM_H

#include "gpufeed.h"

#include <math.h>
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
  int32_t crop_x;      /*   negative or past the edge: zero padding.
                          Resize: the source window's top-left, inside */
  uint8_t flip;        /* 1: the window is mirrored left-right */
  uint8_t filtered;    /* 1: the bytes are gradient-filtered (gradzstd
                          decompressed but not unfiltered): the transform
                          unfilters them first */
  uint8_t resize;      /* 0: crop/pad; else the gf_resize_mode in bits
                          0-1, plus GF_XFORM_NO_AA for plain bilinear */
  uint8_t reserved0;   /* zero */
  uint32_t win_h, win_w; /* resize: the source window's size (0 else) */
  uint32_t geom_h, geom_w; /* resize: the window's size at the image's full
                              scale when the bytes are a reduced-scale
                              decode (a JPEG's DCT scaling, see "Decoded
                              regions" above), which SHORTER_CENTER_CROP's
                              resampled size and offsets follow from; 0 0:
                              win_h x win_w (0 0 also without resize) */
} gf_xform_sample;

#define GF_XFORM_NO_AA 4u
/* A resized sample's window is resampled to rs_h x rs_w and the output's
 * top-left is (off_y, off_x) in it: gf_xform_geom below, from the mode,
 * the window's size (geom_h x geom_w when set: gf_xform_geom_size), the
 * output size and (SHORTER_CENTER_CROP) the resolved shorter side S
 * (gf_xform_resize_size), so a sample stays 48 bytes. */

/* A sample's window, from gf_xform_window (see the header comment). For
 * GF_RESIZE_NONE: the crop window (y, x may be negative, the window may
 * pass the edge: padding), rs = wh x ww, off 0. */
typedef struct gf_xform_win {
  int32_t y, x;         /* the source window's top-left */
  uint32_t wh, ww;      /* its size */
  uint32_t rs_h, rs_w;  /* what it is resampled to */
  int32_t off_y, off_x; /* the output's top-left in the resampled window */
  uint32_t flip;        /* 1: mirrored left-right after resampling */
  uint32_t fallback;    /* RANDOM_RESIZED_CROP: 1 when the ten tries
                           failed and the central fallback was taken */
} gf_xform_win;

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

/* The window of one sample of h x w pixels (h, w >= 1) under t (checked
 * with gf_xform_check; height/width set for a resize mode), from
 * (t->seed, epoch, index) and the source size alone, as the header comment
 * defines: callable before decode. Without a resize mode the output size
 * is t's height x width, or h x w when those are 0. */
void gf_xform_window(const gf_transform *t, uint64_t epoch, uint64_t index,
                     uint32_t h, uint32_t w, gf_xform_win *out);

/* A sample decoded as a region of its image (a JPEG's window, possibly at
 * a reduced DCT scale; see "Decoded regions" in the header comment): the
 * image's full size, the scale 1/denom, and the region's top-left in the
 * scaled image (the decoder's y0, x0). denom 0: not a region (the sample
 * is its whole image at full scale). */
typedef struct gf_xform_region {
  uint32_t full_h, full_w;
  uint32_t denom; /* 1, 2, 4 or 8; 0: none */
  uint32_t y0, x0;
} gf_xform_region;

/* The full-scale rectangle of an h x w image that a sample needs decoded
 * under t (checked, height/width set) in epoch `epoch`: the window of
 * gf_xform_window (resize modes), or the crop window's part inside the
 * image (GF_RESIZE_NONE; at least 1 x 1: a window wholly in the padding
 * keeps the nearest pixel). *y, *x, *rh, *rw: the rectangle; *want_h,
 * *want_w: the smallest size it may be scaled down to without resampling
 * up (the output size; SHORTER_CENTER_CROP: the resampled whole image,
 * rs_h x rs_w; GF_RESIZE_NONE: the rectangle itself, so no scaling). */
void gf_xform_region_rect(const gf_transform *t, uint64_t epoch,
                          uint64_t index, uint32_t h, uint32_t w,
                          uint32_t *y, uint32_t *x, uint32_t *rh,
                          uint32_t *rw, uint32_t *want_h, uint32_t *want_w);

/* gf_xform_sample_init for a sample whose bytes (shape: the decoded
 * region, HWC) are region *r of its image: the window (and flip) is taken
 * from the full image (r->full_h x r->full_w) as gf_xform_sample_init
 * would, then expressed in the region's coordinates ("Decoded regions" in
 * the header comment). r->denom 0 is gf_xform_sample_init itself. */
void gf_xform_sample_init_region(const gf_transform *t, uint64_t epoch,
                                 uint64_t sample_index, uint64_t src_offset,
                                 const gf_shape *shape, uint32_t out_h,
                                 uint32_t out_w, const gf_xform_region *r,
                                 gf_xform_sample *s);

/* SHORTER_CENTER_CROP's shorter side for output height out_h:
 * t->resize_size, or (256 * out_h + 112) / 224 when 0 (clamped to 2^24);
 * 0 for the other modes. */
uint32_t gf_xform_resize_size(const gf_transform *t, uint32_t out_h);

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
 * GF_XFORM_MAX_CROP, flip and filtered 0 or 1, reserved zero, geom_h and
 * geom_w both 0 or (resized samples only) both 1..GF_XFORM_MAX_RESAMPLED;
 * the output
 * sides within GF_XFORM_MAX_DIM and a sample's output under
 * GF_XFORM_MAX_SAMPLE_ELEMS elements. With GF_XFORM_FOR_GPU, a filtered
 * sample must also fit GF_XFORM_GPU_FILTERED_ROW. Returns 0, GF_ESHAPE
 * (naming the sample), GF_EUNSUPPORTED or -EINVAL. */
#define GF_XFORM_FOR_GPU 1u
int gf_xform_validate(const gf_xform_sample *samples, uint32_t n,
                      uint64_t src_len, uint32_t out_h, uint32_t out_w,
                      uint32_t out_c, unsigned flags);

/* Columns [0, *vw) and rows [0, *vh) of the source that a filtered sample's
 * window needs (the unfilter is a prefix sum from the top-left corner):
 * 0 x 0 when the window misses the image. */
void gf_xform_filtered_extent(const gf_xform_sample *s, uint32_t out_h,
                              uint32_t out_w, uint32_t *vh, uint32_t *vw);

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

/* Single-precision operations that are never fused (contracted), on
 * both sides. */
#if defined(__CUDA_ARCH__)
#define GF_FMUL(a, b) __fmul_rn((a), (b))
#define GF_FADD(a, b) __fadd_rn((a), (b))
#define GF_FSUB(a, b) __fsub_rn((a), (b))
#define GF_FDIV(a, b) __fdiv_rn((a), (b))
#else
#define GF_FMUL(a, b) ((float)(a) * (float)(b))
#define GF_FADD(a, b) ((float)(a) + (float)(b))
#define GF_FSUB(a, b) ((float)(a) - (float)(b))
#define GF_FDIV(a, b) ((float)(a) / (float)(b))
#endif

/* One axis of the resampling (header comment): a window of `in` pixels to
 * `out`, antialiased (aa 1) or plain bilinear. */
typedef struct gf_rs_axis {
  float scale, support, invscale;
  int32_t in;
} gf_rs_axis;

static inline GF_XFORM_HD void gf_rs_axis_init(gf_rs_axis *a, uint32_t in,
                                               uint32_t out, uint32_t aa) {
  float scale = GF_FDIV((float)in, (float)out);
  int shrink = aa && scale >= 1.0f;
  a->scale = scale;
  a->support = shrink ? scale : 1.0f;
  a->invscale = shrink ? GF_FDIV(1.0f, scale) : 1.0f;
  a->in = (int32_t)in;
}

/* The taps [*lo, *lo + *n) of resampled index i and its center. */
static inline GF_XFORM_HD float gf_rs_taps(const gf_rs_axis *a, uint32_t i,
                                           int32_t *lo, int32_t *n) {
  float center = GF_FMUL(a->scale, GF_FADD((float)i, 0.5f));
  int32_t l = (int32_t)GF_FADD(GF_FSUB(center, a->support), 0.5f);
  int32_t h = (int32_t)GF_FADD(GF_FADD(center, a->support), 0.5f);
  if (l < 0)
    l = 0;
  if (h > a->in)
    h = a->in;
  *lo = l;
  *n = h > l ? h - l : 0;
  return center;
}

/* The unnormalised weight of tap j (absolute index) around center. */
static inline GF_XFORM_HD float gf_rs_tri(const gf_rs_axis *a, int32_t j,
                                          float center) {
  float t = GF_FMUL(GF_FADD(GF_FSUB((float)j, center), 0.5f), a->invscale);
  t = t < 0.0f ? -t : t;
  return t < 1.0f ? GF_FSUB(1.0f, t) : 0.0f;
}

/* A normalised weight (0 .. 1) in the 14-bit fixed point of the header
 * comment: floor(w * 2^14 + 1/2), both float steps exact. */
#define GF_RS_PREC 14u
#define GF_RS_HALF (1u << (GF_RS_PREC - 1u))
static inline GF_XFORM_HD uint32_t gf_rs_wq(float w) {
  return (uint32_t)GF_FADD(GF_FMUL(w, (float)(1u << GF_RS_PREC)), 0.5f);
}

/* Tap j's fixed-point weight: its triangle value over the taps' total
 * (summed in tap order; a total of 0 leaves the value as it is). */
static inline GF_XFORM_HD uint32_t gf_rs_weight(const gf_rs_axis *a,
                                                int32_t j, float center,
                                                float total) {
  float v = gf_rs_tri(a, j, center);
  return gf_rs_wq(total != 0.0f ? GF_FDIV(v, total) : v);
}

/* A pass's sum (GF_RS_HALF plus the weighted taps) to its uint8 value:
 * rounded half up, clamped. */
static inline GF_XFORM_HD uint32_t gf_rs_clip8(uint32_t acc) {
  uint32_t v = acc >> GF_RS_PREC;
  return v > 255u ? 255u : v;
}

/* The resampled size and the output's offset in it for a window of wh x
 * ww, mode `resize` (a gf_xform_sample's), output oh x ow, shorter side S
 * (SHORTER_CENTER_CROP): the header comment's rule; sides clamped to
 * 2^24 (beyond any valid image of the limits: the arithmetic stays
 * exact). */
#define GF_XFORM_MAX_RESAMPLED (1u << 24)
static inline GF_XFORM_HD void gf_xform_geom(uint32_t resize, uint32_t wh,
                                             uint32_t ww, uint32_t oh,
                                             uint32_t ow, uint32_t S,
                                             uint32_t *rs_h, uint32_t *rs_w,
                                             int32_t *off_y, int32_t *off_x) {
  if ((resize & 3u) != GF_RESIZE_SHORTER_CENTER_CROP) {
    *rs_h = oh;
    *rs_w = ow;
    *off_y = *off_x = 0;
    return;
  }
  double rh, rw;
  if (ww <= wh) {
    rw = S;
    rh = (double)((uint64_t)S * wh) / (double)ww;
  } else {
    rh = S;
    rw = (double)((uint64_t)S * ww) / (double)wh;
  }
  if (rh > GF_XFORM_MAX_RESAMPLED)
    rh = GF_XFORM_MAX_RESAMPLED;
  if (rw > GF_XFORM_MAX_RESAMPLED)
    rw = GF_XFORM_MAX_RESAMPLED;
  uint32_t r[2] = {(uint32_t)rh, (uint32_t)rw}, o[2] = {oh, ow};
  if (r[0] < 1) /* a sliver: torchvision would fail; one row */
    r[0] = 1;
  if (r[1] < 1)
    r[1] = 1;
  int32_t off[2];
  for (int k = 0; k < 2; k++) {
    if (r[k] < o[k]) {
      off[k] = -(int32_t)((o[k] - r[k]) / 2);
    } else {
      uint32_t d = r[k] - o[k], q = d / 2;
      if ((d & 1u) && (q & 1u)) /* x.5 rounds to the even neighbour */
        q++;
      off[k] = (int32_t)q;
    }
  }
  *rs_h = r[0];
  *rs_w = r[1];
  *off_y = off[0];
  *off_x = off[1];
}

/* The window size a resized sample's geometry follows from: geom_h x
 * geom_w when set (a reduced-scale decode), else win_h x win_w. */
static inline GF_XFORM_HD void gf_xform_geom_size(const gf_xform_sample *s,
                                                  uint32_t *gh,
                                                  uint32_t *gw) {
  *gh = s->geom_h ? s->geom_h : s->win_h;
  *gw = s->geom_w ? s->geom_w : s->win_w;
}

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
