// The batch transform on the GPU: crop/pad or resize, flip, dtype
// conversion and per-channel normalisation in one pass, with the gradzstd
// unfilter fused in for filtered (not resized) samples. Byte-identical to
// gf_xform_ref (xform_ref.c): the same float expression for the values
// (IEEE sub then IEEE division, no contraction), the same float -> half
// conversions, and the resize's fixed-point integer arithmetic
// (transform.h).
//
// Three kernels, launched by gf_launch_xform on the caller's stream
// (the third, xform_resize, launched only when samples are resized):
//
// - xform_resize: a block of 128 threads makes 32 x 32 tiles of output
//   pixels (grid: groups of tiles x samples; a block makes several tiles
//   of one sample, 3 in batches of 256 at 224x224, so that its value table
//   and the sample's setup serve them all), the channel count a template
//   argument. Two passes through shared memory (resize_tile.h): the
//   window's taps and fixed-point weights once a tile column and once a
//   tile row (tap extents by warp reductions; the plan made by one
//   thread), then for each chunk of the tile's rows (chosen by warp
//   ballots) the source row segments it needs copied into shared memory
//   with aligned 32-bit loads, the horizontal pass of each (source row, tile
//   column) with integer multiply-adds, a thread a column (its weights in
//   registers) and a warp a row, kept as uint8 with a column's results in
//   consecutive bytes, then the vertical pass of each output pixel, a
//   warp a row and a lane a column, four taps a 32-bit load and two dp2a,
//   mapped through the value table. 5 barriers a tile (one more a further
//   chunk). A row's horizontal pass depends on the output column alone,
//   so it is gf_xform_ref's rs_pixel value. Where a tile's source does not
//   fit shared memory (RGB shrinks beyond ~7.5x) it is made as two halves
//   of 16 columns; where a half does not fit either (beyond ~10x) the
//   block makes its pixels one by one, recomputing the taps and weights
//   per pixel (resize_pixel; also resize_path GF_XFORM_RESIZE_PER_PIXEL,
//   which tests use to check that path everywhere). Reads only inside the
//   sample (bytes outside the window's rows are read only as parts of
//   aligned words and never used). The other two kernels skip resized
//   samples.
//   Gradient-filtered samples are never resized here (gf_xform_validate
//   refuses them for the GPU; the loader unfilters them on the CPU when a
//   resize mode is set).
//
// - xform_plain: one thread makes VEC consecutive output elements (16
//   bytes: 4 f32, 8 f16/bf16, 16 u8) and stores them at once (NCHW: VEC
//   consecutive pixels of every channel plane, so each source pixel is
//   read once). Where the VEC elements lie in one output row and inside the
//   image, it walks one source pointer (backwards under flip); elsewhere it
//   takes each element on its own. Source bytes come through the read-only
//   cache, and each is mapped through a per-block table of the 256
//   possible values of each channel, which is also what makes the IEEE
//   division affordable. The grid is (chunks of a sample, samples).
//
// - xform_filtered: one block a gradient-filtered sample. The inverse
//   filter is a 2-D prefix sum mod 256, so the block walks the rows the
//   window needs from the top, up to 32 rows at a time in shared memory:
//   each warp scans its rows left to right (pixels packed one channel a
//   byte, summed with __vadd4, the running sum passed between lanes by
//   shuffles), then each thread carries a few columns down through the
//   tile from the previous tile's last row, and the block emits the output
//   rows that fall in the tile straight from shared memory with the same
//   element code as xform_plain. Only the columns left of the window's
//   right edge are ever read. xform_plain skips these samples.
#include "kernels.h"
#include "resize_band.cuh"
#include "resize_tile.h"

#include <errno.h>
#include <stdint.h>

#include <cmath>

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kItems = 8; // groups a thread, so each table serves more
constexpr unsigned kFiltBuf = 2 * GF_XFORM_GPU_FILTERED_ROW;
constexpr unsigned kFiltThreads = 512; // a block a sample: all it can use
constexpr unsigned kMaxTileRows = 32;
constexpr unsigned kScanK = 4; // pixels a lane per scan round
constexpr unsigned kResizeTaps = 8; // column weights a resize thread keeps
constexpr unsigned kStageWords = 8; // source words a resize thread loads
                                    // at once (their latencies overlap)
// The resize kernel's blocks: 128 threads, eight an SM (a cap of 64
// registers a thread; its ~21 KiB of shared memory fits eight on sm_80 and
// sm_90, fewer elsewhere). Measured on an H200 (bench/xform_bench): 128
// threads a 32 x 32 tile (eight pixels a thread) against 256 (four) issue
// 17% fewer instructions, the per-tile work (taps, weights, the chunk,
// loop set-up) spread over more pixels; with the pool shrunk to 18 KiB so
// that eight blocks fill an SM, the resize's share of a batch fell from
// 8.4% to 6.9% (bench/RESULTS.md).
constexpr unsigned kResizeThreads = 128;
constexpr unsigned kResizeBlocks = 8;
static_assert(kResizeThreads >= GF_RS_TILE_W + GF_RS_TILE_H,
              "step 1 needs a thread a tile row and a tile column");

struct Args {
  const uint8_t *src;
  uint64_t src_len;
  const gf_xform_sample *samples;
  uint32_t n, has_filtered;
  uint32_t oh, ow, c;
  uint32_t resize_size; // SHORTER_CENTER_CROP's S (gf_xform_geom)
  uint32_t resize_path; // gf_xform_launch's
  uint32_t band_rows;   // output rows a band (xform_resize_band), 1-32
  uint32_t resize_all;  // every sample resized: xform_plain is not launched,
                        // the resize kernel (bands or tiles) pads and
                        // reports the refused ones
  float mean[4], std[4]; // std already 0 -> 1
  void *dst;
  int32_t *status;
};

template <int DT> struct Out;
template <> struct Out<GF_OUT_U8> { typedef uint8_t T; };
template <> struct Out<GF_OUT_F32> { typedef float T; };
template <> struct Out<GF_OUT_F16> { typedef uint16_t T; };
template <> struct Out<GF_OUT_BF16> { typedef uint16_t T; };

// v[i] without indexing the kernel parameters at run time (which would
// copy them to local memory).
__device__ __forceinline__ float pick4(const float (&v)[4], unsigned i) {
  return i == 0 ? v[0] : i == 1 ? v[1] : i == 2 ? v[2] : v[3];
}

// Fills the value table for channels [0, c): entry ch * 256 + x is what
// pixel value x of channel ch becomes (padding is x = 0).
template <int DT>
__device__ void setup_lut(typename Out<DT>::T *lut, const Args &a) {
  if constexpr (DT != GF_OUT_U8) { // u8 output is the pixel itself
    for (unsigned i = threadIdx.x; i < a.c * 256u; i += blockDim.x) {
      unsigned ch = i >> 8;
      float v = __fdiv_rn(__fsub_rn((float)(i & 255u), pick4(a.mean, ch)),
                          pick4(a.std, ch));
      if constexpr (DT == GF_OUT_F32)
        lut[i] = v;
      else if constexpr (DT == GF_OUT_F16)
        lut[i] = gf_f32_to_f16(__float_as_uint(v));
      else
        lut[i] = gf_f32_to_bf16(__float_as_uint(v));
    }
  }
}

template <int DT>
__device__ __forceinline__ typename Out<DT>::T
value(const typename Out<DT>::T *lut, unsigned ch, unsigned x) {
  if constexpr (DT == GF_OUT_U8)
    return (typename Out<DT>::T)x;
  else
    return lut[ch * 256u + x];
}

// The checks gf_xform_validate makes on the host, repeated so a bad
// parameter can never make a kernel read outside the source.
__device__ int check_sample(const gf_xform_sample &s, const Args &a) {
  if (s.c != a.c || s.h < 1 || s.w < 1 || s.h > GF_XFORM_MAX_DIM ||
      s.w > GF_XFORM_MAX_DIM)
    return GF_ESHAPE;
  uint64_t bytes = (uint64_t)s.h * s.w * s.c;
  if (s.src_offset > a.src_len || bytes > a.src_len - s.src_offset)
    return GF_ESHAPE;
  if (s.crop_y < -GF_XFORM_MAX_CROP || s.crop_y > GF_XFORM_MAX_CROP ||
      s.crop_x < -GF_XFORM_MAX_CROP || s.crop_x > GF_XFORM_MAX_CROP ||
      s.flip > 1 || s.filtered > 1 || s.reserved0 ||
      (s.resize & ~(3u | GF_XFORM_NO_AA)) || (s.resize && !(s.resize & 3u)))
    return -EINVAL;
  if (!s.resize && (s.win_h || s.win_w || s.geom_h || s.geom_w))
    return -EINVAL;
  if ((s.geom_h == 0) != (s.geom_w == 0) ||
      s.geom_h > GF_XFORM_MAX_RESAMPLED || s.geom_w > GF_XFORM_MAX_RESAMPLED)
    return -EINVAL;
  if (s.resize) {
    if (s.crop_y < 0 || s.crop_x < 0 || s.win_h < 1 || s.win_w < 1 ||
        (uint64_t)s.crop_y + s.win_h > s.h ||
        (uint64_t)s.crop_x + s.win_w > s.w)
      return GF_ESHAPE;
    if (s.filtered)
      return GF_EUNSUPPORTED;
  }
  if (s.filtered && !a.has_filtered)
    return -EINVAL;
  if (s.filtered) {
    int64_t cols = (int64_t)s.crop_x + a.ow;
    if (cols > (int64_t)s.w)
      cols = s.w;
    if (cols > 0 && (uint64_t)cols * s.c > GF_XFORM_GPU_FILTERED_ROW)
      return GF_EUNSUPPORTED;
  }
  return 0;
}

__device__ void report(const Args &a, int code) {
  if (a.status)
    atomicCAS(a.status, 0, code);
}

// The source row and column of output (y, x); unsigned sums so that the
// wild crops of a refused sample wrap instead of overflowing.
__device__ __forceinline__ int src_y(const gf_xform_sample &s, unsigned y) {
  return (int)((unsigned)s.crop_y + y);
}
__device__ __forceinline__ int src_x(const gf_xform_sample &s, const Args &a,
                                     unsigned x) {
  return (int)((unsigned)s.crop_x + (s.flip ? a.ow - 1u - x : x));
}

// Where pixels come from: rows [y0, y0 + nrows) of an image w pixels wide,
// `pitch` bytes apart from `base` (the whole source image in global memory,
// or the unfiltered tile in shared memory); anything else is padding.
struct Rows {
  const uint8_t *base;
  int y0;
  unsigned nrows, w, pitch;
  __device__ __forceinline__ const uint8_t *row(int sy) const {
    unsigned r = (unsigned)sy - (unsigned)y0;
    return r < nrows ? base + (uint64_t)r * pitch : nullptr;
  }
};

// Global source bytes go through the read-only cache.
template <bool GLOBAL>
__device__ __forceinline__ unsigned ld(const uint8_t *p) {
  if constexpr (GLOBAL)
    return __ldg(p);
  else
    return *p;
}

// NHWC: makes and stores elements [e, e + N) of one sample (16-byte
// aligned when N > 1). The common case, the N elements within one output
// row and all inside the source, walks one pixel pointer (backwards under
// flip); the rest takes every element on its own.
template <int DT, unsigned N, bool GLOBAL>
__device__ __forceinline__ void make_hwc(typename Out<DT>::T *out, unsigned e,
                                         const Args &a,
                                         const gf_xform_sample &s,
                                         const typename Out<DT>::T *lut,
                                         const Rows &rows) {
  typedef typename Out<DT>::T T;
  union {
    T v[N];
    uint4 q;
  } u;
  const unsigned c = a.c;
  unsigned pix = e / c, ch = e - pix * c;
  unsigned y = pix / a.ow, x = pix - y * a.ow;
  bool done = false;
  if constexpr (N > 1) {
    if (e + N <= (y + 1) * a.ow * c) { // one output row
      const uint8_t *r = rows.row(src_y(s, y));
      int sa = src_x(s, a, x), sb = src_x(s, a, x + (ch + N - 1) / c);
      int lo = sa < sb ? sa : sb, hi = sa < sb ? sb : sa;
      if (!r) { // a padding row
#pragma unroll
        for (unsigned k = 0; k < N; k++) {
          u.v[k] = value<DT>(lut, ch, 0u);
          ch = ch + 1 == c ? 0 : ch + 1;
        }
        done = true;
      } else if (lo >= 0 && (unsigned)hi < rows.w) {
        const uint8_t *p = r + (unsigned)sa * c;
        const int step = s.flip ? -(int)c : (int)c;
#pragma unroll
        for (unsigned k = 0; k < N; k++) {
          u.v[k] = value<DT>(lut, ch, ld<GLOBAL>(p + ch));
          if (++ch == c) {
            ch = 0;
            p += step;
          }
        }
        done = true;
      }
    }
  }
  if (!done) {
#pragma unroll
    for (unsigned k = 0; k < N; k++) {
      const uint8_t *r = rows.row(src_y(s, y));
      int sx = src_x(s, a, x);
      unsigned v = r && (unsigned)sx < rows.w
                       ? ld<GLOBAL>(r + (unsigned)sx * c + ch)
                       : 0u;
      u.v[k] = value<DT>(lut, ch, v);
      if (++ch == c) {
        ch = 0;
        if (++x == a.ow) {
          x = 0;
          ++y;
        }
      }
    }
  }
  if constexpr (N == 1)
    out[e] = u.v[0];
  else
    *reinterpret_cast<uint4 *>(out + e) = u.q;
}

// NCHW: makes and stores elements [e, e + N) of every channel plane (P
// elements each) of one sample, so each source pixel is read once for all
// its channels. Same fast and general cases as make_hwc.
template <int DT, unsigned N, bool GLOBAL>
__device__ __forceinline__ void
make_chw(typename Out<DT>::T *out, unsigned e, unsigned P, const Args &a,
         const gf_xform_sample &s, const typename Out<DT>::T *lut,
         const Rows &rows) {
  typedef typename Out<DT>::T T;
  union {
    T v[N];
    uint4 q;
  } u[4];
  const unsigned c = a.c;
  unsigned y = e / a.ow, x = e - y * a.ow;
  bool done = false;
  if constexpr (N > 1) {
    if (x + N <= a.ow) { // one output row
      const uint8_t *r = rows.row(src_y(s, y));
      int sa = src_x(s, a, x), sb = src_x(s, a, x + N - 1);
      int lo = sa < sb ? sa : sb, hi = sa < sb ? sb : sa;
      if (!r) {
#pragma unroll
        for (unsigned ch = 0; ch < 4; ch++)
#pragma unroll
          for (unsigned k = 0; k < N; k++)
            u[ch].v[k] = value<DT>(lut, ch < c ? ch : 0u, 0u);
        done = true;
      } else if (lo >= 0 && (unsigned)hi < rows.w) {
        const uint8_t *p = r + (unsigned)sa * c;
        const int step = s.flip ? -(int)c : (int)c;
#pragma unroll
        for (unsigned k = 0; k < N; k++) {
#pragma unroll
          for (unsigned ch = 0; ch < 4; ch++)
            if (ch < c)
              u[ch].v[k] = value<DT>(lut, ch, ld<GLOBAL>(p + ch));
          p += step;
        }
        done = true;
      }
    }
  }
  if (!done) {
#pragma unroll
    for (unsigned k = 0; k < N; k++) {
      const uint8_t *r = rows.row(src_y(s, y));
      int sx = src_x(s, a, x);
      const uint8_t *p =
          r && (unsigned)sx < rows.w ? r + (unsigned)sx * c : nullptr;
#pragma unroll
      for (unsigned ch = 0; ch < 4; ch++)
        if (ch < c)
          u[ch].v[k] = value<DT>(lut, ch, p ? ld<GLOBAL>(p + ch) : 0u);
      if (++x == a.ow) {
        x = 0;
        ++y;
      }
    }
  }
#pragma unroll
  for (unsigned ch = 0; ch < 4; ch++)
    if (ch < c) {
      if constexpr (N == 1)
        out[(uint64_t)ch * P + e] = u[ch].v[0];
      else
        *reinterpret_cast<uint4 *>(out + (uint64_t)ch * P + e) = u[ch].q;
    }
}

template <int DT, int LAYOUT, unsigned VEC>
__global__ void __launch_bounds__(kThreads) xform_plain(Args a) {
  typedef typename Out<DT>::T T;
  __shared__ T lut[4 * 256];
  setup_lut<DT>(lut, a);
  __syncthreads();
  const unsigned P = a.oh * a.ow, S = P * a.c;
  for (unsigned n = blockIdx.y; n < a.n; n += gridDim.y) {
    gf_xform_sample s = a.samples[n];
    int bad = check_sample(s, a);
    if (!bad && (s.filtered || s.resize))
      continue; // xform_filtered or xform_resize writes it
    if (bad && blockIdx.x == 0 && threadIdx.x == 0)
      report(a, bad);
    // A refused sample has no rows: all padding, the source never read.
    Rows rows = {a.src + (bad ? 0 : s.src_offset), 0, bad ? 0u : s.h, s.w,
                 s.w * a.c};
    T *out = (T *)a.dst + (uint64_t)n * S;
    const unsigned groups = (LAYOUT == GF_LAYOUT_NCHW ? P : S) / VEC;
    for (unsigned g = blockIdx.x * blockDim.x + threadIdx.x; g < groups;
         g += gridDim.x * blockDim.x) {
      if constexpr (LAYOUT == GF_LAYOUT_NCHW)
        make_chw<DT, VEC, true>(out, g * VEC, P, a, s, lut, rows);
      else
        make_hwc<DT, VEC, true>(out, g * VEC, a, s, lut, rows);
    }
  }
}

// Copies n bytes from global src to shared dst, thread idx of `stride`:
// 16-byte loads for the aligned middle, bytes for the ends.
__device__ void copy_span(uint8_t *dst, const uint8_t *src, unsigned n,
                          unsigned idx, unsigned stride) {
  unsigned head = (unsigned)((16u - ((uintptr_t)src & 15u)) & 15u);
  if (head > n)
    head = n;
  for (unsigned i = idx; i < head; i += stride)
    dst[i] = __ldg(src + i);
  unsigned nv = (n - head) / 16u;
  const uint4 *sv = reinterpret_cast<const uint4 *>(src + head);
  uint8_t *d = dst + head;
  if (((uintptr_t)d & 15u) == 0) {
    for (unsigned i = idx; i < nv; i += stride)
      reinterpret_cast<uint4 *>(d)[i] = __ldg(sv + i);
  } else if (((uintptr_t)d & 3u) == 0) {
    for (unsigned i = idx; i < nv; i += stride) {
      uint4 v = __ldg(sv + i);
      uint32_t *p = reinterpret_cast<uint32_t *>(d + 16u * i);
      p[0] = v.x;
      p[1] = v.y;
      p[2] = v.z;
      p[3] = v.w;
    }
  } else {
    for (unsigned i = idx; i < nv; i += stride) {
      uint4 v = __ldg(sv + i);
      uint32_t w4[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (unsigned b = 0; b < 16; b++)
        d[16u * i + b] = (uint8_t)(w4[b >> 2] >> (8u * (b & 3u)));
    }
  }
  for (unsigned i = head + nv * 16u + idx; i < n; i += stride)
    dst[i] = __ldg(src + i);
}

__device__ __forceinline__ uint32_t load_px(const uint8_t *p, unsigned c) {
  uint32_t v = p[0];
  if (c > 1)
    v |= (uint32_t)p[1] << 8;
  if (c > 2)
    v |= (uint32_t)p[2] << 16;
  if (c > 3)
    v |= (uint32_t)p[3] << 24;
  return v;
}

__device__ __forceinline__ void store_px(uint8_t *p, unsigned c, uint32_t v) {
  p[0] = (uint8_t)v;
  if (c > 1)
    p[1] = (uint8_t)(v >> 8);
  if (c > 2)
    p[2] = (uint8_t)(v >> 16);
  if (c > 3)
    p[3] = (uint8_t)(v >> 24);
}

// Inclusive prefix sum mod 256, per channel, of one row of `w` pixels in
// shared memory, by one whole warp.
__device__ void scan_row(uint8_t *row, unsigned w, unsigned c,
                         unsigned lane) {
  uint32_t carry = 0;
  for (unsigned base = 0; base < w; base += 32u * kScanK) {
    uint32_t v[kScanK], acc = 0;
    unsigned p0 = base + lane * kScanK;
#pragma unroll
    for (unsigned k = 0; k < kScanK; k++) {
      uint32_t px = p0 + k < w ? load_px(row + (p0 + k) * c, c) : 0u;
      acc = __vadd4(acc, px);
      v[k] = acc;
    }
    uint32_t incl = acc;
#pragma unroll
    for (unsigned off = 1; off < 32; off <<= 1) {
      uint32_t t = __shfl_up_sync(0xFFFFFFFFu, incl, off);
      if (lane >= off)
        incl = __vadd4(incl, t);
    }
    uint32_t excl = __shfl_up_sync(0xFFFFFFFFu, incl, 1);
    excl = __vadd4(lane ? excl : 0u, carry);
#pragma unroll
    for (unsigned k = 0; k < kScanK; k++)
      if (p0 + k < w)
        store_px(row + (p0 + k) * c, c, __vadd4(v[k], excl));
    carry = __vadd4(carry, __shfl_sync(0xFFFFFFFFu, incl, 31));
  }
}

// Emits output rows [oy0, oy1) of one sample, all channels, by the whole
// block from `rows` (shared memory), 16 bytes a store where the elements
// line up and one at a time at the ends.
template <int DT, int LAYOUT, unsigned VEC>
__device__ void emit_rows(typename Out<DT>::T *out, unsigned oy0,
                          unsigned oy1, const Args &a,
                          const gf_xform_sample &s,
                          const typename Out<DT>::T *lut, const Rows &rows) {
  if (oy0 >= oy1)
    return;
  const unsigned P = a.oh * a.ow;
  // The elements of those rows: one range of the sample (NHWC) or of each
  // channel plane (NCHW, all planes at once).
  const unsigned per = LAYOUT == GF_LAYOUT_NHWC ? a.ow * a.c : a.ow;
  const unsigned b = oy0 * per, e = oy1 * per;
  unsigned hb = (b + VEC - 1) / VEC * VEC;
  if (hb > e)
    hb = e;
  const unsigned ge = e / VEC, tb = ge * VEC > hb ? ge * VEC : hb;
  for (unsigned i = b + threadIdx.x; i < hb; i += blockDim.x) {
    if constexpr (LAYOUT == GF_LAYOUT_NCHW)
      make_chw<DT, 1, false>(out, i, P, a, s, lut, rows);
    else
      make_hwc<DT, 1, false>(out, i, a, s, lut, rows);
  }
  for (unsigned g = hb / VEC + threadIdx.x; g < ge; g += blockDim.x) {
    if constexpr (LAYOUT == GF_LAYOUT_NCHW)
      make_chw<DT, VEC, false>(out, g * VEC, P, a, s, lut, rows);
    else
      make_hwc<DT, VEC, false>(out, g * VEC, a, s, lut, rows);
  }
  for (unsigned i = tb + threadIdx.x; i < e; i += blockDim.x) {
    if constexpr (LAYOUT == GF_LAYOUT_NCHW)
      make_chw<DT, 1, false>(out, i, P, a, s, lut, rows);
    else
      make_hwc<DT, 1, false>(out, i, a, s, lut, rows);
  }
}

template <int DT, int LAYOUT, unsigned VEC>
__global__ void __launch_bounds__(kFiltThreads) xform_filtered(Args a) {
  typedef typename Out<DT>::T T;
  __shared__ T lut[4 * 256];
  __shared__ __align__(16) uint8_t buf[kFiltBuf];
  const unsigned S = a.oh * a.ow * a.c, c = a.c;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5,
                 nwarps = blockDim.x >> 5;
  bool have_lut = false;
  for (unsigned n = blockIdx.x; n < a.n; n += gridDim.x) {
    gf_xform_sample s = a.samples[n];
    if (!s.filtered || check_sample(s, a))
      continue; // xform_plain writes (or pads) it
    if (!have_lut) {
      setup_lut<DT>(lut, a);
      have_lut = true;
    }
    T *out = (T *)a.dst + (uint64_t)n * S;
    // The top-left part the window needs (see gf_xform_filtered_extent in
    // transform.c): rows [0, vh), columns [0, vw).
    int64_t ylim = (int64_t)s.crop_y + a.oh, xlim = (int64_t)s.crop_x + a.ow;
    if (ylim > (int64_t)s.h)
      ylim = s.h;
    if (xlim > (int64_t)s.w)
      xlim = s.w;
    if (ylim <= 0 || xlim <= 0 || s.crop_y >= (int64_t)s.h ||
        s.crop_x >= (int64_t)s.w)
      ylim = xlim = 0;
    const unsigned vh = (unsigned)ylim, vw = (unsigned)xlim;
    const Rows pad = {buf, 0, 0u, 0u, 0u}; // no rows: all padding
    __syncthreads(); // the table is ready; the previous sample is done
    if (vh == 0) {
      emit_rows<DT, LAYOUT, VEC>(out, 0, a.oh, a, s, lut, pad);
      continue;
    }
    const unsigned rb = vw * c, pitch = s.w * c;
    unsigned R = kFiltBuf / rb - 1;
    if (R > kMaxTileRows)
      R = kMaxTileRows;
    uint8_t *prev = buf, *tile = buf + rb;
    for (unsigned j = threadIdx.x; j < rb; j += blockDim.x)
      prev[j] = 0;
    // Rows above the image.
    unsigned top = s.crop_y < 0 ? (unsigned)(-s.crop_y) : 0u;
    emit_rows<DT, LAYOUT, VEC>(out, 0, top < a.oh ? top : a.oh, a, s, lut,
                               pad);
    const uint8_t *sp = a.src + s.src_offset;
    for (unsigned y0 = 0; y0 < vh; y0 += R) {
      unsigned nr = vh - y0 < R ? vh - y0 : R;
      __syncthreads(); // the previous tile has been emitted
      if (vw == s.w)
        copy_span(tile, sp + (uint64_t)y0 * pitch, nr * rb, threadIdx.x,
                  blockDim.x);
      else
        for (unsigned r = warp; r < nr; r += nwarps)
          copy_span(tile + r * rb, sp + (uint64_t)(y0 + r) * pitch, rb, lane,
                    32);
      __syncthreads();
      for (unsigned r = warp; r < nr; r += nwarps)
        scan_row(tile + r * rb, vw, c, lane);
      __syncthreads();
      if ((rb & 3u) == 0) {
        uint32_t *pv = reinterpret_cast<uint32_t *>(prev);
        uint32_t *tv = reinterpret_cast<uint32_t *>(tile);
        unsigned words = rb >> 2;
        for (unsigned j = threadIdx.x; j < words; j += blockDim.x) {
          uint32_t acc = pv[j];
          for (unsigned r = 0; r < nr; r++) {
            acc = __vadd4(acc, tv[r * words + j]);
            tv[r * words + j] = acc;
          }
          pv[j] = acc;
        }
      } else {
        for (unsigned j = threadIdx.x; j < rb; j += blockDim.x) {
          uint8_t acc = prev[j];
          for (unsigned r = 0; r < nr; r++) {
            acc = (uint8_t)(acc + tile[r * rb + j]);
            tile[r * rb + j] = acc;
          }
          prev[j] = acc;
        }
      }
      __syncthreads();
      // Output rows whose source rows are in this tile.
      int64_t first = (int64_t)y0 - s.crop_y,
              last = (int64_t)y0 + nr - s.crop_y; // exclusive
      if (first < 0)
        first = 0;
      if (last > (int64_t)a.oh)
        last = a.oh;
      const Rows in_tile = {tile, (int)y0, nr, vw, rb};
      if (first < last)
        emit_rows<DT, LAYOUT, VEC>(out, (unsigned)first, (unsigned)last, a,
                                   s, lut, in_tile);
    }
    // Rows below the image.
    int64_t below = (int64_t)vh - s.crop_y;
    if (below < (int64_t)a.oh)
      emit_rows<DT, LAYOUT, VEC>(out, below > 0 ? (unsigned)below : 0u, a.oh,
                                 a, s, lut, pad);
  }
}

// The resampled uint8 pixel (all channels) of output (y, x) of a resized
// sample, on its own: the window's taps and weights per axis recomputed
// from the shared helpers of transform.h (the same float operations and
// fixed-point weights as gf_xform_ref's tables), then each row tap's
// horizontal pass (clipped to uint8) weighted into the vertical sum. The
// per-pixel path: tiles whose taps do not fit shared memory (huge shrink
// factors) and resize_path GF_XFORM_RESIZE_PER_PIXEL.
__device__ __forceinline__ void resize_pixel(const Args &a,
                                             const gf_rs_tile &t, unsigned y,
                                             unsigned x, uint32_t px[4]) {
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
__device__ __forceinline__ void put_px(typename Out<DT>::T *out,
                                       const typename Out<DT>::T *lut,
                                       unsigned P, unsigned c, unsigned e,
                                       const uint32_t px[4]) {
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
__device__ __forceinline__ void tile_sample(gf_rs_tile &t,
                                            const gf_xform_sample &s,
                                            const Args &a) {
  uint32_t gh, gw;
  gf_xform_geom_size(&s, &gh, &gw);
  gf_xform_geom(s.resize, gh, gw, a.oh, a.ow, a.resize_size, &t.rs_h,
                &t.rs_w, &t.off_y, &t.off_x);
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
__device__ __forceinline__ void tile_pixels(const Args &a, const gf_rs_tile &t,
                                            typename Out<DT>::T *out,
                                            const typename Out<DT>::T *lut,
                                            unsigned P) {
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
        put_px<DT, LAYOUT>(out, lut, P, C, (t.y0 + k) * a.ow + t.x0 + lane,
                           px);
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

// The resized samples: a block makes tiles of GF_RS_TILE_H x GF_RS_TILE_W
// output pixels of one sample at a time (grid: groups of tiles x samples),
// in two passes through shared memory (tile_any), or pixel by pixel
// (resize_pixel) where the tile's taps do not fit or resize_path asks
// for it. With resize_all (no xform_plain in the launch) it also
// pads and reports the samples that check_sample refuses, and pads any
// sample not resized. C: the channel count (its own kernel, so its
// registers are its own).
template <int DT, int LAYOUT, unsigned C>
__global__ void __launch_bounds__(kResizeThreads, kResizeBlocks)
    xform_resize(Args a) {
  typedef typename Out<DT>::T T;
  __shared__ T lut[4 * 256];
  __shared__ __align__(16) gf_rs_shared sm;
  setup_lut<DT>(lut, a);
  const unsigned P = a.oh * a.ow, S = P * a.c, tid = threadIdx.x;
  const unsigned tiles_x = (a.ow + GF_RS_TILE_W - 1) / GF_RS_TILE_W;
  const unsigned tiles = tiles_x * ((a.oh + GF_RS_TILE_H - 1) / GF_RS_TILE_H);
  for (unsigned n = blockIdx.y; n < a.n; n += gridDim.y) {
    gf_xform_sample s = a.samples[n];
    const int bad = check_sample(s, a);
    const bool pad = bad || !s.resize;
    if (pad && !a.resize_all)
      continue; // xform_plain writes (or pads) it
    if (bad && blockIdx.x == 0 && tid == 0)
      report(a, bad);
    gf_rs_tile t = {};
    if (!pad)
      tile_sample(t, s, a);
    T *out = (T *)a.dst + (uint64_t)n * S;
    for (unsigned tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      t.y0 = tile / tiles_x * GF_RS_TILE_H;
      t.x0 = tile % tiles_x * GF_RS_TILE_W;
      t.ny = a.oh - t.y0 < GF_RS_TILE_H ? a.oh - t.y0 : GF_RS_TILE_H;
      t.nx = a.ow - t.x0 < GF_RS_TILE_W ? a.ow - t.x0 : GF_RS_TILE_W;
      __syncthreads(); // the value table is ready; the last tile is done
      if (pad) { // refused (its source never read), or not resized
        const uint32_t zero[4] = {0, 0, 0, 0};
        for (unsigned i = tid; i < t.ny * t.nx; i += blockDim.x)
          put_px<DT, LAYOUT>(out, lut, P, C,
                             (t.y0 + i / t.nx) * a.ow + t.x0 + i % t.nx,
                             zero);
        continue;
      }
      tile_any<DT, LAYOUT, C, kResizeThreads>(a, t, sm, out, lut, P);
    }
  }
}

// The band's tiles (a sample the band path does not take), a call of its
// own: inlined, the tiles' registers beside the band's made the band
// path spill.
template <int DT, int LAYOUT, unsigned C>
__device__ __noinline__ void band_tiles(const Args &a, gf_rs_tile t,
                                        gf_rs_shared &sm,
                                        typename Out<DT>::T *out,
                                        const typename Out<DT>::T *lut,
                                        unsigned P, unsigned y0,
                                        unsigned ny) {
  t.y0 = y0;
  t.ny = ny;
  for (unsigned x0 = 0; x0 < a.ow; x0 += GF_RS_TILE_W) {
    t.x0 = x0;
    t.nx = a.ow - x0 < GF_RS_TILE_W ? a.ow - x0 : GF_RS_TILE_W;
    if (x0)
      __syncthreads(); // the last tile is done with the shared state
    tile_any<DT, LAYOUT, C, GF_RSB_THREADS>(a, t, sm, out, lut, P);
  }
}

// The resized samples, the default path (resize_path 0): a block makes
// band blockIdx.x (band_rows output rows, every column) of each of its
// samples, by resize_band.cuh where the sample allows it (gf_rsb_takes:
// nearly every photo to 224), else as the band's tiles (tile_any with
// this block's threads). As xform_resize with resize_all, it also pads
// and reports the samples that check_sample refuses.
template <int DT, int LAYOUT, unsigned C>
__global__ void __launch_bounds__(GF_RSB_THREADS, GF_RSB_BLOCKS)
    xform_resize_band(Args a) {
  typedef typename Out<DT>::T T;
  __shared__ T lut[4 * 256];
  __shared__ __align__(16) union {
    RsbShared<C> band;
    gf_rs_shared tile;
  } sm;
  setup_lut<DT>(lut, a);
  const unsigned P = a.oh * a.ow, S = P * a.c, tid = threadIdx.x;
  const unsigned y0 = blockIdx.x * a.band_rows;
  const unsigned ny = a.oh - y0 < a.band_rows ? a.oh - y0 : a.band_rows;
  for (unsigned n = blockIdx.y; n < a.n; n += gridDim.y) {
    const gf_xform_sample s = a.samples[n];
    const int bad = check_sample(s, a);
    const bool pad = bad || !s.resize;
    if (pad && !a.resize_all)
      continue; // xform_plain writes (or pads) it
    if (bad && blockIdx.x == 0 && tid == 0)
      report(a, bad);
    T *out = (T *)a.dst + (uint64_t)n * S;
    __syncthreads(); // the value table is ready; the last sample is done
    if (pad) { // refused (its source never read), or not resized
      const uint32_t zero[4] = {0, 0, 0, 0};
      for (unsigned i = tid; i < ny * a.ow; i += blockDim.x)
        put_px<DT, LAYOUT>(out, lut, P, C, y0 * a.ow + i, zero);
      continue;
    }
    gf_rs_tile t = {};
    tile_sample(t, s, a);
    if (gf_rsb_takes<C>(t, a.ow)) {
      gf_rsb_band<C>(sm.band, t, y0, ny,
                     [&](unsigned k, unsigned x, const uint32_t px[4]) {
                       put_px<DT, LAYOUT>(out, lut, P, C,
                                          (y0 + k) * a.ow + x, px);
                     });
      continue;
    }
    band_tiles<DT, LAYOUT, C>(a, t, sm.tile, out, lut, P, y0, ny);
  }
}

typedef void (*kernel_fn)(Args);

// The resize kernels for c channels: the tiles (xform_resize) and the
// default path's bands (xform_resize_band).
template <int DT, int LAYOUT, unsigned C>
void pick_resize_c(kernel_fn *tiles, kernel_fn *band) {
  *tiles = xform_resize<DT, LAYOUT, C>;
  *band = xform_resize_band<DT, LAYOUT, C>;
}

template <int DT, int LAYOUT>
void pick_resize_layout(unsigned c, kernel_fn *tiles, kernel_fn *band) {
  switch (c) {
  case 1:
    pick_resize_c<DT, LAYOUT, 1>(tiles, band);
    break;
  case 2:
    pick_resize_c<DT, LAYOUT, 2>(tiles, band);
    break;
  case 3:
    pick_resize_c<DT, LAYOUT, 3>(tiles, band);
    break;
  default:
    pick_resize_c<DT, LAYOUT, 4>(tiles, band);
    break;
  }
}

template <int DT>
void pick_resize(unsigned layout, unsigned c, kernel_fn *tiles,
                 kernel_fn *band) {
  if (layout == GF_LAYOUT_NHWC)
    pick_resize_layout<DT, GF_LAYOUT_NHWC>(c, tiles, band);
  else
    pick_resize_layout<DT, GF_LAYOUT_NCHW>(c, tiles, band);
}

template <int DT, int LAYOUT> void pick(bool vec, kernel_fn *plain,
                                        kernel_fn *filt) {
  constexpr unsigned V = 16u / sizeof(typename Out<DT>::T);
  *plain = vec ? xform_plain<DT, LAYOUT, V> : xform_plain<DT, LAYOUT, 1>;
  *filt = vec ? xform_filtered<DT, LAYOUT, V> : xform_filtered<DT, LAYOUT, 1>;
}

template <int DT> void pick_layout(unsigned layout, bool vec,
                                   kernel_fn *plain, kernel_fn *filt) {
  if (layout == GF_LAYOUT_NHWC)
    pick<DT, GF_LAYOUT_NHWC>(vec, plain, filt);
  else
    pick<DT, GF_LAYOUT_NCHW>(vec, plain, filt);
}

} // namespace

extern "C" cudaError_t gf_launch_xform(const gf_xform_launch *a,
                                       cudaStream_t s) {
  if (!a || s == 0 || s == cudaStreamLegacy)
    return cudaErrorInvalidValue;
  if (a->n == 0)
    return cudaSuccess;
  size_t es = gf_out_dtype_size(a->out_dtype);
  if (!a->src || !a->samples || !a->dst || es == 0 ||
      a->layout > GF_LAYOUT_NCHW || a->out_c < 1 || a->out_c > 4 ||
      a->out_h < 1 || a->out_w < 1 || a->out_h > GF_XFORM_MAX_DIM ||
      a->out_w > GF_XFORM_MAX_DIM ||
      (uint64_t)a->out_h * a->out_w * a->out_c >= GF_XFORM_MAX_SAMPLE_ELEMS ||
      a->n_filtered > a->n || a->n_resized > a->n || a->reserved0 ||
      a->resize_path > GF_XFORM_RESIZE_TILES ||
      a->resize_rows > GF_RSB_ROWS ||
      (uintptr_t)a->dst % es)
    return cudaErrorInvalidValue;
  Args k;
  k.src = a->src;
  k.src_len = a->src_len;
  k.samples = a->samples;
  k.n = a->n;
  k.has_filtered = a->n_filtered ? 1u : 0u;
  k.oh = a->out_h;
  k.ow = a->out_w;
  k.c = a->out_c;
  k.resize_size = a->resize_size;
  k.resize_path = a->resize_path;
  k.band_rows = a->resize_rows ? a->resize_rows : GF_RSB_ROWS;
  for (int i = 0; i < 4; i++) {
    if (!std::isfinite(a->mean[i]) || !std::isfinite(a->std[i]) ||
        a->std[i] < 0)
      return cudaErrorInvalidValue;
    k.mean[i] = a->mean[i];
    k.std[i] = a->std[i] == 0.0f ? 1.0f : a->std[i];
  }
  k.dst = a->dst;
  k.status = a->status;

  // 16-byte stores need every vector 16-byte aligned: dst, and each
  // sample (NHWC) or each channel plane (NCHW) a whole number of vectors.
  const unsigned P = a->out_h * a->out_w, S = P * a->out_c;
  const unsigned V = (unsigned)(16u / es);
  const bool vec = (a->layout == GF_LAYOUT_NCHW ? P : S) % V == 0 &&
                   (uintptr_t)a->dst % 16u == 0;
  kernel_fn plain = nullptr, filt = nullptr, rsz = nullptr, band = nullptr;
  switch (a->out_dtype) {
  case GF_OUT_U8:
    pick_layout<GF_OUT_U8>(a->layout, vec, &plain, &filt);
    pick_resize<GF_OUT_U8>(a->layout, a->out_c, &rsz, &band);
    break;
  case GF_OUT_F32:
    pick_layout<GF_OUT_F32>(a->layout, vec, &plain, &filt);
    pick_resize<GF_OUT_F32>(a->layout, a->out_c, &rsz, &band);
    break;
  case GF_OUT_F16:
    pick_layout<GF_OUT_F16>(a->layout, vec, &plain, &filt);
    pick_resize<GF_OUT_F16>(a->layout, a->out_c, &rsz, &band);
    break;
  default:
    pick_layout<GF_OUT_BF16>(a->layout, vec, &plain, &filt);
    pick_resize<GF_OUT_BF16>(a->layout, a->out_c, &rsz, &band);
    break;
  }

  const unsigned groups =
      (a->layout == GF_LAYOUT_NCHW ? P : S) / (vec ? V : 1u);
  unsigned gx = (groups + kThreads * kItems - 1) / (kThreads * kItems);
  dim3 grid(gx ? gx : 1u, a->n < 65535u ? a->n : 65535u);
  // A batch of resized samples alone needs no xform_plain (its blocks
  // would only skip them): xform_resize pads the refused ones itself.
  k.resize_all = a->n_resized == a->n && !a->n_filtered ? 1u : 0u;
  cudaError_t err = cudaSuccess;
  if (!k.resize_all) {
    plain<<<grid, kThreads, 0, s>>>(k);
    if ((err = cudaGetLastError()) != cudaSuccess)
      return err;
  }
  if (a->n_resized && a->resize_path == 0) {
    dim3 bgrid((a->out_h + k.band_rows - 1) / k.band_rows,
               a->n < 65535u ? a->n : 65535u);
    band<<<bgrid, GF_RSB_THREADS, 0, s>>>(k);
    if ((err = cudaGetLastError()) != cudaSuccess)
      return err;
  } else if (a->n_resized) {
    unsigned tiles = (a->out_w + GF_RS_TILE_W - 1) / GF_RS_TILE_W *
                     ((a->out_h + GF_RS_TILE_H - 1) / GF_RS_TILE_H);
    // A block makes several tiles of a sample (every gx-th), so that its
    // value table (c x 256 divisions and conversions) and the sample's
    // setup serve them all, while the batch still gives a few thousand
    // blocks (several waves: the tiles' costs differ, and the last wave
    // leaves SMs idle). Measured (xform_bench, 256 samples of 49 tiles):
    // 2-3 tiles a block beat 1 (set-up) and 7 (the last wave).
    const uint64_t work = (uint64_t)tiles * a->n;
    const uint64_t want = work / 4096u;
    const uint64_t tpb64 = a->resize_tpb ? a->resize_tpb
                           : want < 1u   ? 1u
                                         : want;
    const unsigned tpb = tpb64 > tiles ? tiles : (unsigned)tpb64;
    const unsigned gx = (tiles + tpb - 1) / tpb;
    dim3 rgrid(gx, a->n < 65535u ? a->n : 65535u);
    rsz<<<rgrid, kResizeThreads, 0, s>>>(k);
    if ((err = cudaGetLastError()) != cudaSuccess)
      return err;
  }
  if (!a->n_filtered)
    return err;
  unsigned fb = a->n < (1u << 20) ? a->n : (1u << 20);
  filt<<<fb, kFiltThreads, 0, s>>>(k);
  return cudaGetLastError();
}
