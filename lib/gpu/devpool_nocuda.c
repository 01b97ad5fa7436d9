/* The public device pool in a build without CUDA: the config is checked
 * exactly as with CUDA (so a bad config gets the same -EINVAL everywhere),
 * and a valid one gets GF_ENODEVICE. No pool can exist, so every call on
 * one is refused. */
#include "gpu/pool.h"

#ifndef GPUFEED_HAVE_CUDA

/* A NULL pool is a caller's mistake in every build; anything else cannot be
 * a pool here. */
static int no_cuda(const void *pool, const char *call) {
  if (!pool)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s needs a pool",
                   call);
  return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "%s: this gpufeed was built without CUDA, so it has no "
                 "device memory pool",
                 call);
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
  return no_cuda(out, "gf_device_pool_create");
}

int gf_device_pool_alloc(gf_device_pool *pool, uint64_t bytes,
                         void *cuda_stream, void **ptr) {
  (void)bytes;
  (void)cuda_stream;
  if (ptr)
    *ptr = NULL;
  return no_cuda(pool, "gf_device_pool_alloc");
}

int gf_device_pool_free(gf_device_pool *pool, void *ptr, void *cuda_stream) {
  (void)ptr;
  (void)cuda_stream;
  return no_cuda(pool, "gf_device_pool_free");
}

int gf_device_pool_stats_get(gf_device_pool *pool, gf_device_pool_stats *st) {
  (void)st;
  return no_cuda(pool, "gf_device_pool_stats_get");
}

int gf_device_pool_reset_peak(gf_device_pool *pool) {
  return no_cuda(pool, "gf_device_pool_reset_peak");
}

void gf_device_pool_destroy(gf_device_pool *pool) { (void)pool; }

#endif /* !GPUFEED_HAVE_CUDA */
