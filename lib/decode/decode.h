/* Internal interface between the codec dispatcher (codec.c: gf_decode,
 * gf_encode, gf_decode_shape, gf_decode_filtered) and the codecs (png.c,
 * jpeg.c, zstd.c, grad.c, loco.c, convert.c), and what both use (opts.c).
 * Calls go one way: the dispatcher calls the codecs, never the reverse.
 * png.c is the only file that includes png.h, jpeg.c the only one that
 * includes jpeglib.h, zstd.c the only one that includes zstd.h.
 *
 * Every function here may be called from any thread: the only state they
 * keep is per thread (zstd contexts, the scratch buffer of
 * common/scratch.h), released when the thread exits. */
#ifndef GF_DECODE_H
#define GF_DECODE_H

#include "common/common.h"

/* PNG: shape the file decodes to under opts (NULL: defaults), reading only
 * the chunks before the image data. Returns 0, GF_EDECODE, GF_ELIMIT or
 * -EINVAL. */
int gf_png_shape(const void *src, size_t len, const gf_decode_opts *opts,
                 gf_shape *out);
/* PNG: decode into dst (dst_cap bytes) straight, rows written in place.
 * Returns 0, GF_EDECODE (libpng's reason in the message), GF_ELIMIT,
 * GF_ESHAPE (dst_cap too small), -ENOMEM or -EINVAL. */
int gf_png_decode(const void *src, size_t len, const gf_decode_opts *opts,
                  void *dst, size_t dst_cap, gf_shape *out);

/* PNG: encode pixels of `shape` (u8 or u16, 1-4 channels) as a PNG file in
 * a malloc'd buffer (*dst owned by the caller). level: zlib level 0-9
 * (negative: libpng's default). Used by `gpufeed synth` and the tests. */
int gf_png_encode(const void *pixels, const gf_shape *shape, int level,
                  void **dst, size_t *dst_len);

/* JPEG (jpeg.c, the only includer of jpeglib.h), decoded by libjpeg-turbo
 * (8-bit samples, libjpeg's default islow IDCT and fancy upsampling, so a
 * full decode equals djpeg's; block smoothing off, which changes only a
 * progressive file that ends before its last refinement scan). Output: the
 * image's own channels (1 for gray, 3 for YCbCr or RGB), converted to
 * opts->channels by gf_convert_pixels' rules; dtype always U8 (keep_16bit
 * does not apply). Baseline, extended, progressive and arithmetic-coded
 * files are decoded. Refused with GF_EUNSUPPORTED and the reason: 12-bit
 * (and any non-8-bit) JPEGs, lossless JPEGs, CMYK/YCCK and other colour
 * spaces (no colour management here: converting CMYK to RGB needs the
 * profile to be right). The EXIF orientation is ignored, as torchvision's
 * decode_jpeg does by default: pixels come in stored order. Every libjpeg
 * warning (premature end of data, corrupt Huffman data, extraneous bytes) is
 * an error (GF_EDECODE with libjpeg's words): no pixels are delivered as
 * good from a damaged file. (One is let through: an unknown JFIF revision
 * number, which says nothing about the pixels.) The dimensions meet
 * opts->limits before jpeg_start_decompress allocates anything, and
 * libjpeg's own memory is bounded by 2 x limits.max_bytes + 16 MiB (a
 * progressive or multi-scan file buffers its whole coefficient image, 2
 * bytes a sample): beyond it the decode fails with GF_ELIMIT. */

/* Shape the JPEG decodes to under opts (NULL: defaults), from its header
 * only. Returns 0, GF_EDECODE, GF_ELIMIT, GF_EUNSUPPORTED or -EINVAL. */
int gf_jpeg_shape(const void *src, size_t len, const gf_decode_opts *opts,
                  gf_shape *out);
/* Full decode into dst (dst_cap bytes), as gf_png_decode. Reads the file
 * to its end (EOI): damage after the last row is an error too. Returns 0,
 * GF_EDECODE, GF_ELIMIT, GF_EUNSUPPORTED, GF_ESHAPE (dst_cap too small),
 * -ENOMEM or -EINVAL. */
int gf_jpeg_decode(const void *src, size_t len, const gf_decode_opts *opts,
                   void *dst, size_t dst_cap, gf_shape *out);

/* Checks the whole file as a full decode would, without making pixels:
 * the header and the limits as gf_jpeg_shape, then every scan's
 * entropy-coded data consumed into DCT coefficients (libjpeg's
 * buffered-image mode with no output pass: the decoder is set up as for
 * pixels, but no inverse DCT, upsampling or colour conversion runs) and
 * on to the EOI marker, libjpeg's warnings taken as errors. A file passes
 * exactly when gf_jpeg_decode would decode it (the stages skipped detect
 * nothing in the data), at a fraction of its time: what a JPEG
 * decoder that does not detect damage inside the image data (the GPU's
 * JPEG engines) is given only after (`gpufeed index --verify`). Memory: the
 * coefficient image, 2 bytes a sample, within the bound above. *out (may
 * be NULL) gets the shape gf_jpeg_decode would give. Returns 0,
 * GF_EDECODE, GF_ELIMIT, GF_EUNSUPPORTED, -ENOMEM or -EINVAL. */
int gf_jpeg_check(const void *src, size_t len, const gf_decode_opts *opts,
                  gf_shape *out);

typedef struct gf_jpeg_region {
  uint32_t y, x, h, w; /* the window wanted, in full-size pixels, inside the
                          image, h,w >= 1 */
  uint32_t denom;      /* 1, 2, 4 or 8: decode at scale 1/denom (libjpeg's
                          scaled IDCT) */
  bool to_end;         /* read on past the window to the EOI marker (the
                          rows below it made at the window's scale and
                          columns, then dropped): the file then passes
                          exactly when a full decode would (gf_jpeg_check's
                          verdict) */
} gf_jpeg_region;

/* Decodes only what covers the window at scale 1/denom: rows [y0, y1) and
 * columns [x0, x1) of the scaled image (scaled size = ceil(full/denom) per
 * axis, as libjpeg's output_width/height), where y0 = y / denom,
 * y1 = min(ceil((y + h) / denom), scaled height), same for x; written
 * tightly (HWC, rows of (x1-x0)*channels bytes) into dst. *out gets
 * (y1-y0) x (x1-x0) x channels, *y0 and *x0 the region's top-left in scaled
 * pixels. Rows above are skipped (jpeg_skip_scanlines), rows below never
 * decoded, columns outside cropped (jpeg_crop_scanline, widened to iMCU
 * boundaries and by the upsampler's one-sample context; only the wanted
 * columns are copied out; files with a component subsampled more than 2x
 * on an axis are decoded full width). The pixels equal those at the same place
 * in a full decode at that scale. Only the data up to the window's last row is
 * read, so damage below it goes unseen, unless r->to_end (then the
 * verdict is a full decode's). Returns what gf_jpeg_decode does;
 * -EINVAL also for a window outside the image or a bad denom. */
int gf_jpeg_decode_region(const void *src, size_t len,
                          const gf_decode_opts *opts, const gf_jpeg_region *r,
                          void *dst, size_t dst_cap, gf_shape *out,
                          uint32_t *y0, uint32_t *x0);

/* The largest denom in {1, 2, 4, 8} with floor(wh / denom) >= out_h and
 * floor(ww / denom) >= out_w; 1 when none. */
uint32_t gf_jpeg_pick_denom(uint32_t wh, uint32_t ww, uint32_t out_h,
                            uint32_t out_w);

/* Encodes 8-bit gray or RGB pixels (1 or 3 channels; 2 and 4 drop alpha;
 * U16 refused with -EINVAL) as a baseline JPEG, quality 1-100, 4:2:0 for
 * RGB, into a malloc'd buffer (*dst owned by the caller, freed with
 * free()). For `gpufeed synth` and the tests. Returns 0, -EINVAL or
 * -ENOMEM. Any thread. */
int gf_jpeg_encode(const void *pixels, const gf_shape *shape, int quality,
                   void **dst, size_t *dst_len);

/* What gf_jpeg_encode_ex can vary, for the tests (the defaults of
 * gf_jpeg_encode are {GF_JPEG_420, false, false, 0}). */
enum {
  GF_JPEG_420 = 0,
  GF_JPEG_422 = 1,
  GF_JPEG_444 = 2,
  /* Rare layouts, chroma 1x1 and luma sampled as named (4:1:1 is 41). */
  GF_JPEG_41 = 3,
  GF_JPEG_42 = 4,
  GF_JPEG_24 = 5,
  GF_JPEG_14 = 6,
  GF_JPEG_31 = 7,
  GF_JPEG_SUBSAMPLINGS = 8
};
typedef struct gf_jpeg_enc_opts {
  int subsampling;  /* GF_JPEG_420 .. GF_JPEG_31, for RGB input */
  bool progressive; /* libjpeg's simple progression script */
  bool arithmetic;  /* arithmetic coding instead of Huffman */
  int cmyk;         /* 1: 4-channel input stored as CMYK, 2: as YCCK (files
                       the decoder refuses); 0: alpha dropped */
} gf_jpeg_enc_opts;
int gf_jpeg_encode_ex(const void *pixels, const gf_shape *shape, int quality,
                      const gf_jpeg_enc_opts *eo, void **dst, size_t *dst_len);

/* zstd: compress src into a malloc'd buffer (*dst owned by the caller).
 * level: any zstd level (ZSTD_minCLevel()..ZSTD_maxCLevel()), else -EINVAL.
 * The frame records its content size. */
int gf_zstd_compress(const void *src, size_t len, int level, void **dst,
                     size_t *dst_len);
/* zstd: decompress a frame of exactly `want` decoded bytes into dst. The
 * frame header's content size (when present) is checked against `want`
 * before any work: a mismatch or a frame that would overrun is GF_EDECODE.
 * Bytes after the frame are GF_EDECODE too. Uses a per-thread context. */
int gf_zstd_decompress(const void *src, size_t len, void *dst, size_t want);
/* zstd: the checks gf_zstd_decompress makes before decompressing (one
 * whole frame spanning len bytes, content size `want` or unknown), without
 * decompressing. Returns 0 or GF_EDECODE. */
int gf_zstd_check_frame(const void *src, size_t len, size_t want);

/* Gradient filter over an HxW image of `bpp` bytes per pixel, in place:
 * d = p - left - up + upleft (mod 256, per byte; missing neighbours are 0).
 * Its inverse is a 2-D prefix sum mod 256. bpp is channels x bytes per
 * sample (1 to 8). */
void gf_grad_filter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp);
void gf_grad_unfilter(uint8_t *px, uint32_t h, uint32_t w, uint32_t bpp);
/* The portable scalar inverse that gf_grad_unfilter uses where no vector
 * version applies; exported so the tests can hold both to the same
 * results. */
void gf_grad_unfilter_generic(uint8_t *px, uint32_t h, uint32_t w,
                              uint32_t bpp);

/* loco (loco.c; the format and arithmetic in decode/loco_band.h): 8-bit
 * images of 1 to 4 channels, HWC. Encode into a malloc'd record (*dst
 * owned by the caller) in bands of band_rows rows (1-255;
 * GF_LOCO_BAND_ROWS is the default). Returns 0, -EINVAL or -ENOMEM. */
int gf_loco_encode(const uint8_t *px, uint32_t h, uint32_t w, uint32_t c,
                   uint32_t band_rows, void **dst, size_t *dst_len);
/* The record's structure for an h x w x c image: header, band table and
 * length (not the streams). Returns 0, GF_EDECODE or GF_EUNSUPPORTED (a
 * later version; a shape loco does not code). */
int gf_loco_check(const void *src, size_t len, uint32_t h, uint32_t w,
                  uint32_t c);
/* Decodes the whole record into dst (h * w * c bytes), after
 * gf_loco_check. Returns 0 or what gf_loco_check returns, or GF_EDECODE
 * naming the damaged band. */
int gf_loco_decode(const void *src, size_t len, uint32_t h, uint32_t w,
                   uint32_t c, uint8_t *dst);

/* Converts `n` pixels of `src_c` channels to `dst_c` channels (1, 2, 3, 4),
 * 8-bit: gray->RGB replicates, RGB->gray is BT.601 luma rounded
 * ((77 R + 150 G + 29 B + 128) >> 8), alpha is added as 255 or dropped.
 * src and dst must not overlap. */
void gf_convert_channels_u8(const uint8_t *src, uint32_t src_c, uint8_t *dst,
                            uint32_t dst_c, size_t n);
/* The same for 16-bit samples in host byte order (alpha added as 65535,
 * the same luma weights). No alignment is required of src or dst. */
void gf_convert_channels_u16(const void *src, uint32_t src_c, void *dst,
                             uint32_t dst_c, size_t n);
/* Reduces n 16-bit samples (host order, any alignment) to 8 bits exactly as
 * libpng's png_set_scale_16 does: (v * 255 + 32895) >> 16, the rounded
 * v * 255 / 65535. dst may be src itself (it never runs ahead of src). */
void gf_scale16_to_u8(const void *src, uint8_t *dst, size_t n);
/* Converts n pixels between shapes `in` and `out` (channels, and u16 -> u8
 * when in is U16 and out is U8): first the 16 -> 8 bit reduction, then the
 * channel conversion, so every codec gives the same pixels for a request.
 * out U16 requires in U16. src and dst must not overlap. */
void gf_convert_pixels(const void *src, const gf_shape *in, void *dst,
                       const gf_shape *out, size_t n);

/* ---- Options (opts.c), for the dispatcher and the codecs -------------- */

/* Copies *in (NULL: defaults) into *out after the checks every decode entry
 * point makes: struct_size, reserved fields zero, channels 0-4. Returns 0 or
 * -EINVAL with context. */
int gf_decode_opts_resolve(const gf_decode_opts *in, gf_decode_opts *out);
/* The shape a sample stored as `stored` decodes to under opts: channels as
 * requested (0: stored), U16 only when stored U16 and keep_16bit. */
gf_shape gf_decode_out_shape(const gf_shape *stored, const gf_decode_opts *o);

/* ---- For the loader (codec.c) ----------------------------------------- */

/* Decodes a gradzstd sample but leaves it gradient-filtered, for a
 * consumer that undoes the filter itself (the GPU transform does it in the
 * same pass as the conversion): zstd only, exactly gf_shape_bytes(stored)
 * bytes into dst (dst_cap at least that), with the checks of
 * gf_zstd_decompress. The pixels are then those of `stored`, filtered:
 * no channel or bit-depth conversion applies. Returns 0, GF_EDECODE,
 * GF_ESHAPE (dst_cap too small) or -EINVAL (not a gradzstd sample, NULL
 * argument). Any thread. */
int gf_decode_filtered(int codec, const void *src, size_t src_len,
                       const gf_shape *stored, void *dst, size_t dst_cap);

/* Checks a loco record that a GPU will decode (its header, band table and
 * length against the stored shape: decode/loco_band.h's layout; not its
 * streams) and gives its length and band count. With exact, the record
 * is src_len bytes; else it starts src and ends within src_len bytes.
 * Returns 0, GF_EDECODE, GF_EUNSUPPORTED or -EINVAL (not loco, not
 * 8-bit). Any thread. */
int gf_decode_gpu_record(int codec, const void *src, size_t src_len,
                         bool exact, const gf_shape *stored, uint32_t *len,
                         uint32_t *bands);

/* ---- The codec table ---------------------------------------------------
 * Each codec is one entry, defined in its own file and registered in one
 * place (codec.c's table, by id): its name, what it can do, and its calls.
 * The dispatcher (gf_decode, gf_decode_shape, gf_encode, ...) and the
 * loader go through the entry, never through the codec's id. */
enum {
  /* A file stored as it is (PNG, JPEG): it carries its own shape, read
   * from its header, and is decoded by file_decode. Else the stored bytes
   * code pixels of the record's shape (check, unpack). */
  GF_CODEC_CAP_FILE = 1u << 0,
  /* The stored bytes are the pixels themselves (raw): converted straight
   * from them, never unpacked into a scratch buffer first. */
  GF_CODEC_CAP_PIXELS = 1u << 1,
  /* The GPU transform can run the decode's last step (gradzstd's
   * unfilter): unpack_filtered leaves the pixels filtered. */
  GF_CODEC_CAP_GPU_UNFILTER = 1u << 2,
  /* The GPU decodes its records whole (loco): gpu_record checks one. */
  GF_CODEC_CAP_GPU_RECORD = 1u << 3,
  /* nvJPEG decodes it on the GPU (JPEG). */
  GF_CODEC_CAP_NVJPEG = 1u << 4,
  /* A window of it can be decoded alone, at a reduced scale
   * (gf_jpeg_decode_region). */
  GF_CODEC_CAP_REGION = 1u << 5,
};

typedef struct gf_codec_ops {
  int id;           /* gf_codec: the value stored in dataset records */
  const char *name; /* "raw", "png", ... (gf_codec_name, --codec) */
  uint32_t caps;    /* GF_CODEC_CAP_* */
  /* GF_CODEC_CAP_FILE: the shape under o from the header, and the decode
   * into dst (cap bytes) converted under o. */
  int (*file_shape)(const void *src, size_t len, const gf_decode_opts *o,
                    gf_shape *out);
  int (*file_decode)(const void *src, size_t len, const gf_decode_opts *o,
                     void *dst, size_t cap, gf_shape *out);
  /* Pixel codecs: the cheap checks of the bytes against the stored shape
   * (NULL: none), and the decode of exactly n = gf_shape_bytes(stored)
   * bytes of the stored shape into dst. */
  int (*check)(const void *src, size_t len, const gf_shape *stored);
  int (*unpack)(const void *src, size_t len, const gf_shape *stored,
                uint8_t *dst, size_t n);
  /* GF_CODEC_CAP_GPU_UNFILTER: unpack without the last step. */
  int (*unpack_filtered)(const void *src, size_t len, const gf_shape *stored,
                         uint8_t *dst, size_t n);
  /* GF_CODEC_CAP_GPU_RECORD: gf_decode_gpu_record's check. */
  int (*gpu_record)(const void *src, size_t len, bool exact,
                    const gf_shape *stored, uint32_t *rec_len, uint32_t *bands);
  /* Encodes pixels of `shape` at `level` (0: the codec's default) into a
   * malloc'd buffer; NULL for a file codec (the builder stores files as
   * they are). */
  int (*encode)(const void *pixels, const gf_shape *shape, int level,
                void **dst, size_t *dst_len);
} gf_codec_ops;

/* The entry of codec id, or NULL when no codec has that id. Any thread. */
const gf_codec_ops *gf_codec_ops_of(int codec);
/* Its capabilities (0 for an unknown id). */
static inline uint32_t gf_codec_caps(int codec) {
  const gf_codec_ops *c = gf_codec_ops_of(codec);
  return c ? c->caps : 0;
}

/* The entries (raw.c, png.c, zstd.c, grad.c, jpeg.c, loco.c). */
extern const gf_codec_ops gf_codec_raw, gf_codec_png, gf_codec_zstd,
    gf_codec_gradzstd, gf_codec_jpeg, gf_codec_loco;

#endif
