/* The transform's per-sample random choices on the CPU: crop and resize
 * windows (RandomResizedCrop, random crop with padding, centre crop), flips,
 * and their geometry for a decoded region (see transform.h for the rule
 * every implementation reproduces). */
#include "xform/transform.h"

#include "common/common.h"

#include <math.h> /* rint, sqrt, log, exp */
#include <string.h>

#define GF_GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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
