/* Real photo crops (the photos folder of the test data): crops of 64x64 and
 * 128x128 round-trip exactly through every codec (loco the 8-bit ones),
 * compared with the pixels libpng decoded, and every channel request gives
 * the same pixels from every codec and from the crop saved as PNG. Prints
 * the stored size of each codec against the PNG files'. */
#include "testutil.h"
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>

static uint8_t *decode_req(int codec, const void *src, size_t len,
                           const gf_shape *stored, uint32_t ch, gf_shape *out) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = ch;
  gf_shape s;
  if (gf_decode_shape(codec, src, len, stored, &o, &s) < 0)
    return NULL;
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *px = malloc(n);
  int rc = gf_decode(codec, src, len, stored, &o, px, n, out);
  if (rc < 0) {
    fprintf(stderr, "%s: %s\n", gf_codec_name(codec),
            gf_last_error()->message);
    free(px);
    return NULL;
  }
  return px;
}

#define NCODECS 4
static const int codecs[NCODECS] = {GF_CODEC_RAW, GF_CODEC_ZSTD,
                                    GF_CODEC_GRADZSTD, GF_CODEC_LOCO};
static uint64_t png_bytes, stored_bytes[NCODECS];

static void check_crop(const uint8_t *crop, const gf_shape *s,
                       const char *what) {
  size_t n = (size_t)gf_shape_bytes(s);
  void *png;
  size_t plen;
  CHECK_OK(gf_png_encode(crop, s, 6, &png, &plen));
  /* loco codes 8-bit images only. */
  int nc = s->dtype == GF_DTYPE_U8 ? NCODECS : NCODECS - 1;
  void *enc[NCODECS] = {NULL, NULL, NULL, NULL};
  size_t elen[NCODECS] = {0, 0, 0, 0};
  for (int c = 0; c < nc; c++)
    CHECK_OK(gf_encode(codecs[c], crop, s, 0, &enc[c], &elen[c]));
  if (nc == NCODECS) {
    png_bytes += plen;
    for (int c = 0; c < nc; c++)
      stored_bytes[c] += elen[c];
  }
  for (uint32_t ch = 0; ch <= 4; ch++) {
    if (ch == 2)
      continue;
    gf_shape ps, cs;
    uint8_t *ref = decode_req(GF_CODEC_PNG, png, plen, NULL, ch, &ps);
    CHECK(ref != NULL);
    if (!ref)
      continue;
    if (ch == 0)
      CHECK(memcmp(&ps, s, sizeof ps) == 0 && memcmp(ref, crop, n) == 0);
    for (int c = 0; c < nc; c++) {
      uint8_t *got = decode_req(codecs[c], enc[c], elen[c], s, ch, &cs);
      if (!got || memcmp(&cs, &ps, sizeof cs) != 0 ||
          memcmp(got, ref, (size_t)gf_shape_bytes(&ps)) != 0) {
        fprintf(stderr, "%s: %s with channels=%u differs from png\n", what,
                gf_codec_name(codecs[c]), ch);
        gf_test_failures++;
      }
      free(got);
    }
    free(ref);
  }
  for (int c = 0; c < nc; c++)
    free(enc[c]);
  free(png);
}

int main(void) {
  char dir[4096];
  char *names[64];
  int nn = gf_test_list_png("photos", dir, sizeof dir, names, 64);
  CHECK(nn > 0);
  uint64_t seed = 2024;
  int crops = 0;
  for (int i = 0; i < nn; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    size_t len;
    uint8_t *f = gf_test_read_file(path, &len);
    CHECK(f != NULL);
    gf_shape s;
    uint8_t *img = f ? decode_req(GF_CODEC_PNG, f, len, NULL, 0, &s) : NULL;
    CHECK(img != NULL);
    free(f);
    if (!img)
      continue;
    size_t bpp = (size_t)s.channels * (s.dtype == GF_DTYPE_U16 ? 2 : 1);
    static const uint32_t sizes[] = {64, 128};
    for (int k = 0; k < 4; k++) {
      uint32_t cs = sizes[k % 2];
      if (cs > s.width || cs > s.height)
        continue;
      uint32_t x0 = (uint32_t)(gf_test_rand(&seed) % (s.width - cs + 1));
      uint32_t y0 = (uint32_t)(gf_test_rand(&seed) % (s.height - cs + 1));
      gf_shape c = {cs, cs, s.channels, s.dtype};
      uint8_t *crop = malloc((size_t)gf_shape_bytes(&c));
      for (uint32_t y = 0; y < cs; y++)
        memcpy(crop + (size_t)y * cs * bpp,
               img + ((size_t)(y0 + y) * s.width + x0) * bpp, cs * bpp);
      char what[600];
      snprintf(what, sizeof what, "%s crop %ux%u at %u,%u", names[i], cs, cs,
               x0, y0);
      check_crop(crop, &c, what);
      crops++;
      free(crop);
    }
    free(img);
  }
  fprintf(stderr, "%d crops of %d photos checked\n", crops, nn);
  for (int c = 0; c < NCODECS && png_bytes; c++)
    fprintf(stderr, "  %-8s %5.1f%% of the PNG files' bytes (8-bit crops)\n",
            gf_codec_name(codecs[c]),
            100.0 * (double)stored_bytes[c] / (double)png_bytes);
  CHECK(crops >= nn);
  for (int i = 0; i < nn; i++)
    free(names[i]);
  return gf_test_finish();
}
