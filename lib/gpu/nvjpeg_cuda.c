/* JPEG decoding with nvJPEG, loaded at run time (see gpu/nvjpeg.h): the
 * library loaded, a decoder opened and closed, its memory through nvJPEG's
 * allocator hooks into planned budgets, its decode states. Probing and
 * decoding are in nvjpeg_decode_cuda.c. */
#include "gpu/nvjpeg_impl.h"

#include "common/fault.h"

#include <cuda_runtime.h>
#include <dlfcn.h> /* dlopen, dlsym: nvJPEG is found at run time */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors -------------------------------------------------------------- */

const char *gf_nvj__status_name(gf_nvj_status s) {
  switch (s) {
  case GF_NVJ_STATUS_SUCCESS:
    return "NVJPEG_STATUS_SUCCESS";
  case GF_NVJ_STATUS_NOT_INITIALIZED:
    return "NVJPEG_STATUS_NOT_INITIALIZED";
  case GF_NVJ_STATUS_INVALID_PARAMETER:
    return "NVJPEG_STATUS_INVALID_PARAMETER";
  case GF_NVJ_STATUS_BAD_JPEG:
    return "NVJPEG_STATUS_BAD_JPEG";
  case GF_NVJ_STATUS_JPEG_NOT_SUPPORTED:
    return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
  case GF_NVJ_STATUS_ALLOCATOR_FAILURE:
    return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
  case GF_NVJ_STATUS_EXECUTION_FAILED:
    return "NVJPEG_STATUS_EXECUTION_FAILED";
  case GF_NVJ_STATUS_ARCH_MISMATCH:
    return "NVJPEG_STATUS_ARCH_MISMATCH";
  case GF_NVJ_STATUS_INTERNAL_ERROR:
    return "NVJPEG_STATUS_INTERNAL_ERROR";
  case GF_NVJ_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
    return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
  case GF_NVJ_STATUS_INCOMPLETE_BITSTREAM:
    return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  default:
    return "an nvJPEG status this build does not know";
  }
}

int gf_nvj__cuda_fail(int err, const char *what) {
  cudaError_t e = (cudaError_t)err;
  return gf_fail(e == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA, NULL,
                 GF_NO_INDEX, GF_NO_INDEX, "nvJPEG decoder: %s: %s (%s)", what,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

/* A failure of an nvJPEG call outside one image: the budget when a hook
 * refused a request, else nvJPEG's status. */
int gf_nvj__fail(gf_nvjpeg *h, gf_nvj_status s, const char *what) {
  if (s == GF_NVJ_STATUS_ALLOCATOR_FAILURE || h->alloc_failed)
    return gf_fail(GF_EDEVOOM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG decoder: %s: %s", what,
                   h->alloc_failed ? h->alloc_msg
                                   : "its allocator failed (no hook said why)");
  return gf_fail(GF_ECUDA, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "nvJPEG decoder: %s failed: %s (%d)", what,
                 gf_nvj__status_name(s), s);
}

/* ---- the budgets: nvJPEG's allocator hooks ------------------------------ */

/* Device memory: the device pool of exactly device_budget bytes, with the
 * stream nvJPEG names (a block freed on a stream is reused only after it). */
static int dev_malloc_hook(void *ctx, void **ptr, size_t size,
                           struct CUstream_st *stream) {
  gf_nvjpeg *h = ctx;
  *ptr = NULL;
  if (size == 0)
    return 0; /* as cudaMalloc */
  int rc = gf_device_pool_alloc(h->dpool, size, stream, ptr);
  pthread_mutex_lock(&h->mu);
  if (rc < 0) {
    h->dev_failures++;
    h->alloc_failed = true;
    snprintf(h->alloc_msg, sizeof h->alloc_msg,
             "its device budget of %llu bytes cannot give %zu more: %.480s",
             (unsigned long long)h->st.device_budget, size,
             gf_last_error()->message);
  } else {
    h->dev_allocs++;
  }
  pthread_mutex_unlock(&h->mu);
  return rc < 0 ? 1 : 0;
}

static int dev_free_hook(void *ctx, void *ptr, size_t size,
                         struct CUstream_st *stream) {
  gf_nvjpeg *h = ctx;
  (void)size;
  if (!ptr)
    return 0;
  /* A free without a stream may still be read by work queued on ours
   * (cudaFree, which it stands for, would wait for the device): it is
   * ordered on the decoder's stream. */
  if (!stream) {
    stream = h->stream;
    pthread_mutex_lock(&h->mu);
    h->null_frees++;
    pthread_mutex_unlock(&h->mu);
  }
  int rc = gf_device_pool_free(h->dpool, ptr, stream);
  if (rc < 0 && stream) {
    /* No event for a stream-ordered free: wait, then free at once. */
    if (cudaStreamSynchronize(stream) == cudaSuccess)
      rc = gf_device_pool_free(h->dpool, ptr, NULL);
  }
  pthread_mutex_lock(&h->mu);
  h->dev_frees += rc == 0;
  pthread_mutex_unlock(&h->mu);
  if (rc < 0)
    gf_log(GF_LOG_ERROR, "nvJPEG decoder: freeing %p of its device budget: %s",
           ptr, gf_last_error()->message);
  return rc < 0 ? 1 : 0;
}

/* Pinned memory: one block of pinned_budget bytes, best fit. */
static int pin_malloc_hook(void *ctx, void **ptr, size_t size,
                           struct CUstream_st *stream) {
  gf_nvjpeg *h = ctx;
  (void)stream; /* host memory: nothing to order against */
  *ptr = NULL;
  if (size == 0)
    return 0;
  uint64_t addr = 0;
  pthread_mutex_lock(&h->mu);
  int rc = gf_pool_alloc(h->ppool, size, GF_POOL_NO_GROW, &addr);
  if (rc < 0) {
    h->pin_failures++;
    h->alloc_failed = true;
    snprintf(h->alloc_msg, sizeof h->alloc_msg,
             "its pinned host budget of %llu bytes cannot give %zu more: "
             "%.480s",
             (unsigned long long)h->st.pinned_budget, size,
             gf_last_error()->message);
  } else {
    h->pin_allocs++;
    *ptr = (void *)(uintptr_t)addr;
  }
  pthread_mutex_unlock(&h->mu);
  return rc < 0 ? 1 : 0;
}

static int pin_free_hook(void *ctx, void *ptr, size_t size,
                         struct CUstream_st *stream) {
  gf_nvjpeg *h = ctx;
  (void)size;
  if (!ptr)
    return 0;
  /* The stream (ours when nvJPEG names none) may still copy out of the
   * block. nvJPEG frees pinned buffers only when it grows them or at
   * destroy, so waiting here is rare and costs less than tracking events
   * for it. */
  (void)cudaStreamSynchronize(stream ? stream : h->stream);
  pthread_mutex_lock(&h->mu);
  h->null_frees += !stream;
  int rc = gf_pool_free(h->ppool, (uint64_t)(uintptr_t)ptr);
  h->pin_frees += rc == 0;
  pthread_mutex_unlock(&h->mu);
  if (rc < 0)
    gf_log(GF_LOG_ERROR, "nvJPEG decoder: freeing %p of its pinned budget: %s",
           ptr, gf_last_error()->message);
  return rc < 0 ? 1 : 0;
}

/* ---- open / close -------------------------------------------------------- */

/* Loads the library and takes its functions. Without cfg->library:
 * libnvjpeg.so.13, then libnvjpeg.so, each by the dynamic loader's search
 * (LD_LIBRARY_PATH, ld.so.cache), then in the lib64 folders of
 * $CUDA_HOME, $CUDA_PATH and /usr/local/cuda (where the toolkit installs
 * it, often outside the loader's search). The library is never unloaded:
 * nvJPEG may keep threads and exit handlers of its own, and a second
 * dlopen of a loaded library only counts a reference. */
static int load(const gf_nvjpeg_config *cfg, nvj_lib *f) {
  static const char *const sonames[2] = {"libnvjpeg.so.13", "libnvjpeg.so"};
  const char *dirs[4] = {NULL, getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                         "/usr/local/cuda"};
  void *dl = NULL;
  char name[600] = "", first[400] = "";
  if (cfg->library) {
    gf_strlcpy(name, cfg->library, sizeof name);
    dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
      const char *e = dlerror();
      gf_strlcpy(first, e ? e : name, sizeof first);
    }
  }
  for (int d = 0; !cfg->library && d < 4 && !dl; d++) {
    if (d > 0 && (!dirs[d] || !dirs[d][0]))
      continue;
    for (int k = 0; k < 2 && !dl; k++) {
      if (d == 0)
        gf_strlcpy(name, sonames[k], sizeof name);
      else
        snprintf(name, sizeof name, "%.500s/lib64/%s", dirs[d], sonames[k]);
      dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!dl && !first[0]) {
        const char *e = dlerror();
        gf_strlcpy(first, e ? e : name, sizeof first);
      }
    }
  }
  if (!dl)
    return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG is not available, JPEG is decoded on the CPU: "
                   "cannot load the library (%s%s)",
                   first,
                   cfg->library ? ""
                                : "; nor in the lib64 folders of $CUDA_HOME, "
                                  "$CUDA_PATH and /usr/local/cuda");
  struct {
    void **slot;
    const char *name;
    bool optional;
  } syms[] = {
#define SYM(x, opt) {(void **)&f->x, "nvjpeg" #x, opt}
      SYM(GetProperty, false),
      SYM(CreateExV2, false),
      SYM(Destroy, false),
      SYM(JpegStateCreate, false),
      SYM(JpegStateDestroy, false),
      SYM(DecodeBatchedInitialize, false),
      SYM(DecodeBatched, false),
      SYM(DecodeBatchedSupported, false),
      SYM(JpegStreamCreate, false),
      SYM(JpegStreamDestroy, false),
      SYM(JpegStreamParseHeader, false),
      SYM(JpegStreamGetFrameDimensions, false),
      SYM(JpegStreamGetComponentsNum, false),
      SYM(JpegStreamGetJpegEncoding, false),
      SYM(GetHardwareDecoderInfo, true),
      SYM(DecodeBatchedPreAllocate, true),
      SYM(JpegStreamGetSamplePrecision, true),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(dl, syms[i].name);
    if (!*syms[i].slot && !syms[i].optional)
      return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "nvJPEG is not available, JPEG is decoded on the CPU: "
                     "%s has no %s (an nvJPEG older than CUDA 11's?)",
                     name, syms[i].name);
  }
  return 0;
}

static int check_config(const gf_nvjpeg_config *cfg) {
  const char *bad = NULL;
  if (!cfg)
    bad = "a config is needed";
  else if (cfg->backend > GF_NVJPEG_GPU_HYBRID)
    bad = "backend is not a gf_nvjpeg_backend";
  else if (!cfg->stream)
    bad = "stream is NULL (nothing runs on the legacy default stream)";
  else if (cfg->max_batch == 0 || cfg->max_batch > (1u << 20))
    bad = "max_batch must be 1 to 1048576";
  else if (cfg->flags & ~(GF_NVJPEG_REPEAT_CHROMA | GF_NVJPEG_NO_PIPELINE))
    bad = "flags has unknown bits";
  else if (cfg->device < 0)
    bad = "device must be a CUDA device ordinal";
  if (bad)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_nvjpeg_open: %s", bad);
  return 0;
}

static int reserve(gf_nvjpeg *h) {
  gf_device_pool_config pc = GF_DEVICE_POOL_CONFIG_INIT;
  pc.device = h->cfg.device;
  pc.bytes = h->st.device_budget;
  int rc = gf_device_pool_create(&pc, &h->dpool);
  if (rc < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX,
                           "nvJPEG decoder: reserving its device budget");
  int f = gf_fault_check(GF_FAULT_CUDA_HOST_ALLOC);
  cudaError_t e = f ? cudaErrorMemoryAllocation
                    : cudaHostAlloc((void **)&h->pinned,
                                    (size_t)h->st.pinned_budget,
                                    cudaHostAllocDefault);
  if (e != cudaSuccess) {
    h->pinned = NULL;
    return gf_fail(GF_EDEVOOM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG decoder: cannot reserve its pinned host budget of "
                   "%llu bytes: cudaHostAlloc: %s%s",
                   (unsigned long long)h->st.pinned_budget,
                   cudaGetErrorString(e), f ? " (injected fault)" : "");
  }
  gf_pool_config ppc = {.alignment = GF_POOL_DEFAULT_ALIGNMENT,
                        .name = "nvJPEG pinned budget"};
  if ((rc = gf_pool_create(&ppc, &h->ppool)) < 0 ||
      (rc = gf_pool_add_region(h->ppool, (uint64_t)(uintptr_t)h->pinned,
                               h->st.pinned_budget)) < 0)
    return rc;
  if (pthread_mutex_init(&h->mu, NULL) != 0)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG decoder: pthread_mutex_init failed");
  h->mu_init = true;
  return 0;
}

/* Creates the library handle with `backend` (a GF_NVJ_BACKEND_*). An
 * nvJPEG older than the interpolation flag (CUDA 12.x) refuses it as an
 * invalid parameter: it then repeats chroma, and says so once. */
static gf_nvj_status create_handle(gf_nvjpeg *h, int backend) {
  unsigned flags = GF_NVJ_FLAGS_DEFAULT;
  if (!(h->cfg.flags & GF_NVJPEG_REPEAT_CHROMA))
    flags |= GF_NVJ_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
  if ((h->cfg.flags & GF_NVJPEG_NO_PIPELINE) &&
      backend == GF_NVJ_BACKEND_HARDWARE)
    flags |= GF_NVJ_FLAGS_HW_DECODE_NO_PIPELINE;
  h->handle = NULL;
  h->alloc_failed = false;
  gf_nvj_status s = h->f.CreateExV2(backend, &h->dev_alloc, &h->pin_alloc,
                                    flags, &h->handle);
  if (s == GF_NVJ_STATUS_INVALID_PARAMETER &&
      (flags & GF_NVJ_FLAGS_UPSAMPLING_WITH_INTERPOLATION)) {
    flags &= ~GF_NVJ_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
    h->handle = NULL;
    s = h->f.CreateExV2(backend, &h->dev_alloc, &h->pin_alloc, flags,
                        &h->handle);
    if (s == GF_NVJ_STATUS_SUCCESS)
      gf_log(GF_LOG_WARN, "nvJPEG decoder: this nvJPEG does not interpolate "
                          "chroma: its pixels differ more from the CPU "
                          "decoder's");
  }
  return s;
}

/* The statuses that say the hardware backend is not there (rather than
 * that something failed). */
static bool no_hardware(gf_nvj_status s) {
  return s == GF_NVJ_STATUS_ARCH_MISMATCH ||
         s == GF_NVJ_STATUS_JPEG_NOT_SUPPORTED ||
         s == GF_NVJ_STATUS_IMPLEMENTATION_NOT_SUPPORTED ||
         s == GF_NVJ_STATUS_NOT_INITIALIZED;
}

static int open_handle(gf_nvjpeg *h) {
  gf_nvj_status s;
  char hw_why[160] = "";
  if (h->cfg.backend != GF_NVJPEG_GPU_HYBRID) {
    s = create_handle(h, GF_NVJ_BACKEND_HARDWARE);
    if (s == GF_NVJ_STATUS_SUCCESS) {
      h->backend = GF_NVJPEG_HARDWARE;
      return 0;
    }
    if (!no_hardware(s) || h->cfg.backend == GF_NVJPEG_HARDWARE) {
      if (no_hardware(s))
        return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "nvJPEG's hardware backend is not available on device "
                       "%d (no JPEG engines?): nvjpegCreateExV2: %s",
                       (int)h->cfg.device, gf_nvj__status_name(s));
      return gf_nvj__fail(h, s, "nvjpegCreateExV2 (hardware backend)");
    }
    snprintf(hw_why, sizeof hw_why, "%s", gf_nvj__status_name(s));
  }
  s = create_handle(h, GF_NVJ_BACKEND_GPU_HYBRID);
  if (s != GF_NVJ_STATUS_SUCCESS)
    return gf_nvj__fail(h, s, "nvjpegCreateExV2 (GPU hybrid backend)");
  h->backend = GF_NVJPEG_GPU_HYBRID;
  if (hw_why[0])
    gf_log(GF_LOG_INFO,
           "nvJPEG decoder: no hardware backend on device %d (%s): decoding "
           "with the GPU hybrid backend",
           (int)h->cfg.device, hw_why);
  return 0;
}

void gf_nvjpeg_close(gf_nvjpeg *h) {
  if (!h)
    return;
  if (h->on_device) {
    (void)cudaSetDevice(h->cfg.device);
    (void)cudaStreamSynchronize(h->stream);
  }
  nvj_state *states[2 * RING + 1];
  for (int i = 0; i < 2 * RING; i++)
    states[i] = &h->batch[i / RING][i % RING];
  states[2 * RING] = &h->one;
  for (int i = 0; i < 2 * RING + 1; i++) {
    nvj_state *st = states[i];
    if (st->st)
      h->f.JpegStateDestroy(st->st);
    if (st->event)
      (void)cudaEventDestroy(st->done);
    free(st->data);
    free(st->lens);
    free(st->dst);
  }
  if (h->js)
    h->f.JpegStreamDestroy(h->js);
  if (h->handle)
    h->f.Destroy(h->handle);
  if (h->on_device)
    (void)cudaStreamSynchronize(h->stream);
  gf_device_pool_destroy(h->dpool);
  gf_pool_destroy(h->ppool);
  if (h->pinned)
    (void)cudaFreeHost(h->pinned);
  if (h->mu_init)
    pthread_mutex_destroy(&h->mu);
  free(h->idx);
  free(h->ids);
  free(h);
}

/* Makes state s ready for a batch of n images in `format`: its previous
 * decode finished (a host wait on its event, which the ring makes rare),
 * the nvJPEG state created once and initialized for (n, format). */
gf_nvj_status gf_nvj__state_take(gf_nvjpeg *h, nvj_state *s, int n,
                                 int format) {
  gf_nvj_status r;
  if (s->pending) {
    s->pending = false;
    if (cudaEventSynchronize(s->done) != cudaSuccess)
      return GF_NVJ_STATUS_EXECUTION_FAILED;
  }
  if (!s->st) {
    if ((r = h->f.JpegStateCreate(h->handle, &s->st)) !=
        GF_NVJ_STATUS_SUCCESS) {
      s->st = NULL;
      return r;
    }
    s->n = 0;
  }
  if (s->n == n && s->format == format)
    return GF_NVJ_STATUS_SUCCESS;
  s->n = 0;
  /* max_cpu_threads: unused by nvJPEG now, and 0 is refused. */
  r = h->f.DecodeBatchedInitialize(h->handle, s->st, n, 1, format);
  if (r == GF_NVJ_STATUS_SUCCESS) {
    s->n = n;
    s->format = format;
    h->st.reinits++;
  }
  return r;
}

/* What a state needs beside nvJPEG's: its event and argument arrays for
 * `cap` images. 0 or a code with context. */
static int state_alloc(nvj_state *s, uint32_t cap) {
  s->data = calloc(cap, sizeof *s->data);
  s->lens = calloc(cap, sizeof *s->lens);
  s->dst = calloc(cap, sizeof *s->dst);
  if (!s->data || !s->lens || !s->dst)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG decoder: out of host memory");
  cudaError_t e = cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming);
  if (e != cudaSuccess)
    return gf_nvj__cuda_fail(e, "cudaEventCreateWithFlags");
  s->event = true;
  return 0;
}

int gf_nvjpeg_open(const gf_nvjpeg_config *cfg, gf_nvjpeg **out, char *why,
                   size_t cap) {
  gf_nvjpeg *h = NULL;
  int rc;
  if (why && cap)
    why[0] = '\0';
  if (!out) {
    rc = gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gf_nvjpeg_open needs an output pointer");
    goto fail;
  }
  *out = NULL;
  if ((rc = check_config(cfg)) < 0)
    goto fail;
  h = calloc(1, sizeof *h);
  if (!h) {
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "nvJPEG decoder: out of host memory");
    goto fail;
  }
  h->cfg = *cfg;
  h->cfg.library = NULL; /* not kept: the caller's string */
  h->stream = (cudaStream_t)cfg->stream;
  gf_nvjpeg_plan(cfg, &h->st.device_budget, &h->st.pinned_budget);
  /* The library before the device: where nvJPEG is missing, the reason
   * says so even on a machine without a GPU. */
  if ((rc = load(cfg, &h->f)) < 0)
    goto fail;
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || cfg->device >= ndev) {
    (void)cudaGetLastError();
    rc = gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "nvJPEG decoder: no CUDA device %d (%s)", (int)cfg->device,
                 e != cudaSuccess ? cudaGetErrorString(e) : "not present");
    goto fail;
  }
  if ((e = cudaSetDevice(cfg->device)) != cudaSuccess) {
    rc = gf_nvj__cuda_fail(e, "cudaSetDevice");
    goto fail;
  }
  h->on_device = true;
  if ((rc = reserve(h)) < 0)
    goto fail;
  h->dev_alloc = (gf_nvj_dev_allocator_v2){dev_malloc_hook, dev_free_hook, h};
  h->pin_alloc =
      (gf_nvj_pinned_allocator_v2){pin_malloc_hook, pin_free_hook, h};
  if ((rc = open_handle(h)) < 0)
    goto fail;
  int v[3] = {0, 0, 0};
  (void)h->f.GetProperty(GF_NVJ_MAJOR_VERSION, &v[0]);
  (void)h->f.GetProperty(GF_NVJ_MINOR_VERSION, &v[1]);
  (void)h->f.GetProperty(GF_NVJ_PATCH_LEVEL, &v[2]);
  memcpy(h->st.version, v, sizeof v);
  if (h->backend == GF_NVJPEG_HARDWARE && h->f.GetHardwareDecoderInfo) {
    unsigned eng = 0, cores = 0;
    if (h->f.GetHardwareDecoderInfo(h->handle, &eng, &cores) ==
        GF_NVJ_STATUS_SUCCESS) {
      h->st.hw_engines = eng;
      h->st.hw_cores = cores;
    }
  }
  snprintf(h->st.backend, sizeof h->st.backend, "%s",
           gf_nvjpeg_backend_name(h));
  gf_nvj_status s = h->f.JpegStreamCreate(h->handle, &h->js);
  if (s != GF_NVJ_STATUS_SUCCESS) {
    h->js = NULL;
    rc = gf_nvj__fail(h, s, "nvjpegJpegStreamCreate");
    goto fail;
  }
  size_t n = cfg->max_batch;
  h->idx = calloc(n, sizeof *h->idx);
  h->ids = calloc(n, sizeof *h->ids);
  if (!h->idx || !h->ids) {
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "nvJPEG decoder: out of host memory");
    goto fail;
  }
  for (int k = 0; k < 2 * RING; k++)
    if ((rc = state_alloc(&h->batch[k / RING][k % RING], cfg->max_batch)) < 0)
      goto fail;
  if ((rc = state_alloc(&h->one, 1)) < 0)
    goto fail;
  /* Buffers for the largest batch now rather than as images grow. */
  if (h->backend == GF_NVJPEG_HARDWARE && cfg->max_width && cfg->max_height &&
      h->f.DecodeBatchedPreAllocate) {
    for (int k = 0; k < RING; k++) {
      nvj_state *st = &h->batch[FMT_RGB][k];
      if ((s = gf_nvj__state_take(h, st, (int)n, GF_NVJ_OUTPUT_RGBI)) ==
          GF_NVJ_STATUS_SUCCESS)
        s = h->f.DecodeBatchedPreAllocate(
            h->handle, st->st, (int)n, (int)cfg->max_width,
            (int)cfg->max_height, GF_NVJ_CSS_444, GF_NVJ_OUTPUT_RGBI);
      if (s != GF_NVJ_STATUS_SUCCESS) {
        rc = gf_nvj__fail(h, s,
                          "allocating the decode states for max_batch "
                          "images of max_width x max_height");
        goto fail;
      }
    }
  }
  *out = h;
  return 0;
fail:
  if (why && cap)
    gf_strlcpy(why, gf_last_error()->message, cap);
  if (h) {
    gf_error_info saved = *gf_last_error();
    gf_nvjpeg_close(h);
    gf_error_restore(&saved);
  }
  return rc;
}

const char *gf_nvjpeg_backend_name(const gf_nvjpeg *h) {
  return h->backend == GF_NVJPEG_HARDWARE ? "hardware" : "gpu_hybrid";
}
