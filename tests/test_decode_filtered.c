/* The decode layer's "decode but leave filtered" (gf_decode_filtered), the
 * call the loader's GPU mode uses for gradzstd samples: the pixels come out
 * exactly as gf_grad_filter left them before compression (so unfiltering
 * them gives gf_decode's pixels), other codecs, a short destination and a
 * damaged frame are refused. */
#include "testutil.h"
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>

static void one_shape(uint32_t h, uint32_t w, uint32_t c, uint64_t seed) {
  gf_shape s = {h, w, c, GF_DTYPE_U8};
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *px = malloc(n), *want = malloc(n), *got = malloc(n + 1);
  uint8_t *dec = malloc(n);
  CHECK(px && want && got && dec);
  if (!px || !want || !got || !dec)
    exit(1);
  gf_test_fill_image(px, h, w, c, seed);
  memcpy(want, px, n);
  gf_grad_filter(want, h, w, c);

  void *enc = NULL;
  size_t enc_len = 0;
  CHECK_OK(gf_encode(GF_CODEC_GRADZSTD, px, &s, 0, &enc, &enc_len));

  /* Left filtered: the filtered bytes, nothing past them written. */
  got[n] = 0xA5;
  CHECK_OK(gf_decode_filtered(GF_CODEC_GRADZSTD, enc, enc_len, &s, got, n + 1));
  CHECK(memcmp(got, want, n) == 0);
  CHECK(got[n] == 0xA5);
  /* Unfiltered, they are what gf_decode gives (and the original pixels). */
  gf_grad_unfilter(got, h, w, c);
  gf_shape out;
  CHECK_OK(gf_decode(GF_CODEC_GRADZSTD, enc, enc_len, &s, NULL, dec, n, &out));
  CHECK(memcmp(got, dec, n) == 0);
  CHECK(memcmp(got, px, n) == 0);

  /* A destination one byte short, and a cut frame. */
  CHECK_ERR(gf_decode_filtered(GF_CODEC_GRADZSTD, enc, enc_len, &s, got, n - 1),
            GF_ESHAPE);
  CHECK_ERR(gf_decode_filtered(GF_CODEC_GRADZSTD, enc, enc_len - 1, &s, got, n),
            GF_EDECODE);
  free(enc);

  /* Only gradzstd has a filter to leave. */
  CHECK_OK(gf_encode(GF_CODEC_ZSTD, px, &s, 0, &enc, &enc_len));
  CHECK_ERR(gf_decode_filtered(GF_CODEC_ZSTD, enc, enc_len, &s, got, n),
            -EINVAL);
  CHECK_ERR(gf_decode_filtered(GF_CODEC_RAW, px, n, &s, got, n), -EINVAL);
  CHECK_ERR(gf_decode_filtered(GF_CODEC_GRADZSTD, NULL, 0, &s, got, n),
            -EINVAL);
  free(enc);
  free(px);
  free(want);
  free(got);
  free(dec);
}

int main(void) {
  one_shape(1, 1, 1, 1);
  one_shape(37, 53, 3, 2);
  one_shape(64, 64, 4, 3);
  one_shape(5, 300, 1, 4);
  return gf_test_finish();
}
