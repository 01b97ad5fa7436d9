// xform_plain: one thread makes VEC consecutive output elements (16
// bytes: 4 f32, 8 f16/bf16, 16 u8) and stores them at once (NCHW: VEC
// consecutive pixels of every channel plane, so each source pixel is
// read once). Where the VEC elements lie in one output row and inside the
// image, it walks one source pointer (backwards under flip); elsewhere it
// takes each element on its own. Source bytes come through the read-only
// cache, and each is mapped through a per-block table of the 256
// possible values of each channel, which is also what makes the IEEE
// division affordable. The grid is (chunks of a sample, samples).
//
#include "xform_element.cuh"

namespace gf_xk {
namespace {

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

template <int DT, int LAYOUT> struct PickPlain {
  static kernel_fn get(bool vec) {
    constexpr unsigned V = 16u / sizeof(typename Out<DT>::T);
    return vec ? xform_plain<DT, LAYOUT, V> : xform_plain<DT, LAYOUT, 1>;
  }
};

} // namespace

cudaError_t launch_plain(const Args &a, unsigned dtype, unsigned layout,
                         bool vec, dim3 grid, cudaStream_t s) {
  pick<PickPlain>(dtype, layout, vec)<<<grid, kThreads, 0, s>>>(a);
  return cudaGetLastError();
}

} // namespace gf_xk
