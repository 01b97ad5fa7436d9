/* The tiled two-pass resize: how one CUDA block makes a tile of
 * GF_RS_TILE_H x GF_RS_TILE_W output pixels of one resized sample, with
 * exactly the float operations of gf_xform_ref (lib/xform/xform_ref.c:
 * rs_table_fill, rs_pixel), so the output is the same bytes.
 *
 * Plain C compiled for both sides (GF_XFORM_HD): kernels/xform.cu runs the
 * steps below with one CUDA thread a `tid` and a __syncthreads() between
 * steps; tests/test_resize_tiles.c runs the same steps on the host one
 * `tid` after another and compares with gf_xform_ref, so the tiling is
 * tested without a device.
 *
 * The steps of a tile (output rows [y0, y0 + ny), columns [x0, x0 + nx),
 * ny <= GF_RS_TILE_H, nx <= GF_RS_TILE_W):
 *  1. gf_rs_tile_taps: the window taps [lo, lo + n) and the center of each
 *     of the tile's columns (tid < GF_RS_TILE_W) and rows (the next
 *     GF_RS_TILE_H tids), n = 0 for an index outside the resampled window
 *     (padding) or past the output. The same gf_rs_taps as the reference.
 *  2. gf_rs_tile_plan (one thread; every thread then reads sm->plan):
 *     kx, ky = the most taps of a column
 *     and of a row; the pool holds the column weights (tap-major:
 *     GF_RS_TILE_W x kx), the row weights (GF_RS_TILE_H x ky) and then
 *     `cap` source rows of horizontal sums (c x cap x GF_RS_TILE_W). The
 *     tile is tiled-able when one output row's taps fit (cap >= ky);
 *     otherwise (shrink factors beyond ~20-40 a side) the kernel makes the
 *     tile's pixels one by one (its per-pixel path).
 *  3. gf_rs_tile_weights: the normalised weights, tri / total with total
 *     summed in tap order (rs_table_fill's operations).
 *  4. For each chunk of output rows whose source rows fit `cap`
 *     (gf_rs_tile_chunk, one thread, from row `a`):
 *     gf_rs_tile_hsum for each (source row, tile column): hs[ch][row][col]
 *     = sum over the column taps j in order of w_j * pixel (rs_pixel's
 *     inner loop: a row's horizontal sum depends on the column alone, so
 *     it is the same value rs_pixel recomputes for every output row);
 *     then gf_rs_tile_vsum for each (output row, tile column): acc = sum
 *     over the row taps i in order of wy_i * hs (rs_pixel's outer loop)
 *     and the uint8 rounding.
 * Work items are numbered row-major with GF_RS_TILE_W (a warp's width)
 * columns, so a warp reads adjacent source pixels of one row and writes
 * adjacent output columns (NCHW: consecutive x). */
#ifndef GF_RESIZE_TILE_H
#define GF_RESIZE_TILE_H

#include "xform/transform.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_RS_TILE_W 32u
#define GF_RS_TILE_H 32u
/* Floats in the pool: 40 KiB, so a block's static shared memory (pool,
 * tables, value table of up to 4 KiB) stays under 48 KiB. */
#define GF_RS_POOL 10240u

/* Inlined on the device: the tile description stays in registers. */
#if defined(__CUDACC__)
#define GF_RS_FN static __forceinline__ __host__ __device__
#else
#define GF_RS_FN static inline
#endif
#if defined(__CUDA_ARCH__)
#define GF_RS_LD(p) __ldg(p)
#define GF_RS_UNROLL _Pragma("unroll")
#else
#define GF_RS_LD(p) (*(p))
#define GF_RS_UNROLL
#endif

/* Step 2's answer. */
typedef struct gf_rs_plan {
  uint32_t kx, ky, cap;
  uint32_t ok; /* 1: the tile goes through the pool */
} gf_rs_plan;

/* A block's shared state for one tile. */
typedef struct gf_rs_shared {
  int32_t clo[GF_RS_TILE_W], cn[GF_RS_TILE_W];
  float ccen[GF_RS_TILE_W];
  int32_t rlo[GF_RS_TILE_H], rn[GF_RS_TILE_H];
  float rcen[GF_RS_TILE_H];
  gf_rs_plan plan;            /* gf_rs_tile_plan's */
  uint32_t chunk_end, r0, r1; /* the current chunk (gf_rs_tile_chunk) */
  uint32_t ext[4]; /* the staged variant's gf_rs_tile_extent */
  uint32_t pad_;   /* the pool 16-byte aligned (pairs load 8 bytes) */
  float pool[GF_RS_POOL];
} gf_rs_shared;

/* The pool's offset a multiple of 16 (the kernel aligns sm to 16). */
#ifdef __cplusplus
static_assert(offsetof(gf_rs_shared, pool) % 16 == 0, "pool alignment");
#else
_Static_assert(offsetof(gf_rs_shared, pool) % 16 == 0, "pool alignment");
#endif

/* What every thread knows of the tile (the same values in all). */
typedef struct gf_rs_tile {
  gf_rs_axis ay, ax;
  uint32_t rs_h, rs_w;
  int32_t off_y, off_x;
  const uint8_t *win; /* the window's top-left source pixel */
  uint32_t pitch, c;  /* source bytes a row; channels */
  uint32_t ow, flip;
  uint32_t y0, x0, ny, nx; /* the tile */
} gf_rs_tile;

/* Step 1 (tids 0 .. GF_RS_TILE_W + GF_RS_TILE_H - 1; others do nothing). */
GF_RS_FN void gf_rs_tile_taps(gf_rs_shared *sm,
                                               const gf_rs_tile *t,
                                               uint32_t tid) {
  int32_t lo = 0, n = 0;
  float cen = 0.0f;
  if (tid < GF_RS_TILE_W) {
    if (tid < t->nx) {
      uint32_t x = t->x0 + tid;
      int64_t i = (int64_t)t->off_x + (t->flip ? t->ow - 1u - x : x);
      if (i >= 0 && i < (int64_t)t->rs_w)
        cen = gf_rs_taps(&t->ax, (uint32_t)i, &lo, &n);
    }
    sm->clo[tid] = lo;
    sm->cn[tid] = n;
    sm->ccen[tid] = cen;
  } else if (tid - GF_RS_TILE_W < GF_RS_TILE_H) {
    uint32_t k = tid - GF_RS_TILE_W;
    if (k < t->ny) {
      int64_t i = (int64_t)t->off_y + t->y0 + k;
      if (i >= 0 && i < (int64_t)t->rs_h)
        cen = gf_rs_taps(&t->ay, (uint32_t)i, &lo, &n);
    }
    sm->rlo[k] = lo;
    sm->rn[k] = n;
    sm->rcen[k] = cen;
  }
}

/* Step 2 (one thread, after step 1): sm->plan. */
GF_RS_FN void gf_rs_tile_plan(gf_rs_shared *sm, uint32_t c) {
  gf_rs_plan p = {0, 0, 0, 0};
  for (uint32_t k = 0; k < GF_RS_TILE_W; k++)
    if ((uint32_t)sm->cn[k] > p.kx)
      p.kx = (uint32_t)sm->cn[k];
  for (uint32_t k = 0; k < GF_RS_TILE_H; k++)
    if ((uint32_t)sm->rn[k] > p.ky)
      p.ky = (uint32_t)sm->rn[k];
  uint64_t fixed =
      (uint64_t)GF_RS_TILE_W * p.kx + (uint64_t)GF_RS_TILE_H * p.ky;
  if (fixed < GF_RS_POOL) {
    p.cap = (GF_RS_POOL - (uint32_t)fixed) / (GF_RS_TILE_W * c);
    p.ok = p.cap >= p.ky;
  }
  sm->plan = p;
}

/* Step 3's work for both variants: kx, ky the pool layout's tap counts;
 * padx: the column weights of taps [n, kx) set to 0 (the staged variant,
 * whose columns all run kx taps: w * byte = +0 leaves each sum as it
 * was, so the bytes are the reference's). */
GF_RS_FN void gf_rs_weights_(gf_rs_shared *sm, const gf_rs_tile *t,
                             uint32_t kx, uint32_t ky, uint32_t padx,
                             uint32_t tid) {
  gf_rs_axis ax; /* a copy: a pointer to either would keep the tile in
                    local memory on the device */
  float *w, cen;
  int32_t lo, n;
  uint32_t stride;
  if (tid < GF_RS_TILE_W) {
    ax = t->ax;
    w = sm->pool + tid;
    stride = GF_RS_TILE_W;
    lo = sm->clo[tid];
    n = sm->cn[tid];
    cen = sm->ccen[tid];
  } else if (tid - GF_RS_TILE_W < GF_RS_TILE_H) {
    uint32_t k = tid - GF_RS_TILE_W;
    ax = t->ay;
    w = sm->pool + GF_RS_TILE_W * kx + k * ky;
    stride = 1;
    lo = sm->rlo[k];
    n = sm->rn[k];
    cen = sm->rcen[k];
    padx = 0;
  } else {
    return;
  }
  float total = 0.0f;
  for (int32_t j = 0; j < n; j++) {
    float v = gf_rs_tri(&ax, lo + j, cen);
    w[(uint32_t)j * stride] = v;
    total = GF_FADD(total, v);
  }
  if (total != 0.0f)
    for (int32_t j = 0; j < n; j++)
      w[(uint32_t)j * stride] = GF_FDIV(w[(uint32_t)j * stride], total);
  if (padx)
    for (uint32_t j = n > 0 ? (uint32_t)n : 0u; j < kx; j++)
      w[j * stride] = 0.0f;
}

/* Step 3 (the tids of step 1, after step 2, when p->ok; p a copy of
 * sm->plan). */
GF_RS_FN void gf_rs_tile_weights(gf_rs_shared *sm, const gf_rs_tile *t,
                                 const gf_rs_plan *p, uint32_t tid) {
  gf_rs_weights_(sm, t, p->kx, p->ky, 0, tid);
}

/* Step 4a (one thread): the chunk of tile rows [a, chunk_end) whose
 * source rows [r0, r1) fit p->cap (at least row a: p->cap >= p->ky). */
GF_RS_FN void gf_rs_tile_chunk(gf_rs_shared *sm,
                                                const gf_rs_tile *t,
                                                const gf_rs_plan *p,
                                                uint32_t a) {
  int32_t lo = 0, hi = 0;
  int any = 0;
  uint32_t b = a;
  for (; b < t->ny; b++) {
    int32_t n = sm->rn[b];
    if (n <= 0)
      continue; /* padding: needs no source row */
    int32_t l = sm->rlo[b], h = l + n;
    int32_t nl = any && lo < l ? lo : l, nh = any && hi > h ? hi : h;
    if ((uint32_t)(nh - nl) > p->cap)
      break;
    lo = nl;
    hi = nh;
    any = 1;
  }
  sm->chunk_end = b;
  sm->r0 = (uint32_t)lo;
  sm->r1 = (uint32_t)hi;
}

/* Converts a source byte to float: exact (the same value as (float)v). */
GF_RS_FN float gf_rs_u8f(uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__uint_as_float(0x4B000000u | v), 8388608.0f);
#else
  return (float)v;
#endif
}

/* Step 4b: work item i of the chunk's (r1 - r0) x GF_RS_TILE_W horizontal
 * sums, i < (r1 - r0) * GF_RS_TILE_W. */
GF_RS_FN void gf_rs_tile_hsum(gf_rs_shared *sm,
                                               const gf_rs_tile *t,
                                               const gf_rs_plan *p,
                                               uint32_t r0, uint32_t nr,
                                               uint32_t i) {
  const uint32_t r = i / GF_RS_TILE_W, col = i % GF_RS_TILE_W, c = t->c;
  const int32_t n = sm->cn[col];
  if (n <= 0)
    return; /* a padding column: its sums are never read */
  const uint8_t *px = t->win + (uint64_t)(r0 + r) * t->pitch +
                      (uint64_t)(uint32_t)sm->clo[col] * c;
  const float *w = sm->pool + col;
  float h[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int32_t j = 0; j < n; j++, px += c) {
    float wj = w[(uint32_t)j * GF_RS_TILE_W];
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c)
        h[ch] = GF_FADD(h[ch], GF_FMUL(wj, gf_rs_u8f(GF_RS_LD(px + ch))));
  }
  float *hs = sm->pool + GF_RS_TILE_W * p->kx + GF_RS_TILE_H * p->ky;
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c)
      hs[(ch * nr + r) * GF_RS_TILE_W + col] = h[ch];
}

/* Step 4c's work for both variants, c the channels (a constant where the
 * kernel knows it, so the channel loops are straight-line code). */
GF_RS_FN bool gf_rs_vsum_(const gf_rs_shared *sm, const gf_rs_tile *t,
                          uint32_t kx, uint32_t ky, uint32_t a, uint32_t r0,
                          uint32_t nr, uint32_t i, uint32_t *k, uint32_t *col,
                          uint32_t px[4], uint32_t c) {
  *k = a + i / GF_RS_TILE_W;
  *col = i % GF_RS_TILE_W;
  if (*col >= t->nx)
    return false;
  px[0] = px[1] = px[2] = px[3] = 0;
  const int32_t n = sm->rn[*k];
  if (n <= 0 || sm->cn[*col] <= 0)
    return true;
  const float *w = sm->pool + GF_RS_TILE_W * kx + *k * ky;
  const float *hs = sm->pool + GF_RS_TILE_W * kx + GF_RS_TILE_H * ky +
                    (uint32_t)(sm->rlo[*k] - (int32_t)r0) * GF_RS_TILE_W +
                    *col;
  const uint32_t plane = nr * GF_RS_TILE_W;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int32_t j = 0; j < n; j++, hs += GF_RS_TILE_W) {
    float wy = w[j];
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c)
        acc[ch] = GF_FADD(acc[ch], GF_FMUL(wy, hs[ch * plane]));
  }
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c)
      px[ch] = gf_rs_u8(acc[ch]);
  return true;
}

/* Step 4c: work item i of the chunk's (chunk_end - a) x GF_RS_TILE_W
 * output pixels (rows from a): px[0 .. c) the resampled uint8 pixel (0 for
 * padding) of tile row *k, column *col. Returns false for a column past
 * the output (nothing to write). */
GF_RS_FN bool gf_rs_tile_vsum(const gf_rs_shared *sm, const gf_rs_tile *t,
                              const gf_rs_plan *p, uint32_t a, uint32_t r0,
                              uint32_t nr, uint32_t i, uint32_t *k,
                              uint32_t *col, uint32_t px[4]) {
  return gf_rs_vsum_(sm, t, p->kx, p->ky, a, r0, nr, i, k, col, px, t->c);
}

/* ---- The staged variant (resize_path 0, the default) -------------------
 *
 * The same tiles (32 x 32: GF_RS_TILE_H x GF_RS_TILE_W), the same pool
 * layout (column weights, row weights, horizontal sums) and the same float
 * operations in the same order; what changes is the instruction count:
 *  - the channel count is a constant in the kernel (these functions take
 *    it as an argument, inlined), so channel loops are straight-line;
 *  - no one-thread steps: the tap extents (step 2) are warp reductions on
 *    the device (gf_rs_tile_extent here, one thread, for the host), the
 *    plan is arithmetic every thread does (gf_rs_splan_make), the chunks
 *    come from two warp ballots (gf_rs_chunk_valid, gf_rs_chunk_breaks,
 *    gf_rs_chunk_masks) every warp makes for itself;
 *  - every column runs kx taps (zero weights past its own), so a warp's
 *    horizontal sums do not diverge;
 *  - the source row segments a chunk needs (window columns
 *    [seg_lo, seg_lo + seg_w), all rows [r0, r1)) are copied once into the
 *    pool with aligned 32-bit loads (gf_rs_tile_stage), and the taps read
 *    bytes from shared memory instead of global byte loads;
 *  - 4 barriers a tile instead of 6 (7 with several chunks).
 * Pool after the weights and the sums of `cap` rows: the staged rows,
 * `stride` bytes each; a row's bytes start at its global address mod 4
 * (so the copy is word for word). */

/* The plan of the staged variant (every thread computes it). */
typedef struct gf_rs_splan {
  uint32_t kx, ky, cap;
  uint32_t ok;     /* 1: the tile goes through the pool */
  uint32_t seg_lo; /* first window column the tile's taps read */
  uint32_t seg_w;  /* columns staged from seg_lo (max lo + kx - seg_lo) */
  uint32_t seg_v;  /* of which inside the window (the rest reads 0) */
  uint32_t stride; /* bytes a staged row, a multiple of 4 */
  uint32_t st;     /* byte offset of the staged rows in the pool */
} gf_rs_splan;

/* Step 2, host form (one thread, after step 1): sm->ext = {kx, ky, the
 * least lo of a column with taps, the greatest plus 1 (0: no column has
 * taps)}. The kernel makes the same values with warp reductions. */
GF_RS_FN void gf_rs_tile_extent(gf_rs_shared *sm) {
  uint32_t kx = 0, ky = 0, lo = 0xFFFFFFFFu, hi = 0;
  for (uint32_t k = 0; k < GF_RS_TILE_W; k++)
    if (sm->cn[k] > 0) {
      uint32_t n = (uint32_t)sm->cn[k], l = (uint32_t)sm->clo[k];
      kx = n > kx ? n : kx;
      lo = l < lo ? l : lo;
      hi = l + 1 > hi ? l + 1 : hi;
    }
  for (uint32_t k = 0; k < GF_RS_TILE_H; k++)
    if (sm->rn[k] > 0 && (uint32_t)sm->rn[k] > ky)
      ky = (uint32_t)sm->rn[k];
  sm->ext[0] = kx;
  sm->ext[1] = ky;
  sm->ext[2] = lo;
  sm->ext[3] = hi;
}

/* The plan from sm->ext (every thread, after step 2). */
GF_RS_FN gf_rs_splan gf_rs_splan_make(const gf_rs_shared *sm,
                                      const gf_rs_tile *t, uint32_t c) {
  gf_rs_splan p = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  p.kx = sm->ext[0];
  p.ky = sm->ext[1];
  uint64_t lo = sm->ext[3] ? sm->ext[2] : 0u;
  uint64_t end = sm->ext[3] ? (uint64_t)sm->ext[3] - 1u + p.kx : 0u;
  uint64_t in = (uint64_t)(uint32_t)t->ax.in;
  uint64_t seg_w = end - lo, seg_v = (end < in ? end : in) - lo;
  uint64_t stride = (seg_w * c + 6u) & ~(uint64_t)3u; /* + the shift */
  uint64_t fixed = 4u * ((uint64_t)GF_RS_TILE_W * p.kx +
                         (uint64_t)GF_RS_TILE_H * p.ky);
  uint64_t row = 4u * (uint64_t)GF_RS_TILE_W * c + stride;
  if (fixed < 4u * GF_RS_POOL) {
    uint64_t cap = (4u * GF_RS_POOL - fixed) / row;
    p.cap = (uint32_t)cap;
    p.ok = cap >= p.ky && cap > 0;
    p.seg_lo = (uint32_t)lo;
    p.seg_w = (uint32_t)seg_w;
    p.seg_v = (uint32_t)seg_v;
    p.stride = (uint32_t)stride;
    p.st = (uint32_t)(fixed + 4u * (uint64_t)GF_RS_TILE_W * c * cap);
  }
  return p;
}

/* Step 3 of the staged variant (the tids of step 1, when p->ok). */
GF_RS_FN void gf_rs_tile_sweights(gf_rs_shared *sm, const gf_rs_tile *t,
                                  const gf_rs_splan *p, uint32_t tid) {
  gf_rs_weights_(sm, t, p->kx, p->ky, 1, tid);
}

/* The chunk from tile row a, as the lanes of a warp make it (lane k tile
 * row k, k < GF_RS_TILE_H = a warp): V = the ballot of gf_rs_chunk_valid,
 * r0 = gf_rs_chunk_r0(V), B = the ballot of gf_rs_chunk_breaks, then
 * gf_rs_chunk_masks. The same chunk as gf_rs_tile_chunk: a row's taps
 * [lo, lo + n) never move back as the row goes down. */
GF_RS_FN bool gf_rs_chunk_valid(const gf_rs_shared *sm, const gf_rs_tile *t,
                                uint32_t a, uint32_t k) {
  return k >= a && k < t->ny && sm->rn[k] > 0;
}

#if defined(__CUDA_ARCH__)
#define GF_RS_CTZ(x) ((uint32_t)__ffs((int)(x)) - 1u)
#define GF_RS_HIBIT(x) (31u - (uint32_t)__clz((int)(x)))
#else
#define GF_RS_CTZ(x) ((uint32_t)__builtin_ctz(x))
#define GF_RS_HIBIT(x) (31u - (uint32_t)__builtin_clz(x))
#endif

GF_RS_FN uint32_t gf_rs_chunk_r0(const gf_rs_shared *sm, uint32_t V) {
  return V ? (uint32_t)sm->rlo[GF_RS_CTZ(V)] : 0u;
}

GF_RS_FN bool gf_rs_chunk_breaks(const gf_rs_shared *sm, const gf_rs_tile *t,
                                 uint32_t cap, uint32_t a, uint32_t r0,
                                 uint32_t k) {
  return gf_rs_chunk_valid(sm, t, a, k) &&
         (uint32_t)(sm->rlo[k] + sm->rn[k]) - r0 > cap;
}

/* *b: the chunk's end row; [*r0, *r1) its source rows. */
GF_RS_FN void gf_rs_chunk_masks(const gf_rs_shared *sm, const gf_rs_tile *t,
                                uint32_t V, uint32_t B, uint32_t *b,
                                uint32_t *r0, uint32_t *r1) {
  *b = B ? GF_RS_CTZ(B) : t->ny;
  uint32_t L = *b >= 32u ? V : V & ((1u << *b) - 1u);
  *r0 = gf_rs_chunk_r0(sm, V);
  *r1 = L ? (uint32_t)(sm->rlo[GF_RS_HIBIT(L)] + sm->rn[GF_RS_HIBIT(L)])
          : *r0;
}

/* The staged row r's first byte: its source address mod 4 (the same in
 * 32 bits: only the low bits count). */
GF_RS_FN uint32_t gf_rs_stage_shift(const gf_rs_tile *t, const gf_rs_splan *p,
                                    uint32_t r0, uint32_t r, uint32_t c) {
  return ((uint32_t)(uintptr_t)t->win + (r0 + r) * t->pitch +
          p->seg_lo * c) &
         3u;
}

/* Step 4a of the staged variant: word k of staged row r of the chunk
 * (window row r0 + r; k < p->stride / 4: the kernel gives a warp a row).
 * A word wholly inside the row segment is one aligned 32-bit load; the
 * words at its ends take byte by byte what lies inside (0 outside):
 * nothing outside the window's row is read. */
GF_RS_FN void gf_rs_tile_stage(gf_rs_shared *sm, const gf_rs_tile *t,
                               const gf_rs_splan *p, uint32_t r0, uint32_t r,
                               uint32_t k, uint32_t c) {
  const uint8_t *g = t->win + (uint64_t)(r0 + r) * t->pitch +
                     (uint64_t)p->seg_lo * c;
  const int32_t o = (int32_t)(4u * k) - (int32_t)gf_rs_stage_shift(t, p, r0, r, c);
  const int32_t nb = (int32_t)(p->seg_v * c);
  uint8_t *d = (uint8_t *)sm->pool + p->st + r * p->stride + 4u * k;
  if (o >= 0 && o + 4 <= nb) {
#if defined(__CUDA_ARCH__)
    *(uint32_t *)d = __ldg((const unsigned int *)(g + o));
#else
    d[0] = g[o];
    d[1] = g[o + 1];
    d[2] = g[o + 2];
    d[3] = g[o + 3];
#endif
  } else {
    for (int32_t b = 0; b < 4; b++)
      d[b] = o + b >= 0 && o + b < nb ? g[o + b] : 0u;
  }
}

/* Step 4b of the staged variant: work item i of the chunk's
 * nr x GF_RS_TILE_W horizontal sums, from the staged bytes; kx taps for
 * every column. */
GF_RS_FN void gf_rs_tile_shsum(gf_rs_shared *sm, const gf_rs_tile *t,
                               const gf_rs_splan *p, uint32_t r0,
                               uint32_t nr, uint32_t i, uint32_t c) {
  const uint32_t r = i / GF_RS_TILE_W, col = i % GF_RS_TILE_W;
  if (sm->cn[col] <= 0)
    return; /* a padding column: its sums are never read */
  const uint32_t sh = gf_rs_stage_shift(t, p, r0, r, c);
  const uint8_t *px = (const uint8_t *)sm->pool + p->st + r * p->stride + sh +
                      ((uint32_t)sm->clo[col] - p->seg_lo) * c;
  const float *w = sm->pool + col;
  float h[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (uint32_t j = 0; j < p->kx; j++, px += c) {
    float wj = w[j * GF_RS_TILE_W];
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c)
        h[ch] = GF_FADD(h[ch], GF_FMUL(wj, gf_rs_u8f(px[ch])));
  }
  float *hs = sm->pool + GF_RS_TILE_W * p->kx + GF_RS_TILE_H * p->ky;
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c)
      hs[(ch * nr + r) * GF_RS_TILE_W + col] = h[ch];
}

/* Step 4c of the staged variant (gf_rs_tile_vsum with c a constant). */
GF_RS_FN bool gf_rs_tile_svsum(const gf_rs_shared *sm, const gf_rs_tile *t,
                               const gf_rs_splan *p, uint32_t a, uint32_t r0,
                               uint32_t nr, uint32_t i, uint32_t *k,
                               uint32_t *col, uint32_t px[4], uint32_t c) {
  return gf_rs_vsum_(sm, t, p->kx, p->ky, a, r0, nr, i, k, col, px, c);
}

/* ---- Pairs: the staged variant with two results a work item
 * (resize_path GF_XFORM_RESIZE_PAIRS). The horizontal pass makes source
 * rows r and r + 1 of a column (its weights and tap offset loaded once);
 * the vertical pass makes columns 2m and 2m + 1 of an output row (its
 * weights loaded once, the two sums one 64-bit load). Each result's float
 * operations are the staged variant's, in its order. */

/* Step 4b, pairs: work item i < ((nr + 1) / 2) x GF_RS_TILE_W. */
GF_RS_FN void gf_rs_tile_shsum2(gf_rs_shared *sm, const gf_rs_tile *t,
                                const gf_rs_splan *p, uint32_t r0,
                                uint32_t nr, uint32_t i, uint32_t c) {
  const uint32_t r = 2u * (i / GF_RS_TILE_W), col = i % GF_RS_TILE_W;
  if (sm->cn[col] <= 0)
    return; /* a padding column: its sums are never read */
  const bool two = r + 1u < nr;
  const uint32_t off = ((uint32_t)sm->clo[col] - p->seg_lo) * c;
  const uint8_t *st = (const uint8_t *)sm->pool + p->st;
  const uint8_t *pa = st + r * p->stride + gf_rs_stage_shift(t, p, r0, r, c) +
                      off;
  /* Row r + 1's bytes (row r's again when there is none: computed, not
   * stored). */
  const uint32_t rb = two ? r + 1u : r;
  const uint8_t *pb = st + rb * p->stride +
                      gf_rs_stage_shift(t, p, r0, rb, c) + off;
  const float *w = sm->pool + col;
  float ha[4] = {0.0f, 0.0f, 0.0f, 0.0f}, hb[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (uint32_t j = 0; j < p->kx; j++, pa += c, pb += c) {
    float wj = w[j * GF_RS_TILE_W];
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c) {
        ha[ch] = GF_FADD(ha[ch], GF_FMUL(wj, gf_rs_u8f(pa[ch])));
        hb[ch] = GF_FADD(hb[ch], GF_FMUL(wj, gf_rs_u8f(pb[ch])));
      }
  }
  float *hs = sm->pool + GF_RS_TILE_W * p->kx + GF_RS_TILE_H * p->ky;
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c) {
      hs[(ch * nr + r) * GF_RS_TILE_W + col] = ha[ch];
      if (two)
        hs[(ch * nr + r + 1u) * GF_RS_TILE_W + col] = hb[ch];
    }
}

/* Step 4c, pairs: work item i < (chunk_end - a) x GF_RS_TILE_W / 2:
 * tile row *k, columns *col and *col + 1; px[0 .. c) and px[4 .. 4 + c)
 * their pixels (0 for padding). Returns a mask: bit 0 column *col, bit 1
 * column *col + 1 inside the output (to write). */
GF_RS_FN uint32_t gf_rs_tile_svsum2(const gf_rs_shared *sm,
                                    const gf_rs_tile *t, const gf_rs_splan *p,
                                    uint32_t a, uint32_t r0, uint32_t nr,
                                    uint32_t i, uint32_t *k, uint32_t *col,
                                    uint32_t px[8], uint32_t c) {
  *k = a + i / (GF_RS_TILE_W / 2u);
  *col = 2u * (i % (GF_RS_TILE_W / 2u));
  const uint32_t mask = (*col < t->nx ? 1u : 0u) | (*col + 1u < t->nx ? 2u : 0u);
  for (uint32_t e = 0; e < 8; e++)
    px[e] = 0;
  if (!mask)
    return 0;
  const int32_t n = sm->rn[*k];
  const bool ua = sm->cn[*col] > 0, ub = sm->cn[*col + 1u] > 0;
  if (n <= 0 || !(ua || ub))
    return mask;
  const float *w = sm->pool + GF_RS_TILE_W * p->kx + *k * p->ky;
  const float *hs = sm->pool + GF_RS_TILE_W * p->kx + GF_RS_TILE_H * p->ky +
                    (uint32_t)(sm->rlo[*k] - (int32_t)r0) * GF_RS_TILE_W +
                    *col;
  const uint32_t plane = nr * GF_RS_TILE_W;
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int32_t j = 0; j < n; j++, hs += GF_RS_TILE_W) {
    float wy = w[j];
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c) {
#if defined(__CUDA_ARCH__)
        const float2 v = *(const float2 *)(hs + ch * plane);
        const float va = v.x, vb = v.y;
#else
        const float va = hs[ch * plane], vb = hs[ch * plane + 1u];
#endif
        /* A padding column's sums were never written: its result is
         * dropped below. */
        acc[ch] = GF_FADD(acc[ch], GF_FMUL(wy, va));
        acc[4 + ch] = GF_FADD(acc[4 + ch], GF_FMUL(wy, vb));
      }
  }
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c) {
      px[ch] = ua ? gf_rs_u8(acc[ch]) : 0u;
      px[4 + ch] = ub ? gf_rs_u8(acc[4 + ch]) : 0u;
    }
  return mask;
}

#endif /* GF_RESIZE_TILE_H */
