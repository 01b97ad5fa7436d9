/* The transform's contract on the CPU: output dtype sizes, the checks of a
 * configuration and of a batch's samples, the output shape rule and the
 * normalisation constants (see transform.h; the per-sample random choices
 * are in xform_draw.c, the CPU reference in xform_ref.c). */
#include "xform/transform.h"

#include "common/common.h"

#include <math.h> /* isfinite */

size_t gf_out_dtype_size(uint32_t dtype) {
  switch (dtype) {
  case GF_OUT_U8:
    return 1;
  case GF_OUT_F32:
    return 4;
  case GF_OUT_F16:
  case GF_OUT_BF16:
    return 2;
  default:
    return 0;
  }
}

static int bad_field(const char *what) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "invalid transform: %s", what);
}

int gf_xform_check(const gf_transform *t) {
  if (!t)
    return bad_field("the transform is NULL");
  if (t->out_dtype > GF_OUT_BF16)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: out_dtype %u is not a gf_out_dtype "
                   "(0 u8, 1 f32, 2 f16, 3 bf16)",
                   t->out_dtype);
  if (t->layout > GF_LAYOUT_NCHW)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: layout %u is not a gf_layout "
                   "(0 NHWC, 1 NCHW)",
                   t->layout);
  if (t->random_crop > 1 || t->hflip > 1)
    return bad_field("random_crop and hflip must be 0 or 1");
  if ((t->height == 0) != (t->width == 0))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: height %u and width %u must both be "
                   "set or both be 0 (the samples' own size)",
                   t->height, t->width);
  if (t->height > GF_XFORM_MAX_DIM || t->width > GF_XFORM_MAX_DIM)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: output %ux%u exceeds the %u-pixel "
                   "side limit",
                   t->height, t->width, GF_XFORM_MAX_DIM);
  if (t->pad > GF_XFORM_MAX_PAD)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: pad %u exceeds %u", t->pad,
                   GF_XFORM_MAX_PAD);
  for (int c = 0; c < 4; c++) {
    if (!isfinite(t->mean[c]) || !isfinite(t->std[c]) || t->std[c] < 0)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "invalid transform: channel %d has mean %g and std %g; "
                     "both must be finite and std not negative (0 means 1)",
                     c, (double)t->mean[c], (double)t->std[c]);
  }
  if (t->reserved[0])
    return bad_field("reserved[] must be 0");
  if (t->resize > GF_RESIZE_EXACT)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: resize %u is not a gf_resize_mode "
                   "(0 none, 1 random resized crop, 2 shorter side + "
                   "center crop, 3 exact)",
                   t->resize);
  if (t->resize == GF_RESIZE_NONE) {
    if (t->resize_size || t->no_antialias || t->scale[0] || t->scale[1] ||
        t->ratio[0] || t->ratio[1])
      return bad_field("resize_size, no_antialias, scale and ratio must be "
                       "0 without a resize mode");
    return 0;
  }
  if (t->height == 0)
    return bad_field("a resize mode needs the output height and width");
  if (t->random_crop || t->pad)
    return bad_field("random_crop and pad must be 0 with a resize mode "
                     "(the resize mode chooses the window)");
  if (t->no_antialias > 1)
    return bad_field("no_antialias must be 0 or 1");
  if (t->resize_size > GF_XFORM_MAX_DIM ||
      (t->resize_size && t->resize != GF_RESIZE_SHORTER_CENTER_CROP))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: resize_size %u is for "
                   "SHORTER_CENTER_CROP only, at most %u",
                   t->resize_size, GF_XFORM_MAX_DIM);
  bool rrc = t->resize == GF_RESIZE_RANDOM_RESIZED_CROP;
  bool sdef = t->scale[0] == 0 && t->scale[1] == 0;
  bool rdef = t->ratio[0] == 0 && t->ratio[1] == 0;
  if (!rrc && (!sdef || !rdef))
    return bad_field("scale and ratio are for RANDOM_RESIZED_CROP only");
  if (!sdef && !(t->scale[0] > 0 && t->scale[0] <= t->scale[1] &&
                 t->scale[1] <= 1))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: scale {%g, %g} must satisfy 0 < "
                   "scale[0] <= scale[1] <= 1 ({0, 0}: 0.08 to 1)",
                   (double)t->scale[0], (double)t->scale[1]);
  if (!rdef && !(t->ratio[0] > 0 && t->ratio[0] <= t->ratio[1] &&
                 isfinite(t->ratio[1])))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "invalid transform: ratio {%g, %g} must satisfy 0 < "
                   "ratio[0] <= ratio[1], finite ({0, 0}: 3/4 to 4/3)",
                   (double)t->ratio[0], (double)t->ratio[1]);
  return 0;
}

int gf_xform_out_shape(const gf_transform *t, const gf_shape *shapes,
                       uint32_t n, uint32_t *out_h, uint32_t *out_w,
                       uint32_t *out_c) {
  int rc = gf_xform_check(t);
  if (rc)
    return rc;
  if (!shapes || n == 0 || !out_h || !out_w || !out_c)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_xform_out_shape needs at least one sample and three "
                   "output pointers");
  const gf_shape *s0 = &shapes[0];
  for (uint32_t i = 0; i < n; i++) {
    const gf_shape *s = &shapes[i];
    if (s->dtype != GF_DTYPE_U8)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is 16-bit; the transform takes 8-bit "
                     "samples only",
                     i);
    if (s->channels < 1 || s->channels > 4)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels; the transform takes "
                     "1 to 4",
                     i, s->channels);
    if (s->channels != s0->channels)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels but sample 0 has %u; "
                     "a batch's samples must agree on channels (set the "
                     "loader's channels to convert them)",
                     i, s->channels, s0->channels);
    if (t->height == 0 &&
        (s->height != s0->height || s->width != s0->width))
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is %ux%u but sample 0 is %ux%u; "
                     "without a fixed output size (transform height/width) "
                     "every sample must have the same size",
                     i, s->height, s->width, s0->height, s0->width);
  }
  *out_h = t->height ? t->height : s0->height;
  *out_w = t->width ? t->width : s0->width;
  *out_c = s0->channels;
  if (*out_h == 0 || *out_w == 0 || *out_h > GF_XFORM_MAX_DIM ||
      *out_w > GF_XFORM_MAX_DIM)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "output size %ux%u is outside 1..%u", *out_h, *out_w,
                   GF_XFORM_MAX_DIM);
  return 0;
}

int gf_xform_out_bytes(uint32_t n, uint32_t out_h, uint32_t out_w,
                       uint32_t out_c, uint32_t dtype, uint64_t *bytes) {
  uint64_t b = gf_out_dtype_size(dtype);
  if (!bytes || b == 0 || !gf_mul_u64(b, n, &b) || !gf_mul_u64(b, out_h, &b) ||
      !gf_mul_u64(b, out_w, &b) || !gf_mul_u64(b, out_c, &b))
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a batch of %u samples of %ux%ux%u (dtype %u) does not "
                   "have a representable size",
                   n, out_h, out_w, out_c, dtype);
  *bytes = b;
  return 0;
}

void gf_xform_filtered_extent(const gf_xform_sample *s, uint32_t out_h,
                              uint32_t out_w, uint32_t *vh, uint32_t *vw) {
  int64_t rows = (int64_t)s->crop_y + (s->resize ? s->win_h : out_h),
          cols = (int64_t)s->crop_x + (s->resize ? s->win_w : out_w);
  if (rows > s->h)
    rows = s->h;
  if (cols > s->w)
    cols = s->w;
  if (rows <= 0 || cols <= 0 || s->crop_y >= (int64_t)s->h ||
      s->crop_x >= (int64_t)s->w)
    rows = cols = 0;
  *vh = (uint32_t)rows;
  *vw = (uint32_t)cols;
}

int gf_xform_validate(const gf_xform_sample *samples, uint32_t n,
                      uint64_t src_len, uint32_t out_h, uint32_t out_w,
                      uint32_t out_c, unsigned flags) {
  if (n && !samples)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%u transform samples given as NULL", n);
  if (out_c < 1 || out_c > 4 || out_h < 1 || out_w < 1 ||
      out_h > GF_XFORM_MAX_DIM || out_w > GF_XFORM_MAX_DIM ||
      (uint64_t)out_h * out_w * out_c >= GF_XFORM_MAX_SAMPLE_ELEMS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "transform output %ux%ux%u is outside the limits (sides "
                   "1..%u, channels 1..4, under 2^31 elements a sample)",
                   out_h, out_w, out_c, GF_XFORM_MAX_DIM);
  for (uint32_t i = 0; i < n; i++) {
    const gf_xform_sample *s = &samples[i];
    if (s->c != out_c)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has %u channels, the output %u", i,
                     s->c, out_c);
    if (s->h < 1 || s->w < 1 || s->h > GF_XFORM_MAX_DIM ||
        s->w > GF_XFORM_MAX_DIM)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is %ux%u; sides must be 1..%u", i, s->h,
                     s->w, GF_XFORM_MAX_DIM);
    uint64_t bytes = (uint64_t)s->h * s->w * s->c;
    if (s->src_offset > src_len || bytes > src_len - s->src_offset)
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, s->src_offset,
                     "batch sample %u (%ux%ux%u, %llu bytes at offset %llu) "
                     "does not lie inside the %llu-byte source",
                     i, s->h, s->w, s->c, (unsigned long long)bytes,
                     (unsigned long long)s->src_offset,
                     (unsigned long long)src_len);
    if (s->crop_y < -GF_XFORM_MAX_CROP || s->crop_y > GF_XFORM_MAX_CROP ||
        s->crop_x < -GF_XFORM_MAX_CROP || s->crop_x > GF_XFORM_MAX_CROP)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u has crop (%d, %d) beyond +-%d", i,
                     s->crop_y, s->crop_x, GF_XFORM_MAX_CROP);
    if (s->flip > 1 || s->filtered > 1 || s->reserved0 ||
        (s->resize & ~(3u | GF_XFORM_NO_AA)) ||
        (s->resize && !(s->resize & 3u)))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: flip and filtered must be 0 or 1, "
                     "resize 0 or a mode (plus GF_XFORM_NO_AA), reserved0 0",
                     i);
    if (!s->resize && (s->win_h || s->win_w || s->geom_h || s->geom_w))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: the window sizes must be 0 when it "
                     "is not resized",
                     i);
    if ((s->geom_h == 0) != (s->geom_w == 0) ||
        s->geom_h > GF_XFORM_MAX_RESAMPLED ||
        s->geom_w > GF_XFORM_MAX_RESAMPLED)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u: geom %ux%u must be 0x0 or both sides "
                     "1..%u",
                     i, s->geom_h, s->geom_w, GF_XFORM_MAX_RESAMPLED);
    if (s->resize &&
        (s->crop_y < 0 || s->crop_x < 0 || s->win_h < 1 || s->win_w < 1 ||
         (uint64_t)s->crop_y + s->win_h > s->h ||
         (uint64_t)s->crop_x + s->win_w > s->w))
      return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u (%ux%u): resize window %ux%u at (%d, "
                     "%d) is not inside the image",
                     i, s->h, s->w, s->win_h, s->win_w, s->crop_y,
                     s->crop_x);
    if ((flags & GF_XFORM_FOR_GPU) && s->filtered && s->resize)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch sample %u is gradient-filtered and resized: "
                     "the GPU resamples unfiltered samples only; unfilter "
                     "it on the CPU",
                     i);
    if ((flags & GF_XFORM_FOR_GPU) && s->filtered) {
      uint32_t vh, vw;
      gf_xform_filtered_extent(s, out_h, out_w, &vh, &vw);
      if ((uint64_t)vw * s->c > GF_XFORM_GPU_FILTERED_ROW)
        return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "batch sample %u is gradient-filtered and its crop "
                       "needs %u columns of %u channels: the GPU unfilters "
                       "rows of up to %u bytes; unfilter it on the CPU",
                       i, vw, s->c, GF_XFORM_GPU_FILTERED_ROW);
    }
  }
  return 0;
}

void gf_xform_norm(const gf_transform *t, float mean[4], float std[4]) {
  for (int c = 0; c < 4; c++) {
    mean[c] = t->mean[c];
    std[c] = t->std[c] == 0.0f ? 1.0f : t->std[c];
  }
}
