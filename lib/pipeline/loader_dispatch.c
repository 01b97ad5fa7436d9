/* The loader's dispatch: a free slot gets the next batch of the order,
 * workers claim chunks of the oldest filling slot, the worker loop, and
 * cancelling what was dispatched. */
#include "pipeline/loader_impl.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>

#ifdef GPUFEED_TESTING
void (*gf_loader__event_hook)(gf_loader *l, const char *event);

static void hook(gf_loader *l, const char *event) {
  if (GF_UNLIKELY(gf_loader__event_hook != NULL))
    gf_loader__event_hook(l, event);
}
#else
/* What ships has no hook: the calls vanish (always_inline: in a Debug build
 * too). */
__attribute__((always_inline)) static inline void hook(gf_loader *l,
                                                       const char *event) {
  (void)l;
  (void)event;
}
#endif

/* The share of epoch e as the streaming stage knows it: its length once
 * its end came, else unbounded (a batch is dispatched whole and cut when
 * its positions turn out past the end). */
static uint64_t stream_share(gf_loader *l, uint64_t e) {
  uint64_t n;
  return gf_stream_epoch_length(l->stream, e, &n) ? n : UINT64_MAX;
}

/* Assigns the next batch of the dispatch order to free slot s. Under mu. */
static void dispatch(gf_loader *l, slot *s) {
  uint64_t B = l->cfg.batch_size, share;
  for (;;) {
    if (l->stream) {
      share = stream_share(l, l->d_epoch);
      if (share == UINT64_MAX)
        break;
      uint64_t left = share > l->d_pos ? share - l->d_pos : 0;
      if (l->d_pos < share && !(l->cfg.drop_last && left < B))
        break;
      l->d_epoch++;
      l->d_pos = 0;
      l->d_k = 0;
      continue;
    }
    /* A resumed epoch's share differs from a full one's. */
    if (gf_sampler_epoch(&l->sampler) != l->d_epoch)
      gf_sampler_set_epoch(&l->sampler, l->d_epoch);
    share = gf_sampler_samples_per_epoch(&l->sampler);
    uint64_t left = share - l->d_pos;
    if (l->d_pos < share && !(l->cfg.drop_last && left < B))
      break;
    l->d_epoch++;
    l->d_pos = 0;
    l->d_k = 0;
  }
  uint64_t left = share - l->d_pos;
  uint32_t count = (uint32_t)(left < B ? left : B);
  s->seq = l->next_seq++;
  s->epoch = l->d_epoch;
  s->k = l->d_k++;
  s->first_pos = l->d_pos;
  s->end_pos = l->d_pos + count;
  l->d_pos += count;
  s->fseq = l->d_fseq;
  l->d_fseq += count;
  s->count = count;
  s->empty = false;
  for (uint32_t j = 0; j < count; j++) {
    /* A stream's samples are known once taken (the worker fills them). */
    s->indices[j] =
        l->stream ? GF_NO_INDEX : gf_sampler_get(&l->sampler, s->first_pos + j);
    s->status[j] = SAMPLE_PENDING;
  }
  s->claimed = 0;
  s->busy = 0;
  s->done = 0;
  s->err_pos = UINT32_MAX;
  atomic_store(&s->cancel, 0);
  s->state = SLOT_FILLING;
}

/* Finds a chunk to work on, dispatching a batch when a slot is free. Under
 * mu. Returns the slot or NULL. A free slot whose staging memory the GPU
 * may still copy out of (copy_wait) is not dispatched: the numbers of such
 * slots go to ask[] (*nask of them, at most l->nslots), oldest batch
 * first, for the caller to ask the GPU outside mu. The copies run on one
 * stream, roughly in batch order: the oldest is the likeliest to be over,
 * and asking only about the first slot found (as once) could wait on a
 * copy queued behind one already over. */
static slot *claim(gf_loader *l, uint32_t *j0, uint32_t *n, uint32_t *ask,
                   uint32_t *nask) {
  slot *best = NULL;
  *nask = 0;
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if (s->state == SLOT_FILLING && s->claimed < s->count &&
        (!best || s->seq < best->seq))
      best = s;
  }
  if (!best && !l->paused) {
    for (uint32_t i = 0; i < l->nslots; i++)
      if (l->slots[i].state == SLOT_FREE) {
        if (l->slots[i].copy_wait) {
          /* Insertion by seq: a few slots at most. */
          uint32_t k = (*nask)++;
          while (k && l->slots[ask[k - 1]].seq > l->slots[i].seq) {
            ask[k] = ask[k - 1];
            k--;
          }
          ask[k] = i;
          continue;
        }
        best = &l->slots[i];
        dispatch(l, best);
        /* The other idle workers help fill it: woken here, by the worker
         * that dispatched, not by the consumer (release wakes only one),
         * so that giving a batch back costs the consumer one wake-up, not
         * one per idle worker. */
        if (best->count > l->chunk)
          pthread_cond_broadcast(&l->work_cv);
        break;
      }
  }
  if (!best)
    return NULL;
  uint32_t left = best->count - best->claimed;
  *j0 = best->claimed;
  *n = left < l->chunk ? left : l->chunk;
  best->claimed += *n;
  best->busy++;
  return best;
}

/* A streaming slot whose last positions came past their epoch's end
 * (a suffix: the stage hands positions in order) keeps the ones before;
 * with none left, or fewer than a batch under drop_last, it is empty.
 * Under mu. */
static void cut_past_end(gf_loader *l, slot *s) {
  uint32_t n = 0;
  while (n < s->count && s->status[n] != SAMPLE_PAST_END)
    n++;
  if (n == s->count)
    return;
  s->count = n;
  s->end_pos = s->first_pos + n;
  if (n == 0 || (l->cfg.drop_last && n < l->cfg.batch_size))
    s->empty = true;
}

bool gf_loader__slot_failed(const slot *s) {
  for (uint32_t j = 0; j < s->count; j++)
    if (s->status[j] != 0)
      return true;
  return false;
}

/* Registers the worker's read buffer with its reader: fixed buffers save
 * pinning its pages on every read; a kernel that refuses (RLIMIT_MEMLOCK)
 * only costs that saving. */
static void register_read_buffer(worker *w) {
  if (!w->reader)
    return; /* a remote source: the fetch stage reads */
  struct iovec iov = {w->rbuf, w->rbuf_len};
  if (iov.iov_len <= (1ull << 30) && gf_reader_register(w->reader, &iov, 1) < 0)
    gf_log(GF_LOG_INFO, "read buffers not registered: %s",
           gf_last_error()->message);
}

/* The worker's read buffer, before its first read: create only reserved
 * its address space; its pages are made here, on the worker's own thread
 * (the workers do it in parallel, not one after another inside create),
 * as transparent huge pages where the kernel allows (fewer pages to fault
 * and to pin), and it is registered with the reader. */
static void prepare_read_buffer(worker *w) {
  gf_loader *l = w->l;
  uint64_t t0 = now_ns();
#ifdef MADV_HUGEPAGE
  if (w->rbuf_len >= (2u << 20))
    (void)madvise(w->rbuf, w->rbuf_len, MADV_HUGEPAGE); /* advice only */
#endif
  register_read_buffer(w);
  gf_log(GF_LOG_DEBUG, "worker %u: read buffer of %zu bytes ready in %.1f ms",
         (unsigned)(w - l->workers), w->rbuf_len,
         (double)(now_ns() - t0) / 1e6);
  hook(l, "read buffer");
}

/* A fresh reader for a worker whose reader failed as a whole (run_chunk
 * destroyed it): io.h wants the failed one gone, and a fresh one is the
 * only way to read again. Made like create's, on the worker's thread,
 * before its next chunk. When it cannot be made, reader_err keeps why:
 * that chunk's reads fail with it (an error the policy handles, never a
 * stopped worker), and the next chunk tries again. */
static void renew_reader(worker *w) {
  gf_loader *l = w->l;
  unsigned id = (unsigned)(w - l->workers);
  if (gf_reader_create(&l->reader_opts, &w->reader) < 0) {
    /* Logged once a run of failures, not once a chunk. */
    if (!w->reader_err.code)
      gf_log(GF_LOG_WARN,
             "worker %u: no fresh reader to replace the one that failed "
             "(its reads fail until one is made): %s",
             id, gf_last_error()->message);
    w->reader_err = *gf_last_error();
    hook(l, "reader refused");
    return;
  }
  w->reader_err.code = 0;
  register_read_buffer(w);
  gf_log(GF_LOG_INFO, "worker %u: a fresh %s reader replaces the failed one",
         id, gf_reader_backend(w->reader));
  hook(l, "reader replaced");
}

/* The poller: one idle worker at a time waits for work with a timeout
 * instead of for a wake-up, looking again every GF_POLL_MIN_NS, the
 * interval doubling up to GF_POLL_MAX_NS while nothing comes, for at most
 * GF_POLL_FOR_NS after its last work (then it waits as the others do, and
 * release() wakes one). While it polls, release() frees a slot with no
 * wake-up, so the consumer makes no system call (a futex wake costs it
 * 2-3 us); the poller claims the slot within its interval and wakes the
 * others as it dispatches (claim). Its cost: at most 1 / GF_POLL_MAX_NS
 * wake-ups a second on one core, for a moment after the work stops. */
#define GF_POLL_MIN_NS 50000u
#define GF_POLL_MAX_NS 200000u
#define GF_POLL_FOR_NS 100000000u

void *gf_loader__worker_main(void *arg) {
  worker *w = arg;
  gf_loader *l = w->l;
  if (l->worker_batch) {
    /* Advice to the scheduler: refused (a seccomp policy), the worker runs
     * as it would have. */
    struct sched_param sp = {0};
    int e = pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    if (e)
      gf_log(GF_LOG_DEBUG, "worker %u: SCHED_BATCH refused (%s)",
             (unsigned)(w - l->workers), strerror(e));
  }
  prepare_read_buffer(w);
  uint64_t last_work = now_ns(), poll_ns = GF_POLL_MIN_NS;
  pthread_mutex_lock(&l->mu);
  while (!l->stop) {
    uint32_t j0, n;
    uint32_t nask;
    slot *s = claim(l, &j0, &n, w->ask, &nask);
    if (!s && nask) {
      /* Whether the GPU is done copying out of the slots given back with
       * their copies maybe still queued: asked by the worker that would
       * refill one, outside mu, not by release, oldest batch first, until
       * one is over. The generation tells whether a slot was refilled and
       * given back again meanwhile. */
      uint64_t gen[GF_LOADER_MAX_SLOTS];
      for (uint32_t k = 0; k < nask; k++)
        gen[k] = l->slots[w->ask[k]].free_gen;
      pthread_mutex_unlock(&l->mu);
      uint32_t k = 0;
      while (k < nask && !gf_stage_copy_done(l->stage, w->ask[k]))
        k++;
      pthread_mutex_lock(&l->mu);
      if (k < nask) {
        slot *a = &l->slots[w->ask[k]];
        if (a->state == SLOT_FREE && a->free_gen == gen[k])
          a->copy_wait = false;
        continue; /* claim it now, or look again */
      }
    }
    if (!s) {
      uint64_t t0 = now_ns();
      if (nask) {
        /* Rare (a batch given back before its copy ran): nothing will
         * signal the copy's end, so ask again soon. */
        cond_wait_ns(&l->work_cv, &l->mu, 200000);
      } else if (!l->poller && t0 - last_work < GF_POLL_FOR_NS) {
        l->poller = true;
        cond_wait_ns(&l->work_cv, &l->mu, poll_ns);
        l->poller = false;
        poll_ns = poll_ns * 2 < GF_POLL_MAX_NS ? poll_ns * 2 : GF_POLL_MAX_NS;
      } else {
        pthread_cond_wait(&l->work_cv, &l->mu);
      }
      add(&l->st_read.wait_ns, now_ns() - t0);
      continue;
    }
    poll_ns = GF_POLL_MIN_NS;
    pthread_mutex_unlock(&l->mu);
    if (GF_UNLIKELY(!w->reader) && !l->fetch && !l->stream)
      renew_reader(w);
    gf_loader__run_chunk(w, s, j0, n);
    last_work = now_ns();
    pthread_mutex_lock(&l->mu);
    s->busy--;
    s->done += n;
    if (s->state == SLOT_CANCELLED) {
      if (s->busy == 0)
        pthread_cond_broadcast(&l->ready_cv);
    } else if (s->done == s->count) {
      if (l->stream)
        cut_past_end(l, s);
      /* Finalise outside the lock; busy keeps cancel_all waiting. */
      s->busy++;
      bool failed = !s->empty && gf_loader__slot_failed(s);
      pthread_mutex_unlock(&l->mu);
      if (!failed && !s->empty) {
        gf_loader__finalize(l, s, w->tid);
        failed = gf_loader__slot_failed(s); /* a file nvJPEG refused, say */
      }
      hook(l, "ready");
      pthread_mutex_lock(&l->mu);
      s->busy--;
      if (s->state == SLOT_CANCELLED) {
        if (s->busy == 0)
          pthread_cond_broadcast(&l->ready_cv);
      } else {
        s->failed = failed;
        s->state = SLOT_READY;
        pthread_cond_broadcast(&l->ready_cv);
        if (GF_UNLIKELY(!l->first_ready)) {
          /* The first batch is on its way (in GPU mode, submitted): the
           * pinning thread may take the driver now (loader_create.c). */
          l->first_ready = true;
          pthread_cond_broadcast(&l->work_cv);
        }
      }
    }
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* Cancels every slot that is filling or ready (not lent) and waits until no
 * worker touches them. Under mu. */
void gf_loader__cancel_all(gf_loader *l) {
  /* Waiting below releases mu: without the pause a worker could dispatch
   * a batch from the old cursor meanwhile. restart_at() lifts it. */
  l->paused = true;
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    if (s->state == SLOT_FILLING || s->state == SLOT_READY) {
      s->state = SLOT_CANCELLED;
      atomic_store(&s->cancel, 1);
    }
  }
  for (uint32_t i = 0; i < l->nslots; i++) {
    slot *s = &l->slots[i];
    while (s->state == SLOT_CANCELLED && s->busy > 0)
      pthread_cond_wait(&l->ready_cv, &l->mu);
    if (s->state == SLOT_CANCELLED)
      gf_loader__slot_free(l, s);
  }
}

void gf_loader__slot_free(gf_loader *l, slot *s) {
  s->state = SLOT_FREE;
  s->copy_wait = l->stage != NULL;
  s->free_gen++;
}

uint32_t gf_loader__lent_count(const gf_loader *l) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < l->nslots; i++)
    n += l->slots[i].state == SLOT_LENT ||
         l->slots[i].state == SLOT_RELEASING;
  return n;
}
