/* The GPU stage's JPEG decoding (see stage.h): the stage's nvJPEG decoder
 * on its copy stream, decoding into the slots' device input blocks. */
#include "gpu/stage.h"
#include "gpu/stage_impl.h"

#include <cuda_runtime.h>
#include <string.h>

int gf_stage_jpeg_open(gf_stage *st, const gf_nvjpeg_config *cfg, char *why,
                       size_t cap) {
  if (st->jpeg)
    return 0;
  gf_nvjpeg_config c = *cfg;
  c.device = st->cfg.device;
  c.stream = st->copy;
  int rc = gf_nvjpeg_open(&c, &st->jpeg, why, cap);
  if (rc == 0)
    gf_nvjpeg_stats_get(st->jpeg, &st->jpeg_snap);
  return rc;
}

int gf_stage_jpeg_probe(gf_stage *st, const uint8_t *data, size_t len,
                        gf_nvjpeg_info *info) {
  if (!st->jpeg)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU JPEG probe: no decoder is open");
  pthread_mutex_lock(&st->jpeg_mu);
  int rc = gf_nvjpeg_probe(st->jpeg, data, len, info);
  pthread_mutex_unlock(&st->jpeg_mu);
  return rc;
}

const char *gf_stage_jpeg_backend(const gf_stage *st) {
  return st->jpeg ? gf_nvjpeg_backend_name(st->jpeg) : NULL;
}

int gf_stage_jpeg_decode(gf_stage *st, uint32_t i, gf_nvjpeg_image *imgs,
                         const uint64_t *dst_off, uint64_t cap,
                         uint32_t n, gf_nvjpeg_result *res) {
  stage_slot *s = &st->slots[i];
  if (!st->jpeg || !s->registered)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU JPEG decode for slot %u: %s", i,
                   !st->jpeg ? "no decoder is open" : "the slot is not pinned");
  uint64_t in = st->cfg.in_bytes;
  for (uint32_t k = 0; k < n; k++) {
    if (dst_off[k] > in || cap > in - dst_off[k])
      return gf_fail(GF_EINTERNAL, NULL, imgs[k].sample, GF_NO_INDEX,
                     "GPU JPEG decode: image %u's place (%llu bytes at "
                     "%llu) is outside the batch input of %llu bytes",
                     k, (unsigned long long)cap,
                     (unsigned long long)dst_off[k], (unsigned long long)in);
    imgs[k].dst = (uint8_t *)s->d_in + dst_off[k];
    imgs[k].dst_cap = cap;
  }
  pthread_mutex_lock(&st->jpeg_mu);
  cudaError_t e = cudaSetDevice(st->cfg.device);
  int rc = 0;
  /* The device input may still be read for the slot's previous batch by
   * the caller's streams: the decode writes it after they are done. */
  for (uint32_t k = 0; e == cudaSuccess && k < s->release_pending; k++)
    e = cudaStreamWaitEvent(st->copy, s->released[k], 0);
  if (e != cudaSuccess) {
    rc = cuda_fail(e, "cudaStreamWaitEvent (release, before a JPEG decode)");
  } else {
    rc = gf_nvjpeg_decode(st->jpeg, imgs, n, res);
    gf_error_info saved = *gf_last_error();
    /* Whatever was queued reads the staging memory until this point. */
    if ((e = cudaEventRecord(s->copied, st->copy)) == cudaSuccess)
      s->submitted = true;
    else if (rc == 0)
      rc = cuda_fail(e, "cudaEventRecord (after a JPEG decode)");
    if (rc < 0 && saved.code == rc)
      gf_error_restore(&saved);
  }
  gf_nvjpeg_stats snap;
  gf_nvjpeg_stats_get(st->jpeg, &snap);
  pthread_mutex_unlock(&st->jpeg_mu);
  pthread_mutex_lock(&st->snap_mu);
  st->jpeg_snap = snap;
  pthread_mutex_unlock(&st->snap_mu);
  return rc;
}

int gf_stage_copied_wait(gf_stage *st, uint32_t i) {
  stage_slot *s = &st->slots[i];
  if (!s->submitted)
    return 0;
  cudaError_t e = cudaSetDevice(st->cfg.device);
  if (e == cudaSuccess)
    e = cudaEventSynchronize(s->copied);
  return e == cudaSuccess ? 0 : cuda_fail(e, "waiting for the staging copy");
}

bool gf_stage_jpeg_stats(gf_stage *st, gf_nvjpeg_stats *out) {
  memset(out, 0, sizeof *out);
  if (!st->jpeg)
    return false;
  pthread_mutex_lock(&st->snap_mu);
  *out = st->jpeg_snap;
  pthread_mutex_unlock(&st->snap_mu);
  return true;
}

