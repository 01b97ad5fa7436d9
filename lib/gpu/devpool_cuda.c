/* The public device pool (gpufeed.h, "Device memory pool"): the allocator
 * of pool.c over cudaMalloc'd regions, a mutex around it, and stream-ordered
 * reuse of freed blocks through CUDA events.
 *
 * A block freed with a stream goes through two states before it is plain
 * free memory again:
 *   pending - still allocated in the allocator, with an event recorded on
 *             the freeing stream. Taken back (freed in the allocator) by the
 *             next alloc or stats call that finds the event complete.
 *   fenced  - freed in the allocator before its event completed, because an
 *             allocation needed it. Its range and event stay on a list until
 *             the event completes, and every allocation that overlaps the
 *             range first makes its stream wait for the event (or, with a
 *             NULL stream, waits on the host). So no block is used on any
 *             stream before the freeing stream has passed the free.
 * Events come from a stack of idle ones, created only when the stack is
 * empty, so a steady state creates none. */
#include "gpu/pool.h"

#include "common/fault.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tag on a block in the allocator while it is pending. */
#define TAG_PENDING 1u
/* Idle events made at create, so the first frees on a stream create none. */
#define EVENTS_AT_CREATE 8

typedef struct held {
  uint64_t addr, size;
  cudaEvent_t ev;
} held;

typedef struct held_list {
  held *v;
  size_t n, cap;
} held_list;

struct gf_device_pool {
  pthread_mutex_t mu;
  gf_pool *alloc;
  gf_devpool_params pp;
  held_list pending; /* in the order freed */
  held_list fenced;
  cudaEvent_t *idle; /* idle events (a stack) */
  size_t nidle, idle_cap;
  uint64_t stream_waits;
};

/* ---- errors -------------------------------------------------------------- */

static int cuda_code(cudaError_t e) {
  switch (e) {
  case cudaErrorMemoryAllocation:
    return GF_EDEVOOM;
  case cudaErrorNoDevice:
  case cudaErrorInsufficientDriver:
  case cudaErrorInvalidDevice:
    return GF_ENODEVICE;
  default:
    return GF_ECUDA;
  }
}

/* Records a failed CUDA call: "<call> failed: <string> (<name>)". */
static int cuda_fail(cudaError_t e, const char *call_fmt, ...)
    GF_PRINTF(2, 3);
static int cuda_fail(cudaError_t e, const char *call_fmt, ...) {
  char call[256];
  va_list ap;
  va_start(ap, call_fmt);
  vsnprintf(call, sizeof call, call_fmt, ap);
  va_end(ap);
  /* A non-sticky error also sits in the runtime's last-error slot; clear it
   * so a later, unrelated cudaGetLastError() does not report it again. */
  (void)cudaGetLastError();
  return gf_fail(cuda_code(e), NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "device pool: %s failed: %s (%s)", call, cudaGetErrorString(e),
                 cudaGetErrorName(e));
}

/* ---- device selection ---------------------------------------------------- */

/* Makes the pool's device current for this thread; *saved gets the one to
 * restore with dev_leave. */
static int dev_enter(int device, int *saved) {
  cudaError_t e = cudaGetDevice(saved);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaGetDevice");
  if (*saved != device && (e = cudaSetDevice(device)) != cudaSuccess)
    return cuda_fail(e, "cudaSetDevice(%d)", device);
  return 0;
}

static void dev_leave(int device, int saved) {
  if (saved != device && cudaSetDevice(saved) != cudaSuccess) {
    (void)cudaGetLastError();
    gf_log(GF_LOG_WARN, "device pool: cannot restore the current device %d",
           saved);
  }
}

/* ---- regions ------------------------------------------------------------- */

static int dev_malloc(gf_device_pool *p, uint64_t bytes, uint64_t *base) {
  void *ptr = NULL;
  cudaError_t e;
  int inj = gf_fault_check(GF_FAULT_CUDA_MALLOC);
  if (inj < 0)
    /* An injected fault takes the same path as the error it imitates. */
    e = inj == GF_EDEVOOM || inj == -ENOMEM ? cudaErrorMemoryAllocation
                                            : cudaErrorUnknown;
  else
    e = cudaMalloc(&ptr, (size_t)bytes);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaMalloc of %llu bytes on device %d%s",
                     (unsigned long long)bytes, (int)p->pp.device,
                     inj < 0 ? " (injected fault)" : "");
  *base = (uint64_t)(uintptr_t)ptr;
  return 0;
}

static int grow_cb(void *ctx, uint64_t bytes, uint64_t *base) {
  return dev_malloc(ctx, bytes, base);
}

static void release_cb(void *ctx, uint64_t base, uint64_t bytes) {
  const gf_device_pool *p = ctx;
  cudaError_t e = cudaFree((void *)(uintptr_t)base);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    gf_log(GF_LOG_ERROR,
           "device pool: cudaFree of %llu bytes at %#llx on device %d "
           "failed: %s",
           (unsigned long long)bytes, (unsigned long long)base,
           (int)p->pp.device, cudaGetErrorString(e));
  }
}

/* ---- events and lists ---------------------------------------------------- */

static int get_event(gf_device_pool *p, cudaEvent_t *ev) {
  if (p->nidle) {
    *ev = p->idle[--p->nidle];
    return 0;
  }
  /* The idle stack must be able to take this event back later. */
  if (p->idle_cap == 0 || p->idle_cap < p->pending.n + p->fenced.n + 1) {
    size_t cap = p->idle_cap ? p->idle_cap * 2 : EVENTS_AT_CREATE;
    while (cap < p->pending.n + p->fenced.n + 1)
      cap *= 2;
    cudaEvent_t *v = realloc(p->idle, cap * sizeof *v);
    if (!v)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "device pool: out of host memory for events");
    p->idle = v;
    p->idle_cap = cap;
  }
  cudaError_t e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaEventCreateWithFlags");
  return 0;
}

/* Never fails: get_event sized the stack for every event in use. */
static void put_event(gf_device_pool *p, cudaEvent_t ev) {
  p->idle[p->nidle++] = ev;
}

static int list_reserve(held_list *l) {
  if (l->n < l->cap)
    return 0;
  size_t cap = l->cap ? l->cap * 2 : 16;
  held *v = realloc(l->v, cap * sizeof *v);
  if (!v)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: out of host memory for pending frees");
  l->v = v;
  l->cap = cap;
  return 0;
}

static void list_remove(held_list *l, size_t i) {
  memmove(&l->v[i], &l->v[i + 1], (l->n - i - 1) * sizeof l->v[0]);
  l->n--;
}

/* 1: the event has completed; 0: not yet; < 0: error. */
static int event_done(cudaEvent_t ev) {
  cudaError_t e = cudaEventQuery(ev);
  if (e == cudaSuccess)
    return 1;
  if (e == cudaErrorNotReady)
    return 0;
  return cuda_fail(e, "cudaEventQuery");
}

/* Takes back pending blocks whose free the device has passed, and drops
 * fences whose event has completed. One query each, no waiting. */
static int reclaim(gf_device_pool *p) {
  for (size_t i = 0; i < p->pending.n;) {
    held h = p->pending.v[i];
    int d = event_done(h.ev);
    if (d < 0)
      return d;
    if (!d) {
      i++;
      continue;
    }
    int rc = gf_pool_free(p->alloc, h.addr);
    if (rc < 0)
      return gf_fail_context(GF_EINTERNAL, NULL, GF_NO_INDEX,
                             "device pool: a pending block was lost");
    list_remove(&p->pending, i);
    put_event(p, h.ev);
  }
  for (size_t i = 0; i < p->fenced.n;) {
    int d = event_done(p->fenced.v[i].ev);
    if (d < 0)
      return d;
    if (!d) {
      i++;
      continue;
    }
    put_event(p, p->fenced.v[i].ev);
    list_remove(&p->fenced, i);
  }
  return 0;
}

/* Frees the oldest pending block in the allocator before its event has
 * completed, keeping the event as a fence over its range. */
static int fence_oldest(gf_device_pool *p) {
  int rc = list_reserve(&p->fenced);
  if (rc < 0)
    return rc;
  held h = p->pending.v[0];
  if (gf_pool_free(p->alloc, h.addr) < 0)
    return gf_fail_context(GF_EINTERNAL, NULL, GF_NO_INDEX,
                           "device pool: a pending block was lost");
  list_remove(&p->pending, 0);
  p->fenced.v[p->fenced.n++] = h;
  return 0;
}

/* Orders the use of [addr, addr + size) after every fence over it: the
 * stream waits for the fence's event, or the host does when there is no
 * stream (and the fence is then gone). */
static int wait_fences(gf_device_pool *p, uint64_t addr, uint64_t size,
                       cudaStream_t stream) {
  bool waited = false;
  for (size_t i = 0; i < p->fenced.n;) {
    held h = p->fenced.v[i];
    if (h.addr >= addr + size || addr >= h.addr + h.size) {
      i++;
      continue;
    }
    waited = true;
    cudaError_t e;
    if (stream) {
      e = cudaStreamWaitEvent(stream, h.ev, 0);
      if (e != cudaSuccess)
        return cuda_fail(e, "cudaStreamWaitEvent");
      i++;
    } else {
      e = cudaEventSynchronize(h.ev);
      if (e != cudaSuccess)
        return cuda_fail(e, "cudaEventSynchronize");
      put_event(p, h.ev);
      list_remove(&p->fenced, i);
    }
  }
  if (waited)
    p->stream_waits++;
  return 0;
}

/* ---- create / destroy ---------------------------------------------------- */

static void pool_free_all(gf_device_pool *p) {
  held_list *lists[2] = {&p->pending, &p->fenced};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; i < lists[l]->n; i++) {
      /* The device may still use these blocks: wait before cudaFree. */
      if (cudaEventSynchronize(lists[l]->v[i].ev) != cudaSuccess ||
          cudaEventDestroy(lists[l]->v[i].ev) != cudaSuccess) {
        (void)cudaGetLastError();
        gf_log(GF_LOG_ERROR, "device pool: a pending event failed");
      }
    }
    free(lists[l]->v);
  }
  for (size_t i = 0; i < p->nidle; i++)
    if (cudaEventDestroy(p->idle[i]) != cudaSuccess)
      (void)cudaGetLastError();
  free(p->idle);
  gf_pool_destroy(p->alloc); /* cudaFree of every region */
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static int check_device(int device) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: no usable CUDA device: cudaGetDeviceCount: "
                   "%s (%s)",
                   cudaGetErrorString(e), cudaGetErrorName(e));
  }
  if (n <= 0)
    return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: no CUDA device present");
  if (device >= n)
    return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: device %d does not exist (%d device%s)",
                   device, n, n == 1 ? "" : "s");
  return 0;
}

static int reserve_all(gf_device_pool *p) {
  size_t free_b = 0, total_b = 0;
  cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess)
    return cuda_fail(e, "cudaMemGetInfo on device %d", (int)p->pp.device);
  int rc = gf_devpool_params_settle(&p->pp, free_b);
  if (rc < 0)
    return rc;
  if (p->pp.bytes > free_b)
    return gf_fail(GF_EDEVOOM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: cannot reserve %llu bytes on device %d: "
                   "only %llu bytes are free (of %llu)",
                   (unsigned long long)p->pp.bytes, (int)p->pp.device,
                   (unsigned long long)free_b, (unsigned long long)total_b);
  char name[48];
  snprintf(name, sizeof name, "device pool (device %d)", (int)p->pp.device);
  gf_pool_config pc = {
      .alignment = p->pp.alignment,
      .growth_chunk = p->pp.growth ? p->pp.growth_chunk : 0,
      .limit = p->pp.limit,
      .grow = grow_cb,
      .release = release_cb,
      .ctx = p,
      .name = name,
  };
  /* A growth chunk may exceed a limit that settle shrank to 0 bytes of
   * room; then the pool simply never grows. */
  if (pc.growth_chunk > pc.limit)
    pc.growth_chunk = 0;
  if ((rc = gf_pool_create(&pc, &p->alloc)) < 0)
    return rc;
  if (p->pp.bytes) {
    uint64_t base = 0;
    if ((rc = dev_malloc(p, p->pp.bytes, &base)) < 0)
      return rc;
    if ((rc = gf_pool_add_region(p->alloc, base, p->pp.bytes)) < 0) {
      release_cb(p, base, p->pp.bytes);
      return rc;
    }
  }
  p->idle = malloc(EVENTS_AT_CREATE * sizeof *p->idle);
  if (!p->idle)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: out of host memory");
  p->idle_cap = EVENTS_AT_CREATE;
  for (int i = 0; i < EVENTS_AT_CREATE; i++) {
    e = cudaEventCreateWithFlags(&p->idle[i], cudaEventDisableTiming);
    if (e != cudaSuccess)
      return cuda_fail(e, "cudaEventCreateWithFlags");
    p->nidle++;
  }
  if ((rc = list_reserve(&p->pending)) < 0 ||
      (rc = list_reserve(&p->fenced)) < 0)
    return rc;
  return 0;
}

int gf_device_pool_create(const gf_device_pool_config *cfg,
                          gf_device_pool **out) {
  if (!out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_create needs an output pointer");
  *out = NULL;
  gf_devpool_params pp;
  int rc = gf_devpool_params_check(cfg, &pp);
  if (rc < 0)
    return rc;
  if ((rc = check_device(pp.device)) < 0)
    return rc;
  gf_device_pool *p = calloc(1, sizeof *p);
  if (!p)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: out of host memory");
  p->pp = pp;
  if ((rc = pthread_mutex_init(&p->mu, NULL)) != 0) {
    free(p);
    return gf_fail(-rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "device pool: pthread_mutex_init failed");
  }
  int saved;
  if ((rc = dev_enter(pp.device, &saved)) < 0) {
    pool_free_all(p);
    return rc;
  }
  rc = reserve_all(p);
  if (rc < 0)
    pool_free_all(p);
  else
    *out = p;
  dev_leave(pp.device, saved);
  return rc;
}

void gf_device_pool_destroy(gf_device_pool *pool) {
  if (!pool)
    return;
  int saved, dev = pool->pp.device;
  bool entered = dev_enter(dev, &saved) == 0;
  pool_free_all(pool);
  if (entered)
    dev_leave(dev, saved);
}

/* ---- alloc / free -------------------------------------------------------- */

int gf_device_pool_alloc(gf_device_pool *pool, uint64_t bytes,
                         void *cuda_stream, void **ptr) {
  if (!ptr)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_alloc needs an output pointer");
  *ptr = NULL;
  if (!pool)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_alloc needs a pool");
  if (bytes == 0)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_alloc: cannot allocate 0 bytes");
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  pthread_mutex_lock(&pool->mu);
  int saved, rc = dev_enter(pool->pp.device, &saved);
  if (rc < 0)
    goto unlock;
  if ((rc = reclaim(pool)) < 0)
    goto leave;
  /* Free memory first; pending blocks only when it does not suffice,
   * oldest first (the likeliest to be done); a new chunk last. */
  while (!gf_pool_fits(pool->alloc, bytes) && pool->pending.n)
    if ((rc = fence_oldest(pool)) < 0)
      goto leave;
  uint64_t addr, size;
  rc = gf_pool_alloc(pool->alloc, bytes, 0, &addr);
  if (rc < 0)
    goto leave;
  if (gf_pool_lookup(pool->alloc, addr, &size, NULL) < 0) {
    rc = GF_EINTERNAL;
    goto leave;
  }
  if ((rc = wait_fences(pool, addr, size, stream)) < 0) {
    /* Nothing has used the block yet, and its fences stay: the next owner
     * still waits for them. */
    (void)gf_pool_free(pool->alloc, addr);
    goto leave;
  }
  *ptr = (void *)(uintptr_t)addr;
leave:
  dev_leave(pool->pp.device, saved);
unlock:
  pthread_mutex_unlock(&pool->mu);
  return rc;
}

int gf_device_pool_free(gf_device_pool *pool, void *ptr, void *cuda_stream) {
  if (!pool)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_free needs a pool");
  if (!ptr)
    return 0; /* like free(NULL) */
  uint64_t addr = (uint64_t)(uintptr_t)ptr, size;
  uint32_t tag;
  pthread_mutex_lock(&pool->mu);
  int rc = gf_pool_lookup(pool->alloc, addr, &size, &tag);
  if (rc < 0)
    goto unlock;
  if (tag == TAG_PENDING) {
    rc = gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "device pool: free of %p: double free: the block was "
                 "already freed on a stream that has not reached that free "
                 "yet",
                 ptr);
    goto unlock;
  }
  if (!cuda_stream) {
    rc = gf_pool_free(pool->alloc, addr);
    goto unlock;
  }
  int saved;
  if ((rc = dev_enter(pool->pp.device, &saved)) < 0)
    goto unlock;
  cudaEvent_t ev;
  if ((rc = list_reserve(&pool->pending)) < 0 ||
      (rc = get_event(pool, &ev)) < 0)
    goto leave;
  cudaError_t e = cudaEventRecord(ev, (cudaStream_t)cuda_stream);
  if (e != cudaSuccess) {
    put_event(pool, ev);
    rc = cuda_fail(e, "cudaEventRecord for the free of %p", ptr);
    goto leave;
  }
  (void)gf_pool_set_tag(pool->alloc, addr, TAG_PENDING);
  pool->pending.v[pool->pending.n++] = (held){addr, size, ev};
leave:
  dev_leave(pool->pp.device, saved);
unlock:
  pthread_mutex_unlock(&pool->mu);
  return rc;
}

/* ---- stats --------------------------------------------------------------- */

int gf_device_pool_stats_get(gf_device_pool *pool, gf_device_pool_stats *st) {
  if (!pool || !st)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_stats_get needs a pool and a stats "
                   "struct");
  int rc = gf_check_struct_size(st->struct_size, sizeof *st,
                                "gf_device_pool_stats");
  if (rc < 0)
    return rc;
  gf_device_pool_stats o;
  memset(&o, 0, sizeof o);
  o.struct_size = st->struct_size;
  pthread_mutex_lock(&pool->mu);
  int saved;
  if ((rc = dev_enter(pool->pp.device, &saved)) == 0) {
    rc = reclaim(pool);
    dev_leave(pool->pp.device, saved);
  }
  gf_pool_stats ps;
  gf_pool_get_stats(pool->alloc, &ps);
  o.device = pool->pp.device;
  o.in_use = ps.in_use;
  o.peak_in_use = ps.peak_in_use;
  o.reserved_bytes = ps.reserved;
  o.limit = ps.limit;
  o.free_bytes = ps.free_bytes;
  o.largest_free = ps.largest_free;
  o.fragmentation = ps.fragmentation;
  o.live_allocs = ps.live;
  o.total_allocs = ps.total_allocs;
  o.total_frees = ps.total_frees;
  o.pending_frees = pool->pending.n;
  o.stream_waits = pool->stream_waits;
  o.regions = ps.regions;
  o.alignment = (uint32_t)ps.alignment;
  o.growth = pool->pp.growth;
  pthread_mutex_unlock(&pool->mu);
  memcpy(st, &o, st->struct_size);
  return rc;
}

int gf_device_pool_reset_peak(gf_device_pool *pool) {
  if (!pool)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_device_pool_reset_peak needs a pool");
  pthread_mutex_lock(&pool->mu);
  gf_pool_reset_peak(pool->alloc);
  pthread_mutex_unlock(&pool->mu);
  return 0;
}
