/* JPEG window decodes: for gray and RGB images encoded 4:2:0, 4:2:2 and
 * 4:4:4 (baseline and progressive), of odd sizes, every window decoded at
 * 1/1, 1/2, 1/4 and 1/8 equals byte for byte the same rectangle of a whole
 * decode at that scale: random windows, windows touching every edge, 1x1
 * windows in the corners, with and without a channel conversion, and each
 * the same when read on to the end of the file (to_end); the same for
 * progressive files that end after their first scans. Also
 * gf_jpeg_pick_denom by hand, and the region call's argument checks. */
#include "testutil.h"
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>

/* The full decode of an image at 1/denom (the region call with the whole
 * image as the window: no skip, no crop). */
static uint8_t *scaled(const void *f, size_t len, const gf_decode_opts *o,
                       uint32_t h, uint32_t w, uint32_t denom, gf_shape *s) {
  gf_jpeg_region all = {0, 0, h, w, denom, false};
  uint32_t sh = (h + denom - 1) / denom, sw = (w + denom - 1) / denom;
  size_t cap = (size_t)sh * sw * 4;
  uint8_t *px = malloc(cap);
  uint32_t y0 = 99, x0 = 99;
  CHECK_OK(gf_jpeg_decode_region(f, len, o, &all, px, cap, s, &y0, &x0));
  CHECK(s->height == sh && s->width == sw && y0 == 0 && x0 == 0);
  return px;
}

typedef struct image {
  const uint8_t *f;
  size_t len;
  uint32_t h, w;
  const char *what;
} image;

static int windows_checked;

/* Decodes window r and compares it with the full decode at r->denom. */
static void check_window(const image *im, const gf_decode_opts *o,
                         const gf_jpeg_region *r, const uint8_t *full,
                         const gf_shape *fs) {
  uint32_t dn = r->denom;
  uint32_t wy0 = r->y / dn, wx0 = r->x / dn;
  uint32_t wy1 = (r->y + r->h + dn - 1) / dn, wx1 = (r->x + r->w + dn - 1) / dn;
  wy1 = wy1 < fs->height ? wy1 : fs->height;
  wx1 = wx1 < fs->width ? wx1 : fs->width;
  uint32_t c = fs->channels;
  size_t row = (size_t)(wx1 - wx0) * c;
  size_t need = row * (wy1 - wy0);
  /* Exactly the bytes needed: ASan sees a write past them. */
  uint8_t *px = malloc(need);
  gf_shape s;
  uint32_t y0 = 99999, x0 = 99999;
  int rc = gf_jpeg_decode_region(im->f, im->len, o, r, px, need, &s, &y0, &x0);
  windows_checked++;
  if (rc < 0) {
    fprintf(stderr, "%s: window %ux%u at (%u,%u) 1/%u: %s\n", im->what, r->h,
            r->w, r->y, r->x, dn, gf_last_error()->message);
    gf_test_failures++;
    free(px);
    return;
  }
  CHECK(s.height == wy1 - wy0 && s.width == wx1 - wx0 && s.channels == c &&
        s.dtype == GF_DTYPE_U8);
  CHECK(y0 == wy0 && x0 == wx0);
  bool same = true;
  for (uint32_t y = 0; same && y < wy1 - wy0; y++)
    same = memcmp(px + y * row,
                  full + ((size_t)(wy0 + y) * fs->width + wx0) * c, row) == 0;
  if (!same) {
    fprintf(stderr, "%s: window %ux%u at (%u,%u) 1/%u differs from the full "
                    "decode\n",
            im->what, r->h, r->w, r->y, r->x, dn);
    gf_test_failures++;
  }
  /* Read on to the end of the file (to_end): the same pixels. */
  gf_jpeg_region e = *r;
  e.to_end = true;
  uint8_t *pe = malloc(need);
  gf_shape es;
  CHECK_OK(
      gf_jpeg_decode_region(im->f, im->len, o, &e, pe, need, &es, &y0, &x0));
  CHECK(memcmp(&es, &s, sizeof es) == 0 && memcmp(pe, px, need) == 0);
  free(pe);
  /* One byte short: refused, nothing written past. */
  if (need > 1) {
    CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, o, r, px, need - 1, &s,
                                    &y0, &x0),
              GF_ESHAPE);
  }
  free(px);
}

static void check_image(const image *im, uint64_t *rng, int nrandom) {
  static const uint32_t chans[] = {0, 1, 3, 4};
  for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++) {
    gf_decode_opts o = GF_DECODE_OPTS_INIT;
    o.channels = chans[ci];
    /* At 1/1 the scaled decode is the plain one. */
    gf_shape ds;
    size_t cap = (size_t)im->h * im->w * 4;
    uint8_t *plain = malloc(cap);
    CHECK_OK(gf_jpeg_decode(im->f, im->len, &o, plain, cap, &ds));
    for (uint32_t dn = 1; dn <= 8; dn *= 2) {
      gf_shape fs;
      uint8_t *full = scaled(im->f, im->len, &o, im->h, im->w, dn, &fs);
      if (dn == 1)
        CHECK(memcmp(&fs, &ds, sizeof fs) == 0 &&
              memcmp(full, plain, (size_t)gf_shape_bytes(&fs)) == 0);
      uint32_t H = im->h, W = im->w;
      /* The corners, 1x1; bands along each edge; the whole image. */
      gf_jpeg_region fixed[] = {{0, 0, 1, 1, dn, false},
                                {0, W - 1, 1, 1, dn, false},
                                {H - 1, 0, 1, 1, dn, false},
                                {H - 1, W - 1, 1, 1, dn, false},
                                {0, 0, H, 1, dn, false},
                                {0, W - 1, H, 1, dn, false},
                                {0, 0, 1, W, dn, false},
                                {H - 1, 0, 1, W, dn, false},
                                {0, 0, H, W, dn, false},
                                {H / 2, W / 2, H - H / 2, W - W / 2, dn, false},
                                {0, W / 3, H, W / 3 + 1, dn, false}};
      for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        check_window(im, &o, &fixed[k], full, &fs);
      /* Random windows, a third of them touching an edge. */
      for (int k = 0; k < nrandom; k++) {
        gf_jpeg_region r = {0, 0, 0, 0, dn, false};
        r.h = 1 + (uint32_t)(gf_test_rand(rng) % H);
        r.w = 1 + (uint32_t)(gf_test_rand(rng) % W);
        r.y = (uint32_t)(gf_test_rand(rng) % (H - r.h + 1));
        r.x = (uint32_t)(gf_test_rand(rng) % (W - r.w + 1));
        switch (k % 6) {
        case 0: r.y = 0; break;
        case 1: r.x = W - r.w; break;
        default: break;
        }
        check_window(im, &o, &r, full, &fs);
      }
      free(full);
    }
    free(plain);
  }
}

static void test_pick_denom(void) {
  CHECK(gf_jpeg_pick_denom(256, 256, 224, 224) == 1);
  CHECK(gf_jpeg_pick_denom(448, 448, 224, 224) == 2);
  CHECK(gf_jpeg_pick_denom(447, 448, 224, 224) == 1);
  CHECK(gf_jpeg_pick_denom(896, 1000, 224, 224) == 4);
  CHECK(gf_jpeg_pick_denom(1792, 1792, 224, 224) == 8);
  CHECK(gf_jpeg_pick_denom(100000, 100000, 1, 1) == 8);
  CHECK(gf_jpeg_pick_denom(1792, 895, 224, 224) == 2);
  CHECK(gf_jpeg_pick_denom(15, 15, 2, 2) == 4);
  CHECK(gf_jpeg_pick_denom(16, 16, 2, 2) == 8);
  CHECK(gf_jpeg_pick_denom(1, 1, 1, 1) == 1);
  CHECK(gf_jpeg_pick_denom(0, 0, 1, 1) == 1);
  CHECK(gf_jpeg_pick_denom(10, 10, 0, 0) == 8);
  CHECK(gf_jpeg_pick_denom(5, 5, 6, 6) == 1);
}

static void test_errors(const image *im) {
  uint8_t dst[64];
  gf_shape s;
  uint32_t y0, x0;
  gf_jpeg_region r = {0, 0, 1, 1, 3, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  CHECK(strstr(gf_last_error()->message, "1/3") != NULL);
  r = (gf_jpeg_region){im->h, 0, 1, 1, 1, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  CHECK(strstr(gf_last_error()->message, "not inside") != NULL);
  r = (gf_jpeg_region){0, 1, 1, im->w, 1, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  r = (gf_jpeg_region){0, 0, 0, 1, 1, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  r = (gf_jpeg_region){UINT32_MAX, 0, 2, 1, 1, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  r = (gf_jpeg_region){0, 0, 1, 1, 1, false};
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, NULL, dst, sizeof dst,
                                  &s, &y0, &x0),
            -EINVAL);
  CHECK_ERR(gf_jpeg_decode_region(im->f, im->len, NULL, &r, NULL, 0, &s, &y0,
                                  &x0),
            -EINVAL);
  CHECK_OK(gf_jpeg_decode_region(im->f, im->len, NULL, &r, dst, sizeof dst,
                                 &s, &y0, &x0));
}

int main(void) {
  static const struct {
    uint32_t h, w, c;
    int sub;
    bool prog;
    int nrandom;
  } cases[] = {
      {1, 1, 3, GF_JPEG_420, false, 2},   {1, 1, 1, GF_JPEG_444, false, 2},
      {7, 13, 3, GF_JPEG_420, false, 20}, {7, 13, 3, GF_JPEG_422, true, 20},
      {17, 9, 3, GF_JPEG_444, false, 20}, {17, 9, 1, GF_JPEG_420, false, 20},
      {13, 7, 3, GF_JPEG_422, false, 20}, {40, 70, 3, GF_JPEG_420, true, 30},
      {500, 333, 3, GF_JPEG_420, false, 24},
      {333, 500, 3, GF_JPEG_422, false, 12},
      {500, 333, 3, GF_JPEG_444, true, 12},
      {333, 500, 1, GF_JPEG_444, false, 12},
      /* Rare layouts: libjpeg-turbo 2.1 crops a scaled 4x2 or 2x4 file
       * wrongly, so those are decoded full width. */
      {37, 61, 3, GF_JPEG_41, false, 20},  {61, 37, 3, GF_JPEG_42, false, 20},
      {37, 61, 3, GF_JPEG_24, true, 20},   {75, 119, 3, GF_JPEG_14, false, 20},
      {75, 119, 3, GF_JPEG_31, false, 20}, {119, 75, 3, GF_JPEG_42, true, 20},
  };
  uint64_t rng = 14;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gf_shape s = {cases[i].h, cases[i].w, cases[i].c, GF_DTYPE_U8};
    uint8_t *px = malloc((size_t)gf_shape_bytes(&s));
    gf_test_fill_image(px, s.height, s.width, s.channels, i + 1);
    gf_jpeg_enc_opts eo = {cases[i].sub, cases[i].prog, false, 0};
    void *f = NULL;
    size_t len = 0;
    CHECK_OK(gf_jpeg_encode_ex(px, &s, 85, &eo, &f, &len));
    char what[96];
    static const char *subs[GF_JPEG_SUBSAMPLINGS] = {
        "4:2:0", "4:2:2", "4:4:4", "luma 4x1", "luma 4x2",
        "luma 2x4", "luma 1x4", "luma 3x1"};
    snprintf(what, sizeof what, "%ux%u %s %s%s", s.height, s.width,
             s.channels == 1 ? "gray" : "RGB",
             s.channels == 1 ? "" : subs[cases[i].sub],
             cases[i].prog ? " progressive" : "");
    image im = {f, len, s.height, s.width, what};
    if (f) {
      gf_shape hs;
      CHECK_OK(gf_jpeg_shape(f, len, NULL, &hs));
      CHECK(hs.height == s.height && hs.width == s.width &&
            hs.channels == s.channels && hs.dtype == GF_DTYPE_U8);
      check_image(&im, &rng, cases[i].nrandom);
      if (i == 4)
        test_errors(&im);
    }
    free(f);
    free(px);
  }
  /* A progressive file that ends (EOI) after its first scans: valid, its
   * coefficients unrefined, where libjpeg's block smoothing would treat a
   * cropped window differently from the whole image. */
  for (int scans = 1; scans <= 4; scans++) {
    gf_shape s = {45, 70, 3, GF_DTYPE_U8};
    uint8_t *px = malloc((size_t)gf_shape_bytes(&s));
    gf_test_fill_image(px, s.height, s.width, s.channels, 99);
    gf_jpeg_enc_opts eo = {GF_JPEG_422, true, scans % 2 == 0, 0};
    void *fv = NULL;
    size_t len = 0;
    CHECK_OK(gf_jpeg_encode_ex(px, &s, 80, &eo, &fv, &len));
    uint8_t *f = fv;
    /* Cut before SOS number scans + 1, then EOI. */
    size_t cut = 0;
    int seen = 0;
    for (size_t k = 2; f && k + 1 < len && !cut; k++)
      if (f[k] == 0xFF && f[k + 1] == 0xDA && ++seen == scans + 1)
        cut = k;
    CHECK(cut > 0);
    if (cut) {
      f[cut] = 0xFF;
      f[cut + 1] = 0xD9;
      char what[64];
      snprintf(what, sizeof what, "45x70 progressive%s, %d scan(s)",
               eo.arithmetic ? " arithmetic" : "", scans);
      image im = {f, cut + 2, s.height, s.width, what};
      check_image(&im, &rng, 20);
    }
    free(f);
    free(px);
  }
  test_pick_denom();
  printf("%d windows matched their full decodes\n", windows_checked);
  return gf_test_finish();
}
