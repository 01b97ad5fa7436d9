/* Codecs: every codec round-trips every shape exactly (loco the 8-bit
 * ones); a channel or bit depth request gives the same pixels from raw,
 * zstd, gradzstd, png and loco, and those pixels match a reference computed
 * here; the gradient filter and the channel conversion on hand-computed
 * cases. */
#include "testutil.h"
#include "decode/decode.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const gf_shape shapes_hw[] = {
    {1, 1, 0, 0}, {1, 37, 0, 0}, {37, 1, 0, 0}, {63, 65, 0, 0}, {8, 8, 0, 0}};

static size_t nbytes(const gf_shape *s) { return (size_t)gf_shape_bytes(s); }

static void fill(uint8_t *px, const gf_shape *s, uint64_t seed) {
  uint32_t bps = s->dtype == GF_DTYPE_U16 ? 2 : 1;
  gf_test_fill_image(px, s->height, s->width, s->channels * bps, seed);
  /* Some extremes so rounding at 0 and 255/65535 is exercised. */
  size_t n = nbytes(s);
  for (size_t i = 0; i < n; i += 7)
    px[i] = (i / 7) % 2 ? 255 : 0;
}

static uint32_t ld(const uint8_t *p, int u16) {
  if (!u16)
    return p[0];
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
static void st(uint8_t *p, int u16, uint32_t v) {
  if (!u16) {
    p[0] = (uint8_t)v;
  } else {
    uint16_t x = (uint16_t)v;
    memcpy(p, &x, 2);
  }
}

/* The reference: written out per pixel, independently of convert.c. */
static void reference(const uint8_t *src, const gf_shape *in, uint8_t *dst,
                      const gf_shape *out) {
  int iu = in->dtype == GF_DTYPE_U16, ou = out->dtype == GF_DTYPE_U16;
  uint32_t maxv = ou ? 65535 : 255;
  size_t n = (size_t)in->height * in->width;
  for (size_t i = 0; i < n; i++) {
    uint32_t v[4] = {0, 0, 0, 0};
    for (uint32_t k = 0; k < in->channels; k++) {
      uint32_t x = ld(src + (i * in->channels + k) * (iu ? 2 : 1), iu);
      if (iu && !ou) {
        /* round(x * 255 / 65535), ties cannot happen (65535 is odd) */
        x = (uint32_t)((x * 255ull * 2 + 65535) / (2 * 65535ull));
      }
      v[k] = x;
    }
    uint32_t r, g, b, a, y;
    if (in->channels >= 3) {
      r = v[0], g = v[1], b = v[2];
      y = (77 * r + 150 * g + 29 * b + 128) / 256;
    } else {
      r = g = b = y = v[0];
    }
    a = (in->channels == 2 || in->channels == 4) ? v[in->channels - 1] : maxv;
    uint32_t o[4];
    switch (out->channels) {
    case 1: o[0] = y; break;
    case 2: o[0] = y, o[1] = a; break;
    case 3: o[0] = r, o[1] = g, o[2] = b; break;
    default: o[0] = r, o[1] = g, o[2] = b, o[3] = a; break;
    }
    for (uint32_t k = 0; k < out->channels; k++)
      st(dst + (i * out->channels + k) * (ou ? 2 : 1), ou, o[k]);
  }
}

static void test_names(void) {
  CHECK(strcmp(gf_codec_name(GF_CODEC_RAW), "raw") == 0);
  CHECK(strcmp(gf_codec_name(GF_CODEC_PNG), "png") == 0);
  CHECK(strcmp(gf_codec_name(GF_CODEC_ZSTD), "zstd") == 0);
  CHECK(strcmp(gf_codec_name(GF_CODEC_GRADZSTD), "gradzstd") == 0);
  CHECK(strcmp(gf_codec_name(GF_CODEC_JPEG), "jpeg") == 0);
  CHECK(strcmp(gf_codec_name(GF_CODEC_LOCO), "loco") == 0);
  CHECK(gf_codec_name(6) == NULL && gf_codec_name(-1) == NULL);
  for (int c = 0; c < GF_CODEC_COUNT_; c++)
    CHECK(gf_codec_parse(gf_codec_name(c)) == c);
  CHECK_ERR(gf_codec_parse("webp"), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "webp") != NULL);
  CHECK(strstr(gf_last_error()->message, "jpeg") != NULL);
  CHECK(strstr(gf_last_error()->message, "loco") != NULL);
  CHECK_ERR(gf_codec_parse(NULL), -EINVAL);
}

static void test_convert_hand(void) {
  const uint8_t rgb[] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255,
                         10, 20, 30};
  uint8_t g[5];
  gf_convert_channels_u8(rgb, 3, g, 1, 5);
  CHECK(g[0] == 77);  /* (77*255+128)>>8 */
  CHECK(g[1] == 149); /* (150*255+128)>>8 */
  CHECK(g[2] == 29);  /* (29*255+128)>>8 */
  CHECK(g[3] == 255);
  CHECK(g[4] == 18); /* (770+3000+870+128)>>8 = 4768>>8 */
  const uint8_t gray[] = {0, 100, 255};
  uint8_t o[12];
  gf_convert_channels_u8(gray, 1, o, 3, 3);
  CHECK(memcmp(o, (uint8_t[]){0, 0, 0, 100, 100, 100, 255, 255, 255}, 9) ==
        0);
  gf_convert_channels_u8(gray, 1, o, 4, 3);
  CHECK(memcmp(o, (uint8_t[]){0, 0, 0, 255, 100, 100, 100, 255, 255, 255,
                              255, 255},
               12) == 0);
  const uint8_t rgba[] = {1, 2, 3, 4, 200, 100, 50, 0};
  gf_convert_channels_u8(rgba, 4, o, 3, 2);
  CHECK(memcmp(o, (uint8_t[]){1, 2, 3, 200, 100, 50}, 6) == 0);
  gf_convert_channels_u8(rgba, 4, o, 2, 2);
  /* (77+300+87+128)>>8 = 2; (15400+15000+1450+128)>>8 = 124 */
  CHECK(memcmp(o, (uint8_t[]){2, 4, 124, 0}, 4) == 0);
  const uint8_t ga[] = {9, 33};
  gf_convert_channels_u8(ga, 2, o, 4, 1);
  CHECK(memcmp(o, (uint8_t[]){9, 9, 9, 33}, 4) == 0);
  gf_convert_channels_u8(ga, 2, o, 1, 1);
  CHECK(o[0] == 9);
  gf_convert_channels_u8(rgb, 3, o, 4, 1);
  CHECK(memcmp(o, (uint8_t[]){255, 0, 0, 255}, 4) == 0);

  uint16_t r16[3] = {65535, 0, 0}, g16[2];
  gf_convert_channels_u16(r16, 3, g16, 1, 1);
  CHECK(g16[0] == 19712); /* (77*65535+128)>>8 */
  uint16_t w16[3] = {65535, 65535, 65535};
  gf_convert_channels_u16(w16, 3, g16, 2, 1);
  CHECK(g16[0] == 65535 && g16[1] == 65535);

  /* 16 -> 8 bits: the rounded v * 255 / 65535, as png_set_scale_16. */
  uint16_t s16[6] = {0, 128, 129, 257, 65535, 32896};
  uint8_t s8[6];
  gf_scale16_to_u8(s16, s8, 6);
  CHECK(s8[0] == 0 && s8[1] == 0 && s8[2] == 1 && s8[3] == 1 &&
        s8[4] == 255 && s8[5] == 128);
  /* Every value against the exact rounding, and in place. */
  uint16_t *all = malloc(65536 * 2);
  for (uint32_t v = 0; v < 65536; v++)
    all[v] = (uint16_t)v;
  gf_scale16_to_u8(all, (uint8_t *)all, 65536);
  int bad = 0;
  for (uint32_t v = 0; v < 65536; v++)
    bad += ((uint8_t *)all)[v] != (uint8_t)((v * 510ull + 65535) / 131070);
  CHECK(bad == 0);
  free(all);
}

static void test_grad_hand(void) {
  uint8_t a[4] = {10, 20, 30, 45};
  gf_grad_filter(a, 2, 2, 1);
  CHECK(memcmp(a, (uint8_t[]){10, 10, 20, 5}, 4) == 0);
  gf_grad_unfilter(a, 2, 2, 1);
  CHECK(memcmp(a, (uint8_t[]){10, 20, 30, 45}, 4) == 0);
  /* Wrap-around mod 256: 0 - 255 - 255 + 0 = -510 = 2 (mod 256). */
  uint8_t b[4] = {0, 255, 255, 0};
  gf_grad_filter(b, 2, 2, 1);
  CHECK(memcmp(b, (uint8_t[]){0, 255, 255, 2}, 4) == 0);
  /* bpp 2: neighbours are one pixel (2 bytes) away. */
  uint8_t c[8] = {1, 2, 5, 7, 4, 4, 9, 100};
  gf_grad_filter(c, 2, 2, 2);
  /* row0: 1 2 | 5-1 7-2; row1: 4-1 4-2 | 9-5-4+1 100-7-4+2 */
  CHECK(memcmp(c, (uint8_t[]){1, 2, 4, 5, 3, 2, 1, 91}, 8) == 0);
  gf_grad_unfilter(c, 2, 2, 2);
  CHECK(memcmp(c, (uint8_t[]){1, 2, 5, 7, 4, 4, 9, 100}, 8) == 0);
}

static void test_grad_random(void) {
  uint64_t seed = 42;
  /* Widths around the 16-byte vector steps, so whole vectors and every
   * tail length occur for each pixel size. */
  static const gf_shape hw[] = {{1, 1, 0, 0},   {1, 37, 0, 0}, {37, 1, 0, 0},
                                {63, 65, 0, 0}, {3, 16, 0, 0}, {4, 17, 0, 0},
                                {2, 100, 0, 0}, {5, 31, 0, 0}};
  for (uint32_t bpp = 1; bpp <= 8; bpp++)
    for (size_t s = 0; s < sizeof hw / sizeof hw[0]; s++) {
      uint32_t h = hw[s].height, w = hw[s].width;
      size_t n = (size_t)h * w * bpp;
      uint8_t *p = malloc(n), *q = malloc(n);
      for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)gf_test_rand(&seed);
      memcpy(q, p, n);
      gf_grad_filter(q, h, w, bpp);
      /* The filter against its definition, byte by byte. */
      int bad = 0;
      for (uint32_t y = 0; y < h; y++)
        for (size_t x = 0; x < (size_t)w * bpp; x++) {
          size_t i = (size_t)y * w * bpp + x;
          int left = x >= bpp ? p[i - bpp] : 0;
          int up = y ? p[i - (size_t)w * bpp] : 0;
          int ul = (y && x >= bpp) ? p[i - (size_t)w * bpp - bpp]
                                       : 0;
          bad += q[i] != (uint8_t)(p[i] - left - up + ul);
        }
      CHECK(bad == 0);
      uint8_t *g = malloc(n);
      memcpy(g, q, n);
      gf_grad_unfilter(q, h, w, bpp);
      CHECK(memcmp(p, q, n) == 0);
      gf_grad_unfilter_generic(g, h, w, bpp);
      CHECK(memcmp(p, g, n) == 0);
      free(g);
      free(p);
      free(q);
    }
}

static int encode_any(int codec, int level, const void *px, const gf_shape *s,
                      void **enc, size_t *len) {
  if (codec == GF_CODEC_PNG)
    return gf_png_encode(px, s, level, enc, len);
  return gf_encode(codec, px, s, level, enc, len);
}

/* Every codec and level: exact round trip, then every request agrees with
 * the reference. */
static void test_roundtrip(void) {
  static const struct { int codec, level; } cl[] = {
      {GF_CODEC_RAW, 0},      {GF_CODEC_ZSTD, 0},     {GF_CODEC_ZSTD, 1},
      {GF_CODEC_ZSTD, 19},    {GF_CODEC_GRADZSTD, 0}, {GF_CODEC_GRADZSTD, 3},
      {GF_CODEC_PNG, -1},     {GF_CODEC_LOCO, 0},     {GF_CODEC_LOCO, 1},
      {GF_CODEC_LOCO, 255}};
  uint64_t seed = 7;
  for (size_t si = 0; si < sizeof shapes_hw / sizeof shapes_hw[0]; si++)
    for (uint32_t c = 1; c <= 4; c++)
      for (uint32_t dt = 0; dt <= 1; dt++) {
        gf_shape s = {shapes_hw[si].height, shapes_hw[si].width, c, dt};
        size_t n = nbytes(&s);
        uint8_t *px = malloc(n);
        fill(px, &s, seed++);
        for (size_t k = 0; k < sizeof cl / sizeof cl[0]; k++) {
          if (cl[k].codec == GF_CODEC_LOCO && dt == GF_DTYPE_U16)
            continue; /* 8-bit only (test_codec_loco checks the refusal) */
          void *enc = NULL;
          size_t len = 0;
          CHECK_OK(encode_any(cl[k].codec, cl[k].level, px, &s, &enc, &len));
          if (!enc)
            continue;
          /* Exact round trip with the native shape. */
          gf_decode_opts o = GF_DECODE_OPTS_INIT;
          o.keep_16bit = 1;
          uint8_t *dec = malloc(n);
          gf_shape out = {0, 0, 0, 0}, sh = {0, 0, 0, 0};
          CHECK_OK(gf_decode(cl[k].codec, enc, len, &s, &o, dec, n, &out));
          CHECK(memcmp(&out, &s, sizeof s) == 0);
          CHECK(memcmp(dec, px, n) == 0);
          CHECK_OK(gf_decode_shape(cl[k].codec, enc, len, &s, &o, &sh));
          CHECK(memcmp(&sh, &s, sizeof s) == 0);
          /* dst one byte short: refused, nothing written past it. */
          CHECK_ERR(gf_decode(cl[k].codec, enc, len, &s, &o, dec, n - 1,
                              &out),
                    GF_ESHAPE);
          free(dec);
          /* Requests: channels 0-4 x keep_16bit. */
          for (uint32_t rc = 0; rc <= 4; rc++)
            for (uint32_t k16 = 0; k16 <= 1; k16++) {
              gf_decode_opts r = GF_DECODE_OPTS_INIT;
              r.channels = rc;
              r.keep_16bit = k16;
              gf_shape want = s;
              if (rc)
                want.channels = rc;
              if (!k16)
                want.dtype = GF_DTYPE_U8;
              size_t wn = nbytes(&want);
              uint8_t *ref = malloc(wn), *got = malloc(wn + 16);
              reference(px, &s, ref, &want);
              memset(got, 0xEE, wn + 16);
              CHECK_OK(gf_decode(cl[k].codec, enc, len, &s, &r, got, wn + 16,
                                 &out));
              CHECK(memcmp(&out, &want, sizeof want) == 0);
              if (memcmp(got, ref, wn) != 0) {
                fprintf(stderr,
                        "codec %s level %d shape %ux%ux%u dt %u request "
                        "c=%u k16=%u: pixels differ from the reference\n",
                        gf_codec_name(cl[k].codec), cl[k].level, s.height,
                        s.width, s.channels, s.dtype, rc, k16);
                gf_test_failures++;
              }
              /* Nothing written past the image. */
              for (size_t i = wn; i < wn + 16; i++)
                CHECK(got[i] == 0xEE);
              CHECK_OK(gf_decode_shape(cl[k].codec, enc, len, &s, &r, &sh));
              CHECK(memcmp(&sh, &want, sizeof want) == 0);
              free(ref);
              free(got);
            }
          free(enc);
        }
        free(px);
      }
}

/* All 65536 16-bit values through png (png_set_scale_16) and raw (our
 * reduction) give the same 8-bit values. */
static void test_scale16_png_vs_raw(void) {
  gf_shape s = {256, 256, 1, GF_DTYPE_U16};
  uint16_t *px = malloc(65536 * 2);
  for (uint32_t v = 0; v < 65536; v++)
    px[v] = (uint16_t)v;
  void *png = NULL;
  size_t plen = 0;
  CHECK_OK(gf_png_encode(px, &s, 1, &png, &plen));
  uint8_t *a = malloc(65536), *b = malloc(65536);
  gf_shape out;
  CHECK_OK(gf_decode(GF_CODEC_PNG, png, plen, NULL, NULL, a, 65536, &out));
  CHECK(out.dtype == GF_DTYPE_U8 && out.channels == 1);
  CHECK_OK(gf_decode(GF_CODEC_RAW, px, 65536 * 2, &s, NULL, b, 65536, &out));
  CHECK(memcmp(a, b, 65536) == 0);
  free(a);
  free(b);
  free(png);
  free(px);
}

static void test_api_errors(void) {
  gf_shape s = {4, 4, 3, GF_DTYPE_U8};
  uint8_t px[48] = {0}, dst[64];
  gf_shape out;
  void *enc = NULL;
  size_t len = 0;
  CHECK_ERR(gf_encode(GF_CODEC_PNG, px, &s, 0, &enc, &len), GF_EUNSUPPORTED);
  CHECK_ERR(gf_encode(GF_CODEC_JPEG, px, &s, 0, &enc, &len), GF_EUNSUPPORTED);
  CHECK_ERR(gf_encode(9, px, &s, 0, &enc, &len), GF_EUNSUPPORTED);
  CHECK_ERR(gf_decode(9, px, 48, &s, NULL, dst, 64, &out), GF_EUNSUPPORTED);
  CHECK_ERR(gf_decode(-1, px, 48, &s, NULL, dst, 64, &out), GF_EUNSUPPORTED);
  CHECK_ERR(gf_encode(GF_CODEC_ZSTD, px, &s, 1000, &enc, &len), -EINVAL);
  CHECK(enc == NULL);
  gf_shape bad = {4, 4, 5, GF_DTYPE_U8};
  CHECK_ERR(gf_encode(GF_CODEC_RAW, px, &bad, 0, &enc, &len), -EINVAL);
  /* Stored shape required, and valid. */
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, NULL, NULL, dst, 64, &out),
            -EINVAL);
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &bad, NULL, dst, 64, &out),
            GF_ESHAPE);
  /* Options. */
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 5;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "channels") != NULL);
  o.channels = 0;
  o.reserved[2] = 1;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out), -EINVAL);
  o.reserved[2] = 0;
  o.struct_size = sizeof o + 8;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out), -EINVAL);
  /* A size no header published (a cut struct) is refused; the published
   * one is read. */
  o.struct_size = offsetof(gf_decode_opts, limits);
  o.channels = 1;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out), -EINVAL);
  o.struct_size = sizeof o;
  CHECK_OK(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out));
  CHECK(out.channels == 1);
  /* Limits: the stored shape and the stored length. */
  gf_decode_opts lim = GF_DECODE_OPTS_INIT;
  lim.limits.max_width = 3;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &lim, dst, 64, &out),
            GF_ELIMIT);
  CHECK_ERR(gf_decode_shape(GF_CODEC_ZSTD, NULL, 0, &s, &lim, &out),
            GF_ELIMIT);
  lim.limits.max_width = 0;
  lim.limits.max_bytes = 40;
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 48, &s, &lim, dst, 64, &out),
            GF_ELIMIT);
  /* Raw length must match the shape exactly. */
  CHECK_ERR(gf_decode(GF_CODEC_RAW, px, 47, &s, NULL, dst, 64, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "47") != NULL);
  CHECK_ERR(gf_decode_shape(GF_CODEC_RAW, px, 47, &s, NULL, &out), GF_EDECODE);
  /* A PNG whose dimensions disagree with the record given for it. */
  gf_shape rec = {4, 5, 3, GF_DTYPE_U8};
  CHECK_OK(gf_png_encode(px, &s, 1, &enc, &len));
  CHECK_ERR(gf_decode(GF_CODEC_PNG, enc, len, &rec, NULL, dst, 64, &out),
            GF_ESHAPE);
  CHECK_ERR(gf_decode_shape(GF_CODEC_PNG, enc, len, &rec, NULL, &out),
            GF_ESHAPE);
  rec.width = 4;
  CHECK_OK(gf_decode(GF_CODEC_PNG, enc, len, &rec, NULL, dst, 64, &out));
  CHECK_OK(gf_decode_shape(GF_CODEC_PNG, enc, len, &rec, NULL, &out));
  free(enc);
  /* Shape without the bytes. */
  CHECK_OK(gf_decode_shape(GF_CODEC_GRADZSTD, NULL, 0, &s, NULL, &out));
  CHECK(memcmp(&out, &s, sizeof s) == 0);
}

/* Decodes on several threads at once (per-thread zstd contexts and
 * scratch). */
typedef struct thr_arg {
  const void *enc;
  size_t len;
  const uint8_t *ref;
  gf_shape s;
  int bad;
} thr_arg;

static void *thr(void *p) {
  thr_arg *a = p;
  size_t n = (size_t)a->s.height * a->s.width;
  uint8_t *dst = malloc(n);
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 1;
  for (int i = 0; i < 200; i++) {
    gf_shape out;
    memset(dst, 0, n);
    if (gf_decode(GF_CODEC_GRADZSTD, a->enc, a->len, &a->s, &o, dst, n,
                  &out) != 0 ||
        memcmp(dst, a->ref, n) != 0)
      a->bad++;
  }
  free(dst);
  return NULL;
}

static void test_threads(void) {
  gf_shape s = {40, 50, 3, GF_DTYPE_U8};
  size_t n = nbytes(&s);
  uint8_t *px = malloc(n), *ref = malloc(n / 3);
  fill(px, &s, 99);
  gf_shape g = s;
  g.channels = 1;
  reference(px, &s, ref, &g);
  void *enc;
  size_t len;
  CHECK_OK(gf_encode(GF_CODEC_GRADZSTD, px, &s, 0, &enc, &len));
  thr_arg a[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (thr_arg){enc, len, ref, s, 0};
    CHECK(pthread_create(&t[i], NULL, thr, &a[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    CHECK(a[i].bad == 0);
  }
  free(enc);
  free(px);
  free(ref);
}

int main(void) {
  test_names();
  test_convert_hand();
  test_grad_hand();
  test_grad_random();
  test_roundtrip();
  test_scale16_png_vs_raw();
  test_api_errors();
  test_threads();
  return gf_test_finish();
}
