/* Damaged, oversized and unsupported JPEGs: every truncation of a small
 * file fails with GF_EDECODE (a premature end is an error, never gray
 * pixels), a window decode of a truncated file either fails or gives the
 * intact file's pixels; bit flips everywhere either decode without a
 * warning or fail with a gpufeed error (never a crash: CI runs this under
 * ASan); libjpeg's warnings (extraneous bytes, corrupt data) are errors with
 * libjpeg's words; absurd or over-limit dimensions in the SOF are GF_ELIMIT
 * before anything is decoded; libjpeg's memory cap stops a progressive file
 * whose coefficients exceed it, with a clear GF_ELIMIT; CMYK and YCCK are
 * refused naming the colour space; gf_jpeg_encode's argument checks.
 * gf_jpeg_check (every scan read, no pixels) and a window decode read on
 * to the end (to_end) pass exactly the files that decode: each truncation,
 * each bit flip, a file cut and closed with an end marker, stray bytes;
 * the window read to the end gives the window's pixels. */
#include "testutil.h"
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Offset of the first marker FF code at or after a marker boundary, or 0. */
static size_t find_marker(const uint8_t *f, size_t len, uint8_t code) {
  for (size_t i = 2; i + 1 < len; i++)
    if (f[i] == 0xFF && f[i + 1] == code)
      return i;
  return 0;
}

static bool allowed(int rc) {
  return rc == 0 || rc == GF_EDECODE || rc == GF_EUNSUPPORTED ||
         rc == GF_ELIMIT || rc == GF_ESHAPE;
}

static uint8_t *encode(uint32_t h, uint32_t w, uint32_t c, int q,
                       const gf_jpeg_enc_opts *eo, uint64_t seed,
                       size_t *len) {
  gf_shape s = {h, w, c, GF_DTYPE_U8};
  uint8_t *px = malloc((size_t)gf_shape_bytes(&s));
  gf_test_fill_image(px, h, w, c, seed);
  void *f = NULL;
  CHECK_OK(gf_jpeg_encode_ex(px, &s, q, eo, &f, len));
  free(px);
  return f;
}

/* Every truncation: the whole decode fails with GF_EDECODE; the shape call
 * fails or gives the intact shape; a window of the top rows either fails
 * with GF_EDECODE or equals the intact file's window. */
static void test_truncations(const uint8_t *f, size_t len, const char *what) {
  gf_shape s, ws;
  CHECK_OK(gf_jpeg_shape(f, len, NULL, &s));
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *dst = malloc(n), *win = malloc(n), *want = malloc(n);
  gf_jpeg_region top = {0, 1, s.height / 3 + 1, s.width - 2, 1, false};
  gf_jpeg_region whole = top;
  whole.to_end = true;
  uint32_t y0, x0;
  CHECK_OK(gf_jpeg_decode_region(f, len, NULL, &top, want, n, &ws, &y0, &x0));
  {
    gf_shape es;
    CHECK_OK(
        gf_jpeg_decode_region(f, len, NULL, &whole, win, n, &es, &y0, &x0));
    CHECK(memcmp(&es, &ws, sizeof es) == 0 &&
          memcmp(win, want, (size_t)gf_shape_bytes(&ws)) == 0);
  }
  int windows_ok = 0;
  for (size_t l = 0; l < len; l++) {
    uint8_t *t = malloc(l ? l : 1); /* exactly l bytes: ASan sees overreads */
    memcpy(t, f, l);
    gf_shape o;
    int rc = gf_decode(GF_CODEC_JPEG, l ? t : NULL, l, NULL, NULL, dst, n, &o);
    int rk = gf_jpeg_check(l ? t : NULL, l, NULL, &o);
    int re = gf_jpeg_decode_region(l ? t : NULL, l, NULL, &whole, win, n, &o,
                                   &y0, &x0);
    if (rc != GF_EDECODE || rk != GF_EDECODE || re != GF_EDECODE) {
      fprintf(stderr,
              "%s: truncated to %zu of %zu bytes: %d, checked %d, window "
              "to the end %d\n",
              what, l, len, rc, rk, re);
      gf_test_failures++;
    }
    rc = gf_decode_shape(GF_CODEC_JPEG, l ? t : NULL, l, NULL, NULL, &o);
    CHECK(rc == GF_EDECODE || (rc == 0 && memcmp(&o, &s, sizeof o) == 0));
    rc = gf_jpeg_decode_region(l ? t : NULL, l, NULL, &top, win, n, &o, &y0,
                               &x0);
    if (rc == 0) {
      windows_ok++;
      CHECK(memcmp(&o, &ws, sizeof o) == 0 &&
            memcmp(win, want, (size_t)gf_shape_bytes(&ws)) == 0);
    } else {
      CHECK_ERR(rc, GF_EDECODE);
    }
    free(t);
  }
  printf("%s: %zu truncations all refused; the top window decoded from %d "
         "of them, each equal to the intact window\n",
         what, len, windows_ok);
  /* The middle of the scan: libjpeg's "premature end" warning, an error. */
  gf_shape o;
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len / 2 + len / 4, NULL, NULL, dst, n,
                      &o),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "Premature end of JPEG file") !=
        NULL);
  CHECK(strstr(gf_last_error()->message, "warning, taken as an error") !=
        NULL);
  /* Cut at 60% and closed with an end marker: every marker in place, the
   * scan's data short. The decode and the check both refuse it. */
  size_t cut = len * 6 / 10;
  uint8_t *c = malloc(cut + 2);
  memcpy(c, f, cut);
  c[cut] = 0xFF;
  c[cut + 1] = 0xD9;
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, c, cut + 2, NULL, NULL, dst, n, &o),
            GF_EDECODE);
  CHECK_ERR(gf_jpeg_check(c, cut + 2, NULL, &o), GF_EDECODE);
  CHECK_ERR(
      gf_jpeg_decode_region(c, cut + 2, NULL, &whole, win, n, &o, &y0, &x0),
      GF_EDECODE);
  printf("%s: cut at 60%% and closed: %s\n", what, gf_last_error()->message);
  free(c);
  gf_shape k;
  CHECK_OK(gf_jpeg_check(f, len, NULL, &k));
  CHECK(memcmp(&k, &s, sizeof k) == 0);
  free(dst);
  free(win);
  free(want);
}

/* A failure unless a judge (its status rj, its error the thread's last)
 * gives the decode's verdict (rc, its error in saved) on the flip. */
static void same_verdict(const char *what, int bit, size_t i, int rc,
                         const gf_error_info *saved, const char *judge,
                         int rj) {
  if ((rj == 0) == (rc == 0))
    return;
  fprintf(stderr,
          "%s: flip of bit %d at byte %zu: decode %d (%s), %s %d (%s)\n", what,
          bit, i, rc, rc ? saved->message : "-", judge, rj,
          rj ? gf_last_error()->message : "-");
  gf_test_failures++;
}

/* Bit flips at every byte (all 8 bits): a gpufeed error or a decode that
 * libjpeg found nothing wrong with. Returns how many flips were caught. */
static void test_flips(const uint8_t *f, size_t len, const char *what) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.limits.max_pixels = 1u << 20; /* a flipped SOF stays cheap */
  uint8_t *t = malloc(len);
  int caught = 0, warned = 0, silent = 0, flips = 0;
  for (size_t i = 0; i < len; i++)
    for (int bit = 0; bit < 8; bit++) {
      memcpy(t, f, len);
      t[i] ^= (uint8_t)(1u << bit);
      flips++;
      gf_shape s;
      int rc = gf_decode_shape(GF_CODEC_JPEG, t, len, NULL, &o, &s);
      CHECK(allowed(rc));
      if (rc == 0) {
        size_t n = (size_t)gf_shape_bytes(&s);
        uint8_t *dst = malloc(n);
        rc = gf_decode(GF_CODEC_JPEG, t, len, NULL, &o, dst, n, &s);
        CHECK(allowed(rc));
        gf_error_info saved = *gf_last_error();
        gf_shape ks;
        int rk = gf_jpeg_check(t, len, &o, &ks);
        same_verdict(what, bit, i, rc, &saved, "check", rk);
        /* A window of the top rows read on to the end: the decode's
         * verdict too. */
        gf_jpeg_region e = {0, 0, s.height / 3 + 1, s.width, 2, true};
        uint32_t y0, x0;
        gf_shape ws;
        int re = gf_jpeg_decode_region(t, len, &o, &e, dst, n, &ws, &y0, &x0);
        same_verdict(what, bit, i, rc, &saved, "window to the end", re);
        gf_error_restore(&saved);
        gf_jpeg_region r = {s.height / 2, 0, s.height - s.height / 2,
                            s.width,      2, false};
        int rw = gf_jpeg_decode_region(t, len, &o, &r, dst, n, &ws, &y0, &x0);
        CHECK(allowed(rw));
        free(dst);
      }
      if (rc < 0) {
        caught++;
        CHECK(gf_last_error()->message[0] != '\0');
        warned += strstr(gf_last_error()->message, "taken as an error") != 0;
      } else {
        silent++;
      }
    }
  printf("%s: %d flips: %d refused (%d by a libjpeg warning), %d decoded "
         "(JPEG has no checksum: the dataset's CRC32C covers it)\n",
         what, flips, caught, warned, silent);
  CHECK(caught > 0 && warned > 0);
  free(t);
}

/* Random bytes overwritten at random places, a few at a time. */
static void test_random_damage(const uint8_t *f, size_t len) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.limits.max_pixels = 1u << 20;
  uint64_t rng = 77;
  uint8_t *t = malloc(len);
  for (int k = 0; k < 3000; k++) {
    memcpy(t, f, len);
    int nb = 1 + (int)(gf_test_rand(&rng) % 4);
    for (int b = 0; b < nb; b++)
      t[gf_test_rand(&rng) % len] = (uint8_t)gf_test_rand(&rng);
    gf_shape s;
    int rc = gf_decode_shape(GF_CODEC_JPEG, t, len, NULL, &o, &s);
    CHECK(allowed(rc));
    if (rc == 0) {
      size_t n = (size_t)gf_shape_bytes(&s);
      uint8_t *dst = malloc(n);
      CHECK(allowed(gf_decode(GF_CODEC_JPEG, t, len, NULL, &o, dst, n, &s)));
      free(dst);
    }
  }
  free(t);
}

/* libjpeg warnings that do not stop it are errors here. */
static void test_warnings(const uint8_t *f, size_t len) {
  gf_shape s;
  CHECK_OK(gf_jpeg_shape(f, len, NULL, &s));
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *dst = malloc(n);
  /* Two stray bytes between header segments, before SOF: libjpeg's
   * "extraneous bytes before marker" warning. (Before EOI they would be
   * taken as the scan's padding.) */
  size_t sof = find_marker(f, len, 0xC0);
  CHECK(sof > 0);
  uint8_t *g = malloc(len + 2);
  memcpy(g, f, sof);
  g[sof] = 0x12;
  g[sof + 1] = 0x34;
  memcpy(g + sof + 2, f + sof, len - sof);
  gf_shape o;
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, g, len + 2, NULL, NULL, dst, n, &o),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "extraneous bytes") != NULL);
  printf("stray bytes: %s\n", gf_last_error()->message);
  CHECK_ERR(gf_jpeg_check(g, len + 2, NULL, &o), GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "extraneous bytes") != NULL);
  CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, g, len + 2, NULL, NULL, &o),
            GF_EDECODE);
  /* Without EOI (the whole scan is there): still a premature end. */
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len - 2, NULL, NULL, dst, n, &o),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "remature end") != NULL);
  printf("no EOI: %s\n", gf_last_error()->message);
  /* Bytes after EOI are not read: the file decodes. */
  memcpy(g, f, len);
  g[len] = g[len + 1] = 0;
  CHECK_OK(gf_decode(GF_CODEC_JPEG, g, len + 2, NULL, NULL, dst, n, &o));
  /* Not a JPEG at all, empty, NULL. */
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, "\x89PNG\r\n\x1a\n", 8, NULL, NULL, dst,
                      n, &o),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "libjpeg") != NULL);
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, NULL, 0, NULL, NULL, dst, n, &o),
            GF_EDECODE);
  CHECK_ERR(gf_jpeg_decode(f, len, NULL, NULL, n, &o), -EINVAL);
  CHECK_ERR(gf_jpeg_shape(f, len, NULL, NULL), -EINVAL);
  /* A record that names other dimensions: not the file it describes. */
  gf_shape rec = {s.height + 1, s.width, 3, GF_DTYPE_U8};
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len, &rec, NULL, dst, n, &o),
            GF_ESHAPE);
  CHECK(strstr(gf_last_error()->message, "JPEG is") != NULL);
  CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, f, len, &rec, NULL, &o), GF_ESHAPE);
  rec.height = s.height;
  CHECK_OK(gf_decode(GF_CODEC_JPEG, f, len, &rec, NULL, dst, n, &o));
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len, NULL, NULL, dst, n - 1, &o),
            GF_ESHAPE);
  free(g);
  free(dst);
}

/* The SOF's dimensions, patched: refused from the header, in no time. */
static void test_dimensions(const uint8_t *f, size_t len) {
  size_t sof = find_marker(f, len, 0xC0);
  CHECK(sof > 0 && sof + 9 < len);
  uint8_t *t = malloc(len);
  static uint8_t dst[1 << 16];
  static const struct {
    uint32_t h, w;
    uint32_t max_dim; /* 0: the defaults */
  } dims[] = {{65535, 65535, 0},      {65535, 65535, 70000},
              {60000, 60000, 0},      {2000, 2000, 1000},
              {1, 65535, 0},          {40000, 10000, 0}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    memcpy(t, f, len);
    t[sof + 5] = (uint8_t)(dims[i].h >> 8);
    t[sof + 6] = (uint8_t)dims[i].h;
    t[sof + 7] = (uint8_t)(dims[i].w >> 8);
    t[sof + 8] = (uint8_t)dims[i].w;
    gf_decode_opts o = GF_DECODE_OPTS_INIT;
    o.limits.max_width = o.limits.max_height = dims[i].max_dim;
    gf_shape s;
    clock_t c0 = clock();
    CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, t, len, NULL, &o, &s),
              GF_ELIMIT);
    CHECK(strstr(gf_last_error()->message, "JPEG") != NULL);
    printf("%ux%u: %s\n", dims[i].h, dims[i].w, gf_last_error()->message);
    CHECK_ERR(gf_decode(GF_CODEC_JPEG, t, len, NULL, &o, dst, sizeof dst, &s),
              GF_ELIMIT);
    gf_jpeg_region r = {0, 0, 1, 1, 8, false};
    uint32_t y0, x0;
    CHECK_ERR(gf_jpeg_decode_region(t, len, &o, &r, dst, sizeof dst, &s, &y0,
                                    &x0),
              GF_ELIMIT);
    /* Refused from the header: no time spent on pixels. */
    CHECK((double)(clock() - c0) / CLOCKS_PER_SEC < 0.5);
  }
  /* Zero height (a DNL-defined height is not supported by libjpeg). */
  memcpy(t, f, len);
  t[sof + 5] = t[sof + 6] = 0;
  gf_shape s;
  CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, t, len, NULL, NULL, &s),
            GF_EDECODE);
  /* Larger than the data, within the limits: the data runs out. */
  memcpy(t, f, len);
  t[sof + 5] = 1;
  CHECK_OK(gf_decode_shape(GF_CODEC_JPEG, t, len, NULL, NULL, &s));
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *big = malloc(n);
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, t, len, NULL, NULL, big, n, &s),
            GF_EDECODE);
  free(big);
  free(t);
}

/* A progressive 4:4:4 file holds 6 bytes of coefficients a pixel; decoded
 * to gray it gives 1. With max_bytes = the gray image, libjpeg's cap
 * (2 x max_bytes + 16 MiB) is below the coefficients: GF_ELIMIT, saying
 * why; with twice that, it decodes. */
static void test_memory_cap(void) {
  const uint32_t side = 2400;
  gf_jpeg_enc_opts eo = {GF_JPEG_444, true, false, 0};
  size_t len;
  uint8_t *f = encode(side, side, 3, 50, &eo, 5, &len);
  if (!f)
    return;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 1;
  o.limits.max_bytes = (uint64_t)side * side;
  size_t n = (size_t)side * side;
  uint8_t *dst = malloc(n);
  gf_shape s;
  CHECK_OK(gf_decode_shape(GF_CODEC_JPEG, f, len, NULL, &o, &s));
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len, NULL, &o, dst, n, &s), GF_ELIMIT);
  CHECK(strstr(gf_last_error()->message, "decoder memory") != NULL);
  printf("memory cap: %s\n", gf_last_error()->message);
  gf_jpeg_region r = {100, 100, 10, 10, 8, false};
  uint32_t y0, x0;
  CHECK_ERR(gf_jpeg_decode_region(f, len, &o, &r, dst, n, &s, &y0, &x0),
            GF_ELIMIT);
  o.limits.max_bytes *= 2;
  CHECK_OK(gf_decode(GF_CODEC_JPEG, f, len, NULL, &o, dst, n, &s));
  CHECK_OK(gf_jpeg_decode_region(f, len, &o, &r, dst, n, &s, &y0, &x0));
  free(dst);
  free(f);
}

static void test_colour_spaces(void) {
  for (int k = 1; k <= 2; k++) {
    gf_jpeg_enc_opts eo = {GF_JPEG_444, false, false, k};
    size_t len;
    uint8_t *f = encode(16, 24, 4, 90, &eo, 9, &len);
    if (!f)
      continue;
    gf_shape s;
    uint8_t dst[16 * 24 * 4];
    CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, f, len, NULL, NULL, &s),
              GF_EUNSUPPORTED);
    CHECK(strstr(gf_last_error()->message, k == 1 ? "CMYK" : "YCCK") != NULL);
    printf("%s\n", gf_last_error()->message);
    CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len, NULL, NULL, dst, sizeof dst,
                        &s),
              GF_EUNSUPPORTED);
    free(f);
  }
  /* Arithmetic coding, encoded here too: decoded. */
  gf_jpeg_enc_opts eo = {GF_JPEG_420, true, true, 0};
  size_t len;
  uint8_t *f = encode(30, 41, 3, 90, &eo, 10, &len);
  gf_jpeg_enc_opts plain = {GF_JPEG_420, true, false, 0};
  size_t plen;
  uint8_t *p = encode(30, 41, 3, 90, &plain, 10, &plen);
  uint8_t a[30 * 41 * 3], b[30 * 41 * 3];
  gf_shape s;
  CHECK_OK(gf_decode(GF_CODEC_JPEG, f, len, NULL, NULL, a, sizeof a, &s));
  CHECK_OK(gf_decode(GF_CODEC_JPEG, p, plen, NULL, NULL, b, sizeof b, &s));
  CHECK(memcmp(a, b, sizeof a) == 0);
  free(f);
  free(p);
}

static void test_encode_args(void) {
  uint8_t px[4 * 4 * 4] = {0};
  gf_shape s = {4, 4, 3, GF_DTYPE_U8};
  void *f = NULL;
  size_t len = 0;
  CHECK_ERR(gf_jpeg_encode(px, &s, 0, &f, &len), -EINVAL);
  CHECK_ERR(gf_jpeg_encode(px, &s, 101, &f, &len), -EINVAL);
  CHECK_ERR(gf_jpeg_encode(NULL, &s, 90, &f, &len), -EINVAL);
  s.dtype = GF_DTYPE_U16;
  CHECK_ERR(gf_jpeg_encode(px, &s, 90, &f, &len), -EINVAL);
  s = (gf_shape){4, 4, 5, GF_DTYPE_U8};
  CHECK_ERR(gf_jpeg_encode(px, &s, 90, &f, &len), -EINVAL);
  s = (gf_shape){4, 70000, 1, GF_DTYPE_U8};
  CHECK_ERR(gf_jpeg_encode(px, &s, 90, &f, &len), -EINVAL);
  CHECK(f == NULL && len == 0);
  /* 2 and 4 channels: alpha dropped, 1 and 3 channels come back. */
  for (uint32_t c = 1; c <= 4; c++) {
    s = (gf_shape){4, 4, c, GF_DTYPE_U8};
    CHECK_OK(gf_jpeg_encode(px, &s, 90, &f, &len));
    gf_shape o;
    CHECK_OK(gf_jpeg_shape(f, len, NULL, &o));
    CHECK(o.channels == (c >= 3 ? 3u : 1u));
    free(f);
    f = NULL;
  }
}

int main(void) {
  static const struct {
    uint32_t h, w, c;
    gf_jpeg_enc_opts eo;
    const char *what;
  } files[] = {
      {20, 24, 3, {GF_JPEG_420, false, false, 0}, "24x20 RGB 4:2:0"},
      {9, 13, 1, {GF_JPEG_444, false, false, 0}, "13x9 gray"},
      {16, 17, 3, {GF_JPEG_422, true, false, 0}, "17x16 RGB progressive"},
      {16, 17, 3, {GF_JPEG_420, false, true, 0}, "17x16 RGB arithmetic"},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    size_t len;
    uint8_t *f = encode(files[i].h, files[i].w, files[i].c, 75, &files[i].eo,
                        i + 1, &len);
    if (!f)
      continue;
    test_truncations(f, len, files[i].what);
    test_flips(f, len, files[i].what);
    if (i == 0) {
      test_random_damage(f, len);
      test_warnings(f, len);
      test_dimensions(f, len);
    }
    free(f);
  }
  test_memory_cap();
  test_colour_spaces();
  test_encode_args();
  return gf_test_finish();
}
