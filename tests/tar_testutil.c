/* A ustar writer for tests (tar_testutil.h). */
#include "tar_testutil.h"

#include "decode/decode.h"
#include "testutil.h"

#include <stdint.h>
#include <string.h>

static void put_octal(uint8_t *f, size_t n, uint64_t v) {
  snprintf((char *)f, n, "%0*llo", (int)(n - 1), (unsigned long long)v);
}

void tar_add(FILE *f, const char *name, const void *data, size_t len) {
  uint8_t h[512] = {0};
  snprintf((char *)h, 100, "%s", name);
  put_octal(h + 100, 8, 0644);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  put_octal(h + 124, 12, len);
  put_octal(h + 136, 12, 0);
  h[156] = '0';
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  fwrite(h, 1, 512, f);
  fwrite(data, 1, len, f);
  static const uint8_t zero[512];
  if (len % 512)
    fwrite(zero, 1, 512 - len % 512, f);
}

void tar_end(FILE *f) {
  static const uint8_t zero[1024];
  fwrite(zero, 1, sizeof zero, f);
}

void *tar_test_png(uint8_t v, size_t *len) {
  uint8_t px[16];
  memset(px, v, sizeof px);
  gf_shape s = {4, 4, 1, GF_DTYPE_U8};
  void *out = NULL;
  CHECK_OK(gf_png_encode(px, &s, 1, &out, len));
  return out;
}
