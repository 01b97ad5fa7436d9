/* The largest sample of a source, for sizing a loader: a dataset's index
 * knows every shape; a PNG folder's files are sized from their headers
 * (the IHDR and the chunks before the image data), read in parallel. */
#ifndef GF_PIPELINE_SOURCE_SHAPES_H
#define GF_PIPELINE_SOURCE_SHAPES_H

#include "common/common.h"
#include "pipeline/source.h"

/* What the largest samples of a source take. */
typedef struct gf_source_extent {
  uint64_t max_decoded;  /* bytes of the largest sample decoded under the
                            options (0: none counted) */
  uint64_t max_index;    /* folder: the file that needs max_decoded;
                            GF_NO_INDEX for a dataset or when none counted */
  uint64_t max_stored;   /* the largest stored sample (folder: file size) */
  uint64_t max_native;   /* the largest sample as its codec gives it before
                            any channel or bit-depth conversion: what a
                            decode's scratch can take */
  uint32_t max_channels; /* the most channels a decoded sample has */
  uint64_t counted;      /* samples that counted toward the sizes */
  uint64_t uncounted;    /* folder: files whose header did not count (not
                            a PNG, unreadable, beyond the limits): they fail
                            when loaded, under the error policy) */
} gf_source_extent;

/* Fills *out for src under opts. A dataset: gf_source_max_sizes's scan of
 * the index (max_native: the stored shapes, a png record's taken 16 bits
 * wide). A folder: every file's header, read with `threads` threads
 * (at least 1): a file is opened, its size taken, its first 4 KiB read
 * (further chunk headers only when the chunks before the image data run
 * past them), and its decoded size computed as libpng's transforms give it
 * (palette and tRNS expanded, bit depths below 8 raised to 8, 16 bits kept
 * only with keep_16bit, channels as opts asks). A header beyond the limits
 * or not a PNG does not count; with strict (the fail policy) the first such
 * file (in listing order) is read whole and, unless libpng reads its header
 * after all, fails the call with its error, the file named. max_channels:
 * a folder's is opts->channels, else 4 (a file may be rewritten with any
 * count). Returns 0, that error, or -ENOMEM/-EAGAIN (threads) with
 * context. */
int gf_source_extent_scan(const gf_source *src, const gf_decode_opts *opts,
                          uint32_t threads, bool strict,
                          gf_source_extent *out);

/* The decoded shape a PNG file's header promises under opts, from the
 * first `len` bytes of the file (at least the 33 of the signature and the
 * IHDR). *has_trns: 1 when a tRNS chunk was seen before the image data, 0
 * when the image data was reached without one, -1 when the bytes ran out
 * first (then *next is the offset of the next chunk to look at). The
 * shape assumes the tRNS answer given in *has_trns (-1: none). Returns 0,
 * or GF_EDECODE when the bytes are not a PNG header. Any thread. */
int gf_png_header_shape(const uint8_t *p, size_t len,
                        const gf_decode_opts *opts, gf_shape *out,
                        gf_shape *native, int *has_trns, uint64_t *next);

#endif /* GF_PIPELINE_SOURCE_SHAPES_H */
