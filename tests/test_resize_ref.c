/* The resize transforms' CPU reference (lib/xform/xform_ref.c) and windows
 * (lib/xform/xform_draw.c):
 * - hand-computed cases: 4x4 -> 2x2 antialiased and plain bilinear, 2x2 ->
 *   4x4 upsampling, the fixed-point weights and the uint8 intermediate
 *   worked out by hand (4 -> 2 and 2 -> 4), a 1-pixel image, a window at an edge (the filter never
 *   reads outside it), CenterCrop's zero padding, flip, f32 = the
 *   normalised u8-rounded value;
 * - gf_xform_window against a literal re-statement of torchvision's
 *   RandomResizedCrop.get_params (same random draws) on many random sizes,
 *   the fallback taken, and Resize(S) + CenterCrop's sizes and offsets;
 * - gf_xform_ref against a naive per-pixel implementation on random sizes,
 *   windows, dtypes, layouts and flips, in ragged batches;
 * - the checks: resize fields refused where they do not belong. */
#include "testutil.h"

#include "xform/transform.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static gf_transform tf(uint32_t mode, uint32_t dtype, uint32_t layout,
                       uint32_t h, uint32_t w) {
  gf_transform t;
  memset(&t, 0, sizeof t);
  t.resize = mode;
  t.out_dtype = dtype;
  t.layout = layout;
  t.height = h;
  t.width = w;
  return t;
}

/* A resized sample of h x w x c at offset 0: window (wy, wx, wh, ww),
 * resize = the sample's mode bits. */
static gf_xform_sample rs_sample(uint32_t h, uint32_t w, uint32_t c,
                                 int32_t wy, int32_t wx, uint32_t wh,
                                 uint32_t ww, uint32_t flip,
                                 uint32_t resize) {
  gf_xform_sample s;
  memset(&s, 0, sizeof s);
  s.h = h;
  s.w = w;
  s.c = c;
  s.crop_y = wy;
  s.crop_x = wx;
  s.win_h = wh;
  s.win_w = ww;
  s.flip = (uint8_t)flip;
  s.resize = (uint8_t)resize;
  return s;
}

static void hand_cases(void) {
  /* 4x4 gray, p = 10 y + 20 x, to 2x2 antialiased: per axis scale 2,
   * support 2, weights [3,3,1]/7 on taps 0..2 and [1,3,3]/7 on 1..3, so
   * E = 5/7 and 16/7: out = 10 Ey + 20 Ex = 150/7, 370/7, 260/7, 480/7. */
  uint8_t img[16];
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++)
      img[y * 4 + x] = (uint8_t)(10 * y + 20 * x);
  gf_transform t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 2, 2);
  gf_xform_sample s = rs_sample(4, 4, 1, 0, 0, 4, 4, 0, GF_RESIZE_EXACT);
  uint8_t o[128];
  CHECK_OK(gf_xform_ref(&t, img, 16, &s, 1, 2, 2, 1, o));
  CHECK(o[0] == 21 && o[1] == 53 && o[2] == 37 && o[3] == 69);
  /* Plain bilinear: taps {0,1} and {2,3} at 1/2 each: 15 55 35 75. */
  t.no_antialias = 1;
  s.resize = GF_RESIZE_EXACT | GF_XFORM_NO_AA;
  CHECK_OK(gf_xform_ref(&t, img, 16, &s, 1, 2, 2, 1, o));
  CHECK(o[0] == 15 && o[1] == 55 && o[2] == 35 && o[3] == 75);
  t.no_antialias = 0;

  /* 2x2 -> 4x4: per axis weights 1 | 3/4,1/4 | 1/4,3/4 | 1. */
  const uint8_t up[4] = {0, 100, 40, 200};
  static const uint8_t want_up[16] = {0,  25, 75,  100, 10, 39, 96,  125,
                                      30, 66, 139, 175, 40, 80, 160, 200};
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 4, 4);
  s = rs_sample(2, 2, 1, 0, 0, 2, 2, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, up, 4, &s, 1, 4, 4, 1, o));
  CHECK(memcmp(o, want_up, 16) == 0);
  /* The same flipped: each row mirrored. */
  s.flip = 1;
  CHECK_OK(gf_xform_ref(&t, up, 4, &s, 1, 4, 4, 1, o));
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 4; x++)
      CHECK(o[y * 4 + x] == want_up[y * 4 + 3 - x]);
  /* f32 NCHW, normalised: the u8-rounded value, then (x - mean) / std. */
  t = tf(GF_RESIZE_EXACT, GF_OUT_F32, GF_LAYOUT_NCHW, 4, 4);
  t.mean[0] = 100.0f;
  t.std[0] = 50.0f;
  s.flip = 0;
  float of[16];
  CHECK_OK(gf_xform_ref(&t, up, 4, &s, 1, 4, 4, 1, of));
  for (int i = 0; i < 16; i++)
    CHECK(of[i] == ((float)want_up[i] - 100.0f) / 50.0f);

  /* The fixed-point arithmetic by hand (transform.h: W = floor(w 2^14 +
   * 1/2); a pass is clip8(8192 + sum W p) = floor(sum w p + 1/2), the
   * horizontal one kept as uint8). 2x2 -> 4x4: per axis W = 16384 | 12288,
   * 4096 | 4096, 12288 | 16384 (w = 1 | 3/4,1/4 | 1/4,3/4 | 1, exact).
   * Image rows (0, 2) and (2, 5); horizontal results, floor(. + 1/2):
   *   row 0: 0, floor(0.5 + 0.5) = 1, floor(1.5 + 0.5) = 2, 2
   *   row 1: 2, floor(1.5 + 1.25 + 0.5) = 3, floor(0.5 + 3.75 + 0.5) = 4, 5
   * vertical: row 0 and row 3 those; row 1 = floor(3/4 h0 + 1/4 h1 + 1/2):
   * 1, 2, 3, 3; row 2 = floor(1/4 h0 + 3/4 h1 + 1/2): 2, 3, 4, 4. (Float
   * sums rounded once, half to even, would give 0 at (0, 1) and 1 at
   * (1, 1): 3/4 x 0.5 + 1/4 x 3.25 = 1.1875.) */
  const uint8_t fx[4] = {0, 2, 2, 5};
  static const uint8_t want_fx[16] = {0, 1, 2, 2, 1, 2, 3, 3,
                                      2, 3, 4, 4, 2, 3, 4, 5};
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 4, 4);
  s = rs_sample(2, 2, 1, 0, 0, 2, 2, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, fx, 4, &s, 1, 4, 4, 1, o));
  CHECK(memcmp(o, want_fx, 16) == 0);
  /* 4x4 -> 2x2 antialiased: w = 3/7, 3/7, 1/7 on taps 0-2 (index 0) and
   * 1/7, 3/7, 3/7 on taps 1-3 (index 1): W = 7022, 7022, 2341 (3/7 2^14 =
   * 7021.71, 1/7 2^14 = 2340.57). Rows (0 0 0 4), (2 2 2 2), (0 0 1 1),
   * (9 0 0 0); horizontal, (8192 + sum) >> 14:
   *   column 0: 8192 >> 14 = 0; (8192 + 2 x 16385) >> 14 = 2;
   *             (8192 + 2341) >> 14 = 0; (8192 + 9 x 7022) >> 14 = 4
   *   column 1: (8192 + 4 x 7022) >> 14 = 2; 2; (8192 + 14044) >> 14 = 1; 0
   * vertical (the same weights over rows):
   *   (0, 0): 8192 + 7022 x 2 = 22236 -> 1
   *   (0, 1): 8192 + 7022 x 2 + 7022 x 2 + 2341 x 1 = 38621 -> 2
   *   (1, 0): 8192 + 2341 x 2 + 7022 x 4 = 40962 -> 2
   *   (1, 1): 8192 + 2341 x 2 + 7022 x 1 = 19896 -> 1 */
  const uint8_t dn[16] = {0, 0, 0, 4, 2, 2, 2, 2, 0, 0, 1, 1, 9, 0, 0, 0};
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 2, 2);
  s = rs_sample(4, 4, 1, 0, 0, 4, 4, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, dn, 16, &s, 1, 2, 2, 1, o));
  CHECK(o[0] == 1 && o[1] == 2 && o[2] == 2 && o[3] == 1);
  /* The weights themselves. */
  CHECK(gf_rs_wq(3.0f / 7.0f) == 7022 && gf_rs_wq(1.0f / 7.0f) == 2341 &&
        gf_rs_wq(1.0f) == 16384 && gf_rs_wq(0.0f) == 0 &&
        gf_rs_wq(0.75f) == 12288);
  /* A pass rounds half up and clamps. */
  CHECK(gf_rs_clip8(8192 + 16384 / 2) == 1 &&
        gf_rs_clip8(8192 + 16384 / 2 - 1) == 0 &&
        gf_rs_clip8(8192 + 300u * 16384) == 255);

  /* A 1-pixel RGB image to 3x5: every pixel the same. */
  const uint8_t one[3] = {7, 130, 251};
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 3, 5);
  s = rs_sample(1, 1, 3, 0, 0, 1, 1, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, one, 3, &s, 1, 3, 5, 3, o));
  for (int i = 0; i < 15; i++)
    CHECK(o[3 * i] == 7 && o[3 * i + 1] == 130 && o[3 * i + 2] == 251);

  /* A window at the bottom-right edge of a 6x7 image whose pixels outside
   * the window are 255 and inside 0..: the result equals resizing the
   * window cut out on its own, so nothing outside is read. The source
   * buffer ends where the image ends (ASan catches a read past it). */
  uint8_t *big = malloc(6 * 7 * 2), cut[3 * 4 * 2];
  for (int y = 0; y < 6; y++)
    for (int x = 0; x < 7; x++)
      for (int ch = 0; ch < 2; ch++) {
        bool in = y >= 3 && x >= 3;
        uint8_t v = in ? (uint8_t)(y * 31 + x * 17 + ch * 5) : 255;
        big[(y * 7 + x) * 2 + ch] = v;
        if (in)
          cut[((y - 3) * 4 + (x - 3)) * 2 + ch] = v;
      }
  uint8_t o2[5 * 9 * 2];
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 5, 9);
  s = rs_sample(6, 7, 2, 3, 3, 3, 4, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, big, 6 * 7 * 2, &s, 1, 5, 9, 2, o));
  gf_xform_sample s2 = rs_sample(3, 4, 2, 0, 0, 3, 4, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, cut, sizeof cut, &s2, 1, 5, 9, 2, o2));
  CHECK(memcmp(o, o2, sizeof o2) == 0);
  bool any255 = false;
  for (size_t i = 0; i < sizeof o2; i++)
    any255 |= o2[i] == 255;
  CHECK(!any255);
  /* Shrinking that window to 1x1 (antialiased, support over all of it). */
  t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 1, 1);
  s = rs_sample(6, 7, 2, 3, 3, 3, 4, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, big, 6 * 7 * 2, &s, 1, 1, 1, 2, o));
  s2 = rs_sample(3, 4, 2, 0, 0, 3, 4, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_ref(&t, cut, sizeof cut, &s2, 1, 1, 1, 2, o2));
  CHECK(o[0] == o2[0] && o[1] == o2[1] && o[0] != 255);
  free(big);

  /* CenterCrop's padding: a 2x2 resampled window in a 4x4 output at
   * offset (-1, -1): a zero border, the identity inside. */
  t = tf(GF_RESIZE_SHORTER_CENTER_CROP, GF_OUT_U8, GF_LAYOUT_NHWC, 4, 4);
  t.resize_size = 2;
  s = rs_sample(2, 2, 1, 0, 0, 2, 2, 0, GF_RESIZE_SHORTER_CENTER_CROP);
  CHECK_OK(gf_xform_ref(&t, up, 4, &s, 1, 4, 4, 1, o));
  static const uint8_t want_pad[16] = {0, 0,  0,   0, 0, 0, 100, 0,
                                       0, 40, 200, 0, 0, 0, 0,   0};
  CHECK(memcmp(o, want_pad, 16) == 0);
}

/* The documented draws, restated. */
static uint64_t mixr(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
#define GOLD 0x9E3779B97F4A7C15ull
typedef struct rng {
  uint64_t k, i;
} rng;
static uint64_t next_draw(rng *r) { return mixr(r->k + (++r->i) * GOLD); }
/* torch.empty(1).uniform_(a, b) */
static double uniform(rng *r, double a, double b) {
  return a + (b - a) * ((double)(next_draw(r) >> 11) * 0x1.0p-53);
}
/* torch.randint(lo, hi): hi - lo choices */
static int64_t randint(rng *r, int64_t lo, int64_t hi) {
  uint64_t n = (uint64_t)(hi - lo);
  return lo + (int64_t)(((next_draw(r) >> 32) * n) >> 32);
}

/* torchvision.transforms.RandomResizedCrop.get_params, line by line. */
static void tv_get_params(uint32_t height, uint32_t width,
                          const double scale[2], const double ratio[2],
                          rng *r, int64_t out[4], int *fell_back) {
  double area = (double)height * width;
  double log_ratio[2] = {log(ratio[0]), log(ratio[1])};
  for (int t = 0; t < 10; t++) {
    r->i = 3 + 4 * (uint64_t)t; /* draw numbers 3 + 4t .. */
    double target_area = area * uniform(r, scale[0], scale[1]);
    double aspect_ratio = exp(uniform(r, log_ratio[0], log_ratio[1]));
    int64_t w = (int64_t)rint(sqrt(target_area * aspect_ratio));
    int64_t h = (int64_t)rint(sqrt(target_area / aspect_ratio));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int64_t i = randint(r, 0, height - h + 1);
      int64_t j = randint(r, 0, width - w + 1);
      out[0] = i, out[1] = j, out[2] = h, out[3] = w;
      *fell_back = 0;
      return;
    }
  }
  double in_ratio = (double)width / (double)height;
  int64_t w, h;
  if (in_ratio < fmin(ratio[0], ratio[1])) {
    w = width;
    h = (int64_t)rint(w / fmin(ratio[0], ratio[1]));
  } else if (in_ratio > fmax(ratio[0], ratio[1])) {
    h = height;
    w = (int64_t)rint(h * fmax(ratio[0], ratio[1]));
  } else {
    w = width;
    h = height;
  }
  out[0] = (height - h) / 2, out[1] = (width - w) / 2, out[2] = h,
  out[3] = w;
  *fell_back = 1;
}

static double py_round(double v) { return rint(v); }

static void window_cases(void) {
  uint64_t rs = 99;
  int fallbacks = 0, accepted = 0, flips = 0;
  for (int trial = 0; trial < 20000; trial++) {
    gf_transform t = tf(GF_RESIZE_RANDOM_RESIZED_CROP, GF_OUT_U8,
                        GF_LAYOUT_NHWC, 224, 224);
    t.seed = gf_test_rand(&rs);
    t.hflip = 1;
    double scale[2] = {0.08, 1.0}, ratio[2] = {3.0 / 4.0, 4.0 / 3.0};
    if (trial % 3 == 1) {
      t.scale[0] = 0.25f + (float)(gf_test_rand(&rs) % 50) / 100.0f;
      t.scale[1] = t.scale[0] + (float)(gf_test_rand(&rs) % 25) / 100.0f;
      t.ratio[0] = 0.5f;
      t.ratio[1] = 2.0f;
      scale[0] = t.scale[0], scale[1] = t.scale[1];
      ratio[0] = t.ratio[0], ratio[1] = t.ratio[1];
    }
    CHECK_OK(gf_xform_check(&t));
    /* Sizes from 1 to 600, with extreme aspects (the fallback) often. */
    uint32_t h = 1 + (uint32_t)(gf_test_rand(&rs) % 600);
    uint32_t w = 1 + (uint32_t)(gf_test_rand(&rs) % 600);
    if (trial % 5 == 0)
      w = 1 + (uint32_t)(gf_test_rand(&rs) % 8);
    if (trial % 7 == 0)
      h = 1 + (uint32_t)(gf_test_rand(&rs) % 8);
    uint64_t epoch = gf_test_rand(&rs) % 5, index = gf_test_rand(&rs);
    gf_xform_win win;
    gf_xform_window(&t, epoch, index, h, w, &win);
    uint64_t k = mixr(t.seed + GOLD);
    k = mixr((k ^ epoch) + GOLD);
    k = mixr((k ^ index) + GOLD);
    rng r = {k, 0};
    int64_t want[4];
    int fb;
    tv_get_params(h, w, scale, ratio, &r, want, &fb);
    if (want[2] < 1) /* torchvision would fail there; we keep 1 row */
      want[2] = 1;
    if (want[3] < 1)
      want[3] = 1;
    if (win.y != want[0] || win.x != want[1] || win.wh != want[2] ||
        win.ww != want[3] || (int)win.fallback != fb) {
      fprintf(stderr,
              "window of %ux%u (trial %d): got (%d,%d,%u,%u,fb %u), "
              "torchvision (%lld,%lld,%lld,%lld,fb %d)\n",
              h, w, trial, win.y, win.x, win.wh, win.ww, win.fallback,
              (long long)want[0], (long long)want[1], (long long)want[2],
              (long long)want[3], fb);
      gf_test_failures++;
      break;
    }
    CHECK(win.y >= 0 && win.x >= 0 && win.y + win.wh <= h &&
          win.x + win.ww <= w);
    CHECK(win.rs_h == 224 && win.rs_w == 224 && win.off_y == 0 &&
          win.off_x == 0);
    CHECK(win.flip == (uint32_t)(mixr(k + 3 * GOLD) >> 63));
    fallbacks += fb;
    accepted += !fb;
    flips += (int)win.flip;
    /* A pure function: the same again, and another index differs. */
    gf_xform_win again;
    gf_xform_window(&t, epoch, index, h, w, &again);
    CHECK(memcmp(&again, &win, sizeof win) == 0);
  }
  printf("rrc windows: %d accepted, %d fallbacks, %d flips\n", accepted,
         fallbacks, flips);
  CHECK(fallbacks > 1000 && accepted > 10000);
  CHECK(flips > 9000 && flips < 11000);

  /* Resize(S) + CenterCrop(H, W): torchvision's sizes and anchors. */
  for (int trial = 0; trial < 5000; trial++) {
    uint32_t H = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    uint32_t W = 1 + (uint32_t)(gf_test_rand(&rs) % 300);
    uint32_t h = 1 + (uint32_t)(gf_test_rand(&rs) % 700);
    uint32_t w = 1 + (uint32_t)(gf_test_rand(&rs) % 700);
    gf_transform t = tf(GF_RESIZE_SHORTER_CENTER_CROP, GF_OUT_U8,
                        GF_LAYOUT_NHWC, H, W);
    uint32_t S = (uint32_t)py_round(H * 256.0 / 224.0);
    if (trial % 2) {
      S = 1 + (uint32_t)(gf_test_rand(&rs) % 400);
      t.resize_size = S;
    }
    CHECK_OK(gf_xform_check(&t));
    gf_xform_win win;
    gf_xform_window(&t, 0, (uint64_t)trial, h, w, &win);
    /* _compute_resized_output_size */
    uint32_t shrt = w <= h ? w : h, lng = w <= h ? h : w;
    uint32_t new_short = S, new_long = (uint32_t)((double)S * lng / shrt);
    uint32_t nw = w <= h ? new_short : new_long;
    uint32_t nh = w <= h ? new_long : new_short;
    /* center_crop: pad (left, top = (crop - size) // 2), then
     * int(round((size - crop) / 2.0)) */
    int32_t top = H > nh ? -(int32_t)((H - nh) / 2)
                         : (int32_t)py_round((nh - H) / 2.0);
    int32_t left = W > nw ? -(int32_t)((W - nw) / 2)
                          : (int32_t)py_round((nw - W) / 2.0);
    if (win.rs_h != nh || win.rs_w != nw || win.off_y != top ||
        win.off_x != left || win.y != 0 || win.x != 0 || win.wh != h ||
        win.ww != w) {
      fprintf(stderr,
              "center crop %ux%u of %ux%u (S %u): got rs %ux%u off (%d,%d); "
              "torchvision %ux%u (%d,%d)\n",
              H, W, h, w, S, win.rs_h, win.rs_w, win.off_y, win.off_x, nh,
              nw, top, left);
      gf_test_failures++;
      break;
    }
  }
  /* EXACT: the whole image to H x W. */
  gf_transform t = tf(GF_RESIZE_EXACT, GF_OUT_U8, GF_LAYOUT_NHWC, 10, 20);
  gf_xform_win win;
  gf_xform_window(&t, 3, 4, 37, 5, &win);
  CHECK(win.y == 0 && win.x == 0 && win.wh == 37 && win.ww == 5 &&
        win.rs_h == 10 && win.rs_w == 20 && win.flip == 0);
}

/* The naive resampling: weights recomputed per pixel from the formula,
 * written out as transform.h states it (float weights, 14-bit fixed
 * point, a uint8 intermediate after the horizontal pass). */
static uint32_t naive_px(const uint8_t *img, uint32_t pitch, uint32_t c,
                         const gf_xform_sample *s, uint32_t rs_h,
                         uint32_t rs_w, uint32_t ry, uint32_t rx,
                         uint32_t ch) {
  uint32_t aa = !(s->resize & GF_XFORM_NO_AA);
  uint64_t acc = 8192;
  float wy[4096], wx[4096];
  int ny = 0, nx = 0, ly = 0, lx = 0;
  for (int axis = 0; axis < 2; axis++) {
    uint32_t in = axis ? s->win_w : s->win_h, out = axis ? rs_w : rs_h;
    uint32_t i = axis ? rx : ry;
    float scale = (float)in / (float)out;
    float support = (aa && scale >= 1.0f) ? scale : 1.0f;
    float invscale = (aa && scale >= 1.0f) ? 1.0f / scale : 1.0f;
    float center = scale * ((float)i + 0.5f);
    int lo = (int)(center - support + 0.5f), hi = (int)(center + support + 0.5f);
    if (lo < 0)
      lo = 0;
    if (hi > (int)in)
      hi = (int)in;
    float *w = axis ? wx : wy, total = 0;
    for (int j = lo; j < hi; j++) {
      float tt = fabsf(((float)j - center + 0.5f) * invscale);
      w[j - lo] = tt < 1.0f ? 1.0f - tt : 0.0f;
      total += w[j - lo];
    }
    for (int j = lo; j < hi && total != 0.0f; j++)
      w[j - lo] /= total;
    if (axis)
      nx = hi - lo, lx = lo;
    else
      ny = hi - lo, ly = lo;
  }
  for (int i = 0; i < ny; i++) {
    uint64_t hs = 8192;
    for (int j = 0; j < nx; j++)
      hs += (uint64_t)floorf(wx[j] * 16384.0f + 0.5f) *
            img[(size_t)(s->crop_y + ly + i) * pitch +
                (size_t)(s->crop_x + lx + j) * c + ch];
    hs /= 16384;
    acc += (uint64_t)floorf(wy[i] * 16384.0f + 0.5f) * (hs > 255 ? 255 : hs);
  }
  acc /= 16384;
  return acc > 255 ? 255 : (uint32_t)acc;
}

static void random_cases(void) {
  uint64_t rs = 5;
  for (int trial = 0; trial < 300; trial++) {
    uint32_t n = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint32_t c = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint32_t H = 1 + (uint32_t)(gf_test_rand(&rs) % 40);
    uint32_t W = 1 + (uint32_t)(gf_test_rand(&rs) % 40);
    uint32_t mode = 1 + (uint32_t)(gf_test_rand(&rs) % 3);
    gf_transform t = tf(mode, (uint32_t)(gf_test_rand(&rs) % 4),
                        (uint32_t)(gf_test_rand(&rs) % 2), H, W);
    t.hflip = (uint32_t)(gf_test_rand(&rs) % 2);
    t.no_antialias = trial % 5 == 4;
    t.seed = gf_test_rand(&rs);
    for (int ch = 0; ch < 4; ch++) {
      t.mean[ch] = (float)(gf_test_rand(&rs) % 256);
      t.std[ch] = 1.0f + (float)(gf_test_rand(&rs) % 100);
    }
    CHECK_OK(gf_xform_check(&t));
    gf_xform_sample s[4];
    uint64_t off = 0, idx[4];
    for (uint32_t i = 0; i < n; i++) {
      gf_shape sh = {0};
      sh.height = 1 + (uint32_t)(gf_test_rand(&rs) % 90);
      sh.width = 1 + (uint32_t)(gf_test_rand(&rs) % 90);
      sh.channels = c;
      sh.dtype = GF_DTYPE_U8;
      idx[i] = gf_test_rand(&rs);
      gf_xform_sample_init(&t, 1, idx[i], off, &sh, H, W, 0, &s[i]);
      off += (uint64_t)sh.height * sh.width * c + (gf_test_rand(&rs) % 7);
    }
    uint8_t *src = malloc(off ? off : 1);
    for (uint64_t i = 0; i < off; i++)
      src[i] = (uint8_t)gf_test_rand(&rs);
    size_t es = gf_out_dtype_size(t.out_dtype);
    size_t per = (size_t)H * W * c;
    uint8_t *out = malloc(n * per * es), *u8 = malloc(n * per);
    CHECK_OK(gf_xform_ref(&t, src, off, s, n, H, W, c, out));
    gf_transform tu = t;
    tu.out_dtype = GF_OUT_U8;
    tu.layout = GF_LAYOUT_NHWC;
    CHECK_OK(gf_xform_ref(&tu, src, off, s, n, H, W, c, u8));
    int bad = 0;
    for (uint32_t i = 0; i < n && !bad; i++) {
      const gf_xform_sample *p = &s[i];
      gf_xform_win win;
      gf_xform_window(&t, 1, idx[i], p->h, p->w, &win);
      CHECK(win.y == p->crop_y && win.x == p->crop_x && win.wh == p->win_h &&
            win.ww == p->win_w && win.flip == p->flip);
      for (uint32_t y = 0; y < H && !bad; y++)
        for (uint32_t x = 0; x < W && !bad; x++) {
          int64_t ry = (int64_t)win.off_y + y;
          int64_t rx = (int64_t)win.off_x + (p->flip ? W - 1 - x : x);
          bool in = ry >= 0 && ry < win.rs_h && rx >= 0 && rx < win.rs_w;
          for (uint32_t ch = 0; ch < c; ch++) {
            uint32_t want =
                in ? naive_px(src + p->src_offset, p->w * c, c, p, win.rs_h,
                              win.rs_w, (uint32_t)ry, (uint32_t)rx, ch)
                   : 0;
            uint32_t got = u8[i * per + ((size_t)y * W + x) * c + ch];
            if (got != want) {
              fprintf(stderr,
                      "trial %d sample %u (%ux%u win %d,%d %ux%u rs %ux%u "
                      "off %d,%d) at %u,%u,%u: %u, naive %u\n",
                      trial, i, p->h, p->w, p->crop_y, p->crop_x, p->win_h,
                      p->win_w, win.rs_h, win.rs_w, win.off_y, win.off_x, y,
                      x, ch, got, want);
              bad = 1;
              break;
            }
          }
        }
      /* The dtype/layout output is the value rule of the u8 one. */
      for (uint32_t y = 0; y < H && !bad; y++)
        for (uint32_t x = 0; x < W && !bad; x++)
          for (uint32_t ch = 0; ch < c; ch++) {
            uint32_t v = u8[i * per + ((size_t)y * W + x) * c + ch];
            size_t e = t.layout == GF_LAYOUT_NHWC
                           ? ((size_t)y * W + x) * c + ch
                           : ((size_t)ch * H + y) * W + x;
            e += i * per;
            float f = ((float)v - t.mean[ch]) / t.std[ch];
            uint32_t fb;
            memcpy(&fb, &f, 4);
            bool ok;
            if (t.out_dtype == GF_OUT_U8)
              ok = out[e] == v;
            else if (t.out_dtype == GF_OUT_F32)
              ok = memcmp(out + e * 4, &f, 4) == 0;
            else {
              uint16_t hv, want = t.out_dtype == GF_OUT_F16
                                      ? gf_f32_to_f16(fb)
                                      : gf_f32_to_bf16(fb);
              memcpy(&hv, out + e * 2, 2);
              ok = hv == want;
            }
            if (!ok) {
              fprintf(stderr, "trial %d: dtype %u layout %u value differs\n",
                      trial, t.out_dtype, t.layout);
              bad = 1;
              break;
            }
          }
    }
    if (bad)
      gf_test_failures++;
    free(src);
    free(out);
    free(u8);
  }
}

static void check_cases(void) {
  gf_transform t = tf(GF_RESIZE_RANDOM_RESIZED_CROP, GF_OUT_F16,
                      GF_LAYOUT_NCHW, 224, 224);
  CHECK_OK(gf_xform_check(&t));
  t.random_crop = 1;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.random_crop = 0;
  t.pad = 4;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.pad = 0;
  t.scale[0] = 0.5f; /* > scale[1] = 0 */
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.scale[1] = 1.5f;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.scale[1] = 1.0f;
  CHECK_OK(gf_xform_check(&t));
  t.ratio[0] = 2.0f;
  t.ratio[1] = 1.0f;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.ratio[1] = 3.0f;
  CHECK_OK(gf_xform_check(&t));
  t.resize_size = 256; /* for SHORTER_CENTER_CROP only */
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t = tf(GF_RESIZE_SHORTER_CENTER_CROP, GF_OUT_U8, GF_LAYOUT_NCHW, 0, 0);
  CHECK_ERR(gf_xform_check(&t), -EINVAL); /* needs the output size */
  t = tf(GF_RESIZE_EXACT + 1, GF_OUT_U8, GF_LAYOUT_NCHW, 5, 5);
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t = tf(GF_RESIZE_NONE, GF_OUT_U8, GF_LAYOUT_NCHW, 5, 5);
  t.no_antialias = 1;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);
  t.no_antialias = 0;
  t.scale[1] = 1.0f;
  CHECK_ERR(gf_xform_check(&t), -EINVAL);

  /* Samples: a window outside the image, resize fields on a crop sample,
   * and a filtered resized sample for the GPU (the CPU unfilters it). */
  uint8_t src[64] = {0};
  gf_xform_sample s = rs_sample(4, 4, 1, 1, 1, 4, 3, 0, GF_RESIZE_EXACT);
  CHECK_ERR(gf_xform_validate(&s, 1, 64, 2, 2, 1, 0), GF_ESHAPE);
  s = rs_sample(4, 4, 1, 0, 1, 4, 3, 0, GF_RESIZE_EXACT);
  CHECK_OK(gf_xform_validate(&s, 1, 64, 2, 2, 1, 0));
  s.resize = GF_XFORM_NO_AA; /* no mode */
  CHECK_ERR(gf_xform_validate(&s, 1, 64, 2, 2, 1, 0), -EINVAL);
  s.resize = GF_RESIZE_EXACT;
  s.filtered = 1;
  CHECK_OK(gf_xform_validate(&s, 1, 64, 2, 2, 1, 0));
  CHECK_ERR(gf_xform_validate(&s, 1, 64, 2, 2, 1, GF_XFORM_FOR_GPU),
            GF_EUNSUPPORTED);
  s.resize = 0;
  CHECK_ERR(gf_xform_validate(&s, 1, 64, 2, 2, 1, 0), -EINVAL);
  (void)src;
}

int main(void) {
  hand_cases();
  window_cases();
  random_cases();
  check_cases();
  return gf_test_finish();
}
