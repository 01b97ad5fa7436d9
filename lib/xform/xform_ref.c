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

/* The resize in two passes, separable as transform.h's arithmetic is: a
 * source row's horizontal pass (its uint8 result per output column and
 * channel) does not depend on the output row, so each row the vertical
 * taps need is passed once, into a ring of kmax rows, rather than once per
 * output row that uses it. The same sums in the same order: the bytes are
 * those of the per-pixel statement (tests/test_resize_ref.c checks them
 * against it). */
typedef struct rs_pass {
  const rs_table *ry, *rx;
  const uint8_t *win; /* the window's top-left pixel */
  size_t pitch;       /* bytes a source row */
  uint32_t out_w, c;
  uint8_t *ring; /* ry->kmax rows of out_w * c */
  int64_t *tag;  /* the window row each ring row holds, -1: none */
  uint32_t *acc; /* out_w * c sums */
  uint8_t *vrow; /* out_w * c: an output row, in table column order */
  uint8_t *orow; /* out_w * c: the same in output order */
} rs_pass;

/* Window row r's horizontal pass into `row`. */
static void rs_hrow(const rs_pass *ps, int64_t r, uint8_t *row) {
  const rs_table *rx = ps->rx;
  const uint8_t *src = ps->win + (size_t)r * ps->pitch;
  uint32_t c = ps->c;
  for (uint32_t tx = 0; tx < ps->out_w; tx++) {
    int32_t n = rx->n[tx];
    uint8_t *o = row + (size_t)tx * c;
    const uint32_t *w = rx->wt + (size_t)tx * rx->kmax;
    const uint8_t *p = src + (size_t)rx->lo[tx] * c;
    if (c == 3) {
      uint32_t a0 = GF_RS_HALF, a1 = GF_RS_HALF, a2 = GF_RS_HALF;
      for (int32_t j = 0; j < n; j++, p += 3) {
        uint32_t wj = w[j];
        a0 += wj * p[0];
        a1 += wj * p[1];
        a2 += wj * p[2];
      }
      o[0] = (uint8_t)gf_rs_clip8(a0);
      o[1] = (uint8_t)gf_rs_clip8(a1);
      o[2] = (uint8_t)gf_rs_clip8(a2);
    } else {
      for (uint32_t ch = 0; ch < c; ch++) {
        uint32_t a = GF_RS_HALF;
        for (int32_t j = 0; j < n; j++)
          a += w[j] * p[(size_t)j * c + ch];
        o[ch] = (uint8_t)gf_rs_clip8(a);
      }
    }
  }
}

/* Two builds of the vertical pass, chosen at load time by the CPU (glibc's
 * ifunc): AVX2's wider lanes where the machine has them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#define GF_XFORM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GF_XFORM_CLONES
#endif
/* Output row y's resampled values into ps->vrow (table column order);
 * false for a padding row (no taps). */
GF_XFORM_CLONES
static bool rs_vrow(rs_pass *ps, uint32_t y) {
  const rs_table *ry = ps->ry;
  int32_t n = ry->n[y], lo = ry->lo[y];
  if (n == 0)
    return false;
  size_t e = (size_t)ps->out_w * ps->c;
  const uint32_t *w = ry->wt + (size_t)y * ry->kmax;
  /* restrict: the sums, the ring and the row never overlap, so these
   * loops vectorise (lib/CMakeLists.txt lets GCC's cost model take them). */
  uint32_t *restrict acc = ps->acc;
  for (size_t k = 0; k < e; k++)
    acc[k] = GF_RS_HALF;
  for (int32_t i = 0; i < n; i++) {
    int64_t r = (int64_t)lo + i;
    uint32_t slot = (uint32_t)(r % ry->kmax);
    uint8_t *h = ps->ring + slot * e;
    if (ps->tag[slot] != r) {
      rs_hrow(ps, r, h);
      ps->tag[slot] = r;
    }
    const uint8_t *restrict hr = h;
    uint32_t wi = w[i];
    for (size_t k = 0; k < e; k++)
      acc[k] += wi * hr[k];
  }
  uint8_t *restrict v = ps->vrow;
  for (size_t k = 0; k < e; k++)
    v[k] = (uint8_t)gf_rs_clip8(acc[k]);
  return true;
}

/* Scratch bytes of a pass: the ring, its tags, the sums and a row. */
static size_t rs_pass_bytes(uint32_t ky, uint32_t out_w, uint32_t c) {
  size_t e = (size_t)out_w * c;
  return (((size_t)ky * e + 7) & ~(size_t)7) + (size_t)ky * sizeof(int64_t) +
         e * sizeof(uint32_t) + 2 * e;
}

static void rs_pass_init(rs_pass *ps, void *mem, const rs_table *ry,
                         const rs_table *rx, const uint8_t *win, size_t pitch,
                         uint32_t out_w, uint32_t c) {
  size_t e = (size_t)out_w * c;
  uint8_t *m = mem;
  *ps = (rs_pass){
      .ry = ry, .rx = rx, .win = win, .pitch = pitch, .out_w = out_w, .c = c};
  ps->ring = m;
  m += ((size_t)ry->kmax * e + 7) & ~(size_t)7;
  ps->tag = (int64_t *)(void *)m;
  m += (size_t)ry->kmax * sizeof(int64_t);
  ps->acc = (uint32_t *)(void *)m;
  m += e * sizeof(uint32_t);
  ps->vrow = m;
  ps->orow = m + e;
  for (uint32_t k = 0; k < ry->kmax; k++)
    ps->tag[k] = -1;
}

/* Output row y's uint8 values in output order (out_w * c): the resampled
 * row itself where it needs no change, else `row` filled with it flipped
 * as the sample says and padding 0. */
static const uint8_t *rs_orow(const rs_pass *ps, const rs_table *rx,
                              bool row_in, bool flip, bool cols_in,
                              uint8_t *restrict row) {
  uint32_t c = ps->c, out_w = ps->out_w;
  const uint8_t *restrict v = ps->vrow;
  if (!row_in) {
    memset(row, 0, (size_t)out_w * c);
    return row;
  }
  if (cols_in && !flip)
    return v;
  for (uint32_t x = 0; x < out_w; x++) {
    uint32_t tx = flip ? out_w - 1 - x : x;
    uint8_t *o = row + (size_t)x * c;
    const uint8_t *p = v + (size_t)tx * c;
    bool in = cols_in || rx->n[tx] > 0;
    for (uint32_t ch = 0; ch < c; ch++)
      o[ch] = in ? p[ch] : 0;
  }
  return row;
}

/* One output row (uint8 values in output order) through the value rule
 * into the output's layout: a copy for uint8 NHWC, else a lookup an
 * element. */
#define GF_EMIT_ROW(T, LUT)                                                    \
  do {                                                                         \
    T *restrict o_ = (T *)out;                                                 \
    if (nhwc) {                                                                \
      T *restrict d_ = o_ + (size_t)y * out_w * c;                             \
      if (c == 3) {                                                            \
        const T *l0 = LUT(0), *l1 = LUT(1), *l2 = LUT(2);                      \
        for (uint32_t x = 0; x < out_w; x++) {                                 \
          d_[3 * x] = l0[row[3 * x]];                                          \
          d_[3 * x + 1] = l1[row[3 * x + 1]];                                  \
          d_[3 * x + 2] = l2[row[3 * x + 2]];                                  \
        }                                                                      \
      } else {                                                                 \
        for (uint32_t x = 0; x < out_w; x++)                                   \
          for (uint32_t ch = 0; ch < c; ch++)                                  \
            d_[(size_t)x * c + ch] = LUT(ch)[row[(size_t)x * c + ch]];         \
      }                                                                        \
    } else {                                                                   \
      for (uint32_t ch = 0; ch < c; ch++) {                                    \
        const T *l_ = LUT(ch);                                                 \
        T *restrict d_ = o_ + ((size_t)ch * out_h + y) * out_w;                \
        for (uint32_t x = 0; x < out_w; x++)                                   \
          d_[x] = l_[row[(size_t)x * c + ch]];                                 \
      }                                                                        \
    }                                                                          \
  } while (0)

#define GF_LUT_F32(ch) (lut->f32[ch])
#define GF_LUT_U16(ch) (lut->u16[ch])

static void emit_resized(const gf_transform *t, const xform_lut *lut,
                         const gf_xform_sample *s, rs_pass *ps,
                         const rs_table *rx, uint32_t out_h, uint32_t out_w,
                         uint32_t c, void *out) {
  bool nhwc = t->layout == GF_LAYOUT_NHWC, cols_in = true;
  for (uint32_t x = 0; x < out_w; x++)
    cols_in = cols_in && rx->n[x] > 0;
  for (uint32_t y = 0; y < out_h; y++) {
    const uint8_t *restrict row =
        rs_orow(ps, rx, rs_vrow(ps, y), s->flip, cols_in, ps->orow);
    switch (t->out_dtype) {
    case GF_OUT_U8:
      if (nhwc) {
        memcpy((uint8_t *)out + (size_t)y * out_w * c, row, (size_t)out_w * c);
      } else {
        for (uint32_t ch = 0; ch < c; ch++) {
          uint8_t *d = (uint8_t *)out + ((size_t)ch * out_h + y) * out_w;
          for (uint32_t x = 0; x < out_w; x++)
            d[x] = row[(size_t)x * c + ch];
        }
      }
      break;
    case GF_OUT_F32:
      GF_EMIT_ROW(float, GF_LUT_F32);
      break;
    default:
      GF_EMIT_ROW(uint16_t, GF_LUT_U16);
      break;
    }
  }
}
#undef GF_EMIT_ROW
#undef GF_LUT_F32
#undef GF_LUT_U16

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
    size_t ubytes = 0, tbytes = 0, pass_at = 0;
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
      /* The tables, then the pass's memory at an 8-byte boundary. */
      pass_at = (rs_table_bytes(out_h, ky) + rs_table_bytes(out_w, kx) + 7) &
                ~(size_t)7;
      tbytes = pass_at + rs_pass_bytes(ky, out_w, out_c);
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
      rs_pass ps;
      rs_pass_init(&ps, tm + pass_at, &ry, &rx, win, v.pitch, out_w, out_c);
      emit_resized(t, &lut, s, &ps, &rx, out_h, out_w, out_c, o);
    } else {
      emit_sample(t, &lut, s, &v, out_h, out_w, out_c, o);
    }
    gf_scratch_release(scratch);
  }
  return 0;
}
