/* The GPU stage in a build without CUDA: no device, ever (host mode). */
#ifndef GPUFEED_HAVE_CUDA
#include "gpu/stage.h"

#include <stdio.h>
#include <string.h>

int gf_stage_probe(int32_t device, char *why, size_t cap) {
  (void)device;
  snprintf(why, cap, "gpufeed was built without CUDA");
  return 0;
}

int gf_stage_create(const gf_stage_config *cfg, gf_stage **out) {
  (void)cfg;
  *out = NULL;
  return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gpufeed was built without CUDA: use host mode");
}

void gf_stage_destroy(gf_stage *st) { (void)st; }
uint8_t *gf_stage_host(gf_stage *st, uint32_t i) {
  (void)st;
  (void)i;
  return NULL;
}
uint64_t gf_stage_host_dev(gf_stage *st, uint32_t i) {
  (void)st, (void)i;
  return 0;
}
const char *gf_stage_direct_copy(const gf_stage *st) {
  (void)st;
  return "none";
}
int gf_stage_submit(gf_stage *st, uint32_t i, const gf_transform *t,
                    const gf_xform_sample *params, const int64_t *labels,
                    uint32_t n, uint32_t n_filtered, uint64_t used,
                    const gf_stage_seg *segs, uint32_t nsegs,
                    const gf_stage_loco *loco, uint32_t loco_bands,
                    uint32_t out_h, uint32_t out_w, uint32_t out_c,
                    void **out, const int64_t **labels_dev,
                    uint64_t *out_len) {
  (void)st, (void)i, (void)t, (void)params, (void)labels, (void)n;
  (void)loco, (void)loco_bands;
  (void)n_filtered, (void)used, (void)segs, (void)nsegs, (void)out_h;
  (void)out_w, (void)out_c, (void)out, (void)labels_dev, (void)out_len;
  return GF_ENODEVICE;
}
int64_t gf_stage_loco_error(gf_stage *st, uint32_t i) {
  (void)st, (void)i;
  return 0;
}
int gf_stage_pin(gf_stage *st, uint32_t i) {
  (void)st, (void)i;
  return GF_ENODEVICE;
}
int gf_gpu_pin(int32_t device, void *addr, size_t len, uint64_t *dev) {
  (void)device, (void)addr, (void)len;
  *dev = 0;
  return gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gpufeed was built without CUDA");
}
void gf_gpu_unpin(int32_t device, void *addr) { (void)device, (void)addr; }
int gf_stage_handoff(gf_stage *st, uint32_t i, void *stream) {
  (void)st, (void)i, (void)stream;
  return GF_ENODEVICE;
}
int gf_stage_release(gf_stage *st, uint32_t i, void *const *streams,
                     uint32_t n) {
  (void)st, (void)i, (void)streams, (void)n;
  return GF_ENODEVICE;
}
int gf_stage_timing_enable(gf_stage *st) {
  (void)st;
  return 0;
}
int gf_stage_timing_take(gf_stage *st, uint32_t i, bool wait,
                         uint64_t *start_ns, uint64_t *dur_ns) {
  (void)st, (void)i, (void)wait;
  *start_ns = *dur_ns = 0;
  return 0;
}
void gf_gpu_range_push(const char *name) { (void)name; }
void gf_gpu_range_pop(void) {}
uint64_t gf_gpu_range_start(const char *name) {
  (void)name;
  return 0;
}
void gf_gpu_range_end(uint64_t id) { (void)id; }
int gf_stage_jpeg_open(gf_stage *st, const gf_nvjpeg_config *cfg,
                       uint32_t count, char *why, size_t cap) {
  (void)st, (void)cfg, (void)count;
  int rc = gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG is not available, JPEG is decoded on the CPU: "
                   "this gpufeed was built without CUDA");
  if (why && cap)
    gf_strlcpy(why, gf_last_error()->message, cap);
  return rc;
}
int gf_stage_jpeg_probe(gf_stage *st, const uint8_t *data, size_t len,
                        gf_nvjpeg_info *info) {
  (void)st, (void)data, (void)len, (void)info;
  return GF_ENODEVICE;
}
const char *gf_stage_jpeg_backend(const gf_stage *st) {
  (void)st;
  return NULL;
}
int gf_stage_jpeg_decode(gf_stage *st, uint32_t i, gf_nvjpeg_image *imgs,
                         const uint64_t *dst_off, uint64_t cap,
                         uint32_t n, gf_nvjpeg_result *res) {
  (void)st, (void)i, (void)imgs, (void)dst_off, (void)cap, (void)n;
  (void)res;
  return GF_ENODEVICE;
}
int gf_stage_copied_wait(gf_stage *st, uint32_t i) {
  (void)st, (void)i;
  return 0;
}
int gf_stage_copy_done(gf_stage *st, uint32_t i) {
  (void)st, (void)i;
  return 1;
}
bool gf_stage_jpeg_stats(gf_stage *st, gf_nvjpeg_stats *out) {
  (void)st;
  memset(out, 0, sizeof *out);
  return false;
}
gf_device_pool *gf_stage_pool(gf_stage *st) {
  (void)st;
  return NULL;
}
#endif
