/* Fuzz target: JPEG decoding, whole and by window, with gpufeed's options.
 *
 * Input: 5 bytes of parameters, then the JPEG file. Byte 0: bits 0-1 pick
 * channels 0 (native), 1, 3 or 4; bits 2-3 the window's scale 1/1, 1/2,
 * 1/4 or 1/8; bit 4 also decodes into buffers one byte short (must be
 * refused, never overrun). Bytes 1-4 place the window as fractions
 * (/255) of the image: top, left, height, width.
 *
 * gf_decode_shape, then gf_decode twice into buffers pre-filled with
 * different bytes: both succeed or fail alike, with the announced shape
 * and identical pixels (a byte the decoder did not write would differ).
 * When the shape is refused, the decode is refused too. gf_jpeg_check
 * passes what decodes (with the same shape), and what it passes decodes
 * unless for its size (GF_ELIMIT, -ENOMEM): never damage. Then the window,
 * twice the same way, with the shape the region contract gives; when the
 * whole image at that scale decodes too, the window equals its rectangle.
 * The window read on to the end (to_end) has the full decode's verdict (but
 * for sizes) and, when both decode, the window's pixels. */
#include "fuzz.h"

#include "decode/decode.h"

/* Decoded bytes and pixels allowed here: a small image decodes in
 * microseconds, and the limits themselves are part of what is tested. */
#define LIMIT_BYTES (1u << 22)
#define LIMIT_PIXELS (1u << 20)

static void one_input(const uint8_t *p, const uint8_t *jpg, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5)
    return 0;
  /* An exact-size copy, so ASan sees a read past the file's end. */
  uint8_t *copy = fuzz_alloc(size - 5);
  memcpy(copy, data + 5, size - 5);
  one_input(data, copy, size - 5);
  free(copy);
  return 0;
}

/* Decodes the window twice (buffers filled 0x00 and 0xA5); returns the
 * status, the first buffer in *px (caller frees) and the window's shape
 * and place. */
static int window_twice(const gf_decode_opts *o, const uint8_t *jpg,
                        size_t len, const gf_jpeg_region *r, size_t cap,
                        uint8_t **px, gf_shape *s, uint32_t *y0,
                        uint32_t *x0) {
  uint8_t *a = fuzz_alloc(cap), *b = fuzz_alloc(cap);
  memset(a, 0x00, cap);
  memset(b, 0xA5, cap);
  gf_shape sb;
  uint32_t yb, xb;
  int ra = gf_jpeg_decode_region(jpg, len, o, r, a, cap, s, y0, x0);
  int rb = gf_jpeg_decode_region(jpg, len, o, r, b, cap, &sb, &yb, &xb);
  FUZZ_ASSERT(ra == rb);
  if (ra < 0) {
    FUZZ_CHECK_FAILURE(rb, "gf_jpeg_decode_region");
  } else {
    FUZZ_ASSERT(memcmp(s, &sb, sizeof sb) == 0 && *y0 == yb && *x0 == xb);
    FUZZ_ASSERT(memcmp(a, b, (size_t)gf_shape_bytes(s)) == 0);
  }
  free(b);
  *px = a;
  return ra;
}

static void check_window(const gf_decode_opts *o, const uint8_t *p,
                         const uint8_t *jpg, size_t len, const gf_shape *s,
                         bool short_buf, int full_rc) {
  uint32_t dn = 1u << ((p[0] >> 2) & 3);
  uint32_t H = s->height, W = s->width;
  gf_jpeg_region r = {0, 0, 1, 1, dn, false};
  r.h = 1 + (uint32_t)((uint64_t)p[3] * (H - 1) / 255);
  r.w = 1 + (uint32_t)((uint64_t)p[4] * (W - 1) / 255);
  r.y = (uint32_t)((uint64_t)p[1] * (H - r.h) / 255);
  r.x = (uint32_t)((uint64_t)p[2] * (W - r.w) / 255);
  uint32_t sh = (H + dn - 1) / dn, sw = (W + dn - 1) / dn;
  uint32_t wy0 = r.y / dn, wx0 = r.x / dn;
  uint32_t wy1 = (r.y + r.h + dn - 1) / dn, wx1 = (r.x + r.w + dn - 1) / dn;
  wy1 = wy1 < sh ? wy1 : sh;
  wx1 = wx1 < sw ? wx1 : sw;
  size_t c = s->channels, row = (size_t)(wx1 - wx0) * c;
  size_t need = row * (wy1 - wy0);

  uint8_t *win;
  gf_shape ws;
  uint32_t y0, x0;
  int rw = window_twice(o, jpg, len, &r, need, &win, &ws, &y0, &x0);
  if (rw == 0) {
    FUZZ_ASSERT(ws.height == wy1 - wy0 && ws.width == wx1 - wx0 &&
                ws.channels == c && ws.dtype == GF_DTYPE_U8);
    FUZZ_ASSERT(y0 == wy0 && x0 == wx0);
    /* The whole image at that scale: the window is its rectangle. */
    gf_jpeg_region all = {0, 0, H, W, dn, false};
    uint8_t *full;
    gf_shape fs;
    uint32_t fy, fx;
    int rf = window_twice(o, jpg, len, &all, (size_t)sh * sw * c, &full, &fs,
                          &fy, &fx);
    if (rf == 0) {
      FUZZ_ASSERT(fs.height == sh && fs.width == sw && fy == 0 && fx == 0);
      for (uint32_t y = 0; y < wy1 - wy0; y++)
        FUZZ_ASSERT(memcmp(win + y * row,
                           full + ((size_t)(wy0 + y) * sw + wx0) * c,
                           row) == 0);
    }
    free(full);
  }
  /* Read on to the end: the full decode's verdict. */
  gf_jpeg_region e = r;
  e.to_end = true;
  uint8_t *ew;
  gf_shape es;
  uint32_t ey, ex;
  int re = window_twice(o, jpg, len, &e, need, &ew, &es, &ey, &ex);
  bool size = full_rc == GF_ELIMIT || full_rc == -ENOMEM;
  if (full_rc == 0)
    FUZZ_ASSERT(re == 0 || re == GF_ELIMIT || re == -ENOMEM);
  if (re == 0)
    FUZZ_ASSERT(full_rc == 0 || size);
  if (re == 0 && rw == 0)
    FUZZ_ASSERT(memcmp(&es, &ws, sizeof es) == 0 && ey == y0 && ex == x0 &&
                memcmp(ew, win, (size_t)gf_shape_bytes(&ws)) == 0);
  free(ew);
  free(win);
  if (short_buf && need > 1) {
    uint8_t *sb = fuzz_alloc(need - 1);
    int rs = gf_jpeg_decode_region(jpg, len, o, &r, sb, need - 1, &ws, &y0,
                                   &x0);
    FUZZ_ASSERT(rs < 0);
    FUZZ_CHECK_FAILURE(rs, "gf_jpeg_decode_region (buffer one byte short)");
    free(sb);
  }
}

static void one_input(const uint8_t *p, const uint8_t *jpg, size_t len) {
  static const uint32_t chans[4] = {0, 1, 3, 4};
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = chans[p[0] & 3];
  o.limits.max_bytes = LIMIT_BYTES;
  o.limits.max_pixels = LIMIT_PIXELS;
  bool short_buf = (p[0] >> 4) & 1;

  gf_shape s;
  int rc = gf_decode_shape(GF_CODEC_JPEG, jpg, len, NULL, &o, &s);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_decode_shape");
    uint8_t small[4096];
    gf_shape out;
    int rc2 = gf_decode(GF_CODEC_JPEG, jpg, len, NULL, &o, small,
                        sizeof small, &out);
    FUZZ_ASSERT(rc2 < 0);
    FUZZ_CHECK_FAILURE(rc2, "gf_decode (shape refused)");
    return;
  }
  uint64_t bytes = gf_shape_bytes(&s);
  FUZZ_ASSERT(bytes > 0 && bytes <= LIMIT_BYTES);
  FUZZ_ASSERT((uint64_t)s.width * s.height <= LIMIT_PIXELS);
  FUZZ_ASSERT(s.dtype == GF_DTYPE_U8);
  if (o.channels)
    FUZZ_ASSERT(s.channels == o.channels);
  else
    FUZZ_ASSERT(s.channels == 1 || s.channels == 3);

  uint8_t *a = fuzz_alloc((size_t)bytes), *b = fuzz_alloc((size_t)bytes);
  memset(a, 0x00, (size_t)bytes);
  memset(b, 0xA5, (size_t)bytes);
  gf_shape oa, ob;
  int ra = gf_decode(GF_CODEC_JPEG, jpg, len, NULL, &o, a, (size_t)bytes, &oa);
  int rb = gf_decode(GF_CODEC_JPEG, jpg, len, NULL, &o, b, (size_t)bytes, &ob);
  FUZZ_ASSERT(ra == rb);
  if (ra < 0) {
    FUZZ_CHECK_FAILURE(rb, "gf_decode");
  } else {
    FUZZ_ASSERT(memcmp(&oa, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(&ob, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(a, b, (size_t)bytes) == 0);
  }
  free(a);
  free(b);
  gf_shape ks;
  int rk = gf_jpeg_check(jpg, len, &o, &ks);
  if (ra == 0)
    FUZZ_ASSERT(rk == 0 && memcmp(&ks, &s, sizeof s) == 0);
  if (rk == 0)
    FUZZ_ASSERT(ra == 0 || ra == GF_ELIMIT || ra == -ENOMEM);
  else
    FUZZ_CHECK_FAILURE(rk, "gf_jpeg_check");
  if (short_buf) {
    uint8_t *c = fuzz_alloc((size_t)bytes - 1);
    gf_shape oc;
    int rc3 = gf_decode(GF_CODEC_JPEG, jpg, len, NULL, &o, c,
                        (size_t)bytes - 1, &oc);
    FUZZ_ASSERT(rc3 < 0);
    FUZZ_CHECK_FAILURE(rc3, "gf_decode (buffer one byte short)");
    free(c);
  }
  check_window(&o, p, jpg, len, &s, short_buf, ra);
}
