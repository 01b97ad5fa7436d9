/* The loader's configuration and sizing: the config resolved against its
 * defaults, every buffer's size, threads and prefetch chosen, and the
 * printable memory plan. */
#include "pipeline/loader_impl.h" /* first: this file's own header */

#include "pipeline/loader_plan.h"
#include "pipeline/source_shapes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- the configuration ------------------------------------------------ */

int gf_loader__cfg_fail(const char *field, const char *why) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "loader config: %s %s", field, why);
}

int gf_loader__resolve_config(const gf_loader_config *in, gf_loader_config *c) {
  gf_loader_config def = GF_LOADER_CONFIG_INIT;
  *c = def;
  if (!in)
    return gf_loader__cfg_fail("source", "is not set: pass a config");
  int rc = gf_check_struct_size(in->struct_size, sizeof *in, "gf_loader_config");
  if (rc < 0)
    return rc;
  memcpy(c, in, in->struct_size);
  c->struct_size = sizeof *c;
  for (size_t i = 0; i < sizeof c->reserved / sizeof c->reserved[0]; i++)
    if (c->reserved[i])
      return gf_loader__cfg_fail("reserved", "fields must be zero");
  if (!c->batch_size)
    c->batch_size = 256;
  if (c->batch_size > (1u << 24))
    return gf_loader__cfg_fail("batch_size", "is above 16M samples");
  if (!c->world)
    c->world = 1;
  if (c->rank >= c->world)
    return gf_loader__cfg_fail("rank", "must be below world");
  /* threads / prefetch 0: chosen by autotune() once the buffer sizes are
   * known. */
  if (c->threads > 1024)
    return gf_loader__cfg_fail("threads", "is above 1024");
  if (c->trace_events > (1ull << 26))
    return gf_loader__cfg_fail("trace_events", "is above 2^26 events");
  if (c->prefetch > GF_LOADER_MAX_SLOTS)
    return gf_loader__cfg_fail("prefetch", "is above 64 slots");
  if (c->order > GF_ORDER_BLOCK)
    return gf_loader__cfg_fail("order", "is not a gf_order value");
  if (c->partition > GF_PARTITION_DROP)
    return gf_loader__cfg_fail("partition", "is not a gf_partition value");
  if (c->error_policy > GF_ON_ERROR_SKIP)
    return gf_loader__cfg_fail("error_policy",
                               "is not a gf_error_policy value");
  if (c->io_backend > GF_IO_PREAD)
    return gf_loader__cfg_fail("io_backend", "is not a gf_io_backend value");
  if (c->channels == 2 || c->channels > 4)
    return gf_loader__cfg_fail("channels", "must be 0 (native), 1, 3 or 4");
  /* io_queue_depth 0: chosen by autotune() (16, or 64 for reads that
   * need no decoding). */
  if (c->io_queue_depth > 64)
    c->io_queue_depth = 64;
  if (c->jpeg_scale > GF_JPEG_SCALE_OFF)
    return gf_loader__cfg_fail("jpeg_scale",
                               "is not a gf_jpeg_scale value (0 auto, 1 "
                               "off)");
  if (c->cache_direct > GF_CACHE_DIRECT_OFF)
    return gf_loader__cfg_fail("cache_direct",
                               "is not a gf_cache_direct value");
  if (c->gpu_decode > GF_GPU_DECODE_ALL)
    return gf_loader__cfg_fail("gpu_decode",
                               "is not a gf_gpu_decode value (0 auto, 1 "
                               "off, 2 all)");
  if (c->gpu_decode_percent > 100)
    return gf_loader__cfg_fail("gpu_decode_percent", "is above 100");
  if (c->gpu_decoders > GF_GPU_DECODERS_MAX)
    return gf_loader__cfg_fail("gpu_decoders",
                               "is above GF_GPU_DECODERS_MAX (8)");
  if (c->worker_sched > GF_WORKER_SCHED_NORMAL)
    return gf_loader__cfg_fail("worker_sched",
                               "is not a gf_worker_sched value (0 batch, 1 "
                               "normal)");
  if (c->staging_slots > GF_LOADER_MAX_SLOTS)
    return gf_loader__cfg_fail("staging_slots", "is above 64");
  if (c->device < GF_DEVICE_AUTO)
    return gf_loader__cfg_fail("device",
                               "must be GF_DEVICE_AUTO, GF_DEVICE_CPU or a "
                               "device index");
  if ((rc = gf_xform_check(&c->transform)) < 0)
    return gf_fail_context(rc, NULL, GF_NO_INDEX, "loader config: transform");
  return 0;
}

void gf_loader__decode_opts_of(const gf_loader_config *c, gf_decode_opts *d) {
  gf_decode_opts def = GF_DECODE_OPTS_INIT;
  *d = def;
  d->channels = c->channels;
  d->keep_16bit = c->keep_16bit;
  d->limits = c->limits;
}

/* ---- sizing ------------------------------------------------------------- */

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

/* Read-buffer samples a worker gets (the chunk): its reads in flight. */
static uint32_t chunk_for(const gf_loader_config *c, const gf_loader_sizes *z,
                          uint32_t threads) {
  uint32_t chunk = z->queue_depth;
  uint32_t per = c->batch_size / (2 * threads);
  if (per < chunk)
    chunk = per ? per : 1;
  return chunk;
}

/* A worker's read buffer: chunk entries, in whole pages (the reader
 * registers it as such). */
static uint64_t read_buffer_bytes(const gf_loader_config *c,
                                  const gf_loader_sizes *z, uint32_t threads) {
  if (z->remote)
    return 0; /* the fetch stage reads (fetch_sizes) */
  /* Streaming: one sample at a time, copied from the stage. */
  uint32_t entries = z->stream ? 1 : chunk_for(c, z, threads);
  uint64_t rb;
  if (!gf_mul_u64(entries, z->stored_cap, &rb) || rb > UINT64_MAX - 4095)
    return UINT64_MAX;
  return (rb + 4095) / 4096 * 4096;
}

/* Host bytes the loader's buffers take with these counts: the batch slots
 * (pixels, tables, and the output in host mode) and each worker's read
 * buffer; saturates at UINT64_MAX. */
static uint64_t host_bytes(const gf_loader_config *c, const gf_loader_sizes *z,
                           uint32_t threads, uint32_t prefetch) {
  uint64_t per_slot = z->slot_bytes, slots, a, b, sum;
  if (!gf_add_u64(per_slot, z->slot_out_bytes, &per_slot) ||
      !gf_add_u64(per_slot, z->slot_table_bytes, &per_slot) ||
      !gf_add_u64(per_slot, z->slot_field_bytes, &per_slot))
    return UINT64_MAX;
  slots = c->staging_slots ? c->staging_slots : prefetch;
  if (!gf_mul_u64(per_slot, slots, &a) ||
      !gf_mul_u64(threads, read_buffer_bytes(c, z, threads), &b) ||
      !gf_add_u64(a, b, &sum))
    return UINT64_MAX;
  return sum;
}

static void fmt_gb(uint64_t b, char *buf, size_t cap) {
  if (b >= 1000000000ull)
    snprintf(buf, cap, "%.1f GB", (double)b / 1e9);
  else if (b >= 1000000ull)
    snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
  else
    snprintf(buf, cap, "%.1f kB", (double)b / 1e3);
}

/* Reads alone: a raw dataset read with O_DIRECT, with nothing for the CPU
 * to decode or transform (a transform runs on the GPU, or there is none).
 * Measured on a virtio disk (bench/RESULTS.md, "Cold reads"), the same
 * 128 reads in flight went slower the more threads submitted them (16
 * rings x 8: 1.2-1.3 GB/s; 2 rings x 64: 2.2 GB/s, the disk's own random
 * read rate), and such a loader needs no more threads to decode: it gets 2
 * threads x 64 reads in flight. */
static bool reads_alone(const gf_loader_sizes *z, bool gpu) {
  return z->direct_align && z->raw_only && (gpu || z->identity);
}
#define GF_READS_ALONE_THREADS 2u
#define GF_READS_ALONE_DEPTH 64u
#define GF_DEFAULT_DEPTH 16u
#define GF_GPU_PREFETCH 3u

/* Chooses the io queue depth, threads and prefetch where the config left
 * them 0: the queue depth 16 (64 for reads alone, above); threads within
 * a CPU budget (online cores, one kept for the consumer above 2 cores,
 * which otherwise would compete with the workers it waits on; 2 for reads
 * alone) and a RAM budget (the loader's host buffers at most 1/8 of
 * MemAvailable, so a training process keeps the rest); prefetch 2 (double
 * buffering) in host mode, up to 4 with 8 threads or more, where fast
 * workers finish batches in bursts and the extra slots absorb them, and 3
 * in GPU mode. Writes the choice and why to z->tuning. */
static void autotune(const gf_loader_config *c, gf_loader_sizes *z, bool gpu) {
  bool alone = reads_alone(z, gpu);
  z->queue_depth = c->io_queue_depth ? c->io_queue_depth
                   : alone           ? GF_READS_ALONE_DEPTH
                                     : GF_DEFAULT_DEPTH;
  bool auto_t = c->threads == 0, auto_p = c->prefetch == 0;
  if (!auto_t && !auto_p) {
    z->threads = c->threads;
    z->prefetch = c->prefetch;
    snprintf(z->tuning, sizeof z->tuning,
             "%u threads, prefetch %u (as configured)", c->threads,
             c->prefetch);
    return;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = n > 0 ? (uint32_t)(n > 1024 ? 1024 : n) : 1;
  uint32_t cpu_budget = cores > 2 ? cores - 1 : cores;
  if (alone && cpu_budget > GF_READS_ALONE_THREADS)
    cpu_budget = GF_READS_ALONE_THREADS;
  uint64_t avail = mem_available();
  uint64_t budget = avail ? avail / 8 : UINT64_MAX;
  uint32_t t = auto_t ? cpu_budget : c->threads;
  /* GPU mode: 3 slots, so that a batch's copy and transform are over
   * before the consumer asks for it (with 2, the copy into a slot starts
   * only once the step that read it has ended, and next makes the
   * caller's stream wait). Whatever the RAM, so that the plan's device
   * side stays the same on every machine: the RAM budget cuts threads. */
  uint32_t p = !auto_p ? c->prefetch : gpu ? GF_GPU_PREFETCH : 2;
  bool ram_cut = false;
  while (auto_t && t > 1 && host_bytes(c, z, t, p) > budget) {
    t--;
    ram_cut = true;
  }
  /* In GPU mode the slots are device memory too: the plan (3 slots)
   * must not depend on the machine, so only host mode takes more. */
  if (auto_p && t >= 8 && !gpu)
    for (uint32_t q = 4; q > 2; q--)
      if (host_bytes(c, z, t, q) <= budget) {
        p = q;
        break;
      }
  z->threads = t;
  z->prefetch = p;
  char ram[32], need[32], why_t[128], why_p[96];
  fmt_gb(budget == UINT64_MAX ? 0 : budget, ram, sizeof ram);
  fmt_gb(host_bytes(c, z, t, p), need, sizeof need);
  if (!auto_t)
    snprintf(why_t, sizeof why_t, "%u threads (as configured)", t);
  else if (ram_cut)
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, cut to fit RAM)", t,
             cores);
  else if (alone)
    snprintf(why_t, sizeof why_t,
             "%u threads (%u cores; O_DIRECT raw reads, no decoding: few "
             "threads, %u reads in flight each)",
             t, cores, chunk_for(c, z, t));
  else
    snprintf(why_t, sizeof why_t, "%u threads (%u cores, %s)", t, cores,
             cores > 2 ? "1 for the consumer" : "none kept for the consumer");
  if (!auto_p)
    snprintf(why_p, sizeof why_p, "prefetch %u (as configured)", p);
  else if (gpu)
    snprintf(why_p, sizeof why_p,
             "prefetch %u (GPU mode: a batch's copy done before next)", p);
  else
    snprintf(why_p, sizeof why_p, "prefetch %u", p);
  char msg[512];
  if (!avail)
    snprintf(msg, sizeof msg, "%s, %s (RAM budget unknown)", why_t, why_p);
  else
    snprintf(msg, sizeof msg, "%s, %s (RAM budget %s, %s used%s)", why_t,
             why_p, ram, need,
             host_bytes(c, z, t, p) > budget ? ", over budget" : "");
  gf_strlcpy(z->tuning, msg, sizeof z->tuning);
}

/* The sizes every buffer follows from: a sample's slot in a batch
 * (stride), a read buffer entry, whether the transform is the identity,
 * and a batch's output. From the config and the source alone. */
static int sample_sizes(const gf_loader_config *c, gf_source *src,
                        gf_loader_sizes *z) {
  int rc;
  gf_decode_opts dopts;
  gf_loader__decode_opts_of(c, &dopts);
  /* A folder's headers are read with the loader's threads (autotune's CPU
   * budget when the config leaves them to it). */
  uint32_t scan_threads = c->threads;
  if (!scan_threads) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    scan_threads = n > 2 ? (uint32_t)(n > 1024 ? 1023 : n - 1) : 1;
  }
  gf_source_extent ex;
  bool strict = c->error_policy != GF_ON_ERROR_SKIP;
  const bool stream = gf_source_caps(src) & GF_SOURCE_STREAM;
  /* A remote folder under a transform of fixed output size: sized from
   * its listing and max_sample_bytes (or the default bound), not from a
   * request for each file's header. */
  const gf_transform *tf = &c->transform;
  /* Remote tar shards likewise (their index told every extent). Local
   * ones, as a local folder, are sized from their images' headers: a
   * small read a sample at create, for places no larger than the largest
   * image needs. */
  if (stream && !(c->transform.height && c->transform.width) &&
      !c->max_sample_bytes)
    return gf_fail(-EINVAL, gf_storage_display(gf_source_storage(src)),
                   GF_NO_INDEX, GF_NO_INDEX,
                   "streaming mode sizes its buffers before any sample is "
                   "read: give the transform an output size (height and "
                   "width) or set max_sample_bytes");
  if (stream && c->cache_bytes)
    return gf_loader__cfg_fail(
        "cache_bytes", "is for random access: streaming mode reads each "
                       "sample once an epoch (index the shards with "
                       "`gpufeed index` for a cache)");
  bool listed = !stream && !(gf_source_caps(src) & GF_SOURCE_RECORDS) &&
                (gf_storage_caps(gf_source_storage(src)) & GF_STORAGE_REMOTE) &&
                tf->height && tf->width &&
                gf_source_extent_listed(src, &dopts, &ex) == 0;
  if (stream) {
    /* Nothing known before the stream: every sample within the bound, any
     * of them maybe a JPEG. */
    memset(&ex, 0, sizeof ex);
    ex.max_index = GF_NO_INDEX;
    ex.max_decoded = c->max_sample_bytes ? c->max_sample_bytes
                                         : GF_REMOTE_FOLDER_SAMPLE_BYTES;
    ex.max_native = ex.max_decoded;
    ex.max_stored = ex.max_decoded;
    ex.max_channels = dopts.channels ? dopts.channels : 4;
    ex.jpeg = 1;
    z->stream = true;
  } else if (listed) {
    ex.max_decoded = c->max_sample_bytes ? c->max_sample_bytes
                                         : GF_REMOTE_FOLDER_SAMPLE_BYTES;
    ex.max_native = ex.max_decoded;
    z->headers_listed = gf_source_count(src);
  } else if ((rc = gf_source_extent_scan(src, &dopts, scan_threads, strict,
                                         &ex)) < 0) {
    return rc;
  }
  uint64_t max_dec = ex.max_decoded, max_stored = ex.max_stored;
  uint32_t cmax = ex.max_channels;
  z->max_decoded = max_dec;
  z->jpeg_samples = ex.jpeg;
  z->loco = ex.loco > 0; /* GPU mode only (gf_loader_size) */
  const uint32_t caps = gf_source_caps(src);
  const bool records = caps & GF_SOURCE_RECORDS;
  z->raw_only = records && ex.raw > 0 && ex.raw == gf_source_count(src);
  z->unchecked = !(caps & GF_SOURCE_CHECKSUMS);
  z->max_native = ex.max_native;
  z->max_index = ex.max_index;
  z->headers_counted = records ? 0 : ex.counted;
  z->headers_uncounted = ex.uncounted;
  if (!records && ex.max_index != GF_NO_INDEX)
    gf_source_name(src, ex.max_index, z->largest_name,
                   sizeof z->largest_name);
  z->stride = c->max_sample_bytes ? c->max_sample_bytes : max_dec;
  if (z->stride < max_dec && records)
    return gf_fail(-EINVAL, gf_storage_display(gf_source_storage(src)),
                   GF_NO_INDEX, GF_NO_INDEX,
                   "max_sample_bytes %llu is below the largest sample (%llu "
                   "bytes decoded)",
                   (unsigned long long)z->stride, (unsigned long long)max_dec);
  if (z->stride < max_dec) {
    char name[4200];
    gf_source_name(src, ex.max_index, name, sizeof name);
    return gf_fail(-EINVAL, name, ex.max_index, GF_NO_INDEX,
                   "max_sample_bytes %llu is below the largest sample: this "
                   "file decodes to %llu bytes (raise max_sample_bytes, or "
                   "leave it 0 to size from the files' headers)",
                   (unsigned long long)z->stride, (unsigned long long)max_dec);
  }
  /* A PNG file is smaller than its pixels but for tiny or noisy images;
   * the margin bounds the read buffer without a scan of every file. */
  if (records) {
    z->stored_cap = max_stored ? max_stored
                               : z->stride + z->stride / 4 + 65536;
  } else if (listed || stream) {
    /* A remote folder: its largest file, as listed (a file replaced since
     * fails by its version tag before its bytes are taken). */
    z->stored_cap = max_stored;
  } else {
    /* A folder: the largest file within the limits, and never less than
     * the margin above its pixels (a file may be rewritten a little). */
    z->stored_cap = z->stride + z->stride / 4 + 65536;
    if (max_stored > z->stored_cap)
      z->stored_cap = max_stored;
  }
  /* O_DIRECT (a dataset built aligned): the widened read can start up to
   * align - 1 bytes early and end up to align - 1 bytes late. Sized so
   * whether or not the filesystem then accepts O_DIRECT. */
  uint32_t align = gf_source_alignment(src);
  if (c->io_direct && records && align >= 512 &&
      (gf_storage_caps(gf_source_storage(src)) & GF_STORAGE_FD)) {
    z->direct_align = align;
    z->stored_cap =
        (z->stored_cap + 2ull * align + align - 1) / align * align;
  }
  const gf_transform *t = &c->transform;
  z->identity = t->out_dtype == GF_OUT_U8 && t->layout == GF_LAYOUT_NHWC &&
                !t->height && !t->width && !t->random_crop && !t->pad &&
                !t->hflip;
  /* A sized output holds out_h x out_w pixels of the most channels a
   * sample can have (a dataset's index says; a folder: 4). */
  uint64_t per;
  z->out_channels = cmax;
  if (t->height)
    per = (uint64_t)t->height * t->width * cmax;
  else
    per = z->stride; /* a sample's own pixels, at most stride bytes */
  if (!gf_mul_u64(per, gf_out_dtype_size(t->out_dtype), &per) ||
      !gf_mul_u64(per, c->batch_size, &z->out_cap))
    return gf_loader__cfg_fail("transform",
                               "gives a batch output beyond 2^64 bytes");
  return 0;
}

/* A slot's per-sample tables (alloc_slot makes them). */
static uint64_t table_bytes(uint64_t B, bool gpu, bool direct, bool gpu_jpeg,
                            bool loco, uint32_t nfields) {
  const slot *s = NULL;
  uint64_t each = sizeof *s->shapes + sizeof *s->offsets + sizeof *s->labels +
                  sizeof *s->indices + sizeof *s->status +
                  sizeof *s->filtered + sizeof *s->regions +
                  sizeof *s->params;
  if (direct)
    each += sizeof *s->dsrc_dev + sizeof *s->dsrc_host;
  if (gpu_jpeg)
    each += sizeof *s->gpu_len + sizeof *s->jimg + sizeof *s->joff +
            sizeof *s->jpos;
  if (loco)
    each += sizeof *s->loco;
  each += nfields * sizeof *s->field_len;
  if (gpu || direct || gpu_jpeg) /* the gather list */
    each += sizeof *s->segs;
  return B * each;
}

/* A remote source's fetch stage (fetch.h): its arena holds the read-ahead
 * budget, and never less than the batches in flight need (every slot's
 * samples at their largest stored size, and a batch more), so that a
 * dispatched batch can always be read; its tables follow from the slots
 * and the order's window. */
static int fetch_sizes(const gf_loader_config *c, gf_loader_sizes *z) {
  gf_remote_config rc;
  int err = gf_remote_resolve(c->remote, &rc);
  if (err < 0)
    return err;
  uint64_t need, window = 1;
  if (!gf_mul_u64((uint64_t)z->slots + 1, c->batch_size, &need) ||
      !gf_mul_u64(need, z->stored_cap, &need))
    return gf_loader__cfg_fail("max_sample_bytes",
                               "gives a read-ahead beyond 2^64 bytes");
  z->fetch_budget = rc.fetch_bytes > need ? rc.fetch_bytes : need;
  z->fetch_budget = (z->fetch_budget + 4095) / 4096 * 4096;
  z->fetch_requests = rc.fetch_requests;
  if (c->order == GF_ORDER_BLOCK) {
    uint64_t bs = c->block_size ? c->block_size : GF_SAMPLER_DEFAULT_BLOCK_SIZE;
    window = bs * GF_SAMPLER_DEFAULT_WINDOW_BLOCKS;
  }
  gf_fetch_sizes(c->batch_size, z->slots, window, rc.fetch_requests,
                 &z->fetch_positions, &z->fetch_table_bytes);
  return 0;
}

int gf_loader_size(const gf_loader_config *c, gf_source *src, bool gpu,
                   gf_loader_sizes *z) {
  memset(z, 0, sizeof *z);
  int rc = sample_sizes(c, src, z);
  if (rc < 0)
    return rc;
  z->remote = (gf_storage_caps(gf_source_storage(src)) & GF_STORAGE_REMOTE) &&
              !z->stream;
  if (!gpu)
    z->loco = false;
  uint64_t B = c->batch_size;
  if (!gf_mul_u64(B, z->stride, &z->slot_bytes))
    return gf_loader__cfg_fail("max_sample_bytes",
                               "gives a batch beyond 2^64 bytes");
  z->slot_out_bytes = !gpu && !z->identity ? z->out_cap : 0;
  /* GPU mode with a cache pinned as it fills: each slot keeps a gather
   * list. */
  bool direct = gpu && c->cache_bytes &&
                c->cache_direct == GF_CACHE_DIRECT_AUTO;
  gf_loader__jpeg_gpu_plan(c, gpu, z->stream ? 0 : gf_source_count(src), z);
  /* Tar shards' asked fields: a place each per sample, host memory. */
  z->nfields = gf_source_field_count(src);
  z->field_bytes = z->nfields ? gf_source_field_bytes(src) : 0;
  if (!gf_mul_u64(B * z->nfields, z->field_bytes, &z->slot_field_bytes))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: field_bytes %llu x %u fields x batch_size %llu "
                   "is beyond 2^64 bytes",
                   (unsigned long long)z->field_bytes, z->nfields,
                   (unsigned long long)B);
  z->slot_table_bytes =
      table_bytes(B, gpu, direct, z->jpeg_gpu_mode != 0, z->loco, z->nfields);
  autotune(c, z, gpu);
  z->slots = c->staging_slots ? c->staging_slots : z->prefetch;
  z->chunk = chunk_for(c, z, z->threads);
  z->read_buffer_bytes = read_buffer_bytes(c, z, z->threads);
  if (z->read_buffer_bytes == UINT64_MAX)
    return gf_loader__cfg_fail("max_sample_bytes",
                               "gives a read buffer beyond 2^64 "
                               "bytes");
  if (z->remote && (rc = fetch_sizes(c, z)) < 0)
    return rc;
  if (z->stream) {
    gf_stream_config sc;
    if ((rc = gf_loader_stream_config(c, z, src, &sc)) < 0)
      return rc;
    gf_stream_sizes(&sc, &z->stream_arena, &z->stream_table_bytes);
  }
  if (gpu) {
    gf_stage_config sc;
    memset(&sc, 0, sizeof sc);
    sc.slots = 1;
    sc.max_samples = c->batch_size;
    sc.in_bytes = z->slot_bytes;
    sc.out_bytes = z->out_cap;
    z->device_slot_bytes = gf_stage_pool_need(&sc);
    sc.loco = z->loco;
    sc.slots = z->slots;
    uint64_t with = gf_stage_pool_need(&sc);
    sc.loco = 0;
    z->device_loco_bytes = with - gf_stage_pool_need(&sc);
    uint64_t need;
    if (!gf_mul_u64(z->device_slot_bytes, z->slots, &need) ||
        need + z->device_loco_bytes < need)
      return gf_loader__cfg_fail("max_sample_bytes",
                                 "gives device slots beyond 2^64 "
                                 "bytes");
    need += z->device_loco_bytes;
    z->device_pool_bytes =
        c->device_pool_bytes > need ? c->device_pool_bytes : need;
  }
  z->cache_bytes = c->cache_bytes;
  return 0;
}

int gf_loader_stream_config(const gf_loader_config *c, const gf_loader_sizes *z,
                            const gf_source *src, gf_stream_config *out) {
  memset(out, 0, sizeof *out);
  int rc = gf_source_stream_config(src, out);
  if (rc < 0)
    return rc;
  out->seed = c->seed;
  out->rank = c->rank;
  out->world = c->world ? c->world : 1;
  out->max_sample = z->stored_cap;
  /* Positions handed out and not yet taken: each worker's chunk, and the
   * consumer's repair. */
  out->takers = z->threads * z->chunk + 1;
  out->skip_bad = c->error_policy == GF_ON_ERROR_SKIP;
  out->ordered = c->order == GF_ORDER_SEQUENTIAL;
  return 0;
}

void gf_loader_sizes_plan(const gf_loader_config *c, const gf_loader_sizes *z,
                          bool gpu, gf_memory_plan *p) {
  memset(p, 0, sizeof *p);
  p->pinned_slots = z->slots;
  p->pinned_slot_bytes = z->slot_bytes;
  p->output_slots = z->slot_out_bytes ? z->slots : 0;
  p->output_slot_bytes = z->slot_out_bytes;
  p->table_slots = z->slots;
  p->table_slot_bytes = z->slot_table_bytes;
  p->field_slots = z->slot_field_bytes ? z->slots : 0;
  p->field_slot_bytes = z->slot_field_bytes;
  p->read_buffers = z->read_buffer_bytes ? z->threads : 0;
  p->read_buffer_bytes = z->read_buffer_bytes;
  p->fetch_bytes = z->remote ? z->fetch_budget : 0;
  p->fetch_table_bytes = z->remote ? z->fetch_table_bytes : 0;
  p->stream_bytes = z->stream ? z->stream_arena : 0;
  p->stream_table_bytes = z->stream ? z->stream_table_bytes : 0;
  p->cache_budget = z->cache_bytes;
  p->sample_stride = z->stride;
  p->largest_decoded = z->max_decoded;
  gf_strlcpy(p->largest_name, z->largest_name, sizeof p->largest_name);
  p->headers_counted = z->headers_counted;
  p->headers_uncounted = z->headers_uncounted;
  p->headers_listed = z->headers_listed;
  p->stride_configured = c->max_sample_bytes != 0;
  p->out_elem_bytes = (uint32_t)gf_out_dtype_size(c->transform.out_dtype);
  if (!z->identity) {
    p->out_height = c->transform.height;
    p->out_width = c->transform.width;
    p->out_channels = z->out_channels;
    p->out_sample_bytes = c->batch_size ? z->out_cap / c->batch_size : 0;
  }
  p->scratch_bound = z->max_native;
  p->cache_pinned = gpu && c->cache_direct == GF_CACHE_DIRECT_AUTO;
  if (gpu) {
    p->device_slots = z->slots;
    p->device_slot_bytes = z->device_slot_bytes;
    p->device_loco_bytes = z->device_loco_bytes;
    p->device_label_bytes = gf_stage_label_bytes(c->batch_size);
    /* What the stage reserves: a configured reservation below what the
     * slots need is raised to it. */
    p->device_pool_bytes = c->device_pool_bytes ? z->device_pool_bytes : 0;
    p->jpeg_gpu_mode = z->jpeg_gpu_mode;
    p->jpeg_gpu_decoders = z->jpeg_gpu_decoders;
    p->jpeg_gpu_device_bytes = z->jpeg_gpu_device_bytes;
    p->jpeg_gpu_pinned_bytes = z->jpeg_gpu_pinned_bytes;
    p->jpeg_engine_bytes = z->jpeg_engine_bytes;
    p->jpeg_checked = z->jpeg_checked;
    p->jpeg_checked_bytes = gf_jpeg_checked_bytes(z->jpeg_checked);
  }
}

/* ---- the printable plan ------------------------------------------------- */

int gf_loader_plan_get(const gf_loader_config *cfg, gf_memory_plan *p,
                       gf_loader_sizes *zout) {
  gf_loader_config c;
  gf_source *src = NULL;
  gf_loader_sizes z;
  int rc = gf_loader__resolve_config(cfg, &c);
  if (rc == 0)
    rc = gf_source_open(c.source, c.labels_file, c.shards, c.remote, &src);
  /* GPU mode unless the config asks for the host: the plan is what a
   * loader needs where a GPU is found (create falls back to host mode,
   * which needs no device memory and no more host memory but the outputs'
   * when there is none). */
  bool gpu = c.device != GF_DEVICE_CPU;
  if (rc == 0)
    rc = gf_loader_size(&c, src, gpu, &z);
  if (rc == 0) {
    gf_loader_sizes_plan(&c, &z, gpu, p);
    if (zout)
      *zout = z;
  }
  gf_source_close(src);
  return rc;
}

int gf_loader_plan(const gf_loader_config *cfg, char *buf, size_t cap) {
  gf_memory_plan p;
  int rc = gf_loader_plan_get(cfg, &p, NULL);
  if (rc < 0)
    return rc;
  return gf_memory_plan_format(&p, buf, cap);
}
