/* Fuzz target: the loco decoder (lib/decode/loco.c, loco_band.h), through
 * the dispatcher, whole, and band by band as the GPU runs it, given a
 * stored shape as the dataset index would give it.
 *
 * Input:
 *   u8   options  bits 0-1: channels 0/1/3/4; bit 2: keep_16bit; bit 3:
 *                 also decode into a buffer one byte short; bit 4: the
 *                 stored dtype is u16 (must be refused)
 *   u8   height, u8 width, u8 channels   the stored shape (not cleaned:
 *                 bad shapes must be refused)
 *   then the record.
 *
 * Checks: a refused shape means a refused decode; two dispatcher decodes
 * into differently pre-filled buffers agree; the whole-image decoder
 * agrees with them; each band, decoded alone from an exact copy of its
 * words, writes only its rows and succeeds exactly when the whole decode
 * does, giving the same pixels; decoded pixels encode again and decode
 * back to themselves, within the record bound. */
#include "fuzz.h"

#include "decode/decode.h"
#include "decode/loco_band.h"

#define HEADER 4
#define FILL 0x5A

static uint32_t le32(const uint8_t *p) { return fuzz_le32(p); }

/* Decodes every band of rec alone; returns 0 when all decode. img is
 * h x w x c, pre-filled with FILL by the caller. */
static int by_bands(const uint8_t *rec, uint32_t h, uint32_t w, uint32_t c,
                    uint8_t *img, gf_loco_ctx *ctx) {
  uint32_t rows = rec[2], nb = (h + rows - 1) / rows;
  const uint8_t *area = rec + GF_LOCO_HEAD + 4 * (size_t)nb;
  size_t stride = (size_t)w * c, n = (size_t)h * stride;
  uint32_t start = 0;
  int bad = 0;
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t end = le32(rec + GF_LOCO_HEAD + 4 * (size_t)k);
    uint32_t y0 = k * rows, y1 = y0 + rows < h ? y0 + rows : h;
    size_t words = end - start;
    /* An exact copy, so ASan sees a read past the band's words. */
    uint8_t *band = fuzz_alloc(words * 4);
    memcpy(band, area + 4 * (size_t)start, words * 4);
    uint8_t *before = fuzz_alloc(n);
    memcpy(before, img, n);
    int rc = gf_loco_band_decode(band, (uint32_t)words, img, w, c, y0, y1, ctx);
    FUZZ_ASSERT(rc == 0 || rc == 1);
    FUZZ_ASSERT(memcmp(img, before, y0 * stride) == 0);
    FUZZ_ASSERT(memcmp(img + y1 * stride, before + y1 * stride,
                       n - y1 * stride) == 0);
    bad |= rc;
    free(before);
    free(band);
    start = end;
  }
  return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HEADER)
    return 0;
  static const uint32_t chans[4] = {0, 1, 3, 4};
  unsigned opt = data[0];
  gf_shape stored = {data[1], data[2], data[3],
                     (opt & 16) ? GF_DTYPE_U16 : GF_DTYPE_U8};
  const uint8_t *src = data + HEADER;
  size_t len = size - HEADER;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = chans[opt & 3];
  o.keep_16bit = (opt >> 2) & 1;

  gf_shape s;
  int rc = gf_decode_shape(GF_CODEC_LOCO, src, len, &stored, &o, &s);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_decode_shape");
    uint8_t small[4096];
    gf_shape out;
    int rc2 = gf_decode(GF_CODEC_LOCO, src, len, &stored, &o, small,
                        sizeof small, &out);
    FUZZ_ASSERT(rc2 < 0);
    FUZZ_CHECK_FAILURE(rc2, "gf_decode (shape refused)");
    return 0;
  }
  /* Accepted: an 8-bit shape loco codes, and a record whose structure
   * holds. */
  uint32_t h = stored.height, w = stored.width, c = stored.channels;
  FUZZ_ASSERT(stored.dtype == GF_DTYPE_U8 && h && w && c >= 1 && c <= 4);
  FUZZ_ASSERT(gf_loco_check(src, len, h, w, c) == 0);
  uint32_t rows = src[2], nb = (h + rows - 1) / rows;
  FUZZ_ASSERT(rows >= 1 &&
              len == GF_LOCO_HEAD + 4ull * nb +
                         4ull * le32(src + GF_LOCO_HEAD + 4 * (size_t)(nb - 1)));
  FUZZ_ASSERT(s.height == h && s.width == w && s.dtype == GF_DTYPE_U8 &&
              s.channels == (o.channels ? o.channels : c));

  size_t bytes = (size_t)gf_shape_bytes(&s), n = (size_t)h * w * c;
  uint8_t *a = fuzz_alloc(bytes), *b = fuzz_alloc(bytes);
  memset(a, 0x00, bytes);
  memset(b, 0xA5, bytes);
  gf_shape oa, ob;
  int ra = gf_decode(GF_CODEC_LOCO, src, len, &stored, &o, a, bytes, &oa);
  int rb = gf_decode(GF_CODEC_LOCO, src, len, &stored, &o, b, bytes, &ob);
  FUZZ_ASSERT(ra == rb);
  if (ra < 0) {
    FUZZ_ASSERT(ra == GF_EDECODE);
    FUZZ_CHECK_FAILURE(rb, "gf_decode");
  } else {
    FUZZ_ASSERT(memcmp(&oa, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(&ob, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(a, b, bytes) == 0);
  }

  /* The whole-image decoder, and the bands one by one. */
  uint8_t *whole = fuzz_alloc(n), *banded = fuzz_alloc(n);
  int rw = gf_loco_decode(src, len, h, w, c, whole);
  FUZZ_ASSERT((rw < 0) == (ra < 0));
  if (rw == 0 && !o.channels)
    FUZZ_ASSERT(memcmp(whole, a, n) == 0);
  gf_loco_ctx *ctx = fuzz_alloc(sizeof *ctx * GF_LOCO_SETS * GF_LOCO_CONTEXTS);
  memset(banded, FILL, n);
  int rband = by_bands(src, h, w, c, banded, ctx);
  FUZZ_ASSERT(rband == (rw < 0));
  if (rw == 0) {
    FUZZ_ASSERT(memcmp(whole, banded, n) == 0);
    /* Decoded pixels code again, within the bound, and decode back. */
    void *re = NULL;
    size_t rlen = 0;
    FUZZ_ASSERT(gf_loco_encode(whole, h, w, c, rows, &re, &rlen) == 0);
    FUZZ_ASSERT(rlen <= GF_LOCO_HEAD + 8ull * nb + 4ull * n);
    FUZZ_ASSERT(gf_loco_decode(re, rlen, h, w, c, banded) == 0);
    FUZZ_ASSERT(memcmp(whole, banded, n) == 0);
    free(re);
  }

  if (opt & 8) {
    uint8_t *short_buf = fuzz_alloc(bytes - 1);
    gf_shape oc;
    int rc3 = gf_decode(GF_CODEC_LOCO, src, len, &stored, &o, short_buf,
                        bytes - 1, &oc);
    FUZZ_ASSERT(rc3 == GF_ESHAPE);
    FUZZ_CHECK_FAILURE(rc3, "gf_decode (buffer one byte short)");
    free(short_buf);
  }
  free(ctx);
  free(whole);
  free(banded);
  free(a);
  free(b);
  return 0;
}
