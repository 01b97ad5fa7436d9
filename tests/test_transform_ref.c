/* The batch transform's CPU reference (lib/xform/xform_ref.c):
 * - a 2x3 RGB image to f32 NCHW and NHWC, against numbers written out here;
 * - crop with zero padding, horizontal flip, centered crop positions;
 * - float -> f16/bf16 rounding at known values (ties, subnormals,
 *   overflow, NaN, infinities), directly and through the transform;
 * - random choices: reproducible from the documented hash, different per
 *   index/epoch/seed, uniform over the valid crop range, flip rate 1/2;
 * - gradient-filtered samples: unfiltered to gf_grad_unfilter's result;
 * - random batches against a naive per-element implementation in this file;
 * - shape rules and argument checks (GF_ESHAPE, GF_EUNSUPPORTED, -EINVAL). */
#include "testutil.h"

#include "decode/decode.h"
#include "xform/transform.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static gf_transform plain_transform(uint32_t dtype, uint32_t layout) {
  gf_transform t;
  memset(&t, 0, sizeof t);
  t.out_dtype = dtype;
  t.layout = layout;
  return t;
}

static gf_xform_sample sample_at(uint64_t off, uint32_t h, uint32_t w,
                                 uint32_t c, int32_t cy, int32_t cx,
                                 uint32_t flip) {
  gf_xform_sample s;
  memset(&s, 0, sizeof s);
  s.src_offset = off;
  s.h = h;
  s.w = w;
  s.c = c;
  s.crop_y = cy;
  s.crop_x = cx;
  s.flip = flip;
  return s;
}

/* The 2x3 RGB image of the hand-computed cases. */
static const uint8_t img23[2 * 3 * 3] = {
    12, 24, 35, 14, 28, 40,  10,  20,  30, /* row 0 */
    0,  0,  0,  255, 255, 255, 11, 21, 31, /* row 1 */
};

static void test_hand_f32(void) {
  gf_transform t = plain_transform(GF_OUT_F32, GF_LAYOUT_NCHW);
  float mean[3] = {10, 20, 30}, sd[3] = {2, 4, 5};
  memcpy(t.mean, mean, sizeof mean);
  memcpy(t.std, sd, sizeof sd);
  gf_xform_sample s = sample_at(0, 2, 3, 3, 0, 0, 0);
  static const float nchw[18] = {
      1, 2, 0, -5, 122.5f, 0.5f,  /* R: (x - 10) / 2 */
      1, 2, 0, -5, 58.75f, 0.25f, /* G: (x - 20) / 4 */
      1, 2, 0, -6, 45,     0.2f,  /* B: (x - 30) / 5 */
  };
  static const float nhwc[18] = {
      1, 1, 1, 2, 2, 2, 0, 0, 0, -5, -5, -6, 122.5f, 58.75f, 45,
      0.5f, 0.25f, 0.2f,
  };
  float out[18];
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 3, 3, out));
  CHECK(memcmp(out, nchw, sizeof out) == 0);
  t.layout = GF_LAYOUT_NHWC;
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 3, 3, out));
  CHECK(memcmp(out, nhwc, sizeof out) == 0);

  /* A 3x4 window starting at (-1, -1): the first row and column are
   * padding, i.e. pixel 0 normalised: -5, -5, -6. */
  s.crop_y = s.crop_x = -1;
  float pad[3 * 4 * 3];
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 3, 4, 3, pad));
  for (uint32_t y = 0; y < 3; y++)
    for (uint32_t x = 0; x < 4; x++) {
      const float *p = &pad[(y * 4 + x) * 3];
      if (y == 0 || x == 0) {
        CHECK(p[0] == -5 && p[1] == -5 && p[2] == -6);
      } else {
        const float *want = &nhwc[((y - 1) * 3 + (x - 1)) * 3];
        CHECK(memcmp(p, want, 3 * sizeof *p) == 0);
      }
    }

  /* std 0 means 1: with mean 0 the output is the pixel value itself. */
  memset(t.mean, 0, sizeof t.mean);
  memset(t.std, 0, sizeof t.std);
  s.crop_y = s.crop_x = 0;
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 3, 3, out));
  for (int i = 0; i < 18; i++)
    CHECK(out[i] == (float)img23[i]);
}

static void test_hand_u8(void) {
  gf_transform t = plain_transform(GF_OUT_U8, GF_LAYOUT_NHWC);
  t.mean[0] = 100; /* u8 output ignores normalisation */
  t.std[0] = 3;
  uint8_t out[4 * 5 * 3];
  /* Padding on every side: window (-1, -1) of 4x5 around the 2x3 image. */
  gf_xform_sample s = sample_at(0, 2, 3, 3, -1, -1, 0);
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 4, 5, 3, out));
  for (uint32_t y = 0; y < 4; y++)
    for (uint32_t x = 0; x < 5; x++)
      for (uint32_t c = 0; c < 3; c++) {
        uint8_t want = 0;
        if (y >= 1 && y <= 2 && x >= 1 && x <= 3)
          want = img23[((y - 1) * 3 + (x - 1)) * 3 + c];
        CHECK(out[(y * 5 + x) * 3 + c] == want);
      }
  /* Flip reverses the columns, pixels keep their channel order. */
  s = sample_at(0, 2, 3, 3, 0, 0, 1);
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 3, 3, out));
  static const uint8_t flipped[18] = {10, 20, 30, 14, 28, 40, 12, 24, 35,
                                      11, 21, 31, 255, 255, 255, 0, 0, 0};
  CHECK(memcmp(out, flipped, sizeof flipped) == 0);
  /* Flip of a window: output x takes source column crop_x + out_w-1-x. */
  s = sample_at(0, 2, 3, 3, 1, 1, 1);
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 1, 3, 3, out));
  static const uint8_t fwin[9] = {0, 0, 0, 11, 21, 31, 255, 255, 255};
  CHECK(memcmp(out, fwin, sizeof fwin) == 0);
  /* A window entirely in the padding. */
  s = sample_at(0, 2, 3, 3, 5, -9, 0);
  memset(out, 0x77, sizeof out);
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 2, 3, out));
  for (int i = 0; i < 12; i++)
    CHECK(out[i] == 0);
  CHECK(out[12] == 0x77); /* nothing past the output */
  /* NCHW u8 planes. */
  t.layout = GF_LAYOUT_NCHW;
  s = sample_at(0, 2, 3, 3, 0, 0, 0);
  CHECK_OK(gf_xform_ref(&t, img23, sizeof img23, &s, 1, 2, 3, 3, out));
  for (uint32_t c = 0; c < 3; c++)
    for (uint32_t i = 0; i < 6; i++)
      CHECK(out[c * 6 + i] == img23[i * 3 + c]);
}

static void test_center(void) {
  gf_transform t = plain_transform(GF_OUT_U8, GF_LAYOUT_NHWC);
  t.seed = 12345;
  struct {
    uint32_t size, out, pad;
    int32_t want;
  } cases[] = {
      {5, 2, 0, 1},  /* surplus 3: one row dropped above, two below */
      {6, 2, 0, 2},  /* surplus 4: even split */
      {4, 4, 0, 0},  /* same size */
      {2, 5, 0, -1}, /* short by 3: one zero row above, two below */
      {2, 6, 0, -2}, /* short by 4 */
      {1, 2, 0, 0},  /* short by 1: the zero row goes below */
      {5, 2, 3, 1},  /* centered: pad does not move the center */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    t.pad = cases[i].pad;
    for (uint64_t idx = 0; idx < 20; idx++) {
      int32_t cy = 99, cx = 99;
      uint32_t flip = 9;
      gf_xform_params(&t, 3, idx, cases[i].size, cases[i].size, cases[i].out,
                      cases[i].out, &cy, &cx, &flip);
      CHECK(cy == cases[i].want && cx == cases[i].want);
      CHECK(flip == 0); /* hflip off */
    }
  }
  /* Random crop whose padded image is still smaller than the output:
   * centered. 2 + 2*1 = 4 < 5. */
  t.random_crop = 1;
  t.pad = 1;
  for (uint64_t idx = 0; idx < 50; idx++) {
    int32_t cy, cx;
    gf_xform_params(&t, 0, idx, 2, 2, 5, 5, &cy, &cx, NULL);
    CHECK(cy == -1 && cx == -1);
  }
}

/* The documented hash, written again from transform.h's comment. */
static uint64_t doc_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void test_random(void) {
  const uint64_t G = 0x9E3779B97F4A7C15ull;
  gf_transform t = plain_transform(GF_OUT_F32, GF_LAYOUT_NCHW);
  t.random_crop = 1;
  t.hflip = 1;
  t.pad = 2;
  /* Reproducible from the header's description. */
  uint64_t rs = 7;
  for (int i = 0; i < 2000; i++) {
    t.seed = gf_test_rand(&rs);
    uint64_t epoch = gf_test_rand(&rs) % 1000, index = gf_test_rand(&rs);
    uint32_t h = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    uint32_t w = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    uint32_t oh = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    uint32_t ow = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    t.pad = (uint32_t)(gf_test_rand(&rs) % 9);
    uint64_t k = doc_mix(t.seed + G);
    k = doc_mix((k ^ epoch) + G);
    k = doc_mix((k ^ index) + G);
    int64_t wy, wx;
    int64_t ny = (int64_t)h + 2 * t.pad - oh + 1;
    int64_t nx = (int64_t)w + 2 * t.pad - ow + 1;
    wy = ny >= 1 ? (int64_t)(((doc_mix(k + G) >> 32) * (uint64_t)ny) >> 32) -
                       t.pad
                 : ((int64_t)h - oh) / 2;
    wx = nx >= 1
             ? (int64_t)(((doc_mix(k + 2 * G) >> 32) * (uint64_t)nx) >> 32) -
                   t.pad
             : ((int64_t)w - ow) / 2;
    uint32_t wf = (uint32_t)(doc_mix(k + 3 * G) >> 63);
    int32_t cy, cx;
    uint32_t flip;
    gf_xform_params(&t, epoch, index, h, w, oh, ow, &cy, &cx, &flip);
    CHECK(cy == wy && cx == wx && flip == wf);
    /* The window lies inside the padded image when it fits. */
    if (ny >= 1)
      CHECK(cy >= -(int64_t)t.pad && cy + (int64_t)oh <= (int64_t)h + t.pad);
  }

  /* Uniform over the 7 positions of a 10-pixel side padded by 2 cut to 8
   * (-2..4), independent axes, flip rate 1/2. */
  t.seed = 99;
  t.pad = 2;
  enum { N = 14000, P = 7 };
  uint32_t cy_n[P] = {0}, cx_n[P] = {0}, joint[P][P] = {{0}}, flips = 0;
  uint32_t same_as_next_epoch = 0, same_as_other_seed = 0;
  gf_transform t2 = t;
  t2.seed = 100;
  for (uint64_t i = 0; i < N; i++) {
    int32_t cy, cx, ey, ex, sy, sx;
    uint32_t f, ef, sf, f2;
    gf_xform_params(&t, 5, i, 10, 10, 8, 8, &cy, &cx, &f);
    int32_t cy2, cx2;
    gf_xform_params(&t, 5, i, 10, 10, 8, 8, &cy2, &cx2, &f2);
    CHECK(cy == cy2 && cx == cx2 && f == f2); /* deterministic */
    CHECK(cy >= -2 && cy <= 4 && cx >= -2 && cx <= 4);
    if (cy < -2 || cy > 4 || cx < -2 || cx > 4)
      break;
    cy_n[cy + 2]++;
    cx_n[cx + 2]++;
    joint[cy + 2][cx + 2]++;
    flips += f;
    gf_xform_params(&t, 6, i, 10, 10, 8, 8, &ey, &ex, &ef);
    same_as_next_epoch += ey == cy && ex == cx && ef == f;
    gf_xform_params(&t2, 5, i, 10, 10, 8, 8, &sy, &sx, &sf);
    same_as_other_seed += sy == cy && sx == cx && sf == f;
  }
  double chi_y = 0, chi_x = 0, chi_j = 0, e1 = (double)N / P,
         e2 = (double)N / (P * P);
  for (int i = 0; i < P; i++) {
    chi_y += (cy_n[i] - e1) * (cy_n[i] - e1) / e1;
    chi_x += (cx_n[i] - e1) * (cx_n[i] - e1) / e1;
    for (int j = 0; j < P; j++)
      chi_j += (joint[i][j] - e2) * (joint[i][j] - e2) / e2;
  }
  printf("crop chi-square: rows %.1f cols %.1f (6 dof) joint %.1f (48 dof); "
         "flips %u of %d\n",
         chi_y, chi_x, chi_j, flips, N);
  CHECK(chi_y < 30 && chi_x < 30 && chi_j < 100);
  CHECK(flips > N / 2 - 300 && flips < N / 2 + 300);
  /* Another epoch or seed: as often equal as chance allows (1/98). */
  CHECK(same_as_next_epoch < N / 98 * 2);
  CHECK(same_as_other_seed < N / 98 * 2);

  /* hflip off never flips; random_crop off never moves. */
  t.hflip = 0;
  t.random_crop = 0;
  for (uint64_t i = 0; i < 500; i++) {
    int32_t cy, cx;
    uint32_t f;
    gf_xform_params(&t, 1, i, 10, 10, 8, 8, &cy, &cx, &f);
    CHECK(f == 0 && cy == 1 && cx == 1);
  }
}

static void test_half(void) {
  static const struct {
    uint32_t in;
    uint16_t f16;
  } h[] = {
      {0x3F800000, 0x3C00}, /* 1.0 */
      {0xC0000000, 0xC000}, /* -2.0 */
      {0x00000000, 0x0000}, {0x80000000, 0x8000}, /* +-0 */
      {0x477FE000, 0x7BFF}, /* 65504, the largest half */
      {0x477FEFFF, 0x7BFF}, /* just under the halfway point to 65536 */
      {0x477FF000, 0x7C00}, /* 65520: the tie rounds to even = inf */
      {0x49742400, 0x7C00}, /* 1e6 */
      {0x7F800000, 0x7C00}, {0xFF800000, 0xFC00}, /* +-inf */
      {0x7FC00000, 0x7E00}, /* quiet NaN */
      {0x7F800001, 0x7E00}, /* signalling NaN: still a NaN */
      {0x3DCCCCCD, 0x2E66}, /* 0.1f */
      {0x3F801000, 0x3C00}, /* 1 + 2^-11: tie, to even (down) */
      {0x3F803000, 0x3C02}, /* 1 + 3*2^-11: tie, to even (up) */
      {0x3F801001, 0x3C01}, /* just above the tie */
      {0x38800000, 0x0400}, /* 2^-14, the smallest normal */
      {0x387FC000, 0x03FF}, /* 1023 * 2^-24, the largest subnormal */
      {0x387FF000, 0x0400}, /* 1023.5 units: tie to even = 1024 */
      {0x33800000, 0x0001}, /* 2^-24, the smallest subnormal */
      {0x33000000, 0x0000}, /* 2^-25: tie between 0 and 1, to 0 */
      {0x33000001, 0x0001}, /* just above it */
      {0x33400000, 0x0001}, /* 0.75 units */
      {0x33C00000, 0x0002}, /* 1.5 units: tie, to 2 */
      {0x34200000, 0x0002}, /* 2.5 units: tie, to 2 */
      {0xB3C00000, 0x8002}, /* -1.5 units */
      {0x00000001, 0x0000}, /* the smallest float subnormal */
  };
  for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
    uint16_t got = gf_f32_to_f16(h[i].in);
    if (got != h[i].f16)
      fprintf(stderr, "f16(%08x) = %04x, want %04x\n", h[i].in, got, h[i].f16);
    CHECK(got == h[i].f16);
  }
  static const struct {
    uint32_t in;
    uint16_t bf;
  } b[] = {
      {0x3F800000, 0x3F80}, /* 1.0 */
      {0x3F808000, 0x3F80}, /* 1 + 2^-8: tie, to even (down) */
      {0x3F818000, 0x3F82}, /* 1 + 3*2^-8: tie, to even (up) */
      {0x3F808008, 0x3F81}, /* just above the tie */
      {0x7F7F7FFF, 0x7F7F}, /* under halfway above the largest bf16 */
      {0x7F7FFFFF, 0x7F80}, /* FLT_MAX rounds to inf */
      {0x7F800000, 0x7F80}, {0xFF800000, 0xFF80}, /* +-inf */
      {0x7FC00000, 0x7FC0}, /* quiet NaN */
      {0x7F800001, 0x7FC0}, /* signalling NaN: stays a NaN */
      {0xFFC00000, 0xFFC0}, /* negative NaN */
      {0x80000000, 0x8000}, /* -0 */
      {0x00010000, 0x0001}, /* subnormals round like the rest */
      {0x00008000, 0x0000}, /* tie, to even */
      {0x00018000, 0x0002}, /* tie, to even */
      {0x437F0000, 0x437F}, /* 255 */
  };
  for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
    uint16_t got = gf_f32_to_bf16(b[i].in);
    if (got != b[i].bf)
      fprintf(stderr, "bf16(%08x) = %04x, want %04x\n", b[i].in, got, b[i].bf);
    CHECK(got == b[i].bf);
  }

  /* Through the transform: mean 0, std 1 keeps 255 (f16 0x5BF8, bf16
   * 0x437F); std 1e-3 overflows f16 to +-inf while bf16 keeps range. */
  uint8_t px[2] = {255, 0};
  gf_transform t = plain_transform(GF_OUT_F16, GF_LAYOUT_NHWC);
  gf_xform_sample s = sample_at(0, 1, 2, 1, 0, 0, 0);
  uint16_t o[2];
  CHECK_OK(gf_xform_ref(&t, px, 2, &s, 1, 1, 2, 1, o));
  CHECK(o[0] == 0x5BF8 && o[1] == 0x0000);
  t.out_dtype = GF_OUT_BF16;
  CHECK_OK(gf_xform_ref(&t, px, 2, &s, 1, 1, 2, 1, o));
  CHECK(o[0] == 0x437F && o[1] == 0x0000);
  t.out_dtype = GF_OUT_F16;
  t.mean[0] = 128;
  t.std[0] = 1e-3f;
  CHECK_OK(gf_xform_ref(&t, px, 2, &s, 1, 1, 2, 1, o));
  CHECK(o[0] == 0x7C00 && o[1] == 0xFC00);
  t.out_dtype = GF_OUT_BF16;
  CHECK_OK(gf_xform_ref(&t, px, 2, &s, 1, 1, 2, 1, o));
  float want = (255.0f - 128.0f) / 1e-3f;
  CHECK(o[0] == gf_f32_to_bf16(fbits(want)));
  CHECK(fabsf(bitsf((uint32_t)o[0] << 16) - want) < want / 128);
}

/* The value rule, element by element, written independently of
 * xform_ref.c: for checking whole random batches. */
static void naive(const gf_transform *t, const uint8_t *src,
                  const gf_xform_sample *ss, uint32_t n, uint32_t oh,
                  uint32_t ow, uint32_t oc, void *dst) {
  size_t es = gf_out_dtype_size(t->out_dtype);
  for (uint32_t i = 0; i < n; i++) {
    const gf_xform_sample *s = &ss[i];
    for (uint32_t y = 0; y < oh; y++)
      for (uint32_t x = 0; x < ow; x++)
        for (uint32_t c = 0; c < oc; c++) {
          int64_t sy = (int64_t)s->crop_y + y;
          int64_t sx = (int64_t)s->crop_x + (s->flip ? ow - 1 - x : x);
          uint32_t v = 0;
          if (sy >= 0 && sy < s->h && sx >= 0 && sx < s->w)
            v = src[s->src_offset + ((uint64_t)sy * s->w + sx) * s->c + c];
          size_t e = t->layout == GF_LAYOUT_NHWC
                         ? ((size_t)y * ow + x) * oc + c
                         : ((size_t)c * oh + y) * ow + x;
          e += (size_t)i * oh * ow * oc;
          float sd = t->std[c] == 0 ? 1.0f : t->std[c];
          float f = ((float)v - t->mean[c]) / sd;
          uint8_t *d = (uint8_t *)dst + e * es;
          if (t->out_dtype == GF_OUT_U8) {
            *d = (uint8_t)v;
          } else if (t->out_dtype == GF_OUT_F32) {
            memcpy(d, &f, 4);
          } else {
            uint16_t hv = t->out_dtype == GF_OUT_F16 ? gf_f32_to_f16(fbits(f))
                                                     : gf_f32_to_bf16(fbits(f));
            memcpy(d, &hv, 2);
          }
        }
  }
}

static void test_random_batches(void) {
  uint64_t rs = 2024;
  for (int iter = 0; iter < 60; iter++) {
    gf_transform t = plain_transform((uint32_t)(gf_test_rand(&rs) % 4),
                                     (uint32_t)(gf_test_rand(&rs) % 2));
    uint32_t n = 1 + (uint32_t)(gf_test_rand(&rs) % 5);
    uint32_t oc = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint32_t oh = 1 + (uint32_t)(gf_test_rand(&rs) % 20);
    uint32_t ow = 1 + (uint32_t)(gf_test_rand(&rs) % 20);
    t.random_crop = 1;
    t.hflip = 1;
    t.pad = (uint32_t)(gf_test_rand(&rs) % 5);
    t.seed = gf_test_rand(&rs);
    for (int c = 0; c < 4; c++) {
      t.mean[c] = (float)(gf_test_rand(&rs) % 25600) / 100.0f;
      t.std[c] = (float)(gf_test_rand(&rs) % 10000) / 97.0f;
    }
    gf_xform_sample ss[5];
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
      gf_shape sh = {1 + (uint32_t)(gf_test_rand(&rs) % 24),
                     1 + (uint32_t)(gf_test_rand(&rs) % 24), oc,
                     GF_DTYPE_U8};
      off += gf_test_rand(&rs) % 7; /* any alignment */
      gf_xform_sample_init(&t, 3, gf_test_rand(&rs), off, &sh, oh, ow, 0,
                           &ss[i]);
      off += (uint64_t)sh.height * sh.width * oc;
    }
    uint8_t *src = malloc(off + 1);
    for (uint64_t i = 0; i < off; i++)
      src[i] = (uint8_t)gf_test_rand(&rs);
    size_t bytes = (size_t)n * oh * ow * oc * gf_out_dtype_size(t.out_dtype);
    uint8_t *a = malloc(bytes + 16), *b = malloc(bytes + 16);
    memset(a, 0xA5, bytes + 16);
    memset(b, 0x5A, bytes + 16);
    CHECK_OK(gf_xform_ref(&t, src, off, ss, n, oh, ow, oc, a));
    naive(&t, src, ss, n, oh, ow, oc, b);
    CHECK(memcmp(a, b, bytes) == 0);
    CHECK(a[bytes] == 0xA5); /* nothing written past the output */
    free(src);
    free(a);
    free(b);
  }
}

static void test_filtered(void) {
  uint64_t rs = 77;
  for (int iter = 0; iter < 40; iter++) {
    uint32_t c = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint32_t h = 1 + (uint32_t)(gf_test_rand(&rs) % 40);
    uint32_t w = 1 + (uint32_t)(gf_test_rand(&rs) % 40);
    size_t bytes = (size_t)h * w * c;
    uint8_t *orig = malloc(bytes), *filt = malloc(bytes), *ref = malloc(bytes);
    uint8_t *out = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
      orig[i] = (uint8_t)gf_test_rand(&rs);
    /* Random bytes taken as filtered data: the reference must equal
     * gf_grad_unfilter of them. */
    memcpy(ref, orig, bytes);
    gf_grad_unfilter(ref, h, w, c);
    gf_transform t = plain_transform(GF_OUT_U8, GF_LAYOUT_NHWC);
    gf_xform_sample s = sample_at(0, h, w, c, 0, 0, 0);
    s.filtered = 1;
    CHECK_OK(gf_xform_ref(&t, orig, bytes, &s, 1, h, w, c, out));
    CHECK(memcmp(out, ref, bytes) == 0);
    /* Filtering then transforming as filtered equals transforming the
     * image itself, for any window, flip, dtype and layout. */
    memcpy(filt, orig, bytes);
    gf_grad_filter(filt, h, w, c);
    for (int k = 0; k < 6; k++) {
      t.out_dtype = (uint32_t)(gf_test_rand(&rs) % 4);
      t.layout = (uint32_t)(gf_test_rand(&rs) % 2);
      t.mean[0] = 3.5f;
      t.std[1] = 7;
      uint32_t oh = 1 + (uint32_t)(gf_test_rand(&rs) % 48);
      uint32_t ow = 1 + (uint32_t)(gf_test_rand(&rs) % 48);
      gf_xform_sample p = sample_at(0, h, w, c,
                                    (int32_t)(gf_test_rand(&rs) % 60) - 20,
                                    (int32_t)(gf_test_rand(&rs) % 60) - 20,
                                    (uint32_t)(gf_test_rand(&rs) % 2));
      gf_xform_sample f = p;
      f.filtered = 1;
      size_t ob = (size_t)oh * ow * c * gf_out_dtype_size(t.out_dtype);
      uint8_t *o1 = malloc(ob), *o2 = malloc(ob);
      CHECK_OK(gf_xform_ref(&t, orig, bytes, &p, 1, oh, ow, c, o1));
      CHECK_OK(gf_xform_ref(&t, filt, bytes, &f, 1, oh, ow, c, o2));
      CHECK(memcmp(o1, o2, ob) == 0);
      free(o1);
      free(o2);
    }
    free(orig);
    free(filt);
    free(ref);
    free(out);
  }
}

static void test_shapes_and_checks(void) {
  gf_transform t = plain_transform(GF_OUT_F32, GF_LAYOUT_NCHW);
  gf_shape sh[3] = {{4, 5, 3, GF_DTYPE_U8},
                    {4, 5, 3, GF_DTYPE_U8},
                    {6, 5, 3, GF_DTYPE_U8}};
  uint32_t oh = 0, ow = 0, oc = 0;
  CHECK_OK(gf_xform_out_shape(&t, sh, 2, &oh, &ow, &oc));
  CHECK(oh == 4 && ow == 5 && oc == 3);
  CHECK_ERR(gf_xform_out_shape(&t, sh, 3, &oh, &ow, &oc), GF_ESHAPE);
  CHECK(strstr(gf_last_error()->message, "sample 2") != NULL);
  t.height = 3;
  t.width = 2;
  CHECK_OK(gf_xform_out_shape(&t, sh, 3, &oh, &ow, &oc));
  CHECK(oh == 3 && ow == 2 && oc == 3);
  sh[1].channels = 1;
  CHECK_ERR(gf_xform_out_shape(&t, sh, 3, &oh, &ow, &oc), GF_ESHAPE);
  sh[1].channels = 3;
  sh[2].dtype = GF_DTYPE_U16;
  CHECK_ERR(gf_xform_out_shape(&t, sh, 3, &oh, &ow, &oc), GF_EUNSUPPORTED);
  sh[2].dtype = GF_DTYPE_U8;
  sh[0].channels = 5;
  CHECK_ERR(gf_xform_out_shape(&t, sh, 1, &oh, &ow, &oc), GF_EUNSUPPORTED);
  sh[0].channels = 3;
  CHECK_ERR(gf_xform_out_shape(&t, sh, 0, &oh, &ow, &oc), -EINVAL);

  uint64_t bytes = 0;
  CHECK_OK(gf_xform_out_bytes(256, 224, 224, 3, GF_OUT_F16, &bytes));
  CHECK(bytes == 256ull * 224 * 224 * 3 * 2);
  CHECK_ERR(gf_xform_out_bytes(UINT32_MAX, UINT32_MAX, UINT32_MAX, 4,
                               GF_OUT_F32, &bytes),
            -EOVERFLOW);

  /* gf_xform_check: each bad field. */
  gf_transform b = plain_transform(GF_OUT_F32, GF_LAYOUT_NHWC);
  CHECK_OK(gf_xform_check(&b));
  b.out_dtype = 4;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b = plain_transform(GF_OUT_F32, 2);
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b = plain_transform(GF_OUT_F32, GF_LAYOUT_NHWC);
  b.height = 10; /* width 0 */
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.width = GF_XFORM_MAX_DIM + 1;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b = plain_transform(GF_OUT_F32, GF_LAYOUT_NHWC);
  b.mean[2] = NAN;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.mean[2] = 0;
  b.std[3] = -1;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.std[3] = INFINITY;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.std[3] = 0;
  b.reserved[0] = 1;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.reserved[0] = 0;
  b.hflip = 2;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  b.hflip = 0;
  b.pad = GF_XFORM_MAX_PAD + 1;
  CHECK_ERR(gf_xform_check(&b), -EINVAL);
  CHECK_ERR(gf_xform_check(NULL), -EINVAL);

  /* gf_xform_validate and gf_xform_ref refuse bad samples, dst untouched. */
  uint8_t src[64] = {0};
  float out[64];
  for (int i = 0; i < 64; i++)
    out[i] = -1;
  gf_transform r = plain_transform(GF_OUT_F32, GF_LAYOUT_NHWC);
  gf_xform_sample s = sample_at(40, 3, 3, 3, 0, 0, 0); /* 27 bytes from 40 */
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0), GF_ESHAPE);
  CHECK_ERR(gf_xform_ref(&r, src, sizeof src, &s, 1, 3, 3, 3, out),
            GF_ESHAPE);
  CHECK(out[0] == -1);
  s.src_offset = UINT64_MAX - 5; /* no overflow past the check */
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0), GF_ESHAPE);
  s.src_offset = 37;
  CHECK_OK(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0));
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 1, 0), GF_ESHAPE);
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 0, 3, 3, 0), -EINVAL);
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 5, 0), -EINVAL);
  s.flip = 2;
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0), -EINVAL);
  s.flip = 0;
  s.crop_x = -GF_XFORM_MAX_CROP - 1;
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0), -EINVAL);
  s.crop_x = 0;
  s.h = 0;
  CHECK_ERR(gf_xform_validate(&s, 1, sizeof src, 3, 3, 3, 0), GF_ESHAPE);
  CHECK_ERR(gf_xform_validate(NULL, 1, sizeof src, 3, 3, 3, 0), -EINVAL);

  /* A filtered sample wider than the GPU's row limit: fine for the CPU,
   * GF_EUNSUPPORTED for the GPU; a window that needs fewer columns is
   * fine for both. */
  gf_xform_sample wide = sample_at(0, 1, GF_XFORM_GPU_FILTERED_ROW / 2 + 1,
                                   2, 0, 0, 0);
  wide.filtered = 1;
  uint32_t ww = wide.w;
  CHECK_OK(gf_xform_validate(&wide, 1, (uint64_t)ww * 2, 1, ww, 2, 0));
  CHECK_ERR(gf_xform_validate(&wide, 1, (uint64_t)ww * 2, 1, ww, 2,
                              GF_XFORM_FOR_GPU),
            GF_EUNSUPPORTED);
  CHECK_OK(gf_xform_validate(&wide, 1, (uint64_t)ww * 2, 1, ww - 1, 2,
                             GF_XFORM_FOR_GPU));
  wide.filtered = 0;
  CHECK_OK(gf_xform_validate(&wide, 1, (uint64_t)ww * 2, 1, ww, 2,
                             GF_XFORM_FOR_GPU));
  /* A bad transform is refused by the reference before anything. */
  r.out_dtype = 9;
  s = sample_at(0, 3, 3, 3, 0, 0, 0);
  CHECK_ERR(gf_xform_ref(&r, src, sizeof src, &s, 1, 3, 3, 3, out), -EINVAL);
  CHECK(out[0] == -1);
  CHECK(gf_out_dtype_size(GF_OUT_U8) == 1 && gf_out_dtype_size(GF_OUT_F32) == 4 &&
        gf_out_dtype_size(GF_OUT_F16) == 2 &&
        gf_out_dtype_size(GF_OUT_BF16) == 2 && gf_out_dtype_size(4) == 0);
}

int main(void) {
  test_hand_f32();
  test_hand_u8();
  test_center();
  test_random();
  test_half();
  test_random_batches();
  test_filtered();
  test_shapes_and_checks();
  return gf_test_finish();
}
