/* The loader's GPU stage with the CUDA runtime (see stage.h): its slots,
 * their pinning, the submit and the trace's timing; the handoff to and from
 * the caller's streams is in stage_stream_cuda.c. */
#include "gpu/stage.h"
#include "gpu/stage_impl.h"

#include "common/fault.h"
#include "gather.h"
#include "done.h"
#include "kernels.h"
#include "loco.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <nvtx3/nvToolsExt.h> /* header-only: ranges for Nsight Systems */
#include <pthread.h>           /* slot 0's pages made by several threads */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

int gf_stage__cuda_fail(int e, const char *what) {
  cudaError_t c = (cudaError_t)e;
  return gf_fail(c == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA, NULL,
                 GF_NO_INDEX, GF_NO_INDEX, "%s: %s (%s)", what,
                 cudaGetErrorString(c), cudaGetErrorName(c));
}
static_assert(sizeof(gf_stage_loco) == sizeof(gf_loco_item),
              "the stage's loco items are the kernel's");

static uint64_t round256(uint64_t n) { return (n + 255) / 256 * 256; }


int gf_stage_probe(int32_t device, char *why, size_t cap) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, cap, "no usable CUDA device: %s", cudaGetErrorString(e));
    /* Clear the sticky "no device" error for later calls. */
    cudaGetLastError();
    return 0;
  }
  int d = device < 0 ? 0 : device;
  if (d >= n) {
    snprintf(why, cap, "CUDA device %d does not exist (%d found)", d, n);
    return 0;
  }
  why[0] = '\0';
  return 1;
}

/* The gather method: the copy engines unless GPUFEED_DIRECT_COPY says
 * otherwise; the kernel's grid bound from GPUFEED_GATHER_BLOCKS (default
 * 32: enough 64 KiB tiles in flight to cover the bus latency, a fraction
 * of the SMs). */
static void choose_direct(gf_stage *st) {
  st->direct = GF_DIRECT_COPY_ENGINE;
  st->gather_blocks = 32;
  const char *m = getenv("GPUFEED_DIRECT_COPY");
  if (m && strcmp(m, "kernel") == 0)
    st->direct = GF_DIRECT_COPY_KERNEL;
  else if (m && *m && strcmp(m, "engine") != 0)
    gf_log(GF_LOG_WARN, "GPUFEED_DIRECT_COPY=%s is neither engine nor "
                        "kernel: using engine", m);
  const char *b = getenv("GPUFEED_GATHER_BLOCKS");
  if (b && *b) {
    char *end;
    unsigned long v = strtoul(b, &end, 10);
    if (*end == '\0' && v >= 1 && v <= 65535)
      st->gather_blocks = (uint32_t)v;
    else
      gf_log(GF_LOG_WARN, "GPUFEED_GATHER_BLOCKS=%s is not 1..65535: using "
                          "%u", b, st->gather_blocks);
  }
}

const char *gf_stage_direct_copy(const gf_stage *st) {
  return st->direct == GF_DIRECT_COPY_KERNEL ? "kernel" : "engine";
}

uint64_t gf_stage_host_dev(gf_stage *st, uint32_t i) {
  return st->slots[i].host_dev;
}

int gf_gpu_pin(int32_t device, void *addr, size_t len, uint64_t *dev) {
  *dev = 0;
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice");
  int f = gf_fault_check(GF_FAULT_CUDA_HOST_REGISTER);
  e = f ? cudaErrorMemoryAllocation
        : cudaHostRegister(addr, len, cudaHostRegisterMapped);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaHostRegister (pinning the host cache)");
  void *dp = NULL;
  if ((e = cudaHostGetDevicePointer(&dp, addr, 0)) != cudaSuccess) {
    cudaHostUnregister(addr);
    return cuda_fail(e, "cudaHostGetDevicePointer (host cache)");
  }
  *dev = (uint64_t)(uintptr_t)dp;
  return 0;
}

void gf_gpu_unpin(int32_t device, void *addr) {
  cudaSetDevice(device);
  cudaHostUnregister(addr);
}

/* Puts segs into slot s's gather list (device side after the copy) and
 * checks each range against the input block. *tiles: the kernel's tiles. */
static int stage_segs(stage_slot *s, const gf_stage_seg *segs, uint32_t nsegs,
                      uint64_t used, uint8_t *base, uint64_t *tiles) {
  uint64_t t = 0;
  for (uint32_t k = 0; k < nsegs; k++) {
    const gf_stage_seg *g = &segs[k];
    if (g->len == 0 || g->dst > used || g->len > used - g->dst || !g->host ||
        !g->dev)
      return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gather range %u (%llu bytes at %llu) is outside the "
                     "batch input of %llu bytes",
                     k, (unsigned long long)g->len, (unsigned long long)g->dst,
                     (unsigned long long)used);
    s->h_segs[k] = (gf_gather_seg){g->dev, g->dst, g->len, t};
    t += gf_gather_tiles(g->len);
    s->e_dst[k] = base + g->dst;
    s->e_src[k] = g->host;
    s->e_len[k] = (size_t)g->len;
  }
  *tiles = t;
  return 0;
}

/* Enqueues the gather of slot s's list on the copy stream. */
static cudaError_t gather(gf_stage *st, stage_slot *s, uint32_t nsegs,
                          uint64_t tiles, uint8_t *base, cudaStream_t q) {
  if (nsegs == 0)
    return cudaSuccess;
  if (st->direct == GF_DIRECT_COPY_ENGINE) {
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.srcLocHint.type = cudaMemLocationTypeHost;
    attr.dstLocHint.type = cudaMemLocationTypeDevice;
    attr.dstLocHint.id = st->cfg.device;
    attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t idx0 = 0;
    cudaError_t e = cudaMemcpyBatchAsync(s->e_dst, s->e_src, s->e_len, nsegs,
                                         &attr, &idx0, 1, q);
    if (e != cudaErrorNotSupported && e != cudaErrorInvalidValue)
      return e;
    /* An older driver: the kernel does it, from now on. */
    cudaGetLastError();
    gf_log(GF_LOG_WARN, "cudaMemcpyBatchAsync: %s: gathering with a kernel",
           cudaGetErrorString(e));
    st->direct = GF_DIRECT_COPY_KERNEL;
  }
  return gf_launch_gather(s->d_segs, nsegs, tiles, base, st->gather_blocks,
                          q);
}

/* Makes the pages of [p, p + len): 0 or -ENOMEM and the like. */
static int make_pages(uint8_t *p, size_t len) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
    return 0;
  if (errno != EINVAL)
    return -errno; /* ENOMEM and the like: out of memory */
#endif
  /* An older kernel: touch every page. */
  for (size_t o = 0; o < len; o += 4096)
    p[o] = 0;
  return 0;
}

typedef struct pages_part {
  uint8_t *p;
  size_t len;
  int rc;
  bool started;
  pthread_t th;
} pages_part;

static void *pages_main(void *arg) {
  pages_part *q = arg;
  q->rc = make_pages(q->p, q->len);
  return NULL;
}

#define PAGES_THREADS_MAX 8
#define PAGES_PART_MIN (32u << 20) /* below that a thread is not worth it */

/* Makes the pages of [p, p + len) before they are registered, outside the
 * driver (the registration then only pins them), as transparent huge pages
 * where the kernel allows (fewer pages to fault and to pin), split over up
 * to `threads` threads (the zeroing is most of the cost). */
static int prefault(uint8_t *p, size_t len, uint32_t threads) {
#ifdef MADV_HUGEPAGE
  (void)madvise(p, len, MADV_HUGEPAGE); /* advice: refused is fine */
#endif
  if (threads > PAGES_THREADS_MAX)
    threads = PAGES_THREADS_MAX;
  if (threads > len / PAGES_PART_MIN)
    threads = (uint32_t)(len / PAGES_PART_MIN);
  if (threads <= 1)
    return make_pages(p, len);
  /* Parts of whole 2 MiB (huge) pages. */
  size_t per = (len / threads + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  pages_part part[PAGES_THREADS_MAX];
  uint32_t n = 0;
  for (size_t off = 0; off < len && n < threads; off += per, n++) {
    part[n] = (pages_part){p + off, per < len - off ? per : len - off, 0,
                           false, 0};
    if (n > 0)
      part[n].started =
          pthread_create(&part[n].th, NULL, pages_main, &part[n]) == 0;
  }
  part[0].rc = make_pages(part[0].p, part[0].len);
  int rc = part[0].rc;
  for (uint32_t k = 1; k < n; k++) {
    if (part[k].started)
      pthread_join(part[k].th, NULL);
    else
      part[k].rc = make_pages(part[k].p, part[k].len); /* no thread */
    if (rc == 0)
      rc = part[k].rc;
  }
  return rc;
}

/* gf_stage_pin with the pages made by `threads` threads. */
static int pin_slot(gf_stage *st, uint32_t i, uint32_t threads) {
  stage_slot *s = &st->slots[i];
  if (s->registered)
    return 0;
  int rc = prefault(s->host, s->map_len, threads);
  if (rc < 0)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "staging slot %u of %u (%zu bytes): cannot make its "
                   "pages: %s",
                   i, st->cfg.slots, s->map_len, strerror(-rc));
  cudaError_t e = cudaSetDevice(st->cfg.device);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice");
  /* Anonymous memory pinned by registration (not cudaHostAlloc), mapped
   * so a gather kernel can read it too. */
  int f = gf_fault_check(GF_FAULT_CUDA_STAGE_REGISTER);
  e = f ? (f == GF_EDEVOOM ? cudaErrorMemoryAllocation : cudaErrorUnknown)
        : cudaHostRegister(s->host, s->map_len, cudaHostRegisterMapped);
  if (e != cudaSuccess)
    return gf_fail(e == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA,
                   NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "pinning staging slot %u of %u (%zu bytes): "
                   "cudaHostRegister: %s (%s)",
                   i, st->cfg.slots, s->map_len, cudaGetErrorString(e),
                   cudaGetErrorName(e));
  void *dp = NULL;
  if ((e = cudaHostGetDevicePointer(&dp, s->host, 0)) != cudaSuccess) {
    cudaHostUnregister(s->host);
    return gf_fail(GF_ECUDA, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "pinning staging slot %u of %u (%zu bytes): "
                   "cudaHostGetDevicePointer: %s (%s)",
                   i, st->cfg.slots, s->map_len, cudaGetErrorString(e),
                   cudaGetErrorName(e));
  }
  s->host_dev = (uint64_t)(uintptr_t)dp;
  s->registered = true;
  return 0;
}

/* In the background, beside the decoding workers: one thread. */
int gf_stage_pin(gf_stage *st, uint32_t i) { return pin_slot(st, i, 1); }

int gf_stage_create(const gf_stage_config *cfg, gf_stage **out) {
  *out = NULL;
  gf_stage *st = calloc(1, sizeof *st);
  if (!st)
    return -ENOMEM;
  st->cfg = *cfg;
  int rc;
  if (pthread_mutex_init(&st->snap_mu, NULL) != 0) {
    free(st);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU stage: pthread_mutex_init failed");
  }
  st->snap_mu_init = true;
  if (pthread_mutex_init(&st->fence_mu, NULL) != 0) {
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "GPU stage: pthread_mutex_init failed");
    goto fail;
  }
  st->fence_mu_init = true;
  cudaError_t e = cudaSetDevice(cfg->device);
  if (e != cudaSuccess) {
    rc = cuda_fail(e, "cudaSetDevice");
    goto fail;
  }
  gf_device_pool_config pc = GF_DEVICE_POOL_CONFIG_INIT;
  pc.device = cfg->device;
  uint64_t need = gf_stage_pool_need(cfg);
  pc.bytes = cfg->pool_bytes > need ? cfg->pool_bytes : need;
  if ((rc = gf_device_pool_create(&pc, &st->pool)) < 0)
    goto fail;
  if ((e = cudaStreamCreateWithFlags(&st->copy, cudaStreamNonBlocking)) !=
      cudaSuccess) {
    rc = cuda_fail(e, "cudaStreamCreateWithFlags (copy stream)");
    goto fail;
  }
  st->have_stream = true;
  if (cfg->loco) {
    if ((e = cudaStreamCreateWithFlags(&st->up, cudaStreamNonBlocking)) !=
        cudaSuccess) {
      rc = cuda_fail(e, "cudaStreamCreateWithFlags (upload stream)");
      goto fail;
    }
    st->have_up = true;
  }
  st->slots = calloc(cfg->slots, sizeof *st->slots);
  if (!st->slots) {
    rc = -ENOMEM;
    goto fail;
  }
  choose_direct(st);
  size_t params = (size_t)round256((uint64_t)cfg->max_samples *
                                   sizeof(gf_xform_sample));
  size_t segs = (size_t)round256((uint64_t)cfg->max_samples *
                                 sizeof(gf_gather_seg));
  size_t loco = cfg->loco ? (size_t)round256((uint64_t)cfg->max_samples *
                                             sizeof(gf_stage_loco))
                          : 0;
  size_t labels = (size_t)gf_stage_label_bytes(cfg->max_samples);
  const size_t done = 256; /* the done word and the loco error word, in
                              their own aligned span */
  st->params_span = params;
  st->segs_span = segs;
  st->loco_span = loco;
  segs += loco; /* below: the loco items ride after the gather list */
  for (uint32_t i = 0; i < cfg->slots; i++) {
    stage_slot *s = &st->slots[i];
    size_t in = (size_t)round256(cfg->in_bytes);
    s->map_len = (in + params + segs + labels + done + 4095) / 4096 * 4096;
    /* Address space only: the pages are made and pinned by gf_stage_pin
     * (slot 0 below, the others when the loader gets to them). */
    void *p = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      size_t len = s->map_len;
      s->map_len = 0;
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot map %zu bytes of staging memory (slot %u of %u)",
                   len, i, cfg->slots);
      goto fail;
    }
    s->host = p;
    s->h_params = (gf_xform_sample *)(s->host + in);
    s->h_segs = (gf_gather_seg *)(s->host + in + params);
    s->h_labels = (int64_t *)(s->host + in + params + segs);
    s->h_done = (uint64_t *)(s->host + in + params + segs + labels);
    s->h_loco = (gf_stage_loco *)(s->host + in + params + st->segs_span);
    s->h_loco_err = (uint32_t *)(s->host + in + params + segs + labels + 64);
    s->e_dst = calloc(cfg->max_samples ? cfg->max_samples : 1, sizeof(void *));
    s->e_src = calloc(cfg->max_samples ? cfg->max_samples : 1, sizeof(void *));
    s->e_len = calloc(cfg->max_samples ? cfg->max_samples : 1, sizeof(size_t));
    if (!s->e_dst || !s->e_src || !s->e_len) {
      rc = -ENOMEM;
      goto fail;
    }
    if ((rc = gf_device_pool_alloc(st->pool, round256(cfg->in_bytes), NULL,
                                   &s->d_in)) < 0 ||
        (rc = gf_device_pool_alloc(st->pool, round256(cfg->out_bytes), NULL,
                                   &s->d_out)) < 0 ||
        (rc = gf_device_pool_alloc(st->pool, params + segs + labels, NULL,
                                   (void **)&s->d_params)) < 0)
      goto fail;
    s->d_segs = (gf_gather_seg *)((uint8_t *)s->d_params + params);
    s->d_loco = (gf_stage_loco *)((uint8_t *)s->d_params + params +
                                 st->segs_span);
    s->d_labels = (int64_t *)((uint8_t *)s->d_params + params + segs);
    if ((e = cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming)) !=
            cudaSuccess ||
        (e = cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming)) !=
            cudaSuccess) {
      rc = cuda_fail(e, "cudaEventCreate");
      goto fail;
    }
    uint32_t made = 0;
    for (; made < GF_RELEASE_STREAMS_MAX; made++)
      if ((e = cudaEventCreateWithFlags(&s->released[made],
                                        cudaEventDisableTiming)) !=
          cudaSuccess)
        break;
    if (made < GF_RELEASE_STREAMS_MAX) {
      for (uint32_t k = 0; k < made; k++)
        cudaEventDestroy(s->released[k]);
      cudaEventDestroy(s->copied);
      cudaEventDestroy(s->ready);
      rc = cuda_fail(e, "cudaEventCreate (release)");
      goto fail;
    }
    s->events = true;
  }
  for (uint32_t i = 0; cfg->loco && i < cfg->slots; i++)
    if ((rc = gf_device_pool_alloc(st->pool, round256(cfg->in_bytes), NULL,
                                   &st->slots[i].d_loco_in)) < 0)
      goto fail;
  /* The first batch's slot now; the loader pins the others while the
   * first batch loads (pinning takes tens of ms per 100 MB). */
  if (cfg->slots && (rc = pin_slot(st, 0, cfg->pin_threads)) < 0)
    goto fail;
  *out = st;
  return 0;
fail: {
  gf_error_info saved = *gf_last_error();
  gf_stage_destroy(st);
  gf_error_restore(&saved);
}
  return rc;
}

void gf_stage__jpeg_close(gf_stage *st) {
  cudaSetDevice(st->cfg.device);
  for (uint32_t k = 0; k < st->jpeg_n; k++) {
    gf_nvjpeg_close(st->jpeg[k]); /* waits for its stream's decodes */
    st->jpeg[k] = NULL;
    cudaStreamDestroy(st->jstream[k]);
    st->jstream[k] = NULL;
  }
  st->jpeg_n = 0;
  for (uint32_t k = 0; k < st->jpeg_mu_n; k++)
    pthread_mutex_destroy(&st->jpeg_mu[k]);
  st->jpeg_mu_n = 0;
}

void gf_stage_destroy(gf_stage *st) {
  if (!st)
    return;
  cudaSetDevice(st->cfg.device);
  if (st->have_stream)
    cudaStreamSynchronize(st->copy);
  if (st->have_up)
    cudaStreamSynchronize(st->up);
  /* Before the slots' events, which their streams may record. */
  gf_stage__jpeg_close(st);
  for (uint32_t i = 0; st->slots && i < st->cfg.slots; i++) {
    stage_slot *s = &st->slots[i];
    if (s->events) {
      /* A caller stream may still read the last batch: wait for it (for
       * the legacy default stream whose event was left to a worker that
       * never came, for that stream). */
      if (s->fence_due)
        cudaStreamSynchronize(cudaStreamLegacy);
      for (uint32_t k = 0; k < s->release_pending; k++)
        cudaEventSynchronize(s->released[k]);
      cudaEventDestroy(s->copied);
      cudaEventDestroy(s->ready);
      for (uint32_t k = 0; k < GF_RELEASE_STREAMS_MAX; k++)
        cudaEventDestroy(s->released[k]);
    }
    if (st->timing) {
      cudaEventDestroy(s->t_start);
      cudaEventDestroy(s->t_end);
    }
    free(s->e_dst);
    free(s->e_src);
    free(s->e_len);
    if (s->registered)
      cudaHostUnregister(s->host);
    if (s->map_len)
      munmap(s->host, s->map_len);
  }
  free(st->slots);
  if (st->timing)
    cudaEventDestroy(st->t_ref);
  if (st->have_stream)
    cudaStreamDestroy(st->copy);
  if (st->have_up)
    cudaStreamDestroy(st->up);
  /* The pool frees every block with its chunks. */
  gf_device_pool_destroy(st->pool);
  if (st->snap_mu_init)
    pthread_mutex_destroy(&st->snap_mu);
  if (st->fence_mu_init)
    pthread_mutex_destroy(&st->fence_mu);
  free(st);
}

uint8_t *gf_stage_host(gf_stage *st, uint32_t i) { return st->slots[i].host; }

gf_device_pool *gf_stage_pool(gf_stage *st) { return st->pool; }

/* Enqueues slot s's parameters, its input (one copy or the gather) and,
 * for a loco batch, the decode on the copy stream; records `copied`.
 * Returns 0 or GF_ECUDA. */
static int enqueue_input(gf_stage *st, stage_slot *s, uint32_t n,
                         uint64_t used, const gf_stage_seg *segs,
                         uint32_t nsegs, uint64_t tiles, uint8_t *land,
                         const gf_stage_loco *loco, uint32_t loco_bands,
                         uint32_t ncopy) {
  cudaError_t e = cudaSuccess;
  /* A loco batch's input goes up on the upload stream, so that it
   * overlaps the decode of the batch before it; first it waits for what
   * still reads the slot's device blocks (the caller's streams, and the
   * slot's previous batch on the copy stream). */
  cudaStream_t q = loco ? st->up : st->copy;
  for (uint32_t k = 0; loco && k < s->release_pending && e == cudaSuccess;
       k++)
    e = cudaStreamWaitEvent(q, s->released[k], 0);
  if (loco && s->submitted && e == cudaSuccess)
    e = cudaStreamWaitEvent(q, s->ready, 0);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaStreamWaitEvent (upload stream)");
  /* The parameters, gather list and labels first, in one copy (the
   * gather kernel reads the list; `ready` covers the labels). */
  size_t meta = st->params_span + st->segs_span + st->loco_span +
                (size_t)n * sizeof(int64_t);
  int f = gf_fault_check(GF_FAULT_CUDA_MEMCPY);
  e = f ? cudaErrorUnknown
        : cudaMemcpyAsync(s->d_params, s->h_params, meta,
                          cudaMemcpyHostToDevice, q);
  if (e == cudaSuccess)
    e = segs ? gather(st, s, nsegs, tiles, land, q)
             : cudaMemcpyAsync(land, s->host, used, cudaMemcpyHostToDevice,
                               q);
  if (e != cudaSuccess)
    return cuda_fail(e, segs ? "gathering the batch (staging and pinned "
                               "cache to device)"
                             : "cudaMemcpyAsync (staging to device)");
  if ((e = cudaEventRecord(s->copied, q)) != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord");
  s->submitted = true;
  if (loco && (e = cudaStreamWaitEvent(st->copy, s->copied, 0)) !=
                  cudaSuccess)
    return cuda_fail(e, "cudaStreamWaitEvent (upload)");
  if (loco) {
    gf_loco_launch la;
    memset(&la, 0, sizeof la);
    la.src = land;
    la.src_len = used;
    la.dst = s->d_in;
    la.dst_len = used;
    la.samples = s->d_params;
    la.items = (const gf_loco_item *)s->d_loco;
    la.n = n;
    la.bands = loco_bands;
    la.ncopy = ncopy;
    la.error = (uint32_t *)(uintptr_t)(s->host_dev +
                                       (uint64_t)((uint8_t *)s->h_loco_err -
                                                  s->host));
    /* Cleared in stream order: an earlier batch's decode is over. */
    if ((e = cudaMemsetAsync(la.error, 0, sizeof *la.error, st->copy)) !=
        cudaSuccess)
      return cuda_fail(e, "clearing the loco error word");
    if ((e = gf_launch_loco(&la, st->copy)) != cudaSuccess)
      return cuda_fail(e, "loco decode launch");
    s->loco_gen = s->gen + 1;
  }
  return 0;
}

int gf_stage_submit(gf_stage *st, uint32_t i, const gf_transform *t,
                    const gf_xform_sample *params, const int64_t *labels,
                    uint32_t n, uint32_t n_filtered, uint64_t used,
                    const gf_stage_seg *segs, uint32_t nsegs,
                    const gf_stage_loco *loco, uint32_t loco_bands,
                    uint32_t out_h, uint32_t out_w, uint32_t out_c,
                    void **out, const int64_t **labels_dev,
                    uint64_t *out_len) {
  stage_slot *s = &st->slots[i];
  if (!s->registered)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "staging slot %u submitted before it was pinned", i);
  int rc = gf_xform_validate(params, n, used, out_h, out_w, out_c,
                             GF_XFORM_FOR_GPU);
  if (rc < 0)
    return rc;
  uint64_t bytes;
  if ((rc = gf_xform_out_bytes(n, out_h, out_w, out_c, t->out_dtype, &bytes)) <
      0)
    return rc;
  if (bytes > st->cfg.out_bytes || used > st->cfg.in_bytes ||
      n > st->cfg.max_samples || nsegs > st->cfg.max_samples)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "batch output of %llu bytes exceeds the %llu bytes the "
                   "memory plan gave a slot",
                   (unsigned long long)bytes,
                   (unsigned long long)st->cfg.out_bytes);
  cudaError_t e = cudaSetDevice(st->cfg.device);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice");
  /* The device blocks may still be read by the caller's streams for the
   * slot's previous batch: wait for every one of them. */
  for (uint32_t k = 0; k < s->release_pending; k++)
    if ((e = cudaStreamWaitEvent(st->copy, s->released[k], 0)) != cudaSuccess)
      return cuda_fail(e, "cudaStreamWaitEvent (release)");
  if (loco && !s->d_loco_in)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a batch of loco records, but the stage was made "
                   "without a loco decoder");
  /* A loco batch lands in the loco block; the decode fills d_in. */
  uint8_t *land = loco ? (uint8_t *)s->d_loco_in : (uint8_t *)s->d_in;
  uint64_t tiles = 0;
  if (segs && (rc = stage_segs(s, segs, nsegs, used, land, &tiles)) < 0)
    return rc;
  memcpy(s->h_params, params, (size_t)n * sizeof *params);
  uint32_t ncopy = 0;
  if (loco) {
    memcpy(s->h_loco, loco, (size_t)n * sizeof *loco);
    for (uint32_t j = 0; j < n; j++)
      ncopy += loco[j].len == 0;
  }
  memcpy(s->h_labels, labels, (size_t)n * sizeof *labels);
  s->timed = false;
  if (st->timing && (e = cudaEventRecord(s->t_start, st->copy)) != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord (trace)");
  rc = enqueue_input(st, s, n, used, segs, nsegs, tiles, land, loco,
                     loco_bands, ncopy);
  if (rc < 0)
    return rc;
  gf_xform_launch a;
  memset(&a, 0, sizeof a);
  a.src = s->d_in;
  a.src_len = used;
  a.samples = s->d_params;
  a.n = n;
  a.n_filtered = n_filtered;
  for (uint32_t j = 0; j < n; j++)
    a.n_resized += params[j].resize != 0;
  a.resize_size = gf_xform_resize_size(t, out_h);
  a.out_h = out_h;
  a.out_w = out_w;
  a.out_c = out_c;
  a.out_dtype = t->out_dtype;
  a.layout = t->layout;
  memcpy(a.mean, t->mean, sizeof a.mean);
  memcpy(a.std, t->std, sizeof a.std);
  a.dst = s->d_out;
  if ((e = gf_launch_xform(&a, st->copy)) != cudaSuccess)
    return cuda_fail(e, "transform kernel launch");
  if ((e = cudaEventRecord(s->ready, st->copy)) != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord");
  /* The done word: the caller's stream need not wait for a batch whose
   * work is over (gf_stage_handoff). */
  uint64_t *dw = (uint64_t *)(uintptr_t)(s->host_dev +
                                         (uint64_t)((uint8_t *)s->h_done -
                                                    s->host));
  if ((e = gf_launch_done_word(dw, s->gen + 1, st->copy)) != cudaSuccess)
    return cuda_fail(e, "done word launch");
  s->gen++;
  if (st->timing) {
    if ((e = cudaEventRecord(s->t_end, st->copy)) != cudaSuccess)
      return cuda_fail(e, "cudaEventRecord (trace)");
    s->timed = true;
  }
  s->release_pending = 0;
  *out = s->d_out;
  *labels_dev = s->d_labels;
  *out_len = bytes;
  return 0;
}

int64_t gf_stage_loco_error(gf_stage *st, uint32_t i) {
  stage_slot *s = &st->slots[i];
  if (!s->loco_gen || s->loco_gen != s->gen)
    return 0;
  if (__atomic_load_n(s->h_done, __ATOMIC_ACQUIRE) != s->gen)
    return -1;
  return __atomic_load_n(s->h_loco_err, __ATOMIC_ACQUIRE);
}

int gf_stage_timing_enable(gf_stage *st) {
  if (st->timing)
    return 0;
  cudaError_t e = cudaSetDevice(st->cfg.device);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice");
  if ((e = cudaEventCreate(&st->t_ref)) != cudaSuccess)
    return cuda_fail(e, "cudaEventCreate (trace)");
  uint32_t made = 0;
  for (; made < st->cfg.slots; made++) {
    stage_slot *s = &st->slots[made];
    if ((e = cudaEventCreate(&s->t_start)) != cudaSuccess)
      break;
    if ((e = cudaEventCreate(&s->t_end)) != cudaSuccess) {
      cudaEventDestroy(s->t_start);
      break;
    }
  }
  if (e == cudaSuccess) {
    /* The host clock is read right after the reference event completes:
     * GPU spans land on the host timeline within the wait's latency. */
    e = cudaEventRecord(st->t_ref, st->copy);
    if (e == cudaSuccess)
      e = cudaEventSynchronize(st->t_ref);
    if (e == cudaSuccess) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      st->t_ref_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
      st->timing = true;
      return 0;
    }
  }
  for (uint32_t k = 0; k < made; k++) {
    cudaEventDestroy(st->slots[k].t_start);
    cudaEventDestroy(st->slots[k].t_end);
  }
  cudaEventDestroy(st->t_ref);
  return cuda_fail(e, "setting up GPU timing for the trace");
}

int gf_stage_timing_take(gf_stage *st, uint32_t i, bool wait,
                         uint64_t *start_ns, uint64_t *dur_ns) {
  *start_ns = *dur_ns = 0;
  if (!st->timing || !st->slots[i].timed)
    return 0;
  stage_slot *s = &st->slots[i];
  cudaError_t e = wait ? cudaEventSynchronize(s->t_end)
                       : cudaEventQuery(s->t_end);
  if (e == cudaErrorNotReady)
    return 0;
  if (e != cudaSuccess)
    return cuda_fail(e, "waiting for the copy stream's timing event");
  float from_ref = 0, dur = 0;
  if ((e = cudaEventElapsedTime(&from_ref, st->t_ref, s->t_start)) !=
          cudaSuccess ||
      (e = cudaEventElapsedTime(&dur, s->t_start, s->t_end)) != cudaSuccess)
    return cuda_fail(e, "cudaEventElapsedTime (trace)");
  s->timed = false;
  *start_ns = st->t_ref_ns + (uint64_t)((double)from_ref * 1e6);
  *dur_ns = (uint64_t)((double)dur * 1e6);
  return 1;
}

void gf_gpu_range_push(const char *name) { nvtxRangePushA(name); }
void gf_gpu_range_pop(void) { nvtxRangePop(); }
uint64_t gf_gpu_range_start(const char *name) { return nvtxRangeStartA(name); }
void gf_gpu_range_end(uint64_t id) { nvtxRangeEnd(id); }
