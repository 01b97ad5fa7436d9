/* The tiled two-pass resize: how one CUDA block makes a tile of
 * GF_RS_TILE_H x GF_RS_TILE_W output pixels of one resized sample, with
 * exactly the arithmetic of gf_xform_ref (lib/xform/xform_ref.c:
 * rs_table_fill, rs_pixel; transform.h's "Resampling": float weights made
 * into 14-bit fixed point, integer sums, a uint8 intermediate after the
 * horizontal pass), so the output is the same bytes.
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
 *  2. The extents (gf_rs_tile_extent; warp reductions on the device): kx,
 *     ky = the most taps of a column and of a row, and the window columns
 *     the tile reads; gf_rs_splan_make (every thread) lays out the pool:
 *     the column weights (tap-major: kx x GF_RS_TILE_W, zero past a
 *     column's own taps, so every column runs kx taps and a warp does not
 *     diverge), the row weights (GF_RS_TILE_H x 4 kq, kq = (ky + 3) / 4,
 *     16 bits each, zero past a row's own taps), then for `cap` source
 *     rows their uint8 horizontal results (c x GF_RS_TILE_W columns of
 *     hsw words: cap bytes and the word read past them) and their staged
 *     bytes. The tile goes through the pool when one
 *     output row's taps fit (cap >= ky); otherwise (RGB shrinks beyond
 *     ~7.5x) the kernel makes it as two tiles of 16 columns, and where
 *     those do not fit either (beyond ~10x) pixel by pixel (its per-pixel
 *     path).
 *  3. gf_rs_tile_sweights: the fixed-point weights, tri / total with total
 *     summed in tap order, then gf_rs_wq (rs_table_fill's operations).
 *  4. For each chunk of output rows whose source rows [r0, r1) fit `cap`
 *     (warp ballots: gf_rs_chunk_valid, gf_rs_chunk_breaks,
 *     gf_rs_chunk_masks; gf_rs_tile_chunk is the same on one thread):
 *     gf_rs_tile_stage copies the source row segments into the pool with
 *     aligned 32-bit loads; gf_rs_tile_hsum makes each (source row,
 *     tile column)'s horizontal pass (rs_pixel's inner loop and its
 *     clip8: a row's result depends on the column alone, so it is the
 *     value rs_pixel recomputes for every output row), a thread a column
 *     with its weights in registers, and stores the uint8 results of a
 *     column as consecutive bytes; gf_rs_tile_vsum makes each output
 *     pixel's vertical pass (rs_pixel's outer loop) from those bytes, four
 *     taps a 32-bit word with two dp2a (16-bit weights times bytes, exact
 *     integer sums: the same values as the reference's loop).
 * A warp works on one row (source row in step 4b, output row in 4c), a
 * lane on a column: the warp reads adjacent source pixels of one row and
 * writes adjacent output columns (NCHW: consecutive x), and the row's
 * weights are the same in every lane. The channel count is an argument
 * the kernel makes a constant, so channel loops are straight-line code. */
#ifndef GF_RESIZE_TILE_H
#define GF_RESIZE_TILE_H

#include "xform/transform.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_RS_TILE_W 32u
#define GF_RS_TILE_H 32u
/* 32-bit words in the pool: 18 KiB, so that eight blocks (pool, tables,
 * value table of up to 4 KiB) share an SM's shared memory; a tile's
 * source rows for shrinks up to ~2.5x fit in one chunk. */
#define GF_RS_POOL 4608u

/* Inlined on the device: the tile description stays in registers. */
#if defined(__CUDACC__)
#define GF_RS_FN static __forceinline__ __host__ __device__
#else
#define GF_RS_FN static inline
#endif
#if defined(__CUDA_ARCH__)
#define GF_RS_UNROLL _Pragma("unroll")
#else
#define GF_RS_UNROLL
#endif

/* The plan of a tile (gf_rs_splan_make, from sm->ext). */
typedef struct gf_rs_splan {
  uint32_t kx, ky, cap;
  uint32_t kq;     /* groups of 4 row taps: (ky + 3) / 4 */
  uint32_t ok;     /* 1: the tile goes through the pool */
  uint32_t seg_lo; /* first window column the tile's taps read */
  uint32_t seg_w;  /* columns staged from seg_lo (max lo + kx - seg_lo) */
  uint32_t seg_v;  /* of which inside the window (the rest reads 0) */
  uint32_t stride; /* bytes a staged row, a multiple of 4 */
  uint32_t hsw;    /* words a (channel, tile column)'s results, odd */
  uint32_t st;     /* byte offset of the staged rows in the pool */
} gf_rs_splan;

/* A block's shared state for one tile. */
typedef struct gf_rs_shared {
  int32_t clo[GF_RS_TILE_W], cn[GF_RS_TILE_W];
  float ccen[GF_RS_TILE_W];
  int32_t rlo[GF_RS_TILE_H], rn[GF_RS_TILE_H];
  float rcen[GF_RS_TILE_H];
  uint32_t chunk_end, r0, r1; /* gf_rs_tile_chunk's answer */
  uint32_t ext[4];            /* gf_rs_tile_extent's */
  gf_rs_splan plan;           /* the kernel's: made once, read by all */
  uint32_t pad_[2];           /* the pool 16-byte aligned */
  uint32_t pool[GF_RS_POOL];
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
  const uint8_t *img, *img_end; /* the sample's bytes (h x w x c) */
  uint32_t pitch, c;  /* source bytes a row; channels */
  uint32_t ow, flip;
  uint32_t y0, x0, ny, nx; /* the tile */
} gf_rs_tile;

/* Step 1 (tids 0 .. GF_RS_TILE_W + GF_RS_TILE_H - 1; others do nothing). */
GF_RS_FN void gf_rs_tile_taps(gf_rs_shared *sm, const gf_rs_tile *t,
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


/* Where the pool's parts start: column weights at word 0 (tap-major:
 * kx x GF_RS_TILE_W words), row weights at word gf_rs_wy (a tile row's
 * 2 kq words: two 16-bit weights a word, taps past the row's own 0), the
 * uint8 horizontal results at word gf_rs_hs: for channel ch and tile
 * column col, hsw words holding source rows 0 .. cap - 1 of the chunk,
 * one byte each (a column's results are consecutive bytes, so the
 * vertical pass reads four taps a word), then the staged rows at byte
 * st. */
GF_RS_FN uint32_t gf_rs_wy(const gf_rs_splan *p) {
  return GF_RS_TILE_W * p->kx;
}
GF_RS_FN uint32_t gf_rs_hs(const gf_rs_splan *p) {
  return GF_RS_TILE_W * p->kx + GF_RS_TILE_H * 2u * p->kq;
}

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

/* The plan from sm->ext (every thread, after step 2). The results of a
 * column read from row lo .. lo + 4 kq + 3 (whole words past the taps:
 * their weights are 0), so hsw words hold cap + 7 bytes; hsw odd puts
 * the 32 columns' words in 32 banks. */
GF_RS_FN gf_rs_splan gf_rs_splan_make(const gf_rs_shared *sm,
                                      const gf_rs_tile *t, uint32_t c) {
  gf_rs_splan p = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  p.kx = sm->ext[0];
  p.ky = sm->ext[1];
  p.kq = (p.ky + 3u) / 4u;
  uint64_t lo = sm->ext[3] ? sm->ext[2] : 0u;
  uint64_t end = sm->ext[3] ? (uint64_t)sm->ext[3] - 1u + p.kx : 0u;
  uint64_t in = (uint64_t)(uint32_t)t->ax.in;
  uint64_t seg_w = end - lo, seg_v = (end < in ? end : in) - lo;
  uint64_t stride = (seg_w * c + 6u) & ~(uint64_t)3u; /* + the shift */
  uint64_t fixed = 4u * ((uint64_t)GF_RS_TILE_W * p.kx +
                         (uint64_t)GF_RS_TILE_H * 2u * p.kq);
  /* The results take at most c x GF_RS_TILE_W x (cap + 16) bytes. */
  uint64_t slack = (uint64_t)GF_RS_TILE_W * c * 16u;
  uint64_t row = (uint64_t)GF_RS_TILE_W * c + stride;
  if (fixed + slack < 4u * GF_RS_POOL) {
    uint64_t cap = (4u * GF_RS_POOL - fixed - slack) / row;
    uint64_t hsw = ((cap + 7u + 3u) / 4u) | 1u;
    p.cap = (uint32_t)cap;
    p.ok = cap >= p.ky && cap > 0;
    p.seg_lo = (uint32_t)lo;
    p.seg_w = (uint32_t)seg_w;
    p.seg_v = (uint32_t)seg_v;
    p.stride = (uint32_t)stride;
    p.hsw = (uint32_t)hsw;
    p.st = (uint32_t)(fixed + 4u * (uint64_t)GF_RS_TILE_W * c * hsw);
  }
  return p;
}

/* Step 3 (the tids of step 1, when p->ok): the fixed-point weights of
 * tile column tid (taps [n, kx) set to 0: w * byte = 0 leaves each sum as
 * it was, so the bytes are the reference's) or of tile row tid - 32 (two
 * a word, taps [n, 4 kq) 0). */
GF_RS_FN void gf_rs_tile_sweights(gf_rs_shared *sm, const gf_rs_tile *t,
                                  const gf_rs_splan *p, uint32_t tid) {
  gf_rs_axis ax; /* a copy: a pointer to either would keep the tile in
                    local memory on the device */
  float cen;
  int32_t lo, n;
  const bool col = tid < GF_RS_TILE_W;
  if (col) {
    ax = t->ax;
    lo = sm->clo[tid];
    n = sm->cn[tid];
    cen = sm->ccen[tid];
  } else if (tid - GF_RS_TILE_W < GF_RS_TILE_H) {
    uint32_t k = tid - GF_RS_TILE_W;
    ax = t->ay;
    lo = sm->rlo[k];
    n = sm->rn[k];
    cen = sm->rcen[k];
  } else {
    return;
  }
  float total = 0.0f;
  for (int32_t j = 0; j < n; j++)
    total = GF_FADD(total, gf_rs_tri(&ax, lo + j, cen));
  if (col) {
    uint32_t *w = sm->pool + tid;
    for (uint32_t j = 0; j < p->kx; j++) {
      w[j * GF_RS_TILE_W] =
          (int32_t)j < n ? gf_rs_weight(&ax, lo + (int32_t)j, cen, total)
                         : 0u;
    }
    return;
  }
  uint32_t *w = sm->pool + gf_rs_wy(p) + (tid - GF_RS_TILE_W) * 2u * p->kq;
  for (uint32_t j = 0; j < 2u * p->kq; j++) {
    uint32_t word = 0;
    for (uint32_t h = 0; h < 2; h++)
      if ((int32_t)(2u * j + h) < n)
        word |= gf_rs_weight(&ax, lo + (int32_t)(2u * j + h), cen, total)
                << (16u * h);
    w[j] = word;
  }
}

/* Step 4a, one-thread form: the chunk of tile rows [a, chunk_end) whose
 * source rows [r0, r1) fit cap (at least row a: cap >= ky). The kernel
 * makes the same chunk with ballots (below); the host test checks the two
 * agree. */
GF_RS_FN void gf_rs_tile_chunk(gf_rs_shared *sm, const gf_rs_tile *t,
                               uint32_t cap, uint32_t a) {
  int32_t lo = 0, hi = 0;
  int any = 0;
  uint32_t b = a;
  for (; b < t->ny; b++) {
    int32_t n = sm->rn[b];
    if (n <= 0)
      continue; /* padding: needs no source row */
    int32_t l = sm->rlo[b], h = l + n;
    int32_t nl = any && lo < l ? lo : l, nh = any && hi > h ? hi : h;
    if ((uint32_t)(nh - nl) > cap)
      break;
    lo = nl;
    hi = nh;
    any = 1;
  }
  sm->chunk_end = b;
  sm->r0 = (uint32_t)lo;
  sm->r1 = (uint32_t)hi;
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

/* An aligned 32-bit load of source bytes (little-endian: byte 0 the low
 * bits, as on the device). */
GF_RS_FN uint32_t gf_rs_ld4(const uint8_t *q) {
#if defined(__CUDA_ARCH__)
  return __ldg((const unsigned int *)q);
#else
  return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
         (uint32_t)q[3] << 24;
#endif
}

/* The staged row r's first byte: its source address mod 4 (the same in
 * 32 bits: only the low bits count). */
GF_RS_FN uint32_t gf_rs_stage_shift(const gf_rs_tile *t, const gf_rs_splan *p,
                                    uint32_t r0, uint32_t r, uint32_t c) {
  return ((uint32_t)(uintptr_t)t->win + (r0 + r) * t->pitch +
          p->seg_lo * c) &
         3u;
}

/* Step 4a: word k of staged row r of the chunk (window row r0 + r;
 * k < p->stride / 4), loaded (gf_rs_stage_word) then stored
 * (gf_rs_tile_stage); the kernel loads several words a thread before it
 * stores any, so their memory latencies overlap. Every word is one aligned
 * 32-bit load, its bytes outside the window's row segment made 0 (a word
 * at the segment's ends reaches into the image's other pixels, never
 * used); only a word that reaches outside the sample's own bytes is read
 * byte by byte, what lies inside the segment. */
GF_RS_FN uint32_t gf_rs_stage_word(const gf_rs_tile *t, const gf_rs_splan *p,
                                   uint32_t r0, uint32_t r, uint32_t k,
                                   uint32_t c) {
  const uint8_t *g = t->win + (uint64_t)(r0 + r) * t->pitch +
                     (uint64_t)p->seg_lo * c;
  const int32_t o =
      (int32_t)(4u * k) - (int32_t)gf_rs_stage_shift(t, p, r0, r, c);
  const int32_t nb = (int32_t)(p->seg_v * c);
  const uint8_t *q = g + o; /* 4-byte aligned */
  if (o >= 0 && o + 4 <= nb)
    return gf_rs_ld4(q);
  if (q >= t->img && q + 4 <= t->img_end) {
    /* bytes [lo, hi) of the word are inside the segment */
    const int32_t lo = o < 0 ? -o : 0, hi = nb - o < 4 ? nb - o : 4;
    if (hi <= lo)
      return 0;
    const uint32_t keep = (0xFFFFFFFFu >> (8 * (4 - (hi - lo)))) << (8 * lo);
    return gf_rs_ld4(q) & keep;
  }
  uint32_t v = 0;
  for (int32_t b = 0; b < 4; b++)
    if (o + b >= 0 && o + b < nb)
      v |= (uint32_t)g[o + b] << (8 * b);
  return v;
}

GF_RS_FN void gf_rs_stage_put(gf_rs_shared *sm, const gf_rs_splan *p,
                              uint32_t r, uint32_t k, uint32_t v) {
  sm->pool[(p->st + r * p->stride) / 4u + k] = v;
}

GF_RS_FN void gf_rs_tile_stage(gf_rs_shared *sm, const gf_rs_tile *t,
                               const gf_rs_splan *p, uint32_t r0, uint32_t r,
                               uint32_t k, uint32_t c) {
  gf_rs_stage_put(sm, p, r, k, gf_rs_stage_word(t, p, r0, r, k, c));
}

/* Two taps of a vertical pass: acc + the 16-bit weights of `w2` times
 * bytes 0-1 (lo) or 2-3 (hi) of `b4` (the device's dp2a instructions). */
GF_RS_FN uint32_t gf_rs_dp2a_lo(uint32_t w2, uint32_t b4, uint32_t acc) {
#if defined(__CUDA_ARCH__)
  return __dp2a_lo(w2, b4, acc);
#else
  return acc + (w2 & 0xFFFFu) * (b4 & 255u) + (w2 >> 16) * (b4 >> 8 & 255u);
#endif
}
GF_RS_FN uint32_t gf_rs_dp2a_hi(uint32_t w2, uint32_t b4, uint32_t acc) {
#if defined(__CUDA_ARCH__)
  return __dp2a_hi(w2, b4, acc);
#else
  return acc + (w2 & 0xFFFFu) * (b4 >> 16 & 255u) + (w2 >> 16) * (b4 >> 24);
#endif
}
/* The 4 bytes from byte `s` (0-3) of the pair lo:hi. */
GF_RS_FN uint32_t gf_rs_bytes4(uint32_t lo, uint32_t hi, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, 8u * s);
#else
  return s ? lo >> (8u * s) | hi << (32u - 8u * s) : lo;
#endif
}

/* The taps of a horizontal pass a thread keeps in registers (kx above
 * it: read from the pool tap by tap). */
#define GF_RS_HREG 8u

/* Step 4b: tile column col's horizontal passes over the chunk's source
 * rows first, first + step, ... < nr (the kernel: col the lane, first
 * the warp, step the warps): the column's weights loaded once, kx taps a
 * row; each result stored as the byte of row r in the column's results
 * (gf_rs_hs). A padding column (no taps) stores nothing: its results are
 * never read. */
GF_RS_FN void gf_rs_tile_hsum(gf_rs_shared *sm, const gf_rs_tile *t,
                              const gf_rs_splan *p, uint32_t r0, uint32_t nr,
                              uint32_t col, uint32_t first, uint32_t step,
                              uint32_t c) {
  if (sm->cn[col] <= 0)
    return;
  const uint32_t off = ((uint32_t)sm->clo[col] - p->seg_lo) * c;
  const uint8_t *st = (const uint8_t *)sm->pool + p->st;
  uint8_t *hs = (uint8_t *)(sm->pool + gf_rs_hs(p)) + 4u * col * p->hsw;
  const uint32_t plane = 4u * GF_RS_TILE_W * p->hsw; /* bytes a channel */
  const uint32_t *w = sm->pool + col;
  const uint32_t kx = p->kx;
  uint32_t wr[GF_RS_HREG];
  GF_RS_UNROLL
  for (uint32_t j = 0; j < GF_RS_HREG; j++)
    wr[j] = j < kx ? w[j * GF_RS_TILE_W] : 0u;
  for (uint32_t r = first; r < nr; r += step) {
    const uint8_t *pa =
        st + r * p->stride + gf_rs_stage_shift(t, p, r0, r, c) + off;
    uint32_t a[4] = {GF_RS_HALF, GF_RS_HALF, GF_RS_HALF, GF_RS_HALF};
    if (kx <= 4u) {
      GF_RS_UNROLL
      for (uint32_t j = 0; j < 4u; j++)
        if (j < kx) {
          GF_RS_UNROLL
          for (uint32_t ch = 0; ch < 4; ch++)
            if (ch < c)
              a[ch] += wr[j] * pa[j * c + ch];
        }
    } else if (kx <= GF_RS_HREG) {
      GF_RS_UNROLL
      for (uint32_t j = 0; j < GF_RS_HREG; j++)
        if (j < kx) {
          GF_RS_UNROLL
          for (uint32_t ch = 0; ch < 4; ch++)
            if (ch < c)
              a[ch] += wr[j] * pa[j * c + ch];
        }
    } else {
      for (uint32_t j = 0; j < kx; j++) {
        const uint32_t wj = w[j * GF_RS_TILE_W];
        GF_RS_UNROLL
        for (uint32_t ch = 0; ch < 4; ch++)
          if (ch < c)
            a[ch] += wj * pa[j * c + ch];
      }
    }
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c)
        hs[ch * plane + r] = (uint8_t)gf_rs_clip8(a[ch]);
  }
}

/* A vertical pass, all channels of one column, into px: the column's
 * uint8 results of channel ch at hs + ch * plane words (hs the word that
 * holds the first tap's result, at byte sh), kq groups of four row weights
 * at w (two 16-bit weights a word, zero past the row's own taps). Four
 * taps a step: a word of four consecutive results, two dp2a. The tiles
 * (gf_rs_tile_vsum) and the bands (resize_band.cuh) both make their
 * pixels with it. */
GF_RS_FN void gf_rs_vpass(const uint32_t *hs, uint32_t plane,
                          const uint32_t *w, uint32_t kq, uint32_t sh,
                          uint32_t px[4], uint32_t c) {
  if (kq <= 2) { /* up to 8 taps (shrinks under ~3.5x): unrolled */
    const uint32_t w0 = w[0], w1 = w[1], w2 = kq == 2 ? w[2] : 0u,
                   w3 = kq == 2 ? w[3] : 0u;
    GF_RS_UNROLL
    for (uint32_t ch = 0; ch < 4; ch++)
      if (ch < c) {
        const uint32_t *h = hs + ch * plane;
        const uint32_t mid = h[1], b0 = gf_rs_bytes4(h[0], mid, sh);
        uint32_t acc = gf_rs_dp2a_lo(w0, b0, GF_RS_HALF);
        acc = gf_rs_dp2a_hi(w1, b0, acc);
        if (kq == 2) {
          const uint32_t b1 = gf_rs_bytes4(mid, h[2], sh);
          acc = gf_rs_dp2a_lo(w2, b1, acc);
          acc = gf_rs_dp2a_hi(w3, b1, acc);
        }
        px[ch] = gf_rs_clip8(acc);
      }
    return;
  }
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    if (ch < c) {
      const uint32_t *h = hs + ch * plane;
      uint32_t acc = GF_RS_HALF, lo = h[0];
      for (uint32_t q = 0; q < kq; q++) {
        const uint32_t hi = h[q + 1u], b = gf_rs_bytes4(lo, hi, sh);
        acc = gf_rs_dp2a_lo(w[2u * q], b, acc);
        acc = gf_rs_dp2a_hi(w[2u * q + 1u], b, acc);
        lo = hi;
      }
      px[ch] = gf_rs_clip8(acc);
    }
}

/* Step 4c: the pixel of tile row k (in the chunk: its taps within the
 * chunk's source rows from r0) and tile column col < nx, all channels, in
 * px (0 for padding). A warp makes one tile row (lane = column), so the
 * row's weights and tap offset are the same in every lane. */
GF_RS_FN void gf_rs_tile_vsum(const gf_rs_shared *sm, const gf_rs_splan *p,
                              uint32_t r0, uint32_t k, uint32_t col,
                              uint32_t px[4], uint32_t c) {
  GF_RS_UNROLL
  for (uint32_t ch = 0; ch < 4; ch++)
    px[ch] = 0;
  const int32_t n = sm->rn[k];
  if (n <= 0 || sm->cn[col] <= 0)
    return;
  const uint32_t off = (uint32_t)sm->rlo[k] - r0;
  gf_rs_vpass(sm->pool + gf_rs_hs(p) + col * p->hsw + off / 4u,
              GF_RS_TILE_W * p->hsw, sm->pool + gf_rs_wy(p) + k * 2u * p->kq,
              p->kq, off & 3u, px, c);
}

#endif /* GF_RESIZE_TILE_H */
