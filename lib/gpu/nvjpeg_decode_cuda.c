/* JPEG decoding with nvJPEG (see gpu/nvjpeg.h): probing a file, decoding
 * batches of images into the loader's device input, the stats. Opening a
 * decoder is in nvjpeg_cuda.c. */
#include "gpu/nvjpeg_impl.h"

#include "common/fault.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- probe --------------------------------------------------------------- */

static const char *encoding_name(int enc) {
  switch (enc) {
  case GF_NVJ_ENCODING_BASELINE_DCT:
    return "baseline";
  case GF_NVJ_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN:
    return "extended sequential";
  case GF_NVJ_ENCODING_PROGRESSIVE_DCT_HUFFMAN:
    return "progressive";
  default:
    return "an encoding nvJPEG does not decode (arithmetic, lossless...)";
  }
}

/* Parses data's headers into h->js and fills *info. Returns 0 or
 * GF_EDECODE (recorded with gf_fail). */
static int inspect(gf_nvjpeg *h, const uint8_t *data, size_t len,
                   gf_nvjpeg_info *info) {
  memset(info, 0, sizeof *info);
  if (!data || len == 0)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "an empty JPEG (0 bytes)");
  gf_nvj_status s = h->f.JpegStreamParseHeader(h->handle, data, len, h->js);
  if (s == GF_NVJ_STATUS_JPEG_NOT_SUPPORTED) {
    snprintf(info->why, sizeof info->why,
             "nvJPEG cannot parse this kind of JPEG (%s): the CPU decoder's",
             gf_nvj__status_name(s));
    return 0;
  }
  if (s != GF_NVJ_STATUS_SUCCESS)
    return gf_fail(
        GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
        "corrupt JPEG headers (%zu bytes): %s%s", len, gf_nvj__status_name(s),
        s == GF_NVJ_STATUS_INCOMPLETE_BITSTREAM ? " (the file is cut short)"
                                                : "");
  unsigned w = 0, ht = 0, c = 0, prec = 8;
  int enc = 0;
  if (h->f.JpegStreamGetFrameDimensions(h->js, &w, &ht) !=
          GF_NVJ_STATUS_SUCCESS ||
      h->f.JpegStreamGetComponentsNum(h->js, &c) != GF_NVJ_STATUS_SUCCESS ||
      h->f.JpegStreamGetJpegEncoding(h->js, &enc) != GF_NVJ_STATUS_SUCCESS)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG parsed the headers but cannot say the frame's "
                   "size, components or encoding");
  if (h->f.JpegStreamGetSamplePrecision &&
      h->f.JpegStreamGetSamplePrecision(h->js, &prec) != GF_NVJ_STATUS_SUCCESS)
    prec = 8;
  info->width = w;
  info->height = ht;
  info->components = c;
  if (w == 0 || ht == 0)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "corrupt JPEG headers: a frame of %u x %u pixels", w, ht);
  if (c != 1 && c != 3) {
    snprintf(info->why, sizeof info->why,
             "%u components (CMYK or another colour model): the CPU "
             "decoder's",
             c);
    return 0;
  }
  if (prec != 8) {
    snprintf(info->why, sizeof info->why,
             "%u-bit samples: the CPU decoder's", prec);
    return 0;
  }
  if (enc != GF_NVJ_ENCODING_BASELINE_DCT &&
      enc != GF_NVJ_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN &&
      enc != GF_NVJ_ENCODING_PROGRESSIVE_DCT_HUFFMAN) {
    snprintf(info->why, sizeof info->why, "%s (SOF 0x%02x): the CPU decoder's",
             encoding_name(enc), enc);
    return 0;
  }
  if (h->backend == GF_NVJPEG_HARDWARE) {
    int sup = -1;
    s = h->f.DecodeBatchedSupported(h->handle, h->js, &sup);
    if (s != GF_NVJ_STATUS_SUCCESS) {
      snprintf(info->why, sizeof info->why,
               "nvjpegDecodeBatchedSupported failed (%s): the CPU decoder's",
               gf_nvj__status_name(s));
      return 0;
    }
    if (sup != 0) {
      snprintf(info->why, sizeof info->why,
               "the JPEG engines do not take it (%s, %u component%s): the "
               "CPU decoder's",
               encoding_name(enc), c, c == 1 ? "" : "s");
      return 0;
    }
  }
  info->supported = 1;
  return 0;
}

int gf_nvjpeg_probe(gf_nvjpeg *h, const uint8_t *data, size_t len,
                    gf_nvjpeg_info *info) {
  if (!h || !info)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_nvjpeg_probe needs a handle and an info struct");
  return inspect(h, data, len, info);
}

/* ---- decode -------------------------------------------------------------- */

/* "sample 12 (a/b.jpg)", "sample 12", "a/b.jpg" or "image 3 of the call". */
static void subject(const gf_nvjpeg_image *im, uint32_t i, char *buf,
                    size_t cap) {
  if (im->sample != GF_NO_INDEX && im->name)
    snprintf(buf, cap, "sample %llu (%s)", (unsigned long long)im->sample,
             im->name);
  else if (im->sample != GF_NO_INDEX)
    snprintf(buf, cap, "sample %llu", (unsigned long long)im->sample);
  else if (im->name)
    snprintf(buf, cap, "%s", im->name);
  else
    snprintf(buf, cap, "image %u of the call", i);
}

static void set_status(gf_nvjpeg_image *im, uint32_t i, int status,
                       const char *fmt, ...) GF_PRINTF(4, 5);
static void set_status(gf_nvjpeg_image *im, uint32_t i, int status,
                       const char *fmt, ...) {
  char who[64], what[192];
  subject(im, i, who, sizeof who);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  im->status = status;
  snprintf(im->why, sizeof im->why, "%.62s: %.191s", who, what);
}

/* An image that passed its checks and waits for its batch. */
#define PENDING 1

static void fill(nvj_state *s, uint32_t k, const gf_nvjpeg_image *im) {
  memset(&s->dst[k], 0, sizeof s->dst[k]);
  s->dst[k].channel[0] = (unsigned char *)im->dst;
  s->dst[k].pitch[0] = (size_t)im->width * im->channels;
  s->data[k] = im->data;
  s->lens[k] = im->len;
}

/* Queues state s's decode of its n images and records its event. */
static gf_nvj_status run_state(gf_nvjpeg *h, nvj_state *s, bool inject) {
  int f = inject ? gf_fault_check(GF_FAULT_NVJPEG_BATCH) : 0;
  gf_nvj_status r = f ? GF_NVJ_STATUS_EXECUTION_FAILED
                      : h->f.DecodeBatched(h->handle, s->st, s->data, s->lens,
                                           s->dst, h->stream);
  if (r != GF_NVJ_STATUS_SUCCESS)
    s->n = 0; /* initialize again after a failure, as nvJPEG asks */
  /* Whatever was queued, the state waits for it before its next use. */
  s->pending = cudaEventRecord(s->done, h->stream) == cudaSuccess;
  if (!s->pending && r == GF_NVJ_STATUS_SUCCESS)
    r = GF_NVJ_STATUS_EXECUTION_FAILED;
  return r;
}

/* Decodes image i alone (state `one`). Returns 0 (its status says how it
 * went) or GF_EDEVOOM / GF_ECUDA for the call. */
static int decode_alone(gf_nvjpeg *h, gf_nvjpeg_image *imgs, uint32_t i,
                        int format) {
  gf_nvjpeg_image *im = &imgs[i];
  h->alloc_failed = false;
  gf_nvj_status s = gf_nvj__state_take(h, &h->one, 1, format);
  if (s == GF_NVJ_STATUS_SUCCESS) {
    fill(&h->one, 0, im);
    s = run_state(h, &h->one, false);
  }
  if (s == GF_NVJ_STATUS_SUCCESS) {
    im->status = 0;
    return 0;
  }
  if (s == GF_NVJ_STATUS_ALLOCATOR_FAILURE || h->alloc_failed) {
    int rc = gf_nvj__fail(h, s, "decoding one image");
    set_status(im, i, rc, "not decoded: %s", gf_last_error()->message);
    return rc;
  }
  set_status(im, i, GF_EDECODE, "nvJPEG (%s backend) cannot decode it: %s",
             gf_nvjpeg_backend_name(h), gf_nvj__status_name(s));
  return 0;
}

/* Decodes the m images imgs[h->idx[0..m)] in `format`: one batched call,
 * or one call each when it fails as a whole. */
static int decode_group(gf_nvjpeg *h, gf_nvjpeg_image *imgs, uint32_t m,
                        int format, int which, gf_nvjpeg_result *res) {
  if (m == 1)
    return decode_alone(h, imgs, h->idx[0], format);
  nvj_state *st = &h->batch[which][h->next[which]];
  h->next[which] = (h->next[which] + 1) % RING;
  h->alloc_failed = false;
  gf_nvj_status s = gf_nvj__state_take(h, st, (int)m, format);
  if (s == GF_NVJ_STATUS_SUCCESS) {
    for (uint32_t k = 0; k < m; k++)
      fill(st, k, &imgs[h->idx[k]]);
    res->batch_calls++;
    h->st.batch_calls++;
    s = run_state(h, st, true);
  }
  if (s == GF_NVJ_STATUS_SUCCESS) {
    for (uint32_t k = 0; k < m; k++)
      imgs[h->idx[k]].status = 0;
    return 0;
  }
  if (s == GF_NVJ_STATUS_ALLOCATOR_FAILURE || h->alloc_failed) {
    int rc = gf_nvj__fail(h, s, "decoding a batch");
    for (uint32_t k = 0; k < m; k++)
      set_status(&imgs[h->idx[k]], h->idx[k], rc, "not decoded: %s",
                 gf_last_error()->message);
    return rc;
  }
  res->fallbacks++;
  h->st.fallbacks++;
  gf_log(GF_LOG_WARN,
         "nvJPEG decoder: a batch of %u images failed as a whole (%s, %s "
         "backend): decoding them again one at a time on the GPU",
         m, gf_nvj__status_name(s), gf_nvjpeg_backend_name(h));
  memcpy(h->ids, h->idx, m * sizeof *h->ids);
  int rc = 0;
  for (uint32_t k = 0; k < m && rc == 0; k++)
    rc = decode_alone(h, imgs, h->ids[k], format);
  return rc;
}

int gf_nvjpeg_decode(gf_nvjpeg *h, gf_nvjpeg_image *imgs, uint32_t n,
                     gf_nvjpeg_result *res) {
  gf_nvjpeg_result local;
  if (!res)
    res = &local;
  memset(res, 0, sizeof *res);
  if (!h || !imgs || n == 0 || n > h->cfg.max_batch)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_nvjpeg_decode: %s",
                   !h || !imgs ? "a handle and images are needed"
                               : "the count must be 1 to max_batch");
  for (uint32_t i = 0; i < n; i++)
    if ((imgs[i].channels != 1 && imgs[i].channels != 3) ||
        imgs[i].reserved0 || !imgs[i].dst)
      return gf_fail(-EINVAL, NULL, imgs[i].sample, GF_NO_INDEX,
                     "gf_nvjpeg_decode: image %u: %s", i,
                     imgs[i].reserved0 ? "reserved0 must be zero"
                     : !imgs[i].dst    ? "dst is NULL"
                                       : "channels must be 1 or 3");
  cudaError_t e = cudaSetDevice(h->cfg.device);
  if (e != cudaSuccess)
    return gf_nvj__cuda_fail(e, "cudaSetDevice");
  /* The headers first: what is corrupt, unsupported or too large for its
   * buffer never reaches a batch. */
  for (uint32_t i = 0; i < n; i++) {
    gf_nvjpeg_image *im = &imgs[i];
    gf_nvjpeg_info info;
    im->status = 0;
    im->why[0] = '\0';
    int rc = inspect(h, im->data, im->len, &info);
    im->width = info.width;
    im->height = info.height;
    if (rc < 0) {
      set_status(im, i, rc, "%s", gf_last_error()->message);
      continue;
    }
    if (!info.supported) {
      set_status(im, i, GF_EUNSUPPORTED, "%s", info.why);
      continue;
    }
    if (gf_fault_check(GF_FAULT_NVJPEG_IMAGE)) {
      set_status(im, i, GF_EUNSUPPORTED, "refused (injected fault)");
      continue;
    }
    uint64_t need = (uint64_t)info.width * info.height * im->channels;
    if (need > im->dst_cap)
      set_status(im, i, GF_ESHAPE,
                 "%u x %u x %u needs %llu bytes, its buffer has %llu",
                 info.height, info.width, im->channels,
                 (unsigned long long)need, (unsigned long long)im->dst_cap);
    else
      im->status = PENDING;
  }
  static const int formats[2] = {GF_NVJ_OUTPUT_RGBI, GF_NVJ_OUTPUT_Y};
  static const uint32_t chans[2] = {3, 1};
  int rc = 0;
  for (int w = 0; w < 2 && rc == 0; w++) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
      if (imgs[i].status == PENDING && imgs[i].channels == chans[w])
        h->idx[m++] = i;
    if (m)
      rc = decode_group(h, imgs, m, formats[w], w, res);
  }
  /* After a failed call, the images it did not reach carry its error. */
  for (uint32_t i = 0; i < n; i++)
    if (imgs[i].status == PENDING)
      set_status(&imgs[i], i, rc < 0 ? rc : GF_EINTERNAL, "not decoded: %s",
                 rc < 0 ? gf_last_error()->message : "no batch took it");
  for (uint32_t i = 0; i < n; i++) {
    if (imgs[i].status == 0)
      res->decoded++;
    else if (imgs[i].status == GF_EUNSUPPORTED)
      res->unsupported++;
    else
      res->failed++;
  }
  h->st.images += res->decoded;
  h->st.unsupported += res->unsupported;
  h->st.failed += res->failed;
  return rc;
}

void gf_nvjpeg_stats_get(gf_nvjpeg *h, gf_nvjpeg_stats *st) {
  gf_device_pool_stats ds;
  memset(&ds, 0, sizeof ds);
  ds.struct_size = sizeof ds;
  (void)gf_device_pool_stats_get(h->dpool, &ds);
  gf_pool_stats ps;
  pthread_mutex_lock(&h->mu);
  gf_pool_get_stats(h->ppool, &ps);
  h->st.device_in_use = ds.in_use;
  h->st.device_peak = ds.peak_in_use;
  h->st.device_allocs = h->dev_allocs;
  h->st.device_frees = h->dev_frees;
  h->st.device_alloc_failures = h->dev_failures;
  h->st.pinned_in_use = ps.in_use;
  h->st.pinned_peak = ps.peak_in_use;
  h->st.pinned_allocs = h->pin_allocs;
  h->st.pinned_frees = h->pin_frees;
  h->st.pinned_alloc_failures = h->pin_failures;
  h->st.null_stream_frees = h->null_frees;
  *st = h->st;
  pthread_mutex_unlock(&h->mu);
}
