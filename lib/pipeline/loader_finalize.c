/* The loader's batch finalize: a filled slot becomes one dense array and
 * the transform's output (on the CPU, or submitted to the GPU), its JPEG
 * samples that wait for nvJPEG decoded on the GPU first. */
#include "pipeline/loader_impl.h"

#include <stdio.h>

/* Makes the batch's final form once every sample is in: one dense array
 * when all samples share a shape, then the transform, on the CPU (host
 * mode) or submitted to the GPU. Runs on the worker that finished the slot
 * (or the consumer after a repair), outside the lock: nothing else touches
 * the slot meanwhile. A failure is kept in fin_rc for next() to return. */
static void finalize_body(gf_loader *l, slot *s, uint32_t tid);
void gf_loader__finalize(gf_loader *l, slot *s, uint32_t tid) {
  uint64_t t0 = l->trace ? now_ns() : 0;
  range_push(l, "finalize");
  finalize_body(l, s, tid);
  range_pop(l);
  span(l, GF_TR_FINALIZE, tid, t0, l->trace ? now_ns() : 0, s->seq);
}

/* The copy stream's span of the slot's previous batch, if not yet taken:
 * its timing events are about to be recorded again. */
void gf_loader__take_gpu_span(gf_loader *l, slot *s, bool wait) {
  uint64_t g0, gd;
  if (l->trace && l->stage &&
      gf_stage_timing_take(l->stage, s->index, wait, &g0, &gd) == 1)
    gf_trace_span(l->trace, GF_TR_GPU_COPY, GF_TRACE_TID_COPY_STREAM, g0,
                  g0 + gd, s->gpu_seq);
}

/* Direct mode: copies the samples that are still in the pinned cache into
 * the staging slot (for a batch whose host pixels the caller gets). */
static void materialize(gf_loader *l, slot *s) {
  for (uint32_t j = 0; j < s->count; j++)
    if (s->dsrc_dev[j]) {
      memcpy(s->data + (uint64_t)j * l->stride, s->dsrc_host[j],
             gf_shape_bytes(&s->shapes[j]));
      s->dsrc_dev[j] = 0;
    }
}

/* The gather list of slot s (its samples at offsets[j] of the device
 * input, from the cache (direct mode) or from the staging slot), without
 * the samples nvJPEG decodes there itself. */
static uint32_t make_segs(gf_loader *l, slot *s) {
  uint64_t base = gf_stage_host_dev(l->stage, s->index);
  uint32_t n = 0;
  for (uint32_t j = 0; j < s->count; j++) {
    /* A loco record the GPU decodes: its own bytes (loco_items). */
    uint64_t len = s->nloco && s->filtered[j] == 2
                       ? s->loco[j].len
                       : gf_shape_bytes(&s->shapes[j]);
    if (len == 0 || (s->gpu_len && s->gpu_len[j]))
      continue;
    gf_stage_seg *g = &s->segs[n++];
    g->dst = s->offsets[j];
    g->len = len;
    if (s->dsrc_dev && s->dsrc_dev[j]) {
      g->host = s->dsrc_host[j];
      g->dev = s->dsrc_dev[j];
    } else {
      g->host = s->data + (uint64_t)j * l->stride;
      g->dev = base + (uint64_t)j * l->stride;
    }
  }
  return n;
}

/* Slot s with samples whose files wait for nvJPEG (gpu_len; their places
 * j * stride): queues their decode into the device input, and decodes on
 * the CPU those nvJPEG refused (decode_again). Returns 0 (a sample the
 * CPU could not decode either is recorded failed in s) or an error of the
 * call (GF_EINTERNAL, -EINVAL). */
static int gpu_decode(gf_loader *l, slot *s, uint32_t tid) {
  uint32_t n = 0;
  for (uint32_t j = 0; j < s->count; j++) {
    if (!s->gpu_len[j])
      continue;
    gf_nvjpeg_image *im = &s->jimg[n];
    memset(im, 0, sizeof *im);
    im->data = s->data + (uint64_t)j * l->stride;
    im->len = s->gpu_len[j];
    im->channels = s->shapes[j].channels;
    im->sample = s->indices[j];
    s->joff[n] = (uint64_t)j * l->stride;
    s->jpos[n] = j;
    n++;
  }
  if (!n)
    return 0;
  uint64_t t0 = l->trace ? now_ns() : 0;
  range_push(l, "nvjpeg");
  gf_nvjpeg_result res;
  int rc = gf_stage_jpeg_decode(l->stage, s->index, s->jimg, s->joff,
                                l->stride, n, &res);
  range_pop(l);
  span(l, GF_TR_DECODE, tid, t0, l->trace ? now_ns() : 0, s->seq);
  if (rc == -EINVAL || rc == GF_EINTERNAL)
    return rc;
  if (rc < 0)
    gf_log(GF_LOG_WARN, "JPEG on the GPU: %s (its samples are decoded on "
                        "the CPU)",
           gf_last_error()->message);
  uint32_t ok = 0, refused = 0;
  for (uint32_t k = 0; k < n; k++) {
    if (s->jimg[k].status == 0)
      ok++;
    else
      refused++;
  }
  add(&l->jpeg_gpu_decoded, ok);
  if (!refused)
    return 0;
  add(&l->jpeg_gpu_refused, refused);
  /* nvJPEG may have read a refused file's bytes on the stream (a batch
   * that failed as a whole, then each image alone): they are replaced by
   * pixels only once the stream has passed the decode. Not for an image
   * refused by its header check (GF_EUNSUPPORTED), which never reached a
   * decode. */
  bool tried = false;
  for (uint32_t k = 0; k < n; k++)
    tried = tried || (s->jimg[k].status != 0 &&
                      s->jimg[k].status != GF_EUNSUPPORTED);
  if (tried && (rc = gf_stage_copied_wait(l->stage, s->index)) < 0)
    return rc;
  for (uint32_t k = 0; k < n; k++)
    if (s->jimg[k].status != 0) {
      gf_log(GF_LOG_DEBUG, "JPEG on the GPU: %s: decoded on the CPU",
             s->jimg[k].why);
      (void)gf_loader__decode_again(l, s, s->jpos[k], tid);
    }
  return 0;
}

/* Whether a sample of s failed (status not 0). */
static bool any_failed(const slot *s) {
  for (uint32_t j = 0; j < s->count; j++)
    if (s->status[j] != 0)
      return true;
  return false;
}

/* Keeps rc (< 0) as the slot's finalise failure, for next() to return. */
static void fin_fail(slot *s, int rc) {
  s->fin_rc = rc;
  s->fin_err = *gf_last_error();
  if (s->fin_err.code != rc) {
    memset(&s->fin_err, 0, sizeof s->fin_err);
    s->fin_err.code = rc;
    s->fin_err.sample = s->fin_err.offset = GF_NO_INDEX;
    snprintf(s->fin_err.message, sizeof s->fin_err.message,
             "making batch %llu of epoch %llu: %s", (unsigned long long)s->k,
             (unsigned long long)s->epoch, gf_strerror(rc));
  }
}

static void finalize_body(gf_loader *l, slot *s, uint32_t tid) {
  s->fin_rc = 0;
  uint64_t stride = l->stride;
  /* Samples whose files wait for nvJPEG: decoded into the device input
   * first (each at j * stride: their places, which the batch then keeps
   * rather than packing the samples densely), those it refuses decoded
   * on the CPU meanwhile. A sample the CPU cannot decode either fails the
   * batch here, before anything is submitted: next() applies the error
   * policy (the skip policy's repair finalises the batch again). */
  uint32_t ng = 0;
  s->ngpu = 0;
  for (uint32_t j = 0; s->gpu_len && j < s->count; j++)
    ng += s->gpu_len[j] != 0;
  if (ng) {
    int rc = gpu_decode(l, s, tid);
    if (rc < 0) {
      fin_fail(s, rc);
      return;
    }
    if (any_failed(s))
      return;
    ng = 0;
    for (uint32_t j = 0; j < s->count; j++)
      ng += s->gpu_len[j] != 0;
    s->ngpu = ng;
  }
  bool same = s->count > 0;
  for (uint32_t j = 1; j < s->count && same; j++)
    same = memcmp(&s->shapes[j], &s->shapes[0], sizeof(gf_shape)) == 0;
  uint32_t nd = 0;
  for (uint32_t j = 0; s->dsrc_dev && j < s->count; j++)
    nd += s->dsrc_dev[j] != 0;
  if (nd && !same && l->identity) {
    /* A ragged batch with nothing asked of the transform: the caller gets
     * the host pixels, so they must all be there. */
    materialize(l, s);
    nd = 0;
  }
  s->ndirect = nd;
  /* loco records the GPU decodes stay in their places too. */
  uint32_t nl = 0;
  for (uint32_t j = 0; s->loco && j < s->count; j++)
    nl += s->filtered[j] == 2;
  s->nloco = nl;
  s->batch.uniform = same;
  if (same) {
    uint64_t bytes = gf_shape_bytes(&s->shapes[0]);
    /* One dense array; when gathering, the gather list places each sample
     * where it belongs and the staging copies stay where they are. */
    if (bytes < stride && !nd && !ng && !nl)
      for (uint32_t j = 1; j < s->count; j++)
        memmove(s->data + j * bytes, s->data + (uint64_t)j * stride, bytes);
    if (!ng)
      stride = bytes;
    s->batch.shape = s->shapes[0];
  }
  s->batch.stride = stride;
  for (uint32_t j = 0; j < s->count; j++)
    s->offsets[j] = (uint64_t)j * stride;
  s->batch.data_bytes = (uint64_t)s->count * stride;
  s->batch.output = NULL;
  s->batch.output_bytes = 0;
  s->batch.on_device = 0;
  s->batch.labels_device = NULL;
  const gf_transform *t = &l->cfg.transform;
  s->batch.out_dtype = t->out_dtype;
  s->batch.out_layout = t->layout;
  if (l->identity && !l->stage) {
    /* Nothing to do: the pixels are the output when they are dense. */
    if (same) {
      s->batch.output = s->data;
      s->batch.output_bytes = s->batch.data_bytes;
      s->batch.out_height = s->shapes[0].height;
      s->batch.out_width = s->shapes[0].width;
      s->batch.out_channels = s->shapes[0].channels;
    }
    return;
  }
  uint32_t oh, ow, oc, nf = 0;
  int rc = gf_xform_out_shape(t, s->shapes, s->count, &oh, &ow, &oc);
  if (rc == GF_ESHAPE && l->identity) {
    /* A ragged batch and nothing asked of the transform: the caller gets
     * the samples as they are (shapes and offsets), no dense output. */
    gf_error_clear();
    return;
  }
  if (rc == 0) {
    for (uint32_t j = 0; j < s->count; j++) {
      if (s->regions[j].denom) /* a JPEG window */
        gf_xform_sample_init_region(t, s->epoch, s->indices[j],
                                    s->offsets[j], &s->shapes[j], oh, ow,
                                    &s->regions[j], &s->params[j]);
      else
        gf_xform_sample_init(t, s->epoch, s->indices[j], s->offsets[j],
                             &s->shapes[j], oh, ow, s->filtered[j] == 1,
                             &s->params[j]);
      nf += s->filtered[j] == 1;
    }
    if (l->stage) {
      void *out;
      const int64_t *labels_dev;
      uint64_t len;
      gf_loader__take_gpu_span(l, s, true);
      s->gpu_seq = s->seq;
      /* A ragged batch whose samples fill less than half their places
       * (a source sized by a bound, not by its samples' shapes: tar
       * shards, a remote folder) is gathered sample by sample rather
       * than copied whole, places and all. */
      uint64_t used = 0;
      for (uint32_t j = 0; !same && s->segs && j < s->count; j++)
        used += gf_shape_bytes(&s->shapes[j]);
      bool sparse = !same && s->segs && used < s->batch.data_bytes / 2;
      bool gather = nd || ng || sparse;
      uint32_t bands = 0;
      for (uint32_t j = 0; nl && j < s->count && rc == 0; j++) {
        s->loco[j] = (gf_stage_loco){0, bands};
        if (s->filtered[j] != 2)
          continue;
        const uint8_t *rec = s->dsrc_dev && s->dsrc_dev[j]
                                 ? s->dsrc_host[j]
                                 : s->data + s->offsets[j];
        uint32_t nb;
        rc = gf_decode_gpu_record(GF_CODEC_LOCO, rec, (size_t)stride, false,
                                  &s->shapes[j], &s->loco[j].len, &nb);
        bands += nb;
      }
      uint32_t nsegs = gather && rc == 0 ? make_segs(l, s) : 0;
      if (rc == 0)
        rc = gf_stage_submit(l->stage, s->index, t, s->params, s->labels,
                             s->count, nf, s->batch.data_bytes,
                             gather ? s->segs : NULL, nsegs,
                             nl ? s->loco : NULL, bands, oh, ow, oc, &out,
                             &labels_dev, &len);
      if (rc == 0) {
        s->batch.output = out;
        s->batch.output_bytes = len;
        s->batch.on_device = 1;
        s->batch.labels_device = labels_dev;
      }
    } else {
      uint64_t len;
      rc = gf_xform_out_bytes(s->count, oh, ow, oc, t->out_dtype, &len);
      if (rc == 0 && len > l->out_cap)
        rc = gf_fail(GF_ESHAPE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "batch output of %llu bytes exceeds the %llu bytes "
                     "planned a batch",
                     (unsigned long long)len, (unsigned long long)l->out_cap);
      if (rc == 0)
        rc = gf_xform_ref(t, s->data, s->batch.data_bytes, s->params,
                          s->count, oh, ow, oc, s->out_host);
      if (rc == 0) {
        s->batch.output = s->out_host;
        s->batch.output_bytes = len;
      }
    }
  }
  if (rc < 0) {
    fin_fail(s, rc);
    return;
  }
  s->batch.out_height = oh;
  s->batch.out_width = ow;
  s->batch.out_channels = oc;
}
