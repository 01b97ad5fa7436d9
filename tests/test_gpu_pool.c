/* The public device pool on a real device (skips with 77 without one):
 * - create / alloc / free / stats / destroy, alignment, bad frees;
 * - the device bytes used (cudaMemGetInfo) never exceed the budget, fixed,
 *   growing and by fraction, and come back at destroy;
 * - 100 create/destroy cycles, with frees still pending on a stream at
 *   destroy, return cudaMemGetInfo's free bytes to the baseline;
 * - stream-ordered reuse: a block freed on stream S while a kernel queued
 *   on S still writes into it is handed to stream T only behind S's work
 *   (T waits on an event, the host does not), or, for a NULL stream, after
 *   the host has waited; free memory is preferred to pending blocks;
 * - injected cudaMalloc failures at create and at growth, a reservation
 *   beyond the device's free memory, a device that does not exist;
 * - several threads on one pool.
 * Every CUDA call is checked; the figures measured are printed. */
#include "testutil.h"

#include "common/fault.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* tests/gpu_pool_kernels.cu */
int gpt_delay_fill(uint32_t *p, size_t n, uint32_t v, uint64_t ns,
                   void *stream);
int gpt_fill(uint32_t *p, size_t n, uint32_t v, void *stream);

#define MiB (1ull << 20)
/* What the driver may take or give back beside the pool (page tables,
 * allocation granularity). */
#define TOLERANCE (2 * MiB)
#define DELAY_NS 100000000ull /* 100 ms of device spinning */

#define CU(call)                                                             \
  do {                                                                       \
    cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,     \
              cudaGetErrorString(e_), cudaGetErrorName(e_));                 \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define KERNEL(call) CU((cudaError_t)(call))

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t dev_free(void) {
  size_t f = 0, t = 0;
  CU(cudaMemGetInfo(&f, &t));
  return f;
}

static bool has(const char *what) {
  const char *msg = gf_last_error()->message;
  if (strstr(msg, what))
    return true;
  fprintf(stderr, "message lacks \"%s\": %s\n", what, msg);
  return false;
}

static gf_device_pool *make(uint64_t bytes) {
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  c.bytes = bytes;
  gf_device_pool *p = NULL;
  CHECK_OK(gf_device_pool_create(&c, &p));
  if (!p) {
    fprintf(stderr, "cannot go on without a pool\n");
    exit(1);
  }
  return p;
}

static gf_device_pool_stats stats(gf_device_pool *p) {
  gf_device_pool_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(gf_device_pool_stats_get(p, &st));
  return st;
}

/* Checks that all n words at d are v (copied back on stream s). */
static bool all_equal(const uint32_t *d, size_t n, uint32_t v,
                      cudaStream_t s) {
  uint32_t *h;
  CU(cudaMallocHost((void **)&h, n * sizeof *h));
  CU(cudaMemcpyAsync(h, d, n * sizeof *h, cudaMemcpyDeviceToHost, s));
  CU(cudaStreamSynchronize(s));
  size_t bad = 0, first = n;
  for (size_t i = 0; i < n; i++)
    if (h[i] != v) {
      if (first == n)
        first = i;
      bad++;
    }
  if (bad)
    fprintf(stderr, "%zu of %zu words differ from %#x (word %zu is %#x)\n",
            bad, n, v, first, h[first]);
  CU(cudaFreeHost(h));
  return bad == 0;
}

static void basic(cudaStream_t s) {
  gf_device_pool *p = make(64 * MiB);
  gf_device_pool_stats st = stats(p);
  CHECK(st.reserved_bytes == 64 * MiB && st.limit == 64 * MiB);
  CHECK(st.alignment == 256 && st.growth == 0 && st.regions == 1);
  CHECK(st.in_use == 0 && st.free_bytes == 64 * MiB &&
        st.largest_free == 64 * MiB && st.fragmentation == 0.0);

  void *a = NULL, *b = NULL;
  CHECK_OK(gf_device_pool_alloc(p, 1000, s, &a));
  CHECK_OK(gf_device_pool_alloc(p, 4000, s, &b));
  CHECK(a && b && (uintptr_t)a % 256 == 0 && (uintptr_t)b % 256 == 0);
  CHECK((char *)b == (char *)a + 1024); /* best fit, packed */
  KERNEL(gpt_fill(a, 250, 0x12345678u, s));
  KERNEL(gpt_fill(b, 1000, 0x9abcdef0u, s));
  CHECK(all_equal(a, 250, 0x12345678u, s));
  CHECK(all_equal(b, 1000, 0x9abcdef0u, s));
  st = stats(p);
  CHECK(st.in_use == 1024 + 4096 && st.live_allocs == 2 &&
        st.peak_in_use == 5120);

  CHECK_OK(gf_device_pool_free(p, a, NULL));
  CHECK_ERR(gf_device_pool_free(p, a, NULL), -EINVAL);
  CHECK(has("double free"));
  CHECK_ERR(gf_device_pool_free(p, (char *)b + 256, NULL), -EINVAL);
  CHECK(has("not the start of an allocation"));
  int on_stack;
  CHECK_ERR(gf_device_pool_free(p, &on_stack, NULL), -EINVAL);
  CHECK(has("not an address of this pool"));
  CHECK_OK(gf_device_pool_free(p, NULL, NULL));
  CHECK_OK(gf_device_pool_free(p, b, s));
  CHECK_ERR(gf_device_pool_free(p, b, s), -EINVAL);
  CHECK(has("already freed on a stream"));
  CHECK_ERR(gf_device_pool_alloc(p, 0, s, &a), -EINVAL);
  CU(cudaStreamSynchronize(s));
  st = stats(p); /* takes the pending block back */
  CHECK(st.in_use == 0 && st.pending_frees == 0 && st.total_frees == 2);
  CHECK(st.peak_in_use == 5120);
  CHECK_OK(gf_device_pool_reset_peak(p));
  st = stats(p);
  CHECK(st.peak_in_use == 0);

  /* A size no header published (a cut struct) is refused, and nothing is
   * written into it. */
  gf_device_pool_stats small;
  memset(&small, 0xee, sizeof small);
  small.struct_size = (uint32_t)offsetof(gf_device_pool_stats, free_bytes);
  CHECK_ERR(gf_device_pool_stats_get(p, &small), -EINVAL);
  CHECK(small.reserved_bytes == 0xeeeeeeeeeeeeeeeeull);
  CHECK(small.free_bytes == 0xeeeeeeeeeeeeeeeeull);
  small.struct_size = sizeof small + 4;
  CHECK_ERR(gf_device_pool_stats_get(p, &small), -EINVAL);
  gf_device_pool_destroy(p);

  /* A 1 MiB alignment: every pointer a multiple of it. */
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  c.bytes = 8 * MiB;
  c.alignment = 1 << 20;
  CHECK_OK(gf_device_pool_create(&c, &p));
  int got = 0;
  while (gf_device_pool_alloc(p, 10, NULL, &a) == 0) {
    CHECK((uintptr_t)a % MiB == 0);
    got++;
  }
  st = stats(p);
  printf("alignment 1 MiB: %d blocks from a %llu-byte pool (usable %llu)\n",
         got, (unsigned long long)st.reserved_bytes,
         (unsigned long long)(st.in_use + st.free_bytes));
  CHECK(got >= 7 && got <= 8);
  gf_device_pool_destroy(p);
}

static void budget(void) {
  uint64_t base = dev_free();
  gf_device_pool *p = make(256 * MiB);
  void *ptr;
  int n = 0, rc;
  while ((rc = gf_device_pool_alloc(p, 4 * MiB, NULL, &ptr)) == 0)
    n++;
  CHECK_ERR(rc, GF_EDEVOOM);
  CHECK(has("the limit is to blame"));
  CHECK(has("limit 268435456"));
  uint64_t used = base - dev_free();
  printf("fixed 256 MiB: %d blocks of 4 MiB, device bytes used %llu "
         "(budget %llu + tolerance %llu)\n",
         n, (unsigned long long)used, 256 * MiB,
         (unsigned long long)TOLERANCE);
  CHECK(n == 64);
  CHECK(used <= 256 * MiB + TOLERANCE);
  gf_device_pool_destroy(p);
  uint64_t back = dev_free();
  printf("  after destroy: free %llu, baseline %llu\n",
         (unsigned long long)back, (unsigned long long)base);
  CHECK(back + TOLERANCE >= base);

  /* Growth from nothing in 16 MiB chunks up to 64 MiB. */
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  c.growth = 1;
  c.growth_chunk = 16 * MiB;
  c.limit = 64 * MiB;
  CHECK_OK(gf_device_pool_create(&c, &p));
  gf_device_pool_stats st = stats(p);
  CHECK(st.reserved_bytes == 0 && st.regions == 0);
  n = 0;
  uint64_t peak_used = 0;
  while ((rc = gf_device_pool_alloc(p, 4 * MiB, NULL, &ptr)) == 0) {
    n++;
    uint64_t u = base - dev_free();
    if (u > peak_used)
      peak_used = u;
  }
  CHECK_ERR(rc, GF_EDEVOOM);
  CHECK(has("growth cannot add a chunk"));
  st = stats(p);
  printf("growth 16 MiB chunks to 64 MiB: %d blocks, %llu regions, reserved "
         "%llu, device bytes used at most %llu\n",
         n, (unsigned long long)st.regions,
         (unsigned long long)st.reserved_bytes,
         (unsigned long long)peak_used);
  CHECK(n == 16 && st.regions == 4 && st.reserved_bytes == 64 * MiB);
  CHECK(peak_used <= 64 * MiB + TOLERANCE);
  gf_device_pool_destroy(p);
  CHECK(dev_free() + TOLERANCE >= base);

  /* A fraction of free memory, rounded down to the alignment. */
  c = (gf_device_pool_config)GF_DEVICE_POOL_CONFIG_INIT;
  c.fraction = 0.05f;
  uint64_t before = dev_free();
  CHECK_OK(gf_device_pool_create(&c, &p));
  st = stats(p);
  uint64_t used_f = before - dev_free();
  printf("fraction 0.05 of %llu free: reserved %llu, device bytes used %llu\n",
         (unsigned long long)before, (unsigned long long)st.reserved_bytes,
         (unsigned long long)used_f);
  /* create read the free bytes itself, a moment later: allow 1 MiB. */
  double want = (double)0.05f * (double)before,
         got = (double)st.reserved_bytes;
  CHECK(got <= want + (double)MiB && got >= want - (double)MiB);
  CHECK(st.limit == st.reserved_bytes);
  CHECK(used_f <= st.reserved_bytes + TOLERANCE);
  gf_device_pool_destroy(p);
  CHECK(dev_free() + TOLERANCE >= base);
}

static void cycles(cudaStream_t s) {
  /* Warm the driver up so the baseline holds its own bookkeeping. */
  gf_device_pool_destroy(make(32 * MiB));
  CU(cudaDeviceSynchronize());
  uint64_t base = dev_free(), lowest = base, highest = base;
  for (int i = 0; i < 100; i++) {
    gf_device_pool *p = make(32 * MiB);
    void *a, *b, *c;
    CHECK_OK(gf_device_pool_alloc(p, 8 * MiB, s, &a));
    CHECK_OK(gf_device_pool_alloc(p, 8 * MiB, s, &b));
    CHECK_OK(gf_device_pool_alloc(p, 1000, s, &c));
    KERNEL(gpt_fill(a, 1024, (uint32_t)i, s));
    /* Still queued at destroy: destroy must wait before cudaFree. */
    KERNEL(gpt_delay_fill(b, 1024, (uint32_t)i, 2000000, s));
    CHECK_OK(gf_device_pool_free(p, a, s));
    CHECK_OK(gf_device_pool_free(p, b, s));
    (void)c; /* left allocated: destroy frees it */
    uint64_t f = dev_free();
    if (f < lowest)
      lowest = f;
    gf_device_pool_destroy(p);
    f = dev_free();
    if (f > highest)
      highest = f;
  }
  CU(cudaStreamSynchronize(s));
  uint64_t end = dev_free();
  long long drift = (long long)base - (long long)end;
  printf("100 create/destroy cycles: free bytes baseline %llu, after %llu "
         "(drift %lld bytes), lowest while a pool lived %llu\n",
         (unsigned long long)base, (unsigned long long)end, drift,
         (unsigned long long)lowest);
  CHECK(end + TOLERANCE >= base);
  CHECK(base - lowest <= 32 * MiB + TOLERANCE);
}

static void stream_order(cudaStream_t S, cudaStream_t T) {
  const size_t n = MiB / 4; /* words in 1 MiB */
  const uint32_t A = 0xAAAAAAAAu, B = 0xBBBBBBBBu, C = 0xCCCCCCCCu;
  /* One block's worth: a second alloc can only get the block just freed. */
  gf_device_pool *p = make(MiB);
  uint32_t *a, *b;
  CHECK_OK(gf_device_pool_alloc(p, MiB, S, (void **)&a));
  double t0 = now_s();
  KERNEL(gpt_delay_fill(a, n, A, DELAY_NS, S)); /* writes A at its end */
  CHECK_OK(gf_device_pool_free(p, a, S));
  CHECK(stats(p).pending_frees == 1);
  double t1 = now_s();
  CHECK_OK(gf_device_pool_alloc(p, MiB, T, (void **)&b));
  double t_alloc = now_s() - t1;
  cudaError_t q = cudaStreamQuery(S);
  CHECK(b == a);
  printf("stream-ordered reuse: alloc on T took %.3f ms; S %s when it "
         "returned\n",
         t_alloc * 1e3, q == cudaErrorNotReady ? "still busy" : "done");
  CHECK(q == cudaErrorNotReady); /* the host did not wait for S */
  gf_device_pool_stats st = stats(p);
  CHECK(st.stream_waits == 1 && st.pending_frees == 0 && st.live_allocs == 1);
  KERNEL(gpt_fill(b, n, B, T)); /* must run after S's A */
  CU(cudaStreamSynchronize(T));
  double t_T = now_s() - t0;
  CU(cudaStreamSynchronize(S));
  printf("  T's fill finished %.1f ms after S's delay kernel was queued "
         "(the delay is %.0f ms)\n",
         t_T * 1e3, DELAY_NS / 1e6);
  CHECK(t_T >= 0.8 * DELAY_NS / 1e9);
  CHECK(all_equal(b, n, B, T)); /* A first, then B: the order held */

  /* NULL stream: the host waits for T before handing the block over. */
  KERNEL(gpt_delay_fill(b, n, A, DELAY_NS, T));
  CHECK_OK(gf_device_pool_free(p, b, T));
  t1 = now_s();
  uint32_t *c;
  CHECK_OK(gf_device_pool_alloc(p, MiB, NULL, (void **)&c));
  double t_wait = now_s() - t1;
  q = cudaStreamQuery(T);
  printf("NULL-stream reuse: alloc waited %.1f ms; T %s when it returned\n",
         t_wait * 1e3, q == cudaSuccess ? "done" : "still busy");
  CHECK(c == b);
  CHECK(q == cudaSuccess);
  CHECK(stats(p).stream_waits == 2);
  KERNEL(gpt_fill(c, n, C, S));
  CU(cudaStreamSynchronize(S));
  CU(cudaStreamSynchronize(T));
  CHECK(all_equal(c, n, C, S));
  CHECK_OK(gf_device_pool_free(p, c, NULL));
  gf_device_pool_destroy(p);

  /* Free memory first: a pending block is not touched while another
   * fits; once S has passed the free it is reused without waiting. */
  p = make(2 * MiB);
  uint32_t *x, *y, *z, *w;
  CHECK_OK(gf_device_pool_alloc(p, MiB, S, (void **)&x));
  CHECK_OK(gf_device_pool_alloc(p, MiB, S, (void **)&y));
  KERNEL(gpt_delay_fill(x, n, A, DELAY_NS, S));
  CHECK_OK(gf_device_pool_free(p, x, S));
  CHECK_OK(gf_device_pool_free(p, y, NULL));
  CHECK_OK(gf_device_pool_alloc(p, MiB, T, (void **)&z));
  CHECK(z == y);
  st = stats(p);
  CHECK(st.stream_waits == 0 && st.pending_frees == 1);
  CHECK(cudaStreamQuery(S) == cudaErrorNotReady);
  CU(cudaStreamSynchronize(S));
  CHECK_OK(gf_device_pool_alloc(p, MiB, T, (void **)&w));
  CHECK(w == x);
  st = stats(p);
  CHECK(st.stream_waits == 0 && st.pending_frees == 0 &&
        st.in_use == 2 * MiB);
  CHECK(all_equal(x, n, A, T));
  gf_device_pool_destroy(p);
}

static void faults(void) {
  uint64_t base = dev_free();
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  c.bytes = 16 * MiB;
  gf_device_pool *p = (gf_device_pool *)&p;
  CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_MALLOC, 1, GF_EDEVOOM, 0));
  CHECK_ERR(gf_device_pool_create(&c, &p), GF_EDEVOOM);
  CHECK(p == NULL);
  CHECK(has("cudaMalloc of 16777216 bytes on device 0 (injected fault)"));
  CHECK(has("out of memory"));
  printf("injected: %s\n", gf_last_error()->message);
  CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_MALLOC, 1, GF_ECUDA, 0));
  CHECK_ERR(gf_device_pool_create(&c, &p), GF_ECUDA);
  CHECK(has("cudaErrorUnknown"));
  CHECK(gf_fault_fired(GF_FAULT_CUDA_MALLOC) == 1);
  CHECK(dev_free() + TOLERANCE >= base);

  /* At growth: the second chunk fails, the pool stays usable. */
  c = (gf_device_pool_config)GF_DEVICE_POOL_CONFIG_INIT;
  c.growth = 1;
  c.growth_chunk = 8 * MiB;
  c.limit = 32 * MiB;
  CHECK_OK(gf_device_pool_create(&c, &p));
  CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_MALLOC, 2, GF_EDEVOOM, 0));
  void *a, *b;
  CHECK_OK(gf_device_pool_alloc(p, 4 * MiB, NULL, &a));
  CHECK_ERR(gf_device_pool_alloc(p, 8 * MiB, NULL, &b), GF_EDEVOOM);
  CHECK(has("growing by 8388608 bytes for a request of 8388608"));
  CHECK(has("injected fault"));
  gf_device_pool_stats st = stats(p);
  CHECK(st.regions == 1 && st.reserved_bytes == 8 * MiB && st.live_allocs == 1);
  gf_fault_disarm_all();
  CHECK_OK(gf_device_pool_alloc(p, 8 * MiB, NULL, &b));
  st = stats(p);
  CHECK(st.regions == 2 && st.reserved_bytes == 16 * MiB);
  gf_device_pool_destroy(p);

  /* More than the device has free; a device that does not exist. */
  size_t f, t;
  CU(cudaMemGetInfo(&f, &t));
  c = (gf_device_pool_config)GF_DEVICE_POOL_CONFIG_INIT;
  c.bytes = (uint64_t)t + (1ull << 30);
  char want[64];
  snprintf(want, sizeof want, "cannot reserve %llu bytes on device 0",
           (unsigned long long)c.bytes);
  CHECK_ERR(gf_device_pool_create(&c, &p), GF_EDEVOOM);
  CHECK(has(want));
  CHECK(has("bytes are free (of "));
  printf("too big: %s\n", gf_last_error()->message);
  int count = 0;
  CU(cudaGetDeviceCount(&count));
  c.bytes = MiB;
  c.device = count;
  CHECK_ERR(gf_device_pool_create(&c, &p), GF_ENODEVICE);
  CHECK(has("does not exist"));
  CHECK(dev_free() + TOLERANCE >= base);
}

typedef struct worker {
  gf_device_pool *p;
  cudaStream_t s;
  int id, failures;
} worker;

static void *hammer(void *arg) {
  worker *w = arg;
  uint64_t rng = (uint64_t)w->id;
  void *held[8] = {0};
  for (int i = 0; i < 2000; i++) {
    int k = (int)(gf_test_rand(&rng) % 8);
    if (held[k]) {
      if (gf_device_pool_free(w->p, held[k], (i & 1) ? w->s : NULL) < 0)
        w->failures++;
      held[k] = NULL;
    } else {
      uint64_t bytes = 1 + gf_test_rand(&rng) % (256 * 1024);
      int rc = gf_device_pool_alloc(w->p, bytes, w->s, &held[k]);
      if (rc < 0 && rc != GF_EDEVOOM)
        w->failures++;
    }
  }
  for (int k = 0; k < 8; k++)
    if (held[k] && gf_device_pool_free(w->p, held[k], w->s) < 0)
      w->failures++;
  return NULL;
}

static void threads(void) {
  gf_device_pool *p = make(16 * MiB);
  worker w[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){p, NULL, i + 1, 0};
    CU(cudaStreamCreateWithFlags(&w[i].s, cudaStreamNonBlocking));
    CHECK(pthread_create(&th[i], NULL, hammer, &w[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    CHECK(w[i].failures == 0);
    CU(cudaStreamSynchronize(w[i].s));
    CU(cudaStreamDestroy(w[i].s));
  }
  gf_device_pool_stats st = stats(p);
  printf("4 threads: %llu allocs, %llu frees, %llu stream waits\n",
         (unsigned long long)st.total_allocs,
         (unsigned long long)st.total_frees,
         (unsigned long long)st.stream_waits);
  CHECK(st.live_allocs == 0 && st.in_use == 0 && st.pending_frees == 0);
  CHECK(st.free_bytes == 16 * MiB && st.largest_free == 16 * MiB);
  gf_device_pool_destroy(p);
}

int main(void) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    gf_test_skip(true, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "count is 0");
  CU(cudaSetDevice(0));
  CU(cudaFree(NULL)); /* create the context before any baseline */
  struct cudaDeviceProp prop;
  CU(cudaGetDeviceProperties(&prop, 0));
  printf("device 0: %s\n", prop.name);
  cudaStream_t S, T;
  CU(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  CU(cudaStreamCreateWithFlags(&T, cudaStreamNonBlocking));
  /* Load the kernels once, so no lazy loading lands inside a timing. */
  {
    uint32_t *d;
    CU(cudaMalloc((void **)&d, 4096));
    KERNEL(gpt_fill(d, 1024, 0, S));
    KERNEL(gpt_delay_fill(d, 1024, 0, 1000, S));
    CU(cudaStreamSynchronize(S));
    CU(cudaFree(d));
  }
  basic(S);
  budget();
  cycles(S);
  stream_order(S, T);
  faults();
  threads();
  CU(cudaStreamDestroy(S));
  CU(cudaStreamDestroy(T));
  return gf_test_finish();
}
