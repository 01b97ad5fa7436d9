/* The loader's consumer side: next() waits for the batch of the next seq,
 * repairs it under the skip policy, and lends it; release() takes it back. */
#include "pipeline/loader_impl.h"

#include <stdio.h>

/* ---- the consumer ------------------------------------------------------- */

static slot *find_seq(gf_loader *l, uint64_t seq) {
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if ((s->state == SLOT_FILLING || s->state == SLOT_READY) && s->seq == seq)
      return s;
  }
  return NULL;
}

#ifdef GPUFEED_TESTING
void (*gf_loader__test_hook)(gf_loader *l, const char *where);

static void test_hook(gf_loader *l, const char *where) {
  if (GF_UNLIKELY(gf_loader__test_hook != NULL))
    gf_loader__test_hook(l, where);
}
#else
/* What ships has no hook: the calls vanish (always_inline: in a Debug build
 * too). */
__attribute__((always_inline)) static inline void test_hook(gf_loader *l,
                                                            const char *where) {
  (void)l;
  (void)where;
}
#endif

/* Skip policy: fills the holes of ready slot s from the positions after
 * it, on this thread, after cancelling everything dispatched later. Called
 * and returns under mu, which it drops while it reads and decodes: the
 * slot is REPAIRING (no one else touches it) and dispatch stays paused
 * (cancel_all) until restart_at, so no worker uses the sampler meanwhile.
 * The slot is left REPAIRING. */
static void repair(gf_loader *l, slot *s) {
  s->state = SLOT_REPAIRING; /* keep cancel_all and everyone else off it */
  gf_loader__cancel_all(l);
  pthread_mutex_unlock(&l->mu);
  if (l->stream) /* the positions after the batch: replayed if given out */
    gf_stream_seek(l->stream, s->epoch, s->end_pos);
  else if (gf_sampler_epoch(&l->sampler) != s->epoch)
    gf_sampler_set_epoch(&l->sampler, s->epoch);
  uint64_t pos = s->end_pos;
  uint32_t out = 0;
  bool ended = false; /* streaming: the epoch ran out */
  for (uint32_t j = 0; j < s->count; j++) {
    if (s->status[j] == SAMPLE_LOST) {
      /* Lost with a worker's reader, not bad by itself: read again in its
       * own place (plain preads, no reader), so a ring error costs no
       * sample and the order stays the epoch's. Failing again, it is
       * skipped as any bad sample. */
      if (s->dsrc_dev)
        s->dsrc_dev[j] = 0;
      if (s->gpu_len)
        s->gpu_len[j] = 0;
      test_hook(l, "repair: load");
      field_place fp;
      s->status[j] = gf_loader__load_sync(
          l, s->epoch, s->indices[j], s->data + (uint64_t)j * l->stride,
          &s->shapes[j], &s->filtered[j], &s->regions[j], &s->labels[j],
          slot_fields(s, j, &fp));
      if (s->status[j] != 0) {
        s->err_pos = j;
        s->err = *gf_last_error();
      }
    }
    while (s->status[j] != 0 && s->status[j] != SAMPLE_PAST_END) {
      pthread_mutex_lock(&l->stat_mu);
      gf_strlcpy(l->last_skip_reason,
                 s->err_pos == j ? s->err.message : gf_last_error()->message,
                 sizeof l->last_skip_reason);
      pthread_mutex_unlock(&l->stat_mu);
      add(&l->skipped, 1);
      s->batch.skipped++;
      if (l->stream ? ended : pos >= gf_sampler_samples_per_epoch(&l->sampler))
        break;
      uint8_t *dst = s->data + (uint64_t)j * l->stride;
      if (s->dsrc_dev)
        s->dsrc_dev[j] = 0;
      if (s->gpu_len)
        s->gpu_len[j] = 0; /* repairs decode on the CPU */
      test_hook(l, "repair: load");
      if (l->stream) {
        uint64_t id;
        field_place fp;
        int rc = gf_loader__take_sync(
            l, s->epoch, pos, dst, &s->shapes[j], &s->filtered[j],
            &s->regions[j], &s->labels[j], slot_fields(s, j, &fp), &id);
        if (rc == 0) {
          ended = true;
          s->status[j] = SAMPLE_PAST_END;
          break;
        }
        pos++;
        s->indices[j] = id;
        s->status[j] = rc < 0 ? rc : 0;
      } else {
        uint64_t idx = gf_sampler_get(&l->sampler, pos++);
        s->indices[j] = idx;
        field_place fp;
        s->status[j] = gf_loader__load_sync(
            l, s->epoch, idx, dst, &s->shapes[j], &s->filtered[j],
            &s->regions[j], &s->labels[j], slot_fields(s, j, &fp));
      }
      if (s->status[j] != 0) {
        s->err_pos = j;
        s->err = *gf_last_error();
      }
    }
    if (s->status[j] != 0)
      continue; /* the epoch ran out: compact below */
    if (out != j) {
      memmove(s->data + (uint64_t)out * l->stride,
              s->data + (uint64_t)j * l->stride, l->stride);
      s->shapes[out] = s->shapes[j];
      s->labels[out] = s->labels[j];
      s->indices[out] = s->indices[j];
      s->filtered[out] = s->filtered[j];
      s->regions[out] = s->regions[j];
      s->status[out] = 0;
      if (s->dsrc_dev) {
        s->dsrc_dev[out] = s->dsrc_dev[j];
        s->dsrc_host[out] = s->dsrc_host[j];
      }
      if (s->gpu_len)
        s->gpu_len[out] = s->gpu_len[j];
      /* A sample's fields move with it. */
      field_place from, to;
      if (slot_fields(s, j, &from) && slot_fields(s, out, &to)) {
        memcpy(to.len, from.len, s->nfields * sizeof *to.len);
        memcpy(to.data, from.data, s->nfields * s->field_bytes);
      }
    }
    out++;
  }
  pthread_mutex_lock(&l->mu);
  s->count = out;
  s->end_pos = pos;
  gf_loader__restart_at(l, s->epoch, pos, s->k + 1);
  /* c_seq is s->seq: the next dispatched batch must follow it. */
  l->next_seq = s->seq + 1;
}

/* A slot given up (not refilled before its staging copy ends: slot_free).
 * Under mu. */
static void give_up(gf_loader *l, slot *s) {
  gf_loader__slot_free(l, s);
  pthread_cond_broadcast(&l->work_cv);
}

/* Fills the parts of s->batch that finalize() does not. */
static void present(slot *s) {
  gf_batch *b = &s->batch;
  b->epoch = s->epoch;
  b->index = s->k;
  b->count = s->count;
  /* Samples gathered from the pinned cache never passed through the host
   * slot, and the slot holds the files of those nvJPEG decoded: its
   * pixels are not the batch's. */
  b->data = s->ndirect || s->ngpu || s->nloco ? NULL : s->data;
  b->direct_count = s->ndirect;
  b->shapes = s->shapes;
  b->offsets = s->offsets;
  b->labels = s->labels;
  b->indices = s->indices;
  b->filtered = s->filtered;
}

/* A streaming epoch that gave this rank no batch at all (the first slot of
 * the epoch came back empty): said once a loader, as the caller sees only
 * the epoch's end. Under mu. */
static void warn_empty_epoch(gf_loader *l, const slot *s) {
  if (l->warned_empty_epoch)
    return;
  l->warned_empty_epoch = true;
  if (s->count == 0)
    gf_log(GF_LOG_WARN,
           "epoch %llu gave rank %u no samples: its shards hold none",
           (unsigned long long)s->epoch, l->cfg.rank);
  else
    gf_log(GF_LOG_WARN,
           "epoch %llu gave rank %u no batch: its %u samples are fewer "
           "than the batch size %u, and drop_last drops them",
           (unsigned long long)s->epoch, l->cfg.rank, s->count,
           l->cfg.batch_size);
}

/* Waits on ready_cv, at most until `deadline` (now_ns()'s clock; UINT64_MAX:
 * no limit). Under mu. */
static void wait_ready(gf_loader *l, uint64_t deadline) {
  pthread_cond_broadcast(&l->work_cv);
  if (deadline == UINT64_MAX) {
    pthread_cond_wait(&l->ready_cv, &l->mu);
    return;
  }
  uint64_t t = now_ns();
  cond_wait_ns(&l->ready_cv, &l->mu, deadline > t ? deadline - t : 0);
}

/* deadline: now_ns()'s clock, UINT64_MAX for none; past it, -ETIMEDOUT
 * with nothing taken (and the call not counted in next_calls). start: when
 * the call began on that clock, the deadline's origin (0: now), from which
 * its wait counts: a timed-out call adds at least its timeout to
 * consumer_wait_ns. */
static int next_impl(gf_loader *l, void *stream, uint64_t start,
                     uint64_t deadline, gf_batch **out) {
  *out = NULL;
  uint64_t t0 = start ? start : now_ns();
  pthread_mutex_lock(&l->mu);
  uint64_t ready = 0;
  for (uint32_t i = 0; i < l->nslots; i++)
    ready += l->slots[i].state == SLOT_READY;
  add(&l->next_calls, 1);
  add(&l->ready_sum, ready);
  slot *s;
  for (;;) {
    if (GF_UNLIKELY(l->pin_err_pending)) {
      /* A staging slot could not be pinned: said once, nothing taken; the
       * loader goes on without that slot. */
      l->pin_err_pending = false;
      gf_error_info e = l->pin_err;
      pthread_mutex_unlock(&l->mu);
      gf_error_restore(&e);
      return e.code;
    }
    s = find_seq(l, l->c_seq);
    if (s && s->state == SLOT_READY)
      break;
    if (!s && gf_loader__lent_count(l) == l->nslots - l->unpinned) {
      pthread_mutex_unlock(&l->mu);
      return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "the caller holds all %u batches (prefetch); release "
                     "one before taking the next",
                     l->nslots - l->unpinned);
    }
    if (deadline != UINT64_MAX && now_ns() >= deadline) {
      /* Not a call that delivered or failed: the caller calls again, and
       * only that call counts (next_calls, ready_sum); the time waited
       * counts. */
      atomic_fetch_sub_explicit(&l->next_calls, 1, memory_order_relaxed);
      atomic_fetch_sub_explicit(&l->ready_sum, ready, memory_order_relaxed);
      add(&l->consumer_wait_ns, now_ns() - t0);
      pthread_mutex_unlock(&l->mu);
      return -ETIMEDOUT;
    }
    wait_ready(l, deadline);
  }
  add(&l->consumer_wait_ns, now_ns() - t0);
  if (s->epoch != l->c_epoch) {
    /* The current epoch is over; the next call delivers s (or passes it
     * over, empty: a streaming epoch with no batch still ends, once). */
    l->c_epoch = s->epoch;
    l->c_pos = 0;
    l->c_k = 0;
    pthread_mutex_unlock(&l->mu);
    return GF_EEPOCHEND;
  }
  if (s->empty) {
    /* Streaming: nothing of its epoch was left for it. Passed over; the
     * call goes on to the next batch (counted once). */
    gf_loader__slot_free(l, s);
    l->c_seq++;
    l->c_pos = s->end_pos;
    if (s->first_pos == 0)
      warn_empty_epoch(l, s);
    atomic_fetch_sub_explicit(&l->next_calls, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&l->ready_sum, ready, memory_order_relaxed);
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
    return next_impl(l, stream, now_ns(), deadline, out);
  }
  /* Found when the slot became READY, not scanned again here: the
   * statuses were written on the workers' cores. */
  bool failed = s->failed;
  if (failed && l->cfg.error_policy == GF_ON_ERROR_FAIL) {
    gf_error_info e = s->err;
    give_up(l, s);
    l->c_seq++;
    l->c_pos = s->end_pos;
    l->c_k++;
    pthread_mutex_unlock(&l->mu);
    gf_error_restore(&e);
    return e.code;
  }
  if (failed) {
    s->batch.skipped = 0;
    /* Finalising can find more failures: a file nvJPEG refused that the
     * CPU cannot decode either (a worker does not finalise a slot that
     * already failed, so those files wait for this finalize). They are
     * repaired in turn, until the batch is whole. */
    do {
      repair(l, s);
      if (s->count == 0 ||
          (l->cfg.drop_last && s->count < l->cfg.batch_size)) {
        /* Nothing left of the epoch for this batch (a finalize above may
         * have submitted a copy from it). */
        gf_loader__slot_free(l, s);
        l->c_seq++;
        l->c_pos = s->end_pos;
        /* repair() left the sampler at s->epoch (a stream: at its end). */
        gf_loader__restart_at(
            l, s->epoch,
            l->stream ? s->end_pos : gf_sampler_samples_per_epoch(&l->sampler),
            s->k + 1);
        l->next_seq = l->c_seq;
        pthread_mutex_unlock(&l->mu);
        return next_impl(l, stream, 0, deadline, out);
      }
      /* Outside mu, as a worker's finalize: the slot stays REPAIRING, and
       * workers dispatch and fill the next batches meanwhile. */
      pthread_mutex_unlock(&l->mu);
      test_hook(l, "repair: finalize");
      gf_loader__finalize(l, s, GF_TRACE_TID_CONSUMER);
      pthread_mutex_lock(&l->mu);
    } while (s->fin_rc == 0 && gf_loader__slot_failed(s));
    s->state = SLOT_READY;
  } else {
    s->batch.skipped = 0;
  }
  l->c_seq++;
  l->c_pos = s->end_pos;
  l->c_k = s->k + 1;
  if (s->fin_rc < 0) {
    gf_error_info e = s->fin_err;
    give_up(l, s);
    pthread_mutex_unlock(&l->mu);
    gf_error_restore(&e);
    return e.code;
  }
  present(s);
  add(&l->cache_direct, s->ndirect); /* counted as delivered */
  s->state = SLOT_LENT;
  pthread_mutex_unlock(&l->mu);
  if (l->stage) {
    int rc = gf_stage_handoff(l->stage, s->index, stream);
    /* A loco record the GPU found malformed (its checksum matched: it was
     * written so), seen when the batch's work is already over. */
    int64_t bad = rc == 0 && s->nloco
                      ? gf_stage_loco_error(l->stage, s->index)
                      : 0;
    if (bad > 0 && (uint64_t)bad <= s->count) {
      char name[1100];
      uint64_t idx = s->indices[bad - 1];
      gf_source_name(l->src, idx, name, sizeof name);
      rc = gf_fail(GF_ECORRUPT, name, idx, GF_NO_INDEX,
                   "the GPU found its loco record malformed (its checksum "
                   "matches: it was written damaged); its pixels are zero");
    }
    if (rc < 0) {
      pthread_mutex_lock(&l->mu);
      give_up(l, s);
      pthread_mutex_unlock(&l->mu);
      return rc;
    }
  }
  add(&l->batches, 1);
  if (l->share_on)
    gf_loader__jpeg_share_batch(l);
  *out = &s->batch;
  return 0;
}

static int next_traced(gf_loader *l, void *stream, uint64_t start,
                       uint64_t deadline, gf_batch **out) {
  if (GF_LIKELY(!l->trace && !l->nvtx))
    return next_impl(l, stream, start, deadline, out);
  uint64_t t0 = now_ns();
  range_push(l, "next");
  int rc = next_impl(l, stream, start, deadline, out);
  range_pop(l);
  if (rc == -ETIMEDOUT)
    return rc; /* the call that delivers records the span */
  uint64_t t1 = now_ns();
  slot *s = rc == 0 ? (slot *)(void *)*out : NULL;
  span(l, GF_TR_NEXT, GF_TRACE_TID_CONSUMER, t0, t1, s ? s->seq : GF_NO_INDEX);
  if (s) {
    s->lent_ns = t1;
    /* Not a push: the caller may hold several batches and release them in
     * any order. */
    if (l->nvtx)
      s->nvtx_step = gf_gpu_range_start("step");
  }
  return rc;
}

int gf_loader_next_on(gf_loader *l, void *stream, gf_batch **out) {
  if (!l || !out)
    return gf_loader__cfg_fail("next", "needs a loader and an output pointer");
  return next_traced(l, stream, 0, UINT64_MAX, out);
}

int gf_loader_next_timed(gf_loader *l, void *stream, int64_t timeout_ns,
                         gf_batch **out) {
  if (!l || !out)
    return gf_loader__cfg_fail("next", "needs a loader and an output pointer");
  uint64_t deadline = UINT64_MAX, t = 0;
  if (timeout_ns >= 0) {
    t = now_ns();
    deadline = (uint64_t)timeout_ns < UINT64_MAX - t ? t + (uint64_t)timeout_ns
                                                     : UINT64_MAX - 1;
  }
  return next_traced(l, stream, t, deadline, out);
}

int gf_loader_next(gf_loader *l, gf_batch **out) {
  return gf_loader_next_on(l, NULL, out);
}

int gf_loader_release_streams(gf_loader *l, gf_batch *b,
                              void *const *streams, uint32_t n) {
  if (!l || !b)
    return gf_loader__cfg_fail("release", "needs a loader and a batch");
  if (n > GF_RELEASE_STREAMS_MAX)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release: %u streams (at most %u)", n,
                   GF_RELEASE_STREAMS_MAX);
  if (n > 0 && !streams)
    return gf_loader__cfg_fail("release", "streams is NULL with n > 0");
  uint64_t t0 = l->trace ? now_ns() : 0;
  pthread_mutex_lock(&l->mu);
  slot *s = NULL;
  for (uint32_t i = 0; i < l->nslots && !s; i++)
    if (&l->slots[i].batch == b && l->slots[i].state == SLOT_LENT)
      s = &l->slots[i];
  if (!s) {
    pthread_mutex_unlock(&l->mu);
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release: not a batch this loader has lent");
  }
  if (GF_UNLIKELY(l->trace || l->nvtx)) {
    if (s->nvtx_step) {
      gf_gpu_range_end(s->nvtx_step);
      s->nvtx_step = 0;
    }
    span(l, GF_TR_STEP, GF_TRACE_TID_CONSUMER, s->lent_ns, t0, s->seq);
    gf_loader__take_gpu_span(l, s, false);
  }
  /* The release events are recorded outside mu, which the workers take
   * for every chunk: RELEASING keeps everyone else off the slot meanwhile.
   * Whether the staging copy is done is not asked here: the worker about
   * to refill the slot asks (slot_free, worker_main). */
  s->state = SLOT_RELEASING;
  pthread_mutex_unlock(&l->mu);
  int rc = l->stage ? gf_stage_release(l->stage, s->index, streams, n) : 0;
  pthread_mutex_lock(&l->mu);
  span(l, GF_TR_RELEASE, GF_TRACE_TID_CONSUMER, t0, l->trace ? now_ns() : 0,
       s->seq);
  gf_loader__slot_free(l, s);
  /* A polling worker finds the slot by itself (loader_dispatch.c): no
   * wake-up, no system call here. */
  bool wake = !l->poller;
  pthread_mutex_unlock(&l->mu);
  /* After the unlock: a woken worker does not block on mu at once. One
   * worker, not all: the one that dispatches the freed slot wakes the
   * others (claim). */
  if (wake)
    pthread_cond_signal(&l->work_cv);
  return rc;
}

int gf_loader_release_on(gf_loader *l, gf_batch *b, void *stream) {
  return gf_loader_release_streams(l, b, &stream, 1);
}

int gf_loader_release(gf_loader *l, gf_batch *b) {
  return gf_loader_release_streams(l, b, NULL, 0);
}

int gf_loader_batch_wait_on(gf_loader *l, gf_batch *b, void *stream) {
  if (!l || !b)
    return gf_loader__cfg_fail("batch_wait_on", "needs a loader and a batch");
  pthread_mutex_lock(&l->mu);
  slot *s = NULL;
  for (uint32_t i = 0; i < l->nslots; i++)
    if (&l->slots[i].batch == b && l->slots[i].state == SLOT_LENT)
      s = &l->slots[i];
  pthread_mutex_unlock(&l->mu);
  if (!s)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "batch_wait_on: not a batch this loader has lent");
  /* The slot stays lent (only this thread releases it), and the ready
   * event is not recorded again before it is released. */
  return l->stage ? gf_stage_handoff(l->stage, s->index, stream) : 0;
}
