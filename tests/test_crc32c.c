/* CRC32C: known vectors, continuation, and the hardware path against the
 * table path and a bit-at-a-time reference on random buffers of random
 * lengths and alignments. */
#include "common/crc32c.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The definition, one bit at a time: what both fast paths must equal. */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t len) {
  crc = ~crc;
  while (len--) {
    crc ^= *p++;
    for (int k = 0; k < 8; k++)
      crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check_vectors(crc_fn f, const char *name) {
  uint8_t buf[32];
  /* RFC 3720 (iSCSI) B.4 and the usual check value. */
  CHECK(f(0, "123456789", 9) == 0xE3069283u);
  memset(buf, 0, sizeof buf);
  CHECK(f(0, buf, 32) == 0x8A9136AAu);
  memset(buf, 0xff, sizeof buf);
  CHECK(f(0, buf, 32) == 0x62A8AB43u);
  for (int i = 0; i < 32; i++)
    buf[i] = (uint8_t)i;
  CHECK(f(0, buf, 32) == 0x46DD794Eu);
  for (int i = 0; i < 32; i++)
    buf[i] = (uint8_t)(31 - i);
  CHECK(f(0, buf, 32) == 0x113FDB5Cu);
  CHECK(f(0, NULL, 0) == 0);
  CHECK(f(0x12345678u, buf, 0) == 0x12345678u);
  /* Continuing from a CRC equals one pass over the concatenation. */
  CHECK(f(f(0, "1234", 4), "56789", 5) == 0xE3069283u);
  if (gf_test_failures)
    fprintf(stderr, "known vectors failed for %s\n", name);
}

int main(void) {
  check_vectors(gf_crc32c, "gf_crc32c");
  check_vectors(gf_crc32c_sw, "table");
  check_vectors(gf_crc32c_hw, "hardware");
  printf("sse4.2 crc32 instruction: %s\n",
         gf_crc32c_hw_available() ? "yes" : "no (both paths are the table)");

  /* Random buffers: lengths around every path boundary of the hardware
   * loop (8 bytes, 3 x 256, 3 x 8192) and odd alignments. */
  size_t cap = 3 * 8192 * 3 + 64;
  uint8_t *big = malloc(cap + 8);
  CHECK(big != NULL);
  if (!big)
    return gf_test_finish();
  uint64_t seed = 42;
  for (size_t i = 0; i < cap + 8; i++)
    big[i] = (uint8_t)gf_test_rand(&seed);
  static const size_t edges[] = {0,     1,     7,     8,     9,
                                 767,   768,   769,   1535,  1536,
                                 24575, 24576, 24577, 49152, 49160};
  int mismatches = 0;
  for (int it = 0; it < 600; it++) {
    size_t len;
    if (it < (int)(sizeof edges / sizeof edges[0]))
      len = edges[it];
    else if (it % 3 == 0)
      len = gf_test_rand(&seed) % cap;
    else
      len = gf_test_rand(&seed) % 2048;
    size_t align = gf_test_rand(&seed) % 8;
    const uint8_t *p = big + align;
    uint32_t init = it % 2 ? (uint32_t)gf_test_rand(&seed) : 0;
    uint32_t hw = gf_crc32c_hw(init, p, len);
    uint32_t sw = gf_crc32c_sw(init, p, len);
    uint32_t pub = gf_crc32c(init, p, len);
    uint32_t ref = len <= 4096 || it % 25 == 0 ? crc_ref(init, p, len) : sw;
    if (hw != sw || sw != ref || pub != hw) {
      if (mismatches++ < 5)
        fprintf(stderr,
                "len %zu align %zu init 0x%08x: hw 0x%08x sw 0x%08x ref "
                "0x%08x pub 0x%08x\n",
                len, align, init, hw, sw, ref, pub);
    }
    /* Split anywhere: continuation over the fast paths. */
    size_t cut = len ? gf_test_rand(&seed) % len : 0;
    if (gf_crc32c(gf_crc32c(init, p, cut), p + cut, len - cut) != pub)
      mismatches++;
  }
  CHECK(mismatches == 0);
  free(big);

  /* Throughput, printed only (benchmarks measure it properly). */
  size_t n = 16u << 20;
  uint8_t *buf = malloc(n);
  CHECK(buf != NULL);
  if (buf) {
    memset(buf, 0x5a, n);
    crc_fn fns[2] = {gf_crc32c_hw, gf_crc32c_sw};
    const char *names[2] = {"hardware", "table"};
    for (int k = 0; k < 2; k++) {
      double t0 = now_s();
      uint32_t c = 0;
      for (int r = 0; r < 4; r++)
        c = fns[k](c, buf, n);
      double dt = now_s() - t0;
      printf("crc32c %s: %.2f GB/s (64 MiB, crc 0x%08x)\n", names[k],
             4.0 * (double)n / dt / 1e9, c);
    }
    free(buf);
  }
  return gf_test_finish();
}
