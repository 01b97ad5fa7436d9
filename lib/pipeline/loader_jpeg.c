/* The loader's JPEG window decode: a JPEG sample under a transform with a
 * fixed output size is decoded as only the rectangle its window needs,
 * at the smallest DCT scale that keeps the window at least the size it is
 * resampled to (gf_jpeg_scale in gpufeed.h; the arithmetic in transform.h,
 * "Decoded regions"), and the statistics of every JPEG decode. And JPEG
 * on the GPU (gf_gpu_decode; docs/NVJPEG.md): the plan and the decoder's
 * opening, the worker's choice of the samples nvJPEG takes, and their
 * decode when their slot is finalised.
 *
 * The window is a pure function of (seed, epoch, index) and the image's
 * full size, which comes from the file's own frame header (a dataset's
 * record must agree with it), so it is known before any pixel is decoded;
 * finalize later expresses it in the decoded region's coordinates from the
 * gf_xform_region recorded here. */
#include "pipeline/loader_impl.h"
#include "pipeline/source_shapes.h"

#include <stdio.h>
#include <stdlib.h>

bool gf_loader__jpeg_windows(const gf_loader_config *c) {
  /* A fixed output size: the transform cuts a window. With the DCT scaling
   * off and a cache, whole images are decoded and cached instead (the
   * output is the same bytes either way: gpufeed.h, gf_jpeg_scale). */
  return c->transform.height != 0 &&
         !(c->jpeg_scale == GF_JPEG_SCALE_OFF && c->cache_bytes != 0);
}

void gf_loader__jpeg_count(gf_loader *l, uint32_t denom,
                           const gf_shape *decoded, uint32_t full_h,
                           uint32_t full_w) {
  uint32_t k = denom == 8 ? 3 : denom == 4 ? 2 : denom == 2 ? 1 : 0;
  add(&l->jpeg_decoded[k], 1);
  add(&l->jpeg_px_decoded, (uint64_t)decoded->height * decoded->width);
  add(&l->jpeg_px_full, (uint64_t)full_h * full_w);
}

/* The image's full size from its frame header, checked against a
 * dataset's record. Returns 0, 1 (the header is not one sized here: the
 * caller decodes the whole file, which gives libjpeg's own verdict) or
 * GF_ESHAPE (the record disagrees). */
static int full_size(const gf_loader *l, const gf_src_sample *smp,
                     const uint8_t *buf, uint64_t len, uint32_t *h,
                     uint32_t *w) {
  uint64_t pos = 2;
  gf_jpeg_frame f;
  gf_shape out, native;
  if (len < 4 || buf[0] != 0xFF || buf[1] != 0xD8 ||
      gf_jpeg_header_scan(buf, (size_t)len, 0, &pos, &f) != 0 ||
      gf_jpeg_frame_shape(&f, &l->dopts, &out, &native) != 0)
    return 1;
  if (smp->stored.height &&
      (smp->stored.height != f.height || smp->stored.width != f.width))
    return gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "JPEG is %ux%u, its record says %ux%u", f.width, f.height,
                   smp->stored.width, smp->stored.height);
  *h = f.height;
  *w = f.width;
  return 0;
}

int gf_loader__jpeg_decode_window(gf_loader *l, const gf_src_sample *smp,
                                  uint64_t epoch, const uint8_t *buf,
                                  uint64_t len, bool to_end, uint8_t *dst,
                                  gf_shape *shape, gf_xform_region *region) {
  region->denom = 0;
  uint32_t H = 0, W = 0;
  int rc = full_size(l, smp, buf, len, &H, &W);
  if (rc != 0)
    return rc; /* 1: decode it whole */
  const gf_transform *t = &l->cfg.transform;
  uint32_t y, x, rh, rw, want_h, want_w;
  gf_xform_region_rect(t, epoch, smp->index, H, W, &y, &x, &rh, &rw, &want_h,
                       &want_w);
  uint32_t d = 1;
  if (t->resize != GF_RESIZE_NONE && l->cfg.jpeg_scale == GF_JPEG_SCALE_AUTO)
    d = gf_jpeg_pick_denom(rh, rw, want_h, want_w);
  gf_jpeg_region r = {
      .y = y, .x = x, .h = rh, .w = rw, .denom = d, .to_end = to_end};
  uint32_t y0, x0;
  rc = gf_jpeg_decode_region(buf, (size_t)len, &l->dopts, &r, dst,
                             (size_t)l->stride, shape, &y0, &x0);
  if (rc < 0)
    return rc;
  *region = (gf_xform_region){
      .full_h = H, .full_w = W, .denom = d, .y0 = y0, .x0 = x0};
  gf_loader__jpeg_count(l, d, shape, H, W);
  return 0;
}

/* ---- JPEG on the GPU ----------------------------------------------------- */

/* Batches a measurement of the consumer's rate averages (jpeg_share.h):
 * about half a second of a ResNet-18 step at batch 256. */
#define SHARE_WINDOW 32u

void gf_loader__jpeg_share_batch(gf_loader *l) {
  bool changed = false;
  uint32_t before = l->gpu_share.pct;
  gf_share_clock c = {
      .now_ns = now_ns(),
      .cpu_ns = gf_proc_cpu_ns(),
      .decode_ns =
          atomic_load_explicit(&l->st_decode.busy_ns, memory_order_relaxed),
      .decoded =
          atomic_load_explicit(&l->st_decode.samples, memory_order_relaxed),
  };
  uint32_t p = gf_jpeg_share_batch(&l->gpu_share, &c, &changed);
  if (!changed)
    return;
  atomic_store_explicit(&l->gpu_jpeg_pct, p, memory_order_relaxed);
  gf_log(GF_LOG_INFO,
         "JPEG on the GPU: %u%% of a batch's positions to the engines "
         "(was %u%%: %s)",
         p, before,
         l->gpu_share.probing ? "trying it against the consumer's rate"
         : before == GF_SHARE_WARM && !l->gpu_share.changes
             ? "the workers' decode rate measured"
             : "back, as the consumer did not gain by it");
}

/* gpu_decode auto's reservations, device and pinned (see jpeg_gpu_plan). */
#define JPEG_ENGINES_BUDGET (16ull << 20)

void gf_loader__jpeg_gpu_plan(const gf_loader_config *c, bool gpu,
                              uint64_t count, gf_loader_sizes *z) {
  z->jpeg_gpu_mode = 0;
  z->jpeg_gpu_decoders = 0;
  z->jpeg_checked = 0;
  z->jpeg_gpu_device_bytes = z->jpeg_gpu_pinned_bytes = 0;
  z->jpeg_engine_bytes = 0;
  const char *why = NULL;
  if (!gpu)
    why = "host mode: JPEG is decoded on the CPU";
  else if (c->gpu_decode == GF_GPU_DECODE_OFF)
    why = "gpu_decode off: JPEG is decoded on the CPU";
  else if (!z->jpeg_samples)
    why = "the source has no JPEG samples";
  else if (c->gpu_decode == GF_GPU_DECODE_AUTO && z->unchecked &&
           (!count || count > GF_JPEG_CHECKED_MAX))
    /* Within jpeg_gpu_why's 255 bytes. The engines do not see damage
     * inside the image data (a file cut short and closed with an end
     * marker decodes as garbage); libjpeg does, and a file checked once
     * is known by its CRC32C after (jpeg_checked.h): for 2^24 files at
     * most, known ahead. */
    why = "gpu_decode auto: JPEG files without a checksum in a stream or "
          "beyond 16,777,216 files decode on the CPU, as the engines miss "
          "damage inside image data (`gpufeed index --verify` vouches for "
          "shards; gpu_decode all sends all files)";
  else if (z->identity)
    why = "the transform changes nothing, so a batch is its decoded pixels "
          "on the host: JPEG is decoded on the CPU";
  else if (c->channels == 4)
    why = "channels 4: nvJPEG gives 1 or 3 channels, JPEG is decoded on the "
          "CPU";
  if (why) {
    gf_strlcpy(z->jpeg_gpu_why, why, sizeof z->jpeg_gpu_why);
    return;
  }
  z->jpeg_gpu_why[0] = '\0';
  z->jpeg_gpu_mode = c->gpu_decode == GF_GPU_DECODE_ALL ? 2 : 1;
  if (z->jpeg_gpu_mode == 1 && z->unchecked)
    z->jpeg_checked = count;
  gf_nvjpeg_config nc;
  memset(&nc, 0, sizeof nc);
  nc.max_batch = c->batch_size;
  /* The JPEG engines take nothing through either budget (their buffers
   * are nvJPEG's own: 0 bytes of both measured with nvJPEG 13.0 on an
   * H200, batches of 8 to 256): a small reservation each covers what a
   * later nvJPEG might ask (beyond it a decode fails, and its images are
   * decoded on the CPU). Any backend: the GPU hybrid one's defaults. */
  if (z->jpeg_gpu_mode == 1)
    nc.device_budget = nc.pinned_budget = JPEG_ENGINES_BUDGET;
  uint64_t dev = 0, pin = 0;
  gf_nvjpeg_plan(&nc, &dev, &pin);
  z->jpeg_gpu_decoders =
      c->gpu_decoders ? c->gpu_decoders : GF_GPU_DECODERS_DEFAULT;
  uint32_t k = z->jpeg_gpu_decoders;
  z->jpeg_gpu_device_bytes = dev > UINT64_MAX / k ? UINT64_MAX : dev * k;
  z->jpeg_gpu_pinned_bytes = pin > UINT64_MAX / k ? UINT64_MAX : pin * k;
  /* What the engines hold beside the budgets (nvJPEG's own): planned for
   * either mode, as `all` opens the engines where there are some. */
  z->jpeg_engine_bytes = GF_NVJPEG_ENGINE_BYTES * k;
}

/* Whether the stage's decoder takes a progressive JPEG: a 48 x 40 colour
 * one of libjpeg's simple progression, 4:2:0, made here and probed. */
static bool progressive_taken(gf_loader *l) {
  enum { H = 40, W = 48 };
  uint8_t px[H * W * 3];
  for (uint32_t i = 0; i < H * W * 3; i++)
    px[i] = (uint8_t)(i * 7 + (i / (W * 3)) * 13);
  gf_shape s = {H, W, 3, GF_DTYPE_U8};
  gf_jpeg_enc_opts eo = {GF_JPEG_420, true, false, 0};
  void *jpg = NULL;
  size_t len = 0;
  gf_nvjpeg_info info;
  gf_error_info saved = *gf_last_error();
  bool ok = gf_jpeg_encode_ex(px, &s, 90, &eo, &jpg, &len) == 0 &&
            gf_stage_jpeg_probe(l->stage, jpg, len, &info) == 0 &&
            info.supported;
  gf_error_restore(&saved);
  free(jpg);
  return ok;
}

void gf_loader__jpeg_gpu_open(gf_loader *l, const gf_loader_sizes *z) {
  l->gpu_jpeg = false;
  l->jpeg_gpu_backend[0] = '\0';
  l->gpu_jpeg_pct = l->cfg.gpu_decode_percent ? l->cfg.gpu_decode_percent
                                              : 100;
  if (!z->jpeg_gpu_mode) {
    gf_strlcpy(l->jpeg_gpu_why, z->jpeg_gpu_why, sizeof l->jpeg_gpu_why);
    return;
  }
  gf_nvjpeg_config nc;
  memset(&nc, 0, sizeof nc);
  nc.backend = z->jpeg_gpu_mode == 1 ? GF_NVJPEG_HARDWARE : GF_NVJPEG_AUTO;
  nc.max_batch = l->cfg.batch_size;
  /* The JPEG engines one image at a time, none buffered ahead: beside a
   * training step this cut the host's work a batch and the training
   * thread's waits (ResNet-18 on 4 cores of an H200 at 0.95 of its
   * synthetic speed, 0.88 pipelined; bench/RESULTS.md, 2026-11-29), at
   * 12% of the engines' rate alone, which the second decoder more than
   * gives back. No effect on the GPU hybrid backend. */
  nc.flags |= GF_NVJPEG_NO_PIPELINE;
  nc.device_budget = z->jpeg_gpu_device_bytes / z->jpeg_gpu_decoders;
  nc.pinned_budget = z->jpeg_gpu_pinned_bytes / z->jpeg_gpu_decoders;
  gf_error_info saved = *gf_last_error();
  char why[256];
  uint64_t t0 = now_ns();
  int rc =
      gf_stage_jpeg_open(l->stage, &nc, z->jpeg_gpu_decoders, why, sizeof why);
  uint64_t t1 = now_ns();
  gf_error_restore(&saved); /* not create's failure */
  if (rc < 0) {
    if (z->jpeg_gpu_mode == 1 && rc == GF_EUNSUPPORTED &&
        strstr(why, "hardware backend"))
      snprintf(l->jpeg_gpu_why, sizeof l->jpeg_gpu_why,
               "gpu_decode auto uses the JPEG engines only, and this GPU has "
               "none (the GPU hybrid backend would take the SMs the "
               "training step needs; gpu_decode all asks for it): JPEG is "
               "decoded on the CPU");
    else
      gf_strlcpy(l->jpeg_gpu_why, why, sizeof l->jpeg_gpu_why);
    gf_log(GF_LOG_INFO, "JPEG on the GPU: %s", l->jpeg_gpu_why);
    return;
  }
  /* Progressive files: whether this decoder takes them, from one made
   * here. Where it does not, workers decode them (in parallel) rather
   * than sending them to be refused and decoded one by one at finalise. */
  l->gpu_progressive = progressive_taken(l);
  gf_nvjpeg_stats ns;
  gf_stage_jpeg_stats(l->stage, &ns);
  l->allocs.jpeg_gpu_device_bytes = ns.device_budget;
  l->allocs.jpeg_gpu_pinned_bytes = ns.pinned_budget;
  gf_strlcpy(l->jpeg_gpu_backend, gf_stage_jpeg_backend(l->stage),
             sizeof l->jpeg_gpu_backend);
  l->jpeg_gpu_why[0] = '\0';
  /* Files without a checksum: the table of those checked once. Without
   * it (no memory) they decode on the CPU. */
  if (z->jpeg_checked) {
    if (gf_jpeg_checked_init(&l->jpeg_checked, z->jpeg_checked) == 0)
      l->allocs.jpeg_checked_bytes = gf_jpeg_checked_bytes(z->jpeg_checked);
    else
      gf_log(GF_LOG_WARN,
             "JPEG on the GPU: %s: files without a checksum "
             "decode on the CPU",
             gf_last_error()->message);
    gf_error_restore(&saved);
  }
  l->gpu_jpeg = true;
  /* Under auto with no share asked, the share follows the consumer's
   * rate (jpeg_share.h), from 100. */
  l->share_on =
      l->cfg.gpu_decode == GF_GPU_DECODE_AUTO && !l->cfg.gpu_decode_percent;
  if (l->share_on) {
    gf_jpeg_share_init(&l->gpu_share, z->slots + 1, SHARE_WINDOW,
                       l->cfg.batch_size, gf_proc_cpus());
    l->gpu_jpeg_pct = l->gpu_share.pct;
  }
  gf_log(GF_LOG_INFO,
         "JPEG on the GPU: nvJPEG %d.%d.%d, %s backend, %u "
         "decoder%s opened in %.0f ms, %u%% of a batch's "
         "positions%s%s",
         ns.version[0], ns.version[1], ns.version[2], l->jpeg_gpu_backend,
         z->jpeg_gpu_decoders, z->jpeg_gpu_decoders == 1 ? "" : "s",
         (double)(t1 - t0) / 1e6, l->gpu_jpeg_pct,
         l->share_on ? " (moved by the consumer's rate)" : "",
         l->gpu_progressive ? "" : "; progressive JPEG stays on the CPU");
}

/* Whether a 3-component JPEG whose frame header is at file offset sof
 * stores RGB rather than YCbCr, as libjpeg tells it (an Adobe APP14
 * segment with transform 0, or components named 'R', 'G', 'B'): libjpeg
 * then converts nothing, where nvJPEG would convert from YCbCr. The
 * segments before sof were walked by gf_jpeg_header_scan already. */
static bool stored_rgb(const uint8_t *buf, uint64_t sof) {
  if (buf[sof + 10] == 'R' && buf[sof + 13] == 'G' && buf[sof + 16] == 'B')
    return true;
  uint64_t q = 2;
  while (q + 4 <= sof) {
    while (q + 1 < sof && buf[q] == 0xFF && buf[q + 1] == 0xFF)
      q++; /* fill bytes */
    uint8_t m = buf[q + 1];
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
      q += 2;
      continue;
    }
    uint64_t seg = (uint64_t)buf[q + 2] << 8 | buf[q + 3];
    if (m == 0xEE && seg >= 14 && q + 2 + seg <= sof &&
        memcmp(buf + q + 4, "Adobe", 5) == 0 && buf[q + 15] == 0)
      return true;
    q += 2 + seg;
  }
  return false;
}

/* The segments from the SOI to the first scan, checked as libjpeg reads
 * them: each table's size against its segment (a Huffman table's code
 * counts at most 256 in all), the frame's and the first scan's fields,
 * the quantisation tables the frame names defined before the scan. A file
 * libjpeg would refuse for its headers goes to the CPU decoder, for its
 * verdict: nvJPEG's parser takes some of them (a Huffman table whose
 * counts overflow, then decoded as garbage on the JPEG engines). */
static bool headers_ok(const uint8_t *b, uint64_t len) {
  uint64_t q = 2;
  uint32_t dqt = 0, need_q = 0; /* quantisation tables: defined, named */
  bool sof = false;
  for (int k = 0; k < 4096; k++) {
    while (q + 1 < len && b[q] == 0xFF && b[q + 1] == 0xFF)
      q++; /* fill bytes */
    if (q + 4 > len || b[q] != 0xFF)
      return false;
    uint8_t m = b[q + 1];
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
      q += 2;
      continue;
    }
    if (m == 0x00 || m == 0xD8 || m == 0xD9)
      return false;
    uint64_t seg = (uint64_t)b[q + 2] << 8 | b[q + 3];
    if (seg < 2 || q + 2 + seg > len)
      return false;
    const uint8_t *p = b + q + 4;
    uint64_t n = seg - 2;
    if (m == 0xC4) { /* DHT: class/id, 16 counts, the symbols; repeated */
      while (n) {
        if (n < 17 || (p[0] >> 4) > 1 || (p[0] & 15) > 3)
          return false;
        uint64_t sum = 0;
        for (int i = 1; i <= 16; i++)
          sum += p[i];
        if (sum > 256 || 17 + sum > n)
          return false;
        p += 17 + sum;
        n -= 17 + sum;
      }
    } else if (m == 0xDB) { /* DQT: precision/id, 64 values; repeated */
      while (n) {
        uint64_t each = 1 + 64 * (uint64_t)((p[0] >> 4) + 1);
        if ((p[0] >> 4) > 1 || (p[0] & 15) > 3 || each > n)
          return false;
        dqt |= 1u << (p[0] & 15);
        p += each;
        n -= each;
      }
    } else if (m == 0xDD) { /* DRI */
      if (seg != 4)
        return false;
    } else if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 &&
               m != 0xCC) { /* the frame */
      if (sof || n < 6 || seg != 8 + 3 * (uint64_t)p[5])
        return false;
      for (uint32_t c = 0; c < p[5]; c++) {
        uint8_t hv = p[7 + 3 * c], tq = p[8 + 3 * c];
        if ((hv >> 4) < 1 || (hv >> 4) > 4 || (hv & 15) < 1 ||
            (hv & 15) > 4 || tq > 3)
          return false;
        need_q |= 1u << tq;
      }
      sof = true;
    } else if (m == 0xDA) { /* the first scan: its header, then data */
      return sof && n >= 1 && p[0] >= 1 && p[0] <= 4 &&
             seg == 6 + 2 * (uint64_t)p[0] && (need_q & ~dqt) == 0;
    }
    q += 2 + seg;
  }
  return false;
}

int gf_loader__jpeg_gpu_take(gf_loader *l, const gf_src_sample *smp,
                             const uint8_t *buf, uint64_t len, uint8_t *dst,
                             gf_shape *shape) {
  /* The whole file must be there, ending in its EOI: a file cut short goes
   * to the CPU decoder, whose verdict names it (nvJPEG may decode what it
   * is given). */
  if (len < 8 || len > l->stride || len > UINT32_MAX || buf[0] != 0xFF ||
      buf[1] != 0xD8 ||
      buf[len - 2] != 0xFF || buf[len - 1] != 0xD9)
    return 0;
  uint64_t pos = 2;
  gf_jpeg_frame f;
  gf_shape out, native;
  if (gf_jpeg_header_scan(buf, (size_t)len, 0, &pos, &f) != 0)
    return 0;
  /* Huffman-coded 8-bit baseline, extended or progressive frames of gray
   * or YCbCr: what nvJPEG decodes (the rest is the CPU's). */
  if ((f.marker != 0xC0 && f.marker != 0xC1 &&
       (f.marker != 0xC2 || !l->gpu_progressive)) ||
      gf_jpeg_frame_shape(&f, &l->dopts, &out, &native) != 0 ||
      (out.channels != 1 && out.channels != 3) ||
      (f.components == 3 && (pos + 19 > len || stored_rgb(buf, pos))) ||
      !headers_ok(buf, len))
    return 0;
  if (smp->stored.height &&
      (smp->stored.height != f.height || smp->stored.width != f.width))
    return 0; /* the CPU path says what disagrees */
  gf_error_info saved = *gf_last_error();
  bool within = gf_limits_check(&l->dopts.limits, &out, NULL, GF_NO_INDEX) == 0;
  gf_error_restore(&saved);
  if (!within || gf_shape_bytes(&out) > l->stride)
    return 0;
  memcpy(dst, buf, (size_t)len);
  *shape = out;
  return 1;
}
