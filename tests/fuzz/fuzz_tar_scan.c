/* Fuzz target: the tar header scan (lib/format/tar_scan.c) and the check
 * of one header on its own (lib/format/tar_header.c).
 *
 * Input: a tar file, scanned from memory through the read callback, and
 * each of its 512-byte blocks read as a header.
 * Promises: a failure records its code and a message; every member given
 * has a non-empty path of at most GF_TAR_NAME_MAX bytes, a data offset
 * that is a multiple of 512, at least 512 past its header's offset, and
 * data that lies inside the input; members come in increasing order;
 * stopping at a member returns fn's value; a block read as a header gives
 * a NUL-terminated name of at most 356 bytes and a size below 2^63. */
#include "fuzz.h"

#include "format/tar_header.h"
#include "format/tar_scan.h"

typedef struct seen {
  uint64_t size, n, last_end, stop_at;
} seen;

static int64_t mem_read(void *ctx, void *buf, uint64_t off, uint64_t len) {
  const uint8_t *const *d = ctx;
  memcpy(buf, d[0] + off, len); /* the scan never asks past its size */
  return (int64_t)len;
}

static int check(void *ctx, const gf_tar_member *m) {
  seen *s = ctx;
  size_t len = strlen(m->path);
  FUZZ_ASSERT(len > 0 && len <= GF_TAR_NAME_MAX);
  FUZZ_ASSERT(m->data_offset % 512 == 0);
  FUZZ_ASSERT(m->data_offset >= m->header_offset + 512);
  FUZZ_ASSERT(fuzz_in(m->data_offset, m->size, s->size));
  FUZZ_ASSERT(m->header_offset >= s->last_end);
  s->last_end = m->data_offset + m->size;
  return s->n++ == s->stop_at ? 5 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t b = 0; b + GF_TAR_BLOCK <= size; b += GF_TAR_BLOCK) {
    gf_tar_header h;
    if (gf_tar_header_read(data + b, &h) == 0) {
      FUZZ_ASSERT(strnlen(h.name, sizeof h.name) < sizeof h.name);
      FUZZ_ASSERT(h.size < (1ull << 63));
    }
  }
  const uint8_t *ctx[1] = {data};
  for (int pass = 0; pass < 2; pass++) {
    seen s = {.size = size, .stop_at = pass ? 1 : UINT64_MAX};
    int rc = gf_tar_scan("fuzz.tar", size, mem_read, ctx, check, &s);
    if (rc == 5) {
      FUZZ_ASSERT(pass == 1 && s.n == 2);
    } else if (rc) {
      FUZZ_CHECK_FAILURE(rc, "gf_tar_scan");
    }
  }
  return 0;
}
