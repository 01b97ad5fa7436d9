/* JPEG decode and encode with libjpeg-turbo's libjpeg API (the only file
 * that includes jpeglib.h). TurboJPEG 2.1's API is not used: it cannot
 * crop, and the loader decodes only the window a sample needs.
 *
 * libjpeg reports errors through error_exit: ours keeps libjpeg's message
 * and longjmps to the one landing site of the call, which turns it into a
 * gpufeed error. Warnings (emit_message at level -1: premature end of
 * data, corrupt Huffman data, extraneous bytes) take the same way, so a
 * damaged file is an error rather than gray pixels. Nothing is printed and
 * nothing calls exit(). The dimensions meet the limits between
 * jpeg_read_header and jpeg_start_decompress, before libjpeg allocates
 * anything that grows with the image; libjpeg's own memory is capped by
 * max_memory_to_use (libjpeg-turbo has no backing store, so a decode that
 * would need more fails, before allocating it). */
#include "decode/decode.h"
#include "common/scratch.h"

#include <limits.h> /* LONG_MAX */
#include <setjmp.h>
#include <stdio.h> /* FILE, which jpeglib.h uses without including it */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h> /* JERR_ codes: limits and unsupported files vs damage */

/* libjpeg's memory beyond the coefficient image of a progressive or
 * multi-scan file (which takes up to 2 x the decoded bytes): its tables and
 * row buffers, a few MiB at most for 65500-pixel rows. */
#define GF_JPEG_MEM_SLACK ((uint64_t)16 << 20)
/* Rows asked of jpeg_read_scanlines at a time (libjpeg-turbo gives at most
 * one row group, up to 16 rows, per call). */
#define GF_JPEG_ROWS 16u
/* The narrowest crop asked of jpeg_crop_scanline: at least two samples of
 * every component (4:1:1 included), or libjpeg-turbo switches a
 * one-sample-wide component to another upsampler and the pixels differ
 * from a full decode's. */
#define GF_JPEG_MIN_CROP 8u

typedef struct jpeg_fail {
  struct jpeg_error_mgr pub; /* first: libjpeg's err pointer is this */
  jmp_buf jmp;
  int code;     /* libjpeg's msg_code */
  bool warning; /* raised as a warning (emit_message level -1) */
  char msg[JMSG_LENGTH_MAX];
} jpeg_fail;

static void fail_exit(j_common_ptr c) {
  jpeg_fail *f = (jpeg_fail *)c->err;
  f->code = c->err->msg_code;
  c->err->format_message(c, f->msg);
  longjmp(f->jmp, 1);
}

static void fail_emit(j_common_ptr c, int level) {
  /* Levels 0 and up are trace messages. Of the warnings, only an unknown
   * JFIF revision number says nothing about the pixels. */
  if (level >= 0 || c->err->msg_code == JWRN_JFIF_MAJOR)
    return;
  ((jpeg_fail *)c->err)->warning = true;
  fail_exit(c);
}

static void fail_output(j_common_ptr c) { (void)c; }

static void fail_init(jpeg_fail *f) {
  jpeg_std_error(&f->pub);
  f->pub.error_exit = fail_exit;
  f->pub.emit_message = fail_emit;
  f->pub.output_message = fail_output;
}

/* ---- decode ------------------------------------------------------------ */

typedef struct jpeg_job {
  struct jpeg_decompress_struct d;
  jpeg_fail fail;
  const uint8_t *src;
  size_t len;
  gf_decode_opts opts;
  uint64_t mem_limit; /* libjpeg's max_memory_to_use */
  gf_shape native;    /* the full image, its own channels */
  gf_shape out;       /* what the caller gets */
  uint8_t *buf;       /* scratch rows (gf_scratch_get), or NULL */
} jpeg_job;

/* What a decode is asked: the header only (dst NULL), the whole image, or
 * a window at a scale. */
typedef struct jpeg_want {
  const gf_jpeg_region *r; /* NULL: the whole image at full size */
  uint8_t *dst;
  size_t dst_cap;
  uint32_t y0, x0; /* the window's top-left, scaled pixels (set by run) */
  bool check;      /* with dst NULL: every scan read, no pixels made */
} jpeg_want;

static uint64_t mem_limit(const gf_limits *lim) {
  uint64_t b = gf_limits_resolve(lim).max_bytes, m;
  if (!gf_mul_u64(b, 2, &m) || !gf_add_u64(m, GF_JPEG_MEM_SLACK, &m) ||
      m > (uint64_t)LONG_MAX)
    m = (uint64_t)LONG_MAX;
  return m;
}

static int job_failed(jpeg_job *j) {
  const jpeg_fail *f = &j->fail;
  size_t left = j->d.src ? j->d.src->bytes_in_buffer : 0;
  size_t pos = left <= j->len ? j->len - left : 0;
  switch (f->code) {
  case JERR_OUT_OF_MEMORY:
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory while decoding a JPEG (libjpeg: %s)",
                   f->msg);
  case JERR_NO_BACKING_STORE:
    return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the %ux%u JPEG needs more decoder memory than its limit "
                   "of %llu bytes (2 x the limit on decoded bytes + 16 MiB; "
                   "a progressive or multi-scan JPEG holds every DCT "
                   "coefficient, 2 bytes a sample)",
                   j->d.image_width, j->d.image_height,
                   (unsigned long long)j->mem_limit);
  case JERR_IMAGE_TOO_BIG: {
    gf_shape s = {j->d.image_height, j->d.image_width, 1, GF_DTYPE_U8};
    if (s.height && s.width &&
        gf_limits_check(&j->opts.limits, &s, NULL, GF_NO_INDEX) < 0)
      return gf_fail_context(GF_ELIMIT, NULL, GF_NO_INDEX, "JPEG SOF");
    return gf_fail(GF_ELIMIT, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG of %ux%u pixels is larger than libjpeg decodes "
                   "(libjpeg: %s)",
                   j->d.image_width, j->d.image_height, f->msg);
  }
  case JERR_BAD_PRECISION:
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%d-bit JPEG (data precision %d) is not supported: only "
                   "8-bit JPEGs are decoded",
                   j->d.data_precision, j->d.data_precision);
  case JERR_SOF_UNSUPPORTED:
  case JERR_ARITH_NOTIMPL:
  case JERR_NOT_COMPILED:
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "unsupported JPEG (libjpeg: %s)", f->msg);
  default:
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG decode failed at byte %zu of %zu (libjpeg%s: %s)",
                   pos, j->len, f->warning ? " warning, taken as an error" : "",
                   f->msg);
  }
}

/* Reads the header, refuses what is not decoded, sets the colour space and
 * checks the limits. May longjmp. */
static int job_header(jpeg_job *j) {
  j_decompress_ptr d = &j->d;
  jpeg_read_header(d, TRUE);
  uint32_t ch;
  switch (d->jpeg_color_space) {
  case JCS_GRAYSCALE:
    d->out_color_space = JCS_GRAYSCALE;
    ch = 1;
    break;
  case JCS_YCbCr:
  case JCS_RGB:
    d->out_color_space = JCS_RGB;
    ch = 3;
    break;
  case JCS_CMYK:
  case JCS_YCCK:
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s JPEG is not supported (only gray, YCbCr and RGB "
                   "JPEGs are decoded: CMYK needs colour management to "
                   "become RGB)",
                   d->jpeg_color_space == JCS_CMYK ? "CMYK" : "YCCK (CMYK)");
  default:
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG of %d components in an unknown colour space is not "
                   "supported (only gray, YCbCr and RGB)",
                   d->num_components);
  }
  if (d->data_precision != 8) /* a libjpeg built for 8 bits stops first */
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%d-bit JPEG is not supported: only 8-bit JPEGs are "
                   "decoded",
                   d->data_precision);
  /* The islow IDCT and fancy upsampling, whatever libjpeg's defaults: the
   * reference decoder's output. Block smoothing off: it only changes a
   * progressive file that ends before its last refinement scan, and
   * libjpeg-turbo 2.1 smooths a cropped window differently from the whole
   * image (a window would not equal its rectangle of the full decode). */
  d->dct_method = JDCT_ISLOW;
  d->do_fancy_upsampling = TRUE;
  d->do_block_smoothing = FALSE;
  d->quantize_colors = FALSE;
  j->native = (gf_shape){d->image_height, d->image_width, ch, GF_DTYPE_U8};
  j->out = j->native;
  if (j->opts.channels)
    j->out.channels = j->opts.channels;
  int rc = gf_limits_check(&j->opts.limits, &j->out, NULL, GF_NO_INDEX);
  return rc < 0 ? gf_fail_context(rc, NULL, GF_NO_INDEX, "JPEG") : 0;
}

/* The window in scaled pixels, from a region of the full-size image.
 * Returns 0 or -EINVAL. */
static int window(const jpeg_job *j, const gf_jpeg_region *r, uint32_t oh,
                  uint32_t ow, uint32_t win[4]) {
  const gf_shape *n = &j->native;
  if ((uint64_t)r->y + r->h > n->height || (uint64_t)r->x + r->w > n->width ||
      !r->h || !r->w)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG window %ux%u at (%u, %u) is empty or not inside the "
                   "%ux%u image",
                   r->h, r->w, r->y, r->x, n->height, n->width);
  uint32_t dn = r->denom;
  uint64_t y1 = ((uint64_t)r->y + r->h + dn - 1) / dn;
  uint64_t x1 = ((uint64_t)r->x + r->w + dn - 1) / dn;
  win[0] = r->y / dn;
  win[1] = r->x / dn;
  win[2] = (uint32_t)(y1 < oh ? y1 : oh);
  win[3] = (uint32_t)(x1 < ow ? x1 : ow);
  return 0;
}

/* Whether jpeg_crop_scanline gives the full decode's pixels for this file:
 * every component subsampled by 1 or 2 on each axis (4:4:4, 4:2:2, 4:2:0,
 * 4:4:0, gray). libjpeg-turbo 2.1 miscounts a component subsampled 4x2 or
 * 2x4 in a scaled, cropped decode (fixed in 3.0) and its columns come out
 * wrong; rarer layouts are decoded full width rather than trusted. */
static bool crop_safe(j_decompress_ptr d) {
  for (int i = 0; i < d->num_components; i++) {
    const jpeg_component_info *c = &d->comp_info[i];
    if (c->h_samp_factor <= 0 || c->v_samp_factor <= 0 ||
        d->max_h_samp_factor % c->h_samp_factor ||
        d->max_v_samp_factor % c->v_samp_factor ||
        d->max_h_samp_factor / c->h_samp_factor > 2 ||
        d->max_v_samp_factor / c->v_samp_factor > 2)
      return false;
  }
  return true;
}

/* Crops the scanlines to what columns [x0, x1) need: one column more on
 * each side (fancy upsampling reads one chroma sample beyond a pixel's
 * own) and at least GF_JPEG_MIN_CROP wide; jpeg_crop_scanline widens the
 * left edge to an iMCU boundary. Returns the first column delivered.
 * May longjmp. */
static uint32_t crop(j_decompress_ptr d, uint32_t x0, uint32_t x1) {
  uint32_t ow = d->output_width;
  if (!crop_safe(d))
    return 0;
  uint32_t a = x0 ? x0 - 1 : 0;
  uint32_t b = x1 < ow ? x1 + 1 : ow;
  if (b - a < GF_JPEG_MIN_CROP) {
    b = ow - a > GF_JPEG_MIN_CROP ? a + GF_JPEG_MIN_CROP : ow;
    a = b > GF_JPEG_MIN_CROP ? b - GF_JPEG_MIN_CROP : 0;
  }
  if (a == 0 && b == ow)
    return 0;
  JDIMENSION xoff = a, w = b - a;
  jpeg_crop_scanline(d, &xoff, &w);
  return xoff;
}

/* Decodes rows [y0, y1), columns [x0, x1) of the scaled image into dst.
 * May longjmp. */
static int job_pixels(jpeg_job *j, jpeg_want *w, const uint32_t win[4],
                      bool to_end) {
  j_decompress_ptr d = &j->d;
  jpeg_start_decompress(d);
  uint32_t y0 = win[0], x0 = win[1], y1 = win[2], x1 = win[3];
  uint32_t nc = (uint32_t)d->output_components;
  if (nc != j->native.channels)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libjpeg gives %u channels, expected %u", nc,
                   j->native.channels);
  uint32_t cx = crop(d, x0, x1);
  if (cx > x0 || cx + d->output_width < x1)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libjpeg cropped to columns %u-%u, %u-%u were wanted", cx,
                   cx + d->output_width, x0, x1);
  if (y0 && jpeg_skip_scanlines(d, y0) != y0)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libjpeg skipped fewer than %u rows", y0);
  gf_shape nrow = {1, x1 - x0, nc, GF_DTYPE_U8};
  gf_shape orow = {1, x1 - x0, j->out.channels, GF_DTYPE_U8};
  size_t nstride = (size_t)d->output_width * nc;
  size_t ostride = (size_t)(x1 - x0) * orow.channels;
  /* Rows go straight into dst when libjpeg's rows are the caller's. */
  bool direct = cx == x0 && d->output_width == x1 - x0 && nc == orow.channels;
  if (!direct && !(j->buf = gf_scratch_get(nstride * GF_JPEG_ROWS)))
    return -ENOMEM;
  JSAMPROW rows[GF_JPEG_ROWS];
  uint8_t *out = w->dst;
  for (uint32_t y = y0; y < y1;) {
    uint32_t n = y1 - y < GF_JPEG_ROWS ? y1 - y : GF_JPEG_ROWS;
    for (uint32_t k = 0; k < n; k++)
      rows[k] = direct ? out + (size_t)k * ostride : j->buf + k * nstride;
    JDIMENSION got = jpeg_read_scanlines(d, rows, n);
    if (got == 0 || got > n)
      return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "libjpeg returned %u of %u rows at row %u", got, n, y);
    for (uint32_t k = 0; !direct && k < got; k++) {
      const uint8_t *s = j->buf + k * nstride + (size_t)(x0 - cx) * nc;
      if (nc == orow.channels)
        memcpy(out + (size_t)k * ostride, s, ostride);
      else
        gf_convert_pixels(s, &nrow, out + (size_t)k * ostride, &orow,
                          nrow.width);
    }
    out += (size_t)got * ostride;
    y += got;
  }
  /* A whole decode reads on to the EOI marker, so damage in the file's
   * last bytes is seen too; a window stops at its last row unless asked
   * to read on: the rows below it are read into scratch and dropped
   * (only the window's columns, at its scale). Not jpeg_skip_scanlines:
   * a skip that reaches the image's end decodes nothing, and Debian 12's
   * libjpeg-turbo 2.1.5 loops for ever skipping the last rows of some
   * scaled, cropped decodes (found by test_jpeg_region). */
  if (to_end) {
    if (!j->buf && !(j->buf = gf_scratch_get(nstride * GF_JPEG_ROWS)))
      return -ENOMEM;
    for (uint32_t k = 0; k < GF_JPEG_ROWS; k++)
      rows[k] = j->buf + k * nstride;
    while (d->output_scanline < d->output_height) {
      JDIMENSION left = d->output_height - d->output_scanline;
      JDIMENSION n = left < GF_JPEG_ROWS ? left : GF_JPEG_ROWS;
      JDIMENSION got = jpeg_read_scanlines(d, rows, n);
      if (got == 0 || got > n)
        return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "libjpeg returned %u of %u rows past the window", got,
                       n);
    }
    jpeg_finish_decompress(d);
  }
  return 0;
}

/* Everything libjpeg does for one call, under one setjmp. Only `j` and `w`
 * (never reassigned) are used after a longjmp. */
static int job_run(jpeg_job *j, jpeg_want *w) {
  if (setjmp(j->fail.jmp))
    return job_failed(j);
  jpeg_create_decompress(&j->d);
  j->d.mem->max_memory_to_use = (long)j->mem_limit;
  jpeg_mem_src(&j->d, j->src, (unsigned long)j->len);
  int rc = job_header(j);
  if (rc == 0 && w->check) {
    /* The decoder set up as for pixels (buffered-image mode: whatever its
     * set-up refuses, such as fractional sampling, is refused here too),
     * then the entropy-coded data of every scan consumed, no output pass
     * made, on to the EOI. The coefficient image is held whole (2 bytes a
     * sample of every component, padded to whole blocks of 16): allowed
     * that much even where the caller asked for fewer channels than the
     * file has, so that what decodes checks too. Bounded by the limits
     * checked above (at most 3 components a pixel). */
    j_decompress_ptr d = &j->d;
    uint64_t need = ((uint64_t)d->image_height + 16) *
                        ((uint64_t)d->image_width + 16) *
                        (uint64_t)d->num_components * 2 +
                    GF_JPEG_MEM_SLACK;
    if (need > j->mem_limit)
      d->mem->max_memory_to_use =
          (long)(need < (uint64_t)LONG_MAX ? need : (uint64_t)LONG_MAX);
    d->buffered_image = TRUE;
    jpeg_start_decompress(d);
    int got;
    while ((got = jpeg_consume_input(d)) != JPEG_REACHED_EOI)
      if (got == JPEG_SUSPENDED) /* a memory source never suspends */
        return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "libjpeg suspended reading a JPEG held in memory");
    jpeg_finish_decompress(d);
    return 0;
  }
  if (rc < 0 || !w->dst)
    return rc;
  gf_jpeg_region full = {0, 0, j->native.height, j->native.width, 1, false};
  const gf_jpeg_region *r = w->r ? w->r : &full;
  j->d.scale_num = 1;
  j->d.scale_denom = r->denom;
  jpeg_calc_output_dimensions(&j->d);
  uint32_t oh = j->d.output_height, ow = j->d.output_width;
  uint32_t dn = r->denom;
  if ((uint64_t)oh * dn < j->native.height ||
      (uint64_t)(oh - 1) * dn >= j->native.height ||
      (uint64_t)ow * dn < j->native.width ||
      (uint64_t)(ow - 1) * dn >= j->native.width)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "libjpeg scales %ux%u by 1/%u to %ux%u, expected the "
                   "ceiling",
                   j->native.height, j->native.width, dn, oh, ow);
  uint32_t win[4];
  if ((rc = window(j, r, oh, ow, win)) < 0)
    return rc;
  j->out.height = win[2] - win[0];
  j->out.width = win[3] - win[1];
  size_t need = (size_t)gf_shape_bytes(&j->out);
  if (w->dst_cap < need)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "destination holds %zu bytes, the %ux%ux%u JPEG %s needs "
                   "%zu",
                   w->dst_cap, j->out.height, j->out.width, j->out.channels,
                   w->r ? "window" : "image", need);
  w->y0 = win[0];
  w->x0 = win[1];
  return job_pixels(j, w, win, !w->r || w->r->to_end);
}

static int jpeg_read_common(const void *src, size_t len,
                            const gf_decode_opts *opts, jpeg_want *w,
                            gf_shape *out) {
  jpeg_job j;
  memset(&j, 0, sizeof j);
  int rc = gf_decode_opts_resolve(opts, &j.opts);
  if (rc < 0)
    return rc;
  if (!out || (!src && len))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG decode: NULL argument");
  j.src = src;
  j.len = len;
  j.mem_limit = mem_limit(&j.opts.limits);
  fail_init(&j.fail);
  j.d.err = &j.fail.pub;
  rc = job_run(&j, w);
  jpeg_destroy_decompress(&j.d);
  if (j.buf)
    gf_scratch_release(j.buf);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, NULL);
  *out = j.out;
  return 0;
}

int gf_jpeg_shape(const void *src, size_t len, const gf_decode_opts *opts,
                  gf_shape *out) {
  jpeg_want w = {NULL, NULL, 0, 0, 0, false};
  return jpeg_read_common(src, len, opts, &w, out);
}

int gf_jpeg_check(const void *src, size_t len, const gf_decode_opts *opts,
                  gf_shape *out) {
  gf_shape s;
  jpeg_want w = {NULL, NULL, 0, 0, 0, true};
  return jpeg_read_common(src, len, opts, &w, out ? out : &s);
}

int gf_jpeg_decode(const void *src, size_t len, const gf_decode_opts *opts,
                   void *dst, size_t dst_cap, gf_shape *out) {
  if (!dst)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG decode: NULL destination");
  jpeg_want w = {NULL, dst, dst_cap, 0, 0, false};
  return jpeg_read_common(src, len, opts, &w, out);
}

int gf_jpeg_decode_region(const void *src, size_t len,
                          const gf_decode_opts *opts, const gf_jpeg_region *r,
                          void *dst, size_t dst_cap, gf_shape *out,
                          uint32_t *y0, uint32_t *x0) {
  if (!dst || !r || !y0 || !x0)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG region decode: NULL argument");
  if (r->denom != 1 && r->denom != 2 && r->denom != 4 && r->denom != 8)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG scale 1/%u: expected 1/1, 1/2, 1/4 or 1/8",
                   r->denom);
  jpeg_want w = {r, dst, dst_cap, 0, 0, false};
  int rc = jpeg_read_common(src, len, opts, &w, out);
  if (rc == 0) {
    *y0 = w.y0;
    *x0 = w.x0;
  }
  return rc;
}

uint32_t gf_jpeg_pick_denom(uint32_t wh, uint32_t ww, uint32_t out_h,
                            uint32_t out_w) {
  for (uint32_t d = 8; d > 1; d /= 2)
    if (wh / d >= out_h && ww / d >= out_w)
      return d;
  return 1;
}

/* ---- encode ------------------------------------------------------------ */

typedef struct jpeg_sink {
  struct jpeg_destination_mgr pub; /* first: libjpeg's dest is this */
  uint8_t *buf;
  size_t cap;
} jpeg_sink;

typedef struct jpeg_wjob {
  struct jpeg_compress_struct c;
  jpeg_fail fail;
  jpeg_sink sink;
  uint8_t *row; /* alpha-dropped row, or NULL */
} jpeg_wjob;

static void sink_init(j_compress_ptr c) {
  jpeg_sink *s = (jpeg_sink *)c->dest;
  s->cap = 1 << 16;
  if (!(s->buf = malloc(s->cap)))
    ERREXIT1(c, JERR_OUT_OF_MEMORY, 0);
  s->pub.next_output_byte = s->buf;
  s->pub.free_in_buffer = s->cap;
}

/* Called when the buffer is full: doubles it. */
static boolean sink_grow(j_compress_ptr c) {
  jpeg_sink *s = (jpeg_sink *)c->dest;
  uint8_t *p = s->cap <= SIZE_MAX / 2 ? realloc(s->buf, s->cap * 2) : NULL;
  if (!p)
    ERREXIT1(c, JERR_OUT_OF_MEMORY, 0);
  s->buf = p;
  s->pub.next_output_byte = p + s->cap;
  s->pub.free_in_buffer = s->cap;
  s->cap *= 2;
  return TRUE;
}

static void sink_term(j_compress_ptr c) { (void)c; }

static int wjob_run(jpeg_wjob *j, const uint8_t *px, const gf_shape *s,
                    int quality, const gf_jpeg_enc_opts *eo) {
  if (setjmp(j->fail.jmp))
    return gf_fail(j->fail.code == JERR_OUT_OF_MEMORY ? -ENOMEM
                                                      : GF_EINTERNAL,
                   NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG encode failed (libjpeg: %s)", j->fail.msg);
  j_compress_ptr c = &j->c;
  jpeg_create_compress(c);
  j->sink.pub.init_destination = sink_init;
  j->sink.pub.empty_output_buffer = sink_grow;
  j->sink.pub.term_destination = sink_term;
  c->dest = &j->sink.pub;
  bool cmyk = eo->cmyk && s->channels == 4;
  uint32_t jc = cmyk ? 4 : s->channels >= 3 ? 3 : 1; /* alpha dropped */
  c->image_width = s->width;
  c->image_height = s->height;
  c->input_components = (int)jc;
  c->in_color_space = cmyk ? JCS_CMYK : jc == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(c);
  if (cmyk)
    jpeg_set_colorspace(c, eo->cmyk == 2 ? JCS_YCCK : JCS_CMYK);
  jpeg_set_quality(c, quality, TRUE);
  c->dct_method = JDCT_ISLOW;
  if (jc == 3 && !cmyk) {
    /* Luma's factors; chroma stays 1x1. */
    static const int hv[GF_JPEG_SUBSAMPLINGS][2] = {
        {2, 2}, {2, 1}, {1, 1}, {4, 1}, {4, 2}, {2, 4}, {1, 4}, {3, 1}};
    c->comp_info[0].h_samp_factor = hv[eo->subsampling][0];
    c->comp_info[0].v_samp_factor = hv[eo->subsampling][1];
  }
  if (eo->progressive)
    jpeg_simple_progression(c);
  c->arith_code = eo->arithmetic ? TRUE : FALSE;
  jpeg_start_compress(c, TRUE);
  size_t stride = (size_t)s->width * s->channels;
  if (jc != s->channels && !(j->row = malloc((size_t)s->width * jc)))
    ERREXIT1(c, JERR_OUT_OF_MEMORY, 0);
  for (uint32_t y = 0; y < s->height; y++) {
    const uint8_t *src = px + (size_t)y * stride;
    if (j->row)
      gf_convert_channels_u8(src, s->channels, j->row, jc, s->width);
    /* libjpeg's row type is not const; it only reads the rows. */
    JSAMPROW row = j->row ? j->row : (JSAMPROW)(uintptr_t)src;
    jpeg_write_scanlines(c, &row, 1);
  }
  jpeg_finish_compress(c);
  return 0;
}

int gf_jpeg_encode_ex(const void *pixels, const gf_shape *shape, int quality,
                      const gf_jpeg_enc_opts *eo, void **dst,
                      size_t *dst_len) {
  if (!pixels || !shape || !dst || !dst_len)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_jpeg_encode: NULL argument");
  *dst = NULL;
  *dst_len = 0;
  static const gf_jpeg_enc_opts defaults = {GF_JPEG_420, false, false, 0};
  if (!eo)
    eo = &defaults;
  if (!gf_shape_bytes(shape) || shape->dtype != GF_DTYPE_U8 ||
      shape->width > JPEG_MAX_DIMENSION || shape->height > JPEG_MAX_DIMENSION)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_jpeg_encode: shape %ux%ux%u dtype %u (expected u8, "
                   "1-4 channels, at most %d pixels a side)",
                   shape->height, shape->width, shape->channels, shape->dtype,
                   (int)JPEG_MAX_DIMENSION);
  if (quality < 1 || quality > 100 || eo->subsampling < GF_JPEG_420 ||
      eo->subsampling >= GF_JPEG_SUBSAMPLINGS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_jpeg_encode: quality %d (expected 1-100) or "
                   "subsampling %d (expected 0-%d)",
                   quality, eo->subsampling, GF_JPEG_SUBSAMPLINGS - 1);
  jpeg_wjob j;
  memset(&j, 0, sizeof j);
  fail_init(&j.fail);
  j.c.err = &j.fail.pub;
  int rc = wjob_run(&j, pixels, shape, quality, eo);
  size_t len = j.sink.cap - j.sink.pub.free_in_buffer;
  jpeg_destroy_compress(&j.c);
  free(j.row);
  if (rc < 0) {
    free(j.sink.buf);
    return rc;
  }
  /* Give back the slack of the last doubling. */
  void *shrunk = realloc(j.sink.buf, len);
  *dst = shrunk ? shrunk : j.sink.buf;
  *dst_len = len;
  return 0;
}

int gf_jpeg_encode(const void *pixels, const gf_shape *shape, int quality,
                   void **dst, size_t *dst_len) {
  return gf_jpeg_encode_ex(pixels, shape, quality, NULL, dst, dst_len);
}

const gf_codec_ops gf_codec_jpeg = {
    .id = GF_CODEC_JPEG,
    .name = "jpeg",
    .caps = GF_CODEC_CAP_FILE | GF_CODEC_CAP_NVJPEG | GF_CODEC_CAP_REGION,
    .file_shape = gf_jpeg_shape,
    .file_decode = gf_jpeg_decode,
};
