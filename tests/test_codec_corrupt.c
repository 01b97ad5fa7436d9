/* Codecs on bad input: truncated and bit-flipped samples of every codec
 * never crash and fail with a gpufeed code; hand-made headers that claim
 * huge sizes (a zstd frame of 4 GB, a PNG of 1 x 2^31) are refused before
 * any work; a damaged PNG zlib stream with valid CRCs is caught. */
#include "testutil.h"
#include "decode/decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h> /* crc32 for PNG chunks made by hand */

/* GF_EUNSUPPORTED: a loco record whose version byte was hit says it is of
 * a later version. */
static bool allowed(int rc) {
  return rc == 0 || rc == GF_EDECODE || rc == GF_ECORRUPT ||
         rc == GF_ESHAPE || rc == GF_ELIMIT || rc == GF_EUNSUPPORTED;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}
static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

/* Decodes `src` as `codec`; checks the result is allowed and that a
 * failure left a message. Returns the code. */
static int try_decode(int codec, const uint8_t *src, size_t len,
                      const gf_shape *s, uint32_t channels, uint8_t *dst,
                      size_t cap) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = channels;
  o.keep_16bit = 1;
  gf_shape out;
  gf_error_clear();
  int rc = gf_decode(codec, src, len, s, &o, dst, cap, &out);
  if (!allowed(rc)) {
    fprintf(stderr, "%s: unexpected %d (%s): %s\n", gf_codec_name(codec), rc,
            gf_err_name(rc), gf_last_error()->message);
    gf_test_failures++;
  }
  if (rc < 0 && !gf_last_error()->message[0]) {
    fprintf(stderr, "%s: error %s without a message\n", gf_codec_name(codec),
            gf_err_name(rc));
    gf_test_failures++;
  }
  gf_shape sh;
  int rs = gf_decode_shape(codec, src, len, s, &o, &sh);
  CHECK(allowed(rs));
  return rc;
}

/* Truncations and single-bit flips of one encoded sample. Returns how many
 * flips decoded to different pixels and still reported success. */
static void fuzz_codec(int codec, const uint8_t *px, const gf_shape *s) {
  void *encv = NULL;
  size_t len = 0;
  int rc = codec == GF_CODEC_PNG ? gf_png_encode(px, s, 6, &encv, &len)
                                 : gf_encode(codec, px, s, 0, &encv, &len);
  CHECK_OK(rc);
  if (rc < 0)
    return;
  const uint8_t *enc = encv;
  size_t n = (size_t)gf_shape_bytes(s);
  size_t cap = n * 4 + 64;
  uint8_t *dst = malloc(cap);
  /* Intact: decodes. */
  CHECK_OK(try_decode(codec, enc, len, s, 0, dst, cap));
  CHECK(memcmp(dst, px, n) == 0);
  /* Every truncation (a copy of exactly that length so ASan sees reads
   * past it). */
  /* A truncated sample never passes: raw, zstd and loco know the exact
   * length, png stops at the missing image data (only its IEND, the last
   * 12 bytes, may go). */
  size_t must_fail = codec == GF_CODEC_PNG ? len - 12 : len;
  for (size_t l = 0; l < len; l++) {
    uint8_t *t = malloc(l ? l : 1);
    memcpy(t, enc, l);
    rc = try_decode(codec, l ? t : NULL, l, s, l % 2 ? 3 : 0, dst, cap);
    if (l < must_fail && rc == 0) {
      fprintf(stderr, "%s: truncated to %zu of %zu bytes, decoded\n",
              gf_codec_name(codec), l, len);
      gf_test_failures++;
    }
    free(t);
  }
  /* Bit flips at spread positions (every position for small samples). */
  size_t step = len > 4000 ? len / 4000 : 1;
  uint8_t *f = malloc(len);
  int silent = 0, flips = 0;
  for (size_t i = 0; i < len; i += step)
    for (int bit = 0; bit < 8; bit += (step > 1 ? 3 : 1)) {
      memcpy(f, enc, len);
      f[i] ^= (uint8_t)(1u << bit);
      flips++;
      rc = try_decode(codec, f, len, s, 0, dst, cap);
      if (rc == 0 && memcmp(dst, px, n) != 0)
        silent++;
    }
  /* Trailing garbage is refused by the length-exact codecs. */
  uint8_t *g = malloc(len + 1);
  memcpy(g, enc, len);
  g[len] = 0;
  rc = try_decode(codec, g, len + 1, s, 0, dst, cap);
  if (codec != GF_CODEC_PNG)
    CHECK(rc == GF_EDECODE);
  fprintf(stderr, "%-8s %6zu bytes: %d flips, %d decoded to wrong pixels "
                  "without an error\n",
          gf_codec_name(codec), len, flips, silent);
  /* zstd frames carry a checksum and png has CRCs: damage is detected. Raw
   * and loco have nothing to check (the dataset's CRC32C covers them). */
  if (codec != GF_CODEC_RAW && codec != GF_CODEC_LOCO)
    CHECK(silent == 0);
  free(g);
  free(f);
  free(dst);
  free(encv);
}

/* A zstd frame made by hand: magic, header, one raw block of `n` bytes. */
static size_t zstd_frame(uint8_t *p, int fcs_kind, uint64_t fcs, size_t n) {
  size_t k = 0;
  p[k++] = 0x28, p[k++] = 0xB5, p[k++] = 0x2F, p[k++] = 0xFD;
  if (fcs_kind == 8) {
    p[k++] = 0xE0; /* FCS 8 bytes, single segment, no checksum */
    for (int i = 0; i < 8; i++)
      p[k++] = (uint8_t)(fcs >> (8 * i));
  } else {
    p[k++] = 0x00; /* no content size: unknown */
    p[k++] = 0x00; /* window 1 KiB */
  }
  uint32_t bh = (uint32_t)(n << 3) | 1; /* raw block, last */
  p[k++] = (uint8_t)bh, p[k++] = (uint8_t)(bh >> 8), p[k++] = (uint8_t)(bh >> 16);
  for (size_t i = 0; i < n; i++)
    p[k++] = (uint8_t)(i * 7);
  return k;
}

static void test_zstd_headers(void) {
  uint8_t fr[512], dst[256];
  /* Claims 4 GiB of content for a 10x10 sample: refused from the header,
   * the message names the claim. */
  size_t len = zstd_frame(fr, 8, 4ull << 30, 100);
  gf_shape s = {10, 10, 1, GF_DTYPE_U8};
  gf_shape out;
  CHECK_ERR(gf_zstd_decompress(fr, len, dst, 100), GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "4294967296") != NULL);
  CHECK_ERR(gf_decode(GF_CODEC_ZSTD, fr, len, &s, NULL, dst, sizeof dst, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "4294967296") != NULL);
  CHECK_ERR(gf_decode_shape(GF_CODEC_GRADZSTD, fr, len, &s, NULL, &out),
            GF_EDECODE);
  /* The same frame with the honest size decodes. */
  len = zstd_frame(fr, 8, 100, 100);
  CHECK_OK(gf_decode(GF_CODEC_ZSTD, fr, len, &s, NULL, dst, sizeof dst, &out));
  CHECK(dst[1] == 7 && dst[99] == (uint8_t)(99 * 7));
  /* Unknown content size: allowed when it decodes to exactly the size. */
  len = zstd_frame(fr, 0, 0, 100);
  CHECK_OK(gf_zstd_decompress(fr, len, dst, 100));
  CHECK(dst[50] == (uint8_t)(50 * 7));
  CHECK_ERR(gf_zstd_decompress(fr, len, dst, 99), GF_EDECODE);
  CHECK_ERR(gf_zstd_decompress(fr, len, dst, 101), GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "100") != NULL);
  /* Two frames, or trailing bytes: one frame exactly is expected. */
  size_t l1 = zstd_frame(fr, 8, 50, 50);
  size_t l2 = zstd_frame(fr + l1, 8, 50, 50);
  CHECK_ERR(gf_zstd_decompress(fr, l1 + l2, dst, 50), GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "trailing") != NULL);
  /* Not zstd at all. */
  CHECK_ERR(gf_zstd_decompress("hello world", 11, dst, 100), GF_EDECODE);
  CHECK_ERR(gf_zstd_decompress(NULL, 0, dst, 100), GF_EDECODE);
}

static size_t png_chunk(uint8_t *p, const char *type, const uint8_t *data,
                        uint32_t n) {
  put_be32(p, n);
  memcpy(p + 4, type, 4);
  if (n)
    memcpy(p + 8, data, n);
  put_be32(p + 8 + n, (uint32_t)crc32(0, p + 4, 4 + n));
  return 12 + n;
}

static void test_png_huge_ihdr(void) {
  static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  const struct { uint32_t w, h; int ctype, depth; } cases[] = {
      {1, 1u << 31, 0, 8},        /* beyond the default height limit */
      {1u << 31, 1, 6, 16},       /* beyond the width limit */
      {65535, 65535, 2, 8},       /* within dims, beyond pixels/bytes */
      {0x7fffffff, 0x7fffffff, 3, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint8_t f[128], ihdr[13];
    memcpy(f, sig, 8);
    put_be32(ihdr, cases[c].w);
    put_be32(ihdr + 4, cases[c].h);
    ihdr[8] = (uint8_t)cases[c].depth;
    ihdr[9] = (uint8_t)cases[c].ctype;
    ihdr[10] = ihdr[11] = ihdr[12] = 0;
    size_t k = 8 + png_chunk(f + 8, "IHDR", ihdr, 13);
    k += png_chunk(f + k, "IEND", NULL, 0);
    uint8_t dst[64];
    gf_shape out;
    CHECK_ERR(gf_decode(GF_CODEC_PNG, f, k, NULL, NULL, dst, sizeof dst, &out),
              GF_ELIMIT);
    CHECK(strstr(gf_last_error()->message, "limit") != NULL);
    CHECK_ERR(gf_decode_shape(GF_CODEC_PNG, f, k, NULL, NULL, &out),
              GF_ELIMIT);
  }
  /* Small limits apply to PNGs too, on the requested output. */
  gf_shape s = {20, 30, 3, GF_DTYPE_U8};
  uint8_t px[1800];
  gf_test_fill_image(px, 20, 30, 3, 5);
  void *png;
  size_t len;
  CHECK_OK(gf_png_encode(px, &s, 6, &png, &len));
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.limits.max_pixels = 599;
  uint8_t dst[2400];
  gf_shape out;
  CHECK_ERR(gf_decode(GF_CODEC_PNG, png, len, NULL, &o, dst, sizeof dst, &out),
            GF_ELIMIT);
  o.limits.max_pixels = 0;
  o.limits.max_bytes = 1799;
  CHECK_ERR(gf_decode(GF_CODEC_PNG, png, len, NULL, &o, dst, sizeof dst, &out),
            GF_ELIMIT);
  o.channels = 1; /* 600 bytes as gray: fits */
  CHECK_OK(gf_decode(GF_CODEC_PNG, png, len, NULL, &o, dst, sizeof dst, &out));
  free(png);
}

/* Finds the first chunk of `type`; returns its offset or 0. */
static size_t find_chunk(const uint8_t *p, size_t len, const char *type) {
  size_t k = 8;
  while (k + 12 <= len) {
    uint32_t n = be32(p + k);
    if (memcmp(p + k + 4, type, 4) == 0)
      return k;
    k += 12 + (size_t)n;
  }
  return 0;
}

static void fix_crc(uint8_t *p, size_t chunk) {
  uint32_t n = be32(p + chunk);
  put_be32(p + chunk + 8 + n, (uint32_t)crc32(0, p + chunk + 4, 4 + n));
}

static void test_png_damage(void) {
  gf_shape s = {40, 40, 3, GF_DTYPE_U8};
  uint8_t px[4800], dst[4800];
  gf_test_fill_image(px, 40, 40, 3, 11);
  void *pngv;
  size_t len;
  CHECK_OK(gf_png_encode(px, &s, 6, &pngv, &len));
  uint8_t *png = pngv;
  uint8_t *f = malloc(len);
  gf_shape out;
  size_t idat = find_chunk(png, len, "IDAT");
  CHECK(idat > 0);
  uint32_t n = be32(png + idat);
  /* zlib's Adler-32 (the last 4 bytes of the stream) damaged, CRC made
   * valid again: the pixels may look complete, the stream is not. */
  memcpy(f, png, len);
  f[idat + 8 + n - 1] ^= 0x55;
  fix_crc(f, idat);
  CHECK_ERR(gf_decode(GF_CODEC_PNG, f, len, NULL, NULL, dst, sizeof dst, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "libpng") != NULL);
  /* Deflate data damaged at several places with valid CRCs. */
  int wrong = 0;
  for (uint32_t i = 2; i < n - 4; i += 13) {
    memcpy(f, png, len);
    f[idat + 8 + i] ^= 0x10;
    fix_crc(f, idat);
    int rc = gf_decode(GF_CODEC_PNG, f, len, NULL, NULL, dst, sizeof dst, &out);
    CHECK(rc == GF_EDECODE);
    wrong += rc == 0 && memcmp(dst, px, sizeof px) != 0;
  }
  CHECK(wrong == 0);
  /* A bad CRC names the problem (damage inside the data is usually found
   * by zlib or the row filters first, before the chunk's CRC is read). */
  memcpy(f, png, len);
  f[idat + 8 + n + 2] ^= 1;
  CHECK_ERR(gf_decode(GF_CODEC_PNG, f, len, NULL, NULL, dst, sizeof dst, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "CRC") != NULL);
  /* Missing IEND is fine once every row is in. */
  size_t iend = find_chunk(png, len, "IEND");
  CHECK(iend > 0);
  memset(dst, 0, sizeof dst);
  CHECK_OK(gf_decode(GF_CODEC_PNG, png, iend, NULL, NULL, dst, sizeof dst,
                     &out));
  CHECK(memcmp(dst, px, sizeof px) == 0);
  /* Cut inside the image data: truncated, said so. */
  CHECK_ERR(gf_decode(GF_CODEC_PNG, png, idat + 8 + n / 2, NULL, NULL, dst,
                      sizeof dst, &out),
            GF_EDECODE);
  CHECK(strstr(gf_last_error()->message, "truncated") != NULL);
  /* Destination too small. */
  CHECK_ERR(gf_decode(GF_CODEC_PNG, png, len, NULL, NULL, dst, sizeof dst - 1,
                      &out),
            GF_ESHAPE);
  /* Not a PNG. */
  CHECK_ERR(gf_decode(GF_CODEC_PNG, "GIF89a", 6, NULL, NULL, dst, sizeof dst,
                      &out),
            GF_EDECODE);
  CHECK_ERR(gf_decode(GF_CODEC_PNG, NULL, 0, NULL, NULL, dst, sizeof dst,
                      &out),
            GF_EDECODE);
  free(f);
  free(png);
}

int main(void) {
  test_zstd_headers();
  test_png_huge_ihdr();
  test_png_damage();
  /* Shapes with interlace-free PNGs of every depth, u8 and u16. */
  const gf_shape shapes[] = {{13, 17, 3, GF_DTYPE_U8},
                             {9, 11, 4, GF_DTYPE_U16},
                             {1, 1, 1, GF_DTYPE_U8},
                             {24, 8, 2, GF_DTYPE_U8}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    size_t n = (size_t)gf_shape_bytes(&shapes[i]);
    uint8_t *px = malloc(n);
    gf_test_fill_image(px, shapes[i].height, shapes[i].width,
                       shapes[i].channels *
                           (shapes[i].dtype == GF_DTYPE_U16 ? 2 : 1),
                       i + 1);
    /* jpeg is lossy: test_jpeg_corrupt damages its files. loco codes 8-bit
     * images only. */
    for (int c = 0; c < GF_CODEC_COUNT_; c++)
      if (c != GF_CODEC_JPEG &&
          !(c == GF_CODEC_LOCO && shapes[i].dtype == GF_DTYPE_U16))
        fuzz_codec(c, px, &shapes[i]);
    free(px);
  }
  return gf_test_finish();
}
