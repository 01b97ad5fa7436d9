/* The transform pass's GPU time with and without resizing: a batch of 256
 * RGB uint8 samples of random sizes (sides 200-500 px) made into 224x224
 * f16 NCHW normalised, as
 *   crop:  GF_RESIZE_NONE, the centred 224x224 crop (zero padding where a
 *          side is under 224);
 *   rrc:   GF_RESIZE_RANDOM_RESIZED_CROP + flip;
 *   eval:  GF_RESIZE_SHORTER_CENTER_CROP (Resize(256) + CenterCrop(224));
 *          both through the default resize path (resize_path 0: bands
 *          of 32 output rows, a thread a column, resize_band.cuh);
 * beside the batch's host-to-device copy (pinned) in the same run; then,
 * to say where the resize's time goes, the same rrc and eval batches
 *   tiles: through the 32x32 tiles (resize_path GF_XFORM_RESIZE_TILES,
 *          the path before the bands);
 *   pixel: through the per-pixel path (resize_path
 *          GF_XFORM_RESIZE_PER_PIXEL: taps and weights recomputed for
 *          every output pixel, the tiles' fallback);
 *   skip:  launched with n_resized 0: the crop kernel alone, skipping every
 *          (resized) sample: what launching it beside the resize kernel
 *          would cost (a batch of resized samples alone runs the resize
 *          kernel alone, so rrc and eval are that kernel's own time).
 * Each figure is the median of --iters timed launches (CUDA events on one
 * stream). Prints one line a case and a JSON line with --json.
 *
 *   xform_bench [--iters N] [--batch N] [--rows N] [--json]
 *
 * --rows: output rows a band of the default path (resize_rows; 0, the
 * default: the launcher's choice).
 *
 * Exits 77 without CUDA (a build without it, or no device). */
#include "gpufeed.h"
#include "xform/transform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUFEED_HAVE_CUDA
#include "kernels.h"
#include <cuda_runtime.h>

#define CK(x)                                                                \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "xform_bench: %s: %s\n", #x, cudaGetErrorString(e_));  \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static float median(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpf);
  return v[n / 2];
}

int main(int argc, char **argv) {
  int iters = 50, json = 0;
  uint32_t n = 256, rows = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      n = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
      rows = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else {
      fprintf(stderr, "usage: xform_bench [--iters N] [--batch N] "
                      "[--rows N] [--json]\n");
      return 2;
    }
  }
  if (iters < 1 || n < 1)
    return 2;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "xform_bench: no CUDA device\n");
    return 77;
  }
  const uint32_t H = 224, W = 224, C = 3;
  gf_shape *sh = calloc(n, sizeof *sh);
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++) {
    sh[i].height = 200 + (uint32_t)(rnd() % 301);
    sh[i].width = 200 + (uint32_t)(rnd() % 301);
    sh[i].channels = C;
    sh[i].dtype = GF_DTYPE_U8;
    total += (uint64_t)sh[i].height * sh[i].width * C;
  }
  uint8_t *host;
  CK(cudaHostAlloc((void **)&host, total, cudaHostAllocDefault));
  /* Smooth photo-like content with some noise. */
  uint64_t off = 0;
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t y = 0; y < sh[i].height; y++)
      for (uint32_t x = 0; x < sh[i].width; x++)
        for (uint32_t c = 0; c < C; c++)
          host[off++] = (uint8_t)((x * (c + 1) + y * 2 + (rnd() & 15)) & 255);
  }
  uint8_t *d_src;
  void *d_dst;
  gf_xform_sample *d_s, *hs = calloc(n, sizeof *hs);
  size_t out_bytes = (size_t)n * H * W * C * 2;
  CK(cudaMalloc((void **)&d_src, total));
  CK(cudaMalloc(&d_dst, out_bytes));
  CK(cudaMalloc((void **)&d_s, n * sizeof *hs));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t = malloc((size_t)iters * sizeof *t);

  /* The copy. */
  for (int i = 0; i < iters; i++) {
    CK(cudaEventRecord(e0, st));
    CK(cudaMemcpyAsync(d_src, host, total, cudaMemcpyHostToDevice, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t[i], e0, e1));
  }
  float copy_ms = median(t, iters);
  printf("batch %u samples, %.1f MB u8 in, %.1f MB f16 out\n", n,
         (double)total / 1e6, (double)out_bytes / 1e6);
  printf("h2d copy (pinned): %.3f ms (%.1f GB/s)\n", copy_ms,
         (double)total / copy_ms / 1e6);

  enum { NCASE = 9 };
  static const char *names[NCASE] = {"crop",       "rrc",        "eval",
                                     "rrc-pixel",  "eval-pixel", "rrc-skip",
                                     "eval-skip",  "rrc-tiles",  "eval-tiles"};
  static const uint32_t modes[NCASE] = {
      GF_RESIZE_NONE,
      GF_RESIZE_RANDOM_RESIZED_CROP,
      GF_RESIZE_SHORTER_CENTER_CROP,
      GF_RESIZE_RANDOM_RESIZED_CROP,
      GF_RESIZE_SHORTER_CENTER_CROP,
      GF_RESIZE_RANDOM_RESIZED_CROP,
      GF_RESIZE_SHORTER_CENTER_CROP,
      GF_RESIZE_RANDOM_RESIZED_CROP,
      GF_RESIZE_SHORTER_CENTER_CROP};
  static const uint32_t paths[NCASE] = {0,
                                        0,
                                        0,
                                        GF_XFORM_RESIZE_PER_PIXEL,
                                        GF_XFORM_RESIZE_PER_PIXEL,
                                        0,
                                        0,
                                        GF_XFORM_RESIZE_TILES,
                                        GF_XFORM_RESIZE_TILES};
  float ms[NCASE];
  for (int m = 0; m < NCASE; m++) {
    gf_transform tf;
    memset(&tf, 0, sizeof tf);
    tf.out_dtype = GF_OUT_F16;
    tf.layout = GF_LAYOUT_NCHW;
    tf.height = H;
    tf.width = W;
    tf.resize = modes[m];
    tf.hflip = modes[m] == GF_RESIZE_RANDOM_RESIZED_CROP;
    const float mean[3] = {123.675f, 116.28f, 103.53f},
                sd[3] = {58.395f, 57.12f, 57.375f};
    memcpy(tf.mean, mean, sizeof mean);
    memcpy(tf.std, sd, sizeof sd);
    tf.seed = 1;
    off = 0;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < n; i++) {
      gf_xform_sample_init(&tf, 0, i, off, &sh[i], H, W, 0, &hs[i]);
      nr += hs[i].resize != 0;
      off += (uint64_t)sh[i].height * sh[i].width * C;
    }
    if (gf_xform_validate(hs, n, total, H, W, C, GF_XFORM_FOR_GPU)) {
      fprintf(stderr, "xform_bench: %s\n", gf_last_error()->message);
      return 1;
    }
    CK(cudaMemcpy(d_s, hs, n * sizeof *hs, cudaMemcpyHostToDevice));
    gf_xform_launch a;
    memset(&a, 0, sizeof a);
    a.src = d_src;
    a.src_len = total;
    a.samples = d_s;
    a.n = n;
    a.n_resized = m == 5 || m == 6 ? 0 : nr;
    a.resize_size = gf_xform_resize_size(&tf, H);
    a.resize_path = paths[m];
    a.resize_rows = rows;
    a.out_h = H;
    a.out_w = W;
    a.out_c = C;
    a.out_dtype = tf.out_dtype;
    a.layout = tf.layout;
    memcpy(a.mean, tf.mean, sizeof a.mean);
    memcpy(a.std, tf.std, sizeof a.std);
    a.dst = d_dst;
    CK(gf_launch_xform(&a, st)); /* warm-up */
    CK(cudaStreamSynchronize(st));
    for (int i = 0; i < iters; i++) {
      CK(cudaEventRecord(e0, st));
      CK(gf_launch_xform(&a, st));
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&t[i], e0, e1));
    }
    ms[m] = median(t, iters);
    printf("%-10s transform: %.3f ms (%.2f%% of copy + transform)\n",
           names[m], ms[m], 100.0 * ms[m] / (copy_ms + ms[m]));
  }
  printf("resize adds over the crop pass: rrc %+.3f ms, eval %+.3f ms; "
         "per batch (copy + transform): rrc %+.1f%%, eval %+.1f%%\n",
         ms[1] - ms[0], ms[2] - ms[0],
         100.0 * (ms[1] - ms[0]) / (copy_ms + ms[0]),
         100.0 * (ms[2] - ms[0]) / (copy_ms + ms[0]));
  printf("the resize kernels (alone in the rrc and eval passes): default "
         "(bands) rrc %.3f ms, eval %.3f ms; tiles rrc %.3f ms, eval %.3f ms "
         "(would add %+.1f%% / %+.1f%%); per-pixel rrc %.3f ms, eval %.3f ms; "
         "the crop kernel skipping resized samples %.3f / %.3f ms\n",
         ms[1], ms[2], ms[7], ms[8],
         100.0 * (ms[7] - ms[0]) / (copy_ms + ms[0]),
         100.0 * (ms[8] - ms[0]) / (copy_ms + ms[0]), ms[3], ms[4], ms[5],
         ms[6]);
  if (json)
    printf("{\"batch\": %u, \"in_bytes\": %llu, \"h2d_ms\": %.4f, "
           "\"crop_ms\": %.4f, \"rrc_ms\": %.4f, \"eval_ms\": %.4f, "
           "\"rrc_pixel_ms\": %.4f, \"eval_pixel_ms\": %.4f, "
           "\"rrc_skip_ms\": %.4f, \"eval_skip_ms\": %.4f, "
           "\"rrc_tiles_ms\": %.4f, \"eval_tiles_ms\": %.4f}\n",
           n, (unsigned long long)total, copy_ms, ms[0], ms[1], ms[2], ms[3],
           ms[4], ms[5], ms[6], ms[7], ms[8]);
  CK(cudaFree(d_src));
  CK(cudaFree(d_dst));
  CK(cudaFree(d_s));
  CK(cudaFreeHost(host));
  CK(cudaStreamDestroy(st));
  free(t);
  free(sh);
  free(hs);
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "xform_bench: built without CUDA\n");
  return 77;
}
#endif
