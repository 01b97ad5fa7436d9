// xform_filtered: one block a gradient-filtered sample. The inverse
// filter is a 2-D prefix sum mod 256, so the block walks the rows the
// window needs from the top, up to 32 rows at a time in shared memory:
// each warp scans its rows left to right (pixels packed one channel a
// byte, summed with __vadd4, the running sum passed between lanes by
// shuffles), then each thread carries a few columns down through the
// tile from the previous tile's last row, and the block emits the output
// rows that fall in the tile straight from shared memory with the same
// element code as xform_plain. Only the columns left of the window's
#include "xform_element.cuh"

namespace gf_xk {
namespace {

constexpr unsigned kFiltBuf = 2 * GF_XFORM_GPU_FILTERED_ROW;
constexpr unsigned kMaxTileRows = 32;
constexpr unsigned kScanK = 4; // pixels a lane per scan round

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
__device__ void scan_row(uint8_t *row, unsigned w, unsigned c, unsigned lane) {
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
__device__ void emit_rows(typename Out<DT>::T *out, unsigned oy0, unsigned oy1,
                          const Args &a, const gf_xform_sample &s,
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
    emit_rows<DT, LAYOUT, VEC>(out, 0, top < a.oh ? top : a.oh, a, s, lut, pad);
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
        emit_rows<DT, LAYOUT, VEC>(out, (unsigned)first, (unsigned)last, a, s,
                                   lut, in_tile);
    }
    // Rows below the image.
    int64_t below = (int64_t)vh - s.crop_y;
    if (below < (int64_t)a.oh)
      emit_rows<DT, LAYOUT, VEC>(out, below > 0 ? (unsigned)below : 0u, a.oh, a,
                                 s, lut, pad);
  }
}

template <int DT, int LAYOUT> struct PickFiltered {
  static kernel_fn get(bool vec) {
    constexpr unsigned V = 16u / sizeof(typename Out<DT>::T);
    return vec ? xform_filtered<DT, LAYOUT, V> : xform_filtered<DT, LAYOUT, 1>;
  }
};

} // namespace

cudaError_t launch_filtered(const Args &a, unsigned dtype, unsigned layout,
                            bool vec, unsigned blocks, cudaStream_t s) {
  pick<PickFiltered>(dtype, layout, vec)<<<blocks, kFiltThreads, 0, s>>>(a);
  return cudaGetLastError();
}

} // namespace gf_xk
