/* The raw codec: the decoded pixels stored as they are. */
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>

static int raw_check(const void *src, size_t len, const gf_shape *stored) {
  (void)src;
  uint64_t want = gf_shape_bytes(stored);
  if (len != want)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "raw sample is %zu bytes, expected %llu for shape "
                   "%ux%ux%u %s",
                   len, (unsigned long long)want, stored->height,
                   stored->width, stored->channels,
                   stored->dtype == GF_DTYPE_U16 ? "u16" : "u8");
  return 0;
}

static int raw_unpack(const void *src, size_t len, const gf_shape *stored,
                      uint8_t *dst, size_t n) {
  int rc = raw_check(src, len, stored);
  if (rc == 0)
    memcpy(dst, src, n);
  return rc;
}

static int raw_encode(const void *pixels, const gf_shape *shape, int level,
                      void **dst, size_t *dst_len) {
  (void)level;
  size_t n = (size_t)gf_shape_bytes(shape);
  void *p = malloc(n);
  if (!p)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a %zu-byte raw sample", n);
  memcpy(p, pixels, n);
  *dst = p;
  *dst_len = n;
  return 0;
}

const gf_codec_ops gf_codec_raw = {
    .id = GF_CODEC_RAW,
    .name = "raw",
    .caps = GF_CODEC_CAP_PIXELS,
    .check = raw_check,
    .unpack = raw_unpack,
    .encode = raw_encode,
};
