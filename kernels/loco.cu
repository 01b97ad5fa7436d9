// The loco decoder: a thread decodes a band with decode/loco_band.h's
// gf_loco_band_decode, its context state (810 contexts of 4 bytes) in
// shared memory: 64 threads a block take 207,360 bytes, one block an SM.
// A band is found by its number: a binary search of the samples' first
// bands. Every access is checked against the record, the source and the
// destination, so a malformed record costs only its own sample (zeroed,
// reported).
#include "loco.h"

#include "decode/loco_band.h"

#define LOCO_TPB 64u
#define LOCO_CTX (GF_LOCO_SETS * GF_LOCO_CONTEXTS) // states a band
#define LOCO_SMEM (LOCO_TPB * LOCO_CTX * sizeof(gf_loco_ctx))

__device__ static uint32_t rd32(const uint8_t *p) {
  return *(const uint32_t *)p; // 4-byte aligned: checked by the caller
}

__device__ static void fail(const gf_loco_launch &a, uint32_t j, uint8_t *px,
                            uint64_t bytes) {
  for (uint64_t i = 0; i < bytes; i++)
    px[i] = 0;
  if (a.error) {
    uint32_t old = atomicCAS(a.error, 0u, j + 1);
    if (old != 0 && old > j + 1)
      atomicMin(a.error, j + 1);
  }
}

template <uint32_t C>
__device__ static int band(const uint8_t *p, uint32_t n, uint8_t *img,
                           uint32_t w, uint32_t y0, uint32_t y1,
                           gf_loco_ctx *ctx) {
  return gf_loco_band_decode(p, n, img, w, C, y0, y1, ctx);
}

__global__ void __launch_bounds__(LOCO_TPB)
    gf_loco_kernel(const gf_loco_launch a) {
  extern __shared__ gf_loco_ctx smem_ctx[];
  gf_loco_ctx *ctx = smem_ctx + (size_t)threadIdx.x * LOCO_CTX;
  uint32_t lanes = gridDim.x * blockDim.x;
  for (uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < a.bands;
       g += lanes) {
    // The sample: the last j with band0 <= g among those with records.
    uint32_t lo = 0, hi = a.n;
    while (hi - lo > 1) {
      uint32_t mid = (lo + hi) / 2;
      if (a.items[mid].band0 <= g)
        lo = mid;
      else
        hi = mid;
    }
    uint32_t j = lo;
    const gf_loco_item it = a.items[j];
    const gf_xform_sample smp = a.samples[j];
    uint64_t off = smp.src_offset;
    uint64_t bytes = (uint64_t)smp.h * smp.w * smp.c;
    if (!it.len || g < it.band0 || smp.c < 1 || smp.c > 4 ||
        off > a.dst_len || bytes > a.dst_len - off)
      continue; // not a record (the host never numbers such a band)
    uint8_t *img = a.dst + off;
    uint32_t b = g - it.band0;
    const uint8_t *rec = a.src + off;
    bool ok = off <= a.src_len && it.len <= a.src_len - off &&
              (off & 3) == 0 && it.len >= GF_LOCO_HEAD &&
              rec[0] == GF_LOCO_MAGIC && rec[1] == GF_LOCO_VERSION &&
              rec[2] != 0;
    uint32_t rows = ok ? rec[2] : 1;
    uint32_t nb = (smp.h + rows - 1) / rows;
    uint64_t head = GF_LOCO_HEAD + 4ull * nb;
    ok = ok && b < nb && head <= it.len;
    uint32_t start = 0, end = 0;
    if (ok) {
      start = b ? rd32(rec + GF_LOCO_HEAD + 4ull * (b - 1)) : 0u;
      end = rd32(rec + GF_LOCO_HEAD + 4ull * b);
      ok = start < end && head + 4ull * end <= it.len;
    }
    uint32_t y0 = b * rows, y1 = y0 + rows < smp.h ? y0 + rows : smp.h;
    if (ok) {
      const uint8_t *p = rec + head + 4ull * start;
      uint32_t nw = end - start;
      int bad;
      switch (smp.c) {
      case 1: bad = band<1>(p, nw, img, smp.w, y0, y1, ctx); break;
      case 2: bad = band<2>(p, nw, img, smp.w, y0, y1, ctx); break;
      case 3: bad = band<3>(p, nw, img, smp.w, y0, y1, ctx); break;
      default: bad = band<4>(p, nw, img, smp.w, y0, y1, ctx); break;
      }
      ok = !bad;
    }
    if (!ok && b < nb && y0 < smp.h) {
      uint64_t row = (uint64_t)smp.w * smp.c;
      fail(a, j, img + y0 * row, (uint64_t)(y1 - y0) * row);
    } else if (!ok) {
      fail(a, j, img, 0);
    }
  }
}

// Samples whose bytes are already pixels: a block of 256 threads a
// sample, 16 bytes a thread where both sides allow.
__global__ void __launch_bounds__(256) gf_loco_copy(const gf_loco_launch a) {
  uint32_t j = blockIdx.x;
  if (j >= a.n || a.items[j].len)
    return;
  const gf_xform_sample smp = a.samples[j];
  uint64_t off = smp.src_offset;
  uint64_t bytes = (uint64_t)smp.h * smp.w * smp.c;
  if (off > a.src_len || bytes > a.src_len - off || off > a.dst_len ||
      bytes > a.dst_len - off)
    return;
  const uint8_t *s = a.src + off;
  uint8_t *d = a.dst + off;
  uint64_t i = 0;
  if (((uintptr_t)s & 15) == 0 && ((uintptr_t)d & 15) == 0) {
    uint64_t n16 = bytes / 16;
    for (uint64_t k = threadIdx.x; k < n16; k += blockDim.x)
      ((uint4 *)d)[k] = ((const uint4 *)s)[k];
    i = n16 * 16;
  }
  for (uint64_t k = i + threadIdx.x; k < bytes; k += blockDim.x)
    d[k] = s[k];
}

extern "C" cudaError_t gf_launch_loco(const gf_loco_launch *a,
                                      cudaStream_t s) {
  if (!a || !a->src || !a->dst || !a->samples || !a->items || s == nullptr ||
      s == cudaStreamLegacy)
    return cudaErrorInvalidValue;
  if (a->n == 0)
    return cudaSuccess;
  if (a->ncopy)
    gf_loco_copy<<<a->n, 256, 0, s>>>(*a);
  if (a->bands) {
    cudaError_t e = cudaFuncSetAttribute(
        gf_loco_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        (int)LOCO_SMEM);
    if (e != cudaSuccess)
      return e;
    uint32_t blocks = (a->bands + LOCO_TPB - 1) / LOCO_TPB;
    if (blocks > 65535)
      blocks = 65535;
    gf_loco_kernel<<<blocks, LOCO_TPB, LOCO_SMEM, s>>>(*a);
  }
  return cudaGetLastError();
}
