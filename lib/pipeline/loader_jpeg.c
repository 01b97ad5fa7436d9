/* The loader's JPEG window decode: a JPEG sample under a transform with a
 * fixed output size is decoded as only the rectangle its window needs,
 * at the smallest DCT scale that keeps the window at least the size it is
 * resampled to (gf_jpeg_scale in gpufeed.h; the arithmetic in transform.h,
 * "Decoded regions"), and the statistics of every JPEG decode.
 *
 * The window is a pure function of (seed, epoch, index) and the image's
 * full size, which comes from the file's own frame header (a dataset's
 * record must agree with it), so it is known before any pixel is decoded;
 * finalize later expresses it in the decoded region's coordinates from the
 * gf_xform_region recorded here. */
#include "pipeline/loader_impl.h"
#include "pipeline/source_shapes.h"

#include <stdio.h>

bool jpeg_windows(const gf_loader_config *c) {
  /* A fixed output size: the transform cuts a window. With the DCT scaling
   * off and a cache, whole images are decoded and cached instead (the
   * output is the same bytes either way: gpufeed.h, gf_jpeg_scale). */
  return c->transform.height != 0 &&
         !(c->jpeg_scale == GF_JPEG_SCALE_OFF && c->cache_bytes != 0);
}

void jpeg_count(gf_loader *l, uint32_t denom, const gf_shape *decoded,
                uint32_t full_h, uint32_t full_w) {
  uint32_t k = denom == 8 ? 3 : denom == 4 ? 2 : denom == 2 ? 1 : 0;
  add(&l->jpeg_decoded[k], 1);
  add(&l->jpeg_px_decoded, (uint64_t)decoded->height * decoded->width);
  add(&l->jpeg_px_full, (uint64_t)full_h * full_w);
}

/* The image's full size from its frame header, checked against a
 * dataset's record. Returns 0, 1 (the header is not one sized here: the
 * caller decodes the whole file, which gives libjpeg's own verdict) or
 * GF_ESHAPE (the record disagrees). */
static int full_size(const gf_loader *l, const gf_src_sample *smp,
                     const uint8_t *buf, uint64_t len, uint32_t *h,
                     uint32_t *w) {
  uint64_t pos = 2;
  gf_jpeg_frame f;
  gf_shape out, native;
  if (len < 4 || buf[0] != 0xFF || buf[1] != 0xD8 ||
      gf_jpeg_header_scan(buf, (size_t)len, 0, &pos, &f) != 0 ||
      gf_jpeg_frame_shape(&f, &l->dopts, &out, &native) != 0)
    return 1;
  if (gf_source_is_dataset(l->src) && smp->stored.height &&
      (smp->stored.height != f.height || smp->stored.width != f.width))
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG is %ux%u, its record says %ux%u", f.width, f.height,
                   smp->stored.width, smp->stored.height);
  *h = f.height;
  *w = f.width;
  return 0;
}

int jpeg_decode_window(gf_loader *l, const gf_src_sample *smp, uint64_t epoch,
                       const uint8_t *buf, uint64_t len, uint8_t *dst,
                       gf_shape *shape, gf_xform_region *region) {
  region->denom = 0;
  uint32_t H = 0, W = 0;
  int rc = full_size(l, smp, buf, len, &H, &W);
  if (rc != 0)
    return rc; /* 1: decode it whole */
  const gf_transform *t = &l->cfg.transform;
  uint32_t y, x, rh, rw, want_h, want_w;
  gf_xform_region_rect(t, epoch, smp->index, H, W, &y, &x, &rh, &rw, &want_h,
                       &want_w);
  uint32_t d = 1;
  if (t->resize != GF_RESIZE_NONE && l->cfg.jpeg_scale == GF_JPEG_SCALE_AUTO)
    d = gf_jpeg_pick_denom(rh, rw, want_h, want_w);
  gf_jpeg_region r = {.y = y, .x = x, .h = rh, .w = rw, .denom = d};
  uint32_t y0, x0;
  rc = gf_jpeg_decode_region(buf, (size_t)len, &l->dopts, &r, dst,
                             (size_t)l->stride, shape, &y0, &x0);
  if (rc < 0)
    return rc;
  *region = (gf_xform_region){
      .full_h = H, .full_w = W, .denom = d, .y0 = y0, .x0 = x0};
  jpeg_count(l, d, shape, H, W);
  return 0;
}
