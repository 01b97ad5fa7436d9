/* JPEG decoding on the GPU with gpufeed's nvJPEG module (lib/gpu/nvjpeg.h):
 * the .jpg files of a folder read into memory, decoded in batches of
 * --batch (256) into one device buffer (each image interleaved RGB at its
 * offset, as the loader's device input would hold them), with the
 * hardware backend (the GPU's JPEG engines) and then the GPU hybrid one
 * (the SMs), each for --rounds passes over the folder after two warm-up
 * passes (the decoder's two decode states a format, taken in turn, each
 * grow their buffers on their first batches). With --resize the
 * transform kernel follows each batch on the same stream:
 * RandomResizedCrop + flip to 224 x 224, f16 NCHW normalised (as
 * xform_bench's rrc case). --repeat-chroma decodes with nvJPEG's own
 * chroma upsampling (GF_NVJPEG_REPEAT_CHROMA) rather than gpufeed's
 * default, interpolation; --no-pipeline opens the hardware backend as the
 * loader does (GF_NVJPEG_NO_PIPELINE).
 *
 * Per backend it prints images/s (wall clock over the timed passes, the
 * batches queued back to back on one stream, the host parsing batch k+1
 * while the GPU decodes batch k), the mean wall time a batch and the
 * median GPU span a batch (events around each batch's work), the images
 * the backend left to the CPU, the peak of nvJPEG's device and pinned
 * budgets, and the device memory the decoder held after the warm-up pass
 * (cudaMemGetInfo, less the output buffer): the budget, and what nvJPEG
 * took beside it (the hardware backend's engines' buffers). Where a
 * backend cannot be opened it prints why.
 *
 *   nvjpeg_bench DIR [--batch N] [--rounds N] [--backend hw|hybrid|both]
 *                    [--resize] [--repeat-chroma] [--no-pipeline]
 *                    [--budget MiB] [--json]
 *
 * Exits 77 without CUDA (a build without it, or no device) or without
 * libnvjpeg. */
#include "gpufeed.h"
#include "gpu/nvjpeg.h"
#include "xform/transform.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GPUFEED_HAVE_CUDA
#include "kernels.h"
#include <cuda_runtime.h>

#define CK(x)                                                                \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "nvjpeg_bench: %s: %s\n", #x, cudaGetErrorString(e_)); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

typedef struct file {
  uint8_t *data;
  size_t len;
  char name[256];
} file;

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const file *)a)->name, ((const file *)b)->name);
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static file *read_folder(const char *dir, uint32_t *n_out, uint64_t *bytes) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "nvjpeg_bench: cannot open %s\n", dir);
    exit(2);
  }
  uint32_t cap = 1024, n = 0;
  file *f = malloc(cap * sizeof *f);
  struct dirent *e;
  *bytes = 0;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || (strcmp(e->d_name + l - 4, ".jpg") &&
                  strcmp(e->d_name + l - 5, ".jpeg")))
      continue;
    if (n == cap)
      f = realloc(f, (cap *= 2) * sizeof *f);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *fp = fopen(path, "rb");
    if (!fp)
      continue;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f[n].data = malloc(len > 0 ? (size_t)len : 1);
    f[n].len = fread(f[n].data, 1, len > 0 ? (size_t)len : 0, fp);
    fclose(fp);
    snprintf(f[n].name, sizeof f[n].name, "%s", e->d_name);
    *bytes += f[n].len;
    n++;
  }
  closedir(d);
  qsort(f, n, sizeof *f, cmp_name);
  *n_out = n;
  return f;
}

typedef struct result {
  int ok;
  double img_s, batch_ms, gpu_ms, resize_ms;
  uint32_t decoded, cpu;
  uint64_t dev_peak, pin_peak;
  int64_t held; /* device bytes the decoder held beside its budget */
} result;

static uint64_t round256(uint64_t x) { return (x + 255) / 256 * 256; }

static uint64_t dev_free(void) {
  size_t fr = 0, tot = 0;
  CK(cudaMemGetInfo(&fr, &tot));
  return fr;
}

static result bench_backend(uint32_t backend, const file *f, uint32_t n,
                            uint32_t batch, int rounds, int resize,
                            uint64_t budget, uint32_t flags) {
  result r;
  memset(&r, 0, sizeof r);
  const char *label = backend == GF_NVJPEG_HARDWARE ? "hardware" : "gpu_hybrid";
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  gf_nvjpeg_config c;
  memset(&c, 0, sizeof c);
  c.device = 0;
  c.backend = backend;
  c.stream = st;
  c.max_batch = batch;
  c.device_budget = budget;
  c.flags = flags;
  uint64_t free0 = dev_free();
  gf_nvjpeg *h = NULL;
  char why[512];
  if (gf_nvjpeg_open(&c, &h, why, sizeof why) < 0) {
    printf("%s: not opened: %s\n", label, why);
    CK(cudaStreamDestroy(st));
    return r;
  }
  /* What the backend takes, and where each image goes in its batch. */
  uint32_t *take = malloc(n * sizeof *take), m = 0;
  gf_shape *sh = calloc(n, sizeof *sh);
  for (uint32_t i = 0; i < n; i++) {
    gf_nvjpeg_info info;
    if (gf_nvjpeg_probe(h, f[i].data, f[i].len, &info) == 0 &&
        info.supported) {
      sh[m] = (gf_shape){.height = info.height, .width = info.width,
                         .channels = 3, .dtype = GF_DTYPE_U8};
      take[m++] = i;
    }
  }
  r.cpu = n - m;
  uint32_t nb = (m + batch - 1) / batch;
  uint64_t *off = malloc(((size_t)m + 1) * sizeof *off), most = 0;
  for (uint32_t b = 0; b < nb; b++) {
    uint64_t o = 0;
    for (uint32_t k = b * batch; k < m && k < (b + 1) * batch; k++) {
      off[k] = o;
      o += round256((uint64_t)sh[k].height * sh[k].width * 3);
    }
    most = o > most ? o : most;
  }
  uint8_t *d_in;
  CK(cudaMalloc((void **)&d_in, most ? most : 256));
  /* The resize: each batch's sample parameters, made once. */
  const uint32_t H = 224, W = 224;
  gf_transform tf;
  memset(&tf, 0, sizeof tf);
  tf.out_dtype = GF_OUT_F16;
  tf.layout = GF_LAYOUT_NCHW;
  tf.height = H;
  tf.width = W;
  tf.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
  tf.hflip = 1;
  const float mean[3] = {123.675f, 116.28f, 103.53f},
              sd[3] = {58.395f, 57.12f, 57.375f};
  memcpy(tf.mean, mean, sizeof mean);
  memcpy(tf.std, sd, sizeof sd);
  tf.seed = 1;
  gf_xform_sample *hs = calloc(m ? m : 1, sizeof *hs), *d_s = NULL;
  void *d_out = NULL;
  if (resize && m) {
    for (uint32_t k = 0; k < m; k++)
      gf_xform_sample_init(&tf, 0, k, off[k], &sh[k], H, W, 0, &hs[k]);
    CK(cudaMalloc((void **)&d_s, m * sizeof *hs));
    CK(cudaMemcpy(d_s, hs, m * sizeof *hs, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d_out, (size_t)batch * H * W * 3 * 2));
  }
  gf_nvjpeg_image *im = calloc(batch, sizeof *im);
  cudaEvent_t *ev = malloc(2 * (size_t)nb * sizeof *ev);
  for (uint32_t k = 0; k < 2 * nb; k++)
    CK(cudaEventCreate(&ev[k]));
  float *ms = malloc(((size_t)nb * rounds + 1) * sizeof *ms);
  int nms = 0;
  double t_all = 0;
  enum { WARMUP = 2 };
  for (int round = -WARMUP; round < rounds; round++) {
    double t0 = now_s();
    for (uint32_t b = 0; b < nb; b++) {
      uint32_t k0 = b * batch, cnt = m - k0 < batch ? m - k0 : batch;
      for (uint32_t j = 0; j < cnt; j++) {
        const file *fi = &f[take[k0 + j]];
        im[j] = (gf_nvjpeg_image){.data = fi->data,
                                  .len = fi->len,
                                  .dst = d_in + off[k0 + j],
                                  .dst_cap = (uint64_t)sh[k0 + j].height *
                                             sh[k0 + j].width * 3,
                                  .channels = 3,
                                  .sample = k0 + j,
                                  .name = fi->name};
      }
      CK(cudaEventRecord(ev[2 * b], st));
      gf_nvjpeg_result res;
      int rc = gf_nvjpeg_decode(h, im, cnt, &res);
      if (rc < 0) {
        fprintf(stderr, "%s: batch %u: %s\n", label, b,
                gf_last_error()->message);
        exit(1);
      }
      if (res.decoded != cnt)
        for (uint32_t j = 0; j < cnt; j++)
          if (im[j].status)
            fprintf(stderr, "%s: %s\n", label, im[j].why);
      if (round == 0)
        r.decoded += res.decoded;
      if (resize) {
        gf_xform_launch a;
        memset(&a, 0, sizeof a);
        a.src = d_in;
        a.src_len = most;
        a.samples = d_s + k0;
        a.n = cnt;
        a.n_resized = cnt;
        a.out_h = H;
        a.out_w = W;
        a.out_c = 3;
        a.out_dtype = tf.out_dtype;
        a.layout = tf.layout;
        memcpy(a.mean, tf.mean, sizeof a.mean);
        memcpy(a.std, tf.std, sizeof a.std);
        a.dst = d_out;
        CK(gf_launch_xform(&a, st));
      }
      CK(cudaEventRecord(ev[2 * b + 1], st));
    }
    CK(cudaStreamSynchronize(st));
    double t = now_s() - t0;
    if (round == -1) {
      /* Warm: nvJPEG's buffers have grown to the batch. What the device
       * lost since before the open, less our own buffers and the budget,
       * is what nvJPEG holds beside the budget. */
      uint64_t ours = most + (resize && m ? m * sizeof *hs +
                                                (size_t)batch * H * W * 3 * 2
                                          : 0);
      gf_nvjpeg_stats s0;
      gf_nvjpeg_stats_get(h, &s0);
      r.held = (int64_t)(free0 - dev_free()) - (int64_t)ours -
               (int64_t)s0.device_budget;
    }
    if (round < 0)
      continue;
    t_all += t;
    for (uint32_t b = 0; b < nb; b++)
      CK(cudaEventElapsedTime(&ms[nms++], ev[2 * b], ev[2 * b + 1]));
  }
  if (nms) {
    qsort(ms, (size_t)nms, sizeof *ms, cmpf);
    r.gpu_ms = ms[nms / 2];
  }
  r.img_s = t_all > 0 ? (double)m * rounds / t_all : 0;
  r.batch_ms = nb ? t_all * 1e3 / ((double)nb * rounds) : 0;
  gf_nvjpeg_stats s;
  gf_nvjpeg_stats_get(h, &s);
  r.dev_peak = s.device_peak;
  r.pin_peak = s.pinned_peak;
  r.ok = 1;
  printf("%s: nvJPEG %d.%d.%d, %u JPEG engines: %u images (%u left to the "
         "CPU), "
         "batches of %u%s: %.0f images/s, %.2f ms a batch (wall), GPU span "
         "%.2f ms a batch (median); device budget %llu MiB, peak %.1f MiB "
         "through it, %.1f MiB held beside it; pinned peak %.1f MiB; %llu "
         "state inits, %llu fallbacks%s\n",
         label, s.version[0], s.version[1], s.version[2], s.hw_engines,
         m, r.cpu, batch, resize ? " + RandomResizedCrop 224 f16" : "",
         r.img_s, r.batch_ms, r.gpu_ms,
         (unsigned long long)(s.device_budget >> 20), s.device_peak / 1048576.0,
         r.held / 1048576.0, s.pinned_peak / 1048576.0,
         (unsigned long long)s.reinits, (unsigned long long)s.fallbacks,
         flags & GF_NVJPEG_REPEAT_CHROMA ? " (chroma repeated)" : "");
  gf_nvjpeg_close(h);
  for (uint32_t k = 0; k < 2 * nb; k++)
    CK(cudaEventDestroy(ev[k]));
  free(ev);
  free(ms);
  free(im);
  free(hs);
  free(take);
  free(sh);
  free(off);
  CK(cudaFree(d_in));
  if (d_s)
    CK(cudaFree(d_s));
  if (d_out)
    CK(cudaFree(d_out));
  CK(cudaStreamDestroy(st));
  return r;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *which = "both";
  uint32_t batch = 256;
  int rounds = 5, resize = 0, json = 0;
  uint32_t flags = 0;
  uint64_t budget = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
      which = argv[++i];
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
      budget = (uint64_t)atoll(argv[++i]) << 20;
    else if (!strcmp(argv[i], "--resize"))
      resize = 1;
    else if (!strcmp(argv[i], "--repeat-chroma"))
      flags |= GF_NVJPEG_REPEAT_CHROMA;
    else if (!strcmp(argv[i], "--no-pipeline"))
      flags |= GF_NVJPEG_NO_PIPELINE;
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (argv[i][0] != '-' && !dir)
      dir = argv[i];
    else {
      dir = NULL;
      break;
    }
  }
  if (!dir || batch < 1 || rounds < 1 ||
      (strcmp(which, "hw") && strcmp(which, "hybrid") &&
       strcmp(which, "both"))) {
    fprintf(stderr, "usage: nvjpeg_bench DIR [--batch N] [--rounds N] "
                    "[--backend hw|hybrid|both] [--resize] [--repeat-chroma] "
                    "[--no-pipeline] [--budget MiB] [--json]\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "nvjpeg_bench: no CUDA device\n");
    return 77;
  }
  uint32_t n = 0;
  uint64_t bytes = 0;
  file *f = read_folder(dir, &n, &bytes);
  printf("%u JPEG files, %.1f MB, in memory\n", n, (double)bytes / 1e6);
  result hw = {0}, hy = {0};
  if (strcmp(which, "hybrid"))
    hw = bench_backend(GF_NVJPEG_HARDWARE, f, n, batch, rounds, resize, budget,
                       flags);
  if (strcmp(which, "hw"))
    hy = bench_backend(GF_NVJPEG_GPU_HYBRID, f, n, batch, rounds, resize,
                       budget, flags);
  if (json)
    printf("{\"files\": %u, \"batch\": %u, \"resize\": %d, "
           "\"hardware_img_s\": %.1f, \"hardware_batch_ms\": %.3f, "
           "\"hardware_gpu_ms\": %.3f, \"hardware_held\": %lld, "
           "\"hybrid_img_s\": %.1f, \"hybrid_batch_ms\": %.3f, "
           "\"hybrid_gpu_ms\": %.3f, \"hybrid_peak\": %llu}\n",
           n, batch, resize, hw.img_s, hw.batch_ms, hw.gpu_ms,
           (long long)hw.held, hy.img_s, hy.batch_ms, hy.gpu_ms,
           (unsigned long long)hy.dev_peak);
  for (uint32_t i = 0; i < n; i++)
    free(f[i].data);
  free(f);
  return hw.ok || hy.ok ? 0 : 77;
}
#else
int main(void) {
  fprintf(stderr, "nvjpeg_bench: built without CUDA\n");
  return 77;
}
#endif
