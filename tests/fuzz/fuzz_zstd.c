/* Fuzz target: the zstd and gradzstd decoders (and raw), given a stored
 * shape as the dataset index would give it.
 *
 * Input:
 *   u8   options  bits 0-1: codec (0 raw, 1 zstd, 2 gradzstd, 3 an unknown
 *                 codec number); bits 2-3: channels 0/1/3/4; bit 4:
 *                 keep_16bit; bit 5: also decode into a buffer one byte
 *                 short
 *   u16  height, u16 width, u8 channels, u8 dtype   the stored shape (not
 *                 cleaned: bad shapes must be refused)
 *   then the stored bytes.
 *
 * Checks as in fuzz_png: shape then two decodes into differently
 * pre-filled buffers, equal results and pixels; a refused shape means a
 * refused decode. */
#include "fuzz.h"

#define LIMIT_BYTES (1u << 22)
#define LIMIT_PIXELS (1u << 20)
#define HEADER 7

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HEADER)
    return 0;
  static const int codecs[4] = {GF_CODEC_RAW, GF_CODEC_ZSTD, GF_CODEC_GRADZSTD,
                                GF_CODEC_COUNT_ + 3};
  static const uint32_t chans[4] = {0, 1, 3, 4};
  unsigned opt = data[0];
  int codec = codecs[opt & 3];
  gf_shape stored = {(uint32_t)data[1] | ((uint32_t)data[2] << 8),
                     (uint32_t)data[3] | ((uint32_t)data[4] << 8), data[5],
                     data[6]};
  const uint8_t *src = data + HEADER;
  size_t len = size - HEADER;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = chans[(opt >> 2) & 3];
  o.keep_16bit = (opt >> 4) & 1;
  o.limits.max_bytes = LIMIT_BYTES;
  o.limits.max_pixels = LIMIT_PIXELS;

  gf_shape s;
  int rc = gf_decode_shape(codec, src, len, &stored, &o, &s);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_decode_shape");
    uint8_t small[4096];
    gf_shape out;
    int rc2 = gf_decode(codec, src, len, &stored, &o, small, sizeof small, &out);
    FUZZ_ASSERT(rc2 < 0);
    FUZZ_CHECK_FAILURE(rc2, "gf_decode (shape refused)");
    return 0;
  }
  FUZZ_ASSERT(codec < GF_CODEC_COUNT_);
  uint64_t bytes = gf_shape_bytes(&s);
  FUZZ_ASSERT(bytes > 0 && bytes <= LIMIT_BYTES);
  FUZZ_ASSERT(s.height == stored.height && s.width == stored.width);
  FUZZ_ASSERT(s.channels == (o.channels ? o.channels : stored.channels));
  FUZZ_ASSERT(s.dtype == (stored.dtype == GF_DTYPE_U16 && o.keep_16bit
                              ? (uint32_t)GF_DTYPE_U16
                              : (uint32_t)GF_DTYPE_U8));

  uint8_t *a = fuzz_alloc((size_t)bytes), *b = fuzz_alloc((size_t)bytes);
  memset(a, 0x00, (size_t)bytes);
  memset(b, 0xA5, (size_t)bytes);
  gf_shape oa, ob;
  int ra = gf_decode(codec, src, len, &stored, &o, a, (size_t)bytes, &oa);
  int rb = gf_decode(codec, src, len, &stored, &o, b, (size_t)bytes, &ob);
  FUZZ_ASSERT(ra == rb);
  if (ra < 0) {
    FUZZ_CHECK_FAILURE(rb, "gf_decode");
  } else {
    FUZZ_ASSERT(memcmp(&oa, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(&ob, &s, sizeof s) == 0);
    FUZZ_ASSERT(memcmp(a, b, (size_t)bytes) == 0);
  }
  if (opt & 32) {
    uint8_t *c = fuzz_alloc((size_t)bytes - 1);
    gf_shape oc;
    int rc3 = gf_decode(codec, src, len, &stored, &o, c, (size_t)bytes - 1, &oc);
    FUZZ_ASSERT(rc3 < 0);
    FUZZ_CHECK_FAILURE(rc3, "gf_decode (buffer one byte short)");
    free(c);
  }
  free(a);
  free(b);
  return 0;
}
