/* The loco codec on the CPU: the encoder, the record's structure check and
 * the whole-image decoder. The arithmetic, the record layout and the band
 * decoder are decode/loco_band.h's, shared with the GPU kernel. */
#include "decode/decode.h"
#include "decode/loco_band.h"

#include <stdlib.h>
#include <string.h>

typedef struct bitw {
  uint8_t *p;  /* next word */
  uint64_t acc; /* pending bits, MSB-aligned */
  uint32_t have;
} bitw;

static void put_word(bitw *b, uint32_t v) {
  b->p[0] = (uint8_t)v;
  b->p[1] = (uint8_t)(v >> 8);
  b->p[2] = (uint8_t)(v >> 16);
  b->p[3] = (uint8_t)(v >> 24);
  b->p += 4;
}

/* Appends the low n bits of v (n <= 32). */
static void put_bits(bitw *b, uint32_t v, uint32_t n) {
  if (!n)
    return;
  b->acc |= (uint64_t)(v & (n == 32 ? 0xFFFFFFFFu : (1u << n) - 1))
            << (64 - b->have - n);
  b->have += n;
  if (b->have >= 32) {
    put_word(b, (uint32_t)(b->acc >> 32));
    b->acc <<= 32;
    b->have -= 32;
  }
}

static void put_code(bitw *b, uint32_t m, uint32_t k) {
  uint32_t hi = m >> k;
  if (hi < GF_LOCO_MAXUN) {
    put_bits(b, 1, hi + 1); /* hi zeros, then a one */
    put_bits(b, m, k);
  } else {
    put_bits(b, 1, GF_LOCO_MAXUN + 1);
    put_bits(b, m - 1, 8);
  }
}

/* Codes rows [y0, y1) of px as one band's stream at b. */
static void encode_band(const uint8_t *px, uint32_t w, uint32_t C,
                        uint32_t y0, uint32_t y1, gf_loco_ctx *ctx,
                        bitw *b) {
  gf_loco_ctx_reset(ctx);
  size_t stride = (size_t)w * C;
  for (uint32_t y = y0; y < y1; y++) {
    const uint8_t *row = px + (size_t)y * stride;
    const uint8_t *up = y > y0 ? row - stride : NULL;
    for (uint32_t x = 0; x < w; x++) {
      int eg = 0;
      for (uint32_t i = 0; i < C; i++) {
        uint32_t ch = gf_loco_chan(C, i);
        int a, bb, c, d;
        if (!up) {
          bb = c = d = 0;
          a = x ? row[(size_t)(x - 1) * C + ch] : 0;
        } else {
          bb = up[(size_t)x * C + ch];
          c = x ? up[(size_t)(x - 1) * C + ch] : bb;
          a = x ? row[(size_t)(x - 1) * C + ch] : bb;
          d = x + 1 < w ? up[(size_t)(x + 1) * C + ch] : bb;
        }
        int sign;
        uint32_t q = gf_loco_context(a, bb, c, d, &sign);
        gf_loco_ctx *cx = &ctx[(i ? GF_LOCO_CONTEXTS : 0u) + q];
        gf_loco_st st = gf_loco_unpack(*cx);
        int p0 = gf_loco_med(a, bb, c);
        int pr = C >= 3 && ch != 3 && i ? gf_loco_clamp(p0 + eg) : p0;
        pr = gf_loco_clamp(pr + sign * st.C);
        int v = row[(size_t)x * C + ch];
        int e = sign * (v - pr);
        e = ((e + 128) & 255) - 128;
        uint32_t k = gf_loco_k(&st);
        put_code(b, gf_loco_map(&st, k, e), k);
        gf_loco_update(&st, e);
        *cx = gf_loco_pack(st);
        if (i == 0)
          eg = v - p0;
      }
    }
  }
  if (b->have) {
    put_word(b, (uint32_t)(b->acc >> 32));
    b->acc = 0;
    b->have = 0;
  }
}

static uint32_t bands_of(uint32_t h, uint32_t rows) {
  return (h + rows - 1) / rows;
}

int gf_loco_encode(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
                   uint32_t band_rows, void **dst, size_t *dst_len) {
  *dst = NULL;
  *dst_len = 0;
  if (!px || !h || !w || c < 1 || c > 4 || band_rows < 1 || band_rows > 255)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco: invalid image %ux%ux%u or band of %u rows", h, w,
                   c, band_rows);
  uint32_t nb = bands_of(h, band_rows);
  /* At most 32 bits a sample, plus a padded word a band. */
  uint64_t cap = GF_LOCO_HEAD + 8ull * nb + 4ull * h * w * c;
  if (cap > SIZE_MAX)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco: a %ux%ux%u image is too large to encode here", h,
                   w, c);
  uint8_t *out = malloc((size_t)cap);
  gf_loco_ctx *ctx = malloc(sizeof *ctx * GF_LOCO_SETS * GF_LOCO_CONTEXTS);
  if (!out || !ctx) {
    free(out);
    free(ctx);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a %llu-byte loco buffer",
                   (unsigned long long)cap);
  }
  out[0] = GF_LOCO_MAGIC;
  out[1] = GF_LOCO_VERSION;
  out[2] = (uint8_t)band_rows;
  out[3] = 0;
  uint8_t *ends = out + GF_LOCO_HEAD;
  uint8_t *area = ends + 4ull * nb;
  bitw b = {area, 0, 0};
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t y0 = k * band_rows;
    uint32_t y1 = y0 + band_rows < h ? y0 + band_rows : h;
    encode_band(px, w, c, y0, y1, ctx, &b);
    uint32_t end = (uint32_t)((size_t)(b.p - area) / 4);
    ends[4 * k] = (uint8_t)end;
    ends[4 * k + 1] = (uint8_t)(end >> 8);
    ends[4 * k + 2] = (uint8_t)(end >> 16);
    ends[4 * k + 3] = (uint8_t)(end >> 24);
  }
  free(ctx);
  size_t len = (size_t)(b.p - out);
  uint8_t *shrunk = realloc(out, len);
  *dst = shrunk ? shrunk : out;
  *dst_len = len;
  return 0;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

int gf_loco_check(const void *src, size_t len, uint32_t h, uint32_t w,
                  uint32_t c) {
  const uint8_t *p = src;
  if (len < GF_LOCO_HEAD)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "not a loco record (%zu bytes, shorter than its %u-byte "
                   "header)",
                   len, GF_LOCO_HEAD);
  if (p[0] != GF_LOCO_MAGIC)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "not a loco record (first byte 0x%02X, expected 0x%02X)",
                   p[0], GF_LOCO_MAGIC);
  if (p[1] != GF_LOCO_VERSION)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco record of version %u (this build reads version %u)",
                   p[1], GF_LOCO_VERSION);
  if (!p[2] || p[3])
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco record header damaged (band of %u rows, reserved "
                   "byte %u)",
                   p[2], p[3]);
  if (!h || !w || c < 1 || c > 4)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco codes 8-bit images of 1 to 4 channels, not "
                   "%ux%ux%u",
                   h, w, c);
  uint32_t nb = bands_of(h, p[2]);
  uint64_t head = GF_LOCO_HEAD + 4ull * nb;
  if (len < head)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco record of %zu bytes is shorter than its band table "
                   "(%u bands)",
                   len, nb);
  uint32_t prev = 0;
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t e = le32(p + GF_LOCO_HEAD + 4ull * k);
    if (e <= prev)
      return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "loco band %u ends at word %u, not after %u", k, e,
                     prev);
    prev = e;
  }
  if (head + 4ull * prev != len)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco record is %zu bytes, its band table says %llu", len,
                   (unsigned long long)(head + 4ull * prev));
  return 0;
}

/* The band decoder with the channel count a constant, so that the compiler
 * unrolls the channel loop and drops the tests on the channel, as it does
 * for the GPU kernel, which passes a constant too (about 15% faster here;
 * flatten inlines the whole decoder into each). */
typedef int (*band_fn)(const uint8_t *p, uint32_t n, uint8_t *img, uint32_t w,
                       uint32_t y0, uint32_t y1, gf_loco_ctx *ctx);
#define BAND_DECODER(C)                                                       \
  __attribute__((flatten)) static int band_c##C(                            \
      const uint8_t *p, uint32_t n, uint8_t *img, uint32_t w, uint32_t y0,   \
      uint32_t y1, gf_loco_ctx *ctx) {                                       \
    return gf_loco_band_decode(p, n, img, w, C, y0, y1, ctx);                \
  }
BAND_DECODER(1)
BAND_DECODER(2)
BAND_DECODER(3)
BAND_DECODER(4)

int gf_loco_decode(const void *src, size_t len, uint32_t h, uint32_t w,
                   uint32_t c, uint8_t *dst) {
  int rc = gf_loco_check(src, len, h, w, c);
  if (rc < 0)
    return rc;
  const uint8_t *p = src;
  uint32_t rows = p[2], nb = bands_of(h, rows);
  const uint8_t *area = p + GF_LOCO_HEAD + 4ull * nb;
  gf_loco_ctx ctx[GF_LOCO_SETS * GF_LOCO_CONTEXTS];
  band_fn band = c == 1 ? band_c1 : c == 2 ? band_c2 : c == 3 ? band_c3
                                                           : band_c4;
  uint32_t start = 0;
  for (uint32_t k = 0; k < nb; k++) {
    uint32_t end = le32(p + GF_LOCO_HEAD + 4ull * k);
    uint32_t y0 = k * rows, y1 = y0 + rows < h ? y0 + rows : h;
    if (band(area + 4ull * start, end - start, dst, w, y0, y1, ctx))
      return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "loco band %u (rows %u-%u) is damaged", k, y0, y1 - 1);
    start = end;
  }
  return 0;
}

/* ---- the codec's entry --------------------------------------------------- */

static int loco_check(const void *src, size_t len, const gf_shape *stored) {
  return gf_loco_check(src, len, stored->height, stored->width,
                       stored->channels);
}

static int loco_unpack(const void *src, size_t len, const gf_shape *st,
                       uint8_t *dst, size_t n) {
  (void)n;
  return gf_loco_decode(src, len, st->height, st->width, st->channels, dst);
}

/* The level is the rows of a band (0: the default). */
static int loco_encode(const void *pixels, const gf_shape *shape, int level,
                       void **dst, size_t *dst_len) {
  if (shape->dtype != GF_DTYPE_U8)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco codes 8-bit samples; use gradzstd for 16-bit "
                   "images");
  if (level < 0 || level > 255)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loco level %d: the level is the rows of a band, 1 to "
                   "255 (0: the default %u)",
                   level, GF_LOCO_BAND_ROWS);
  uint32_t rows = level ? (uint32_t)level : GF_LOCO_BAND_ROWS;
  return gf_loco_encode(pixels, shape->height, shape->width, shape->channels,
                        rows, dst, dst_len);
}

/* A record the GPU decodes: its structure checked, its length (with exact
 * unset, taken from the end of its last band) and band count. */
static int loco_gpu_record(const void *src, size_t src_len, bool exact,
                           const gf_shape *stored, uint32_t *len,
                           uint32_t *bands) {
  const uint8_t *p = src;
  size_t n = src_len;
  if (!exact && n >= 3 && p[2] && stored->height) {
    /* The record's own length, from the end of its last band. */
    uint64_t nb = (stored->height + p[2] - 1) / p[2];
    uint64_t at = 4 + 4 * (nb - 1);
    if (at + 4 <= n) {
      uint64_t end = (uint64_t)p[at] | (uint64_t)p[at + 1] << 8 |
                     (uint64_t)p[at + 2] << 16 | (uint64_t)p[at + 3] << 24;
      uint64_t want = 4 + 4 * nb + 4 * end;
      if (want <= n)
        n = (size_t)want;
    }
  }
  int rc =
      gf_loco_check(src, n, stored->height, stored->width, stored->channels);
  if (rc < 0)
    return rc;
  if (n > UINT32_MAX)
    return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a loco record of %zu bytes is beyond the GPU decode's "
                   "4 GiB",
                   n);
  *len = (uint32_t)n;
  *bands = (stored->height + p[2] - 1) / p[2];
  return 0;
}

const gf_codec_ops gf_codec_loco = {
    .id = GF_CODEC_LOCO,
    .name = "loco",
    .caps = GF_CODEC_CAP_GPU_RECORD,
    .check = loco_check,
    .unpack = loco_unpack,
    .gpu_record = loco_gpu_record,
    .encode = loco_encode,
};
