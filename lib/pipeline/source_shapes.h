/* The largest sample of a source, for sizing a loader: a dataset's index
 * knows every shape; an image folder's files are sized from their headers
 * (a PNG's IHDR and the chunks before the image data, a JPEG's frame
 * header), read in parallel. */
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
  uint64_t jpeg;         /* JPEG samples: a dataset's jpeg records, a
                            folder's files whose JPEG header counted */
  uint64_t raw;          /* a dataset's raw records (a folder: 0) */
  uint64_t loco;         /* a dataset's loco records (a folder: 0) */
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

/* A folder whose storage's listing told every file's size, or a packed
 * source (tar shards: its index told every extent), when the caller bounds
 * the decoded sizes itself (a remote folder under a
 * transform of fixed output size: reading each file's header would cost a
 * request a file): *out from the listing alone, no file read. max_stored:
 * the largest file; jpeg: the files named .jpg or .jpeg; max_decoded and
 * max_native 0 (the caller's bound); counted 0. Returns 0, or -ENOENT
 * when some file's size is not known (then scan). Any thread. */
int gf_source_extent_listed(const gf_source *src, const gf_decode_opts *opts,
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

/* A JPEG's frame header (SOFn), as gf_jpeg_header_scan finds it. */
typedef struct gf_jpeg_frame {
  uint8_t marker;     /* 0xC0 .. 0xCF: the SOF's kind */
  uint8_t precision;  /* bits a sample */
  uint8_t components;
  uint32_t height, width;
} gf_jpeg_frame;

/* Walks a JPEG's segments from the marker at file offset *pos (2: after
 * the SOI) to its frame header, over the bytes p[0 .. len), which are the
 * file's from offset `base` on. Returns 0 with *out (the SOF's fields; *pos
 * at its marker), 1 when the bytes run out first (*pos: the file offset of
 * the next marker, fill bytes skipped; read on from there with base =
 * *pos), or GF_EDECODE when the bytes are not the segments of a JPEG
 * before its frame (no marker where one must be, a scan or EOI first). A
 * segment length below 2 is taken as 2, as libjpeg takes it. Any
 * thread. */
int gf_jpeg_header_scan(const uint8_t *p, size_t len, uint64_t base,
                        uint64_t *pos, gf_jpeg_frame *out);
/* The decoded shape a frame header promises under opts (channels as opts
 * asks, else 1 or 3: the image's own; dtype U8), *native without the
 * channel conversion. Returns 0, or GF_EUNSUPPORTED for what is not sized
 * from a header here (lossless or hierarchical frames, precision other
 * than 8, component counts other than 1 and 3, a height of 0 left to a DNL
 * marker): such a file does not count (see gf_source_extent_scan). Any
 * thread. */
int gf_jpeg_frame_shape(const gf_jpeg_frame *f, const gf_decode_opts *opts,
                        gf_shape *out, gf_shape *native);

#endif /* GF_PIPELINE_SOURCE_SHAPES_H */
