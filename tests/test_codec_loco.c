/* The loco codec (lib/decode/loco.c; the format and the arithmetic in
 * lib/decode/loco_band.h, whose header comment is the spec):
 * - the arithmetic (written without branches) against the spec's plain
 *   statement of it, over every value a context can reach;
 * - records derived by hand from the spec, byte for byte;
 * - round trips of many sizes (1-row and 1-column images, heights not a
 *   multiple of the band), 1 to 4 channels, bands of 1, 2, 3, 8 and 255
 *   rows, constant, noise, checkerboard, gradient and photo-like content,
 *   each record within 4 + 8 nb + 4 h w c bytes;
 * - damage: every truncation and every single-byte change of a small
 *   record, a dense sample of them for a larger one, are an error or a
 *   decode that stays inside the image (ASan watches; guard bytes here);
 *   gf_loco_check names what is wrong with a header, table or length;
 *   the band decoder writes only its band's rows;
 * - the dispatcher: gf_decode_shape with and without the bytes, gf_decode
 *   with channel conversion, gf_encode's levels and its refusal of u16. */
#include "testutil.h"
#include "decode/decode.h"
#include "decode/loco_band.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64
#define GUARD_BYTE 0xA5

/* A buffer of n bytes between two guards, for a decode that must not
 * write outside its image. */
typedef struct guarded {
  uint8_t *base;
  uint8_t *p;
  size_t n;
} guarded;

static guarded guarded_new(size_t n) {
  guarded g;
  g.base = malloc(n + 2 * GUARD);
  g.p = g.base + GUARD;
  g.n = n;
  memset(g.base, GUARD_BYTE, n + 2 * GUARD);
  return g;
}

static bool guards_intact(const guarded *g) {
  for (size_t i = 0; i < GUARD; i++)
    if (g->base[i] != GUARD_BYTE || g->p[g->n + i] != GUARD_BYTE)
      return false;
  return true;
}

static uint64_t bound(uint32_t h, uint32_t w, uint32_t c, uint32_t rows) {
  uint64_t nb = (h + rows - 1) / rows;
  return 4 + 8 * nb + 4ull * h * w * c;
}

/* ---- records derived by hand ------------------------------------------- */

/* Each case's bytes follow from loco_band.h's header comment alone.
 * Notation: the context's state (A, B, C, N), fresh (4, 0, 0, 1); k the
 * least k with N << k >= A; m the mapped error; codes written MSB first.
 *
 * Case 1: 1x3 gray [10, 0, 5], bands of 8 rows (one band).
 *  x=0: first row of the band: a = b = c = d = 0. q = (0, 0, 0), sign +1,
 *       Q = (0*9 + 0 + 4)*9 + 0 + 4 = 40. P0 = MED(0,0,0) = 0, C[40] = 0:
 *       Px = 0. e = 10. k = 2 (1<<2 = 4 >= 4). m = 2e = 20; 20 >> 2 = 5:
 *       5 zeros, a one, low 2 bits 00: 00000100.
 *       Update: A = 14, B = 10, N = 2; B > 0: B = 8, C = 1, B = 0.
 *  x=1: a = 10, b = c = d = 0. D3 = c - a = -10: q3 = -3; q = (0, 0, -3),
 *       first nonzero negative: negated, sign -1, Q = 4*9 + 3 + 4 = 43
 *       (fresh). P0 = MED(10, 0, 0) = 10 (c <= min: max). Px = 10.
 *       e = -1 * (0 - 10) = 10. k = 2, m = 20: 00000100.
 *  x=2: a = 0: Q = 40 again, sign +1, now (14, 0, 1, 2). P0 = 0,
 *       Px = clamp(0 + 1) = 1. e = 5 - 1 = 4. k = 3 (2<<2 = 8 < 14,
 *       2<<3 = 16). m = 8; 8 >> 3 = 1: 0, 1, low 3 bits 000: 01000.
 *  Bits: 00000100 00000100 01000 -> word 0x04044000, stored
 *  little-endian. One band of one word: band_end[0] = 1. */
static const uint8_t hand1_px[] = {10, 0, 5};
static const uint8_t hand1_rec[] = {0x4C, 1, 8, 0, 1, 0,    0,    0,
                                    0x00, 0x40, 0x04, 0x04};

/* Case 2: 2x2 gray [[10, 7], [12, 200]], bands of 8 rows (one band).
 *  Row 0, x=0: as case 1: Q 40, m 20: 00000100; ctx 40 -> (14, 0, 1, 2).
 *  Row 0, x=1: a = 10: Q 43, sign -1, P0 = Px = 10. e = -1 * (7 - 10) = 3.
 *       k = 2, m = 6; 6 >> 2 = 1: 0, 1, low bits 10: 0110.
 *  Row 1, x=0: b = 10 (above), c = a = b = 10 (x = 0), d = 7 (above
 *       right). D1 = d - b = -3: q1 = -2; D2 = D3 = 0. Negated: sign -1,
 *       Q = (2*9 + 0 + 4)*9 + 0 + 4 = 202 (fresh). P0 = 10, Px = 10.
 *       e = -1 * (12 - 10) = -2. k = 2, m = -2e - 1 = 3; 3 >> 2 = 0: 1,
 *       low bits 11: 111.
 *  Row 1, x=1 (last column): b = 7, c = 10, a = 12, d = b = 7. D1 = 0,
 *       D2 = 7 - 10 = -3: q2 = -2, D3 = 10 - 12 = -2: q3 = -1. First
 *       nonzero (q2) negative: (0, 2, 1), sign -1, Q = (0 + 2 + 4)*9 + 1 + 4
 *       = 59 (fresh). P0 = MED(12, 7, 10) = 12 + 7 - 10 = 9, Px = 9.
 *       e = -1 * (200 - 9) = -191, mod 256 into -128..127: 65. k = 2,
 *       m = 130; 130 >> 2 = 32 >= 23: escape: 23 zeros, a one, m - 1 = 129
 *       in 8 bits (10000001). (Decoding: (9 - 65) mod 256 = 200.)
 *  Bits: 00000100 0110 111 then 0 x 23, 1, 10000001: 47 bits, two words:
 *  00000100 01101110 00000000 00000000 = 0x046E0000 and
 *  00000011 00000010 00000000 00000000 = 0x03020000. band_end[0] = 2. */
static const uint8_t hand2_px[] = {10, 7, 12, 200};
static const uint8_t hand2_rec[] = {0x4C, 1,    8,    0,    2,    0,
                                    0,    0,    0x00, 0x00, 0x6E, 0x04,
                                    0x00, 0x00, 0x02, 0x03};

/* Case 3: the same image in bands of 1 row: two bands, each from fresh
 * contexts, each row the first of its band.
 *  Band 0 = row 0 of case 2: 00000100 0110 (12 bits): word 0x04600000.
 *  Band 1, x=0: a = b = c = d = 0: Q 40 (fresh), P0 = Px = 0. e = 12,
 *       k = 2, m = 24; 24 >> 2 = 6: 000000 1 00 (9 bits).
 *  Band 1, x=1: a = 12: D3 = -12, q3 = -3: Q 43, sign -1 (fresh).
 *       P0 = MED(12, 0, 0) = 12, Px = 12. e = -1 * (200 - 12) = -188,
 *       mod 256: 68. k = 2, m = 136; 136 >> 2 = 34: escape, 0 x 23, 1,
 *       135 = 10000111.
 *  Band 1's 41 bits: 00000010 0 + 23 zeros = 0x02000000, then 1 10000111
 *  padded: 11000011 10000000 ... = 0xC3800000. band_end = {1, 3}. */
static const uint8_t hand3_rec[] = {
    0x4C, 1, 1, 0, 1,    0,    0,    0,    3,    0,    0,    0,
    0x00, 0, 0x60, 0x04, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x80, 0xC3};

/* Case 4: 1x2 RGB [(20, 10, 5), (30, 12, 1)], bands of 8 rows. Channel
 * order 1, 0, 2 (green first, context set 0; red and blue share set 1);
 * red and blue add green's error eG to their prediction.
 *  x=0, all neighbours 0: Q 40, sign +1, P0 = 0 for each channel.
 *   G: Px = 0, e = 10, k = 2, m = 20: 00000100. set0[40] -> (14, 0, 1, 2).
 *      eG = 10 - 0 = 10.
 *   R: P = clamp(0 + 10) = 10, Px = 10 (set1[40] fresh). e = 10, m = 20:
 *      00000100. set1[40] -> (14, 0, 1, 2).
 *   B: P = 10, Px = clamp(10 + 1) = 11 (set1[40]: C = 1). e = 5 - 11 = -6.
 *      k = 3, m = -2e - 1 = 11; 11 >> 3 = 1: 0, 1, low 3 bits 011: 01011.
 *  x=1, first row: a = the left sample of the channel.
 *   G: a = 10: Q 43, sign -1 (set0, fresh). P0 = 10, Px = 10.
 *      e = -1 * (12 - 10) = -2, k = 2, m = 3: 111. eG = 12 - 10 = 2.
 *   R: a = 20: D3 = -20, q3 = -3: Q 43, sign -1 (set1, fresh). P0 = 20,
 *      P = clamp(20 + 2) = 22, Px = 22. e = -1 * (30 - 22) = -8. k = 2,
 *      m = 15; 15 >> 2 = 3: 000, 1, low bits 11: 000111.
 *   B: a = 5: D3 = -5, q3 = -2: Q = 4*9 + 2 + 4 = 42, sign -1 (set1,
 *      fresh). P0 = 5, P = clamp(5 + 2) = 7, Px = 7. e = -1 * (1 - 7) = 6.
 *      k = 2, m = 12; 12 >> 2 = 3: 000, 1, 00: 000100.
 *  Bits (36): 00000100 00000100 01011111 00011100 | 0100: words
 *  0x04045F1C and 0x40000000. band_end[0] = 2. */
static const uint8_t hand4_px[] = {20, 10, 5, 30, 12, 1};
static const uint8_t hand4_rec[] = {0x4C, 1,    8,    0,    2,    0,
                                    0,    0,    0x1C, 0x5F, 0x04, 0x04,
                                    0x00, 0x00, 0x00, 0x40};

static void dump(const char *what, const uint8_t *p, size_t n) {
  fprintf(stderr, "%s (%zu bytes):", what, n);
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, " %02X", p[i]);
  fprintf(stderr, "\n");
}

static void hand_case(const char *name, const uint8_t *px, uint32_t h,
                      uint32_t w, uint32_t c, uint32_t rows,
                      const uint8_t *want, size_t want_len) {
  void *rec = NULL;
  size_t len = 0;
  CHECK_OK(gf_loco_encode(px, h, w, c, rows, &rec, &len));
  if (!rec)
    return;
  if (len != want_len || memcmp(rec, want, len) != 0) {
    fprintf(stderr, "%s: the encoder's record differs from the hand-derived "
                    "one\n",
            name);
    dump("  encoder", rec, len);
    dump("  by hand", want, want_len);
    gf_test_failures++;
  }
  /* The hand-derived record decodes back, whatever the encoder wrote. */
  size_t n = (size_t)h * w * c;
  guarded g = guarded_new(n);
  CHECK_OK(gf_loco_check(want, want_len, h, w, c));
  CHECK_OK(gf_loco_decode(want, want_len, h, w, c, g.p));
  if (memcmp(g.p, px, n) != 0) {
    fprintf(stderr, "%s: the hand-derived record decodes to other pixels\n",
            name);
    gf_test_failures++;
  }
  CHECK(guards_intact(&g));
  free(g.base);
  free(rec);
}

static void test_hand(void) {
  hand_case("1x3 gray", hand1_px, 1, 3, 1, 8, hand1_rec, sizeof hand1_rec);
  hand_case("2x2 gray", hand2_px, 2, 2, 1, 8, hand2_rec, sizeof hand2_rec);
  hand_case("2x2 gray, bands of 1 row", hand2_px, 2, 2, 1, 1, hand3_rec,
            sizeof hand3_rec);
  hand_case("1x2 RGB", hand4_px, 1, 2, 3, 8, hand4_rec, sizeof hand4_rec);
  /* gf_encode's level 0 is the default band of 8 rows. */
  gf_shape s = {2, 2, 1, GF_DTYPE_U8};
  void *rec = NULL;
  size_t len = 0;
  CHECK_OK(gf_encode(GF_CODEC_LOCO, hand2_px, &s, 0, &rec, &len));
  CHECK(rec && len == sizeof hand2_rec && !memcmp(rec, hand2_rec, len));
  free(rec);
  CHECK_OK(gf_encode(GF_CODEC_LOCO, hand2_px, &s, 1, &rec, &len));
  CHECK(rec && len == sizeof hand3_rec && !memcmp(rec, hand3_rec, len));
  free(rec);
}

/* ---- the arithmetic against the spec, written plainly -------------------- */

/* loco_band.h computes these without branches; here they are as the spec
 * (and JPEG-LS) states them. */
static int ref_q(int d) {
  if (d <= -21) return -4;
  if (d <= -7) return -3;
  if (d <= -3) return -2;
  if (d < 0) return -1;
  if (d == 0) return 0;
  if (d < 3) return 1;
  if (d < 7) return 2;
  if (d < 21) return 3;
  return 4;
}

static uint32_t ref_context(int a, int b, int c, int d, int *sign) {
  int q1 = ref_q(d - b), q2 = ref_q(b - c), q3 = ref_q(c - a);
  *sign = 1;
  if (q1 < 0 || (q1 == 0 && (q2 < 0 || (q2 == 0 && q3 < 0)))) {
    q1 = -q1, q2 = -q2, q3 = -q3;
    *sign = -1;
  }
  return (uint32_t)((q1 * 9 + q2 + 4) * 9 + q3 + 4);
}

static int ref_med(int a, int b, int c) {
  int mx = a > b ? a : b, mn = a < b ? a : b;
  if (c >= mx)
    return mn;
  if (c <= mn)
    return mx;
  return a + b - c;
}

static uint32_t ref_k(const gf_loco_st *x) {
  uint32_t k = 0;
  while (((uint32_t)x->N << k) < (uint32_t)x->A)
    k++;
  return k;
}

static void ref_update(gf_loco_st *x, int e) {
  int A = x->A + abs(e), B = x->B + e, N = x->N, C = x->C;
  if (N == GF_LOCO_RESET) {
    A >>= 1;
    B = B >= 0 ? B >> 1 : -((1 - B) >> 1);
    N >>= 1;
  }
  N++;
  if (B <= -N) {
    B += N;
    if (C > -128)
      C--;
    if (B <= -N)
      B = -N + 1;
  } else if (B > 0) {
    B -= N;
    if (C < 127)
      C++;
    if (B > 0)
      B = 0;
  }
  x->A = A;
  x->B = B;
  x->C = C;
  x->N = N;
}

static void test_arith(void) {
  int bad = 0;
  for (int d = -255; d <= 255; d++)
    bad += gf_loco_q(d) != ref_q(d);
  CHECK(bad == 0);
  /* Every quantized triple, through differences at and around each
   * threshold. */
  static const int ds[] = {-255, -22, -21, -20, -8, -7, -6, -4, -3, -2, -1, 0,
                           1,    2,   3,   4,   6,  7,  8,  20, 21, 22, 255};
  const int nd = (int)(sizeof ds / sizeof ds[0]);
  bad = 0;
  for (int i = 0; i < nd; i++)
    for (int j = 0; j < nd; j++)
      for (int k = 0; k < nd; k++) {
        int b = 0, d = ds[i], c = -ds[j], a = c - ds[k], s1, s2;
        uint32_t q1 = gf_loco_context(a, b, c, d, &s1);
        uint32_t q2 = ref_context(a, b, c, d, &s2);
        bad += q1 != q2 || s1 != s2 || q1 >= GF_LOCO_CONTEXTS;
      }
  CHECK(bad == 0);
  bad = 0;
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++)
      for (int c = 0; c < 256; c += (a + b) % 5 + 1)
        bad += gf_loco_med(a, b, c) != ref_med(a, b, c);
  CHECK(bad == 0);
  /* k for every A a context can hold (0 after a run of zero errors, below
   * 2^13) and every N. */
  bad = 0;
  for (int A = 0; A < 8200; A++)
    for (int N = 1; N <= GF_LOCO_RESET; N++) {
      gf_loco_st x = {A, 0, 0, N};
      bad += gf_loco_k(&x) != ref_k(&x);
    }
  CHECK(bad == 0);
  /* The update from every reachable B and N, C at and near its bounds, and
   * every error (A up to 3,972: 4 + 31 x 128, the most a context holds
   * with RESET 32); the mapping and its inverse on the states reached;
   * every state reached survives its packing into 32 bits. */
  static const int As[] = {0, 1, 4, 100, 3972};
  static const int Cs[] = {-128, -127, -1, 0, 1, 126, 127};
  bad = 0;
  int maps = 0;
  for (size_t ai = 0; ai < sizeof As / sizeof As[0]; ai++)
    for (int N = 1; N <= GF_LOCO_RESET; N++)
      for (int B = 1 - N; B <= 0; B++)
        for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++)
          for (int e = -128; e <= 127; e++) {
            gf_loco_st x = {As[ai], B, Cs[ci], N};
            gf_loco_st y = x;
            gf_loco_update(&x, e);
            ref_update(&y, e);
            bad += memcmp(&x, &y, sizeof x) != 0;
            gf_loco_st u = gf_loco_unpack(gf_loco_pack(x));
            bad += memcmp(&u, &x, sizeof x) != 0;
            if (ci == 0) {
              uint32_t k = gf_loco_k(&y);
              uint32_t m = gf_loco_map(&y, k, e);
              maps += m > 255 || gf_loco_unmap(&y, k, m) != e;
            }
          }
  CHECK(bad == 0);
  CHECK(maps == 0);
}

/* ---- round trips -------------------------------------------------------- */

enum { CONSTANT, NOISE, CHECKER, GRADIENT, PHOTO, CONTENTS };
static const char *const content_name[CONTENTS] = {
    "constant", "noise", "checkerboard", "gradient", "photo-like"};

static void fill(uint8_t *px, uint32_t h, uint32_t w, uint32_t c, int kind,
                 uint64_t *seed) {
  size_t n = (size_t)h * w * c;
  uint8_t v = (uint8_t)gf_test_rand(seed);
  for (size_t i = 0; i < n; i++) {
    size_t y = i / ((size_t)w * c), x = i / c % w, ch = i % c;
    switch (kind) {
    case CONSTANT:
      px[i] = v;
      break;
    case NOISE:
      px[i] = (uint8_t)gf_test_rand(seed);
      break;
    case CHECKER:
      px[i] = (x + y + ch) % 2 ? 255 : 0;
      break;
    case GRADIENT:
      px[i] = (uint8_t)(v + 3 * x + 2 * y + 40 * ch);
      break;
    default:
      break;
    }
  }
  if (kind == PHOTO)
    gf_test_fill_image(px, h, w, c, *seed);
}

/* Encodes, checks and decodes one image; returns the record's length. */
static size_t roundtrip(const uint8_t *px, uint32_t h, uint32_t w,
                        uint32_t c, uint32_t rows, const char *what) {
  void *rec = NULL;
  size_t len = 0;
  int rc = gf_loco_encode(px, h, w, c, rows, &rec, &len);
  if (rc < 0 || !rec) {
    fprintf(stderr, "%s: encode failed: %s\n", what, gf_last_error()->message);
    gf_test_failures++;
    return 0;
  }
  const uint8_t *r = rec;
  uint32_t nb = (h + rows - 1) / rows;
  bool ok = len <= bound(h, w, c, rows) && len >= 4 + 8ull * nb &&
            (len - 4) % 4 == 0 && r[0] == 'L' && r[1] == 1 && r[2] == rows &&
            r[3] == 0;
  if (!ok) {
    fprintf(stderr, "%s: record of %zu bytes, header %02X %02X %02X %02X "
                    "(bound %llu)\n",
            what, len, r[0], r[1], r[2], r[3],
            (unsigned long long)bound(h, w, c, rows));
    gf_test_failures++;
  }
  size_t n = (size_t)h * w * c;
  /* An exact-size heap buffer, so ASan sees a write past its end. */
  uint8_t *dst = malloc(n);
  rc = gf_loco_check(rec, len, h, w, c);
  if (rc == 0)
    rc = gf_loco_decode(rec, len, h, w, c, dst);
  if (rc < 0 || memcmp(dst, px, n) != 0) {
    fprintf(stderr, "%s: %s\n", what,
            rc < 0 ? gf_last_error()->message : "decodes to other pixels");
    gf_test_failures++;
  }
  free(dst);
  free(rec);
  return len;
}

static void test_roundtrip(void) {
  static const uint32_t fixed[][2] = {
      {1, 1},  {1, 2},  {2, 1},   {1, 70}, {70, 1},  {2, 2},  {3, 5},
      {7, 9},  {8, 8},  {9, 8},   {16, 3}, {17, 17}, {25, 31}, {64, 70},
      {70, 64}, {69, 69}, {255, 2}, {256, 1}, {2, 257}};
  static const uint32_t band_rows[] = {1, 2, 3, 8, 255};
  uint64_t seed = 5;
  int images = 0;
  uint64_t noise_bytes = 0, noise_bound = 0;
  const int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
  for (int k = 0; k < nfixed + 12; k++) {
    uint32_t h, w;
    if (k < nfixed) {
      h = fixed[k][0];
      w = fixed[k][1];
    } else {
      h = 1 + (uint32_t)(gf_test_rand(&seed) % 70);
      w = 1 + (uint32_t)(gf_test_rand(&seed) % 70);
    }
    for (uint32_t c = 1; c <= 4; c++) {
      size_t n = (size_t)h * w * c;
      uint8_t *px = malloc(n);
      for (int kind = 0; kind < CONTENTS; kind++) {
        fill(px, h, w, c, kind, &seed);
        for (size_t b = 0; b < sizeof band_rows / sizeof band_rows[0]; b++) {
          char what[160];
          snprintf(what, sizeof what, "%ux%ux%u %s, bands of %u rows", h, w,
                   c, content_name[kind], band_rows[b]);
          size_t len = roundtrip(px, h, w, c, band_rows[b], what);
          if (kind == NOISE) {
            noise_bytes += len;
            noise_bound += bound(h, w, c, band_rows[b]);
          }
          images++;
        }
      }
      free(px);
    }
  }
  fprintf(stderr, "%d images round-tripped; noise took %.1f%% of the "
                  "bound\n",
          images, 100.0 * (double)noise_bytes / (double)noise_bound);
}

/* ---- damage ------------------------------------------------------------- */

/* The codes a damaged record may give; every failure is recorded. */
static bool damage_ok(int rc) {
  if (rc == 0)
    return true;
  const gf_error_info *e = gf_last_error();
  return (rc == GF_EDECODE || rc == GF_EUNSUPPORTED) && e->code == rc &&
         e->message[0] != '\0';
}

/* Decodes rec (len bytes) as an h x w x c image, both directly and through
 * the dispatcher, into guarded buffers. Returns the direct decode's code
 * (-1000 when the checks above fail). */
static int decode_damaged(const uint8_t *rec, size_t len, uint32_t h,
                          uint32_t w, uint32_t c, const char *what) {
  size_t n = (size_t)h * w * c;
  /* An exact-size copy of the record, so ASan sees a read past its end. */
  uint8_t *copy = malloc(len ? len : 1);
  if (len)
    memcpy(copy, rec, len);
  guarded g = guarded_new(n);
  int rc = gf_loco_decode(copy, len, h, w, c, g.p);
  bool ok = damage_ok(rc) && guards_intact(&g);
  gf_shape st = {h, w, c, GF_DTYPE_U8}, out;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = c == 3 ? 1 : 3; /* through the scratch buffer */
  size_t m = (size_t)h * w * o.channels;
  guarded g2 = guarded_new(m);
  int rc2 = gf_decode(GF_CODEC_LOCO, copy, len, &st, &o, g2.p, m, &out);
  ok = ok && damage_ok(rc2) && guards_intact(&g2) && (rc < 0) == (rc2 < 0);
  if (!ok) {
    fprintf(stderr, "%s: decode returned %d, dispatcher %d (%s), guards %s\n",
            what, rc, rc2, gf_last_error()->message,
            guards_intact(&g) && guards_intact(&g2) ? "intact" : "BROKEN");
    gf_test_failures++;
    rc = -1000;
  }
  free(g.base);
  free(g2.base);
  free(copy);
  return rc;
}

/* Every truncation and every single-byte change of a small record. */
static void test_damage_small(void) {
  const uint32_t h = 5, w = 4, c = 3, rows = 2;
  uint8_t px[5 * 4 * 3];
  uint64_t seed = 77;
  fill(px, h, w, c, PHOTO, &seed);
  void *rec0 = NULL;
  size_t len = 0;
  CHECK_OK(gf_loco_encode(px, h, w, c, rows, &rec0, &len));
  if (!rec0)
    return;
  uint8_t *rec = rec0;
  const uint32_t nb = 3;
  const size_t table_end = 4 + 4 * nb;
  char what[128];
  for (size_t cut = 0; cut < len; cut++) {
    snprintf(what, sizeof what, "cut to %zu of %zu bytes", cut, len);
    CHECK_ERR(gf_loco_check(rec, cut, h, w, c), GF_EDECODE);
    CHECK(gf_last_error()->message[0] != '\0');
    CHECK(decode_damaged(rec, cut, h, w, c, what) == GF_EDECODE);
  }
  /* A byte or a word too many. */
  uint8_t *longer = malloc(len + 4);
  memcpy(longer, rec, len);
  memset(longer + len, 0, 4);
  CHECK_ERR(gf_loco_check(longer, len + 1, h, w, c), GF_EDECODE);
  CHECK_ERR(gf_loco_check(longer, len + 4, h, w, c), GF_EDECODE);
  free(longer);

  uint8_t *bad = malloc(len);
  int decoded = 0, refused = 0;
  for (size_t i = 0; i < len; i++) {
    for (unsigned v = 0; v < 256; v++) {
      if (v == rec[i])
        continue;
      memcpy(bad, rec, len);
      bad[i] = (uint8_t)v;
      snprintf(what, sizeof what, "byte %zu of %zu set to 0x%02X", i, len, v);
      int rc = decode_damaged(bad, len, h, w, c, what);
      rc == 0 ? decoded++ : refused++;
      /* The header's fixed bytes and the band table are never let
       * through (a table still increasing sends a band too few or too
       * many words). The band height may change to one that cuts the
       * image the same way; the streams may still decode. */
      if ((i < 4 && i != 2) || (i >= 4 && i < table_end)) {
        if (rc == 0) {
          fprintf(stderr, "%s: decoded\n", what);
          gf_test_failures++;
        }
      }
      if (i == 0)
        CHECK(rc == GF_EDECODE);
      if (i == 1)
        CHECK(rc == GF_EUNSUPPORTED);
    }
  }
  fprintf(stderr, "small record: %zu bytes, %d changes refused, %d decoded "
                  "(to other pixels)\n",
          len, refused, decoded);
  free(bad);
  free(rec);
}

/* A dense sample of single-byte changes (every byte, several values) of a
 * larger record, and zeroed words. */
static void test_damage_large(void) {
  const uint32_t h = 37, w = 29, c = 4, rows = 8;
  size_t n = (size_t)h * w * c;
  uint8_t *px = malloc(n);
  uint64_t seed = 78;
  fill(px, h, w, c, PHOTO, &seed);
  void *rec0 = NULL;
  size_t len = 0;
  CHECK_OK(gf_loco_encode(px, h, w, c, rows, &rec0, &len));
  free(px);
  if (!rec0)
    return;
  uint8_t *rec = rec0;
  uint8_t *bad = malloc(len);
  char what[128];
  static const uint8_t masks[] = {0x01, 0x80, 0xFF, 0x10};
  int refused = 0, tried = 0;
  for (size_t i = 0; i < len; i++) {
    for (int k = 0; k < 2; k++) {
      memcpy(bad, rec, len);
      bad[i] ^= masks[(i + (size_t)k) % 4];
      snprintf(what, sizeof what, "byte %zu of %zu xor 0x%02X", i, len,
               masks[(i + (size_t)k) % 4]);
      refused += decode_damaged(bad, len, h, w, c, what) != 0;
      tried++;
    }
  }
  /* A zero word is 32 zero bits: a code starting in its first 9 bits has
   * more than 23 zeros; one starting later (after the low bits of a code
   * that began before it) may not, and the stream's length then catches
   * most of the rest. Nearly all must be refused. */
  int zref = 0, ztried = 0;
  for (size_t i = 4 + 4 * ((h + rows - 1) / rows); i + 4 <= len; i += 4) {
    memcpy(bad, rec, len);
    memset(bad + i, 0, 4);
    if (memcmp(bad, rec, len) == 0)
      continue;
    snprintf(what, sizeof what, "word at byte %zu zeroed", i);
    int rc = decode_damaged(bad, len, h, w, c, what);
    zref += rc == GF_EDECODE;
    ztried++;
  }
  fprintf(stderr, "large record: %d of %d zeroed words refused\n", zref,
          ztried);
  CHECK(ztried > 0 && zref * 20 >= ztried * 19);
  fprintf(stderr, "large record: %zu bytes, %d of %d changes refused\n", len,
          refused, tried);
  free(bad);
  free(rec);
}

/* gf_loco_check's verdicts on damaged headers, tables and lengths. */
static void expect_check(const uint8_t *rec, size_t len, uint32_t h,
                         uint32_t w, uint32_t c, int want, const char *words) {
  int rc = gf_loco_check(rec, len, h, w, c);
  const char *msg = gf_last_error()->message;
  if (rc != want || !strstr(msg, words)) {
    fprintf(stderr, "gf_loco_check returned %d ('%s'), wanted %d with '%s'\n",
            rc, msg, want, words);
    gf_test_failures++;
  }
}

static void test_check(void) {
  const uint32_t h = 10, w = 6, c = 2, rows = 4; /* 3 bands */
  uint8_t px[10 * 6 * 2];
  uint64_t seed = 79;
  fill(px, h, w, c, PHOTO, &seed);
  void *rec0 = NULL;
  size_t len = 0;
  CHECK_OK(gf_loco_encode(px, h, w, c, rows, &rec0, &len));
  if (!rec0)
    return;
  uint8_t *rec = rec0;
  CHECK_OK(gf_loco_check(rec, len, h, w, c));
  uint8_t *b = malloc(len + 8);
#define RESET() (memcpy(b, rec, len), memset(b + len, 0, 8))
  RESET();
  expect_check(b, 0, h, w, c, GF_EDECODE, "not a loco record (0 bytes");
  expect_check(b, 3, h, w, c, GF_EDECODE,
               "not a loco record (3 bytes, shorter than its 4-byte header)");
  b[0] = 'M';
  expect_check(b, len, h, w, c, GF_EDECODE,
               "not a loco record (first byte 0x4D, expected 0x4C)");
  RESET();
  b[1] = 2;
  expect_check(b, len, h, w, c, GF_EUNSUPPORTED, "loco record of version 2");
  RESET();
  b[2] = 0;
  expect_check(b, len, h, w, c, GF_EDECODE, "header damaged (band of 0 rows");
  RESET();
  b[3] = 1;
  expect_check(b, len, h, w, c, GF_EDECODE, "reserved byte 1");
  RESET();
  /* Bands of 1 row: a table of 10 entries, longer than this record's. */
  b[2] = 1;
  expect_check(b, 12, h, w, c, GF_EDECODE, "shorter than its band table");
  RESET();
  /* Band 1 ends where band 0 does; band 2 before band 1. */
  memcpy(b + 8, b + 4, 4);
  expect_check(b, len, h, w, c, GF_EDECODE, "loco band 1 ends at word");
  RESET();
  memset(b + 12, 0, 4);
  expect_check(b, len, h, w, c, GF_EDECODE, "loco band 2 ends at word 0");
  RESET();
  b[12] = (uint8_t)(b[12] + 1);
  expect_check(b, len, h, w, c, GF_EDECODE, "its band table says");
  RESET();
  expect_check(b, len + 4, h, w, c, GF_EDECODE, "its band table says");
  /* A shape loco does not code, and one whose band count differs. */
  expect_check(rec, len, h, w, 5, GF_EUNSUPPORTED, "1 to 4 channels");
  expect_check(rec, len, 0, w, c, GF_EUNSUPPORTED, "1 to 4 channels");
  expect_check(rec, len, 13, w, c, GF_EDECODE, "");
  /* A shape with the same bands but another width: the structure holds,
   * the streams do not. */
  uint8_t *dst = malloc((size_t)h * 7 * c);
  CHECK_OK(gf_loco_check(rec, len, h, 7, c));
  CHECK_ERR(gf_loco_decode(rec, len, h, 7, c, dst), GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "loco band ") != NULL);
  free(dst);
#undef RESET
  free(b);
  free(rec);
}

/* The band decoder alone, as the GPU runs it: each band from an exact
 * copy of its words writes its rows and nothing else, and a damaged band
 * says so without touching the rows around it. */
static void test_band_decoder(void) {
  const uint32_t h = 19, w = 11, c = 3, rows = 5; /* 4 bands */
  size_t n = (size_t)h * w * c;
  uint8_t *px = malloc(n);
  uint64_t seed = 80;
  fill(px, h, w, c, PHOTO, &seed);
  void *rec0 = NULL;
  size_t len = 0;
  CHECK_OK(gf_loco_encode(px, h, w, c, rows, &rec0, &len));
  if (!rec0) {
    free(px);
    return;
  }
  const uint8_t *rec = rec0;
  uint32_t nb = (h + rows - 1) / rows;
  const uint8_t *area = rec + 4 + 4 * nb;
  gf_loco_ctx *ctx = malloc(sizeof *ctx * GF_LOCO_SETS * GF_LOCO_CONTEXTS);
  uint8_t *img = malloc(n);
  uint32_t start = 0;
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t end = (uint32_t)rec[4 + 4 * k] | (uint32_t)rec[5 + 4 * k] << 8 |
                   (uint32_t)rec[6 + 4 * k] << 16 |
                   (uint32_t)rec[7 + 4 * k] << 24;
    uint32_t y0 = k * rows, y1 = y0 + rows < h ? y0 + rows : h;
    size_t words = end - start;
    uint8_t *band = malloc(words * 4);
    memcpy(band, area + 4 * (size_t)start, words * 4);
    for (int damaged = 0; damaged < 3; damaged++) {
      memset(img, GUARD_BYTE, n);
      uint32_t nw = (uint32_t)words;
      if (damaged == 1)
        memset(band, 0, 4); /* 32 zero bits */
      if (damaged == 2)
        nw = 0; /* no words at all */
      int rc = gf_loco_band_decode(band, nw, img, w, c, y0, y1, ctx);
      CHECK(rc == (damaged ? 1 : 0));
      size_t a = (size_t)y0 * w * c, z = (size_t)y1 * w * c;
      for (size_t i = 0; i < n; i++)
        if ((i < a || i >= z) && img[i] != GUARD_BYTE) {
          fprintf(stderr, "band %u (rows %u-%u) wrote byte %zu\n", k, y0,
                  y1 - 1, i);
          gf_test_failures++;
          break;
        }
      if (!damaged)
        CHECK(memcmp(img + a, px + a, z - a) == 0);
      if (damaged == 1)
        memcpy(band, area + 4 * (size_t)start, 4);
    }
    free(band);
    start = end;
  }
  free(img);
  free(ctx);
  free(px);
  free(rec0);
}

/* ---- the dispatcher ------------------------------------------------------ */

/* The same image decoded from raw and from loco under channel requests
 * must agree (raw's conversion is the reference every codec follows). */
static void test_dispatch_convert(uint32_t h, uint32_t w, uint32_t c) {
  gf_shape st = {h, w, c, GF_DTYPE_U8};
  size_t n = (size_t)gf_shape_bytes(&st);
  uint8_t *px = malloc(n);
  gf_test_fill_image(px, h, w, c, 1234 + c);
  void *rec = NULL;
  size_t len = 0;
  CHECK_OK(gf_encode(GF_CODEC_LOCO, px, &st, 3, &rec, &len));
  if (!rec) {
    free(px);
    return;
  }
  CHECK(((uint8_t *)rec)[2] == 3);
  for (uint32_t ch = 0; ch <= 4; ch++) {
    for (int keep = 0; keep < 2; keep++) {
      gf_decode_opts o = GF_DECODE_OPTS_INIT;
      o.channels = ch;
      o.keep_16bit = (uint32_t)keep;
      gf_shape want = {h, w, ch ? ch : c, GF_DTYPE_U8}, s1, s2, out;
      CHECK_OK(gf_decode_shape(GF_CODEC_LOCO, NULL, 0, &st, &o, &s1));
      CHECK_OK(gf_decode_shape(GF_CODEC_LOCO, rec, len, &st, &o, &s2));
      CHECK(!memcmp(&s1, &want, sizeof want) &&
            !memcmp(&s2, &want, sizeof want));
      size_t m = (size_t)gf_shape_bytes(&want);
      uint8_t *ref = malloc(m);
      guarded g = guarded_new(m);
      CHECK_OK(gf_decode(GF_CODEC_RAW, px, n, &st, &o, ref, m, &out));
      CHECK_OK(gf_decode(GF_CODEC_LOCO, rec, len, &st, &o, g.p, m, &out));
      CHECK(!memcmp(&out, &want, sizeof want));
      if (memcmp(g.p, ref, m) != 0) {
        fprintf(stderr, "%ux%ux%u to %u channels: loco and raw differ\n", h,
                w, c, ch);
        gf_test_failures++;
      }
      CHECK(guards_intact(&g));
      /* A destination one byte short. */
      CHECK_ERR(gf_decode(GF_CODEC_LOCO, rec, len, &st, &o, g.p, m - 1, &out),
                GF_ESHAPE);
      free(ref);
      free(g.base);
    }
  }
  free(rec);
  free(px);
}

static void test_dispatch(void) {
  test_dispatch_convert(13, 17, 3); /* RGB to gray, gray+alpha, RGBA */
  test_dispatch_convert(9, 5, 1);   /* gray to RGB, RGBA */
  test_dispatch_convert(4, 31, 2);
  test_dispatch_convert(20, 3, 4);

  CHECK(strcmp(gf_codec_name(GF_CODEC_LOCO), "loco") == 0);
  CHECK(gf_codec_parse("loco") == GF_CODEC_LOCO);

  gf_shape st = {6, 5, 3, GF_DTYPE_U8};
  uint8_t px[6 * 5 * 3 * 2];
  uint64_t seed = 81;
  fill(px, 6, 10, 3, NOISE, &seed);
  void *rec = NULL;
  size_t len = 0, n = 6 * 5 * 3;
  uint8_t dst[6 * 5 * 3];
  gf_shape out;

  /* Levels: 0 the default band, 1 to 255 the rows, the rest refused. */
  CHECK_OK(gf_encode(GF_CODEC_LOCO, px, &st, 0, &rec, &len));
  CHECK(rec && ((uint8_t *)rec)[2] == GF_LOCO_BAND_ROWS);
  free(rec);
  CHECK_OK(gf_encode(GF_CODEC_LOCO, px, &st, 255, &rec, &len));
  CHECK(rec && ((uint8_t *)rec)[2] == 255);
  free(rec);
  static const int bad_levels[] = {-1, 256, 1000, -3};
  for (size_t i = 0; i < sizeof bad_levels / sizeof bad_levels[0]; i++) {
    CHECK_ERR(gf_encode(GF_CODEC_LOCO, px, &st, bad_levels[i], &rec, &len),
              -EINVAL);
    CHECK(rec == NULL && len == 0);
    CHECK(strstr(gf_last_error()->message, "1 to 255") != NULL);
  }
  gf_shape st16 = {6, 5, 3, GF_DTYPE_U16};
  CHECK_ERR(gf_encode(GF_CODEC_LOCO, px, &st16, 0, &rec, &len),
            GF_EUNSUPPORTED);
  CHECK(rec == NULL && strstr(gf_last_error()->message,
                              "loco codes 8-bit samples; use gradzstd for "
                              "16-bit images") != NULL);

  CHECK_OK(gf_encode(GF_CODEC_LOCO, px, &st, 2, &rec, &len));
  if (!rec)
    return;
  /* A stored shape is required, u8, and must match the record. */
  CHECK_ERR(gf_decode_shape(GF_CODEC_LOCO, rec, len, NULL, NULL, &out),
            -EINVAL);
  CHECK_ERR(gf_decode(GF_CODEC_LOCO, rec, len, NULL, NULL, dst, n, &out),
            -EINVAL);
  CHECK_ERR(gf_decode_shape(GF_CODEC_LOCO, NULL, 0, &st16, NULL, &out),
            GF_EUNSUPPORTED);
  CHECK(strstr(gf_last_error()->message, "8-bit") != NULL);
  CHECK_ERR(gf_decode(GF_CODEC_LOCO, rec, len, &st16, NULL, dst, n, &out),
            GF_EUNSUPPORTED);
  gf_shape taller = {9, 5, 3, GF_DTYPE_U8}; /* 5 bands of 2, not 3 */
  CHECK_ERR(gf_decode_shape(GF_CODEC_LOCO, rec, len, &taller, NULL, &out),
            GF_EDECODE);
  CHECK_OK(gf_decode_shape(GF_CODEC_LOCO, NULL, 0, &taller, NULL, &out));
  /* Damage: named by the dispatcher as loco's. */
  CHECK_ERR(gf_decode_shape(GF_CODEC_LOCO, rec, len - 1, &st, NULL, &out),
            GF_EDECODE);
  CHECK_ERR(gf_decode(GF_CODEC_LOCO, rec, len - 1, &st, NULL, dst, n, &out),
            GF_EDECODE);
  CHECK(strncmp(gf_last_error()->message, "loco: ", 6) == 0);
  uint8_t *bad = malloc(len);
  memcpy(bad, rec, len);
  memset(bad + 4 + 4 * 3, 0, 4); /* band 0's first word */
  CHECK_OK(gf_decode_shape(GF_CODEC_LOCO, bad, len, &st, NULL, &out));
  CHECK_ERR(gf_decode(GF_CODEC_LOCO, bad, len, &st, NULL, dst, n, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "loco band 0 (rows 0-1) is damaged"));
  free(bad);
  /* The limits apply to the stored shape. */
  gf_decode_opts lim = GF_DECODE_OPTS_INIT;
  lim.limits.max_width = 4;
  CHECK_ERR(gf_decode(GF_CODEC_LOCO, rec, len, &st, &lim, dst, n, &out),
            GF_ELIMIT);
  CHECK_OK(gf_decode(GF_CODEC_LOCO, rec, len, &st, NULL, dst, n, &out));
  CHECK(memcmp(dst, px, n) == 0);
  free(rec);
}

int main(void) {
  test_arith();
  test_hand();
  test_roundtrip();
  test_damage_small();
  test_damage_large();
  test_check();
  test_band_decoder();
  test_dispatch();
  return gf_test_finish();
}
