/* What the CUDA tests share: checking a CUDA call, and skipping (77, or
 * failing under GPUFEED_REQUIRE_GPU=1) without a device. Only tests built
 * with CUDA include it. */
#ifndef GF_CUDA_TESTUTIL_H
#define GF_CUDA_TESTUTIL_H

#include "testutil.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* A failed call is reported and counted as a test failure; the test goes
 * on (CUDA_CHECK) or ends at once (CUDA_OK: what follows needs it). */
#define CUDA_CHECK(x)                                                        \
  do {                                                                       \
    cudaError_t e_ = (x);                                                    \
    if (e_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
              cudaGetErrorString(e_));                                       \
      gf_test_failures++;                                                    \
    }                                                                        \
  } while (0)
#define CUDA_OK(x)                                                           \
  do {                                                                       \
    int before_ = gf_test_failures;                                          \
    CUDA_CHECK(x);                                                           \
    if (gf_test_failures != before_)                                         \
      exit(1);                                                               \
  } while (0)

/* Skips the test when no CUDA device can be used. */
static inline void gf_test_need_cuda_device(void) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0)
    gf_test_skip(true, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "count 0");
}

#endif /* GF_CUDA_TESTUTIL_H */
