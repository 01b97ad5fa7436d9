// The batch transform on the GPU: crop/pad or resize, flip, dtype
// conversion and per-channel normalisation in one pass, with the gradzstd
// unfilter fused in for filtered (not resized) samples. Byte-identical to
// gf_xform_ref (xform_ref.c): the same float expression for the values
// (IEEE sub then IEEE division, no contraction), the same float -> half
// conversions, and the resize's fixed-point integer arithmetic
// (transform.h).
//
// Three kernels, each a file (xform_args.cuh lists them), launched here:
// xform_plain (xform_plain.cu), xform_filtered (xform_filtered.cu) and, for
// resized samples, xform_resize_band (the default path) or xform_resize
// (the tiles).
#include "resize_band.cuh" // GF_RSB_ROWS
#include "xform_args.cuh"

#include <cmath>

using namespace gf_xk;

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
  const unsigned groups =
      (a->layout == GF_LAYOUT_NCHW ? P : S) / (vec ? V : 1u);
  unsigned gx = (groups + kThreads * kItems - 1) / (kThreads * kItems);
  dim3 grid(gx ? gx : 1u, a->n < 65535u ? a->n : 65535u);
  // A batch of resized samples alone needs no xform_plain (its blocks
  // would only skip them): xform_resize pads the refused ones itself.
  k.resize_all = a->n_resized == a->n && !a->n_filtered ? 1u : 0u;
  cudaError_t err = cudaSuccess;
  if (!k.resize_all && (err = launch_plain(k, a->out_dtype, a->layout, vec,
                                           grid, s)) != cudaSuccess)
    return err;
  if (a->n_resized && a->resize_path == 0) {
    dim3 bgrid((a->out_h + k.band_rows - 1) / k.band_rows,
               a->n < 65535u ? a->n : 65535u);
    if ((err = launch_resize_band(k, a->out_dtype, a->layout, a->out_c, bgrid,
                                  s)) != cudaSuccess)
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
    if ((err = launch_resize_tiles(k, a->out_dtype, a->layout, a->out_c, rgrid,
                                   s)) != cudaSuccess)
      return err;
  }
  if (!a->n_filtered)
    return err;
  unsigned fb = a->n < (1u << 20) ? a->n : (1u << 20);
  return launch_filtered(k, a->out_dtype, a->layout, vec, fb, s);
}
