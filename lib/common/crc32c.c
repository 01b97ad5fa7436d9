/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of
 * every stored sample and index table (docs/FORMAT.md says why this one).
 *
 * Two implementations, chosen once at run time:
 * - x86-64 with SSE4.2: the crc32 instruction, 8 bytes at a time, on three
 *   interleaved streams so that its 3-cycle latency is hidden (one result a
 *   cycle); the three partial CRCs are joined with "shift by N zero bytes"
 *   tables. This function alone is compiled for SSE4.2, so the rest of the
 *   build runs on any x86-64.
 * - elsewhere: slicing-by-8 tables (about 2 GB/s a core).
 * Both compute the same function; the tests compare them on random input. */
#include "common/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define GF_CRC_X86 1
#include <nmmintrin.h> /* _mm_crc32_u64 / _mm_crc32_u8 */
#else
#define GF_CRC_X86 0
#endif

#define POLY 0x82F63B78u

/* Stream lengths for the interleaved hardware loop: LONG for big buffers,
 * SHORT for the remainder; both multiples of 8. */
#define CRC_LONG 8192u
#define CRC_SHORT 256u

static uint32_t sw_table[8][256];
static uint32_t zeros_long[4][256];  /* shift a CRC register by CRC_LONG */
static uint32_t zeros_short[4][256]; /* ... and by CRC_SHORT zero bytes */
static bool have_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* The register after feeding `n` zero bytes, without the pre/post
 * inversion: a linear map of the register, so tables of it on each byte
 * position give it for any value. */
static uint32_t shift_zeros_slow(uint32_t crc, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    crc = sw_table[0][crc & 0xff] ^ (crc >> 8);
  return crc;
}

static void make_zeros_table(uint32_t table[4][256], uint32_t n) {
  uint32_t bit[32];
  for (int b = 0; b < 32; b++)
    bit[b] = shift_zeros_slow(1u << b, n);
  for (int k = 0; k < 4; k++)
    for (uint32_t v = 0; v < 256; v++) {
      uint32_t r = 0;
      for (int b = 0; b < 8; b++)
        if (v & (1u << b))
          r ^= bit[k * 8 + b];
      table[k][v] = r;
    }
}

static void crc_init(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
    sw_table[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; n++)
    for (int k = 1; k < 8; k++)
      sw_table[k][n] =
          sw_table[0][sw_table[k - 1][n] & 0xff] ^ (sw_table[k - 1][n] >> 8);
  make_zeros_table(zeros_long, CRC_LONG);
  make_zeros_table(zeros_short, CRC_SHORT);
#if GF_CRC_X86
  __builtin_cpu_init();
  have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8); /* unaligned-safe; one mov on x86 */
  return v;
}

uint32_t gf_crc32c_sw(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
  const uint8_t *p = buf;
  uint32_t c = ~crc;
  while (len && ((uintptr_t)p & 7)) {
    c = sw_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    len--;
  }
  while (len >= 8) {
    /* Little-endian host assumed for the 8-byte step; a big-endian one
     * takes the byte loop below for everything. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v = load64(p) ^ c;
    c = sw_table[7][v & 0xff] ^ sw_table[6][(v >> 8) & 0xff] ^
        sw_table[5][(v >> 16) & 0xff] ^ sw_table[4][(v >> 24) & 0xff] ^
        sw_table[3][(v >> 32) & 0xff] ^ sw_table[2][(v >> 40) & 0xff] ^
        sw_table[1][(v >> 48) & 0xff] ^ sw_table[0][v >> 56];
    p += 8;
    len -= 8;
#else
    break;
#endif
  }
  while (len--)
    c = sw_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

#if GF_CRC_X86
static inline uint32_t shift_reg(const uint32_t t[4][256], uint32_t crc) {
  return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
         t[3][crc >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const uint8_t *p, size_t len) {
  uint64_t c0 = ~crc;
  while (len && ((uintptr_t)p & 7)) {
    c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    len--;
  }
  /* Three independent streams of n bytes each, then c0 is moved past the
   * other two's bytes (shift) and combined: crc(A|B) = shift(crc(A), |B|)
   * ^ crc(B) for the raw register. */
  while (len >= 3 * CRC_LONG) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + CRC_LONG;
    do {
      c0 = _mm_crc32_u64(c0, load64(p));
      c1 = _mm_crc32_u64(c1, load64(p + CRC_LONG));
      c2 = _mm_crc32_u64(c2, load64(p + 2 * CRC_LONG));
      p += 8;
    } while (p < end);
    c0 = shift_reg(zeros_long, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift_reg(zeros_long, (uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * CRC_LONG;
    len -= 3 * CRC_LONG;
  }
  while (len >= 3 * CRC_SHORT) {
    uint64_t c1 = 0, c2 = 0;
    const uint8_t *end = p + CRC_SHORT;
    do {
      c0 = _mm_crc32_u64(c0, load64(p));
      c1 = _mm_crc32_u64(c1, load64(p + CRC_SHORT));
      c2 = _mm_crc32_u64(c2, load64(p + 2 * CRC_SHORT));
      p += 8;
    } while (p < end);
    c0 = shift_reg(zeros_short, (uint32_t)c0) ^ (uint32_t)c1;
    c0 = shift_reg(zeros_short, (uint32_t)c0) ^ (uint32_t)c2;
    p += 2 * CRC_SHORT;
    len -= 3 * CRC_SHORT;
  }
  while (len >= 8) {
    c0 = _mm_crc32_u64(c0, load64(p));
    p += 8;
    len -= 8;
  }
  while (len--)
    c0 = _mm_crc32_u8((uint32_t)c0, *p++);
  return ~(uint32_t)c0;
}
#endif

bool gf_crc32c_hw_available(void) {
  pthread_once(&crc_once, crc_init);
  return have_hw;
}

uint32_t gf_crc32c_hw(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
#if GF_CRC_X86
  if (have_hw)
    return crc_hw(crc, buf, len);
#endif
  return gf_crc32c_sw(crc, buf, len);
}

uint32_t gf_crc32c(uint32_t crc, const void *buf, size_t len) {
  pthread_once(&crc_once, crc_init);
#if GF_CRC_X86
  if (GF_LIKELY(have_hw))
    return crc_hw(crc, buf, len);
#endif
  return gf_crc32c_sw(crc, buf, len);
}
