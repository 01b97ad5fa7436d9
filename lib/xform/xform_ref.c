/* The transform's CPU reference: the batch transform that host mode runs
 * (crop, resize with antialiasing, flip, normalise, layout), bit-exact with
 * the GPU kernels' arithmetic (see transform.h). */
#include "xform/transform.h"

#include "common/common.h"
#include "common/scratch.h"
#include "decode/decode.h" /* gf_grad_unfilter */

#include <string.h>

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
 * the window's taps [lo, lo + n) and their fixed-point weights at
 * wt[k * kmax ...]; n = 0 for an index outside the resampled window
 * (padding). */
typedef struct rs_table {
  int32_t *lo, *n;
  uint32_t *wt;
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
  return (size_t)count *
         (2 * sizeof(int32_t) + (size_t)kmax * sizeof(uint32_t));
}

static void rs_table_fill(rs_table *tb, void *mem, uint32_t count,
                          uint32_t kmax, uint32_t in, uint32_t rs,
                          int32_t off, uint32_t aa) {
  tb->lo = (int32_t *)mem;
  tb->n = tb->lo + count;
  tb->wt = (uint32_t *)(tb->n + count);
  tb->kmax = kmax;
  gf_rs_axis a;
  gf_rs_axis_init(&a, in, rs, aa);
  for (uint32_t o = 0; o < count; o++) {
    int64_t i = (int64_t)off + o;
    tb->lo[o] = tb->n[o] = 0;
    if (i < 0 || i >= (int64_t)rs)
      continue;
    int32_t lo, n;
    float center = gf_rs_taps(&a, (uint32_t)i, &lo, &n), total = 0.0f;
    uint32_t *w = tb->wt + (size_t)o * kmax;
    for (int32_t j = 0; j < n; j++)
      total = GF_FADD(total, gf_rs_tri(&a, lo + j, center));
    for (int32_t j = 0; j < n; j++)
      w[j] = gf_rs_weight(&a, lo + j, center, total);
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
  const uint32_t *wy = ry->wt + (size_t)ty * ry->kmax;
  const uint32_t *wx = rx->wt + (size_t)tx * rx->kmax;
  const uint8_t *p0 = win + (size_t)rx->lo[tx] * c + ch;
  uint32_t acc = GF_RS_HALF;
  for (int32_t i = 0; i < ry->n[ty]; i++) {
    const uint8_t *p = p0 + (size_t)(ry->lo[ty] + i) * pitch;
    uint32_t hs = GF_RS_HALF; /* the horizontal pass, to uint8 */
    for (int32_t j = 0; j < rx->n[tx]; j++)
      hs += wx[j] * p[(size_t)j * c];
    acc += wy[i] * gf_rs_clip8(hs);
  }
  return gf_rs_clip8(acc);
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
      gf_xform_filtered_extent(s, out_h, out_w, &v.vh, &v.vw);
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
