/* gpufeed's verification sidecar of a WebDataset tar shard (wds_sums.c):
 * "train-000001.sums" beside "train-000001.tar", written by `gpufeed index
 * --verify`. It lists the shard's image members that the CPU decoders
 * (libjpeg, libpng; warnings taken as errors) decoded whole when it was
 * written, each with the CRC32C of its data. A loader that finds a
 * member's bytes still match hands them to the GPU's JPEG engines under
 * gpu_decode auto, as it does a built dataset's (decoded at build,
 * checksummed on every read); a member not listed, or whose bytes no
 * longer match, is decoded on the CPU. Text, one member a line, in the
 * shard's order:
 *
 *   gpufeed-sums v1 <shard_size> <count>
 *   <data_offset> <size> <crc32c: 8 lower-case hex digits>
 *
 * Offsets are of the member's data: multiples of 512, at least 512,
 * strictly increasing, each member inside the shard.
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_WDS_SUMS_H
#define GF_FORMAT_WDS_SUMS_H

#include "common/common.h"

typedef struct gf_wds_sum {
  uint64_t offset; /* of the member's data in the shard */
  uint64_t size;   /* its bytes */
  uint32_t crc;    /* CRC32C of them */
} gf_wds_sum;

typedef struct gf_wds_sums {
  uint64_t shard_size;
  uint64_t count;
  gf_wds_sum *v; /* count entries, by offset */
} gf_wds_sums;

/* Parses the sidecar `name` (for messages) of len bytes at text, made for
 * a shard of shard_size bytes. *out is the caller's (gf_wds_sums_free).
 * Returns 0, or an error naming the file, its line and byte offset:
 * GF_EFORMAT (no "gpufeed-sums vN <size> <count>" header), GF_EVERSION (a
 * version other than v1), GF_ECORRUPT (the header's size is not the
 * shard's, a line that is not three fields, a number that is not one, a
 * CRC that is not 8 hex digits, an offset not a multiple of 512, below 512
 * or not above the last member's end, a member past the shard's end, a NUL
 * byte, a line count other than the header's), -ENOMEM. */
int gf_wds_sums_parse(const char *name, const char *text, size_t len,
                      uint64_t shard_size, gf_wds_sums **out);
/* NULL accepted. */
void gf_wds_sums_free(gf_wds_sums *s);

/* Writes v[0 .. n) (by offset, as gf_wds_sums_parse accepts them) for a
 * shard of shard_size bytes into a malloc'd NUL-terminated *text of *len
 * bytes (the caller's). Returns 0, -EINVAL (entries out of order or
 * outside the shard) or -ENOMEM. */
int gf_wds_sums_write(const gf_wds_sum *v, uint64_t n, uint64_t shard_size,
                      char **text, size_t *len);

/* The entry of the member whose data lies at offset, of size bytes; NULL
 * when there is none (or its size differs). O(log count). */
const gf_wds_sum *gf_wds_sums_find(const gf_wds_sums *s, uint64_t offset,
                                   uint64_t size);

/* The sidecar's name for the shard `shard` (a name or location): a final
 * ".tar" replaced by ".sums", else ".sums" appended (as its index's,
 * gf_wds_sidecar_name). Into buf. Returns 0, or GF_ELIMIT when it does not
 * fit in cap bytes. */
int gf_wds_sums_name(const char *shard, char *buf, size_t cap);

#endif
