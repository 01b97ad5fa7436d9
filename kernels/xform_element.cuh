// Device code the batch transform's kernels share: the value table (a
// pixel value to its output element), the checks of a sample, the source
// row and column of an output element, and the element makers of the
// plain and filtered kernels (make_hwc, make_chw). Included by the kernel
// files only; everything here has internal linkage.
#ifndef GF_XFORM_ELEMENT_CUH
#define GF_XFORM_ELEMENT_CUH

#include "xform_args.cuh"

#include <errno.h>

namespace gf_xk {
namespace {

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
  if ((s.geom_h == 0) != (s.geom_w == 0) || s.geom_h > GF_XFORM_MAX_RESAMPLED ||
      s.geom_w > GF_XFORM_MAX_RESAMPLED)
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
__device__ __forceinline__ void
make_hwc(typename Out<DT>::T *out, unsigned e, const Args &a,
         const gf_xform_sample &s, const typename Out<DT>::T *lut,
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

} // namespace
} // namespace gf_xk

#endif // GF_XFORM_ELEMENT_CUH
