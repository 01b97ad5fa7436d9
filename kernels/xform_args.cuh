// The batch transform's kernels and their launcher (xform.cu) share this:
// the kernels' argument block, their launch shapes, and one launch function
// a kernel family, each in its own file so that they compile in parallel
// and a change to one kernel rebuilds only its file:
//   xform_plain.cu        crop/pad, flip, convert, normalise (not resized,
//                         not filtered)
//   xform_filtered.cu     the same with the gradzstd unfilter fused in
//   xform_resize.cu       resized samples, 32 x 32 tiles (xform_tile.cuh)
//   xform_resize_band.cu  resized samples in bands of rows (resize_band.cuh),
//                         the default path; the tiles where a band does not
//                         take a sample
// Element code the kernels share is in xform_element.cuh. C++ only (.cu
// files); the C library sees gf_launch_xform alone (kernels.h).
#ifndef GF_XFORM_ARGS_CUH
#define GF_XFORM_ARGS_CUH

#include "kernels.h"
#include "resize_tile.h"

#include <stdint.h>

namespace gf_xk {

constexpr unsigned kThreads = 256; // xform_plain's blocks
constexpr unsigned kItems = 8;     // groups a thread, so each table serves more
constexpr unsigned kFiltThreads = 512; // a block a sample: all it can use
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
  uint32_t resize_size;  // SHORTER_CENTER_CROP's S (gf_xform_geom)
  uint32_t resize_path;  // gf_xform_launch's
  uint32_t band_rows;    // output rows a band (xform_resize_band), 1-32
  uint32_t resize_all;   // every sample resized: xform_plain is not launched,
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

typedef void (*kernel_fn)(Args);

// The kernel of a family for the run-time (dtype, layout): Pick<DT,
// LAYOUT>::get(rest...) names it.
template <template <int, int> class Pick, typename... A>
kernel_fn pick(unsigned dtype, unsigned layout, A... rest) {
  const bool nhwc = layout == GF_LAYOUT_NHWC;
  switch (dtype) {
  case GF_OUT_U8:
    return nhwc ? Pick<GF_OUT_U8, GF_LAYOUT_NHWC>::get(rest...)
                : Pick<GF_OUT_U8, GF_LAYOUT_NCHW>::get(rest...);
  case GF_OUT_F32:
    return nhwc ? Pick<GF_OUT_F32, GF_LAYOUT_NHWC>::get(rest...)
                : Pick<GF_OUT_F32, GF_LAYOUT_NCHW>::get(rest...);
  case GF_OUT_F16:
    return nhwc ? Pick<GF_OUT_F16, GF_LAYOUT_NHWC>::get(rest...)
                : Pick<GF_OUT_F16, GF_LAYOUT_NCHW>::get(rest...);
  default:
    return nhwc ? Pick<GF_OUT_BF16, GF_LAYOUT_NHWC>::get(rest...)
                : Pick<GF_OUT_BF16, GF_LAYOUT_NCHW>::get(rest...);
  }
}

// The launches, one a file. Each enqueues its kernel for the batch `a`
// (dtype and layout as gf_xform_launch's) on stream s and returns the
// launch's error. vec: 16-byte stores (see xform.cu); c: the channels.
cudaError_t launch_plain(const Args &a, unsigned dtype, unsigned layout,
                         bool vec, dim3 grid, cudaStream_t s);
cudaError_t launch_filtered(const Args &a, unsigned dtype, unsigned layout,
                            bool vec, unsigned blocks, cudaStream_t s);
cudaError_t launch_resize_tiles(const Args &a, unsigned dtype, unsigned layout,
                                unsigned c, dim3 grid, cudaStream_t s);
cudaError_t launch_resize_band(const Args &a, unsigned dtype, unsigned layout,
                               unsigned c, dim3 grid, cudaStream_t s);

} // namespace gf_xk

#endif // GF_XFORM_ARGS_CUH
