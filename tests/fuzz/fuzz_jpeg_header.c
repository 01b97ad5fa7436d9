/* Fuzz target: the loader's JPEG frame-header scan (pipeline/source_shapes.h:
 * gf_jpeg_header_scan, gf_jpeg_frame_shape), which sizes a folder's batch
 * slots from every file's header without libjpeg.
 *
 * Input: a JPEG file (any bytes).
 *
 * The scan over the whole file, and the same scan fed as a folder scan
 * feeds it (the first 4 KiB, then 16 bytes from each offset it asks for),
 * agree exactly: same status, same frame. It never reads outside the bytes
 * given. And it agrees with libjpeg: when gf_jpeg_shape (libjpeg's header
 * read) accepts the file, the scan found a frame it sizes, with libjpeg's
 * height, width and channel count, so a slot sized from the scan holds
 * every image libjpeg decodes. */
#include "fuzz.h"

#include "decode/decode.h"
#include "pipeline/source_shapes.h"

/* The scan as source_shapes.c's folder scan runs it: a first read of up to
 * 4 KiB, then 16 bytes at each offset asked for, at most 4096 reads. */
static int scan_in_reads(const uint8_t *f, size_t len, gf_jpeg_frame *out) {
  size_t first = len < 4096 ? len : 4096;
  uint8_t *buf = fuzz_alloc(first ? first : 1);
  memcpy(buf, f, first);
  uint64_t pos = 2, base = 0;
  size_t have = first;
  int rc = GF_EDECODE;
  for (int reads = 0;; reads++) {
    rc = gf_jpeg_header_scan(buf, have, base, &pos, out);
    if (rc != 1)
      break;
    if (reads >= 4096 || pos >= len) {
      rc = GF_EDECODE;
      break;
    }
    size_t n = len - pos < 16 ? (size_t)(len - pos) : 16;
    free(buf);
    buf = fuzz_alloc(n); /* exact: ASan sees a read past it */
    memcpy(buf, f + pos, n);
    base = pos;
    have = n;
  }
  free(buf);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  uint8_t *f = fuzz_alloc(size);
  memcpy(f, data, size);
  gf_jpeg_frame whole, parts;
  uint64_t pos = 2;
  int rw = gf_jpeg_header_scan(f, size, 0, &pos, &whole);
  FUZZ_ASSERT(rw == 0 || rw == 1 || rw == GF_EDECODE);
  if (rw == 1)
    rw = GF_EDECODE; /* the file ended before its frame header */
  int rp = scan_in_reads(f, size, &parts);
  FUZZ_ASSERT(rp == rw || (rw == 0 && rp == GF_EDECODE && size > 4096));
  if (rw == 0 && rp == 0)
    FUZZ_ASSERT(whole.marker == parts.marker &&
                whole.precision == parts.precision &&
                whole.components == parts.components &&
                whole.height == parts.height && whole.width == parts.width);

  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  gf_shape lj, out, native;
  bool jpeg = f[0] == 0xFF && f[1] == 0xD8;
  if (jpeg && gf_jpeg_shape(f, size, &o, &lj) == 0) {
    FUZZ_ASSERT(rw == 0);
    FUZZ_ASSERT(gf_jpeg_frame_shape(&whole, &o, &out, &native) == 0);
    FUZZ_ASSERT(out.height == lj.height && out.width == lj.width &&
                out.channels == lj.channels && out.dtype == lj.dtype);
  }
  free(f);
  return 0;
}
