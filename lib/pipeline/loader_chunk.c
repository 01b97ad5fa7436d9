/* A worker's chunk of a slot's positions, by where their bytes come from:
 * read from local storage (one submission a chunk through the worker's
 * reader), taken from the fetch stage (a remote source), or taken from
 * the streaming stage (tar shards without an index); each sample then
 * finished by the per-sample path (loader_sample.c). */
#include "pipeline/loader_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct pending {
  uint32_t j; /* position in the slot */
  gf_src_sample smp;
  gf_object *own; /* a sample that is an object of its own, to close */
  uint8_t *buf;   /* where the read lands */
  uint64_t skew;  /* direct: sample start within buf */
  bool in_place;
  bool returned; /* the reader gave back its read */
} pending;

/* Fails position p->j of s as lost with the worker's reader (SAMPLE_LOST),
 * `why` (the reader's error) saying how, and closes its file. */
static void lose(gf_loader *l, slot *s, pending *p, const gf_error_info *why,
                 const char *how) {
  gf_object_close(p->own);
  p->own = NULL;
  char name[1100];
  gf_source_name(l->src, p->smp.index, name, sizeof name);
  gf_fail(why->code, name, p->smp.index, GF_NO_INDEX,
          "reading %llu bytes at offset %llu: %s (%s)",
          (unsigned long long)p->smp.length, (unsigned long long)p->smp.offset,
          how, why->message);
  gf_loader__record_failure(l, s, p->j, why->code, p->smp.index);
  s->status[p->j] = SAMPLE_LOST;
}

/* The worker's reader failed as a whole (its wait or its submit, with
 * reads accepted: a ring error, `rc`): the reads it has not given back
 * may still be in the kernel or in a pread call, writing into the read
 * buffer or the slot and using their fds, and it must not be used again
 * (io.h). Destroying it waits for them; only then are their files closed
 * (a number closed earlier could be reused by another open while a read
 * still names it) and their positions failed. The worker makes a fresh
 * reader before its next chunk (worker_main). */
static void reader_failed(worker *w, slot *s, pending *pend, uint32_t nreq,
                          int rc) {
  gf_loader *l = w->l;
  gf_error_info why = *gf_last_error();
  if (why.code != rc) {
    why.code = rc;
    snprintf(why.message, sizeof why.message, "%s", gf_strerror(rc));
  }
  gf_log(GF_LOG_WARN,
         "worker %u: its reader failed as a whole (%s): the reads it had "
         "not given back (%u) fail, and a fresh reader replaces it",
         (unsigned)(w - l->workers), why.message,
         gf_reader_inflight(w->reader));
  gf_reader_destroy(w->reader);
  w->reader = NULL;
  for (uint32_t i = 0; i < nreq; i++)
    if (!pend[i].returned)
      lose(l, s, &pend[i], &why,
           "lost with the reader, which failed as a whole");
}

/* A position the fetch stage did not read (the cache held its sample when
 * it was planned, and no longer gives it): read here, with one request
 * through its storage. Returns 0 with *buf (malloc'd, the caller frees
 * it) or the error with context. */
static int read_unfetched(gf_loader *l, const gf_src_sample *smp, uint8_t **buf,
                          uint64_t *got) {
  *buf = NULL;
  if (smp->length > l->stored_cap)
    return gf_loader__too_large(l, smp->index, smp->length);
  gf_object *own = NULL;
  uint64_t len = smp->length;
  if (!smp->obj) {
    /* A file of its own (a remote folder's), opened here. */
    int rc = gf_source_open_sample(l->src, smp->index, &own);
    if (rc < 0)
      return rc;
    len = own->size;
    if (len > l->stored_cap) {
      gf_object_close(own);
      return gf_loader__too_large(l, smp->index, len);
    }
  }
  uint8_t *b = malloc(len ? len : 1);
  if (!b) {
    gf_object_close(own);
    return gf_fail(-ENOMEM, NULL, smp->index, GF_NO_INDEX, "out of memory");
  }
  int rc = own ? gf_object_read(own, b, 0, len)
               : gf_object_read(smp->obj, b, smp->offset, len);
  gf_object_close(own);
  if (rc < 0) {
    free(b);
    return rc;
  }
  *buf = b;
  *got = len;
  return 0;
}

/* Position j of s before its sample is finished: its label, no JPEG
 * window, nothing left for the GPU, no cached device copy. */
static void place_begin(slot *s, uint32_t j, int64_t label) {
  s->labels[j] = label;
  s->regions[j].denom = 0;
  if (s->gpu_len)
    s->gpu_len[j] = 0;
  if (s->dsrc_dev)
    s->dsrc_dev[j] = 0;
}

/* Processes positions [j0, j0 + n) of slot s of a remote source: each
 * sample's bytes come from the fetch stage, which read them ahead (it
 * frees them once released, taken or not). */
static void run_chunk_fetched(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    uint64_t idx = s->indices[j], seq = s->fseq + j;
    uint8_t *dst = s->data + (uint64_t)j * l->stride;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break; /* a restart follows and drops what the stage holds */
    gf_src_sample smp;
    int rc = gf_source_sample(l->src, idx, &smp);
    if (rc < 0) {
      gf_fetch_release(l->fetch, seq);
      gf_fail_context(rc, NULL, idx, NULL);
      gf_loader__record_failure(l, s, j, rc, idx);
      continue;
    }
    place_begin(s, j, smp.label);
    field_place fp;
    const field_place *fields = slot_fields(s, j, &fp);
    if (gf_loader__from_cache(
            l, w->tid, idx, dst, &s->shapes[j], &s->filtered[j],
            s->dsrc_dev ? &s->dsrc_dev[j] : NULL,
            s->dsrc_dev ? &s->dsrc_host[j] : NULL, &s->labels[j], fields)) {
      gf_fetch_release(l->fetch, seq);
      s->status[j] = 0;
      continue;
    }
    const uint8_t *data;
    uint64_t len;
    uint8_t *own = NULL;
    uint64_t t0 = now_ns();
    rc = gf_fetch_take(l->fetch, seq, idx, &data, &len);
    if (rc == 0 && (rc = read_unfetched(l, &smp, &own, &len)) == 0)
      data = own;
    uint64_t t1 = now_ns();
    add(&l->st_read.busy_ns, t1 - t0);
    if (rc >= 0 && len > l->stored_cap)
      rc = gf_loader__too_large(l, idx, len);
    if (rc < 0) {
      free(own);
      gf_fetch_release(l->fetch, seq);
      gf_loader__record_failure(l, s, j, rc, idx);
      continue;
    }
    span(l, GF_TR_READ, w->tid, t0, t1, idx);
    add(&l->st_read.samples, 1);
    add(&l->st_read.bytes, len);
    rc = gf_loader__finish_sample(
        l, w->tid, &smp, s->epoch, data, len, false, dst, &s->shapes[j],
        &s->filtered[j], &s->regions[j],
        gf_loader__gpu_position(l, j) ? &s->gpu_len[j] : NULL, &s->labels[j],
        fields, false);
    free(own);
    gf_fetch_release(l->fetch, seq);
    if (rc < 0)
      gf_loader__record_failure(l, s, j, rc, idx);
    else
      s->status[j] = 0;
  }
}

/* ---- a streaming source ------------------------------------------------ */

/* Takes position pos of epoch from the streaming stage into buf (the
 * stored cap) and decodes it into dst. Returns 1 with *id and *label, 0
 * past the epoch's end, or the error (context added). */
static int take_streamed(gf_loader *l, uint32_t tid, uint64_t epoch,
                         uint64_t pos, uint8_t *buf, uint8_t *dst,
                         gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, uint32_t *gpu, int64_t *label,
                         const field_place *fp, uint64_t *id) {
  gf_stream_sample m;
  region->denom = 0;
  if (gpu)
    *gpu = 0;
  *id = GF_NO_INDEX;
  uint64_t t0 = now_ns();
  gf_stream_fields_out fo = {.len = fp ? fp->len : NULL,
                             .data = fp ? fp->data : NULL};
  int rc = gf_stream_take(l->stream, epoch, pos, buf, l->stored_cap,
                          fp ? &fo : NULL, &m);
  uint64_t t1 = now_ns();
  add(&l->st_read.busy_ns, t1 - t0);
  if (rc <= 0)
    return rc;
  *id = m.id;
  *label = m.label;
  span(l, GF_TR_READ, tid, t0, t1, m.id);
  add(&l->st_read.samples, 1);
  add(&l->st_read.bytes, m.len);
  /* The image alone (the stage took the shard apart): no unpack. */
  gf_src_sample smp;
  if ((rc = gf_source_sample(l->src, m.id, &smp)) < 0)
    return rc;
  smp.codec = m.codec;
  smp.length = m.len;
  rc = gf_loader__finish_sample(l, tid, &smp, epoch, buf, m.len, false, dst,
                                shape, filtered, region, gpu, label, fp, true);
  return rc < 0 ? rc : 1;
}

/* Processes positions [j0, j0 + n) of slot s of a streaming source. */
static void run_chunk_streamed(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break; /* a restart follows and drops what the stage holds */
    if (s->dsrc_dev)
      s->dsrc_dev[j] = 0;
    s->labels[j] = -1;
    uint64_t id;
    field_place fp;
    int rc = take_streamed(
        l, w->tid, s->epoch, s->first_pos + j, w->rbuf,
        s->data + (uint64_t)j * l->stride, &s->shapes[j], &s->filtered[j],
        &s->regions[j], gf_loader__gpu_position(l, j) ? &s->gpu_len[j] : NULL,
        &s->labels[j], slot_fields(s, j, &fp), &id);
    s->indices[j] = id;
    if (rc < 0)
      gf_loader__record_failure(l, s, j, rc, id);
    else
      s->status[j] = rc == 0 ? SAMPLE_PAST_END : 0;
  }
}

int gf_loader__take_sync(gf_loader *l, uint64_t epoch, uint64_t pos,
                         uint8_t *dst, gf_shape *shape, uint8_t *filtered,
                         gf_xform_region *region, int64_t *label,
                         const field_place *fp, uint64_t *id) {
  uint8_t *buf = malloc(l->stored_cap ? l->stored_cap : 1);
  if (!buf)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a sample of %llu bytes",
                   (unsigned long long)l->stored_cap);
  int rc = take_streamed(l, GF_TRACE_TID_CONSUMER, epoch, pos, buf, dst, shape,
                         filtered, region, NULL, label, fp, id);
  free(buf);
  return rc;
}

/* Processes positions [j0, j0 + n) of slot s. */
void gf_loader__run_chunk(worker *w, slot *s, uint32_t j0, uint32_t n) {
  gf_loader *l = w->l;
  if (l->fetch) {
    run_chunk_fetched(w, s, j0, n);
    return;
  }
  if (l->stream) {
    run_chunk_streamed(w, s, j0, n);
    return;
  }
  pending pend[64];
  gf_read_req reqs[64];
  uint32_t nreq = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t j = j0 + i;
    uint64_t idx = s->indices[j];
    uint8_t *dst = s->data + (uint64_t)j * l->stride;
    if (atomic_load_explicit(&s->cancel, memory_order_relaxed))
      break;
    pending *p = &pend[nreq];
    int rc = gf_source_sample(l->src, idx, &p->smp);
    if (rc < 0) {
      gf_fail_context(rc, NULL, idx, NULL);
      gf_loader__record_failure(l, s, j, rc, idx);
      continue;
    }
    place_begin(s, j, p->smp.label);
    field_place fp;
    if (gf_loader__from_cache(l, w->tid, idx, dst, &s->shapes[j],
                              &s->filtered[j],
                              s->dsrc_dev ? &s->dsrc_dev[j] : NULL,
                              s->dsrc_dev ? &s->dsrc_host[j] : NULL,
                              &s->labels[j], slot_fields(s, j, &fp))) {
      s->status[j] = 0;
      continue;
    }
    p->j = j;
    p->own = NULL;
    p->skew = 0;
    p->returned = false;
    const gf_object *obj = p->smp.obj;
    if (!obj) {
      rc = gf_source_open_sample(l->src, idx, &p->own);
      if (rc < 0) {
        gf_loader__record_failure(l, s, j, rc, idx);
        continue;
      }
      obj = p->own;
      p->smp.length = p->own->size;
    }
    uint64_t off = p->smp.offset, len = p->smp.length;
    p->in_place = gf_loader__raw_in_place(l, &p->smp);
    p->buf = p->in_place ? dst : w->rbuf + (uint64_t)nreq * l->stored_cap;
    uint32_t flags = 0;
    if (l->direct_objs && !p->own) {
      obj = l->direct_objs[p->smp.object];
      uint64_t a = l->direct_align;
      uint64_t start = off & ~(a - 1);
      p->skew = off - start;
      len = (off + len + a - 1) / a * a - start;
      off = start;
      flags = GF_READ_EOF_OK;
    }
    if (len > l->stored_cap && !p->in_place) {
      rc = gf_loader__too_large(l, idx, p->smp.length);
      gf_object_close(p->own);
      gf_loader__record_failure(l, s, j, rc, idx);
      continue;
    }
    reqs[nreq] = (gf_read_req){.obj = obj,
                               .flags = flags,
                               .offset = off,
                               .length = len,
                               .buf = p->buf,
                               .user_data = nreq};
    nreq++;
  }
  if (nreq == 0)
    return;
  if (GF_UNLIKELY(!w->reader)) {
    /* Its reader failed and no fresh one could be made (worker_main):
     * these samples are not bad, there is nothing to read them with. */
    for (uint32_t i = 0; i < nreq; i++)
      lose(l, s, &pend[i], &w->reader_err,
           "no reader to read with: its worker's reader failed and a fresh "
           "one could not be made");
    return;
  }
  uint64_t t0 = now_ns(), t_sub = t0;
  range_push(l, "read");
  int rc = gf_reader_submit(w->reader, reqs, nreq);
  if (rc < 0 && gf_reader_inflight(w->reader)) {
    /* Accepted, then the ring's submit failed: a ring error. */
    range_pop(l);
    reader_failed(w, s, pend, nreq, rc);
    return;
  }
  if (rc < 0) {
    range_pop(l);
    for (uint32_t i = 0; i < nreq; i++) {
      gf_object_close(pend[i].own);
      gf_fail_context(rc, NULL, pend[i].smp.index, "submitting reads");
      gf_loader__record_failure(l, s, pend[i].j, rc, pend[i].smp.index);
    }
    return;
  }
  uint32_t left = nreq;
  gf_read_done done[64];
  while (left) {
    int got = gf_reader_wait(w->reader, done, left, 1);
    if (got <= 0) {
      /* A ring error (or a reader that lost count of its reads, which is
       * no better): the reads still out cannot be trusted. */
      if (got == 0)
        got = gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                      "gf_reader_wait gave back none of %u reads", left);
      range_pop(l);
      reader_failed(w, s, pend, nreq, got);
      return;
    }
    uint64_t t_got = now_ns();
    add(&l->st_read.busy_ns, t_got - t0);
    if ((uint32_t)got == left) {
      /* The chunk's last reads are in: its read span ends here, before
       * the decodes that follow, so spans nest on the worker's track. */
      range_pop(l);
      span(l, GF_TR_READ, w->tid, t_sub, t_got, pend[0].smp.index);
    }
    for (int g = 0; g < got; g++) {
      pending *p = &pend[done[g].user_data];
      p->returned = true;
      left--;
      int64_t res = done[g].result;
      gf_object_close(p->own);
      p->own = NULL;
      uint8_t *dst = s->data + (uint64_t)p->j * l->stride;
      if (res >= 0 && (uint64_t)res < p->skew + p->smp.length)
        res = GF_ETRUNCATED;
      if (res < 0) {
        char name[1100];
        gf_source_name(l->src, p->smp.index, name, sizeof name);
        gf_fail((int)res, name, p->smp.index, done[g].stop_offset,
                "reading %llu bytes at offset %llu: %s",
                (unsigned long long)p->smp.length,
                (unsigned long long)p->smp.offset,
                done[g].why && done[g].why[0] ? done[g].why
                                              : gf_strerror((int)res));
        gf_loader__record_failure(l, s, p->j, (int)res, p->smp.index);
        continue;
      }
      add(&l->st_read.samples, 1);
      add(&l->st_read.bytes, p->smp.length);
      field_place fp;
      rc = gf_loader__finish_sample(
          l, w->tid, &p->smp, s->epoch, p->buf + p->skew, p->smp.length,
          p->in_place, dst, &s->shapes[p->j], &s->filtered[p->j],
          &s->regions[p->j],
          gf_loader__gpu_position(l, p->j) ? &s->gpu_len[p->j] : NULL,
          &s->labels[p->j], slot_fields(s, p->j, &fp), false);
      if (rc < 0)
        gf_loader__record_failure(l, s, p->j, rc, p->smp.index);
      else
        s->status[p->j] = 0;
    }
    t0 = now_ns();
  }
}
