/* The loco codec's arithmetic, in plain C for both sides: the CPU codec
 * (decode/loco.c) encodes and decodes with it, and the GPU decode kernel
 * (kernels/loco.cu) runs gf_loco_band_decode with one CUDA thread a band,
 * so the two decoders give the same bytes by construction.
 *
 * loco is lossless 8-bit image coding after LOCO-I (the algorithm of
 * JPEG-LS, regular mode only): each sample is predicted from its
 * neighbours (the median edge detector), the prediction is corrected by a
 * per-context bias, and the error is Golomb-Rice coded with a parameter
 * taken from the context's running mean. What is ours: the image is cut
 * into bands of `band_rows` rows coded independently (each band its own
 * bit stream and context state, so a GPU decodes the bands of a batch in
 * parallel), and in colour images the red and blue predictions add green's
 * prediction error at the same pixel (green is coded first).
 *
 * A record (all integers little-endian):
 *   byte 0: 'L' (0x4C); byte 1: version (1); byte 2: band_rows (1-255);
 *   byte 3: 0.
 *   then nb = ceil(h / band_rows) u32 band ends: band_end[b] is where band
 *   b's stream ends, in 32-bit words from the start of the stream area;
 *   strictly increasing (a band's stream is at least one word).
 *   then the stream area: band b's words are [band_end[b-1], band_end[b])
 *   (band_end[-1] = 0). The record is exactly 4 + 4 nb + 4 band_end[nb-1]
 *   bytes. The stream area starts 4-byte aligned within the record.
 * A band's stream: u32 words read MSB first, the last one padded with zero
 * bits; it holds exactly the band's codes (ceil(bits / 32) words).
 *
 * Within a band, rows top to bottom, pixels left to right, and a pixel's
 * channels in coding order: 1, 0, 2, 3 for 3 or 4 channels (green first),
 * 0, 1 else. The first coded channel uses context set 0, the others set 1.
 * A sample's neighbours are the same channel's, inside the band only:
 *   on the band's first row: b = c = d = 0, a = the left sample (0 at x 0);
 *   else b = above, c = above-left (b at x 0), a = left (b at x 0),
 *   d = above-right (b at the last column).
 * Gradients D1 = d - b, D2 = b - c, D3 = c - a, each quantized to -4..4 by
 * gf_loco_q; when the first nonzero of (q1, q2, q3) is negative they are
 * negated and sign = -1 (else +1); the context is
 * Q = (q1 * 9 + q2 + 4) * 9 + q3 + 4 (0..404).
 * Prediction P0 = MED(a, b, c). For channels 0 and 2 of a 3- or 4-channel
 * image, P = clamp(P0 + eG) with eG = green's sample minus green's P0 at
 * the pixel; else P = P0. Then Px = clamp(P + sign * C[Q]) (clamp: to
 * 0..255).
 * Error e = sign * (x - Px), reduced mod 256 to -128..127. k = the least
 * k >= 0 with N[Q] << k >= A[Q]. Mapped m = 2e (e >= 0) or -2e - 1, except
 * when k = 0 and 2 B[Q] <= -N[Q]: 2e + 1 (e >= 0) or -2(e + 1). Code: when
 * m >> k < 23, (m >> k) zero bits, a one, then the low k bits of m; else
 * 23 zero bits, a one, and m - 1 in 8 bits (at most 32 bits a sample).
 * Then the context's update (gf_loco_update): JPEG-LS's, with RESET 32,
 * from A = 4, B = 0, C = 0, N = 1 at the band's start.
 * The decoder takes x = (Px + sign * e) mod 256. */
#ifndef GF_LOCO_BAND_H
#define GF_LOCO_BAND_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GF_LOCO_HD __host__ __device__ __forceinline__
#else
#define GF_LOCO_HD static inline
#endif

#define GF_LOCO_MAGIC 0x4Cu
#define GF_LOCO_VERSION 1u
#define GF_LOCO_HEAD 4u            /* bytes before the band ends */
#define GF_LOCO_BAND_ROWS 8u       /* the encoder's default */
#define GF_LOCO_CONTEXTS 405u      /* a set */
#define GF_LOCO_SETS 2u
#define GF_LOCO_RESET 32
#define GF_LOCO_MAXUN 23           /* unary zeros before the escape */

/* One context's state in 32 bits, so 64 GPU threads keep their contexts
 * in shared memory: A (0 to 8191; at most ~4100 with RESET 32) in bits
 * 0-12, N (1 to 32) in bits 13-18, -B (0 to 31: B is kept in -N < B <= 0)
 * in bits 19-23, C + 128 in bits 24-31. */
typedef uint32_t gf_loco_ctx;

typedef struct gf_loco_st {
  int A, B, C, N;
} gf_loco_st;

GF_LOCO_HD gf_loco_st gf_loco_unpack(gf_loco_ctx x) {
  gf_loco_st t;
  t.A = (int)(x & 0x1FFFu);
  t.N = (int)((x >> 13) & 63u);
  t.B = -(int)((x >> 19) & 31u);
  t.C = (int)(x >> 24) - 128;
  return t;
}

GF_LOCO_HD gf_loco_ctx gf_loco_pack(gf_loco_st t) {
  return (uint32_t)t.A | (uint32_t)t.N << 13 | (uint32_t)(-t.B) << 19 |
         (uint32_t)(t.C + 128) << 24;
}

GF_LOCO_HD void gf_loco_ctx_reset(gf_loco_ctx *ctx) {
  gf_loco_st t = {4, 0, 0, 1};
  gf_loco_ctx v = gf_loco_pack(t);
  for (uint32_t i = 0; i < GF_LOCO_SETS * GF_LOCO_CONTEXTS; i++)
    ctx[i] = v;
}

/* The index of the highest set bit of v (v >= 1): floor(log2 v). */
GF_LOCO_HD uint32_t gf_loco_log2(uint32_t v) {
#ifdef __CUDA_ARCH__
  return 31u - (uint32_t)__clz((int)v);
#else
  return 31u - (uint32_t)__builtin_clz(v);
#endif
}

/* d quantized by the thresholds 3, 7, 21 (JPEG-LS's defaults for 8 bits):
 * sign(d) times (|d| >= 1) + (|d| >= 3) + (|d| >= 7) + (|d| >= 21),
 * without branches. The first three thresholds are 2^j - 1, so their
 * count is min(floor(log2(|d| + 1)), 3). */
GF_LOCO_HD int gf_loco_q(int d) {
  int s = -(d < 0); /* -1 or 0 */
  int m = (d ^ s) - s;
  int lg = (int)gf_loco_log2((uint32_t)m + 1u);
  int q = (lg < 3 ? lg : 3) + (m >= 21);
  return (q ^ s) - s;
}

/* The context of a sample with neighbours a, b, c, d: returns Q and sets
 * *sign (+1 or -1). Without branches (a data-dependent branch here is
 * mispredicted often): r = 81 q1 + 9 q2 + q3 has the sign of the first
 * nonzero of (q1, q2, q3), since |9 q2 + q3| <= 40 < 81 and |q3| <= 4 < 9,
 * and Q = (q1 * 9 + q2 + 4) * 9 + q3 + 4 of the negated triple is |r| + 40. */
GF_LOCO_HD uint32_t gf_loco_context(int a, int b, int c, int d, int *sign) {
  int r = 81 * gf_loco_q(d - b) + 9 * gf_loco_q(b - c) + gf_loco_q(c - a);
  int neg = -(r < 0); /* -1 or 0 */
  *sign = neg | 1;
  return (uint32_t)(((r ^ neg) - neg) + 40);
}

/* MED(a, b, c): min(a, b) when c >= max(a, b), max(a, b) when c <= min(a,
 * b), else a + b - c; that is a + b - c clamped to [min, max]. */
GF_LOCO_HD int gf_loco_med(int a, int b, int c) {
  int mx = a > b ? a : b, mn = a < b ? a : b;
  int p = a + b - c;
  p = p < mn ? mn : p;
  return p > mx ? mx : p;
}

GF_LOCO_HD int gf_loco_clamp(int v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* The least k >= 0 with N << k >= A (N >= 1; A >= 0, below 2^13: a run of
 * zero errors halves it down to 0): N << k with k = log2 A - log2 N has
 * A's highest bit, so k or k + 1 (log2 of A | 1, so that A = 0 gives 0). */
GF_LOCO_HD uint32_t gf_loco_k(const gf_loco_st *x) {
  uint32_t A = (uint32_t)x->A, N = (uint32_t)x->N;
  int d = (int)gf_loco_log2(A | 1u) - (int)gf_loco_log2(N);
  uint32_t k = d > 0 ? (uint32_t)d : 0u;
  return (N << k) < A ? k + 1 : k;
}

/* The context's update after coding error e (-128..127): JPEG-LS's,
 *   A += |e|; B += e; if N == RESET: halve A, B (rounding B's magnitude
 *   up) and N; N += 1;
 *   if B <= -N: B += N, C -= 1 (down to -128), B = max(B, 1 - N);
 *   else if B > 0: B -= N, C += 1 (up to 127), B = min(B, 0);
 * written without data-dependent branches: in the third case B is already
 * within [1 - N, 0] and C unchanged, so the bounds apply to every case.
 * A stays below 2^13: at most 31 errors of |e| <= 128 are added to it
 * between two halvings (RESET 32), N stays in 1..32 and B in -31..0, so
 * the state packs into 32 bits (gf_loco_pack). */
GF_LOCO_HD void gf_loco_update(gf_loco_st *x, int e) {
  int s = -(e < 0); /* -1 or 0 */
  int A = x->A + ((e ^ s) - s), B = x->B + e, N = x->N;
  int C = x->C;
  if (N == GF_LOCO_RESET) { /* once in 32 updates of a context */
    A >>= 1;
    B = B >= 0 ? B >> 1 : -((1 - B) >> 1);
    N >>= 1;
  }
  N++;
  int dir = (B <= -N) - (B > 0); /* 1, -1 or 0 */
  B += dir * N;
  C -= dir;
  C = C < -128 ? -128 : C > 127 ? 127 : C;
  B = B < 1 - N ? 1 - N : B;
  B = B > 0 ? 0 : B;
  x->A = A;
  x->B = B;
  x->C = C;
  x->N = N;
}

/* The mapped value of error e under context x with parameter k. */
GF_LOCO_HD uint32_t gf_loco_map(const gf_loco_st *x, uint32_t k, int e) {
  if (k == 0 && 2 * x->B <= -x->N)
    return e >= 0 ? (uint32_t)(2 * e + 1) : (uint32_t)(-2 * (e + 1));
  return e >= 0 ? (uint32_t)(2 * e) : (uint32_t)(-2 * e - 1);
}

/* Its inverse, without branches: v = m >> 1 or -v - 1 = ~v, by the low
 * bit of m, flipped under the special mapping. */
GF_LOCO_HD int gf_loco_unmap(const gf_loco_st *x, uint32_t k, uint32_t m) {
  uint32_t flip = (uint32_t)((k == 0) & (2 * x->B <= -x->N));
  return (int)(m >> 1) ^ -(int)((m & 1u) ^ flip);
}

/* Coding order of channel i of c. */
GF_LOCO_HD uint32_t gf_loco_chan(uint32_t c, uint32_t i) {
  return c >= 3 && i < 2 ? 1u - i : i;
}

/* The bit reader of one band: words[0, n), zeros past the end (the caller
 * checks the bits used against n afterwards). */
typedef struct gf_loco_bits {
  const uint8_t *p; /* the band's first word */
  uint32_t n;       /* its words */
  uint32_t next;    /* the next word to load */
  uint32_t have;    /* valid bits in acc, MSB-aligned */
  uint64_t acc;
  uint32_t nw;      /* word `next`, loaded one refill ahead (its latency
                       hidden behind the codes before the refill) */
} gf_loco_bits;

GF_LOCO_HD uint32_t gf_loco_word(const uint8_t *p, uint32_t i) {
#ifdef __CUDA_ARCH__
  return ((const uint32_t *)p)[i]; /* the GPU stage aligns the streams */
#else
  const uint8_t *q = p + (size_t)i * 4;
  return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
         (uint32_t)q[3] << 24;
#endif
}

GF_LOCO_HD void gf_loco_bits_init(gf_loco_bits *r, const uint8_t *p,
                                   uint32_t n) {
  r->p = p;
  r->n = n;
  r->next = 0;
  r->have = 0;
  r->acc = 0;
  r->nw = n ? gf_loco_word(p, 0) : 0u;
}

GF_LOCO_HD void gf_loco_fill(gf_loco_bits *r) {
  if (r->have < 32) {
    r->acc |= (uint64_t)r->nw << (32 - r->have);
    r->have += 32;
    r->next++;
    r->nw = r->next < r->n ? gf_loco_word(r->p, r->next) : 0u;
  }
}

GF_LOCO_HD uint32_t gf_loco_clz64(uint64_t v) {
#ifdef __CUDA_ARCH__
  return (uint32_t)__clzll((long long)v);
#else
  return v ? (uint32_t)__builtin_clzll(v) : 64u;
#endif
}

/* Reads one mapped value under parameter k; UINT32_MAX for a malformed
 * code (more than 23 zeros, or a value beyond 255). */
GF_LOCO_HD uint32_t gf_loco_read(gf_loco_bits *r, uint32_t k) {
  gf_loco_fill(r);
  uint32_t z = gf_loco_clz64(r->acc);
  uint32_t m;
  if (z >= GF_LOCO_MAXUN) { /* the escape, or a malformed code: rare */
    if (z > GF_LOCO_MAXUN)
      return UINT32_MAX;
    /* 24 + 8 bits <= 32 <= have */
    m = (uint32_t)(r->acc >> (64 - 32)) & 0xFFu;
    m += 1;
    r->acc <<= 32;
    r->have -= 32;
    return m > 255u ? UINT32_MAX : m;
  }
  /* k <= 13 (A stays below 2^13, gf_loco_update), z <= 22: no shift
   * overflows. */
  if ((z << k) > 255u)
    return UINT32_MAX;
  uint32_t used = z + 1 + k; /* 1 to 23 + k, below 64 */
  m = (z << k) | ((uint32_t)(r->acc >> (64 - used)) & ((1u << k) - 1));
  r->acc <<= used;
  r->have -= used;
  return m > 255u ? UINT32_MAX : m;
}

/* Decodes rows [y0, y1) of a w x c image whose row y starts at
 * img + y * w * c (the band's rows only are read and written), from the
 * band's words p[0, n). ctx: GF_LOCO_SETS * GF_LOCO_CONTEXTS states, reset
 * here. Returns 0, or 1 when the stream is malformed (a bad code, too few
 * or too many words, nonzero padding): the band's pixels are then
 * undefined but nothing outside them was written or read. C is 1 to 4
 * (the GPU kernel passes a constant, so the channel loops unroll and the
 * neighbours stay in registers: each sample reads one byte of the row
 * above, loaded a pixel ahead). */
GF_LOCO_HD int gf_loco_band_decode(const uint8_t *p, uint32_t n, uint8_t *img,
                                   uint32_t w, uint32_t C, uint32_t y0,
                                   uint32_t y1, gf_loco_ctx *ctx) {
  gf_loco_ctx_reset(ctx);
  gf_loco_bits r;
  gf_loco_bits_init(&r, p, n);
  size_t stride = (size_t)w * C;
  for (uint32_t y = y0; y < y1; y++) {
    uint8_t *row = img + (size_t)y * stride;
    const uint8_t *up = y > y0 ? row - stride : (const uint8_t *)0;
    int a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0},
        d[4] = {0, 0, 0, 0};
    if (up)
      for (uint32_t i = 0; i < C; i++) {
        uint32_t ch = gf_loco_chan(C, i);
        a[i] = b[i] = c[i] = up[ch];
        d[i] = w > 1 ? up[C + ch] : b[i];
      }
    for (uint32_t x = 0; x < w; x++) {
      /* The next pixel's above-right, loaded early. */
      int nd[4] = {0, 0, 0, 0};
      if (up && x + 2 < w)
        for (uint32_t i = 0; i < C; i++)
          nd[i] = up[(size_t)(x + 2) * C + gf_loco_chan(C, i)];
      int eg = 0;
      for (uint32_t i = 0; i < C; i++) {
        uint32_t ch = gf_loco_chan(C, i);
        int sign;
        uint32_t q = gf_loco_context(a[i], b[i], c[i], d[i], &sign);
        gf_loco_ctx *cx = &ctx[(i ? GF_LOCO_CONTEXTS : 0u) + q];
        gf_loco_st st = gf_loco_unpack(*cx);
        int p0 = gf_loco_med(a[i], b[i], c[i]);
        int pr = C >= 3 && ch != 3 && i ? gf_loco_clamp(p0 + eg) : p0;
        pr = gf_loco_clamp(pr + sign * st.C);
        uint32_t k = gf_loco_k(&st);
        uint32_t m = gf_loco_read(&r, k);
        if (m == UINT32_MAX)
          return 1;
        int e = gf_loco_unmap(&st, k, m);
        gf_loco_update(&st, e);
        *cx = gf_loco_pack(st);
        int v = (pr + sign * e) & 255;
        row[(size_t)x * C + ch] = (uint8_t)v;
        if (i == 0)
          eg = v - p0;
        /* The next pixel's neighbours. */
        a[i] = v;
        if (up) {
          c[i] = b[i];
          b[i] = d[i];
          d[i] = x + 2 < w ? nd[i] : b[i];
        }
      }
    }
  }
  /* Exactly the words the codes need, and zero padding (acc holds the
   * unread bits of the last word loaded, zeros below them). */
  uint64_t used = (uint64_t)r.next * 32 - r.have;
  if ((used + 31) / 32 != n || r.acc != 0)
    return 1;
  return 0;
}

#endif
