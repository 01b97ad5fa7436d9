/* The loader's configuration and sizing: the config resolved against its
 * defaults, every buffer's size, threads and prefetch chosen, and the
 * printable memory plan. */
#include "pipeline/loader_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- create / destroy --------------------------------------------------- */

int cfg_fail(const char *field, const char *why) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "loader config: %s %s", field, why);
}

int resolve_config(const gf_loader_config *in, gf_loader_config *c) {
  gf_loader_config def = GF_LOADER_CONFIG_INIT;
  *c = def;
  if (!in)
    return cfg_fail("source", "is not set: pass a config");
  int rc = gf_check_struct_size(in->struct_size, sizeof *in, "gf_loader_config");
  if (rc < 0)
    return rc;
  memcpy(c, in, in->struct_size);
  c->struct_size = sizeof *c;
  for (size_t i = 0; i < sizeof c->reserved / sizeof c->reserved[0]; i++)
    if (c->reserved[i])
      return cfg_fail("reserved", "fields must be zero");
  if (!c->batch_size)
    c->batch_size = 256;
  if (c->batch_size > (1u << 24))
    return cfg_fail("batch_size", "is above 16M samples");
  if (!c->world)
    c->world = 1;
  if (c->rank >= c->world)
    return cfg_fail("rank", "must be below world");
  /* threads / prefetch 0: chosen by autotune() once the buffer sizes are
   * known. */
  if (c->threads > 1024)
    return cfg_fail("threads", "is above 1024");
  if (c->trace_events > (1ull << 26))
    return cfg_fail("trace_events", "is above 2^26 events");
  if (c->prefetch > 64)
    return cfg_fail("prefetch", "is above 64 slots");
  if (c->order > GF_ORDER_BLOCK)
    return cfg_fail("order", "is not a gf_order value");
  if (c->partition > GF_PARTITION_DROP)
    return cfg_fail("partition", "is not a gf_partition value");
  if (c->error_policy > GF_ON_ERROR_SKIP)
    return cfg_fail("error_policy", "is not a gf_error_policy value");
  if (c->io_backend > GF_IO_PREAD)
    return cfg_fail("io_backend", "is not a gf_io_backend value");
  if (c->channels == 2 || c->channels > 4)
    return cfg_fail("channels", "must be 0 (native), 1, 3 or 4");
  if (!c->io_queue_depth)
    c->io_queue_depth = 16;
  if (c->io_queue_depth > 64)
    c->io_queue_depth = 64;
  if (c->reserved0)
    return cfg_fail("reserved0", "must be zero");
  if (c->cache_direct > GF_CACHE_DIRECT_OFF)
    return cfg_fail("cache_direct", "is not a gf_cache_direct value");
  if (c->staging_slots > 64)
    return cfg_fail("staging_slots", "is above 64");
  if (c->device < GF_DEVICE_AUTO)
    return cfg_fail("device", "must be GF_DEVICE_AUTO, GF_DEVICE_CPU or a "
                              "device index");
  if ((rc = gf_xform_check(&c->transform)) < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "loader config: transform");
  return 0;
}

/* MemAvailable from /proc/meminfo, else the free pages; 0 when unknown. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  uint64_t kb = 0;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %" SCNu64 " kB", &kb) == 1)
        break;
    fclose(f);
  }
  if (kb)
    return kb * 1024;
  long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* Read-buffer samples a worker gets (the chunk), as create computes it. */
uint32_t chunk_for(const gf_loader *l, uint32_t threads) {
  uint32_t chunk = l->cfg.io_queue_depth;
  uint32_t per = l->cfg.batch_size / (2 * threads);
  if (per < chunk)
    chunk = per ? per : 1;
  return chunk;
}

/* Host bytes the loader's buffers take with these counts: the batch slots
 * (staging, plus the output in host mode) and each worker's read buffer. */
static uint64_t host_bytes(const gf_loader *l, uint32_t threads,
                           uint32_t prefetch, bool gpu) {
  uint64_t per_slot = l->cfg.batch_size * l->stride;
  if (!gpu && !l->identity)
    per_slot += l->out_cap;
  uint64_t slots = l->cfg.staging_slots ? l->cfg.staging_slots : prefetch;
  return per_slot * slots +
         (uint64_t)threads * chunk_for(l, threads) * l->stored_cap;
}

static void fmt_gb(uint64_t b, char *buf, size_t cap) {
  if (b >= 1000000000ull)
    snprintf(buf, cap, "%.1f GB", (double)b / 1e9);
  else if (b >= 1000000ull)
    snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
  else
    snprintf(buf, cap, "%.1f kB", (double)b / 1e3);
}

/* Chooses threads and prefetch where the config left them 0: threads
 * within a CPU budget (online cores, one kept for the consumer above 2
 * cores, which otherwise would compete with the workers it waits on) and a
 * RAM budget (the loader's host buffers at most 1/8 of MemAvailable, so a
 * training process keeps the rest); prefetch 2 (double buffering), up to 4
 * with 8 threads or more, where fast workers finish batches in bursts and
 * the extra slots absorb them. Writes the choice and why to l->tuning. */
void autotune(gf_loader *l, bool gpu) {
  bool auto_t = l->cfg.threads == 0, auto_p = l->cfg.prefetch == 0;
  if (!auto_t && !auto_p) {
    snprintf(l->tuning, sizeof l->tuning,
             "%u threads, prefetch %u (as configured)", l->cfg.threads,
             l->cfg.prefetch);
    return;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = n > 0 ? (uint32_t)(n > 1024 ? 1024 : n) : 1;
  uint32_t cpu_budget = cores > 2 ? cores - 1 : cores;
  uint64_t avail = mem_available();
  uint64_t budget = avail ? avail / 8 : UINT64_MAX;
  uint32_t p = auto_p ? 2 : l->cfg.prefetch;
  uint32_t t = auto_t ? cpu_budget : l->cfg.threads;
  bool ram_cut = false;
  while (auto_t && t > 1 && host_bytes(l, t, p, gpu) > budget) {
    t--;
    ram_cut = true;
  }
  /* In GPU mode the slots are device memory too: the plan (2 slots) must
   * not depend on the machine, so only host mode takes more. */
  if (auto_p && t >= 8 && !gpu)
    for (uint32_t q = 4; q > 2; q--)
      if (host_bytes(l, t, q, gpu) <= budget) {
        p = q;
        break;
      }
  l->cfg.threads = t;
  l->cfg.prefetch = p;
  char ram[32], need[32], why_t[96], why_p[96];
  fmt_gb(budget == UINT64_MAX ? 0 : budget, ram, sizeof ram);
  fmt_gb(host_bytes(l, t, p, gpu), need, sizeof need);
  if (!auto_t)
    snprintf(why_t, sizeof why_t, "%u threads (as configured)", t);
  else if (ram_cut)
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, cut to fit RAM)", t,
             cores);
  else
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, %s)", t, cores,
             cores > 2 ? "1 for the consumer" : "none kept for the consumer");
  if (!auto_p)
    snprintf(why_p, sizeof why_p, "prefetch %u (as configured)", p);
  else
    snprintf(why_p, sizeof why_p, "prefetch %u", p);
  char msg[512];
  if (!avail)
    snprintf(msg, sizeof msg, "%s, %s (RAM budget unknown)", why_t, why_p);
  else
    snprintf(msg, sizeof msg, "%s, %s (RAM budget %s, %s used%s)", why_t,
             why_p, ram, need,
             host_bytes(l, t, p, gpu) > budget ? ", over budget"
                                               : "");
  gf_strlcpy(l->tuning, msg, sizeof l->tuning);
}

/* The sizes every buffer follows from: a sample's slot in a batch
 * (stride), a read buffer entry, whether the transform is the identity,
 * and a batch's output. From the config and the source alone: create and
 * gf_loader_plan share it. */
int plan_sizes(gf_loader *l) {
  int rc;
  uint64_t max_dec, max_stored;
  uint32_t cmax;
  if ((rc = gf_source_max_sizes(l->src, &l->dopts, &max_dec, &max_stored,
                                &cmax)) < 0)
    return rc;
  l->stride = l->cfg.max_sample_bytes ? l->cfg.max_sample_bytes : max_dec;
  if (l->stride < max_dec && gf_source_is_dataset(l->src))
    return gf_fail(-EINVAL, l->source_path, GF_NO_INDEX, GF_NO_INDEX,
                   "max_sample_bytes %llu is below the largest sample (%llu "
                   "bytes decoded)",
                   (unsigned long long)l->stride, (unsigned long long)max_dec);
  /* A PNG file is smaller than its pixels but for tiny or noisy images;
   * the margin bounds the read buffer without a scan of every file. */
  l->stored_cap = max_stored ? max_stored : l->stride + l->stride / 4 + 65536;
  const gf_transform *t = &l->cfg.transform;
  l->identity = t->out_dtype == GF_OUT_U8 && t->layout == GF_LAYOUT_NHWC &&
                !t->height && !t->width && !t->random_crop && !t->pad &&
                !t->hflip;
  /* A sized output holds out_h x out_w pixels of the most channels a
   * sample can have (a dataset's index says; a folder: 4). */
  uint64_t per;
  if (t->height)
    per = (uint64_t)t->height * t->width * cmax;
  else
    per = l->stride; /* a sample's own pixels, at most stride bytes */
  if (!gf_mul_u64(per, gf_out_dtype_size(t->out_dtype), &per) ||
      !gf_mul_u64(per, l->cfg.batch_size, &l->out_cap))
    return cfg_fail("transform", "gives a batch output beyond 2^64 bytes");
  return 0;
}

/* The plan of a loader whose sizes are set: host and device bytes. */
static int format_plan(const gf_loader *l, uint32_t slots, uint32_t threads,
                       char *buf, size_t cap) {
  gf_memory_plan p;
  memset(&p, 0, sizeof p);
  p.pinned_slots = slots;
  p.pinned_slot_bytes = (uint64_t)l->cfg.batch_size * l->stride;
  p.read_buffers = threads;
  p.read_buffer_bytes = (uint64_t)chunk_for(l, threads) * l->stored_cap;
  p.cache_budget = l->cfg.cache_bytes;
  p.cache_pinned = l->cfg.device != GF_DEVICE_CPU &&
                   l->cfg.cache_direct == GF_CACHE_DIRECT_AUTO;
  p.device_slots = slots;
  gf_stage_config sc;
  memset(&sc, 0, sizeof sc);
  sc.slots = 1;
  sc.max_samples = l->cfg.batch_size;
  sc.in_bytes = p.pinned_slot_bytes;
  sc.out_bytes = l->out_cap;
  p.device_slot_bytes = gf_stage_pool_need(&sc);
  p.device_pool_bytes = l->cfg.device_pool_bytes;
  return gf_memory_plan_format(&p, buf, cap);
}

int gf_loader_plan(const gf_loader_config *cfg, char *buf, size_t cap) {
  gf_loader *l = calloc(1, sizeof *l);
  if (!l)
    return -ENOMEM;
  int rc = resolve_config(cfg, &l->cfg);
  if (rc == 0) {
    l->source_path = (char *)l->cfg.source;
    l->dopts = (gf_decode_opts)GF_DECODE_OPTS_INIT;
    l->dopts.channels = l->cfg.channels;
    l->dopts.keep_16bit = l->cfg.keep_16bit;
    l->dopts.limits = l->cfg.limits;
    rc = gf_source_open(l->cfg.source, l->cfg.labels_file, &l->src);
  }
  if (rc == 0)
    rc = plan_sizes(l);
  if (rc == 0) {
    /* Device slots: as configured, else the 2 autotune keeps in GPU mode;
     * read buffers: as configured, else one per online core. */
    uint32_t slots = l->cfg.staging_slots ? l->cfg.staging_slots
                     : l->cfg.prefetch    ? l->cfg.prefetch
                                          : 2;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t threads = l->cfg.threads ? l->cfg.threads : (n > 0 ? (uint32_t)n : 1);
    rc = format_plan(l, slots, threads, buf, cap);
  }
  gf_source_close(l->src);
  free(l);
  return rc;
}
