/* The gather kernel (kernels/gather.cu), byte for byte against memcpy on
 * the CPU: random lists of ranges (1 byte to several tiles, whole tiles,
 * any source and destination alignment) read from pinned host memory
 * through its mapped device address and from device memory, any grid
 * bound; the bytes between ranges stay untouched; the launcher's
 * refusals. Skips (77) without a CUDA device.
 *
 * `test_gpu_gather --bench` times, on one batch of 256 samples of 196,608
 * bytes (256x256 RGB) scattered in a pinned buffer, the ways such a batch
 * can reach the device: one contiguous cudaMemcpyAsync of the same bytes
 * (the yardstick), 256 cudaMemcpyAsync calls, one cudaMemcpyBatchAsync,
 * and the gather kernel with 8 to 132 blocks; prints GB/s for each. */
#include "cuda_testutil.h"

#include "gather.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


#define HOST_BYTES (96u << 20)
#define DST_BYTES (64u << 20)
#define MAXSEG 300

static uint64_t rs = 424242;
static uint32_t rnd(uint32_t n) { return (uint32_t)(gf_test_rand(&rs) % n); }

static uint8_t *host;       /* pinned, mapped */
static uint64_t host_dev;   /* its device address */
static uint8_t *dsrc;       /* a device copy of host */
static uint8_t *ddst;
static uint8_t *want, *got;
static cudaStream_t stream;

static uint32_t seg_len(void) {
  switch (rnd(6)) {
  case 0:
    return 1 + rnd(40);
  case 1:
    return GF_GATHER_TILE * (1 + rnd(3));
  case 2:
    return GF_GATHER_TILE * (1 + rnd(2)) + rnd(33) - 16;
  default:
    return 1 + rnd(200000);
  }
}

/* One random case; returns the number of bytes compared. */
static uint64_t one_case(bool from_host, bool aligned) {
  gf_gather_seg segs[MAXSEG];
  uint32_t n = 1 + rnd(MAXSEG);
  uint64_t dst = rnd(64), tiles = 0;
  uint32_t k = 0;
  for (; k < n; k++) {
    uint32_t len = seg_len();
    if (aligned) {
      dst = (dst + 15) / 16 * 16;
      len = (len + 15) / 16 * 16;
    }
    if (dst + len > DST_BYTES)
      break;
    uint64_t src = rnd(HOST_BYTES - len);
    if (aligned)
      src &= ~(uint64_t)15;
    segs[k] = (gf_gather_seg){(from_host ? host_dev : (uint64_t)(uintptr_t)dsrc) +
                                  src,
                              dst, len, tiles};
    memcpy(want + dst, host + src, len);
    tiles += gf_gather_tiles(len);
    dst += len + (rnd(3) == 0 ? rnd(100) : 0);
  }
  n = k;
  if (n == 0)
    return 0;
  gf_gather_seg *d_segs;
  CUDA_OK(cudaMalloc((void **)&d_segs, n * sizeof *d_segs));
  CUDA_OK(cudaMemcpy(d_segs, segs, n * sizeof *d_segs,
                     cudaMemcpyHostToDevice));
  static const uint32_t grids[] = {0, 1, 7, 32, 1000};
  CUDA_OK(gf_launch_gather(d_segs, n, tiles, ddst, grids[rnd(5)], stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(got, ddst, dst, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(d_segs));
  if (memcmp(got, want, dst) != 0) {
    uint64_t i = 0;
    while (got[i] == want[i])
      i++;
    fprintf(stderr, "gather (%u ranges, %s, %s): byte %llu differs\n", n,
            from_host ? "mapped host" : "device",
            aligned ? "aligned" : "any alignment", (unsigned long long)i);
    gf_test_failures++;
  }
  /* Reset both to the same poison for the next case. */
  memset(want, 0xA5, dst);
  CUDA_OK(cudaMemset(ddst, 0xA5, dst));
  return dst;
}

static float time_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CUDA_OK(cudaEventSynchronize(b));
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

static int bench(void) {
  enum { N = 256, LEN = 196608, REPS = 20 };
  gf_gather_seg segs[N];
  void *dsts[N];
  const void *srcs[N];
  size_t lens[N];
  uint64_t tiles = 0;
  for (uint32_t k = 0; k < N; k++) {
    /* Scattered like cache records: every other 200 KiB slot. */
    uint64_t src = (uint64_t)k * 2 * 204800 % (HOST_BYTES - LEN);
    src &= ~(uint64_t)15;
    segs[k] = (gf_gather_seg){host_dev + src, (uint64_t)k * LEN, LEN, tiles};
    tiles += gf_gather_tiles(LEN);
    dsts[k] = ddst + (uint64_t)k * LEN;
    srcs[k] = host + src;
    lens[k] = LEN;
  }
  gf_gather_seg *d_segs;
  CUDA_OK(cudaMalloc((void **)&d_segs, sizeof segs));
  CUDA_OK(cudaMemcpy(d_segs, segs, sizeof segs, cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  double bytes = (double)N * LEN * REPS;
  int dev = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  printf("one batch: %d x %d bytes, %d repetitions, %d SMs\n", N, LEN, REPS,
         sms);

  for (int round = 0; round < 2; round++) { /* the first warms up */
    CUDA_OK(cudaEventRecord(a, stream));
    for (int r = 0; r < REPS; r++)
      CUDA_OK(cudaMemcpyAsync(ddst, host, (size_t)N * LEN,
                              cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaEventRecord(b, stream));
    double contiguous = bytes / (time_ms(a, b) * 1e-3) / 1e9;

    CUDA_OK(cudaEventRecord(a, stream));
    for (int r = 0; r < REPS; r++)
      for (int k = 0; k < N; k++)
        CUDA_OK(cudaMemcpyAsync(dsts[k], srcs[k], LEN, cudaMemcpyHostToDevice,
                                stream));
    CUDA_OK(cudaEventRecord(b, stream));
    double each = bytes / (time_ms(a, b) * 1e-3) / 1e9;

    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.srcLocHint.type = cudaMemLocationTypeHost;
    attr.dstLocHint.type = cudaMemLocationTypeDevice;
    attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t idx0 = 0;
    double batched = 0;
    CUDA_OK(cudaEventRecord(a, stream));
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < REPS && e == cudaSuccess; r++)
      e = cudaMemcpyBatchAsync(dsts, srcs, lens, N, &attr, &idx0, 1, stream);
    CUDA_OK(cudaEventRecord(b, stream));
    if (e == cudaSuccess)
      batched = bytes / (time_ms(a, b) * 1e-3) / 1e9;
    else
      printf("cudaMemcpyBatchAsync: %s\n", cudaGetErrorString(e));
    if (round == 0)
      continue;
    printf("contiguous cudaMemcpyAsync  %6.1f GB/s (yardstick)\n", contiguous);
    printf("%d cudaMemcpyAsync         %6.1f GB/s (%.2fx)\n", N, each,
           each / contiguous);
    printf("cudaMemcpyBatchAsync        %6.1f GB/s (%.2fx)\n", batched,
           batched / contiguous);
    static const uint32_t grids[] = {8, 16, 32, 64, 132, 264};
    for (int g = 0; g < 6; g++) {
      CUDA_OK(cudaEventRecord(a, stream));
      for (int r = 0; r < REPS; r++)
        CUDA_OK(gf_launch_gather(d_segs, N, tiles, ddst, grids[g], stream));
      CUDA_OK(cudaEventRecord(b, stream));
      double k = bytes / (time_ms(a, b) * 1e-3) / 1e9;
      printf("gather kernel, %3u blocks   %6.1f GB/s (%.2fx)\n", grids[g], k,
             k / contiguous);
    }
  }
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  CUDA_OK(cudaFree(d_segs));
  return 0;
}

int main(int argc, char **argv) {
  gf_test_need_cuda_device();
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  /* Anonymous memory registered mapped, as the loader's cache is. */
  host = mmap(NULL, HOST_BYTES, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(host != MAP_FAILED);
  if (host == MAP_FAILED)
    return gf_test_finish();
  uint64_t s = 99;
  for (size_t i = 0; i < HOST_BYTES; i += 8) {
    uint64_t v = gf_test_rand(&s);
    memcpy(host + i, &v, 8);
  }
  CUDA_OK(cudaHostRegister(host, HOST_BYTES, cudaHostRegisterMapped));
  void *dp;
  CUDA_OK(cudaHostGetDevicePointer(&dp, host, 0));
  host_dev = (uint64_t)(uintptr_t)dp;
  CUDA_OK(cudaMalloc((void **)&dsrc, HOST_BYTES));
  CUDA_OK(cudaMemcpy(dsrc, host, HOST_BYTES, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMalloc((void **)&ddst, DST_BYTES));
  CUDA_OK(cudaMemset(ddst, 0xA5, DST_BYTES));
  int rc = 0;
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    rc = bench();
  } else {
    want = malloc(DST_BYTES);
    got = malloc(DST_BYTES);
    memset(want, 0xA5, DST_BYTES);
    bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    uint64_t compared = 0;
    int cases = quick ? 12 : 120;
    for (int i = 0; i < cases; i++)
      compared += one_case(i % 2 == 0, i % 3 == 0);
    printf("%d gather launches, %llu bytes compared\n", cases,
           (unsigned long long)compared);
    /* Refusals, and n 0 is a no-op. */
    CHECK(gf_launch_gather(NULL, 1, 1, ddst, 1, stream) ==
          cudaErrorInvalidValue);
    CHECK(gf_launch_gather((const gf_gather_seg *)dsrc, 1, 1, ddst, 1,
                           cudaStreamLegacy) == cudaErrorInvalidValue);
    CHECK(gf_launch_gather(NULL, 0, 0, NULL, 1, stream) == cudaSuccess);
    free(want);
    free(got);
    rc = gf_test_finish();
  }
  CUDA_OK(cudaHostUnregister(host));
  munmap(host, HOST_BYTES);
  CUDA_OK(cudaFree(dsrc));
  CUDA_OK(cudaFree(ddst));
  CUDA_OK(cudaStreamDestroy(stream));
  return rc;
}
