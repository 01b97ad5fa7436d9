/* The band path of the resize (CUDA only, included by kernels/xform.cu):
 * how one block of GF_RSB_THREADS threads makes a band of up to
 * GF_RS_TILE_H output rows across the whole output width of one resized
 * sample, with exactly the arithmetic of gf_xform_ref (lib/xform/
 * transform.h's "Resampling", the same helpers as the tiles of
 * resize_tile.h), so the output is the same bytes.
 *
 * Why a band and not the tiles: a 32 x 32 tile pays its set-up (taps and
 * weights of its 32 columns and 32 rows, the staging of its source rows,
 * five barriers) for 1,024 pixels; a band's columns are a thread's own for
 * the whole band, so a column's taps and weights are made once, held in
 * registers, and serve 32 rows (7,168 pixels at 224 wide), and the
 * horizontal pass reads the source straight from global memory (the L1
 * cache holds a warp's row segment) with no staging and two barriers a
 * chunk. Its loads were what the kernel waited on: reading a column's
 * taps of a row as 3-5 words instead of 9-15 bytes (RGB, 3-5 taps) took
 * Resize + CenterCrop from 0.122 to 0.117 ms (bench/RESULTS.md).
 *
 * Thread x is output column x (the output at most GF_RSB_THREADS wide).
 * The steps of a band (output rows [y0, y0 + ny)):
 *  1. Set-up: thread x makes column x's taps [lo, lo + n) and fixed-point
 *     weights (gf_rs_taps, gf_rs_tri in tap order, gf_rs_weight) into
 *     registers (two 16-bit weights a word, for dp2a), n = 0 for a
 *     column outside the resampled window (padding) or past the output;
 *     threads k < ny make row k's, packed two 16-bit weights a word in
 *     shared memory (zero past the row's own taps).
 *  2. For each chunk of rows [a, b) whose source rows [r0, r1) fit the
 *     results' room (RsbRoom<C>::cap rows; every row's taps fit: the band
 *     path takes only samples whose vertical support allows it), every
 *     warp finds the same chunk from the shared row table (ballots, lane
 *     k band row k), then
 *     a. the horizontal pass: thread x, for each source row r of the
 *        chunk, sums its n taps of each channel (loops unrolled to the
 *        block's most taps of a column, 2 to 8: a branch the same in
 *        every thread) (8192 + sum of weight x byte, clipped to uint8:
 *        rs_pixel's inner loop), its bytes read as aligned 32-bit words
 *        and paired by byte permutes for dp2a (gf_rsb_hwords; byte by
 *        byte where a word would reach outside the sample), and stores
 *        the byte at position r - r0 of its column's results (a column's
 *        results are consecutive bytes; an odd word stride between
 *        columns puts a warp's 32 columns in 32 banks);
 *     b. barrier; the vertical pass: thread x, for each output row k of
 *        the chunk, gf_rs_vpass over its results (the tiles' vertical
 *        pass; the row's weights the same in every thread: broadcast),
 *        then emit(k, x, px) stores the pixel;
 *     c. barrier before the next chunk overwrites the results.
 * Which samples take the band path (gf_rsb_takes): output width at most
 * GF_RSB_THREADS, horizontal support at most GF_RSB_MAX_SX (a column has
 * at most GF_RSB_KX taps: n <= 2 support + 1), vertical support at most
 * RsbRoom<C>::max_sy (a row's taps fit a chunk). For the others the
 * same block makes its band as 32x32 tiles (resize_tile.h). */
#ifndef GF_RESIZE_BAND_CUH
#define GF_RESIZE_BAND_CUH

#include "resize_tile.h"

#include <stdint.h>

#define GF_RSB_THREADS 256u
#define GF_RSB_ROWS GF_RS_TILE_H /* the most rows a band: a warp's lanes */
#define GF_RSB_KX 8u             /* column taps held in registers */
#define GF_RSB_MAX_SX 3.25f      /* n <= 2 x 3.25 + 1 < 8 + 1 */

/* Words of results a (channel, column): odd, sized so that a block's
 * results stay within GF_RSB_HS_BYTES for 256 columns of C channels. */
/* The bytes a block's results may take: with the value table and the row
 * weights, five blocks share an SM's shared memory (GF_RSB_BLOCKS). */
#define GF_RSB_HS_BYTES 33000u
/* Blocks an SM: 48 registers a thread. Measured on an H200
 * (bench/xform_bench, RandomResizedCrop and Resize + CenterCrop of 256
 * photos of 200-500 px to 224): the kernel waits on its loads, not on its
 * issue, so five blocks with 29-row chunks beat four with 45-row ones
 * (0.117 against 0.125 ms); six (40 registers, 21-row chunks) did not
 * beat five. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define GF_RSB_BLOCKS 4 /* sm_75: at most 1,024 threads an SM */
#else
#define GF_RSB_BLOCKS 5
#endif
template <unsigned C> struct RsbRoom {
  static constexpr unsigned raw = GF_RSB_HS_BYTES / (C * GF_RSB_THREADS * 4u);
  static constexpr unsigned hsw_even = raw > 15u ? 15u : raw;
  static constexpr unsigned hsw = (hsw_even & 1u) ? hsw_even : hsw_even - 1u;
  /* source rows a chunk: the vertical pass reads whole words from a row's
   * first tap, up to 7 bytes past its last */
  static constexpr unsigned cap = 4u * hsw - 7u;
  /* a row's taps at most cap: n <= 2 support + 1 */
  static constexpr float max_sy = (float)(cap - 2u) / 2.0f;
  static constexpr unsigned wy_words = 2u * ((cap + 3u) / 4u);
};

/* Step 2a for rows [r0, r1), byte by byte: column x's KX-tap horizontal
 * sums (taps [cn, KX) skipped by predicate, so no byte outside the
 * column's taps is read), byte r - r0 of its results. The path of a chunk
 * whose words would reach outside the sample's bytes. */
template <unsigned C, unsigned KX>
__device__ __forceinline__ void gf_rsb_hbytes(const uint8_t *p, uint32_t pitch,
                                              int32_t r0, int32_t r1,
                                              int32_t cn, const uint32_t *w2,
                                              uint8_t *hsb, uint32_t plane) {
  for (int32_t r = r0; r < r1; r++, p += pitch) {
    uint32_t acc[4] = {GF_RS_HALF, GF_RS_HALF, GF_RS_HALF, GF_RS_HALF};
#pragma unroll
    for (int32_t j = 0; j < (int32_t)KX; j++)
      if (j < cn) {
        const uint32_t w = w2[j / 2] >> (16 * (j & 1)) & 0xFFFFu;
#pragma unroll
        for (unsigned ch = 0; ch < C; ch++)
          acc[ch] += w * __ldg(p + j * C + ch);
      }
#pragma unroll
    for (unsigned ch = 0; ch < C; ch++)
      hsb[4u * ch * plane + (uint32_t)(r - r0)] = (uint8_t)gf_rs_clip8(acc[ch]);
  }
}

/* Step 2a for rows [r0, r1), by words: the same sums from aligned 32-bit
 * loads. A row's KX x C bytes from p lie in NA aligned words from
 * p & ~3; shifted by p & 3 (funnel shifts) they are NB words whose byte
 * i is tap i / C, channel i % C, so where each byte lies is known when
 * the kernel is compiled. A byte permute puts a channel's bytes of taps
 * j and j + 1 side by side, and one dp2a adds both products (the 16-bit
 * weights packed two a word in w2): the same integer sums as the
 * byte-by-byte path. Bytes of taps past the column's own (j >= cn) are
 * read but weigh 0; the caller makes sure every word read lies inside the
 * sample's bytes. The intrinsics are called directly, not through
 * resize_tile.h's host-and-device wrappers (gf_rs_ld4, gf_rs_bytes4,
 * gf_rs_dp2a_lo): with those this kernel spilled more registers and lost
 * its gain (H200: Resize + CenterCrop +3.0-3.1% instead of +2.8%). */
template <unsigned C, unsigned KX>
__device__ __forceinline__ void gf_rsb_hwords(const uint8_t *p, uint32_t pitch,
                                              int32_t r0, int32_t r1,
                                              const uint32_t *w2,
                                              uint8_t *hsb, uint32_t plane) {
  constexpr unsigned NB = (KX * C + 3u) / 4u;
  constexpr unsigned NA = (KX * C + 6u) / 4u;
  for (int32_t r = r0; r < r1; r++, p += pitch) {
    const uint32_t sh = 8u * ((uint32_t)(uintptr_t)p & 3u);
    const unsigned int *q =
        (const unsigned int *)((uintptr_t)p & ~(uintptr_t)3u);
    uint32_t a[NA + 1], b[NB];
#pragma unroll
    for (unsigned i = 0; i < NA; i++)
      a[i] = __ldg(q + i);
    a[NA] = 0u;
#pragma unroll
    for (unsigned i = 0; i < NB; i++)
      b[i] = __funnelshift_r(a[i], a[i + 1], sh);
#pragma unroll
    for (unsigned ch = 0; ch < C; ch++) {
      uint32_t acc = GF_RS_HALF;
#pragma unroll
      for (unsigned j = 0; j < KX; j += 2) {
        const unsigned i0 = j * C + ch, wi = i0 / 4u;
        uint32_t v;
        if (j + 1u < KX) /* byte i0 + C lies in word wi or wi + 1 */
          v = __byte_perm(b[wi], wi + 1u < NB ? b[wi + 1u] : 0u,
                          (i0 & 3u) | (i0 + C - 4u * wi) << 4);
        else /* tap j alone: the second byte weighs 0 */
          v = b[wi] >> (8u * (i0 & 3u));
        acc = __dp2a_lo(w2[j / 2u], v, acc);
      }
      hsb[4u * ch * plane + (uint32_t)(r - r0)] = (uint8_t)gf_rs_clip8(acc);
    }
  }
}

/* Step 2a for rows [r0, r1): by words where every word of the chunk's
 * rows lies inside the sample's bytes [img, img_end), else byte by
 * byte. */
template <unsigned C, unsigned KX>
__device__ __forceinline__ void gf_rsb_hrows(const gf_rs_tile &t,
                                             const uint8_t *p, int32_t r0,
                                             int32_t r1, int32_t cn,
                                             const uint32_t *w2, uint8_t *hsb,
                                             uint32_t plane) {
  constexpr unsigned NA = (KX * C + 6u) / 4u;
  if (r1 <= r0)
    return;
  const uintptr_t first = (uintptr_t)p & ~(uintptr_t)3u;
  const uintptr_t last =
      ((uintptr_t)p + (uint64_t)(uint32_t)(r1 - r0 - 1) * t.pitch) &
      ~(uintptr_t)3u;
  if (first >= (uintptr_t)t.img && last + 4u * NA <= (uintptr_t)t.img_end)
    gf_rsb_hwords<C, KX>(p, t.pitch, r0, r1, w2, hsb, plane);
  else
    gf_rsb_hbytes<C, KX>(p, t.pitch, r0, r1, cn, w2, hsb, plane);
}

template <unsigned C> struct RsbShared {
  int32_t rlo[GF_RSB_ROWS], rn[GF_RSB_ROWS];
  uint32_t kmax[GF_RSB_THREADS / 32u]; /* a warp's most column taps */
  uint32_t wy[GF_RSB_ROWS][RsbRoom<C>::wy_words];
  uint32_t hs[C * GF_RSB_THREADS * RsbRoom<C>::hsw];
};

/* Whether a resized sample takes the band path (t from tile_sample). */
template <unsigned C>
__device__ __forceinline__ bool gf_rsb_takes(const gf_rs_tile &t,
                                             unsigned ow) {
  return ow <= GF_RSB_THREADS && t.ax.support <= GF_RSB_MAX_SX &&
         t.ay.support <= RsbRoom<C>::max_sy;
}

/* One band: output rows [y0, y0 + ny) of the sample t describes (t.ow
 * columns). emit(k, x, px) stores pixel (y0 + k, x); it is called for
 * every pixel of the band, px 0 for padding. Called by all threads after
 * a barrier (the shared state is free); returns after a barrier. */
template <unsigned C, typename Emit>
__device__ void gf_rsb_band(RsbShared<C> &sm, const gf_rs_tile &t,
                            unsigned y0, unsigned ny, Emit emit) {
  typedef RsbRoom<C> R;
  const unsigned x = threadIdx.x;
  /* Step 1: column x in registers. */
  int32_t clo = 0, cn = 0;
  uint32_t w2[GF_RSB_KX / 2u]; /* taps 2i and 2i + 1, 16 bits each */
  {
    float cen = 0.0f;
    if (x < t.ow) {
      int64_t i = (int64_t)t.off_x + (t.flip ? t.ow - 1u - x : x);
      if (i >= 0 && i < (int64_t)t.rs_w)
        cen = gf_rs_taps(&t.ax, (uint32_t)i, &clo, &cn);
    }
    float total = 0.0f;
#pragma unroll
    for (int32_t j = 0; j < (int32_t)GF_RSB_KX; j++)
      if (j < cn)
        total = GF_FADD(total, gf_rs_tri(&t.ax, clo + j, cen));
#pragma unroll
    for (int32_t j = 0; j < (int32_t)GF_RSB_KX; j += 2) {
      w2[j / 2] = j < cn ? gf_rs_weight(&t.ax, clo + j, cen, total) : 0u;
      if (j + 1 < cn)
        w2[j / 2] |= gf_rs_weight(&t.ax, clo + j + 1, cen, total) << 16;
    }
  }
  /* Step 1: the band's rows in the shared table. */
  if (x < GF_RSB_ROWS) {
    int32_t lo = 0, n = 0;
    float cen = 0.0f;
    if (x < ny) {
      int64_t i = (int64_t)t.off_y + y0 + x;
      if (i >= 0 && i < (int64_t)t.rs_h)
        cen = gf_rs_taps(&t.ay, (uint32_t)i, &lo, &n);
    }
    float total = 0.0f;
    for (int32_t j = 0; j < n; j++)
      total = GF_FADD(total, gf_rs_tri(&t.ay, lo + j, cen));
    /* the words the vertical pass reads: 2 kq, kq = (n + 3) / 4 */
    const uint32_t words = 2u * (((uint32_t)n + 3u) / 4u);
    for (uint32_t w = 0; w < words; w++) {
      uint32_t word = 0;
      for (uint32_t h = 0; h < 2; h++) {
        int32_t j = (int32_t)(2u * w + h);
        if (j < n)
          word |= gf_rs_weight(&t.ay, lo + j, cen, total) << (16u * h);
      }
      sm.wy[x][w] = word;
    }
    sm.rlo[x] = lo;
    sm.rn[x] = n;
  }
  /* The most taps of a column in the block (every warp's, then the
   * block's after the barrier): the horizontal pass's loops unrolled to
   * it, the same branch in every thread. */
  uint32_t wmax = (uint32_t)cn;
#pragma unroll
  for (unsigned o = 16; o > 0; o >>= 1) {
    const uint32_t v = __shfl_xor_sync(0xFFFFFFFFu, wmax, o);
    wmax = v > wmax ? v : wmax;
  }
  if ((x & 31u) == 0)
    sm.kmax[x / 32u] = wmax;
  __syncthreads();
  uint32_t kx = 0;
#pragma unroll
  for (unsigned w = 0; w < GF_RSB_THREADS / 32u; w++)
    kx = sm.kmax[w] > kx ? sm.kmax[w] : kx;

  const uint8_t *src = t.win + (uint64_t)(uint32_t)clo * C;
  uint8_t *hsb = (uint8_t *)(sm.hs + x * R::hsw);
  const unsigned plane = t.ow * R::hsw; /* words a channel */
  for (unsigned a = 0; a < ny;) {
    /* The chunk from row a, the same in every warp (lane k band row k:
     * a band is a warp's 32 rows): V the rows that need source rows, r0
     * the first one's first tap; the chunk ends at the first row whose
     * taps end more than cap rows after r0 (taps never move back as the
     * row goes down); r1 the end of its last row's taps. */
    const unsigned lane = x & 31u;
    const bool valid = lane >= a && lane < ny && sm.rn[lane] > 0;
    const uint32_t V = __ballot_sync(0xFFFFFFFFu, valid);
    const int32_t r0 = V ? sm.rlo[__ffs((int)V) - 1] : 0;
    const uint32_t B = __ballot_sync(
        0xFFFFFFFFu,
        valid && (uint32_t)(sm.rlo[lane] + sm.rn[lane] - r0) > R::cap);
    const unsigned b = B ? (unsigned)__ffs((int)B) - 1u : ny;
    const uint32_t L = b >= 32u ? V : V & ((1u << b) - 1u);
    const unsigned last = 31u - (unsigned)__clz((int)L);
    const int32_t r1 = L ? sm.rlo[last] + sm.rn[last] : r0;
    /* a. The horizontal pass of the chunk's source rows, column x. */
    if (cn > 0) {
      const uint8_t *p = src + (uint64_t)(uint32_t)r0 * t.pitch;
      switch (kx) {
      case 0:
      case 1:
      case 2:
        gf_rsb_hrows<C, 2>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      case 3:
        gf_rsb_hrows<C, 3>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      case 4:
        gf_rsb_hrows<C, 4>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      case 5:
        gf_rsb_hrows<C, 5>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      case 6:
        gf_rsb_hrows<C, 6>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      default:
        gf_rsb_hrows<C, GF_RSB_KX>(t, p, r0, r1, cn, w2, hsb, plane);
        break;
      }
    }
    __syncthreads();
    /* b. The vertical pass of rows [a, b), column x. */
    if (x < t.ow)
      for (unsigned k = a; k < b; k++) {
        uint32_t px[4] = {0, 0, 0, 0};
        const int32_t n = sm.rn[k];
        if (n > 0 && cn > 0) {
          const uint32_t off = (uint32_t)(sm.rlo[k] - r0);
          gf_rs_vpass(sm.hs + x * R::hsw + off / 4u, plane, sm.wy[k],
                      ((uint32_t)n + 3u) / 4u, off & 3u, px, C);
        }
        emit(k, x, px);
      }
    __syncthreads();
    a = b;
  }
}

#endif /* GF_RESIZE_BAND_CUH */
