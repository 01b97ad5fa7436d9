// The resized samples on the default path (resize_path 0): a block makes
// a band of output rows of each of its samples, by resize_band.cuh where
// the sample allows it, else as the band's tiles (xform_tile.cuh).
#include "resize_band.cuh"
#include "xform_tile.cuh"

namespace gf_xk {
namespace {

// The band's tiles (a sample the band path does not take), a call of its
// own: inlined, the tiles' registers beside the band's made the band
// path spill.
template <int DT, int LAYOUT, unsigned C>
__device__ __noinline__ void
band_tiles(const Args &a, gf_rs_tile t, gf_rs_shared &sm,
           typename Out<DT>::T *out, const typename Out<DT>::T *lut, unsigned P,
           unsigned y0, unsigned ny) {
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
    if (pad) {       // refused (its source never read), or not resized
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
                       put_px<DT, LAYOUT>(out, lut, P, C, (y0 + k) * a.ow + x,
                                          px);
                     });
      continue;
    }
    band_tiles<DT, LAYOUT, C>(a, t, sm.tile, out, lut, P, y0, ny);
  }
}

template <int DT, int LAYOUT> struct PickBand {
  static kernel_fn get(unsigned c) {
    return c == 1   ? xform_resize_band<DT, LAYOUT, 1>
           : c == 2 ? xform_resize_band<DT, LAYOUT, 2>
           : c == 3 ? xform_resize_band<DT, LAYOUT, 3>
                    : xform_resize_band<DT, LAYOUT, 4>;
  }
};

} // namespace

cudaError_t launch_resize_band(const Args &a, unsigned dtype, unsigned layout,
                               unsigned c, dim3 grid, cudaStream_t s) {
  pick<PickBand>(dtype, layout, c)<<<grid, GF_RSB_THREADS, 0, s>>>(a);
  return cudaGetLastError();
}

} // namespace gf_xk
