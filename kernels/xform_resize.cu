// xform_resize: a block of 128 threads makes 32 x 32 tiles of output
// pixels (grid: groups of tiles x samples; a block makes several tiles
// of one sample, 3 in batches of 256 at 224x224, so that its value table
// and the sample's setup serve them all), the channel count a template
// argument. Two passes through shared memory (resize_tile.h): the
// window's taps and fixed-point weights once a tile column and once a
// tile row (tap extents by warp reductions; the plan made by one
// thread), then for each chunk of the tile's rows (chosen by warp
// ballots) the source row segments it needs copied into shared memory
// with aligned 32-bit loads, the horizontal pass of each (source row, tile
// column) with integer multiply-adds, a thread a column (its weights in
// registers) and a warp a row, kept as uint8 with a column's results in
// consecutive bytes, then the vertical pass of each output pixel, a
// warp a row and a lane a column, four taps a 32-bit load and two dp2a,
// mapped through the value table. 5 barriers a tile (one more a further
// chunk). A row's horizontal pass depends on the output column alone,
// so it is gf_xform_ref's rs_pixel value. Where a tile's source does not
// fit shared memory (RGB shrinks beyond ~7.5x) it is made as two halves
// of 16 columns; where a half does not fit either (beyond ~10x) the
// block makes its pixels one by one, recomputing the taps and weights
// per pixel (resize_pixel; also resize_path GF_XFORM_RESIZE_PER_PIXEL,
// which tests use to check that path everywhere). Reads only inside the
// sample (bytes outside the window's rows are read only as parts of
// aligned words and never used). The other two kernels skip resized
// samples.
// Gradient-filtered samples are never resized here (gf_xform_validate
// refuses them for the GPU; the loader unfilters them on the CPU when a
// resize mode is set).
//
#include "xform_tile.cuh"

namespace gf_xk {
namespace {

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
      if (pad) {       // refused (its source never read), or not resized
        const uint32_t zero[4] = {0, 0, 0, 0};
        for (unsigned i = tid; i < t.ny * t.nx; i += blockDim.x)
          put_px<DT, LAYOUT>(out, lut, P, C,
                             (t.y0 + i / t.nx) * a.ow + t.x0 + i % t.nx, zero);
        continue;
      }
      tile_any<DT, LAYOUT, C, kResizeThreads>(a, t, sm, out, lut, P);
    }
  }
}

template <int DT, int LAYOUT> struct PickResize {
  static kernel_fn get(unsigned c) {
    return c == 1   ? xform_resize<DT, LAYOUT, 1>
           : c == 2 ? xform_resize<DT, LAYOUT, 2>
           : c == 3 ? xform_resize<DT, LAYOUT, 3>
                    : xform_resize<DT, LAYOUT, 4>;
  }
};

} // namespace

cudaError_t launch_resize_tiles(const Args &a, unsigned dtype, unsigned layout,
                                unsigned c, dim3 grid, cudaStream_t s) {
  pick<PickResize>(dtype, layout, c)<<<grid, kResizeThreads, 0, s>>>(a);
  return cudaGetLastError();
}

} // namespace gf_xk
