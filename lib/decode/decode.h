/* Internal interface between the codec dispatcher (codec.c: gf_decode,
 * gf_encode, gf_decode_shape) and the codecs. png.c is the only file that
 * includes png.h, zstd.c the only one that includes zstd.h. */
#ifndef GF_DECODE_H
#define GF_DECODE_H

#include "common/common.h"

/* PNG: shape the file decodes to under opts (no pixel work). */
int gf_png_shape(const void *src, size_t len, const gf_decode_opts *opts,
                 gf_shape *out);
/* PNG: decode into dst (dst_cap bytes) straight, rows written in place. */
int gf_png_decode(const void *src, size_t len, const gf_decode_opts *opts,
                  void *dst, size_t dst_cap, gf_shape *out);

/* PNG: encode pixels of `shape` (u8 or u16, 1-4 channels) as a PNG file in
 * a malloc'd buffer (*dst owned by the caller). level: zlib level 0-9
 * (negative: libpng's default). Used by `gpufeed synth` and the tests. */
int gf_png_encode(const void *pixels, const gf_shape *shape, int level,
                  void **dst, size_t *dst_len);

/* zstd: compress src into a malloc'd buffer (*dst owned by the caller). */
int gf_zstd_compress(const void *src, size_t len, int level, void **dst,
                     size_t *dst_len);
/* zstd: decompress a frame of exactly `want` decoded bytes into dst. The
 * frame header's content size (when present) is checked against `want`
 * before any work: a mismatch or a frame that would overrun is GF_EDECODE.
 * Uses a per-thread context. */
int gf_zstd_decompress(const void *src, size_t len, void *dst, size_t want);

/* Gradient filter over an HxW image of `bpp` bytes per pixel, in place:
 * d = p - left - up + upleft (mod 256, per byte; missing neighbours are 0).
 * Its inverse is a 2-D prefix sum mod 256. */
void gf_grad_filter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp);
void gf_grad_unfilter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp);

/* Converts `n` pixels of `src_c` channels to `dst_c` channels (1, 2, 3, 4),
 * 8-bit: gray->RGB replicates, RGB->gray is BT.601 luma rounded
 * ((77 R + 150 G + 29 B + 128) >> 8), alpha is added as 255 or dropped.
 * src and dst must not overlap. */
void gf_convert_channels_u8(const uint8_t *src, uint32_t src_c, uint8_t *dst,
                            uint32_t dst_c, size_t n);

#endif
