/* What nvJPEG's hardware backend costs the host beside a training loop, by
 * output format: the decode's own rate and CPU time, and what it does to
 * another thread's kernel launches (a stand-in for the training thread,
 * whose launches issue 37's profiles showed 2.4x slower beside the
 * engines' decode).
 *
 * The .jpg files of a folder (and of its class folders) are read into memory
 * and parsed once; those the engines take are decoded in batches of --batch
 * with nvjpegDecodeBatched straight from libnvjpeg (dlopen), two decode states
 * taken in turn as the loader does, for each output format asked:
 * rgbi (interleaved RGB, the loader's), rgb (planar RGB), yuv (the JPEG's
 * own planes, no colour conversion), y (luma only) and unchanged; a
 * format with "+roi" (rgbi+roi) decodes only each image's
 * RandomResizedCrop window (torchvision's: 8-100% of the area, aspect 3/4
 * to 4/3) with nvjpegDecodeBatchedEx and a region of interest, what the
 * engines would save if the loader asked for the crop alone.
 * Three phases a format, --seconds each:
 *   decode   the decode loop alone: images/s and host CPU microseconds an
 *            image (the process's CPU time over the images);
 *   launch   the launcher alone: a thread launching steps of --kernels
 *            kernels of --kernel-us microseconds each on its own stream,
 *            a stream synchronisation after each step (a training step):
 *            mean microseconds a launch call takes, mean step time;
 *   both     the two at once.
 * The launcher's figures in `both` against `launch` are the cost to the
 * training thread; the decode's in `both` what the decoder still gives.
 *
 *   nvjpeg_host_cost DIR [--batch N] [--seconds S] [--formats a,b,...]
 *                        [--kernels N] [--kernel-us U] [--pipeline]
 *                        [--interp]
 *
 * --pipeline leaves the engines' pipelining on (the loader turns it off),
 * --interp asks for chroma upsampled by interpolation (the loader's).
 * Exits 77 without CUDA, a device, libnvjpeg or JPEG engines. */
#include "gpu/nvjpeg_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUFEED_HAVE_CUDA
#include "spin.h"

#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "nvjpeg_host_cost: %s: %s\n", #x,                        \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)
#define NK(x)                                                                  \
  do {                                                                         \
    gf_nvj_status s_ = (x);                                                    \
    if (s_ != GF_NVJ_STATUS_SUCCESS) {                                         \
      fprintf(stderr, "nvjpeg_host_cost: %s: status %d\n", #x, s_);            \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* nvjpegOutputFormat_t values beside the two nvjpeg_api.h names. */
enum { OUT_UNCHANGED = 0, OUT_YUV = 1, OUT_RGB = 3 };

/* The decode-parameter calls of nvjpegDecodeBatchedEx (ROI decode), not in
 * nvjpeg_api.h as the library does not use them. */
typedef struct gf_nvj_params_s *gf_nvj_params;
typedef gf_nvj_status (*nvj_ParamsCreate)(gf_nvj_handle, gf_nvj_params *);
typedef gf_nvj_status (*nvj_ParamsDestroy)(gf_nvj_params);
typedef gf_nvj_status (*nvj_ParamsSetOutputFormat)(gf_nvj_params, int);
typedef gf_nvj_status (*nvj_ParamsSetROI)(gf_nvj_params, int, int, int, int);
typedef gf_nvj_status (*nvj_DecodeBatchedEx)(gf_nvj_handle, gf_nvj_state,
                                             const unsigned char *const *,
                                             const size_t *, gf_nvj_image *,
                                             gf_nvj_params *, cudaStream_t);

static struct {
  nvj_ParamsCreate DecodeParamsCreate;
  nvj_ParamsDestroy DecodeParamsDestroy;
  nvj_ParamsSetOutputFormat DecodeParamsSetOutputFormat;
  nvj_ParamsSetROI DecodeParamsSetROI;
  nvj_DecodeBatchedEx DecodeBatchedEx;
  gf_nvj_CreateExV2 CreateExV2;
  gf_nvj_Destroy Destroy;
  gf_nvj_JpegStateCreate JpegStateCreate;
  gf_nvj_JpegStateDestroy JpegStateDestroy;
  gf_nvj_DecodeBatchedInitialize DecodeBatchedInitialize;
  gf_nvj_DecodeBatched DecodeBatched;
  gf_nvj_DecodeBatchedSupported DecodeBatchedSupported;
  gf_nvj_JpegStreamCreate JpegStreamCreate;
  gf_nvj_JpegStreamParseHeader JpegStreamParseHeader;
  gf_nvj_JpegStreamGetFrameDimensions JpegStreamGetFrameDimensions;
} F;

static int load(void) {
  void *dl = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    dl = dlopen("libnvjpeg.so", RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return -1;
#define SYM(n)                                                                 \
  do {                                                                         \
    *(void **)&F.n = dlsym(dl, "nvjpeg" #n);                                   \
    if (!F.n)                                                                  \
      return -1;                                                               \
  } while (0)
  SYM(CreateExV2);
  SYM(Destroy);
  SYM(JpegStateCreate);
  SYM(JpegStateDestroy);
  SYM(DecodeBatchedInitialize);
  SYM(DecodeBatched);
  SYM(DecodeBatchedSupported);
  SYM(JpegStreamCreate);
  SYM(JpegStreamParseHeader);
  SYM(JpegStreamGetFrameDimensions);
#undef SYM
  /* Optional: only --roi needs them. */
  *(void **)&F.DecodeParamsCreate = dlsym(dl, "nvjpegDecodeParamsCreate");
  *(void **)&F.DecodeParamsDestroy = dlsym(dl, "nvjpegDecodeParamsDestroy");
  *(void **)&F.DecodeParamsSetOutputFormat =
      dlsym(dl, "nvjpegDecodeParamsSetOutputFormat");
  *(void **)&F.DecodeParamsSetROI = dlsym(dl, "nvjpegDecodeParamsSetROI");
  *(void **)&F.DecodeBatchedEx = dlsym(dl, "nvjpegDecodeBatchedEx");
  return 0;
}

static int dmalloc(void *ctx, void **p, size_t n, cudaStream_t s) {
  (void)ctx;
  (void)s;
  return cudaMalloc(p, n) == cudaSuccess ? 0 : 1;
}
static int dfree(void *ctx, void *p, size_t n, cudaStream_t s) {
  (void)ctx;
  (void)n;
  (void)s;
  return cudaFree(p) == cudaSuccess ? 0 : 1;
}
static int pmalloc(void *ctx, void **p, size_t n, cudaStream_t s) {
  (void)ctx;
  (void)s;
  return cudaMallocHost(p, n) == cudaSuccess ? 0 : 1;
}
static int pfree(void *ctx, void *p, size_t n, cudaStream_t s) {
  (void)ctx;
  (void)n;
  (void)s;
  return cudaFreeHost(p) == cudaSuccess ? 0 : 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(clockid_t which) {
  struct timespec ts;
  clock_gettime(which, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct img {
  unsigned char *data;
  size_t len;
  unsigned w, h;
} img;

static img *files;
static unsigned nfiles;

static void add_file(const char *path) {
  static unsigned cap;
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return;
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  if (len > 0) {
    if (nfiles == cap)
      files = realloc(files, (cap = cap ? cap * 2 : 1024) * sizeof *files);
    files[nfiles].data = malloc((size_t)len);
    files[nfiles].len = fread(files[nfiles].data, 1, (size_t)len, fp);
    nfiles++;
  }
  fclose(fp);
}

/* The .jpg files of dir and of its folders (a class a folder), depth 2. */
static void read_folder(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "nvjpeg_host_cost: cannot open %s\n", dir);
    exit(2);
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".jpg"))
      add_file(path);
    else if (depth > 1 && e->d_type == DT_DIR)
      read_folder(path, depth - 1);
  }
  closedir(d);
}

/* ---- the launcher: a training thread's stand-in ---- */

typedef struct launcher {
  int kernels;
  uint64_t kernel_ns;
  double seconds;
  double launch_us, step_ms;
  long steps;
} launcher;

static void *launch_main(void *arg) {
  launcher *L = arg;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double t0 = now_s(), in_launch = 0;
  long launches = 0;
  L->steps = 0;
  while (now_s() - t0 < L->seconds) {
    for (int k = 0; k < L->kernels; k++) {
      double a = now_s();
      CK(gf_launch_spin(s, L->kernel_ns));
      in_launch += now_s() - a;
      launches++;
    }
    CK(cudaStreamSynchronize(s));
    L->steps++;
  }
  double t = now_s() - t0;
  L->launch_us = launches ? in_launch * 1e6 / (double)launches : 0;
  L->step_ms = L->steps ? t * 1e3 / (double)L->steps : 0;
  CK(cudaStreamDestroy(s));
  return NULL;
}

/* ---- the decoder ---- */

typedef struct decoder {
  int format;
  int roi; /* each image's RandomResizedCrop window only (BatchedEx) */
  unsigned flags;
  unsigned batch;
  double seconds;
  unsigned *take; /* the files the engines take */
  unsigned ntake;
  unsigned maxw, maxh;
  double img_s, cpu_us, thread_us; /* process / decode thread CPU time */
} decoder;

static void *decode_main(void *arg) {
  decoder *D = arg;
  gf_nvj_dev_allocator_v2 da = {dmalloc, dfree, NULL};
  gf_nvj_pinned_allocator_v2 pa = {pmalloc, pfree, NULL};
  gf_nvj_handle h;
  NK(F.CreateExV2(GF_NVJ_BACKEND_HARDWARE, &da, &pa, D->flags, &h));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  gf_nvj_state js[2];
  cudaEvent_t ev[2];
  int pending[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    NK(F.JpegStateCreate(h, &js[k]));
    NK(F.DecodeBatchedInitialize(h, js[k], (int)D->batch, 1, D->format));
    CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
  }
  size_t plane = (size_t)D->maxw * D->maxh;
  unsigned char *out[2];
  for (int k = 0; k < 2; k++)
    CK(cudaMalloc((void **)&out[k], plane * 3 * D->batch));
  gf_nvj_params *par[2] = {NULL, NULL};
  if (D->roi)
    for (int k = 0; k < 2; k++) {
      par[k] = calloc(D->batch, sizeof *par[k]);
      for (unsigned j = 0; j < D->batch; j++) {
        NK(F.DecodeParamsCreate(h, &par[k][j]));
        NK(F.DecodeParamsSetOutputFormat(par[k][j], D->format));
      }
    }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  const unsigned char **data = malloc(D->batch * sizeof *data);
  size_t *lens = malloc(D->batch * sizeof *lens);
  gf_nvj_image *dst = calloc(D->batch, sizeof *dst);
  unsigned next = 0;
  long images = 0;
  double t0 = 0, c0 = 0, d0 = 0;
  for (int round = 0;; round++) {
    if (round == 4) { /* the states have grown: measure from here */
      CK(cudaStreamSynchronize(st));
      t0 = now_s();
      c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
      d0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
      images = 0;
    }
    if (round > 4 && now_s() - t0 >= D->seconds)
      break;
    int k = round & 1;
    if (pending[k])
      CK(cudaEventSynchronize(ev[k]));
    for (unsigned j = 0; j < D->batch; j++) {
      const img *im = &files[D->take[next]];
      next = (next + 1) % D->ntake;
      data[j] = im->data;
      lens[j] = im->len;
      memset(&dst[j], 0, sizeof dst[j]);
      unsigned char *base = out[k] + plane * 3 * j;
      unsigned w = im->w;
      if (D->roi) {
        /* torchvision's RandomResizedCrop window: 8-100% of the area,
         * aspect ratio 3/4 to 4/3 (log-uniform), clamped to the image. */
        double u[3];
        for (int q = 0; q < 3; q++) {
          rng = rng * 6364136223846793005ull + 1442695040888963407ull;
          u[q] = (double)(rng >> 11) / 9007199254740992.0;
        }
        double area = (double)im->w * im->h * (0.08 + 0.92 * u[0]);
        double ar = exp(log(0.75) + (log(4.0 / 3) - log(0.75)) * u[1]);
        unsigned cw = (unsigned)(sqrt(area * ar) + 0.5),
                 ch = (unsigned)(sqrt(area / ar) + 0.5);
        cw = cw < 1 ? 1 : cw > im->w ? im->w : cw;
        ch = ch < 1 ? 1 : ch > im->h ? im->h : ch;
        unsigned x = (unsigned)(u[2] * (im->w - cw + 1)),
                 y = (unsigned)(u[0] * (im->h - ch + 1));
        x = x > im->w - cw ? im->w - cw : x;
        y = y > im->h - ch ? im->h - ch : y;
        NK(F.DecodeParamsSetROI(par[k][j], (int)x, (int)y, (int)cw, (int)ch));
        w = cw;
      }
      if (D->format == GF_NVJ_OUTPUT_RGBI) {
        dst[j].channel[0] = base;
        dst[j].pitch[0] = (size_t)w * 3;
      } else if (D->format == GF_NVJ_OUTPUT_Y) {
        dst[j].channel[0] = base;
        dst[j].pitch[0] = w;
      } else
        for (int c = 0; c < 3; c++) {
          dst[j].channel[c] = base + plane * c;
          dst[j].pitch[c] = w;
        }
    }
    if (D->roi)
      NK(F.DecodeBatchedEx(h, js[k], data, lens, dst, par[k], st));
    else
      NK(F.DecodeBatched(h, js[k], data, lens, dst, st));
    CK(cudaEventRecord(ev[k], st));
    pending[k] = 1;
    images += D->batch;
  }
  CK(cudaStreamSynchronize(st));
  double t = now_s() - t0, c = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0,
         d = cpu_s(CLOCK_THREAD_CPUTIME_ID) - d0;
  D->img_s = (double)images / t;
  D->cpu_us = c * 1e6 / (double)images;
  D->thread_us = d * 1e6 / (double)images;
  for (int k = 0; k < 2; k++) {
    for (unsigned j = 0; par[k] && j < D->batch; j++)
      F.DecodeParamsDestroy(par[k][j]);
    free(par[k]);
    F.JpegStateDestroy(js[k]);
    CK(cudaEventDestroy(ev[k]));
    CK(cudaFree(out[k]));
  }
  F.Destroy(h);
  CK(cudaStreamDestroy(st));
  free(data);
  free(lens);
  free(dst);
  return NULL;
}

static int format_of(const char *s) {
  if (!strcmp(s, "rgbi"))
    return GF_NVJ_OUTPUT_RGBI;
  if (!strcmp(s, "rgb"))
    return OUT_RGB;
  if (!strcmp(s, "yuv"))
    return OUT_YUV;
  if (!strcmp(s, "y"))
    return GF_NVJ_OUTPUT_Y;
  if (!strcmp(s, "unchanged"))
    return OUT_UNCHANGED;
  return -1;
}

int main(int argc, char **argv) {
  const char *dir = NULL, *formats = "rgbi,yuv,rgb,y";
  unsigned batch = 256;
  double seconds = 4;
  int kernels = 250, kernel_us = 20, pipeline = 0, interp = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      batch = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--formats") && i + 1 < argc)
      formats = argv[++i];
    else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
      kernels = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--kernel-us") && i + 1 < argc)
      kernel_us = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--pipeline"))
      pipeline = 1;
    else if (!strcmp(argv[i], "--interp"))
      interp = 1;
    else if (argv[i][0] != '-' && !dir)
      dir = argv[i];
    else {
      dir = NULL;
      break;
    }
  }
  if (!dir || batch < 1 || seconds <= 0 || kernels < 1 || kernel_us < 0) {
    fprintf(stderr,
            "usage: nvjpeg_host_cost DIR [--batch N] [--seconds S] "
            "[--formats rgbi,yuv,rgb,y,unchanged,rgbi+roi] [--kernels N] "
            "[--kernel-us U] [--pipeline] [--interp]\n");
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "nvjpeg_host_cost: no CUDA device\n");
    return 77;
  }
  if (load() < 0) {
    fprintf(stderr, "nvjpeg_host_cost: libnvjpeg not found\n");
    return 77;
  }
  read_folder(dir, 2);
  unsigned flags = (pipeline ? 0u : GF_NVJ_FLAGS_HW_DECODE_NO_PIPELINE) |
                   (interp ? GF_NVJ_FLAGS_UPSAMPLING_WITH_INTERPOLATION : 0u);
  gf_nvj_dev_allocator_v2 da = {dmalloc, dfree, NULL};
  gf_nvj_pinned_allocator_v2 pa = {pmalloc, pfree, NULL};
  gf_nvj_handle h;
  if (F.CreateExV2(GF_NVJ_BACKEND_HARDWARE, &da, &pa, flags, &h) !=
      GF_NVJ_STATUS_SUCCESS) {
    fprintf(stderr, "nvjpeg_host_cost: no JPEG engines\n");
    return 77;
  }
  gf_nvj_jstream js;
  NK(F.JpegStreamCreate(h, &js));
  unsigned *take = malloc((nfiles ? nfiles : 1) * sizeof *take), ntake = 0,
           maxw = 0, maxh = 0;
  for (unsigned i = 0; i < nfiles; i++) {
    int sup = 1;
    if (F.JpegStreamParseHeader(h, files[i].data, files[i].len, js) !=
            GF_NVJ_STATUS_SUCCESS ||
        F.JpegStreamGetFrameDimensions(js, &files[i].w, &files[i].h) !=
            GF_NVJ_STATUS_SUCCESS ||
        F.DecodeBatchedSupported(h, js, &sup) != GF_NVJ_STATUS_SUCCESS ||
        sup != 0)
      continue;
    take[ntake++] = i;
    maxw = files[i].w > maxw ? files[i].w : maxw;
    maxh = files[i].h > maxh ? files[i].h : maxh;
  }
  F.Destroy(h);
  if (ntake < batch) {
    fprintf(stderr,
            "nvjpeg_host_cost: %u files the engines take, fewer "
            "than a batch\n",
            ntake);
    return 2;
  }
  printf(
      "%u JPEG files, %u the engines take (up to %u x %u); batches of "
      "%u, %s, %s; launcher: steps of %d kernels of %d us\n",
      nfiles, ntake, maxw, maxh, batch, pipeline ? "pipelined" : "no pipeline",
      interp ? "chroma interpolated" : "chroma repeated", kernels, kernel_us);
  launcher L0 = {kernels, (uint64_t)kernel_us * 1000, seconds, 0, 0, 0};
  launch_main(&L0);
  printf("launcher alone: %.2f us a launch, %.3f ms a step (%d x %d us "
         "= %.3f ms of kernels)\n",
         L0.launch_us, L0.step_ms, kernels, kernel_us,
         kernels * kernel_us / 1e3);
  char list[256];
  snprintf(list, sizeof list, "%s", formats);
  for (char *save = NULL, *f = strtok_r(list, ",", &save); f;
       f = strtok_r(NULL, ",", &save)) {
    size_t fl = strlen(f);
    int roi = fl > 4 && !strcmp(f + fl - 4, "+roi");
    if (roi)
      f[fl - 4] = '\0';
    int fmt = format_of(f);
    if (roi && !F.DecodeBatchedEx) {
      printf("%s+roi: this nvJPEG has no nvjpegDecodeBatchedEx\n", f);
      continue;
    }
    if (roi)
      f[fl - 4] = '+';
    if (fmt < 0) {
      fprintf(stderr, "nvjpeg_host_cost: unknown format %s\n", f);
      return 2;
    }
    decoder D = {.format = fmt,
                 .roi = roi,
                 .flags = flags,
                 .batch = batch,
                 .seconds = seconds,
                 .take = take,
                 .ntake = ntake,
                 .maxw = maxw,
                 .maxh = maxh};
    decode_main(&D);
    decoder D2 = D;
    launcher L = L0;
    pthread_t a, b;
    pthread_create(&a, NULL, decode_main, &D2);
    pthread_create(&b, NULL, launch_main, &L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%-9s decode alone %8.0f img/s, CPU an image %6.1f us (process) "
           "%6.1f us (its thread) | beside the launcher %8.0f img/s, %6.1f "
           "us (its thread); launcher %.2f us a launch (x%.2f), %.3f ms a "
           "step (x%.3f)\n",
           f, D.img_s, D.cpu_us, D.thread_us, D2.img_s, D2.thread_us,
           L.launch_us, L.launch_us / L0.launch_us, L.step_ms,
           L.step_ms / L0.step_ms);
    fflush(stdout);
  }
  return 0;
}
#else
int main(void) {
  fprintf(stderr, "nvjpeg_host_cost: built without CUDA\n");
  return 77;
}
#endif
