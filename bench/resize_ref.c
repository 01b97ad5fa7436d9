/* One image through gpufeed's resize, for bench/resize_vs_torchvision.py:
 * reads H x W x 3 uint8 pixels (raw, HWC), chooses the window as the
 * loader would (gf_xform_window for sample INDEX of epoch 0 under SEED),
 * and writes into OUTDIR:
 *   win.txt      y x wh ww rs_h rs_w off_y off_x flip
 *   cpu_u8.raw   the CPU reference's output, OH x OW x 3 uint8 (NHWC)
 *   cpu_f32.raw  the same as f32 NCHW normalised with ImageNet's mean/std
 *                (pixel units: 123.675 116.28 103.53 / 58.395 57.12 57.375)
 *   gpu_u8.raw, gpu_f32.raw  the kernel's, when a CUDA device is there
 *
 *   resize_ref rrc|eval|exact OH OW SEED INDEX H W IN.raw OUTDIR
 * rrc: RandomResizedCrop(OH x OW) + flip; eval: Resize(round(OH*256/224))
 * + CenterCrop(OH x OW); exact: Resize((OH, OW)). Exits 0, or 1 with a
 * message. */
#include "gpufeed.h"
#include "xform/transform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUFEED_HAVE_CUDA
#include "kernels.h"
#include <cuda_runtime.h>
#endif

static const float kMean[3] = {123.675f, 116.28f, 103.53f};
static const float kStd[3] = {58.395f, 57.12f, 57.375f};

static int write_file(const char *dir, const char *name, const void *p,
                      size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n) {
    fprintf(stderr, "resize_ref: cannot write %s\n", path);
    if (f)
      fclose(f);
    return 1;
  }
  return fclose(f) != 0;
}

#ifdef GPUFEED_HAVE_CUDA
/* The kernel's output for t, or 1 when there is no device (nothing
 * written) and -1 on a CUDA error. */
static int run_gpu(const gf_transform *t, const uint8_t *img, size_t bytes,
                   const gf_xform_sample *s, uint32_t oh, uint32_t ow,
                   void *out, size_t out_bytes) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
    return 1;
  uint8_t *d_src = NULL;
  void *d_dst = NULL;
  gf_xform_sample *d_s = NULL;
  cudaStream_t st = NULL;
  int32_t *d_status = NULL, status = 0;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (!e)
    e = cudaMalloc((void **)&d_src, bytes);
  if (!e)
    e = cudaMalloc(&d_dst, out_bytes);
  if (!e)
    e = cudaMalloc((void **)&d_s, sizeof *s);
  if (!e)
    e = cudaMalloc((void **)&d_status, sizeof *d_status);
  if (!e)
    e = cudaMemcpy(d_src, img, bytes, cudaMemcpyHostToDevice);
  if (!e)
    e = cudaMemcpy(d_s, s, sizeof *s, cudaMemcpyHostToDevice);
  if (!e)
    e = cudaMemset(d_status, 0, sizeof *d_status);
  if (!e) {
    gf_xform_launch a;
    memset(&a, 0, sizeof a);
    a.src = d_src;
    a.src_len = bytes;
    a.samples = d_s;
    a.n = 1;
    a.n_resized = s->resize != 0;
    a.resize_size = gf_xform_resize_size(t, oh);
    a.out_h = oh;
    a.out_w = ow;
    a.out_c = 3;
    a.out_dtype = t->out_dtype;
    a.layout = t->layout;
    memcpy(a.mean, t->mean, sizeof a.mean);
    memcpy(a.std, t->std, sizeof a.std);
    a.dst = d_dst;
    a.status = d_status;
    e = gf_launch_xform(&a, st);
  }
  if (!e)
    e = cudaStreamSynchronize(st);
  if (!e)
    e = cudaMemcpy(out, d_dst, out_bytes, cudaMemcpyDeviceToHost);
  if (!e)
    e = cudaMemcpy(&status, d_status, sizeof status, cudaMemcpyDeviceToHost);
  cudaFree(d_src);
  cudaFree(d_dst);
  cudaFree(d_s);
  cudaFree(d_status);
  if (st)
    cudaStreamDestroy(st);
  if (e || status) {
    fprintf(stderr, "resize_ref: GPU: %s (status %d)\n",
            cudaGetErrorString(e), status);
    return -1;
  }
  return 0;
}
#endif

int main(int argc, char **argv) {
  if (argc != 10) {
    fprintf(stderr, "usage: resize_ref rrc|eval|exact OH OW SEED INDEX H W "
                    "IN.raw OUTDIR\n");
    return 1;
  }
  gf_transform t;
  memset(&t, 0, sizeof t);
  if (!strcmp(argv[1], "rrc")) {
    t.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
    t.hflip = 1;
  } else if (!strcmp(argv[1], "eval")) {
    t.resize = GF_RESIZE_SHORTER_CENTER_CROP;
  } else if (!strcmp(argv[1], "exact")) {
    t.resize = GF_RESIZE_EXACT;
  } else {
    fprintf(stderr, "resize_ref: unknown mode %s\n", argv[1]);
    return 1;
  }
  uint32_t oh = (uint32_t)strtoul(argv[2], NULL, 10);
  uint32_t ow = (uint32_t)strtoul(argv[3], NULL, 10);
  t.seed = strtoull(argv[4], NULL, 10);
  uint64_t index = strtoull(argv[5], NULL, 10);
  gf_shape sh = {0};
  sh.height = (uint32_t)strtoul(argv[6], NULL, 10);
  sh.width = (uint32_t)strtoul(argv[7], NULL, 10);
  sh.channels = 3;
  sh.dtype = GF_DTYPE_U8;
  t.height = oh;
  t.width = ow;
  if (gf_xform_check(&t) || !sh.height || !sh.width) {
    fprintf(stderr, "resize_ref: %s\n", gf_last_error()->message);
    return 1;
  }
  size_t bytes = (size_t)sh.height * sh.width * 3;
  uint8_t *img = malloc(bytes);
  FILE *f = fopen(argv[8], "rb");
  if (!img || !f || fread(img, 1, bytes, f) != bytes) {
    fprintf(stderr, "resize_ref: cannot read %zu bytes from %s\n", bytes,
            argv[8]);
    return 1;
  }
  fclose(f);
  const char *dir = argv[9];
  gf_xform_win w;
  gf_xform_window(&t, 0, index, sh.height, sh.width, &w);
  char line[256];
  int len = snprintf(line, sizeof line, "%d %d %u %u %u %u %d %d %u\n", w.y,
                     w.x, w.wh, w.ww, w.rs_h, w.rs_w, w.off_y, w.off_x,
                     w.flip);
  if (write_file(dir, "win.txt", line, (size_t)len))
    return 1;
  gf_xform_sample s;
  size_t n = (size_t)oh * ow * 3;
  void *out = malloc(n * 4);
  for (int pass = 0; pass < 2; pass++) {
    t.out_dtype = pass ? GF_OUT_F32 : GF_OUT_U8;
    t.layout = pass ? GF_LAYOUT_NCHW : GF_LAYOUT_NHWC;
    memset(t.mean, 0, sizeof t.mean);
    memset(t.std, 0, sizeof t.std);
    if (pass) {
      memcpy(t.mean, kMean, sizeof kMean);
      memcpy(t.std, kStd, sizeof kStd);
    }
    gf_xform_sample_init(&t, 0, index, 0, &sh, oh, ow, 0, &s);
    size_t ob = n * (pass ? 4 : 1);
    if (gf_xform_ref(&t, img, bytes, &s, 1, oh, ow, 3, out)) {
      fprintf(stderr, "resize_ref: %s\n", gf_last_error()->message);
      return 1;
    }
    if (write_file(dir, pass ? "cpu_f32.raw" : "cpu_u8.raw", out, ob))
      return 1;
#ifdef GPUFEED_HAVE_CUDA
    int g = run_gpu(&t, img, bytes, &s, oh, ow, out, ob);
    if (g < 0)
      return 1;
    if (g == 0 &&
        write_file(dir, pass ? "gpu_f32.raw" : "gpu_u8.raw", out, ob))
      return 1;
#endif
  }
  free(out);
  free(img);
  return 0;
}
