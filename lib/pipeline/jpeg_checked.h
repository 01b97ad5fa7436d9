/* JPEG files without a checksum (an image folder's, unverified tar
 * shards') on the GPU's JPEG engines under gpu_decode auto: each file is
 * judged once by a CPU decode that reads it whole, then trusted by its
 * CRC32C.
 *
 * Why: the engines do not detect damage inside the image data (a file cut
 * short and closed with an end marker decodes as garbage there; libjpeg
 * reports it), so under auto only bytes a checksum vouches for go to them
 * (docs/NVJPEG.md, what the checks do not see). A dataset's and a verified
 * shard's records carry one from `gpufeed index --verify`; a folder's files do
 * not. Here the first time the loader meets such a file it decodes it on the
 * CPU as before (its window, at a reduced DCT scale where that serves) but
 * reads on to the end marker (gf_jpeg_region.to_end: the rows below the
 * window made at its scale and columns, then dropped), so that the decode's
 * verdict is a full decode's; a file that decodes has its CRC32C
 * recorded, and from then on bytes with that CRC32C may go to the engines
 * (the CRC32C of ~40 KB takes microseconds). A file that fails, or whose
 * bytes changed since (another CRC32C), is decoded on the CPU again, which
 * gives the error policy its verdict. The engines' own refusals (a file
 * they do not take) are decoded on the CPU as before.
 *
 * Memory: 8 bytes a sample of the source (the CRC32C and a flag in one word,
 * so that a reader never sees one without the other), allocated when the
 * loader opens the engines, a row of the memory plan; up to
 * GF_JPEG_CHECKED_MAX samples (beyond, such files stay on the CPU).
 * Any thread; a sample's entry written by whichever worker decoded it. */
#ifndef GF_PIPELINE_JPEG_CHECKED_H
#define GF_PIPELINE_JPEG_CHECKED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_JPEG_CHECKED_MAX (1ull << 24) /* samples: 128 MiB of table */

typedef struct gf_jpeg_checked {
  _Atomic uint64_t *crc; /* a sample's: 1 << 32 | its CRC32C once judged
                            good, else 0 */
  uint64_t count;
  _Atomic uint64_t checks;  /* verdicts recorded: files judged good */
  _Atomic uint64_t refused; /* files judged bad */
} gf_jpeg_checked;

/* Bytes the table of count samples takes (count * 8). */
uint64_t gf_jpeg_checked_bytes(uint64_t count);

/* Allocates the table of count samples (1..GF_JPEG_CHECKED_MAX), none
 * judged. Returns 0 or -ENOMEM / -EINVAL with context. */
int gf_jpeg_checked_init(gf_jpeg_checked *t, uint64_t count);

void gf_jpeg_checked_free(gf_jpeg_checked *t);

/* Whether sample idx's bytes, of CRC32C crc, are the ones judged good (false
 * for an idx beyond the table, or a table not allocated). */
bool gf_jpeg_checked_known(gf_jpeg_checked *t, uint64_t idx, uint32_t crc);

/* A CPU decode's verdict on sample idx's whole file, of CRC32C crc: good
 * (recorded) or not (forgotten: it is judged again when met again). */
void gf_jpeg_checked_record(gf_jpeg_checked *t, uint64_t idx, uint32_t crc,
                            bool good);

#endif /* GF_PIPELINE_JPEG_CHECKED_H */
