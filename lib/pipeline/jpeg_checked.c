/* JPEG files judged once by a CPU decode read whole, then trusted by their
 * CRC32C (see jpeg_checked.h). */
#include "pipeline/jpeg_checked.h"

#include "common/common.h"

#include <errno.h>
#include <stdlib.h>

#define CHECKED (1ull << 32)

uint64_t gf_jpeg_checked_bytes(uint64_t count) {
  return count * sizeof(uint64_t);
}

int gf_jpeg_checked_init(gf_jpeg_checked *t, uint64_t count) {
  t->crc = NULL;
  t->count = 0;
  atomic_init(&t->checks, 0);
  atomic_init(&t->refused, 0);
  if (!count || count > GF_JPEG_CHECKED_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG check table: %llu samples (1 to %llu)",
                   (unsigned long long)count,
                   (unsigned long long)GF_JPEG_CHECKED_MAX);
  t->crc = calloc((size_t)count, sizeof *t->crc);
  if (!t->crc)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the JPEG check table (%llu bytes)",
                   (unsigned long long)gf_jpeg_checked_bytes(count));
  t->count = count;
  return 0;
}

void gf_jpeg_checked_free(gf_jpeg_checked *t) {
  free((void *)t->crc);
  t->crc = NULL;
  t->count = 0;
}

bool gf_jpeg_checked_known(gf_jpeg_checked *t, uint64_t idx, uint32_t crc) {
  return t->crc && idx < t->count &&
         atomic_load_explicit(&t->crc[idx], memory_order_acquire) ==
             (CHECKED | crc);
}

void gf_jpeg_checked_record(gf_jpeg_checked *t, uint64_t idx, uint32_t crc,
                            bool good) {
  if (!t->crc || idx >= t->count)
    return;
  atomic_store_explicit(&t->crc[idx], good ? CHECKED | crc : 0,
                        memory_order_release);
  atomic_fetch_add_explicit(good ? &t->checks : &t->refused, 1,
                            memory_order_relaxed);
}
