/* PNG decode and encode with libpng (the only file that includes png.h).
 *
 * Decoding reads from memory through a cursor, refuses oversized images
 * from the IHDR before libpng allocates anything, and writes rows straight
 * into the caller's buffer. libpng reports errors through longjmp: the error
 * callback keeps libpng's message, and the landing site turns it into a
 * GF_EDECODE with that reason; nothing is printed, nothing aborts. */
#include "decode/decode.h"
#include "common/scratch.h"

#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */

/* Ancillary chunks (text, ICC profiles) are skipped, so this only bounds
 * what libpng may allocate for a chunk it still reads (PLTE, tRNS) and
 * guards against hostile lengths. */
#define GF_PNG_CHUNK_MALLOC_MAX ((png_alloc_size_t)8 << 20)
#define GF_PNG_CHUNK_CACHE_MAX 64u

typedef struct png_job {
  png_structp png;
  png_infop info;
  const uint8_t *src;
  size_t len;
  size_t pos;
  gf_decode_opts opts;
  gf_shape native; /* what libpng's transforms give */
  gf_shape out;    /* what the caller gets */
  int passes;
  uint8_t *buf;    /* row or image scratch, freed by the caller of run */
  bool buf_is_scratch;
  bool oom;
  char msg[256];
} png_job;

static void job_error(png_structp png, png_const_charp msg) {
  png_job *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "unknown libpng error");
  /* libpng spells it "Out of memory" or "Out of Memory". */
  if (msg && strncasecmp(msg, "out of memory", 13) == 0)
    j->oom = true;
  png_longjmp(png, 1);
}

static void job_warning(png_structp png, png_const_charp msg) {
  /* Warnings concern chunks that do not change the pixels: silenced. */
  (void)png;
  (void)msg;
}

static void job_read(png_structp png, png_bytep out, size_t n) {
  png_job *j = png_get_io_ptr(png);
  if (n > j->len - j->pos)
    png_error(png, "unexpected end of the PNG data (truncated file)");
  memcpy(out, j->src + j->pos, n);
  j->pos += n;
}

/* PNG stores 16-bit samples big-endian; gf_dtype U16 is host order. */
static bool host_is_little_endian(void) {
  uint16_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  return first == 1;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static int job_failed(png_job *j) {
  /* The position goes in the words, not in the context's offset: it
   * counts from the sample's first byte, which is a file offset only when
   * the PNG is a file of its own. */
  if (j->oom)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory while decoding a PNG (at byte %zu of %zu)",
                   j->pos, j->len);
  return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "PNG decode failed at byte %zu of %zu (libpng: %s)", j->pos,
                 j->len, j->msg);
}

/* Checks the limits from the IHDR bytes themselves, before libpng sees the
 * file, so an image that claims 1 x 2^31 pixels is refused as too large
 * and nothing is allocated for it. A file whose start is not a well-formed
 * IHDR is left to libpng to diagnose. */
static int precheck_ihdr(const png_job *j) {
  static const uint8_t sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  const uint8_t *p = j->src;
  if (j->len < 33 || memcmp(p, sig, 8) != 0 || be32(p + 8) != 13 ||
      memcmp(p + 12, "IHDR", 4) != 0)
    return 0;
  gf_shape s = {be32(p + 20), be32(p + 16), 1, GF_DTYPE_U8};
  switch (p[25]) {
  case 0: s.channels = 1; break;
  case 2: s.channels = 3; break;
  case 3: s.channels = 3; break;
  case 4: s.channels = 2; break;
  case 6: s.channels = 4; break;
  default: return 0; /* libpng names the bad color type */
  }
  if (p[24] == 16 && j->opts.keep_16bit)
    s.dtype = GF_DTYPE_U16;
  if (j->opts.channels)
    s.channels = j->opts.channels;
  if (!s.width || !s.height)
    return 0; /* invalid, not too large: libpng says so */
  int rc = gf_limits_check(&j->opts.limits, &s, NULL, GF_NO_INDEX);
  return rc < 0 ? gf_fail_context(rc, NULL, GF_NO_INDEX, "PNG IHDR") : 0;
}

/* Reads the chunks before the image data, sets the transforms and computes
 * both shapes. May longjmp. */
static int job_header(png_job *j) {
  png_structp png = j->png;
  png_infop info = j->info;
  png_read_info(png, info);
  uint32_t w = png_get_image_width(png, info);
  uint32_t h = png_get_image_height(png, info);
  int depth = png_get_bit_depth(png, info);
  /* Palette -> RGB, tRNS -> alpha, gray < 8 bits -> 8 bits. */
  png_set_expand(png);
  if (depth == 16) {
    if (j->opts.keep_16bit) {
      if (host_is_little_endian())
        png_set_swap(png);
    } else {
      png_set_scale_16(png);
    }
  }
  j->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  int ch = png_get_channels(png, info);
  int bd = png_get_bit_depth(png, info);
  if (ch < 1 || ch > 4 || (bd != 8 && bd != 16))
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libpng transforms gave %d channels of %d bits (expected "
                   "1-4 channels of 8 or 16 bits)",
                   ch, bd);
  j->native = (gf_shape){h, w, (uint32_t)ch,
                         bd == 16 ? GF_DTYPE_U16 : GF_DTYPE_U8};
  j->out = j->native;
  if (j->opts.channels)
    j->out.channels = j->opts.channels;
  int rc = gf_limits_check(&j->opts.limits, &j->out, NULL, GF_NO_INDEX);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "PNG");
  size_t rowbytes = png_get_rowbytes(png, info);
  if (rowbytes != (size_t)w * (size_t)ch * (size_t)(bd / 8))
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libpng row of %zu bytes, expected %u x %d x %d", rowbytes,
                   w, ch, bd / 8);
  return 0;
}

/* Decodes the rows into dst. May longjmp. */
static int job_pixels(png_job *j, uint8_t *dst) {
  png_structp png = j->png;
  const gf_shape *n = &j->native, *o = &j->out;
  size_t bps = n->dtype == GF_DTYPE_U16 ? 2 : 1;
  size_t nstride = (size_t)n->width * n->channels * bps;
  size_t ostride = (size_t)o->width * o->channels * bps;
  /* From here on the header was fine: a benign error now is about the
   * image data (a bad zlib check value, extra data), and taking it as a
   * warning could hand back wrong pixels as good. */
  png_set_benign_errors(png, 0);
  if (n->channels == o->channels) {
    for (int pass = 0; pass < j->passes; pass++)
      for (uint32_t y = 0; y < n->height; y++)
        png_read_row(png, dst + (size_t)y * ostride, NULL);
  } else if (j->passes == 1) {
    j->buf = malloc(nstride);
    if (!j->buf)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for a %zu-byte PNG row", nstride);
    for (uint32_t y = 0; y < n->height; y++) {
      png_read_row(png, j->buf, NULL);
      gf_convert_pixels(j->buf, n, dst + (size_t)y * ostride, o, n->width);
    }
  } else {
    /* Interlaced passes revisit every row: the native image is needed
     * whole before its channels can be converted. Its size follows from
     * the checked dimensions (at most 4x the checked output). */
    j->buf = gf_scratch_get(nstride * n->height);
    if (!j->buf)
      return -ENOMEM;
    j->buf_is_scratch = true;
    for (int pass = 0; pass < j->passes; pass++)
      for (uint32_t y = 0; y < n->height; y++)
        png_read_row(png, j->buf + (size_t)y * nstride, NULL);
    gf_convert_pixels(j->buf, n, dst, o, (size_t)n->width * n->height);
  }
  return 0;
}

/* Everything libpng does for one call, under one setjmp. Only `j` (never
 * reassigned) is used after a longjmp. */
static int job_run(png_job *j, uint8_t *dst, size_t dst_cap) {
  if (setjmp(png_jmpbuf(j->png)))
    return job_failed(j);
  png_set_read_fn(j->png, j, job_read);
  png_set_user_limits(j->png, gf_limits_resolve(&j->opts.limits).max_width,
                      gf_limits_resolve(&j->opts.limits).max_height);
  png_set_chunk_malloc_max(j->png, GF_PNG_CHUNK_MALLOC_MAX);
  png_set_chunk_cache_max(j->png, GF_PNG_CHUNK_CACHE_MAX);
  /* All ancillary chunks but tRNS are skipped (IHDR, PLTE, tRNS, IDAT,
   * IEND are still handled): gpufeed wants the stored sample values, not
   * colour management, and skipping them saves time and memory. */
  png_set_keep_unknown_chunks(j->png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
  int rc = job_header(j);
  if (rc < 0 || !dst)
    return rc;
  size_t need = (size_t)gf_shape_bytes(&j->out);
  if (dst_cap < need)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "destination holds %zu bytes, the %ux%ux%u %s PNG needs "
                   "%zu",
                   dst_cap, j->out.height, j->out.width, j->out.channels,
                   j->out.dtype == GF_DTYPE_U16 ? "u16" : "u8", need);
  /* Missing IEND is accepted once every row is in: png_read_end is not
   * called, the last IDAT's CRC and the zlib stream end are checked as the
   * last row completes. */
  return job_pixels(j, dst);
}

static int png_read_common(const void *src, size_t len,
                           const gf_decode_opts *opts, uint8_t *dst,
                           size_t dst_cap, gf_shape *out) {
  png_job j;
  memset(&j, 0, sizeof j);
  int rc = gf_decode_opts_resolve(opts, &j.opts);
  if (rc < 0)
    return rc;
  if (!out || (!src && len))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "PNG decode: NULL argument");
  j.src = src;
  j.len = len;
  if ((rc = precheck_ihdr(&j)) < 0)
    return rc;
  j.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &j, job_error,
                                 job_warning);
  if (j.png)
    j.info = png_create_info_struct(j.png);
  if (!j.png || !j.info) {
    png_destroy_read_struct(j.png ? &j.png : NULL, NULL, NULL);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for libpng's read structures");
  }
  rc = job_run(&j, dst, dst_cap);
  png_destroy_read_struct(&j.png, &j.info, NULL);
  if (j.buf_is_scratch)
    gf_scratch_release(j.buf);
  else
    free(j.buf);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, NULL);
  *out = j.out;
  return 0;
}

int gf_png_shape(const void *src, size_t len, const gf_decode_opts *opts,
                 gf_shape *out) {
  return png_read_common(src, len, opts, NULL, 0, out);
}

int gf_png_decode(const void *src, size_t len, const gf_decode_opts *opts,
                  void *dst, size_t dst_cap, gf_shape *out) {
  if (!dst)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "PNG decode: NULL destination");
  return png_read_common(src, len, opts, dst, dst_cap, out);
}

/* ---- encode ------------------------------------------------------------ */

typedef struct png_wjob {
  png_structp png;
  png_infop info;
  uint8_t *buf;
  size_t len, cap;
  bool oom;
  char msg[256];
} png_wjob;

static void wjob_error(png_structp png, png_const_charp msg) {
  png_wjob *j = png_get_error_ptr(png);
  snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}

static void wjob_write(png_structp png, png_bytep data, size_t n) {
  png_wjob *j = png_get_io_ptr(png);
  if (n > j->cap - j->len) {
    size_t cap = j->cap ? j->cap : 4096;
    while (cap - j->len < n) {
      if (cap > SIZE_MAX / 2) {
        j->oom = true;
        png_error(png, "PNG output too large");
      }
      cap *= 2;
    }
    uint8_t *p = realloc(j->buf, cap);
    if (!p) {
      j->oom = true;
      png_error(png, "out of memory for the PNG output");
    }
    j->buf = p;
    j->cap = cap;
  }
  memcpy(j->buf + j->len, data, n);
  j->len += n;
}

static void wjob_flush(png_structp png) { (void)png; }

static int wjob_run(png_wjob *j, const uint8_t *px, const gf_shape *s,
                    int level) {
  if (setjmp(png_jmpbuf(j->png))) {
    if (j->oom)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "PNG encode: %s", j->msg);
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "PNG encode failed (libpng: %s)", j->msg);
  }
  static const int ctype[5] = {0, PNG_COLOR_TYPE_GRAY,
                               PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  size_t bps = s->dtype == GF_DTYPE_U16 ? 2 : 1;
  png_set_write_fn(j->png, j, wjob_write, wjob_flush);
  if (level >= 0)
    png_set_compression_level(j->png, level > 9 ? 9 : level);
  png_set_IHDR(j->png, j->info, s->width, s->height, (int)(8 * bps),
               ctype[s->channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(j->png, j->info);
  if (bps == 2 && host_is_little_endian())
    png_set_swap(j->png);
  size_t stride = (size_t)s->width * s->channels * bps;
  for (uint32_t y = 0; y < s->height; y++)
    png_write_row(j->png, px + (size_t)y * stride);
  png_write_end(j->png, NULL);
  return 0;
}

int gf_png_encode(const void *pixels, const gf_shape *shape, int level,
                  void **dst, size_t *dst_len) {
  if (!pixels || !shape || !dst || !dst_len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_png_encode: NULL argument");
  *dst = NULL;
  *dst_len = 0;
  if (!gf_shape_bytes(shape) || shape->width > PNG_UINT_31_MAX ||
      shape->height > PNG_UINT_31_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_png_encode: invalid shape %ux%ux%u dtype %u",
                   shape->height, shape->width, shape->channels,
                   shape->dtype);
  png_wjob j;
  memset(&j, 0, sizeof j);
  j.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &j, wjob_error,
                                  job_warning);
  if (j.png)
    j.info = png_create_info_struct(j.png);
  if (!j.png || !j.info) {
    png_destroy_write_struct(j.png ? &j.png : NULL, NULL);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for libpng's write structures");
  }
  int rc = wjob_run(&j, pixels, shape, level);
  png_destroy_write_struct(&j.png, &j.info);
  if (rc < 0) {
    free(j.buf);
    return rc;
  }
  *dst = j.buf;
  *dst_len = j.len;
  return 0;
}

const gf_codec_ops gf_codec_png = {
    .id = GF_CODEC_PNG,
    .name = "png",
    .caps = GF_CODEC_CAP_FILE,
    .file_shape = gf_png_shape,
    .file_decode = gf_png_decode,
};
