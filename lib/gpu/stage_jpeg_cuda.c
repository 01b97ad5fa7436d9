/* The GPU stage's JPEG decoding (see stage.h): the stage's nvJPEG
 * decoders, each on a stream of its own, decoding into the slots' device
 * input blocks, several calls at once from the workers that finalise
 * slots. */
#include "gpu/stage.h"
#include "gpu/stage_impl.h"

#include <cuda_runtime.h>
#include <string.h>

/* One decoder to open: its config, and what came of it. */
typedef struct opening {
  gf_stage *st;
  gf_nvjpeg_config cfg;
  gf_nvjpeg *h;
  cudaStream_t q;
  int rc;
  char why[256];
  pthread_t thread;
  bool started;
} opening;

/* Opens one decoder on a stream of its own. Making nvJPEG's hardware
 * decoder takes about half a second, most of it waiting for the device:
 * the decoders open on threads of their own, at once. */
static void *open_one(void *arg) {
  opening *o = arg;
  o->why[0] = '\0';
  cudaError_t e = cudaSetDevice(o->st->cfg.device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&o->q, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    o->q = NULL;
    o->rc = cuda_fail(e, "creating a JPEG decoder's stream");
    gf_strlcpy(o->why, gf_last_error()->message, sizeof o->why);
    return NULL;
  }
  o->cfg.device = o->st->cfg.device;
  o->cfg.stream = o->q;
  o->rc = gf_nvjpeg_open(&o->cfg, &o->h, o->why, sizeof o->why);
  if (o->rc != 0) {
    cudaStreamDestroy(o->q);
    o->q = NULL;
  }
  return NULL;
}

int gf_stage_jpeg_open(gf_stage *st, const gf_nvjpeg_config *cfg,
                       uint32_t count, char *why, size_t cap) {
  if (st->jpeg_n)
    return 0;
  int rc = 0;
  if (count == 0 || count > GF_STAGE_DECODERS_MAX)
    rc = gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "GPU JPEG decoders: %u asked for, 1 to %u are possible", count,
                 GF_STAGE_DECODERS_MAX);
  while (rc == 0 && st->jpeg_mu_n < count) {
    if (pthread_mutex_init(&st->jpeg_mu[st->jpeg_mu_n], NULL) != 0)
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU JPEG decoders: pthread_mutex_init failed");
    else
      st->jpeg_mu_n++;
  }
  if (rc != 0) {
    if (why && cap)
      gf_strlcpy(why, gf_last_error()->message, cap);
    return rc;
  }
  opening op[GF_STAGE_DECODERS_MAX];
  memset(op, 0, sizeof op);
  for (uint32_t k = 0; k < count; k++) {
    op[k].st = st;
    op[k].cfg = *cfg;
  }
  /* The others on threads of their own, the first on this one (a thread
   * that cannot start opens its decoder here, after). */
  for (uint32_t k = 1; k < count; k++)
    op[k].started = pthread_create(&op[k].thread, NULL, open_one, &op[k]) == 0;
  open_one(&op[0]);
  for (uint32_t k = 1; k < count; k++) {
    if (op[k].started)
      pthread_join(op[k].thread, NULL);
    else
      open_one(&op[k]);
  }
  for (uint32_t k = 0; k < count; k++) {
    if (op[k].rc != 0 && rc == 0) {
      rc = op[k].rc;
      if (why && cap)
        gf_strlcpy(why, op[k].why, cap);
      (void)gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s", op[k].why);
    }
    if (op[k].h) {
      st->jpeg[st->jpeg_n] = op[k].h;
      st->jstream[st->jpeg_n] = op[k].q;
      gf_nvjpeg_stats_get(op[k].h, &st->jpeg_snap[st->jpeg_n]);
      st->jpeg_n++;
    }
  }
  if (rc != 0) {
    gf_error_info saved = *gf_last_error();
    gf_stage__jpeg_close(st);
    gf_error_restore(&saved);
  }
  return rc;
}

/* Takes a decoder: a free one, else waits for the one the search began
 * at. Returns its index, its mutex held. */
static uint32_t take(gf_stage *st) {
  uint32_t n = st->jpeg_n;
  uint32_t first = atomic_fetch_add(&st->jpeg_next, 1) % n;
  for (uint32_t j = 0; j < n; j++) {
    uint32_t k = (first + j) % n;
    if (pthread_mutex_trylock(&st->jpeg_mu[k]) == 0)
      return k;
  }
  pthread_mutex_lock(&st->jpeg_mu[first]);
  return first;
}

int gf_stage_jpeg_probe(gf_stage *st, const uint8_t *data, size_t len,
                        gf_nvjpeg_info *info) {
  if (!st->jpeg_n)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU JPEG probe: no decoder is open");
  uint32_t k = take(st);
  int rc = gf_nvjpeg_probe(st->jpeg[k], data, len, info);
  pthread_mutex_unlock(&st->jpeg_mu[k]);
  return rc;
}

const char *gf_stage_jpeg_backend(const gf_stage *st) {
  return st->jpeg_n ? gf_nvjpeg_backend_name(st->jpeg[0]) : NULL;
}

int gf_stage_jpeg_decode(gf_stage *st, uint32_t i, gf_nvjpeg_image *imgs,
                         const uint64_t *dst_off, uint64_t cap,
                         uint32_t n, gf_nvjpeg_result *res) {
  stage_slot *s = &st->slots[i];
  if (!st->jpeg_n || !s->registered)
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "GPU JPEG decode for slot %u: %s", i,
                   !st->jpeg_n ? "no decoder is open"
                               : "the slot is not pinned");
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
  uint32_t d = take(st);
  cudaStream_t q = st->jstream[d];
  cudaError_t e = cudaSetDevice(st->cfg.device);
  int rc = 0;
  /* The device input may still be read for the slot's previous batch: by
   * the caller's streams (its release events), and by that batch's
   * transform on the copy stream (`ready`, recorded after it). */
  for (uint32_t k = 0; e == cudaSuccess && k < s->release_pending; k++)
    e = cudaStreamWaitEvent(q, s->released[k], 0);
  if (e == cudaSuccess && s->submitted)
    e = cudaStreamWaitEvent(q, s->ready, 0);
  if (e != cudaSuccess) {
    rc = cuda_fail(e, "cudaStreamWaitEvent (before a JPEG decode)");
  } else {
    rc = gf_nvjpeg_decode(st->jpeg[d], imgs, n, res);
    gf_error_info saved = *gf_last_error();
    /* Whatever was queued reads the staging memory until this point; the
     * slot's submit, on the copy stream, comes after the decode. */
    if ((e = cudaEventRecord(s->copied, q)) == cudaSuccess) {
      s->submitted = true;
      e = cudaStreamWaitEvent(st->copy, s->copied, 0);
    }
    if (e != cudaSuccess && rc == 0)
      rc = cuda_fail(e, "cudaEventRecord (after a JPEG decode)");
    if (rc < 0 && saved.code == rc)
      gf_error_restore(&saved);
  }
  gf_nvjpeg_stats snap;
  gf_nvjpeg_stats_get(st->jpeg[d], &snap);
  pthread_mutex_unlock(&st->jpeg_mu[d]);
  pthread_mutex_lock(&st->snap_mu);
  st->jpeg_snap[d] = snap;
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
  if (!st->jpeg_n)
    return false;
  pthread_mutex_lock(&st->snap_mu);
  *out = st->jpeg_snap[0];
  for (uint32_t k = 1; k < st->jpeg_n; k++) {
    const gf_nvjpeg_stats *a = &st->jpeg_snap[k];
    out->device_budget += a->device_budget;
    out->device_in_use += a->device_in_use;
    out->device_peak += a->device_peak;
    out->device_allocs += a->device_allocs;
    out->device_frees += a->device_frees;
    out->device_alloc_failures += a->device_alloc_failures;
    out->pinned_budget += a->pinned_budget;
    out->pinned_in_use += a->pinned_in_use;
    out->pinned_peak += a->pinned_peak;
    out->pinned_allocs += a->pinned_allocs;
    out->pinned_frees += a->pinned_frees;
    out->pinned_alloc_failures += a->pinned_alloc_failures;
    out->null_stream_frees += a->null_stream_frees;
    out->images += a->images;
    out->unsupported += a->unsupported;
    out->failed += a->failed;
    out->batch_calls += a->batch_calls;
    out->fallbacks += a->fallbacks;
    out->reinits += a->reinits;
  }
  pthread_mutex_unlock(&st->snap_mu);
  return true;
}
