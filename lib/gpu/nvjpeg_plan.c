/* What the GPU JPEG decoder reserves: plain arithmetic, in every build, so
 * that the memory plan is the same with or without CUDA (and nvJPEG). */
#include "gpu/nvjpeg.h"

void gf_nvjpeg_plan(const gf_nvjpeg_config *cfg, uint64_t *device_bytes,
                    uint64_t *pinned_bytes) {
  uint64_t d = cfg->device_budget, per;
  if (!d)
    d = gf_mul_u64(cfg->max_batch, GF_NVJPEG_DEFAULT_DEVICE_PER_IMAGE, &per) &&
                gf_add_u64(per, GF_NVJPEG_DEFAULT_DEVICE_BASE, &d)
            ? d
            : UINT64_MAX;
  *device_bytes = d;
  *pinned_bytes =
      cfg->pinned_budget ? cfg->pinned_budget : GF_NVJPEG_DEFAULT_PINNED_BUDGET;
}
