/* The window of a sample decoded as a region of its image (transform.h,
 * "Decoded regions": gf_xform_region_rect, gf_xform_sample_init_region)
 * against the documented arithmetic restated here, on 20,000 random
 * images, transforms, epochs and scales:
 *  - the rectangle is the window (resize modes) or the crop window's part
 *    inside the image, at least 1x1 (GF_RESIZE_NONE), and the size it may
 *    be scaled to is the output (SHORTER_CENTER_CROP: the resampled whole
 *    image; crop: the rectangle);
 *  - in a region the decoder would return for it (rows y/d up to
 *    ceil((y+h)/d), clamped to ceil(H/d)), the window starts at
 *    (2a + d) / (2d) and ends at (2(a + n) + d) / (2d), clamped, less the
 *    region's origin; geom is the full-scale window when d > 1, 0 at d = 1
 *    (where the sample equals gf_xform_sample_init's moved by the origin);
 *    the flip is unchanged; gf_xform_validate accepts every such sample;
 *  - GF_RESIZE_NONE: the crop's top-left moved by the region's origin.
 * A region of denom 0 is gf_xform_sample_init itself. */
#include "testutil.h"

#include "xform/transform.h"

#include <string.h>

static uint64_t rs = 12345;
static uint32_t rnd(uint32_t n) { return (uint32_t)(gf_test_rand(&rs) % n); }

static uint32_t rounded(uint64_t v, uint32_t d) {
  return (uint32_t)((2 * v + d) / (2 * (uint64_t)d));
}

int main(void) {
  int bad = 0;
  for (int trial = 0; trial < 20000 && bad < 10; trial++) {
    gf_transform t;
    memset(&t, 0, sizeof t);
    t.resize = rnd(4);
    t.height = 1 + rnd(300);
    t.width = 1 + rnd(300);
    t.hflip = rnd(2);
    t.seed = gf_test_rand(&rs);
    if (t.resize == GF_RESIZE_NONE) {
      t.random_crop = rnd(2);
      t.pad = rnd(3) ? 0 : rnd(40);
    }
    CHECK_OK(gf_xform_check(&t));
    uint32_t H = 1 + rnd(rnd(4) ? 900 : 20), W = 1 + rnd(rnd(4) ? 900 : 20);
    uint64_t epoch = rnd(5), idx = gf_test_rand(&rs) % 100000;
    uint32_t y, x, rh, rw, wh, ww;
    gf_xform_region_rect(&t, epoch, idx, H, W, &y, &x, &rh, &rw, &wh, &ww);
    gf_xform_win win;
    gf_xform_window(&t, epoch, idx, H, W, &win);
    bool ok =
        rh >= 1 && rw >= 1 && (uint64_t)y + rh <= H && (uint64_t)x + rw <= W;
    if (t.resize != GF_RESIZE_NONE) {
      ok = ok && y == (uint32_t)win.y && x == (uint32_t)win.x && rh == win.wh &&
           rw == win.ww && wh == win.rs_h && ww == win.rs_w;
    } else {
      /* The crop window [cy, cy + oh) cut to the image. */
      int64_t a = win.y < 0 ? 0 : win.y, b = (int64_t)win.y + t.height;
      int64_t a2 = win.x < 0 ? 0 : win.x, b2 = (int64_t)win.x + t.width;
      if (b > H)
        b = H;
      if (b2 > W)
        b2 = W;
      if (b > a && b2 > a2)
        ok = ok && y == a && rh == b - a && x == a2 && rw == b2 - a2;
      ok = ok && wh == rh && ww == rw;
    }
    /* The region a decoder returns at 1/d (resize modes; 1 for crop). */
    uint32_t d = t.resize ? 1u << rnd(4) : 1;
    uint32_t sh = (H + d - 1) / d, sw = (W + d - 1) / d;
    uint32_t y0 = y / d, x0 = x / d;
    uint32_t y1 = (uint32_t)(((uint64_t)y + rh + d - 1) / d);
    uint32_t x1 = (uint32_t)(((uint64_t)x + rw + d - 1) / d);
    y1 = y1 < sh ? y1 : sh;
    x1 = x1 < sw ? x1 : sw;
    gf_shape reg = {y1 - y0, x1 - x0, 3, GF_DTYPE_U8};
    gf_xform_region r = {H, W, d, y0, x0};
    gf_xform_sample s;
    gf_xform_sample_init_region(&t, epoch, idx, 7, &reg, t.height, t.width, &r,
                                &s);
    ok = ok && s.h == reg.height && s.w == reg.width && s.c == 3 &&
         s.src_offset == 7 && s.flip == win.flip && !s.filtered;
    if (t.resize != GF_RESIZE_NONE) {
      uint32_t lo = rounded(y, d), hi = rounded((uint64_t)y + rh, d);
      uint32_t lx = rounded(x, d), hx = rounded((uint64_t)x + rw, d);
      /* The rounding stays inside the region; a window under a scaled
       * pixel rounds to nothing and is widened to one. */
      ok = ok && lo >= y0 && hi <= y1 && lx >= x0 && hx <= x1;
      if (lo > y1 - 1)
        lo = y1 - 1;
      if (hi <= lo)
        hi = lo + 1;
      if (lx > x1 - 1)
        lx = x1 - 1;
      if (hx <= lx)
        hx = lx + 1;
      ok = ok && s.crop_y == (int32_t)(lo - y0) && s.win_h == hi - lo &&
           s.crop_x == (int32_t)(lx - x0) && s.win_w == hx - lx;
      ok = ok && (d > 1 ? s.geom_h == rh && s.geom_w == rw
                        : s.geom_h == 0 && s.geom_w == 0);
    } else {
      ok = ok && s.crop_y == win.y - (int32_t)y0 &&
           s.crop_x == win.x - (int32_t)x0 && !s.win_h && !s.geom_h;
    }
    if (d == 1) {
      /* The full-image sample, moved by the region's origin. */
      gf_shape full = {H, W, 3, GF_DTYPE_U8};
      gf_xform_sample f;
      gf_xform_sample_init(&t, epoch, idx, 7, &full, t.height, t.width, 0, &f);
      ok = ok && f.crop_y - (int32_t)y0 == s.crop_y &&
           f.crop_x - (int32_t)x0 == s.crop_x && f.win_h == s.win_h &&
           f.win_w == s.win_w && f.resize == s.resize && f.flip == s.flip;
    }
    uint64_t len = 7 + gf_shape_bytes(&reg);
    if (ok && gf_xform_validate(&s, 1, len, t.height, t.width, 3, 0) != 0) {
      printf("validate: %s\n", gf_last_error()->message);
      ok = false;
    }
    if (!ok) {
      printf("trial %d: mode %u out %ux%u image %ux%u epoch %llu idx %llu "
             "d %u: rect (%u,%u) %ux%u want %ux%u; window (%d,%d) %ux%u; "
             "region (%u,%u) %ux%u; sample crop (%d,%d) win %ux%u geom "
             "%ux%u\n",
             trial, t.resize, t.height, t.width, H, W,
             (unsigned long long)epoch, (unsigned long long)idx, d, y, x, rh,
             rw, wh, ww, win.y, win.x, win.wh, win.ww, y0, x0, reg.height,
             reg.width, s.crop_y, s.crop_x, s.win_h, s.win_w, s.geom_h,
             s.geom_w);
      bad++;
    }
  }
  CHECK(bad == 0);
  /* denom 0: gf_xform_sample_init. */
  gf_transform t;
  memset(&t, 0, sizeof t);
  t.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
  t.height = t.width = 32;
  gf_shape sh = {100, 80, 3, GF_DTYPE_U8};
  gf_xform_region none = {0};
  gf_xform_sample a, b;
  gf_xform_sample_init_region(&t, 1, 2, 0, &sh, 32, 32, &none, &a);
  gf_xform_sample_init(&t, 1, 2, 0, &sh, 32, 32, 0, &b);
  CHECK(memcmp(&a, &b, sizeof a) == 0);
  return gf_test_finish();
}
