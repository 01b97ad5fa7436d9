/* Fuzz target: PNG decoding with gpufeed's options.
 *
 * Input: u8 options, then the PNG file. Options: bits 0-1 pick channels
 * 0 (native), 1, 3 or 4; bit 2 keep_16bit; bit 3 also decode into a
 * buffer one byte short (must be refused, never overrun); bit 4 rewrites
 * every chunk's CRC first, so that mutated headers reach gpufeed's checks
 * instead of stopping at libpng's CRC check.
 *
 * gf_decode_shape, then gf_decode twice into buffers pre-filled with
 * different bytes: both must succeed or fail alike, give the announced
 * shape and identical pixels (a byte the decoder did not write would
 * differ). When the shape is refused, the decode must be refused too. */
#include "fuzz.h"

#include <zlib.h> /* crc32: the PNG chunk checksum */

/* Decoded bytes and pixels allowed here: a small image decodes in
 * microseconds, and the limits themselves are part of what is tested. */
#define LIMIT_BYTES (1u << 22)
#define LIMIT_PIXELS (1u << 20)

static uint32_t be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | p[3];
}

/* Recomputes the CRC of each whole chunk after the 8-byte signature. */
static void repair_crcs(uint8_t *p, size_t len) {
  size_t pos = 8;
  while (pos <= len && len - pos >= 12) {
    uint32_t n = be32(p + pos);
    if (n > len - pos - 12)
      break;
    uint32_t crc = (uint32_t)crc32(0, p + pos + 4, (uInt)n + 4);
    uint8_t *c = p + pos + 8 + n;
    c[0] = (uint8_t)(crc >> 24);
    c[1] = (uint8_t)(crc >> 16);
    c[2] = (uint8_t)(crc >> 8);
    c[3] = (uint8_t)crc;
    pos += 12 + (size_t)n;
  }
}

static int one_input(unsigned opt, const uint8_t *png, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t *copy = fuzz_alloc(size - 1);
  memcpy(copy, data + 1, size - 1);
  if (data[0] & 16)
    repair_crcs(copy, size - 1);
  one_input(data[0], copy, size - 1);
  free(copy);
  return 0;
}

static int one_input(unsigned opt, const uint8_t *png, size_t len) {
  static const uint32_t chans[4] = {0, 1, 3, 4};
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = chans[opt & 3];
  o.keep_16bit = (opt >> 2) & 1;
  o.limits.max_bytes = LIMIT_BYTES;
  o.limits.max_pixels = LIMIT_PIXELS;

  gf_shape s;
  int rc = gf_decode_shape(GF_CODEC_PNG, png, len, NULL, &o, &s);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_decode_shape");
    uint8_t small[4096];
    gf_shape out;
    int rc2 = gf_decode(GF_CODEC_PNG, png, len, NULL, &o, small, sizeof small,
                        &out);
    FUZZ_ASSERT(rc2 < 0);
    FUZZ_CHECK_FAILURE(rc2, "gf_decode (shape refused)");
    return 0;
  }
  uint64_t bytes = gf_shape_bytes(&s);
  FUZZ_ASSERT(bytes > 0 && bytes <= LIMIT_BYTES);
  FUZZ_ASSERT((uint64_t)s.width * s.height <= LIMIT_PIXELS);
  FUZZ_ASSERT(s.channels >= 1 && s.channels <= 4);
  if (o.channels)
    FUZZ_ASSERT(s.channels == o.channels);
  if (!o.keep_16bit)
    FUZZ_ASSERT(s.dtype == GF_DTYPE_U8);

  uint8_t *a = fuzz_alloc((size_t)bytes), *b = fuzz_alloc((size_t)bytes);
  memset(a, 0x00, (size_t)bytes);
  memset(b, 0xA5, (size_t)bytes);
  gf_shape oa, ob;
  int ra = gf_decode(GF_CODEC_PNG, png, len, NULL, &o, a, (size_t)bytes, &oa);
  int rb = gf_decode(GF_CODEC_PNG, png, len, NULL, &o, b, (size_t)bytes, &ob);
  FUZZ_ASSERT(ra == rb);
  if (ra < 0) {
    FUZZ_CHECK_FAILURE(rb, "gf_decode");
  } else {
    FUZZ_ASSERT(memcmp(&oa, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(&ob, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(a, b, (size_t)bytes) == 0);
  }
  if (opt & 8) {
    uint8_t *c = fuzz_alloc((size_t)bytes - 1);
    gf_shape oc;
    int rc3 = gf_decode(GF_CODEC_PNG, png, len, NULL, &o, c,
                        (size_t)bytes - 1, &oc);
    FUZZ_ASSERT(rc3 < 0);
    FUZZ_CHECK_FAILURE(rc3, "gf_decode (buffer one byte short)");
    free(c);
  }
  free(a);
  free(b);
  return 0;
}
