/* The loader's statistics, its trace file and its device pool. */
#include "pipeline/loader_impl.h"
#include "pipeline/loader_plan.h"

static void stage_get(const stage_atomic *a, gf_stage_stats *o) {
  o->samples = atomic_load_explicit(&a->samples, memory_order_relaxed);
  o->bytes = atomic_load_explicit(&a->bytes, memory_order_relaxed);
  o->busy_ns = atomic_load_explicit(&a->busy_ns, memory_order_relaxed);
  o->wait_ns = atomic_load_explicit(&a->wait_ns, memory_order_relaxed);
}

gf_device_pool *gf_loader_device_pool(gf_loader *l) {
  return l && l->stage ? gf_stage_pool(l->stage) : NULL;
}

int gf_loader_stats_get(gf_loader *l, gf_loader_stats *st) {
  if (!l || !st)
    return gf_loader__cfg_fail("stats", "needs a loader and a stats struct");
  int rc = gf_check_struct_size(st->struct_size, sizeof *st, "gf_loader_stats");
  if (rc < 0)
    return rc;
  gf_loader_stats o;
  memset(&o, 0, sizeof o);
  o.struct_size = st->struct_size;
  o.threads = l->nworkers;
  stage_get(&l->st_read, &o.read);
  stage_get(&l->st_decode, &o.decode);
  stage_get(&l->st_cache, &o.cache);
  o.cache_hits = atomic_load(&l->cache_hits);
  o.cache_misses = atomic_load(&l->cache_misses);
  if (l->cache) {
    gf_cache_counters cc;
    gf_cache_stats(l->cache, &cc);
    o.cache_bytes = cc.bytes_used;
    o.cache_budget = cc.budget;
    o.cache_pinned_bytes = cc.pinned_bytes;
    o.cache_pin_failures = cc.pin_failures;
  }
  o.cache_direct = atomic_load(&l->cache_direct);
  for (int k = 0; k < 4; k++)
    o.jpeg_decoded[k] = atomic_load(&l->jpeg_decoded[k]);
  o.jpeg_pixels_decoded = atomic_load(&l->jpeg_px_decoded);
  o.jpeg_pixels_full = atomic_load(&l->jpeg_px_full);
  o.batches = atomic_load(&l->batches);
  o.consumer_wait_ns = atomic_load(&l->consumer_wait_ns);
  o.next_calls = atomic_load(&l->next_calls);
  o.ready_sum = atomic_load(&l->ready_sum);
  o.slots = l->nslots;
  o.skipped = atomic_load(&l->skipped);
  pthread_mutex_lock(&l->stat_mu);
  memcpy(o.last_skip_reason, l->last_skip_reason, sizeof o.last_skip_reason);
  pthread_mutex_unlock(&l->stat_mu);
  memcpy(o.io_backend, l->io_backend, sizeof o.io_backend);
  memcpy(o.io_fallback_reason, l->io_fallback, sizeof o.io_fallback_reason);
  o.device = l->device;
  memcpy(o.host_mode_reason, l->host_reason, sizeof o.host_mode_reason);
  o.io_in_flight = l->chunk;
  memcpy(o.tuning, l->tuning, sizeof o.tuning);
  gf_trace_counts(l->trace, &o.trace_recorded, &o.trace_dropped);
  memcpy(o.jpeg_gpu_backend, l->jpeg_gpu_backend, sizeof o.jpeg_gpu_backend);
  memcpy(o.jpeg_gpu_why, l->jpeg_gpu_why, sizeof o.jpeg_gpu_why);
  o.jpeg_gpu_decoded = atomic_load(&l->jpeg_gpu_decoded);
  o.jpeg_checked = atomic_load(&l->jpeg_checked.checks);
  o.jpeg_check_failed = atomic_load(&l->jpeg_checked.refused);
  o.jpeg_gpu_refused = atomic_load(&l->jpeg_gpu_refused);
  for (int k = 0; k < 4; k++)
    o.jpeg_cpu_decoded += o.jpeg_decoded[k];
  gf_nvjpeg_stats ns;
  if (l->stage && gf_stage_jpeg_stats(l->stage, &ns)) {
    o.jpeg_gpu_device_budget = ns.device_budget;
    o.jpeg_gpu_device_peak = ns.device_peak;
    o.jpeg_gpu_pinned_budget = ns.pinned_budget;
    o.jpeg_gpu_pinned_peak = ns.pinned_peak;
  }
  if (l->stage) {
    gf_device_pool_stats ps = {.struct_size = sizeof ps};
    if (gf_device_pool_stats_get(gf_stage_pool(l->stage), &ps) == 0) {
      o.device_pool_in_use = ps.in_use;
      o.device_pool_peak = ps.peak_in_use;
      o.device_pool_reserved = ps.reserved_bytes;
    }
  }
  if (l->fetch) {
    gf_storage *sto = gf_source_storage(l->src);
    gf_storage_describe(sto, o.remote, sizeof o.remote);
    gf_fetch_counters fc;
    gf_fetch_counters_get(l->fetch, &fc);
    o.fetch_requests = fc.requests;
    o.fetch_bytes = fc.bytes;
    o.fetch_failed = fc.failed;
    o.fetch_block_reads = fc.block_reads;
    o.fetch_cached = fc.cached;
    o.fetch_wait_ns = fc.take_wait_ns;
    o.fetch_inflight_max = fc.inflight_max;
    o.fetch_held_max = fc.bytes_max;
    gf_fetch_now(l->fetch, &o.fetch_inflight, &o.fetch_held_bytes);
    o.fetch_budget = l->allocs.fetch_budget;
    gf_storage_counters sc;
    gf_storage_counters_get(sto, &sc);
    o.fetch_retries = sc.retries;
    o.disk_cache_hits = sc.cache_hits;
    o.disk_cache_misses = sc.cache_misses;
    o.disk_cache_bytes_read = sc.cache_bytes_read;
    o.disk_cache_bytes_written = sc.cache_bytes_written;
    o.disk_cache_evictions = sc.cache_evictions;
    o.fetch_unprepared = fc.unprepared;
    gf_source_record_counters(l->src, &o.index_reads, &o.index_bytes,
                              &o.index_pages);
  }
  if (l->stream) {
    /* The shards' requests and bytes, as the fetch stage's are counted;
     * bad samples the stage dropped (skip policy) among the skipped. */
    gf_storage *sto = gf_source_storage(l->src);
    gf_storage_describe(sto, o.remote, sizeof o.remote);
    gf_stream_counters c;
    gf_stream_counters_get(l->stream, &c);
    gf_storage_counters sc;
    gf_storage_counters_get(sto, &sc);
    o.fetch_requests = sc.requests;
    o.fetch_retries = sc.retries;
    o.fetch_failed = sc.failures;
    o.fetch_bytes = c.bytes;
    o.fetch_wait_ns = c.wait_ns;
    o.fetch_budget = l->allocs.stream_bytes;
    pthread_mutex_lock(&l->mu);
    uint64_t ce = l->c_epoch;
    pthread_mutex_unlock(&l->mu);
    o.skipped += gf_stream_skipped(l->stream, ce);
    if (c.skipped && !o.last_skip_reason[0])
      gf_stream_last_skip(l->stream, o.last_skip_reason,
                          sizeof o.last_skip_reason);
  }
  memcpy(st, &o, st->struct_size);
  return 0;
}

int gf_loader_trace_write(gf_loader *l, const char *path) {
  if (!l || !path)
    return gf_loader__cfg_fail("trace_write", "needs a loader and a path");
  if (!l->trace)
    return gf_loader__cfg_fail(
        "trace_events", "is 0: the loader records no trace (set it at create)");
  /* Batches the caller still holds: their GPU spans, if done by now. */
  pthread_mutex_lock(&l->mu);
  for (uint32_t i = 0; i < l->nslots; i++)
    if (l->slots[i].state == SLOT_LENT)
      gf_loader__take_gpu_span(l, &l->slots[i], false);
  pthread_mutex_unlock(&l->mu);
  return gf_trace_write(l->trace, path);
}

void gf_loader_allocated(const gf_loader *l, gf_loader_allocs *out) {
  *out = l->allocs;
}
