/* JPEG test folders for the loader and builder tests: JPEG and PNG files
 * written with the library's own encoders (gf_jpeg_encode, gf_png_encode),
 * crops of the real photographs in ../shared/data/photos when present, and
 * the reference a windowed decode is held to: the file decoded whole, then
 * the CPU transform of the same window (gf_xform_ref). */
#ifndef GF_JPEG_FIXTURE_H
#define GF_JPEG_FIXTURE_H

#include "testutil.h"

/* Writes an h x w x c (1 or 3) JPEG of the photo-like test pattern from
 * seed at `quality` to path (written beside and renamed). 0 or < 0. */
int jfix_write_jpeg(const char *path, uint32_t h, uint32_t w, uint32_t c,
                    uint64_t seed, int quality);
/* The same as a PNG (c 1..4). */
int jfix_write_png(const char *path, uint32_t h, uint32_t w, uint32_t c,
                   uint64_t seed);
/* Encodes pixels (h x w x c, u8) as a JPEG at quality and writes it. */
int jfix_write_jpeg_px(const char *path, const uint8_t *px, uint32_t h,
                       uint32_t w, uint32_t c, int quality);

/* Makes dir/<class>/<name>.jpg from random crops (sides lo..hi) of the
 * photographs in ../shared/data/photos, at quality 90, n files in
 * `classes` classes. Returns the count made, or 0 when the photos are not
 * there (the caller skips that part). */
int jfix_photo_folder(const char *dir, uint32_t n, uint32_t classes,
                      uint32_t lo, uint32_t hi, uint64_t seed);

/* mkdir that accepts an existing folder; 0 or -errno. */
int jfix_mkdir(const char *path);

/* The reference output of sample `index` (file `path`) in `epoch` under t
 * (height/width set): the file decoded whole under o, then gf_xform_ref of
 * that one sample with gf_xform_sample_init's window. out: oh*ow*c
 * elements of t->out_dtype; *c the channels. 0 or < 0. */
int jfix_reference(const char *path, const gf_transform *t, uint64_t epoch,
                   uint64_t index, const gf_decode_opts *o, void *out,
                   size_t cap, uint32_t *c);

/* FNV-1a over bytes, chained from h. */
uint64_t jfix_hash(uint64_t h, const void *p, size_t n);
/* The hash of a batch's output (host mode): epoch, index, count, indices,
 * labels and the output bytes. */
uint64_t jfix_batch_hash(const gf_batch *b);

#endif
