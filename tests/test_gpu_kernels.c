/* The transform kernels (kernels/xform.cu) against the CPU reference
 * (gf_xform_ref), byte for byte:
 * - random batches: shapes, channels 1-4, crop/pad/flip settings, every
 *   dtype and layout, gradient-filtered samples (all, none, mixed), source
 *   samples at any alignment, destinations with and without 16-byte
 *   alignment; the output poisoned with two different bytes in two runs
 *   and every element compared, the bytes around it checked untouched;
 * - larger cases: 224x224 crops of 256x256 with several unfilter tiles,
 *   filtered rows at the shared-memory limit, more samples than a grid
 *   dimension holds;
 * - resized batches (every resize mode, antialiased or not, ragged sizes,
 *   flips, dtypes, layouts, CenterCrop padding, 224x224 from 200-500 px),
 *   each through both resize paths: the tiles (the default; in batches of
 *   64 and more a block makes several samples) and the per-pixel path;
 *   batches mixing resized and cropped samples; shrink factors whose
 *   tiles take several chunks, and huge ones that go pixel by pixel;
 * - bad samples (outside the source, filtered without n_filtered, filtered
 *   rows too wide; in a batch of resized samples alone and beside a
 *   cropped one): padding for that sample, the status code set, the
 *   others right; and the launcher's refusals.
 * Skips (77) without a CUDA device.
 *
 * `test_gpu_kernels --quick` runs fewer, smaller cases (for checkers such
 * as compute-sanitizer); `test_gpu_kernels --bench` times each kernel on a 256-sample batch and
 * prints GB/s (source bytes read + output bytes written a second) beside a
 * device-to-device cudaMemcpy measured in the same run (2 x bytes a
 * second). */
#include "cuda_testutil.h"

#include "decode/decode.h"
#include "kernels.h"
#include "xform/transform.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* Device buffers reused across cases, grown when a case needs more. */
typedef struct devbuf {
  void *p;
  size_t cap;
} devbuf;

static void *dev_need(devbuf *b, size_t n) {
  if (n > b->cap) {
    CUDA_OK(cudaFree(b->p));
    b->p = NULL;
    CUDA_OK(cudaMalloc(&b->p, n));
    b->cap = n;
  }
  return b->p;
}

typedef struct xcase {
  gf_transform t;
  uint32_t n, oh, ow, oc;
  gf_xform_sample *s;
  uint8_t *src;
  uint64_t src_len;
  uint32_t dst_shift; /* elements the output starts past 16-byte alignment */
  uint32_t resize_path; /* gf_xform_launch's (check_case sets it) */
  uint32_t resize_tpb;  /* gf_xform_launch's (0: the kernel's choice) */
  uint32_t resize_rows; /* gf_xform_launch's (0: the launcher's choice) */
} xcase;

static devbuf d_src, d_params, d_dst, d_status;
static cudaStream_t stream;
static uint64_t rs = 20240611;
static uint64_t n_cases, n_elems; /* what was compared, for the summary */
static bool quick; /* --quick */

static uint32_t rnd(uint32_t n) { return (uint32_t)(gf_test_rand(&rs) % n); }

static uint32_t count_filtered(const xcase *c) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < c->n; i++)
    k += c->s[i].filtered;
  return k;
}

/* Runs c on the GPU twice (two poison bytes) and compares with `want`
 * (the reference output). want_status: the status the kernels must leave.
 * n_filtered: what the launch claims. Returns mismatches. */
static int run_gpu(const xcase *c, const uint8_t *want, uint32_t n_filtered,
                   int32_t want_status) {
  size_t es = gf_out_dtype_size(c->t.out_dtype);
  size_t bytes = (size_t)c->n * c->oh * c->ow * c->oc * es;
  size_t lead = (size_t)c->dst_shift * es, guard = 64;
  size_t total = 16 + lead + bytes + guard;
  uint8_t *dsrc = dev_need(&d_src, c->src_len ? c->src_len : 1);
  gf_xform_sample *dpar = dev_need(&d_params, (size_t)c->n * sizeof *c->s);
  uint8_t *ddst = dev_need(&d_dst, total);
  int32_t *dstat = dev_need(&d_status, sizeof(int32_t));
  CUDA_OK(cudaMemcpyAsync(dsrc, c->src, c->src_len, cudaMemcpyHostToDevice,
                          stream));
  CUDA_OK(cudaMemcpyAsync(dpar, c->s, (size_t)c->n * sizeof *c->s,
                          cudaMemcpyHostToDevice, stream));
  uint8_t *got = malloc(total);
  int bad = 0;
  n_cases++;
  static const uint8_t poison[2] = {0xA5, 0x5A};
  for (int run = 0; run < 2 && !bad; run++) {
    CUDA_OK(cudaMemsetAsync(ddst, poison[run], total, stream));
    CUDA_OK(cudaMemsetAsync(dstat, 0, sizeof(int32_t), stream));
    gf_xform_launch a;
    memset(&a, 0, sizeof a);
    a.src = dsrc;
    a.src_len = c->src_len;
    a.samples = dpar;
    a.n = c->n;
    a.n_filtered = n_filtered;
    for (uint32_t i = 0; i < c->n; i++)
      a.n_resized += c->s[i].resize != 0;
    a.resize_size = gf_xform_resize_size(&c->t, c->oh);
    a.resize_path = c->resize_path;
    a.resize_tpb = c->resize_tpb;
    a.resize_rows = c->resize_rows;
    a.out_h = c->oh;
    a.out_w = c->ow;
    a.out_c = c->oc;
    a.out_dtype = c->t.out_dtype;
    a.layout = c->t.layout;
    memcpy(a.mean, c->t.mean, sizeof a.mean);
    memcpy(a.std, c->t.std, sizeof a.std);
    a.dst = ddst + 16 + lead;
    a.status = dstat;
    CUDA_OK(gf_launch_xform(&a, stream));
    int32_t status = 0;
    CUDA_OK(cudaMemcpyAsync(got, ddst, total, cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaMemcpyAsync(&status, dstat, sizeof status,
                            cudaMemcpyDeviceToHost, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    if (status != want_status) {
      fprintf(stderr, "status %d, want %d\n", status, want_status);
      bad++;
    }
    for (size_t i = 0; i < 16 + lead; i++)
      if (got[i] != poison[run]) {
        fprintf(stderr, "byte %zu before the output was written\n", i);
        bad++;
        break;
      }
    for (size_t i = 16 + lead + bytes; i < total; i++)
      if (got[i] != poison[run]) {
        fprintf(stderr, "byte %zu past the output was written\n",
                i - 16 - lead - bytes);
        bad++;
        break;
      }
    const uint8_t *o = got + 16 + lead;
    n_elems += bytes / es;
    for (size_t e = 0; e < bytes / es; e++) {
      if (memcmp(o + e * es, want + e * es, es) != 0) {
        size_t per = (size_t)c->oh * c->ow * c->oc, k = e % per;
        uint32_t y, x, ch;
        if (c->t.layout == GF_LAYOUT_NHWC) {
          ch = (uint32_t)(k % c->oc);
          x = (uint32_t)(k / c->oc % c->ow);
          y = (uint32_t)(k / c->oc / c->ow);
        } else {
          x = (uint32_t)(k % c->ow);
          y = (uint32_t)(k / c->ow % c->oh);
          ch = (uint32_t)(k / c->ow / c->oh);
        }
        const gf_xform_sample *s = &c->s[e / per];
        uint32_t gv = 0, wv = 0;
        memcpy(&gv, o + e * es, es);
        memcpy(&wv, want + e * es, es);
        if (bad < 5)
          fprintf(stderr,
                  "element %zu (sample %zu y %u x %u ch %u; sample %ux%ux%u "
                  "crop %d,%d flip %u filtered %u): got %#x want %#x\n",
                  e, e / per, y, x, ch, s->h, s->w, s->c, s->crop_y,
                  s->crop_x, s->flip, s->filtered, gv, wv);
        bad++;
      }
    }
  }
  free(got);
  return bad;
}

/* Fills one sample's pixels (photo-like or noise), filtered on request. */
static void fill_sample(uint8_t *p, const gf_xform_sample *s) {
  if (rnd(2))
    gf_test_fill_image(p, s->h, s->w, s->c, gf_test_rand(&rs));
  else
    for (size_t i = 0; i < (size_t)s->h * s->w * s->c; i++)
      p[i] = (uint8_t)gf_test_rand(&rs);
  if (s->filtered)
    gf_grad_filter(p, s->h, s->w, s->c);
}

/* Lays samples of the given shapes out in a fresh source with random gaps
 * (so they start at any alignment) and fills them. */
static void build_source(xcase *c, const gf_shape *shapes, uint64_t epoch,
                         int filtered_mode) {
  uint64_t off = rnd(16);
  for (uint32_t i = 0; i < c->n; i++) {
    uint32_t f = filtered_mode == 2 ? rnd(2) : (uint32_t)filtered_mode;
    gf_xform_sample_init(&c->t, epoch, gf_test_rand(&rs), off, &shapes[i],
                         c->oh, c->ow, f, &c->s[i]);
    off += (uint64_t)shapes[i].height * shapes[i].width * shapes[i].channels;
    off += rnd(3) ? rnd(18) : 0;
  }
  c->src_len = off;
  c->src = malloc(off ? off : 1);
  for (uint64_t i = 0; i < off; i++)
    c->src[i] = (uint8_t)gf_test_rand(&rs);
  for (uint32_t i = 0; i < c->n; i++)
    fill_sample(c->src + c->s[i].src_offset, &c->s[i]);
}

static int check_case(xcase *c) {
  size_t bytes =
      (size_t)c->n * c->oh * c->ow * c->oc * gf_out_dtype_size(c->t.out_dtype);
  uint8_t *want = malloc(bytes ? bytes : 1);
  int rc = gf_xform_ref(&c->t, c->src, c->src_len, c->s, c->n, c->oh, c->ow,
                        c->oc, want);
  CHECK_OK(rc);
  int bad = rc ? 1 : run_gpu(c, want, count_filtered(c), 0);
  /* Resized samples: the tiles for all (the default takes bands where
   * it can) and the per-pixel path (the tiles' fallback): the same
   * bytes. */
  bool resized = false;
  for (uint32_t i = 0; i < c->n; i++)
    resized |= c->s[i].resize != 0;
  static const uint32_t paths[2] = {GF_XFORM_RESIZE_TILES,
                                    GF_XFORM_RESIZE_PER_PIXEL};
  for (int k = 0; k < 2 && resized && !bad; k++) {
    c->resize_path = paths[k];
    bad = run_gpu(c, want, count_filtered(c), 0);
    if (bad)
      fprintf(stderr, "(resize_path %u)\n", paths[k]);
    c->resize_path = 0;
  }
  free(want);
  return bad;
}

static void free_case(xcase *c) {
  free(c->src);
  free(c->s);
}

static void random_case(int idx) {
  xcase c;
  memset(&c, 0, sizeof c);
  c.t.out_dtype = rnd(4);
  c.t.layout = rnd(2);
  c.t.random_crop = rnd(2);
  c.t.hflip = rnd(2);
  c.t.pad = rnd(3) ? rnd(9) : 0;
  c.t.seed = gf_test_rand(&rs);
  for (int k = 0; k < 4; k++) {
    c.t.mean[k] = (float)rnd(256000) / 1000.0f;
    c.t.std[k] = rnd(5) ? (float)(1 + rnd(100000)) / 1000.0f : 0.0f;
  }
  static const uint32_t chans[] = {1, 3, 4, 3, 1, 4, 2};
  c.oc = chans[rnd(7)];
  c.n = 1 + rnd(idx % 10 == 0 ? 40 : 12);
  c.s = calloc(c.n, sizeof *c.s);
  gf_shape *sh = calloc(c.n, sizeof *sh);
  bool fixed = rnd(10) < 7;
  uint32_t H = 1 + rnd(80), W = 1 + rnd(80);
  for (uint32_t i = 0; i < c.n; i++) {
    sh[i].height = fixed ? 1 + rnd(80) : H;
    sh[i].width = fixed ? 1 + rnd(80) : W;
    sh[i].channels = c.oc;
  }
  if (fixed) {
    c.t.height = c.oh = 1 + rnd(64);
    c.t.width = c.ow = 1 + rnd(64);
  } else {
    c.oh = H;
    c.ow = W;
  }
  uint32_t oh, ow, oc;
  CHECK_OK(gf_xform_out_shape(&c.t, sh, c.n, &oh, &ow, &oc));
  CHECK(oh == c.oh && ow == c.ow && oc == c.oc);
  build_source(&c, sh, rnd(100), (int)rnd(3));
  if (rnd(8) == 0) /* a window wholly in the padding */
    c.s[rnd(c.n)].crop_x = -(int32_t)c.ow - (int32_t)rnd(5);
  c.dst_shift = rnd(3) ? 0 : rnd(4);
  int bad = check_case(&c);
  if (bad)
    fprintf(stderr,
            "case %d: n %u out %ux%ux%u dtype %u layout %u crop %u flip %u "
            "pad %u shift %u: %d bad\n",
            idx, c.n, c.oh, c.ow, c.oc, c.t.out_dtype, c.t.layout,
            c.t.random_crop, c.t.hflip, c.t.pad, c.dst_shift, bad);
  CHECK(bad == 0);
  free(sh);
  free_case(&c);
}

/* Resized batches (xform_resize) against gf_xform_ref: every mode,
 * antialiased and plain, flips, dtypes, layouts, ragged sizes from 1 pixel
 * up (shrinking and enlarging), CenterCrop's padding (small resize_size),
 * a third of the samples with a full-scale geometry (geom_h/geom_w, a
 * JPEG window decoded at a reduced scale), destinations at any
 * alignment. */
/* many: 64 to 323 (71 under --quick) small samples, so that the staged
 * tiles' blocks each make several tiles of a sample (resize_path 0). */
static void resize_case(int idx, bool big, bool many) {
  xcase c;
  memset(&c, 0, sizeof c);
  c.t.resize = 1 + rnd(3);
  c.t.no_antialias = rnd(4) == 0;
  c.t.out_dtype = rnd(4);
  c.t.layout = rnd(2);
  c.t.hflip = rnd(2);
  c.t.seed = gf_test_rand(&rs);
  for (int k = 0; k < 4; k++) {
    c.t.mean[k] = (float)rnd(256000) / 1000.0f;
    c.t.std[k] = rnd(5) ? (float)(1 + rnd(100000)) / 1000.0f : 0.0f;
  }
  if (c.t.resize == GF_RESIZE_RANDOM_RESIZED_CROP && rnd(3) == 0) {
    c.t.scale[0] = 0.3f;
    c.t.scale[1] = 0.9f;
    c.t.ratio[0] = 0.5f;
    c.t.ratio[1] = 2.0f;
  }
  static const uint32_t chans[] = {1, 3, 4, 3, 2};
  c.oc = chans[rnd(5)];
  /* Under --quick (a checker tracking every shared-memory access of the
   * tiles) the large batches stay small. */
  c.n = many ? 64 + rnd(quick ? 8 : 260)
             : 1 + rnd(big ? (quick ? 4 : 64) : 12);
  /* Blocks making 1 to 4 tiles of a sample each, or the kernel's choice
   * (1 for these batches: the large ones of the benches take 3). */
  c.resize_tpb = rnd(3) ? 1 + rnd(4) : 0;
  /* Bands of 1 to 32 rows, or the launcher's choice. */
  c.resize_rows = rnd(3) ? 0 : 1 + rnd(32);
  c.t.height = c.oh = big ? 224 : 1 + rnd(64);
  c.t.width = c.ow = big ? 224 : 1 + rnd(64);
  if (c.t.resize == GF_RESIZE_SHORTER_CENTER_CROP && rnd(3) == 0)
    c.t.resize_size = 1 + rnd(c.oh + 10); /* often smaller: padding */
  c.s = calloc(c.n, sizeof *c.s);
  gf_shape *sh = calloc(c.n, sizeof *sh);
  uint32_t maxs = big ? 500 : (rnd(4) ? 120 : 8);
  for (uint32_t i = 0; i < c.n; i++) {
    sh[i].height = (big ? 200 : 1) + rnd(big ? 301 : maxs);
    sh[i].width = (big ? 200 : 1) + rnd(big ? 301 : maxs);
    sh[i].channels = c.oc;
  }
  CHECK_OK(gf_xform_check(&c.t));
  build_source(&c, sh, rnd(100), 0);
  /* Some samples as a JPEG window decoded at 1/d: the geometry from the
   * full-scale window (geom_h x geom_w), the resampling from the scaled
   * one (SHORTER_CENTER_CROP's sizes and offsets change with it). */
  for (uint32_t i = 0; i < c.n; i++)
    if (rnd(3) == 0) {
      uint32_t d = 2u << rnd(3);
      c.s[i].geom_h = c.s[i].win_h * d + rnd(d);
      c.s[i].geom_w = c.s[i].win_w * d + rnd(d);
    }
  c.dst_shift = rnd(3) ? 0 : rnd(4);
  int bad = check_case(&c);
  if (bad)
    fprintf(stderr,
            "resize case %d: mode %u aa %u n %u out %ux%ux%u dtype %u "
            "layout %u flip %u S %u shift %u: %d bad\n",
            idx, c.t.resize, !c.t.no_antialias, c.n, c.oh, c.ow, c.oc,
            c.t.out_dtype, c.t.layout, c.t.hflip, c.t.resize_size,
            c.dst_shift, bad);
  CHECK(bad == 0);
  free(sh);
  free_case(&c);
}

/* Resized and plain (crop/pad) samples in one batch: xform_resize and
 * xform_plain each write exactly their own samples. */
static void mixed_case(int idx) {
  xcase c;
  memset(&c, 0, sizeof c);
  c.t.resize = rnd(2) ? GF_RESIZE_RANDOM_RESIZED_CROP
                      : GF_RESIZE_SHORTER_CENTER_CROP;
  c.t.out_dtype = rnd(4);
  c.t.layout = rnd(2);
  c.t.hflip = 1;
  c.t.seed = gf_test_rand(&rs);
  for (int k = 0; k < 4; k++) {
    c.t.mean[k] = (float)rnd(256000) / 1000.0f;
    c.t.std[k] = (float)(1 + rnd(100000)) / 1000.0f;
  }
  static const uint32_t chans[] = {1, 3, 4};
  c.oc = chans[rnd(3)];
  c.n = 2 + rnd(20);
  c.t.height = c.oh = 1 + rnd(70);
  c.t.width = c.ow = 1 + rnd(70);
  c.s = calloc(c.n, sizeof *c.s);
  gf_shape *sh = calloc(c.n, sizeof *sh);
  for (uint32_t i = 0; i < c.n; i++)
    sh[i] = (gf_shape){1 + rnd(150), 1 + rnd(150), c.oc, GF_DTYPE_U8};
  CHECK_OK(gf_xform_check(&c.t));
  build_source(&c, sh, rnd(100), 0);
  /* About half cropped instead (the first always, the last never). */
  gf_transform plain = c.t;
  plain.resize = GF_RESIZE_NONE;
  plain.random_crop = 1;
  plain.pad = rnd(5);
  for (uint32_t i = 0; i + 1 < c.n; i++)
    if (i == 0 || rnd(2))
      gf_xform_sample_init(&plain, 0, gf_test_rand(&rs), c.s[i].src_offset,
                           &sh[i], c.oh, c.ow, 0, &c.s[i]);
  c.dst_shift = rnd(3) ? 0 : rnd(4);
  int bad = check_case(&c);
  if (bad)
    fprintf(stderr, "mixed case %d: n %u out %ux%ux%u dtype %u layout %u: "
            "%d bad\n", idx, c.n, c.oh, c.ow, c.oc, c.t.out_dtype,
            c.t.layout, bad);
  CHECK(bad == 0);
  free(sh);
  free_case(&c);
}

/* Resize((oh, ow)) of two h x w x ch images, the second flipped: shrink
 * factors whose tiles need several chunks of source rows, and huge ones
 * whose tiles go pixel by pixel (test_resize_tiles checks which path each
 * of these takes). */
static void resize_exact_case(const char *what, uint32_t h, uint32_t w,
                              uint32_t ch, uint32_t oh, uint32_t ow,
                              uint32_t no_aa, uint32_t dtype,
                              uint32_t layout) {
  xcase c;
  memset(&c, 0, sizeof c);
  c.t.resize = GF_RESIZE_EXACT;
  c.t.no_antialias = no_aa;
  c.t.out_dtype = dtype;
  c.t.layout = layout;
  for (int k = 0; k < 4; k++) {
    c.t.mean[k] = 100.0f + 20.0f * (float)k;
    c.t.std[k] = 50.0f + (float)k;
  }
  c.t.height = c.oh = oh;
  c.t.width = c.ow = ow;
  c.oc = ch;
  c.n = 2;
  c.s = calloc(c.n, sizeof *c.s);
  gf_shape sh[2] = {{h, w, ch, GF_DTYPE_U8}, {h, w, ch, GF_DTYPE_U8}};
  CHECK_OK(gf_xform_check(&c.t));
  build_source(&c, sh, 0, 0);
  c.s[1].flip = 1;
  int bad = check_case(&c);
  if (bad)
    fprintf(stderr, "%s: %d bad\n", what, bad);
  CHECK(bad == 0);
  free_case(&c);
}

/* A uniform batch: n samples of h x w x ch cut to oh x ow. */
static void uniform_case(const char *what, uint32_t n, uint32_t h, uint32_t w,
                         uint32_t ch, uint32_t oh, uint32_t ow, int filtered,
                         uint32_t dtype, uint32_t layout) {
  xcase c;
  memset(&c, 0, sizeof c);
  c.t.out_dtype = dtype;
  c.t.layout = layout;
  c.t.height = oh;
  c.t.width = ow;
  c.t.random_crop = 1;
  c.t.hflip = 1;
  c.t.pad = 4;
  c.t.seed = gf_test_rand(&rs);
  for (int k = 0; k < 4; k++) {
    c.t.mean[k] = 100.0f + 20.0f * (float)k;
    c.t.std[k] = 50.0f + (float)k;
  }
  c.n = n;
  c.oh = oh;
  c.ow = ow;
  c.oc = ch;
  c.s = calloc(n, sizeof *c.s);
  gf_shape *sh = calloc(n, sizeof *sh);
  for (uint32_t i = 0; i < n; i++)
    sh[i] = (gf_shape){h, w, ch, GF_DTYPE_U8};
  build_source(&c, sh, 1, filtered);
  int bad = check_case(&c);
  if (bad)
    fprintf(stderr, "%s: %d bad\n", what, bad);
  CHECK(bad == 0);
  free(sh);
  free_case(&c);
}

/* Bad samples: each gets padding and the status is set; the rest of the
 * batch is right. */
static void bad_sample_cases(void) {
  for (int kind = 0; kind < 3; kind++) {
    xcase c;
    memset(&c, 0, sizeof c);
    c.t.out_dtype = GF_OUT_F32;
    c.t.layout = GF_LAYOUT_NCHW;
    c.t.mean[0] = 7;
    c.t.std[0] = 3;
    c.oc = 1;
    c.n = 3;
    c.oh = 5;
    c.ow = kind == 2 ? GF_XFORM_GPU_FILTERED_ROW + 1 : 6;
    c.t.height = c.oh;
    c.t.width = c.ow;
    c.s = calloc(c.n, sizeof *c.s);
    gf_shape sh[3];
    for (int i = 0; i < 3; i++)
      sh[i] = (gf_shape){c.oh, c.ow, 1, GF_DTYPE_U8};
    build_source(&c, sh, 0, kind == 0 ? 0 : 1);
    int32_t want_status = 0;
    gf_xform_sample keep = c.s[1];
    if (kind == 0) {
      c.s[1].src_offset = c.src_len - 1; /* runs past the source */
      want_status = GF_ESHAPE;
      CHECK_ERR(gf_xform_validate(c.s, c.n, c.src_len, c.oh, c.ow, c.oc,
                                  GF_XFORM_FOR_GPU),
                GF_ESHAPE);
    } else if (kind == 1) {
      want_status = -EINVAL; /* filtered, but the launch says none are */
    } else {
      want_status = GF_EUNSUPPORTED;
      CHECK_ERR(gf_xform_validate(c.s, c.n, c.src_len, c.oh, c.ow, c.oc,
                                  GF_XFORM_FOR_GPU),
                GF_EUNSUPPORTED);
    }
    /* What the output must be: the good samples as the reference makes
     * them; padding (pixel 0: (0 - 7) / 3) for the refused ones. */
    size_t per = (size_t)c.oh * c.ow;
    float *want = malloc(per * c.n * sizeof *want);
    gf_xform_sample probe[3];
    memcpy(probe, c.s, sizeof probe);
    probe[1] = keep;
    CHECK_OK(gf_xform_ref(&c.t, c.src, c.src_len, probe, c.n, c.oh, c.ow,
                          c.oc, want));
    float padv = (0.0f - 7.0f) / 3.0f;
    for (size_t i = 0; i < per; i++) {
      if (kind >= 1) /* every sample is filtered: all are refused */
        want[i] = want[2 * per + i] = padv;
      want[per + i] = padv;
    }
    uint32_t nf = kind == 1 ? 0 : count_filtered(&c);
    int bad = run_gpu(&c, (const uint8_t *)want, nf, want_status);
    if (bad)
      fprintf(stderr, "bad-sample kind %d: %d bad\n", kind, bad);
    CHECK(bad == 0);
    free(want);
    free_case(&c);
  }
}

/* A refused sample in a resized batch: padding and the status, the rest
 * right. kind 0: every sample resized (xform_resize alone pads it); kind
 * 1: one cropped sample too (xform_plain pads it). */
static void bad_resized_cases(void) {
  for (int kind = 0; kind < 2; kind++) {
    xcase c;
    memset(&c, 0, sizeof c);
    c.t.resize = GF_RESIZE_EXACT;
    c.t.out_dtype = GF_OUT_F32;
    c.t.layout = GF_LAYOUT_NCHW;
    c.t.mean[0] = 7;
    c.t.std[0] = 3;
    c.oc = 1;
    c.n = 3;
    c.t.height = c.oh = 5;
    c.t.width = c.ow = 6;
    c.s = calloc(c.n, sizeof *c.s);
    gf_shape sh[3];
    for (int i = 0; i < 3; i++)
      sh[i] = (gf_shape){9, 11, 1, GF_DTYPE_U8};
    build_source(&c, sh, 0, 0);
    if (kind == 1) {
      gf_transform plain = c.t;
      plain.resize = GF_RESIZE_NONE;
      gf_xform_sample_init(&plain, 0, 5, c.s[2].src_offset, &sh[2], c.oh,
                           c.ow, 0, &c.s[2]);
    }
    gf_xform_sample keep = c.s[1];
    c.s[1].src_offset = c.src_len - 1; /* runs past the source */
    CHECK_ERR(gf_xform_validate(c.s, c.n, c.src_len, c.oh, c.ow, c.oc,
                                GF_XFORM_FOR_GPU),
              GF_ESHAPE);
    size_t per = (size_t)c.oh * c.ow;
    float *want = malloc(per * c.n * sizeof *want);
    gf_xform_sample probe[3];
    memcpy(probe, c.s, sizeof probe);
    probe[1] = keep;
    CHECK_OK(gf_xform_ref(&c.t, c.src, c.src_len, probe, c.n, c.oh, c.ow,
                          c.oc, want));
    for (size_t i = 0; i < per; i++)
      want[per + i] = (0.0f - 7.0f) / 3.0f;
    int bad = run_gpu(&c, (const uint8_t *)want, 0, GF_ESHAPE);
    if (bad)
      fprintf(stderr, "bad resized sample, kind %d: %d bad\n", kind, bad);
    CHECK(bad == 0);
    free(want);
    free_case(&c);
  }
}

static void launcher_refusals(void) {
  uint8_t *d = dev_need(&d_dst, 4096);
  gf_xform_sample *p = dev_need(&d_params, sizeof(gf_xform_sample));
  gf_xform_launch a;
  memset(&a, 0, sizeof a);
  a.src = d;
  a.src_len = 16;
  a.samples = p;
  a.n = 1;
  a.out_h = a.out_w = 2;
  a.out_c = 1;
  a.out_dtype = GF_OUT_F32;
  a.dst = d + 1024;
  CHECK(gf_launch_xform(&a, NULL) == cudaErrorInvalidValue);
  CHECK(gf_launch_xform(&a, cudaStreamLegacy) == cudaErrorInvalidValue);
  CHECK(gf_launch_xform(NULL, stream) == cudaErrorInvalidValue);
  gf_xform_launch b = a;
  b.out_dtype = 7;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.layout = 2;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.dst = d + 1026; /* f32 at a 2-byte boundary */
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.out_c = 5;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.n_filtered = 2;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.samples = NULL;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.std[0] = -1;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.resize_path = GF_XFORM_RESIZE_TILES + 1;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.resize_rows = 33;
  CHECK(gf_launch_xform(&b, stream) == cudaErrorInvalidValue);
  b = a;
  b.n = 0; /* nothing to do, nothing launched */
  b.samples = NULL;
  CHECK(gf_launch_xform(&b, stream) == cudaSuccess);
  CUDA_OK(cudaStreamSynchronize(stream));
  CHECK(cudaGetLastError() == cudaSuccess);
}

/* ---- --bench ------------------------------------------------------------ */

typedef struct bench_cfg {
  const char *name;
  uint32_t dtype, layout, h, w, oh, ow, filtered;
} bench_cfg;

static float time_launch(const gf_xform_launch *a, int iters) {
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++)
    CUDA_OK(gf_launch_xform(a, stream));
  CUDA_OK(cudaEventRecord(e0, stream));
  for (int i = 0; i < iters; i++)
    CUDA_OK(gf_launch_xform(a, stream));
  CUDA_OK(cudaEventRecord(e1, stream));
  CUDA_OK(cudaEventSynchronize(e1));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return ms / (float)iters;
}

static int bench(void) {
  const uint32_t n = 256, c = 3;
  const int iters = 20;
  /* The memcpy yardstick: as many bytes as the largest batch output. */
  size_t cp_bytes = (size_t)n * 224 * 224 * c * 4;
  void *ca, *cb;
  CUDA_OK(cudaMalloc(&ca, cp_bytes));
  CUDA_OK(cudaMalloc(&cb, cp_bytes));
  CUDA_OK(cudaMemsetAsync(ca, 1, cp_bytes, stream));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; i++)
    CUDA_OK(cudaMemcpyAsync(cb, ca, cp_bytes, cudaMemcpyDeviceToDevice, stream));
  CUDA_OK(cudaEventRecord(e0, stream));
  for (int i = 0; i < iters; i++)
    CUDA_OK(cudaMemcpyAsync(cb, ca, cp_bytes, cudaMemcpyDeviceToDevice, stream));
  CUDA_OK(cudaEventRecord(e1, stream));
  CUDA_OK(cudaEventSynchronize(e1));
  float cp_ms = 0;
  CUDA_OK(cudaEventElapsedTime(&cp_ms, e0, e1));
  cp_ms /= (float)iters;
  double cp_gbs = 2.0 * (double)cp_bytes / (cp_ms * 1e-3) / 1e9;
  CUDA_OK(cudaFree(ca));
  CUDA_OK(cudaFree(cb));
  struct cudaDeviceProp prop;
  int dev = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s\n", prop.name);
  printf("cudaMemcpy D2D %zu MB: %.3f ms, %.0f GB/s (read + write)\n",
         cp_bytes >> 20, (double)cp_ms, cp_gbs);
  printf("%-34s %9s %9s %8s %6s\n", "kernel (256 samples, 3 channels)", "ms",
         "MB moved", "GB/s", "ratio");

  static const bench_cfg cfgs[] = {
      {"u8 NHWC 224 (copy)", GF_OUT_U8, GF_LAYOUT_NHWC, 224, 224, 224, 224, 0},
      {"u8 NCHW 224", GF_OUT_U8, GF_LAYOUT_NCHW, 224, 224, 224, 224, 0},
      {"f32 NCHW 224", GF_OUT_F32, GF_LAYOUT_NCHW, 224, 224, 224, 224, 0},
      {"f32 NHWC 224", GF_OUT_F32, GF_LAYOUT_NHWC, 224, 224, 224, 224, 0},
      {"f16 NCHW 224", GF_OUT_F16, GF_LAYOUT_NCHW, 224, 224, 224, 224, 0},
      {"bf16 NHWC 224", GF_OUT_BF16, GF_LAYOUT_NHWC, 224, 224, 224, 224, 0},
      {"f32 NCHW 256->224 crop+flip", GF_OUT_F32, GF_LAYOUT_NCHW, 256, 256,
       224, 224, 0},
      {"f16 NCHW 256->224 crop+flip", GF_OUT_F16, GF_LAYOUT_NCHW, 256, 256,
       224, 224, 0},
      {"filtered u8 NHWC 224", GF_OUT_U8, GF_LAYOUT_NHWC, 224, 224, 224, 224,
       1},
      {"filtered f32 NCHW 224", GF_OUT_F32, GF_LAYOUT_NCHW, 224, 224, 224,
       224, 1},
      {"filtered f16 NCHW 256->224 crop", GF_OUT_F16, GF_LAYOUT_NCHW, 256,
       256, 224, 224, 1},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
    const bench_cfg *b = &cfgs[k];
    gf_transform t;
    memset(&t, 0, sizeof t);
    t.out_dtype = b->dtype;
    t.layout = b->layout;
    t.height = b->oh;
    t.width = b->ow;
    t.random_crop = b->h != b->oh;
    t.hflip = b->h != b->oh;
    t.seed = 1;
    for (int i = 0; i < 3; i++) {
      t.mean[i] = 120;
      t.std[i] = 60;
    }
    size_t per = (size_t)b->h * b->w * c;
    gf_xform_sample *s = calloc(n, sizeof *s);
    gf_shape sh = {b->h, b->w, c, GF_DTYPE_U8};
    for (uint32_t i = 0; i < n; i++)
      gf_xform_sample_init(&t, 0, i, i * per, &sh, b->oh, b->ow, b->filtered,
                           &s[i]);
    uint8_t *src = malloc(per * n);
    for (uint32_t i = 0; i < n; i++) {
      gf_test_fill_image(src + i * per, b->h, b->w, c, i);
      if (b->filtered)
        gf_grad_filter(src + i * per, b->h, b->w, c);
    }
    size_t out_bytes =
        (size_t)n * b->oh * b->ow * c * gf_out_dtype_size(b->dtype);
    uint8_t *dsrc = dev_need(&d_src, per * n);
    gf_xform_sample *dpar = dev_need(&d_params, n * sizeof *s);
    uint8_t *ddst = dev_need(&d_dst, out_bytes);
    CUDA_OK(cudaMemcpyAsync(dsrc, src, per * n, cudaMemcpyHostToDevice,
                            stream));
    CUDA_OK(cudaMemcpyAsync(dpar, s, n * sizeof *s, cudaMemcpyHostToDevice,
                            stream));
    gf_xform_launch a;
    memset(&a, 0, sizeof a);
    a.src = dsrc;
    a.src_len = per * n;
    a.samples = dpar;
    a.n = n;
    a.n_filtered = b->filtered ? n : 0;
    a.out_h = b->oh;
    a.out_w = b->ow;
    a.out_c = c;
    a.out_dtype = b->dtype;
    a.layout = b->layout;
    memcpy(a.mean, t.mean, sizeof a.mean);
    memcpy(a.std, t.std, sizeof a.std);
    a.dst = ddst;
    float ms = time_launch(&a, iters);
    /* Bytes the transform must move: the window's source pixels (for a
     * filtered sample everything above and left of the window's far
     * corner, counted as the whole source) and the output. */
    size_t read = b->filtered ? per * n : (size_t)n * b->oh * b->ow * c;
    double moved = (double)(read + out_bytes);
    double gbs = moved / (ms * 1e-3) / 1e9;
    printf("%-34s %9.3f %9.1f %8.0f %6.2f\n", b->name, (double)ms,
           moved / 1e6, gbs, gbs / cp_gbs);
    free(s);
    free(src);
  }
  CUDA_OK(cudaEventDestroy(e0));
  CUDA_OK(cudaEventDestroy(e1));
  return 0;
}

int main(int argc, char **argv) {
  gf_test_need_cuda_device();
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    int rc = bench();
    CUDA_OK(cudaStreamDestroy(stream));
    return rc;
  }

  /* --quick: fewer and smaller cases, for runs under a slow checker such
   * as compute-sanitizer. */
  quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  for (int i = 0; i < (quick ? 60 : 400); i++)
    random_case(i);
  /* ImageNet-like crops: 16-row unfilter tiles, the copy of rows that are
   * not contiguous (window narrower than the image), every dtype. */
  for (uint32_t dt = 0; dt < 4; dt++)
    uniform_case("256->224", quick ? 2 : 6, 256, 256, 3, 224, 224, 2, dt,
                 dt & 1);
  /* Filtered rows at the shared-memory limit: one row a tile, words
   * (4 channels) and bytes (3 channels) in the column pass. */
  uniform_case("wide rgba", 2, 5, GF_XFORM_GPU_FILTERED_ROW / 4, 4, 5,
               GF_XFORM_GPU_FILTERED_ROW / 4, 1, GF_OUT_F16,
               GF_LAYOUT_NCHW);
  uniform_case("wide rgb", 2, 4, GF_XFORM_GPU_FILTERED_ROW / 3, 3, 4,
               GF_XFORM_GPU_FILTERED_ROW / 3, 1, GF_OUT_U8, GF_LAYOUT_NHWC);
  uniform_case("tall gray", 2, 700, 3, 1, 700, 3, 1, GF_OUT_F32,
               GF_LAYOUT_NHWC);
  /* More samples than a grid's y dimension (65535). */
  if (!quick)
    uniform_case("70000 samples", 70000, 2, 3, 1, 2, 2, 2, GF_OUT_BF16,
                 GF_LAYOUT_NCHW);
  for (int i = 0; i < (quick ? 40 : 300); i++)
    resize_case(i, false, false);
  for (int i = 0; i < (quick ? 2 : 12); i++)
    resize_case(i, true, false);
  for (int i = 0; i < (quick ? 2 : 8); i++)
    resize_case(i, false, true);
  for (int i = 0; i < (quick ? 10 : 60); i++)
    mixed_case(i);
  /* Tiles in several chunks (8-20x down; at 8x and 3 channels each tile
   * as two halves of 16 columns, its whole source not fitting), then
   * tiles pixel by pixel. */
  resize_exact_case("8x down, rgb", 333, 301, 3, 41, 40, 0, GF_OUT_F16,
                    GF_LAYOUT_NCHW);
  resize_exact_case("8x down, rgba, plain", 330, 77, 4, 37, 45, 1,
                    GF_OUT_U8, GF_LAYOUT_NHWC);
  resize_exact_case("20x down, gray", 1300, 70, 1, 65, 7, 0, GF_OUT_F32,
                    GF_LAYOUT_NCHW);
  resize_exact_case("500x down across", 9, 4000, 3, 9, 8, 0, GF_OUT_BF16,
                    GF_LAYOUT_NHWC);
  resize_exact_case("60x down, rgba", 1200, 1200, 4, 20, 20, 0, GF_OUT_F32,
                    GF_LAYOUT_NHWC);
  resize_exact_case("60x down, rgba, plain", 1200, 1200, 4, 20, 20, 1,
                    GF_OUT_F16, GF_LAYOUT_NCHW);
  /* The band path's edges (resize_band.cuh): 256 columns (the most a
   * band takes) and 257 (the tiles), a shrink of 3.2x across (bands) and
   * 3.4x (tiles), rows in many chunks (plain 20x down: bands), a
   * vertical shrink near the band's limit for RGBA (9x: bands). */
  resize_exact_case("256 wide, bands", 70, 600, 3, 33, 256, 0, GF_OUT_F16,
                    GF_LAYOUT_NCHW);
  resize_exact_case("257 wide, tiles", 70, 600, 3, 33, 257, 0, GF_OUT_F16,
                    GF_LAYOUT_NCHW);
  resize_exact_case("3.2x across, bands", 90, 320, 3, 45, 100, 0,
                    GF_OUT_F32, GF_LAYOUT_NHWC);
  resize_exact_case("3.4x across, tiles", 90, 340, 3, 45, 100, 0,
                    GF_OUT_F32, GF_LAYOUT_NHWC);
  resize_exact_case("20x down, plain, bands", 1400, 90, 3, 70, 60, 1,
                    GF_OUT_BF16, GF_LAYOUT_NCHW);
  resize_exact_case("9x down, rgba, bands", 450, 100, 4, 50, 80, 0,
                    GF_OUT_U8, GF_LAYOUT_NCHW);
  bad_sample_cases();
  bad_resized_cases();
  launcher_refusals();
  printf("%llu launches checked, %llu output elements compared\n",
         (unsigned long long)n_cases, (unsigned long long)n_elems);

  CUDA_OK(cudaFree(d_src.p));
  CUDA_OK(cudaFree(d_params.p));
  CUDA_OK(cudaFree(d_dst.p));
  CUDA_OK(cudaFree(d_status.p));
  CUDA_OK(cudaStreamDestroy(stream));
  return gf_test_finish();
}
