/* The loader's GPU stage with the CUDA runtime (see stage.h). */
#include "gpu/stage.h"

#include "common/fault.h"
#include "delay.h"
#include "kernels.h"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h> /* header-only: ranges for Nsight Systems */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

typedef struct stage_slot {
  uint8_t *host;           /* staging bytes, then the parameters */
  size_t map_len;
  bool registered;
  gf_xform_sample *h_params; /* inside the pinned mapping */
  void *d_in, *d_out;
  gf_xform_sample *d_params;
  cudaEvent_t copied, ready, released;
  bool events;
  bool submitted;          /* a copy was enqueued from this slot */
  bool release_pending;    /* `released` was recorded on a caller stream */
  cudaEvent_t t_start, t_end; /* trace mode: around copy + kernel */
  bool timed;              /* t_start/t_end recorded and not yet taken */
} stage_slot;

struct gf_stage {
  gf_stage_config cfg;
  gf_device_pool *pool;
  cudaStream_t copy;
  bool have_stream;
  stage_slot *slots;
  bool timing;             /* trace mode (gf_stage_timing_enable) */
  cudaEvent_t t_ref;       /* recorded when the host clock read t_ref_ns */
  uint64_t t_ref_ns;
};

static int cuda_fail(cudaError_t e, const char *what) {
  return gf_fail(e == cudaErrorMemoryAllocation ? GF_EDEVOOM : GF_ECUDA, NULL,
                 GF_NO_INDEX, GF_NO_INDEX, "%s: %s (%s)", what,
                 cudaGetErrorString(e), cudaGetErrorName(e));
}

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

int gf_stage_create(const gf_stage_config *cfg, gf_stage **out) {
  *out = NULL;
  gf_stage *st = calloc(1, sizeof *st);
  if (!st)
    return -ENOMEM;
  st->cfg = *cfg;
  int rc;
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
  st->slots = calloc(cfg->slots, sizeof *st->slots);
  if (!st->slots) {
    rc = -ENOMEM;
    goto fail;
  }
  size_t params = (size_t)cfg->max_samples * sizeof(gf_xform_sample);
  for (uint32_t i = 0; i < cfg->slots; i++) {
    stage_slot *s = &st->slots[i];
    size_t in = (size_t)round256(cfg->in_bytes);
    s->map_len = (in + params + 4095) / 4096 * 4096;
    void *p = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
      s->map_len = 0;
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot map %zu bytes of staging memory", in + params);
      goto fail;
    }
    s->host = p;
    s->h_params = (gf_xform_sample *)(s->host + in);
    /* Anonymous memory pinned by registration (not cudaHostAlloc): the
     * readers may register the same pages with io_uring. */
    int f = gf_fault_check(GF_FAULT_CUDA_HOST_REGISTER);
    e = f ? cudaErrorMemoryAllocation
          : cudaHostRegister(s->host, s->map_len, cudaHostRegisterDefault);
    if (e != cudaSuccess) {
      rc = cuda_fail(e, "cudaHostRegister (pinning the staging slots)");
      goto fail;
    }
    s->registered = true;
    if ((rc = gf_device_pool_alloc(st->pool, round256(cfg->in_bytes), NULL,
                                   &s->d_in)) < 0 ||
        (rc = gf_device_pool_alloc(st->pool, round256(cfg->out_bytes), NULL,
                                   &s->d_out)) < 0 ||
        (rc = gf_device_pool_alloc(st->pool, round256(params), NULL,
                                   (void **)&s->d_params)) < 0)
      goto fail;
    if ((e = cudaEventCreateWithFlags(&s->copied, cudaEventDisableTiming)) !=
            cudaSuccess ||
        (e = cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming)) !=
            cudaSuccess ||
        (e = cudaEventCreateWithFlags(&s->released, cudaEventDisableTiming)) !=
            cudaSuccess) {
      rc = cuda_fail(e, "cudaEventCreate");
      goto fail;
    }
    s->events = true;
  }
  *out = st;
  return 0;
fail: {
  gf_error_info saved = *gf_last_error();
  gf_stage_destroy(st);
  gf_error_restore(&saved);
}
  return rc;
}

void gf_stage_destroy(gf_stage *st) {
  if (!st)
    return;
  cudaSetDevice(st->cfg.device);
  if (st->have_stream)
    cudaStreamSynchronize(st->copy);
  for (uint32_t i = 0; st->slots && i < st->cfg.slots; i++) {
    stage_slot *s = &st->slots[i];
    if (s->events) {
      /* A caller stream may still read the last batch: wait for it. */
      if (s->release_pending)
        cudaEventSynchronize(s->released);
      cudaEventDestroy(s->copied);
      cudaEventDestroy(s->ready);
      cudaEventDestroy(s->released);
    }
    if (st->timing) {
      cudaEventDestroy(s->t_start);
      cudaEventDestroy(s->t_end);
    }
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
  /* The pool frees every block with its chunks. */
  gf_device_pool_destroy(st->pool);
  free(st);
}

uint8_t *gf_stage_host(gf_stage *st, uint32_t i) { return st->slots[i].host; }

gf_device_pool *gf_stage_pool(gf_stage *st) { return st->pool; }

int gf_stage_submit(gf_stage *st, uint32_t i, const gf_transform *t,
                    const gf_xform_sample *params, uint32_t n,
                    uint32_t n_filtered, uint64_t used, uint32_t out_h,
                    uint32_t out_w, uint32_t out_c, void **out,
                    uint64_t *out_len) {
  stage_slot *s = &st->slots[i];
  int rc = gf_xform_validate(params, n, used, out_h, out_w, out_c,
                             GF_XFORM_FOR_GPU);
  if (rc < 0)
    return rc;
  uint64_t bytes;
  if ((rc = gf_xform_out_bytes(n, out_h, out_w, out_c, t->out_dtype, &bytes)) <
      0)
    return rc;
  if (bytes > st->cfg.out_bytes || used > st->cfg.in_bytes ||
      n > st->cfg.max_samples)
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "batch output of %llu bytes exceeds the %llu bytes the "
                   "memory plan gave a slot",
                   (unsigned long long)bytes,
                   (unsigned long long)st->cfg.out_bytes);
  cudaError_t e = cudaSetDevice(st->cfg.device);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice");
  /* The device blocks may still be read by the caller's stream for the
   * slot's previous batch. */
  if (s->release_pending &&
      (e = cudaStreamWaitEvent(st->copy, s->released, 0)) != cudaSuccess)
    return cuda_fail(e, "cudaStreamWaitEvent (release)");
  memcpy(s->h_params, params, (size_t)n * sizeof *params);
  s->timed = false;
  if (st->timing && (e = cudaEventRecord(s->t_start, st->copy)) != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord (trace)");
  int f = gf_fault_check(GF_FAULT_CUDA_MEMCPY);
  e = f ? cudaErrorUnknown
        : cudaMemcpyAsync(s->d_in, s->host, used, cudaMemcpyHostToDevice,
                          st->copy);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(s->d_params, s->h_params, (size_t)n * sizeof *params,
                        cudaMemcpyHostToDevice, st->copy);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaMemcpyAsync (staging to device)");
  if ((e = cudaEventRecord(s->copied, st->copy)) != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord");
  s->submitted = true;
  gf_xform_launch a;
  memset(&a, 0, sizeof a);
  a.src = s->d_in;
  a.src_len = used;
  a.samples = s->d_params;
  a.n = n;
  a.n_filtered = n_filtered;
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
  if (st->timing) {
    if ((e = cudaEventRecord(s->t_end, st->copy)) != cudaSuccess)
      return cuda_fail(e, "cudaEventRecord (trace)");
    s->timed = true;
  }
  s->release_pending = false;
  *out = s->d_out;
  *out_len = bytes;
  return 0;
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

int gf_stage_handoff(gf_stage *st, uint32_t i, void *stream) {
  stage_slot *s = &st->slots[i];
  cudaError_t e = stream ? cudaStreamWaitEvent((cudaStream_t)stream, s->ready, 0)
                         : cudaEventSynchronize(s->ready);
  return e == cudaSuccess ? 0 : cuda_fail(e, "handing the batch over");
}

int gf_stage_release(gf_stage *st, uint32_t i, void *stream) {
  stage_slot *s = &st->slots[i];
  if (!stream) {
    s->release_pending = false;
    return 0;
  }
  cudaError_t e = cudaEventRecord(s->released, (cudaStream_t)stream);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaEventRecord (release)");
  s->release_pending = true;
  return 0;
}

int gf_stage_host_free(gf_stage *st, uint32_t i) {
  stage_slot *s = &st->slots[i];
  if (!s->submitted)
    return 1;
  cudaSetDevice(st->cfg.device);
  cudaError_t e = cudaEventQuery(s->copied);
  if (e == cudaErrorNotReady)
    return 0;
  if (e != cudaSuccess) {
    /* A failed copy will not touch the staging memory again. */
    gf_log(GF_LOG_ERROR, "staging copy event: %s", cudaGetErrorString(e));
  }
  return 1;
}

int gf_gpu_stream_create(int32_t device, void **stream) {
  *stream = NULL;
  cudaError_t e = cudaSetDevice(device);
  cudaStream_t s;
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return cuda_fail(e, "creating a stream");
  *stream = s;
  return 0;
}

void gf_gpu_stream_destroy(void *stream) {
  if (stream)
    cudaStreamDestroy((cudaStream_t)stream);
}

int gf_gpu_stream_sync(void *stream) {
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaStreamSynchronize");
}

int gf_gpu_spin(void *stream, double ms) {
  cudaError_t e = gf_launch_spin((cudaStream_t)stream, (uint64_t)(ms * 1e6),
                                 NULL, NULL, 0);
  return e == cudaSuccess ? 0 : cuda_fail(e, "spin kernel");
}

int gf_gpu_h2d_probe(int32_t device, uint64_t bytes, int reps, double *gbps) {
  *gbps = 0;
  cudaError_t e = cudaSetDevice(device);
  void *h = NULL, *d = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t a = NULL, b = NULL;
  if (e == cudaSuccess)
    e = cudaHostAlloc(&h, bytes, cudaHostAllocDefault);
  if (e == cudaSuccess)
    e = cudaMalloc(&d, bytes);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaEventCreate(&a);
  if (e == cudaSuccess)
    e = cudaEventCreate(&b);
  if (e == cudaSuccess) {
    memset(h, 0x5a, bytes); /* real pages, not zero-page mappings */
    e = cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
  }
  if (e == cudaSuccess)
    e = cudaEventRecord(a, s);
  for (int i = 0; i < reps && e == cudaSuccess; i++)
    e = cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess)
    e = cudaEventRecord(b, s);
  if (e == cudaSuccess)
    e = cudaEventSynchronize(b);
  float ms = 0;
  if (e == cudaSuccess)
    e = cudaEventElapsedTime(&ms, a, b);
  if (e == cudaSuccess && ms > 0)
    *gbps = (double)bytes * reps / (ms * 1e-3) / 1e9;
  if (a)
    cudaEventDestroy(a);
  if (b)
    cudaEventDestroy(b);
  if (s)
    cudaStreamDestroy(s);
  cudaFree(d);
  cudaFreeHost(h);
  return e == cudaSuccess ? 0 : cuda_fail(e, "pinned host-to-device probe");
}

int gf_gpu_mem_info(int32_t device, uint64_t *free_bytes, uint64_t *total) {
  size_t f = 0, t = 0;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess)
    e = cudaMemGetInfo(&f, &t);
  *free_bytes = f;
  *total = t;
  return e == cudaSuccess ? 0 : cuda_fail(e, "cudaMemGetInfo");
}

int gf_gpu_init(int32_t device) {
  cudaError_t e = cudaSetDevice(device < 0 ? 0 : device);
  if (e == cudaSuccess)
    e = cudaFree(0);
  return e == cudaSuccess ? 0 : cuda_fail(e, "creating the CUDA context");
}
