/* What the GPU stage needs from the device pool: plain arithmetic, in
 * every build, so the memory plan is the same with or without CUDA. */
#include "gpu/stage.h"

#include "gather_seg.h" /* the device copy of a slot's gather list sits
                           after its parameters: sized from the kernel's
                           own struct, in builds without CUDA too */

static uint64_t round256(uint64_t n) { return (n + 255) / 256 * 256; }

uint64_t gf_stage_label_bytes(uint32_t max_samples) {
  return round256((uint64_t)max_samples * sizeof(int64_t));
}

uint64_t gf_stage_pool_need(const gf_stage_config *cfg) {
  uint64_t per =
      round256(cfg->in_bytes) + round256(cfg->out_bytes) +
      round256((uint64_t)cfg->max_samples * sizeof(gf_xform_sample)) +
      round256((uint64_t)cfg->max_samples * sizeof(gf_gather_seg)) +
      gf_stage_label_bytes(cfg->max_samples);
  if (cfg->loco) /* a block a slot the loco records land in, and the
                    records' items after the gather list */
    per += round256(cfg->in_bytes) +
           round256((uint64_t)cfg->max_samples * sizeof(gf_stage_loco));
  return per * cfg->slots;
}
