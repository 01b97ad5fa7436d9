/* One 512-byte tar header checked on its own (tar_header.c), without
 * libarchive: for a reader that jumps to a member through an index and
 * wants to know that the header before the member's data is the one the
 * index promised (a shard rewritten since its index was made, an index
 * made for another shard).
 *
 * Threads: no shared state; any thread. */
#ifndef GF_FORMAT_TAR_HEADER_H
#define GF_FORMAT_TAR_HEADER_H

#include "common/common.h"

#define GF_TAR_BLOCK 512u

/* What a header says of its member. */
typedef struct gf_tar_header {
  char type;     /* the type flag ('0' or '\0': a regular file) */
  uint64_t size; /* its size field: octal, or base-256 (high bit set) */
  /* Its name field, with the ustar prefix before it where the magic is
   * POSIX's ("ustar\0") and the prefix is set: what the header itself
   * names (a GNU or PAX long name, in an earlier header, is not here). */
  char name[256 + 1 + 100 + 1];
} gf_tar_header;

/* Checks the header h[0 .. GF_TAR_BLOCK): its checksum field against the
 * sum of its bytes (unsigned, or signed as old tars wrote it) with that
 * field taken as spaces, and reads its type and size. Returns 0 with *out,
 * or -1 when h is not a valid header (an all-zero block, a bad checksum, a
 * size field that is not a number). */
int gf_tar_header_read(const uint8_t *h, gf_tar_header *out);

#endif
