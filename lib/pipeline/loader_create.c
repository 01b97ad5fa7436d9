/* The loader's create and destroy: the source, sampler, cache, GPU stage,
 * batch slots, workers and their readers; O_DIRECT descriptors; the
 * cache's pinning callbacks; the thread pinning the staging slots. */
#include "pipeline/loader_impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* n bytes aligned to `align` (a power of two); NULL on failure. The size
 * is what the plan counts: no rounding. */
static void *aligned_alloc_n(size_t align, uint64_t n) {
  void *p = NULL;
  if (n > SIZE_MAX || posix_memalign(&p, align, n ? (size_t)n : 1) != 0)
    return NULL;
  return p;
}

/* A slot's per-sample table of n entries, counted in *a. */
static void *table(gf_loader_allocs *a, uint64_t n, size_t each) {
  void *p = calloc(n, each);
  if (p)
    a->slot_table_bytes += n * each;
  return p;
}

static int alloc_slot(gf_loader *l, slot *s, uint32_t index) {
  uint64_t B = l->cfg.batch_size, bytes;
  if (!gf_mul_u64(B, l->stride, &bytes))
    return -ENOMEM;
  s->index = index;
  gf_loader_allocs *a = &l->allocs;
  a->slots++;
  /* GPU mode: the stage's pinned staging memory; host mode: our own. */
  if (l->stage) {
    s->data = gf_stage_host(l->stage, index);
  } else {
    s->data = aligned_alloc_n(4096, bytes);
    a->slot_bytes += bytes;
  }
  s->filtered = table(a, B, 1);
  s->regions = table(a, B, sizeof *s->regions);
  s->params = table(a, B, sizeof *s->params);
  if (!l->stage && !l->identity) {
    s->out_host = aligned_alloc_n(64, l->out_cap);
    if (!s->out_host)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch output of %llu bytes",
                     (unsigned long long)l->out_cap);
    a->slot_out_bytes += l->out_cap;
  }
  if (l->direct) {
    s->dsrc_dev = table(a, B, sizeof *s->dsrc_dev);
    s->dsrc_host = table(a, B, sizeof *s->dsrc_host);
    if (!s->dsrc_dev || !s->dsrc_host)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's gather list");
  }
  if (l->loco_gpu) {
    s->loco = table(a, B, sizeof *s->loco);
    if (!s->loco)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's loco table");
  }
  /* JPEG on the GPU as the plan has it (whether or not the decoder then
   * opened: the tables are the plan's). */
  if (l->gpu_jpeg_tables) {
    s->gpu_len = table(a, B, sizeof *s->gpu_len);
    s->jimg = table(a, B, sizeof *s->jimg);
    s->joff = table(a, B, sizeof *s->joff);
    s->jpos = table(a, B, sizeof *s->jpos);
    if (!s->gpu_len || !s->jimg || !s->joff || !s->jpos)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's GPU JPEG tables");
  }
  /* GPU mode: a batch whose samples fill little of their places is
   * gathered to the device sample by sample (loader_finalize.c). */
  if (l->gather_tables || l->direct || l->gpu_jpeg_tables) {
    s->segs = table(a, B, sizeof *s->segs);
    if (!s->segs)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's gather list");
  }
  /* Tar shards' asked fields: host memory whatever the mode (they never
   * go to the device). */
  if (l->nfields) {
    s->nfields = l->nfields;
    s->field_bytes = l->field_bytes;
    s->field_len = table(a, B * l->nfields, sizeof *s->field_len);
    uint64_t fb = B * l->nfields * l->field_bytes; /* sized: no overflow */
    s->fields = fb <= SIZE_MAX ? malloc((size_t)fb) : NULL;
    if (!s->field_len || !s->fields)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a batch slot's field places (%llu "
                     "bytes)",
                     (unsigned long long)fb);
    a->slot_field_bytes += fb;
  }
  s->shapes = table(a, B, sizeof *s->shapes);
  s->offsets = table(a, B, sizeof *s->offsets);
  s->labels = table(a, B, sizeof *s->labels);
  s->indices = table(a, B, sizeof *s->indices);
  s->status = table(a, B, sizeof *s->status);
  if (!s->data || !s->shapes || !s->offsets || !s->labels || !s->indices ||
      !s->status || !s->filtered || !s->regions || !s->params)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a batch slot of %llu bytes",
                   (unsigned long long)bytes);
  /* GPU mode: slot 0 was pinned by the stage's create, the others are
   * pinned by the pinning thread before any worker fills them. */
  s->state = l->stage && index > 0 ? SLOT_PINNING : SLOT_FREE;
  s->err_pos = UINT32_MAX;
  return 0;
}

/* GPU mode: pins staging slots 1.. in order once the first batch, loaded
 * into slot 0, is on its way to the device (pinning costs tens of ms per
 * 100 MB: create pays for slot 0 only; pinning while the first batch loads
 * would slow it: the driver's lock against its submit, the address space's
 * lock against the workers' page faults) and hands each slot to the
 * workers as it is done. A failed pin leaves that slot and the ones after
 * it out of use: the next call of next() returns the error, and the loader
 * goes on with the slots it has (no batch was dispatched to them, so
 * nothing is lost). destroy stops it, waiting or between two slots, and
 * joins it. */
static void *pinner_main(void *arg) {
  gf_loader *l = arg;
  pthread_mutex_lock(&l->mu);
  while (!l->stop && !l->first_ready)
    pthread_cond_wait(&l->work_cv, &l->mu);
  pthread_mutex_unlock(&l->mu);
  uint64_t t0 = now_ns();
  uint32_t i = 1;
  for (; i < l->nslots; i++) {
    pthread_mutex_lock(&l->mu);
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    if (stop)
      break;
    int rc = gf_stage_pin(l->stage, i);
    if (rc < 0) {
      const gf_error_info *e = gf_last_error();
      char why[sizeof e->message];
      gf_strlcpy(why, e->code == rc ? e->message : gf_strerror(rc),
                 sizeof why);
      gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
              "%s; the loader goes on with %u of its %u batch slots", why, i,
              l->nslots);
      gf_log(GF_LOG_ERROR, "%s", gf_last_error()->message);
      pthread_mutex_lock(&l->mu);
      l->unpinned = l->nslots - i;
      l->pin_err = *gf_last_error();
      l->pin_err_pending = true;
      pthread_cond_broadcast(&l->ready_cv);
      pthread_mutex_unlock(&l->mu);
      break;
    }
    pthread_mutex_lock(&l->mu);
    l->slots[i].state = SLOT_FREE;
    pthread_cond_broadcast(&l->work_cv);
    pthread_mutex_unlock(&l->mu);
  }
  if (i > 1)
    gf_log(GF_LOG_INFO, "staging slots 1-%u of %u pinned in the background "
                        "in %.1f ms",
           i - 1, l->nslots, (double)(now_ns() - t0) / 1e6);
  return NULL;
}

static void free_slot(gf_loader *l, slot *s) {
  if (!l->stage)
    free(s->data);
  free(s->filtered);
  free(s->regions);
  free(s->params);
  free(s->out_host);
  free(s->shapes);
  free(s->offsets);
  free(s->labels);
  free(s->indices);
  free(s->status);
  free(s->dsrc_dev);
  free(s->dsrc_host);
  free(s->segs);
  free(s->gpu_len);
  free(s->loco);
  free(s->jimg);
  free(s->joff);
  free(s->jpos);
  free(s->field_len);
  free(s->fields);
}

static void close_direct(gf_loader *l) {
  for (uint32_t i = 0; i < l->ndirect_objs; i++)
    gf_object_close(l->direct_objs[i]);
  free(l->direct_objs);
  l->direct_objs = NULL;
  l->ndirect_objs = 0;
}

/* O_DIRECT: the source's objects opened a second time with O_DIRECT;
 * reads are widened to the alignment and land in the aligned read
 * buffers. A filesystem that refuses O_DIRECT (tmpfs) keeps buffered
 * reads, said in the log. */
static int open_direct(gf_loader *l) {
  uint32_t align = gf_source_alignment(l->src);
  uint32_t n = gf_source_objects(l->src);
  gf_storage *st = gf_source_storage(l->src);
  const char *why = NULL;
  if (!(gf_storage_caps(st) & GF_STORAGE_FD))
    why = "the source is not on a local file system";
  else if (!n)
    why = "the source's samples are files of their own (an image folder)";
  else if (align < 512)
    why = "the dataset was built without --align 4096";
  if (why) {
    gf_log(GF_LOG_WARN, "io_direct ignored: %s", why);
    return 0;
  }
  l->direct_objs = calloc(n, sizeof *l->direct_objs);
  if (!l->direct_objs)
    return -ENOMEM;
  l->ndirect_objs = n;
  for (uint32_t i = 0; i < n; i++) {
    char name[64];
    const char *nm = gf_source_object_name(l->src, i, name, sizeof name);
    if (!nm || gf_object_open(st, nm, GF_OBJ_DIRECT, &l->direct_objs[i]) < 0) {
      gf_log(GF_LOG_WARN, "io_direct ignored: %s", gf_last_error()->message);
      gf_error_clear();
      close_direct(l);
      return 0;
    }
  }
  /* The read buffers were sized for it (gf_loader_size). */
  l->direct_align = align;
  return 0;
}

/* The host cache's pinner in GPU mode. */
static int pin_cb(void *ctx, void *addr, size_t len, uint64_t *dev) {
  const gf_loader *l = ctx;
  int rc = gf_gpu_pin(l->device, addr, len, dev);
  if (rc < 0)
    gf_log(GF_LOG_WARN, "cache: %s (its samples are copied through the "
                        "staging slots instead)",
           gf_last_error()->message);
  return rc;
}
static void unpin_cb(void *ctx, void *addr, size_t len) {
  const gf_loader *l = ctx;
  (void)len;
  gf_gpu_unpin(l->device, addr);
}

/* The streaming stage learned an epoch's length: a worker about to
 * dispatch looks again (called outside the stage's lock and mu). */
static void stream_notify(void *ctx) {
  gf_loader *l = ctx;
  pthread_mutex_lock(&l->mu);
  pthread_cond_broadcast(&l->work_cv);
  pthread_mutex_unlock(&l->mu);
}

int gf_loader_create(const gf_loader_config *cfg, gf_loader **out) {
  if (!out)
    return gf_loader__cfg_fail("out", "is NULL");
  *out = NULL;
  /* As GPUFEED_IO's is, when the reader is made: a setting the user
   * mistyped is an error, not silently the default. */
  int rc = gf_log_env_check();
  if (rc < 0)
    return rc;
  uint64_t t_create = now_ns();
  gf_loader *l = calloc(1, sizeof *l);
  if (!l)
    return -ENOMEM;
  rc = gf_loader__resolve_config(cfg, &l->cfg);
  if (rc < 0) {
    free(l);
    return rc;
  }
  l->worker_batch = l->cfg.worker_sched == GF_WORKER_SCHED_BATCH;
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->stat_mu, NULL);
  pthread_cond_init(&l->work_cv, NULL);
  pthread_cond_init(&l->ready_cv, NULL);
  /* From the resolved copy: nothing past the caller's struct_size. */
  l->source_path = strdup(l->cfg.source ? l->cfg.source : "");
  l->labels_path = l->cfg.labels_file ? strdup(l->cfg.labels_file) : NULL;
  l->cfg.source = l->source_path;
  l->cfg.labels_file = l->labels_path;
  gf_loader__decode_opts_of(&l->cfg, &l->dopts);
  l->jpeg_window = gf_loader__jpeg_windows(&l->cfg);

  if ((rc = gf_source_open(l->source_path, l->labels_path, l->cfg.shards,
                           l->cfg.remote, &l->src)) < 0)
    goto fail;
  uint64_t t_source = now_ns();
  uint64_t n = gf_source_count(l->src);
  const bool stream = gf_source_caps(l->src) & GF_SOURCE_STREAM;
  gf_sampler_config sc = GF_SAMPLER_CONFIG_INIT;
  /* A stream's order is its stage's (stream.h); the sampler, never asked
   * for a position then, is made for one batch a rank. */
  sc.n = stream
             ? (uint64_t)l->cfg.batch_size * (l->cfg.world ? l->cfg.world : 1)
             : n;
  sc.seed = l->cfg.seed;
  sc.order = l->cfg.order;
  sc.partition = l->cfg.partition;
  sc.rank = l->cfg.rank;
  sc.world = l->cfg.world;
  sc.batch_size = l->cfg.batch_size;
  sc.drop_last = l->cfg.drop_last;
  sc.block_size = l->cfg.block_size;
  if ((rc = gf_sampler_init(&l->sampler, &sc)) < 0)
    goto fail;
  l->share = gf_sampler_samples_per_epoch(&l->sampler);
  if (l->share == 0 || gf_sampler_batches_per_epoch(&l->sampler) == 0) {
    char why[320];
    if (l->share == 0)
      snprintf(why, sizeof why,
               "its share of the epoch is empty (%u ranks share %llu "
               "samples): use at most %llu ranks",
               l->cfg.world, (unsigned long long)n, (unsigned long long)n);
    else
      snprintf(why, sizeof why,
               "its share is %llu samples, less than one batch, and "
               "drop_last drops the last partial batch (each rank needs at "
               "least one full batch): use a batch of at most %llu, or set "
               "drop_last 0 to keep partial batches",
               (unsigned long long)l->share, (unsigned long long)l->share);
    rc = gf_fail(-EINVAL, gf_storage_display(gf_source_storage(l->src)),
                 GF_NO_INDEX, GF_NO_INDEX,
                 "rank %u of %u gets no batch of %u from %llu samples: %s",
                 l->cfg.rank, l->cfg.world, l->cfg.batch_size,
                 (unsigned long long)n, why);
    goto fail;
  }

  if (l->cfg.cache_bytes &&
      (rc = gf_cache_create(l->cfg.cache_bytes, n, &l->cache)) < 0)
    goto fail;

  /* The device: GPU mode when one is asked for or, under AUTO, found. */
  l->device = GF_DEVICE_CPU;
  if (l->cfg.device != GF_DEVICE_CPU) {
    char why[256];
    if (gf_stage_probe(l->cfg.device, why, sizeof why)) {
      l->device = l->cfg.device < 0 ? 0 : l->cfg.device;
    } else if (l->cfg.device == GF_DEVICE_AUTO) {
      gf_strlcpy(l->host_reason, why, sizeof l->host_reason);
      gf_log(GF_LOG_INFO, "host mode: %s", why);
    } else {
      rc = gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loader config: device %d: %s", l->cfg.device, why);
      goto fail;
    }
  }
  /* Every size from the one function gf_loader_plan prints. */
  gf_loader_sizes z;
  if ((rc = gf_loader_size(&l->cfg, l->src, l->device >= 0, &z)) < 0)
    goto fail;
  l->stride = z.stride;
  l->stored_cap = z.stored_cap;
  l->out_cap = z.out_cap;
  l->identity = z.identity;
  l->cfg.threads = z.threads;
  l->cfg.prefetch = z.prefetch;
  l->chunk = z.chunk;
  l->nslots = z.slots;
  l->nfields = z.nfields;
  l->field_bytes = z.field_bytes;
  gf_strlcpy(l->tuning, z.tuning, sizeof l->tuning);
  if (l->cfg.io_direct && (rc = open_direct(l)) < 0)
    goto fail;
  uint64_t t_sizing = now_ns();
  if (l->device >= 0) {
    gf_stage_config sc2;
    memset(&sc2, 0, sizeof sc2);
    sc2.device = l->device;
    sc2.slots = l->nslots;
    sc2.max_samples = l->cfg.batch_size;
    /* No worker runs yet: slot 0's pages may take the workers' cores. */
    sc2.pin_threads = l->cfg.threads;
    sc2.in_bytes = l->cfg.batch_size * l->stride;
    sc2.out_bytes = l->out_cap;
    sc2.pool_bytes = z.device_pool_bytes;
    sc2.loco = z.loco;
    if ((rc = gf_stage_create(&sc2, &l->stage)) < 0)
      goto fail;
    l->allocs.stage_slots = sc2.slots;
    l->allocs.stage_in_bytes = sc2.in_bytes;
    l->nvtx = true;
    if (l->cache && l->cfg.cache_direct == GF_CACHE_DIRECT_AUTO) {
      gf_cache_pinner pn = {pin_cb, unpin_cb, l, 0};
      if ((rc = gf_cache_set_pinner(l->cache, &pn)) < 0)
        goto fail;
      l->direct = true;
      gf_log(GF_LOG_INFO, "cache: pinned as it fills; cached samples go to "
                          "the device from it (%s)",
             gf_stage_direct_copy(l->stage));
    }
  }
  /* JPEG on the GPU: the decoder opens on the stage's copy stream, or JPEG
   * stays on the CPU and the stats say why. */
  l->gpu_jpeg_tables = z.jpeg_gpu_mode != 0;
  l->gather_tables = l->device >= 0; /* as gf_loader_size planned them */
  l->loco_gpu = z.loco;
  if (l->stage)
    gf_loader__jpeg_gpu_open(l, &z);
  else
    gf_strlcpy(l->jpeg_gpu_why, z.jpeg_gpu_why, sizeof l->jpeg_gpu_why);
  uint64_t t_stage = now_ns();
  l->slots = calloc(l->nslots, sizeof *l->slots);
  if (!l->slots) {
    rc = -ENOMEM;
    goto fail;
  }
  for (uint32_t i = 0; i < l->nslots; i++)
    if ((rc = alloc_slot(l, &l->slots[i], i)) < 0)
      goto fail;
  uint64_t t_slots = now_ns();

  l->nworkers = l->cfg.threads;
  if (l->cfg.trace_events) {
    if ((rc = gf_trace_create(l->cfg.trace_events, l->nworkers, t_create,
                              l->stage != NULL, &l->trace)) < 0)
      goto fail;
    if (l->stage && (rc = gf_stage_timing_enable(l->stage)) < 0)
      goto fail;
  }
  if (l->stage && l->nslots > 1) {
    if ((rc = -pthread_create(&l->pinner, NULL, pinner_main, l)) < 0) {
      gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
              "cannot start the staging slots' pinning thread");
      goto fail;
    }
    l->pinner_started = true;
  }
  l->workers = calloc(l->nworkers, sizeof *l->workers);
  if (!l->workers) {
    rc = -ENOMEM;
    goto fail;
  }
  gf_reader_opts *ro = &l->reader_opts;
  *ro = (gf_reader_opts)GF_READER_OPTS_INIT;
  ro->backend = (int32_t)l->cfg.io_backend;
  ro->queue_depth = l->chunk;
  ro->max_pending = l->chunk;
  ro->pread_threads = 2;
  ro->direct = l->direct_objs != NULL;
  ro->direct_align = l->direct_align;
  ro->storage = gf_source_storage(l->src);
  if (ro->storage->ops->engine)
    ro->backend = GF_IO_AUTO; /* its engine reads, whatever io_backend says */
  for (uint32_t i = 0; i < l->nworkers; i++) {
    worker *w = &l->workers[i];
    w->l = l;
    w->tid = GF_TRACE_TID_WORKER(i);
    /* Only its address space here (the plan and an ENOMEM stay with
     * create); the worker makes its pages and registers it before its
     * first read (loader_dispatch.c). Huge-page aligned when it holds
     * one, so that all of it can be transparent huge pages. */
    if (z.remote)
      continue; /* the fetch stage reads: no reader, no read buffer */
    if (z.stream) {
      /* The stage reads: a buffer for the sample taken, no reader. */
      if (!(w->rbuf = aligned_alloc_n(4096, z.read_buffer_bytes))) {
        rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cannot allocate a read buffer of %llu bytes",
                     (unsigned long long)z.read_buffer_bytes);
        goto fail;
      }
      w->rbuf_len = (size_t)z.read_buffer_bytes;
      l->allocs.read_buffers++;
      l->allocs.read_buffer_bytes += z.read_buffer_bytes;
      continue;
    }
    uint64_t rb = 0, len = 0;
    bool ok = gf_mul_u64(l->chunk, l->stored_cap, &rb) && rb <= SIZE_MAX - 4095;
    if (ok)
      len = (rb + 4095) / 4096 * 4096;
    if (!ok ||
        !(w->rbuf = aligned_alloc_n(len >= (2u << 20) ? (2u << 20) : 4096,
                                    len))) {
      rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a read buffer of %llu bytes",
                   (unsigned long long)rb);
      goto fail;
    }
    w->rbuf_len = (size_t)len;
    l->allocs.read_buffers++;
    l->allocs.read_buffer_bytes += len;
    if ((rc = gf_reader_create(ro, &w->reader)) < 0)
      goto fail;
  }
  if (z.remote) {
    gf_fetch_config fc = {
        .src = l->src,
        .batch_size = l->cfg.batch_size,
        .drop_last = l->cfg.drop_last,
        .budget = z.fetch_budget,
        .requests = z.fetch_requests,
        .positions = z.fetch_positions,
        .order = l->cfg.order,
        .block_size = l->cfg.block_size,
        .cache = l->cache,
        .trace = l->trace,
    };
    if ((rc = gf_fetch_create(&fc, &l->sampler, l->d_epoch, l->d_pos,
                              &l->fetch)) < 0)
      goto fail;
    l->allocs.fetch_bytes = z.fetch_budget + z.fetch_table_bytes;
    l->allocs.fetch_budget = z.fetch_budget;
    snprintf(l->io_backend, sizeof l->io_backend, "fetch (%s)",
             gf_source_storage(l->src)->ops->name);
  } else if (z.stream) {
    gf_stream_config stc;
    if ((rc = gf_loader_stream_config(&l->cfg, &z, l->src, &stc)) < 0)
      goto fail;
    stc.notify = stream_notify;
    stc.notify_ctx = l;
    if ((rc = gf_stream_create(&stc, l->d_epoch, l->d_pos, &l->stream)) < 0)
      goto fail;
    l->allocs.stream_bytes = z.stream_arena + z.stream_table_bytes;
    snprintf(l->io_backend, sizeof l->io_backend, "stream (%s)",
             gf_source_storage(l->src)->ops->name);
  } else {
    gf_strlcpy(l->io_backend, gf_reader_backend(l->workers[0].reader),
               sizeof l->io_backend);
    gf_strlcpy(l->io_fallback, gf_reader_fallback_reason(l->workers[0].reader),
               sizeof l->io_fallback);
  }
  for (uint32_t i = 0; i < l->nworkers; i++) {
    if ((rc = -pthread_create(&l->workers[i].thread, NULL,
                              gf_loader__worker_main, &l->workers[i])) < 0) {
      gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
              "cannot start worker thread %u", i);
      goto fail;
    }
    l->workers[i].started = true;
  }
  /* Create's phases, each as ms since create began (GPUFEED_LOG=debug). */
  gf_log(GF_LOG_DEBUG, "create: source %.1f ms, sizing %.1f, stage %.1f, "
                       "slots %.1f, workers %.1f (ms since create began; "
                       "%u workers, %u slots)",
         (double)(t_source - t_create) / 1e6,
         (double)(t_sizing - t_create) / 1e6,
         (double)(t_stage - t_create) / 1e6,
         (double)(t_slots - t_create) / 1e6,
         (double)(now_ns() - t_create) / 1e6, l->nworkers, l->nslots);
  *out = l;
  return 0;
fail:
  {
    /* destroy() may overwrite the calling thread's error: put back the
     * one that failed, as it was (its message already names the file,
     * sample and offset; raising it again would name them twice). */
    gf_error_info saved = *gf_last_error();
    gf_loader_destroy(l);
    if (saved.code == rc)
      gf_error_restore(&saved);
  }
  return rc;
}

void gf_loader_destroy(gf_loader *l) {
  if (!l)
    return;
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  for (uint32_t i = 0; i < l->nslots && l->slots; i++)
    atomic_store(&l->slots[i].cancel, 1);
  pthread_cond_broadcast(&l->work_cv);
  pthread_mutex_unlock(&l->mu);
  /* It stops before its next slot; the one it pins meanwhile finishes. */
  if (l->pinner_started)
    pthread_join(l->pinner, NULL);
  /* Workers waiting for a read come back at once. */
  if (l->fetch)
    gf_fetch_shutdown(l->fetch);
  if (l->stream)
    gf_stream_shutdown(l->stream);
  for (uint32_t i = 0; i < l->nworkers && l->workers; i++) {
    worker *w = &l->workers[i];
    if (w->started)
      pthread_join(w->thread, NULL);
    gf_reader_destroy(w->reader);
    free(w->rbuf);
  }
  free(l->workers);
  gf_fetch_destroy(l->fetch);
  gf_stream_destroy(l->stream);
  for (uint32_t i = 0; i < l->nslots && l->slots; i++)
    free_slot(l, &l->slots[i]);
  free(l->slots);
  gf_jpeg_checked_free(&l->jpeg_checked);
  /* After the workers: the stage owns the staging memory they wrote. */
  gf_stage_destroy(l->stage);
  close_direct(l);
  gf_trace_destroy(l->trace);
  gf_cache_destroy(l->cache);
  gf_source_close(l->src);
  free(l->source_path);
  free(l->labels_path);
  pthread_cond_destroy(&l->work_cv);
  pthread_cond_destroy(&l->ready_cv);
  pthread_mutex_destroy(&l->mu);
  pthread_mutex_destroy(&l->stat_mu);
  free(l);
}
