#include "gather.h"

namespace {

constexpr uint32_t kVec = 16; /* bytes a vector load */
/* 16-byte vectors a thread keeps in flight for one tile. */
constexpr uint32_t kPer = GF_GATHER_TILE / (GF_GATHER_THREADS * kVec);
static_assert(kPer * GF_GATHER_THREADS * kVec == GF_GATHER_TILE,
              "a tile is a whole number of vector loads a thread");

__device__ uint32_t find_seg(const gf_gather_seg *segs, uint32_t n,
                             uint64_t tile) {
  uint32_t lo = 0, hi = n; /* the last seg whose tile0 <= tile */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (segs[mid].tile0 <= tile)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

__global__ void __launch_bounds__(GF_GATHER_THREADS)
    gather_kernel(const gf_gather_seg *segs, uint32_t n, uint64_t tiles,
                  uint8_t *dst) {
  __shared__ gf_gather_seg seg;
  for (uint64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    __syncthreads(); /* everyone is done with the previous seg */
    if (threadIdx.x == 0)
      seg = segs[find_seg(segs, n, tile)];
    __syncthreads();
    uint64_t begin = (tile - seg.tile0) * GF_GATHER_TILE;
    uint64_t len = seg.len - begin < GF_GATHER_TILE ? seg.len - begin
                                                    : GF_GATHER_TILE;
    const uint8_t *s = reinterpret_cast<const uint8_t *>(seg.src) + begin;
    uint8_t *d = dst + seg.dst + begin;
    uint64_t vec = 0;
    if (((reinterpret_cast<uintptr_t>(s) | reinterpret_cast<uintptr_t>(d)) &
         (kVec - 1)) == 0) {
      vec = len / kVec;
      const uint4 *s4 = reinterpret_cast<const uint4 *>(s);
      uint4 *d4 = reinterpret_cast<uint4 *>(d);
      if (vec == (uint64_t)kPer * GF_GATHER_THREADS) {
        /* A whole tile: every load first, then every store, so the bus
         * sees kPer requests a thread at once. */
        uint4 v[kPer];
#pragma unroll
        for (uint32_t k = 0; k < kPer; k++)
          v[k] = s4[k * GF_GATHER_THREADS + threadIdx.x];
#pragma unroll
        for (uint32_t k = 0; k < kPer; k++)
          d4[k * GF_GATHER_THREADS + threadIdx.x] = v[k];
      } else {
        for (uint64_t i = threadIdx.x; i < vec; i += GF_GATHER_THREADS)
          d4[i] = s4[i];
      }
      vec *= kVec;
    }
    for (uint64_t i = vec + threadIdx.x; i < len; i += GF_GATHER_THREADS)
      d[i] = s[i];
  }
}

} // namespace

extern "C" cudaError_t gf_launch_gather(const gf_gather_seg *segs, uint32_t n,
                                        uint64_t tiles, uint8_t *dst,
                                        uint32_t max_blocks, cudaStream_t s) {
  if (n == 0 || tiles == 0)
    return cudaSuccess;
  if (!segs || !dst || s == nullptr || s == cudaStreamLegacy)
    return cudaErrorInvalidValue;
  uint64_t grid = max_blocks ? max_blocks : 1;
  if (grid > tiles)
    grid = tiles;
  gather_kernel<<<(unsigned)grid, GF_GATHER_THREADS, 0, s>>>(segs, n, tiles,
                                                              dst);
  return cudaGetLastError();
}
