/* The batch transform on the CPU: random choices, shape rule, checks and
 * the reference that host mode runs (see transform.h for the arithmetic
 * every implementation must reproduce). */
#include "xform/transform.h"

#include "common/common.h"
#include "common/scratch.h"
#include "decode/decode.h" /* gf_grad_unfilter */

#include <math.h> /* isfinite */
#include <string.h>

#define GF_GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

size_t gf_out_dtype_size(uint32_t dtype) {
  switch (dtype) {
  case GF_OUT_U8:
    return 1;
  case GF_OUT_F32:
    return 4;
  case GF_OUT_F16:
  case GF_OUT_BF16:
    return 2;
  default:
    return 0;
  }
}

static int bad_field(const char *what) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "invalid transform: %s", what);
}

int gf_xform_check(const gf_transform *t) {
  if (!t)
    return bad_field("the transform is NULL");
  if (t->out_dtype > GF_OUT_BF16)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: out_dtype %u is not a gf_out_dtype "
                   "(0 u8, 1 f32, 2 f16, 3 bf16)",
                   t->out_dtype);
  if (t->layout > GF_LAYOUT_NCHW)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: layout %u is not a gf_layout "
                   "(0 NHWC, 1 NCHW)",
                   t->layout);
  if (t->random_crop > 1 || t->hflip > 1)
    return bad_field("random_crop and hflip must be 0 or 1");
  if ((t->height == 0) != (t->width == 0))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: height %u and width %u must both be "
                   "set or both be 0 (the samples' own size)",
                   t->height, t->width);
  if (t->height > GF_XFORM_MAX_DIM || t->width > GF_XFORM_MAX_DIM)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: output %ux%u exceeds the %u-pixel "
                   "side limit",
                   t->height, t->width, GF_XFORM_MAX_DIM);
  if (t->pad > GF_XFORM_MAX_PAD)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: pad %u exceeds %u", t->pad,
                   GF_XFORM_MAX_PAD);
  for (int c = 0; c < 4; c++) {
    if (!isfinite(t->mean[c]) || !isfinite(t->std[c]) || t->std[c] < 0)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "invalid transform: channel %d has mean %g and std %g; "
                     "both must be finite and std not negative (0 means 1)",
                     c, (double)t->mean[c], (double)t->std[c]);
  }
  if (t->reserved[0])
    return bad_field("reserved[] must be 0");
  if (t->resize > GF_RESIZE_EXACT)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: resize %u is not a gf_resize_mode "
                   "(0 none, 1 random resized crop, 2 shorter side + "
                   "center crop, 3 exact)",
                   t->resize);
  if (t->resize == GF_RESIZE_NONE) {
    if (t->resize_size || t->no_antialias || t->scale[0] || t->scale[1] ||
        t->ratio[0] || t->ratio[1])
      return bad_field("resize_size, no_antialias, scale and ratio must be "
                       "0 without a resize mode");
    return 0;
  }
  if (t->height == 0)
    return bad_field("a resize mode needs the output height and width");
  if (t->random_crop || t->pad)
    return bad_field("random_crop and pad must be 0 with a resize mode "
                     "(the resize mode chooses the window)");
  if (t->no_antialias > 1)
    return bad_field("no_antialias must be 0 or 1");
  if (t->resize_size > GF_XFORM_MAX_DIM ||
      (t->resize_size && t->resize != GF_RESIZE_SHORTER_CENTER_CROP))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: resize_size %u is for "
                   "SHORTER_CENTER_CROP only, at most %u",
                   t->resize_size, GF_XFORM_MAX_DIM);
  bool rrc = t->resize == GF_RESIZE_RANDOM_RESIZED_CROP;
  bool sdef = t->scale[0] == 0 && t->scale[1] == 0;
  bool rdef = t->ratio[0] == 0 && t->ratio[1] == 0;
  if (!rrc && (!sdef || !rdef))
    return bad_field("scale and ratio are for RANDOM_RESIZED_CROP only");
  if (!sdef && !(t->scale[0] > 0 && t->scale[0] <= t->scale[1] &&
                 t->scale[1] <= 1))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: scale {%g, %g} must satisfy 0 < "
                   "scale[0] <= scale[1] <= 1 ({0, 0}: 0.08 to 1)",
                   (double)t->scale[0], (double)t->scale[1]);
  if (!rdef && !(t->ratio[0] > 0 && t->ratio[0] <= t->ratio[1] &&
                 isfinite(t->ratio[1])))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: ratio {%g, %g} must satisfy 0 < "
                   "ratio[0] <= ratio[1], finite ({0, 0}: 3/4 to 4/3)",
                   (double)t->ratio[0], (double)t->ratio[1]);
  return 0;
}

int gf_xform_out_shape(const gf_transform *t, const gf_shape *shapes,
                       uint32_t n, uint32_t *out_h, uint32_t *out_w,
                       uint32_t *out_c) {
  int rc = gf_xform_check(t);
  if (rc)
    return rc;
  if (!shapes || n == 0 || !out_h || !out_w || !out_c)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_xform_out_shape needs at least one sample and three "
                   "output pointers");
  const gf_shape *s0 = &shapes[0];
  for (uint32_t i = 0; i < n; i++) {
    const gf_shape *s = &shapes[i];
    if (s->dtype != GF_DTYPE_U8)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is 16-bit; the transform takes 8-bit "
                     "samples only",
                     i);
    if (s->channels < 1 || s->channels > 4)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels; the transform takes "
                     "1 to 4",
                     i, s->channels);
    if (s->channels != s0->channels)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels but sample 0 has %u; "
                     "a batch's samples must agree on channels (set the "
                     "loader's channels to convert them)",
                     i, s->channels, s0->channels);
    if (t->height == 0 &&
        (s->height != s0->height || s->width != s0->width))
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is %ux%u but sample 0 is %ux%u; "
                     "without a fixed output size (transform height/width) "
                     "every sample must have the same size",
                     i, s->height, s->width, s0->height, s0->width);
  }
  *out_h = t->height ? t->height : s0->height;
  *out_w = t->width ? t->width : s0->width;
  *out_c = s0->channels;
  if (*out_h == 0 || *out_w == 0 || *out_h > GF_XFORM_MAX_DIM ||
      *out_w > GF_XFORM_MAX_DIM)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "output size %ux%u is outside 1..%u", *out_h, *out_w,
                   GF_XFORM_MAX_DIM);
  return 0;
}

int gf_xform_out_bytes(uint32_t n, uint32_t out_h, uint32_t out_w,
                       uint32_t out_c, uint32_t dtype, uint64_t *bytes) {
  uint64_t b = gf_out_dtype_size(dtype);
  if (!bytes || b == 0 || !gf_mul_u64(b, n, &b) || !gf_mul_u64(b, out_h, &b) ||
      !gf_mul_u64(b, out_w, &b) || !gf_mul_u64(b, out_c, &b))
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a batch of %u samples of %ux%ux%u (dtype %u) does not "
                   "have a representable size",
                   n, out_h, out_w, out_c, dtype);
  *bytes = b;
  return 0;
}

/* One axis of the window: see the header comment. Sizes beyond the
 * transform's limits still give a defined (clamped) answer; validation
 * refuses them later. */
static int32_t window_start(uint32_t s, uint32_t o, uint32_t p, bool random,
                            uint64_t draw) {
  int64_t size = s, out = o, pad = p, v;
  if (!random || size + 2 * pad < out) {
    v = (size - out) / 2;
  } else {
    uint64_t count = (uint64_t)(size + 2 * pad - out + 1);
    if (count > UINT32_MAX)
      count = UINT32_MAX;
    v = (int64_t)(((draw >> 32) * count) >> 32) - pad;
  }
  if (v > INT32_MAX)
    v = INT32_MAX;
  if (v < INT32_MIN)
    v = INT32_MIN;
  return (int32_t)v;
}

/* The key of one sample's draws: draw(i) = mix64(k + (i + 1) * G). */
static uint64_t sample_key(uint64_t seed, uint64_t epoch, uint64_t index) {
  uint64_t k = mix64(seed + GF_GOLDEN);
  k = mix64((k ^ epoch) + GF_GOLDEN);
  return mix64((k ^ index) + GF_GOLDEN);
}

static uint64_t draw(uint64_t k, uint64_t i) {
  return mix64(k + (i + 1) * GF_GOLDEN);
}

/* A position among count >= 1 choices (the header's rule). */
static uint32_t position(uint64_t d, uint64_t count) {
  if (count > UINT32_MAX)
    count = UINT32_MAX;
  return (uint32_t)(((d >> 32) * count) >> 32);
}

static double unit(uint64_t d) { return (double)(d >> 11) * 0x1.0p-53; }

/* Python's round() of a non-negative double to an integer (half to even);
 * INT64_MAX for values beyond (the caller's bounds test refuses them). */
static int64_t round_even(double v) {
  if (!(v < 4.0e18))
    return INT64_MAX;
  return (int64_t)rint(v);
}

static void rrc_window(const gf_transform *t, uint64_t k, uint32_t h,
                       uint32_t w, gf_xform_win *o) {
  double s0 = 0.08, s1 = 1.0, r0 = 3.0 / 4.0, r1 = 4.0 / 3.0;
  if (t->scale[0] != 0 || t->scale[1] != 0) {
    s0 = t->scale[0];
    s1 = t->scale[1];
  }
  if (t->ratio[0] != 0 || t->ratio[1] != 0) {
    r0 = t->ratio[0];
    r1 = t->ratio[1];
  }
  double area = (double)h * (double)w;
  double lr0 = log(r0), lr1 = log(r1);
  for (uint64_t try_ = 0; try_ < 10; try_++) {
    uint64_t i = 3 + 4 * try_;
    double target = area * (s0 + (s1 - s0) * unit(draw(k, i)));
    double ar = exp(lr0 + (lr1 - lr0) * unit(draw(k, i + 1)));
    int64_t cw = round_even(sqrt(target * ar));
    int64_t ch = round_even(sqrt(target / ar));
    if (cw > 0 && cw <= (int64_t)w && ch > 0 && ch <= (int64_t)h) {
      o->y = (int32_t)position(draw(k, i + 2), (uint64_t)(h - ch + 1));
      o->x = (int32_t)position(draw(k, i + 3), (uint64_t)(w - cw + 1));
      o->wh = (uint32_t)ch;
      o->ww = (uint32_t)cw;
      return;
    }
  }
  double in_ratio = (double)w / (double)h;
  int64_t cw = w, ch = h;
  if (in_ratio < r0)
    ch = round_even((double)w / r0);
  else if (in_ratio > r1)
    cw = round_even((double)h * r1);
  if (ch < 1)
    ch = 1;
  if (cw < 1)
    cw = 1;
  if (ch > (int64_t)h)
    ch = h;
  if (cw > (int64_t)w)
    cw = w;
  o->wh = (uint32_t)ch;
  o->ww = (uint32_t)cw;
  o->y = (int32_t)((h - ch) / 2);
  o->x = (int32_t)((w - cw) / 2);
  o->fallback = 1;
}

uint32_t gf_xform_resize_size(const gf_transform *t, uint32_t out_h) {
  if (t->resize != GF_RESIZE_SHORTER_CENTER_CROP)
    return 0;
  uint64_t S = t->resize_size ? t->resize_size
                              : ((uint64_t)256 * out_h + 112) / 224;
  return S > GF_XFORM_MAX_RESAMPLED ? GF_XFORM_MAX_RESAMPLED : (uint32_t)S;
}

void gf_xform_window(const gf_transform *t, uint64_t epoch, uint64_t index,
                     uint32_t h, uint32_t w, gf_xform_win *o) {
  memset(o, 0, sizeof *o);
  uint64_t k = sample_key(t->seed, epoch, index);
  o->flip = t->hflip ? (uint32_t)(draw(k, 2) >> 63) : 0;
  uint32_t oh = t->height ? t->height : h, ow = t->width ? t->width : w;
  switch (t->resize) {
  case GF_RESIZE_RANDOM_RESIZED_CROP:
    rrc_window(t, k, h, w, o);
    o->rs_h = oh;
    o->rs_w = ow;
    return;
  case GF_RESIZE_SHORTER_CENTER_CROP:
    o->wh = h;
    o->ww = w;
    gf_xform_geom(GF_RESIZE_SHORTER_CENTER_CROP, h, w, oh, ow,
                  gf_xform_resize_size(t, oh), &o->rs_h, &o->rs_w, &o->off_y,
                  &o->off_x);
    return;
  case GF_RESIZE_EXACT:
    o->wh = h;
    o->ww = w;
    o->rs_h = oh;
    o->rs_w = ow;
    return;
  default:
    gf_xform_params(t, epoch, index, h, w, oh, ow, &o->y, &o->x, NULL);
    o->wh = o->rs_h = oh;
    o->ww = o->rs_w = ow;
    return;
  }
}

void gf_xform_params(const gf_transform *t, uint64_t epoch,
                     uint64_t sample_index, uint32_t h, uint32_t w,
                     uint32_t out_h, uint32_t out_w, int32_t *crop_y,
                     int32_t *crop_x, uint32_t *flip) {
  uint64_t k = sample_key(t->seed, epoch, sample_index);
  bool random = t->random_crop != 0;
  if (crop_y)
    *crop_y = window_start(h, out_h, t->pad, random, mix64(k + GF_GOLDEN));
  if (crop_x)
    *crop_x = window_start(w, out_w, t->pad, random, mix64(k + 2 * GF_GOLDEN));
  if (flip)
    *flip = t->hflip ? (uint32_t)(mix64(k + 3 * GF_GOLDEN) >> 63) : 0;
}

void gf_xform_sample_init(const gf_transform *t, uint64_t epoch,
                          uint64_t sample_index, uint64_t src_offset,
                          const gf_shape *shape, uint32_t out_h,
                          uint32_t out_w, uint32_t filtered,
                          gf_xform_sample *s) {
  memset(s, 0, sizeof *s);
  s->src_offset = src_offset;
  s->h = shape->height;
  s->w = shape->width;
  s->c = shape->channels;
  s->filtered = filtered ? 1 : 0;
  if (t->resize == GF_RESIZE_NONE) {
    uint32_t flip;
    gf_xform_params(t, epoch, sample_index, s->h, s->w, out_h, out_w,
                    &s->crop_y, &s->crop_x, &flip);
    s->flip = (uint8_t)flip;
    return;
  }
  gf_xform_win win;
  gf_xform_window(t, epoch, sample_index, s->h, s->w, &win);
  s->resize = (uint8_t)(t->resize | (t->no_antialias ? GF_XFORM_NO_AA : 0));
  s->crop_y = win.y;
  s->crop_x = win.x;
  s->win_h = win.wh;
  s->win_w = win.ww;
  s->flip = (uint8_t)win.flip;
}

void gf_xform_region_rect(const gf_transform *t, uint64_t epoch,
                          uint64_t index, uint32_t h, uint32_t w,
                          uint32_t *y, uint32_t *x, uint32_t *rh,
                          uint32_t *rw, uint32_t *want_h, uint32_t *want_w) {
  uint32_t oh = t->height ? t->height : h, ow = t->width ? t->width : w;
  if (t->resize != GF_RESIZE_NONE) {
    gf_xform_win win;
    gf_xform_window(t, epoch, index, h, w, &win);
    *y = (uint32_t)win.y;
    *x = (uint32_t)win.x;
    *rh = win.wh;
    *rw = win.ww;
    /* SHORTER_CENTER_CROP resamples the whole window to rs; the others to
     * the output size. */
    *want_h = win.rs_h;
    *want_w = win.rs_w;
    return;
  }
  int32_t cy, cx;
  gf_xform_params(t, epoch, index, h, w, oh, ow, &cy, &cx, NULL);
  int64_t c[2] = {cy, cx}, o[2] = {oh, ow}, s[2] = {h, w};
  uint32_t lo[2], n[2];
  for (int k = 0; k < 2; k++) {
    int64_t a = c[k] < 0 ? 0 : c[k], b = c[k] + o[k];
    if (b > s[k])
      b = s[k];
    if (a >= s[k]) /* wholly in the padding below: the last pixel */
      a = s[k] - 1;
    if (b <= a) /* wholly in the padding above, or the last pixel */
      b = a + 1;
    lo[k] = (uint32_t)a;
    n[k] = (uint32_t)(b - a);
  }
  *y = lo[0];
  *x = lo[1];
  *rh = *want_h = n[0];
  *rw = *want_w = n[1];
}

/* One axis of a scaled window (the header's "Decoded regions"): the
 * full-scale start a and size n at scale 1/d, in a region [r0, r0 + rn)
 * of the scaled image: its start in the region and its size. */
static void scaled_axis(uint32_t a, uint32_t n, uint32_t d, uint32_t r0,
                        uint32_t rn, int32_t *start, uint32_t *size) {
  uint64_t lo = (2 * (uint64_t)a + d) / (2 * (uint64_t)d);
  uint64_t hi = (2 * ((uint64_t)a + n) + d) / (2 * (uint64_t)d);
  if (lo < r0)
    lo = r0;
  if (lo > (uint64_t)r0 + rn - 1)
    lo = (uint64_t)r0 + rn - 1;
  if (hi > (uint64_t)r0 + rn)
    hi = (uint64_t)r0 + rn;
  if (hi <= lo)
    hi = lo + 1;
  *start = (int32_t)(lo - r0);
  *size = (uint32_t)(hi - lo);
}

void gf_xform_sample_init_region(const gf_transform *t, uint64_t epoch,
                                 uint64_t sample_index, uint64_t src_offset,
                                 const gf_shape *shape, uint32_t out_h,
                                 uint32_t out_w, const gf_xform_region *r,
                                 gf_xform_sample *s) {
  if (!r || !r->denom) {
    gf_xform_sample_init(t, epoch, sample_index, src_offset, shape, out_h,
                         out_w, 0, s);
    return;
  }
  memset(s, 0, sizeof *s);
  s->src_offset = src_offset;
  s->h = shape->height;
  s->w = shape->width;
  s->c = shape->channels;
  uint32_t d = r->denom;
  if (t->resize == GF_RESIZE_NONE) {
    uint32_t flip;
    int32_t cy, cx;
    gf_xform_params(t, epoch, sample_index, r->full_h, r->full_w, out_h,
                    out_w, &cy, &cx, &flip);
    /* d is 1 here: the region's origin is in full-scale pixels. */
    s->crop_y = (int32_t)((int64_t)cy - r->y0);
    s->crop_x = (int32_t)((int64_t)cx - r->x0);
    s->flip = (uint8_t)flip;
    return;
  }
  gf_xform_win win;
  gf_xform_window(t, epoch, sample_index, r->full_h, r->full_w, &win);
  s->resize = (uint8_t)(t->resize | (t->no_antialias ? GF_XFORM_NO_AA : 0));
  scaled_axis((uint32_t)win.y, win.wh, d, r->y0, s->h, &s->crop_y,
              &s->win_h);
  scaled_axis((uint32_t)win.x, win.ww, d, r->x0, s->w, &s->crop_x,
              &s->win_w);
  if (d > 1) {
    s->geom_h = win.wh;
    s->geom_w = win.ww;
  }
  s->flip = (uint8_t)win.flip;
}

/* Columns [0, *vw) and rows [0, *vh) of the source that a filtered sample's
 * window needs (the unfilter is a prefix sum from the top-left corner):
 * 0 x 0 when the window misses the image. */
static void filtered_extent(const gf_xform_sample *s, uint32_t out_h,
                            uint32_t out_w, uint32_t *vh, uint32_t *vw) {
  int64_t rows = (int64_t)s->crop_y + (s->resize ? s->win_h : out_h),
          cols = (int64_t)s->crop_x + (s->resize ? s->win_w : out_w);
  if (rows > s->h)
    rows = s->h;
  if (cols > s->w)
    cols = s->w;
  if (rows <= 0 || cols <= 0 || s->crop_y >= (int64_t)s->h ||
      s->crop_x >= (int64_t)s->w)
    rows = cols = 0;
  *vh = (uint32_t)rows;
  *vw = (uint32_t)cols;
}

int gf_xform_validate(const gf_xform_sample *samples, uint32_t n,
                      uint64_t src_len, uint32_t out_h, uint32_t out_w,
                      uint32_t out_c, unsigned flags) {
  if (n && !samples)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%u transform samples given as NULL", n);
  if (out_c < 1 || out_c > 4 || out_h < 1 || out_w < 1 ||
      out_h > GF_XFORM_MAX_DIM || out_w > GF_XFORM_MAX_DIM ||
      (uint64_t)out_h * out_w * out_c >= GF_XFORM_MAX_SAMPLE_ELEMS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "transform output %ux%ux%u is outside the limits (sides "
                   "1..%u, channels 1..4, under 2^31 elements a sample)",
                   out_h, out_w, out_c, GF_XFORM_MAX_DIM);
  for (uint32_t i = 0; i < n; i++) {
    const gf_xform_sample *s = &samples[i];
    if (s->c != out_c)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels, the output %u", i,
                     s->c, out_c);
    if (s->h < 1 || s->w < 1 || s->h > GF_XFORM_MAX_DIM ||
        s->w > GF_XFORM_MAX_DIM)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is %ux%u; sides must be 1..%u", i, s->h,
                     s->w, GF_XFORM_MAX_DIM);
    uint64_t bytes = (uint64_t)s->h * s->w * s->c;
    if (s->src_offset > src_len || bytes > src_len - s->src_offset)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, s->src_offset,
                     "batch sample %u (%ux%ux%u, %llu bytes at offset %llu) "
                     "does not lie inside the %llu-byte source",
                     i, s->h, s->w, s->c, (unsigned long long)bytes,
                     (unsigned long long)s->src_offset,
                     (unsigned long long)src_len);
    if (s->crop_y < -GF_XFORM_MAX_CROP || s->crop_y > GF_XFORM_MAX_CROP ||
        s->crop_x < -GF_XFORM_MAX_CROP || s->crop_x > GF_XFORM_MAX_CROP)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has crop (%d, %d) beyond +-%d", i,
                     s->crop_y, s->crop_x, GF_XFORM_MAX_CROP);
    if (s->flip > 1 || s->filtered > 1 || s->reserved0 ||
        (s->resize & ~(3u | GF_XFORM_NO_AA)) ||
        (s->resize && !(s->resize & 3u)))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: flip and filtered must be 0 or 1, "
                     "resize 0 or a mode (plus GF_XFORM_NO_AA), reserved0 0",
                     i);
    if (!s->resize && (s->win_h || s->win_w || s->geom_h || s->geom_w))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: the window sizes must be 0 when it "
                     "is not resized",
                     i);
    if ((s->geom_h == 0) != (s->geom_w == 0) ||
        s->geom_h > GF_XFORM_MAX_RESAMPLED ||
        s->geom_w > GF_XFORM_MAX_RESAMPLED)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: geom %ux%u must be 0x0 or both sides "
                     "1..%u",
                     i, s->geom_h, s->geom_w, GF_XFORM_MAX_RESAMPLED);
    if (s->resize &&
        (s->crop_y < 0 || s->crop_x < 0 || s->win_h < 1 || s->win_w < 1 ||
         (uint64_t)s->crop_y + s->win_h > s->h ||
         (uint64_t)s->crop_x + s->win_w > s->w))
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u (%ux%u): resize window %ux%u at (%d, "
                     "%d) is not inside the image",
                     i, s->h, s->w, s->win_h, s->win_w, s->crop_y,
                     s->crop_x);
    if ((flags & GF_XFORM_FOR_GPU) && s->filtered && s->resize)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is gradient-filtered and resized: "
                     "the GPU resamples unfiltered samples only; unfilter "
                     "it on the CPU",
                     i);
    if ((flags & GF_XFORM_FOR_GPU) && s->filtered) {
      uint32_t vh, vw;
      filtered_extent(s, out_h, out_w, &vh, &vw);
      if ((uint64_t)vw * s->c > GF_XFORM_GPU_FILTERED_ROW)
        return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "batch sample %u is gradient-filtered and its crop "
                       "needs %u columns of %u channels: the GPU unfilters "
                       "rows of up to %u bytes; unfilter it on the CPU",
                       i, vw, s->c, GF_XFORM_GPU_FILTERED_ROW);
    }
  }
  return 0;
}

void gf_xform_norm(const gf_transform *t, float mean[4], float std[4]) {
  for (int c = 0; c < 4; c++) {
    mean[c] = t->mean[c];
    std[c] = t->std[c] == 0.0f ? 1.0f : t->std[c];
  }
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Output values per channel and pixel value, so the per-element work is a
 * lookup (the padding value is entry 0). */
typedef union xform_lut {
  float f32[4][256];
  uint16_t u16[4][256];
} xform_lut;

static void build_lut(const gf_transform *t, uint32_t c, xform_lut *lut) {
  float mean[4], std[4];
  gf_xform_norm(t, mean, std);
  for (uint32_t ch = 0; ch < c; ch++)
    for (uint32_t x = 0; x < 256; x++) {
      /* The value rule: one rounding for the difference, one for the
       * quotient (C11 with FLT_EVAL_METHOD 0 evaluates in float). */
      float d = (float)x - mean[ch];
      float v = d / std[ch];
      if (t->out_dtype == GF_OUT_F32)
        lut->f32[ch][x] = v;
      else if (t->out_dtype == GF_OUT_F16)
        lut->u16[ch][x] = gf_f32_to_f16(f32_bits(v));
      else
        lut->u16[ch][x] = gf_f32_to_bf16(f32_bits(v));
    }
}

/* Where one sample's pixels come from: rows [0, vh) and columns [0, vw)
 * of `base` (row pitch `pitch`) are real pixels, the rest is padding. */
typedef struct src_view {
  const uint8_t *base;
  size_t pitch;
  uint32_t vh, vw;
} src_view;

/* Output element index of (y, x, ch) inside one sample. */
static size_t out_index(uint32_t layout, uint32_t out_h, uint32_t out_w,
                        uint32_t c, uint32_t y, uint32_t x, uint32_t ch) {
  if (layout == GF_LAYOUT_NHWC)
    return ((size_t)y * out_w + x) * c + ch;
  return ((size_t)ch * out_h + y) * out_w + x;
}

#define GF_EMIT_SAMPLE(T, VALUE)                                             \
  do {                                                                       \
    T *o_ = (T *)out;                                                        \
    for (uint32_t y = 0; y < out_h; y++) {                                   \
      int64_t sy = (int64_t)s->crop_y + y;                                   \
      bool row_in = sy >= 0 && sy < (int64_t)v->vh;                          \
      const uint8_t *row = row_in ? v->base + (size_t)sy * v->pitch : NULL;  \
      for (uint32_t x = 0; x < out_w; x++) {                                 \
        int64_t sx = (int64_t)s->crop_x + (s->flip ? out_w - 1 - x : x);     \
        const uint8_t *px = (row_in && sx >= 0 && sx < (int64_t)v->vw)       \
                                ? row + (size_t)sx * c                       \
                                : zero;                                      \
        for (uint32_t ch = 0; ch < c; ch++) {                                \
          uint32_t xv = px[ch];                                              \
          o_[out_index(layout, out_h, out_w, c, y, x, ch)] = (VALUE);        \
        }                                                                    \
      }                                                                      \
    }                                                                        \
  } while (0)

static void emit_sample(const gf_transform *t, const xform_lut *lut,
                        const gf_xform_sample *s, const src_view *v,
                        uint32_t out_h, uint32_t out_w, uint32_t c,
                        void *out) {
  static const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t layout = t->layout;
  switch (t->out_dtype) {
  case GF_OUT_U8:
    GF_EMIT_SAMPLE(uint8_t, (uint8_t)xv);
    break;
  case GF_OUT_F32:
    GF_EMIT_SAMPLE(float, lut->f32[ch][xv]);
    break;
  default:
    GF_EMIT_SAMPLE(uint16_t, lut->u16[ch][xv]);
    break;
  }
}
#undef GF_EMIT_SAMPLE

/* One axis of a resized sample: for each of the output's `count` indices,
 * the window's taps [lo, lo + n) and their normalised weights at
 * wt[k * kmax ...]; n = 0 for an index outside the resampled window
 * (padding). */
typedef struct rs_table {
  int32_t *lo, *n;
  float *wt;
  uint32_t kmax;
} rs_table;

/* Taps an index can have: hi - lo <= 2 * support + 2. */
static uint32_t rs_kmax(uint32_t in, uint32_t out, uint32_t aa) {
  gf_rs_axis a;
  gf_rs_axis_init(&a, in, out, aa);
  uint64_t k = (uint64_t)(2.0f * a.support) + 3;
  return k > in ? in : (uint32_t)k;
}

static size_t rs_table_bytes(uint32_t count, uint32_t kmax) {
  return (size_t)count * (2 * sizeof(int32_t) + (size_t)kmax * sizeof(float));
}

static void rs_table_fill(rs_table *tb, void *mem, uint32_t count,
                          uint32_t kmax, uint32_t in, uint32_t rs,
                          int32_t off, uint32_t aa) {
  tb->lo = (int32_t *)mem;
  tb->n = tb->lo + count;
  tb->wt = (float *)(tb->n + count);
  tb->kmax = kmax;
  gf_rs_axis a;
  gf_rs_axis_init(&a, in, rs, aa);
  for (uint32_t o = 0; o < count; o++) {
    int64_t i = (int64_t)off + o;
    tb->lo[o] = tb->n[o] = 0;
    if (i < 0 || i >= (int64_t)rs)
      continue;
    int32_t lo, n;
    float center = gf_rs_taps(&a, (uint32_t)i, &lo, &n);
    float *w = tb->wt + (size_t)o * kmax, total = 0.0f;
    for (int32_t j = 0; j < n; j++) {
      w[j] = gf_rs_tri(&a, lo + j, center);
      total = GF_FADD(total, w[j]);
    }
    if (total != 0.0f)
      for (int32_t j = 0; j < n; j++)
        w[j] = GF_FDIV(w[j], total);
    tb->lo[o] = lo;
    tb->n[o] = n;
  }
}

/* The resampled uint8 value of channel ch at output row table entry ty and
 * column entry tx (both with taps), from the window at `win` (pitch bytes
 * a row, c channels a pixel). */
static uint32_t rs_pixel(const rs_table *ry, uint32_t ty, const rs_table *rx,
                         uint32_t tx, const uint8_t *win, size_t pitch,
                         uint32_t c, uint32_t ch) {
  const float *wy = ry->wt + (size_t)ty * ry->kmax;
  const float *wx = rx->wt + (size_t)tx * rx->kmax;
  const uint8_t *p0 = win + (size_t)rx->lo[tx] * c + ch;
  float acc = 0.0f;
  for (int32_t i = 0; i < ry->n[ty]; i++) {
    const uint8_t *p = p0 + (size_t)(ry->lo[ty] + i) * pitch;
    float hs = 0.0f;
    for (int32_t j = 0; j < rx->n[tx]; j++)
      hs = GF_FADD(hs, GF_FMUL(wx[j], (float)p[(size_t)j * c]));
    acc = GF_FADD(acc, GF_FMUL(wy[i], hs));
  }
  return gf_rs_u8(acc);
}

#define GF_EMIT_RESIZED(T, VALUE)                                            \
  do {                                                                       \
    T *o_ = (T *)out;                                                        \
    for (uint32_t y = 0; y < out_h; y++)                                     \
      for (uint32_t x = 0; x < out_w; x++) {                                 \
        uint32_t tx = s->flip ? out_w - 1 - x : x;                           \
        bool in = ry->n[y] > 0 && rx->n[tx] > 0;                             \
        for (uint32_t ch = 0; ch < c; ch++) {                                \
          uint32_t xv =                                                      \
              in ? rs_pixel(ry, y, rx, tx, win, pitch, c, ch) : 0u;          \
          o_[out_index(layout, out_h, out_w, c, y, x, ch)] = (VALUE);        \
        }                                                                    \
      }                                                                      \
  } while (0)

static void emit_resized(const gf_transform *t, const xform_lut *lut,
                         const gf_xform_sample *s, const uint8_t *win,
                         size_t pitch, const rs_table *ry,
                         const rs_table *rx, uint32_t out_h, uint32_t out_w,
                         uint32_t c, void *out) {
  uint32_t layout = t->layout;
  switch (t->out_dtype) {
  case GF_OUT_U8:
    GF_EMIT_RESIZED(uint8_t, (uint8_t)xv);
    break;
  case GF_OUT_F32:
    GF_EMIT_RESIZED(float, lut->f32[ch][xv]);
    break;
  default:
    GF_EMIT_RESIZED(uint16_t, lut->u16[ch][xv]);
    break;
  }
}
#undef GF_EMIT_RESIZED

int gf_xform_ref(const gf_transform *t, const uint8_t *src, uint64_t src_len,
                 const gf_xform_sample *samples, uint32_t n, uint32_t out_h,
                 uint32_t out_w, uint32_t out_c, void *dst) {
  int rc = gf_xform_check(t);
  if (rc)
    return rc;
  if (n && (!dst || (!src && src_len)))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_xform_ref: source or destination is NULL");
  rc = gf_xform_validate(samples, n, src_len, out_h, out_w, out_c, 0);
  if (rc)
    return rc;
  xform_lut lut;
  if (t->out_dtype != GF_OUT_U8)
    build_lut(t, out_c, &lut);
  size_t esize = gf_out_dtype_size(t->out_dtype);
  size_t sample_bytes = (size_t)out_h * out_w * out_c * esize;
  for (uint32_t i = 0; i < n; i++) {
    const gf_xform_sample *s = &samples[i];
    size_t pitch = (size_t)s->w * s->c;
    src_view v = {src + s->src_offset, pitch, s->h, s->w};
    uint8_t *scratch = NULL;
    /* One scratch buffer: the unfiltered copy (filtered samples), then
     * the resize's weight tables. */
    size_t ubytes = 0, tbytes = 0;
    uint32_t ky = 0, kx = 0, aa = !(s->resize & GF_XFORM_NO_AA);
    uint32_t rs_h = 0, rs_w = 0;
    int32_t off_y = 0, off_x = 0;
    if (s->resize) {
      uint32_t gh, gw;
      gf_xform_geom_size(s, &gh, &gw);
      gf_xform_geom(s->resize, gh, gw, out_h, out_w,
                    gf_xform_resize_size(t, out_h), &rs_h, &rs_w, &off_y,
                    &off_x);
    }
    if (s->filtered)
      filtered_extent(s, out_h, out_w, &v.vh, &v.vw);
    if (s->filtered && v.vh && v.vw)
      ubytes = ((size_t)v.vh * v.vw * s->c + 15) & ~(size_t)15;
    if (s->resize) {
      ky = rs_kmax(s->win_h, rs_h, aa);
      kx = rs_kmax(s->win_w, rs_w, aa);
      tbytes = rs_table_bytes(out_h, ky) + rs_table_bytes(out_w, kx);
    }
    if (ubytes + tbytes) {
      scratch = gf_scratch_get(ubytes + tbytes);
      if (!scratch)
        return gf_fail_context(-ENOMEM, NULL, GF_NO_INDEX,
                               s->resize ? "resizing a batch sample"
                                         : "unfiltering a batch sample");
    }
    if (ubytes) {
      /* Unfilter the top-left part the window needs, on a copy. */
      size_t vp = (size_t)v.vw * s->c;
      for (uint32_t y = 0; y < v.vh; y++)
        memcpy(scratch + y * vp, v.base + y * pitch, vp);
      gf_grad_unfilter(scratch, v.vh, v.vw, s->c);
      v.base = scratch;
      v.pitch = vp;
    }
    void *o = (uint8_t *)dst + (size_t)i * sample_bytes;
    if (s->resize) {
      rs_table ry, rx;
      uint8_t *tm = scratch + ubytes;
      rs_table_fill(&ry, tm, out_h, ky, s->win_h, rs_h, off_y, aa);
      rs_table_fill(&rx, tm + rs_table_bytes(out_h, ky), out_w, kx, s->win_w,
                    rs_w, off_x, aa);
      const uint8_t *win =
          v.base + (size_t)s->crop_y * v.pitch + (size_t)s->crop_x * s->c;
      emit_resized(t, &lut, s, win, v.pitch, &ry, &rx, out_h, out_w, out_c,
                   o);
    } else {
      emit_sample(t, &lut, s, &v, out_h, out_w, out_c, o);
    }
    gf_scratch_release(scratch);
  }
  return 0;
}
