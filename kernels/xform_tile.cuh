// The tiles of a resized sample, shared by both resize kernels
// (xform_resize.cu makes every tile of a sample this way,
// xform_resize_band.cu the bands it does not take): a tile's taps and
// weights, its source rows staged in shared memory and its two passes
// (resize_tile.h), or pixel by pixel where they do not fit. Included by
// those two files only; internal linkage.
#ifndef GF_XFORM_TILE_CUH
#define GF_XFORM_TILE_CUH

#include "resize_tile.h"
#include "xform_element.cuh"

namespace gf_xk {
namespace {

constexpr unsigned kResizeTaps = 8; // column weights a resize thread keeps
constexpr unsigned kStageWords = 8; // source words a resize thread loads
                                    // at once (their latencies overlap)

// The resampled uint8 pixel (all channels) of output (y, x) of a resized
// sample, on its own: the window's taps and weights per axis recomputed
// from the shared helpers of transform.h (the same float operations and
// fixed-point weights as gf_xform_ref's tables), then each row tap's
// horizontal pass (clipped to uint8) weighted into the vertical sum. The
// per-pixel path: tiles whose taps do not fit shared memory (huge shrink
// factors) and resize_path GF_XFORM_RESIZE_PER_PIXEL.
__device__ __forceinline__ void resize_pixel(const Args &a, const gf_rs_tile &t,
                                             unsigned y, unsigned x,
                                             uint32_t px[4]) {
  const unsigned c = a.c;
  int ry = (int)((unsigned)t.off_y + y);
  int rx = (int)((unsigned)t.off_x + (t.flip ? a.ow - 1u - x : x));
  px[0] = px[1] = px[2] = px[3] = 0;
  if (ry < 0 || ry >= (int)t.rs_h || rx < 0 || rx >= (int)t.rs_w)
    return;
  int32_t ly, ny, lx, nx;
  float cy = gf_rs_taps(&t.ay, (uint32_t)ry, &ly, &ny);
  float cx = gf_rs_taps(&t.ax, (uint32_t)rx, &lx, &nx);
  float ty = 0.0f, tx = 0.0f;
  for (int32_t i = 0; i < ny; i++)
    ty = __fadd_rn(ty, gf_rs_tri(&t.ay, ly + i, cy));
  for (int32_t j = 0; j < nx; j++)
    tx = __fadd_rn(tx, gf_rs_tri(&t.ax, lx + j, cx));
  // The column weights, when few, kept in registers (the same values as
  // recomputing them per row: the same operations).
  uint32_t wxr[kResizeTaps];
#pragma unroll
  for (int32_t j = 0; j < (int32_t)kResizeTaps; j++)
    wxr[j] = j < nx ? gf_rs_weight(&t.ax, lx + j, cx, tx) : 0u;
  uint32_t acc[4] = {GF_RS_HALF, GF_RS_HALF, GF_RS_HALF, GF_RS_HALF};
  for (int32_t i = 0; i < ny; i++) {
    const uint32_t wy = gf_rs_weight(&t.ay, ly + i, cy, ty);
    const uint8_t *p =
        t.win + (uint64_t)(unsigned)(ly + i) * t.pitch + (unsigned)lx * c;
    uint32_t hs[4] = {GF_RS_HALF, GF_RS_HALF, GF_RS_HALF, GF_RS_HALF};
    if (nx <= (int32_t)kResizeTaps) {
#pragma unroll
      for (int32_t j = 0; j < (int32_t)kResizeTaps; j++)
        if (j < nx) {
#pragma unroll
          for (unsigned ch = 0; ch < 4; ch++)
            if (ch < c)
              hs[ch] += wxr[j] * __ldg(p + j * c + ch);
        }
    } else {
      for (int32_t j = 0; j < nx; j++, p += c) {
        const uint32_t wx = gf_rs_weight(&t.ax, lx + j, cx, tx);
#pragma unroll
        for (unsigned ch = 0; ch < 4; ch++)
          if (ch < c)
            hs[ch] += wx * __ldg(p + ch);
      }
    }
#pragma unroll
    for (unsigned ch = 0; ch < 4; ch++)
      if (ch < c)
        acc[ch] += wy * gf_rs_clip8(hs[ch]);
  }
#pragma unroll
  for (unsigned ch = 0; ch < 4; ch++)
    if (ch < c)
      px[ch] = gf_rs_clip8(acc[ch]);
}

// Stores resampled pixel e (y * ow + x) of a sample through the value
// table.
template <int DT, int LAYOUT>
__device__ __forceinline__ void
put_px(typename Out<DT>::T *out, const typename Out<DT>::T *lut, unsigned P,
       unsigned c, unsigned e, const uint32_t px[4]) {
#pragma unroll
  for (unsigned ch = 0; ch < 4; ch++)
    if (ch < c) {
      if constexpr (LAYOUT == GF_LAYOUT_NCHW)
        out[(uint64_t)ch * P + e] = value<DT>(lut, ch, px[ch]);
      else
        out[(uint64_t)e * c + ch] = value<DT>(lut, ch, px[ch]);
    }
}

// The sample-wide part of a resized sample's tile description.
__device__ __forceinline__ void
tile_sample(gf_rs_tile &t, const gf_xform_sample &s, const Args &a) {
  uint32_t gh, gw;
  gf_xform_geom_size(&s, &gh, &gw);
  gf_xform_geom(s.resize, gh, gw, a.oh, a.ow, a.resize_size, &t.rs_h, &t.rs_w,
                &t.off_y, &t.off_x);
  const uint32_t aa = !(s.resize & GF_XFORM_NO_AA);
  gf_rs_axis_init(&t.ay, s.win_h, t.rs_h, aa);
  gf_rs_axis_init(&t.ax, s.win_w, t.rs_w, aa);
  t.img = a.src + s.src_offset;
  t.img_end = t.img + (uint64_t)s.h * s.w * a.c;
  t.win = a.src + s.src_offset +
          ((uint64_t)s.crop_y * s.w + (unsigned)s.crop_x) * a.c;
  t.pitch = s.w * a.c;
  t.c = a.c;
  t.ow = a.ow;
  t.flip = s.flip;
}

// The tap extents (gf_rs_tile_extent's values) by warp reductions: warp 0
// (the tile's columns, step 1's tids 0-31) and warp 1 (its rows), right
// after step 1, from the shared tables it just wrote (each lane reads back
// its own entry).
__device__ __forceinline__ void tile_extent(gf_rs_shared &sm, unsigned tid) {
  if (tid >= GF_RS_TILE_W + GF_RS_TILE_H)
    return;
  if (tid < GF_RS_TILE_W) {
    const int32_t n = sm.cn[tid];
    const uint32_t l = (uint32_t)sm.clo[tid];
    uint32_t kx = n > 0 ? (uint32_t)n : 0u, lo = n > 0 ? l : 0xFFFFFFFFu,
             hi = n > 0 ? l + 1u : 0u;
#pragma unroll
    for (unsigned o = 16; o > 0; o >>= 1) {
      uint32_t a = __shfl_xor_sync(0xFFFFFFFFu, kx, o),
               b = __shfl_xor_sync(0xFFFFFFFFu, lo, o),
               c = __shfl_xor_sync(0xFFFFFFFFu, hi, o);
      kx = a > kx ? a : kx;
      lo = b < lo ? b : lo;
      hi = c > hi ? c : hi;
    }
    if (tid == 0) {
      sm.ext[0] = kx;
      sm.ext[2] = lo;
      sm.ext[3] = hi;
    }
  } else {
    const int32_t n = sm.rn[tid - GF_RS_TILE_W];
    uint32_t ky = n > 0 ? (uint32_t)n : 0u;
#pragma unroll
    for (unsigned o = 16; o > 0; o >>= 1) {
      uint32_t a = __shfl_xor_sync(0xFFFFFFFFu, ky, o);
      ky = a > ky ? a : ky;
    }
    if (tid == GF_RS_TILE_W)
      sm.ext[1] = ky;
  }
}

// The per-pixel path for one tile.
template <int DT, int LAYOUT>
__device__ __forceinline__ void
tile_pixels(const Args &a, const gf_rs_tile &t, typename Out<DT>::T *out,
            const typename Out<DT>::T *lut, unsigned P) {
  for (unsigned i = threadIdx.x; i < t.ny * t.nx; i += blockDim.x) {
    unsigned y = t.y0 + i / t.nx, x = t.x0 + i % t.nx;
    uint32_t px[4];
    resize_pixel(a, t, y, x, px);
    put_px<DT, LAYOUT>(out, lut, P, a.c, y * a.ow + x, px);
  }
}

// One tile (resize_tile.h), C channels; called after a barrier (the
// previous tile is done with the shared state). Barriers: after the
// extents, after the plan (made by one thread), after the weights and
// staged rows, after the horizontal passes
// (and one more before each further chunk).
template <int DT, int LAYOUT, unsigned C, unsigned NT>
__device__ bool tile_staged(const Args &a, const gf_rs_tile &t,
                            gf_rs_shared &sm, typename Out<DT>::T *out,
                            const typename Out<DT>::T *lut, unsigned P) {
  const unsigned tid = threadIdx.x, lane = tid & 31u;
  gf_rs_tile_taps(&sm, &t, tid);
  __syncwarp();
  tile_extent(sm, tid);
  __syncthreads();
  if (tid == 0)
    sm.plan = gf_rs_splan_make(&sm, &t, C);
  __syncthreads();
  const gf_rs_splan p = sm.plan;
  // the same for every thread of the block
  if (a.resize_path == GF_XFORM_RESIZE_PER_PIXEL) {
    tile_pixels<DT, LAYOUT>(a, t, out, lut, P);
    return true;
  }
  if (!p.ok)
    return false; // refused: nothing written
  gf_rs_tile_sweights(&sm, &t, &p, tid);
  for (unsigned a0 = 0; a0 < t.ny;) {
    // Every warp makes the chunk itself: lane k tile row k.
    const uint32_t V =
        __ballot_sync(0xFFFFFFFFu, gf_rs_chunk_valid(&sm, &t, a0, lane));
    const uint32_t r0 = gf_rs_chunk_r0(&sm, V);
    const uint32_t B = __ballot_sync(
        0xFFFFFFFFu, gf_rs_chunk_breaks(&sm, &t, p.cap, a0, r0, lane));
    uint32_t b, c0, c1;
    gf_rs_chunk_masks(&sm, &t, V, B, &b, &c0, &c1);
    const unsigned nr = c1 - c0, wpr = p.stride / 4u, words = nr * wpr;
    // The staged rows, kStageWords loads a thread in flight before their
    // stores (consecutive threads, consecutive words of a row); a thread's
    // (row, word) steps by NT words without a division.
    {
      const unsigned dr = NT / wpr, dk = NT % wpr;
      for (unsigned w0 = 0, r = tid / wpr, k = tid % wpr; w0 < words;
           w0 += kStageWords * NT) {
        uint32_t v[kStageWords];
        unsigned rr = r, kk = k;
#pragma unroll
        for (unsigned u = 0; u < kStageWords; u++) {
          v[u] = rr < nr ? gf_rs_stage_word(&t, &p, c0, rr, kk, C) : 0u;
          rr += dr;
          kk += dk;
          if (kk >= wpr) {
            kk -= wpr;
            rr++;
          }
        }
#pragma unroll
        for (unsigned u = 0; u < kStageWords; u++) {
          if (r < nr)
            gf_rs_stage_put(&sm, &p, r, k, v[u]);
          r += dr;
          k += dk;
          if (k >= wpr) {
            k -= wpr;
            r++;
          }
        }
      }
    }
    __syncthreads(); // the weights and the staged rows are in
    gf_rs_tile_hsum(&sm, &t, &p, c0, nr, lane, tid / 32u, NT / 32u, C);
    __syncthreads();
    // A warp a tile row, a lane a column.
    for (unsigned k = a0 + tid / 32u; k < b; k += NT / 32u) {
      if (lane < t.nx) {
        uint32_t px[4];
        gf_rs_tile_vsum(&sm, &p, c0, k, lane, px, C);
        put_px<DT, LAYOUT>(out, lut, P, C, (t.y0 + k) * a.ow + t.x0 + lane, px);
      }
    }
    a0 = b;
    if (a0 < t.ny)
      __syncthreads(); // the results are read before the next chunk's
  }
  return true;
}

// One tile: staged whole; if its taps do not fit the pool, as two halves of
// GF_RS_TILE_W / 2 columns (each half stages half the source columns, so
// shrinks about twice as large fit); a half that still does not fit, pixel
// by pixel. Called after a barrier, as tile_staged.
template <int DT, int LAYOUT, unsigned C, unsigned NT>
__device__ void tile_any(const Args &a, const gf_rs_tile &t, gf_rs_shared &sm,
                         typename Out<DT>::T *out,
                         const typename Out<DT>::T *lut, unsigned P) {
  // One call site of tile_staged (each would be inlined: twice the code).
  constexpr unsigned kHalf = GF_RS_TILE_W / 2u;
  gf_rs_tile u = t;
  bool halves = false;
  for (unsigned x = 0;;) {
    if (!tile_staged<DT, LAYOUT, C, NT>(a, u, sm, out, lut, P)) {
      if (!halves) { // the whole tile does not fit: its halves
        halves = true;
        u.nx = t.nx < kHalf ? t.nx : kHalf;
        __syncthreads(); // the shared state is free again
        continue;
      }
      tile_pixels<DT, LAYOUT>(a, u, out, lut, P);
    }
    if (!halves || (x += kHalf) >= t.nx)
      return;
    u.x0 = t.x0 + x;
    u.nx = t.nx - x < kHalf ? t.nx - x : kHalf;
    __syncthreads();
  }
}

} // namespace
} // namespace gf_xk

#endif // GF_XFORM_TILE_CUH
