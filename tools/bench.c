/* gpufeed bench: runs the loader over a source for a few epochs as a
 * training loop would (next, optional simulated step, release) and reports
 * what users decide on: images/s, bytes delivered, where the time goes and
 * which stage limits the rate. */
#include "cli.h"

#include "common/common.h"
#include "format/format.h"
#include "gpu/cudautil.h"
#include "gpu/stage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef struct epoch_rec {
  uint64_t images, bytes, batches;
  double seconds;
} epoch_rec;

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The progress line's note for a remote source: what the fetch stage has
 * read so far, what is in flight, retries and the disk cache's hits. */
static void fetch_note(gfc_progress *p, const gf_loader_stats *st) {
  char b[32];
  int n = snprintf(p->note, sizeof p->note,
                   "fetched %s in %llu reads, %u in flight, %llu retries",
                   gfc_fmt_bytes(st->fetch_bytes, b, sizeof b),
                   (unsigned long long)st->fetch_requests, st->fetch_inflight,
                   (unsigned long long)st->fetch_retries);
  if (st->disk_cache_hits && n > 0 && (size_t)n < sizeof p->note)
    snprintf(p->note + n, sizeof p->note - (size_t)n, ", %llu disk cache hits",
             (unsigned long long)st->disk_cache_hits);
}

static uint64_t peak_rss_bytes(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (uint64_t)ru.ru_maxrss * 1024u;
}

/* The simulated training step: the consumer is away for ms milliseconds.
 * In host mode it sleeps, as a GPU training step leaves the CPU to the
 * loader. */
static void step(double ms) {
  if (!(ms > 0 && ms <= 1e6)) /* also NaN: the options refuse it */
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  if (ts.tv_nsec < 0 || ts.tv_nsec > 999999999)
    ts.tv_nsec = 999999999;
  /* A signal cuts the sleep short: sleep the rest. Any other error (an
   * invalid time) cannot change by retrying: give up on the step. */
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* A JSON string: quotes around gfc_json_str's escaped body. */
static void json_str(const char *s) {
  putchar('"');
  gfc_json_str(stdout, s, strlen(s));
  putchar('"');
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

/* Names the stage that limits the rate, in plain words. */
static void bottleneck(const gf_loader_stats *st, double wall, double stall,
                       double step_ms, char *buf, size_t cap) {
  double thread_s = wall * st->threads;
  double decode = pct((double)st->decode.busy_ns * 1e-9, thread_s);
  double read = pct((double)st->read.busy_ns * 1e-9, thread_s);
  double cache = pct((double)st->cache.busy_ns * 1e-9, thread_s);
  double idle = pct((double)st->read.wait_ns * 1e-9, thread_s);
  if (stall < 5.0) {
    snprintf(buf, cap,
             "consumer-bound: the %s waited for data %.1f%% of the time; "
             "the loader keeps up",
             step_ms > 0 ? "simulated training step" : "consumer", stall);
  } else if (st->jpeg_gpu_decoded > st->jpeg_cpu_decoded && idle > 40.0) {
    snprintf(buf, cap, "GPU-decode-bound: nvJPEG (%s backend) decoded "
             "%.0f%% of the JPEG samples while the workers idled %.0f%%: "
             "the GPU's decode sets the rate (--gpu-decode-percent gives "
             "the workers a share)",
             st->jpeg_gpu_backend,
             pct((double)st->jpeg_gpu_decoded,
                 (double)(st->jpeg_gpu_decoded + st->jpeg_cpu_decoded)),
             idle);
  } else if (decode >= read && decode >= cache && decode + read > 60.0) {
    snprintf(buf, cap, "decode-bound: %u threads %.0f%% busy decoding "
             "(%.0f%% reading)", st->threads, decode, read);
  } else if (read > decode && read + decode > 60.0) {
    snprintf(buf, cap, "read-bound: %u threads %.0f%% busy waiting for reads "
             "(%.0f%% decoding)", st->threads, read, decode);
  } else if (cache > 40.0) {
    snprintf(buf, cap, "copy-bound: %u threads %.0f%% busy copying from the "
             "cache (memory bandwidth)", st->threads, cache);
  } else if (st->cache_direct * 2 > st->cache_hits + st->cache_misses) {
    snprintf(buf, cap, "host-to-device copy-bound: %.0f%% of the samples "
             "went to the GPU straight from the pinned cache (no CPU copy) "
             "and the workers idled %.0f%% of the time: the bus is the limit",
             pct((double)st->cache_direct,
                 (double)(st->cache_hits + st->cache_misses)), idle);
  } else {
    snprintf(buf, cap, "underfed: workers idle %.0f%% of the time while the "
             "consumer waited %.1f%%: raise --prefetch or --threads, or the "
             "consumer thread is the limit", idle, stall);
  }
}

/* The samples in the source (a dataset, else a folder listing); false when
 * it cannot be read. Leaves the calling thread's last error as it was. */
static bool source_samples(const gfc_bench_opts *o, uint64_t *n) {
  gf_error_info saved = *gf_last_error();
  gf_dataset *ds = NULL;
  gf_folder *f = NULL;
  bool ok = false;
  if (gf_dataset_open_with(o->source, &o->remote, &ds) == 0) {
    *n = gf_dataset_count(ds);
    ok = true;
  } else if (gf_folder_scan(o->source, o->labels, &f) == 0) {
    *n = f->count;
    ok = true;
  }
  gf_dataset_close(ds);
  gf_folder_free(f);
  gf_error_restore(&saved);
  return ok;
}

/* The loader's refusal, with the reason when the source holds fewer
 * samples than a batch: bench drops each epoch's last partial batch
 * (drop_last), so such a source gives no batch at all. Only that refusal
 * (the sampler's "gets no batch") gets the hint: another error on a small
 * source (a mistyped GPUFEED_ setting, say) is reported as it is. */
static void report_create_error(const gfc_bench_opts *o, int rc) {
  uint64_t n = 0;
  const gf_error_info *e = gf_last_error();
  if (rc == -EINVAL && e->code == rc && strstr(e->message, "gets no batch") &&
      source_samples(o, &n) && n > 0 && n < o->batch) {
    char shown[1024];
    gfc_error("bench",
              "%s (bench drops the last partial batch of each epoch, and "
              "%s holds %llu samples, fewer than a batch of %u: use "
              "--batch %llu or less)",
              e->message, gfc_shown(o->source, &o->remote, shown, sizeof shown),
              (unsigned long long)n, o->batch, (unsigned long long)n);
    return;
  }
  gfc_error_last("bench", rc);
}

/* What the transform makes of a sample, for the report: "RandomResizedCrop
 * 224x224 + flip, f16 nchw, normalised". */
static void describe_transform(const gfc_bench_opts *o, char *buf, size_t cap) {
  static const char *const dt[] = {"u8", "f32", "f16", "bf16"};
  char shape[96];
  switch (o->resize) {
  case GF_RESIZE_RANDOM_RESIZED_CROP:
    snprintf(shape, sizeof shape, "RandomResizedCrop %ux%u + flip", o->out_h,
             o->out_w);
    break;
  case GF_RESIZE_SHORTER_CENTER_CROP:
    snprintf(shape, sizeof shape, "Resize %u + CenterCrop %ux%u",
             o->resize_size, o->out_h, o->out_w);
    break;
  case GF_RESIZE_EXACT:
    snprintf(shape, sizeof shape, "Resize %ux%u", o->out_h, o->out_w);
    break;
  default:
    if (o->out_h)
      snprintf(shape, sizeof shape, "crop/pad %ux%u", o->out_h, o->out_w);
    else
      snprintf(shape, sizeof shape, "as stored");
  }
  bool norm = false;
  for (int c = 0; c < 4; c++)
    norm = norm || o->mean[c] != 0 || (o->std[c] != 0 && o->std[c] != 1);
  snprintf(buf, cap, "%s, %s %s%s", shape, dt[o->dtype & 3],
           o->layout == GF_LAYOUT_NCHW ? "nchw" : "nhwc",
           norm ? ", normalised (mean/std)" : "");
}

int gfc_bench(const gfc_bench_opts *o) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = o->source;
  cfg.remote = &o->remote;
  cfg.shards = &o->shards;
  cfg.labels_file = o->labels;
  cfg.batch_size = o->batch;
  cfg.threads = o->threads;
  cfg.seed = o->seed;
  cfg.order = o->order;
  cfg.cache_bytes = o->cache_bytes;
  cfg.prefetch = o->prefetch;
  cfg.channels = o->channels;
  cfg.io_backend = o->io;
  cfg.max_sample_bytes = o->max_sample_bytes;
  cfg.device = o->device;
  cfg.drop_last = 1;
  cfg.transform.out_dtype = o->dtype;
  cfg.transform.layout = o->layout;
  cfg.transform.height = o->out_h;
  cfg.transform.width = o->out_w;
  cfg.transform.resize = o->resize;
  cfg.transform.resize_size = o->resize_size;
  cfg.transform.hflip = o->hflip;
  for (int c = 0; c < 4; c++) {
    cfg.transform.mean[c] = o->mean[c];
    cfg.transform.std[c] = o->std[c];
  }
  cfg.trace_events = o->trace ? o->trace_events : 0;
  cfg.cache_direct =
      o->no_cache_direct ? GF_CACHE_DIRECT_OFF : GF_CACHE_DIRECT_AUTO;
  cfg.jpeg_scale = o->jpeg_scale_off ? GF_JPEG_SCALE_OFF : GF_JPEG_SCALE_AUTO;
  cfg.gpu_decode = o->gpu_decode;
  cfg.gpu_decode_percent = o->gpu_decode_percent;
  cfg.gpu_decoders = o->gpu_decoders;
  cfg.worker_sched = o->worker_sched;

  if (o->plan) {
    char plan[8192];
    int prc = gf_loader_plan(&cfg, plan, sizeof plan);
    if (prc < 0) {
      gfc_error_last("bench", prc);
      return GFC_EXIT_FAIL;
    }
    fputs(plan, stdout);
    return GFC_EXIT_OK;
  }
  /* The CUDA context is the process's, not the loader's: made before the
   * clock starts, its cost reported apart. */
  double ctx_ms = -1;
  if (o->device != GF_DEVICE_CPU) {
    char why[256];
    if (gf_stage_probe(o->device, why, sizeof why)) {
      double c0 = gfc_now();
      if (gf_gpu_init(o->device) == 0)
        ctx_ms = (gfc_now() - c0) * 1e3;
    }
  }
  double t_create = gfc_now();
  double cpu0 = cpu_seconds();
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0) {
    report_create_error(o, rc);
    return GFC_EXIT_FAIL;
  }
  gf_loader_stats st0 = {.struct_size = sizeof st0};
  gf_loader_stats_get(l, &st0);
  bool gpu = st0.device >= 0;
  void *stream = NULL;
  void *step_done[2] = {NULL, NULL}; /* the last two steps' ends */
  double h2d_gbps = 0;
  if (gpu) {
    if (o->h2d_probe &&
        (rc = gf_gpu_h2d_probe(st0.device, 256ull << 20, 20, &h2d_gbps)) < 0) {
      gfc_error_last("bench", rc);
      gf_loader_destroy(l);
      return GFC_EXIT_FAIL;
    }
    if ((rc = gf_gpu_stream_create(st0.device, &stream)) < 0 ||
        (rc = gf_gpu_event_create(st0.device, &step_done[0])) < 0 ||
        (rc = gf_gpu_event_create(st0.device, &step_done[1])) < 0) {
      gfc_error_last("bench", rc);
      gf_gpu_event_destroy(step_done[0]);
      gf_gpu_stream_destroy(stream);
      gf_loader_destroy(l);
      return GFC_EXIT_FAIL;
    }
  }
  double t0 = gfc_now();
  double create_s = t0 - t_create;
  uint64_t steps = 0;
  /* The host cost of next + release when the batch is already there:
   * calls that did not wait (the consumer wait counter did not move). */
  size_t ov_cap = 1 << 16, ov_n = 0;
  double *ov = malloc(ov_cap * sizeof *ov);
  bool stop = false;
  epoch_rec *ep = calloc(o->epochs, sizeof *ep);
  if (!ep) {
    free(ov);
    gf_loader_destroy(l);
    return GFC_EXIT_FAIL;
  }
  double first_batch_s = -1;
  int status = GFC_EXIT_OK;
  /* Tar shards' other fields (--fields): what the batches handed on. */
  uint64_t f_present = 0, f_absent = 0, f_bytes = 0;
  uint32_t nfields = gf_loader_field_count(l);
  gfc_progress prog;
  for (uint32_t e = 0; e < o->epochs && status == GFC_EXIT_OK && !stop; e++) {
    double te = gfc_now();
    char what[64];
    snprintf(what, sizeof what, "epoch %u/%u", e + 1, o->epochs);
    gfc_progress_start(&prog, what, "img", 0, o->quiet || o->json);
    gf_batch *b;
    for (;;) {
      if (o->max_batches && steps >= o->max_batches) {
        stop = true;
        break;
      }
      gf_loader_stats w0 = {.struct_size = sizeof w0};
      gf_loader_stats_get(l, &w0);
      double c0 = gfc_now();
      rc = gf_loader_next_on(l, stream, &b);
      double c1 = gfc_now();
      if (rc == GF_EEPOCHEND)
        break;
      if (rc < 0) {
        gfc_progress_end(&prog);
        gfc_error_last("bench", rc);
        status = GFC_EXIT_FAIL;
        break;
      }
      if (first_batch_s < 0)
        first_batch_s = gfc_now() - t_create;
      ep[e].images += b->count;
      ep[e].bytes += b->output ? b->output_bytes : b->data_bytes;
      for (uint32_t j = 0; j < b->count; j++)
        for (uint32_t f = 0; f < nfields; f++) {
          const void *fd;
          uint64_t fl;
          if (gf_batch_field(b, j, f, &fd, &fl) == 1) {
            f_present++;
            f_bytes += fl;
          } else {
            f_absent++;
          }
        }
      double r0, r1;
      if (gpu) {
        /* The step runs on the GPU after the batch arrives. The host keeps
         * one step queued, as a training loop that reads the previous
         * step's loss does: it waits (asleep, leaving its core to the
         * workers) for step k-1 to end, then takes batch k+1 while step k
         * runs. The GPU then waits between steps only for data, which is
         * what the stall measures, not for the host's own launch latency. */
        if (o->step_ms > 0)
          gf_gpu_spin(stream, o->step_ms);
        r0 = gfc_now();
        gf_loader_release_on(l, b, stream);
        r1 = gfc_now();
        gf_gpu_event_record(step_done[steps & 1], stream);
        if (steps > 0)
          gf_gpu_event_wait(step_done[(steps - 1) & 1]);
      } else {
        step(o->step_ms);
        r0 = gfc_now();
        gf_loader_release(l, b);
        r1 = gfc_now();
      }
      steps++;
      ep[e].batches++;
      gf_loader_stats w1 = {.struct_size = sizeof w1};
      gf_loader_stats_get(l, &w1);
      if (w1.consumer_wait_ns - w0.consumer_wait_ns < 2000 && ov && ov_n < ov_cap)
        ov[ov_n++] = (c1 - c0) + (r1 - r0);
      if (w1.remote[0])
        fetch_note(&prog, &w1);
      gfc_progress_update(&prog, ep[e].images);
    }
    /* The epoch's time ends with its last step (one is still queued). */
    if (gpu)
      gf_gpu_stream_sync(stream);
    gfc_progress_end(&prog);
    ep[e].seconds = gfc_now() - te;
    if (!o->quiet && !o->json && status == GFC_EXIT_OK)
      fprintf(stderr, "epoch %u: %llu images in %.2f s: %.0f images/s\n", e + 1,
              (unsigned long long)ep[e].images, ep[e].seconds,
              ep[e].seconds > 0 ? (double)ep[e].images / ep[e].seconds : 0.0);
  }
  double wall = gfc_now() - t0;
  double cpu = cpu_seconds() - cpu0;
  gf_loader_stats st = {.struct_size = sizeof st};
  gf_loader_stats_get(l, &st);
  uint64_t rss = gf_proc_rss_bytes(); /* before destroy: what the loader holds */
  if (o->trace && status == GFC_EXIT_OK &&
      (rc = gf_loader_trace_write(l, o->trace)) < 0) {
    gfc_error_last("bench", rc);
    status = GFC_EXIT_FAIL;
  }
  gf_loader_destroy(l);
  gf_gpu_event_destroy(step_done[0]);
  gf_gpu_event_destroy(step_done[1]);
  gf_gpu_stream_destroy(stream);
  if (status == GFC_EXIT_OK && first_batch_s < 0 && !stop) {
    /* Every epoch ended without a batch (a streaming source learns its
     * length only then; the loader's warning above says why). */
    char shown[1024];
    gfc_error("bench",
              "%s: no batch in %u epoch%s, nothing to measure (bench drops "
              "the last partial batch of each epoch: use a smaller --batch)",
              gfc_shown(o->source, &o->remote, shown, sizeof shown), o->epochs,
              o->epochs == 1 ? "" : "s");
    status = GFC_EXIT_FAIL;
  }
  if (status != GFC_EXIT_OK) {
    free(ep);
    free(ov);
    return status;
  }

  /* Steady state: the epochs after the first (which pays for a cold page
   * cache and, with a cache budget, fills it), or the only one. */
  uint32_t from = o->epochs > 1 ? 1 : 0;
  uint64_t images = 0, bytes = 0, batches = 0;
  double secs = 0;
  for (uint32_t e = from; e < o->epochs; e++) {
    batches += ep[e].batches;
    images += ep[e].images;
    bytes += ep[e].bytes;
    secs += ep[e].seconds;
  }
  double ips = secs > 0 ? (double)images / secs : 0;
  double gbs = secs > 0 ? (double)bytes / secs / 1e9 : 0;
  /* With a simulated step, the stall is the share of the wall time that
   * was not spent in steps: what the training loop lost waiting for data
   * (on the GPU too, not only in next()). Without one, next()'s waits. */
  double stall = o->step_ms > 0 && secs > 0
                     ? 100.0 * (1.0 - (double)batches * o->step_ms * 1e-3 / secs)
                     : pct((double)st.consumer_wait_ns * 1e-9, wall);
  if (stall < 0)
    stall = 0;
  double thread_s = wall * st.threads;
  double occ = st.next_calls ? (double)st.ready_sum / (double)st.next_calls : 0;
  double ov_p50 = -1, ov_min = -1, ov_p99 = -1;
  if (ov && ov_n) {
    qsort(ov, ov_n, sizeof *ov, cmp_double);
    ov_p50 = ov[ov_n / 2] * 1e6;
    ov_p99 = ov[(ov_n * 99) / 100 < ov_n ? (ov_n * 99) / 100 : ov_n - 1] * 1e6;
    ov_min = ov[0] * 1e6;
  }
  free(ov);
  char neck[256];
  bottleneck(&st, wall, stall, o->step_ms, neck, sizeof neck);
  char mode[32];
  if (gpu)
    snprintf(mode, sizeof mode, "gpu%d", st.device);
  else
    snprintf(mode, sizeof mode, "host");

  char xf[192];
  describe_transform(o, xf, sizeof xf);
  double jpeg_frac = st.jpeg_pixels_full ? (double)st.jpeg_pixels_decoded /
                                               (double)st.jpeg_pixels_full
                                         : 0.0;
  char shown[1024];
  gfc_shown(o->source, &o->remote, shown, sizeof shown);
  if (o->json) {
    printf("{\"source\":");
    json_str(shown);
    printf(",\"mode\":\"%s\",\"threads\":%u,\"batch\":%u,\"epochs\":%u,"
           "\"images\":%llu,\"seconds\":%.4f,\"images_per_s\":%.1f,"
           "\"gb_per_s\":%.4f,\"first_batch_ms\":%.2f,\"create_ms\":%.2f,"
           "\"busy_pct\":{\"read\":%.1f,\"decode\":%.1f,\"cache\":%.1f,"
           "\"idle\":%.1f},\"queue_occupancy\":%.2f,\"slots\":%llu,"
           "\"consumer_stall_pct\":%.2f,\"step_ms\":%.3f,\"cpu_cores_used\":%.2f,"
           "\"rss_bytes\":%llu,\"peak_rss_bytes\":%llu,\"device_pool_peak_bytes\":%llu,"
           "\"cuda_context_ms\":%.1f,\"h2d_probe_gb_per_s\":%.3f,\"next_release_us_p50\":%.2f,"
           "\"next_release_us_p99\":%.2f,\"next_release_us_min\":%.2f,\"next_release_samples\":%zu,"
           "\"cache_hits\":%llu,\"cache_misses\":%llu,\"cache_direct\":%llu,"
           "\"cache_pinned_bytes\":%llu,\"cache_pin_failures\":%llu,"
           "\"skipped\":%llu,\"io_backend\":",
           mode, st.threads, o->batch, o->epochs, (unsigned long long)images,
           secs, ips, gbs, first_batch_s * 1e3, create_s * 1e3,
           pct((double)st.read.busy_ns * 1e-9, thread_s),
           pct((double)st.decode.busy_ns * 1e-9, thread_s),
           pct((double)st.cache.busy_ns * 1e-9, thread_s),
           pct((double)st.read.wait_ns * 1e-9, thread_s), occ,
           (unsigned long long)st.slots, stall, o->step_ms, cpu / wall,
           (unsigned long long)rss, (unsigned long long)peak_rss_bytes(),
           (unsigned long long)st.device_pool_peak, ctx_ms, h2d_gbps, ov_p50, ov_p99,
           ov_min, ov_n,
           (unsigned long long)st.cache_hits,
           (unsigned long long)st.cache_misses,
           (unsigned long long)st.cache_direct,
           (unsigned long long)st.cache_pinned_bytes,
           (unsigned long long)st.cache_pin_failures,
           (unsigned long long)st.skipped);
    json_str(st.io_backend);
    if (nfields)
      printf(",\"fields\":{\"present\":%llu,\"absent\":%llu,\"bytes\":%llu}",
             (unsigned long long)f_present, (unsigned long long)f_absent,
             (unsigned long long)f_bytes);
    printf(",\"io_fallback_reason\":");
    json_str(st.io_fallback_reason);
    printf(",\"host_mode_reason\":");
    json_str(st.host_mode_reason);
    printf(",\"bottleneck\":");
    json_str(neck);
    printf(",\"transform\":");
    json_str(xf);
    printf(",\"autotune\":");
    json_str(st.tuning);
    printf(",\"prefetch\":%llu,\"io_in_flight\":%u,\"worker_sched\":\"%s\"",
           (unsigned long long)st.slots, st.io_in_flight,
           o->worker_sched == GF_WORKER_SCHED_NORMAL ? "normal" : "batch");
    printf(",\"jpeg\":{\"scale\":\"%s\",\"decoded\":[%llu,%llu,%llu,%llu],"
           "\"pixels_decoded\":%llu,\"pixels_full\":%llu,"
           "\"pixel_fraction\":%.4f}",
           o->jpeg_scale_off ? "off" : "on",
           (unsigned long long)st.jpeg_decoded[0],
           (unsigned long long)st.jpeg_decoded[1],
           (unsigned long long)st.jpeg_decoded[2],
           (unsigned long long)st.jpeg_decoded[3],
           (unsigned long long)st.jpeg_pixels_decoded,
           (unsigned long long)st.jpeg_pixels_full, jpeg_frac);
    static const char *const gd[] = {"auto", "off", "all"};
    printf(",\"jpeg_decode\":{\"gpu_decode\":\"%s\",\"gpu\":%llu,"
           "\"cpu\":%llu,\"gpu_refused\":%llu,\"backend\":",
           gd[o->gpu_decode % 3], (unsigned long long)st.jpeg_gpu_decoded,
           (unsigned long long)st.jpeg_cpu_decoded,
           (unsigned long long)st.jpeg_gpu_refused);
    json_str(st.jpeg_gpu_backend);
    printf(",\"why\":");
    json_str(st.jpeg_gpu_why);
    printf(",\"device_budget_bytes\":%llu,\"device_peak_bytes\":%llu,"
           "\"pinned_budget_bytes\":%llu,\"pinned_peak_bytes\":%llu}",
           (unsigned long long)st.jpeg_gpu_device_budget,
           (unsigned long long)st.jpeg_gpu_device_peak,
           (unsigned long long)st.jpeg_gpu_pinned_budget,
           (unsigned long long)st.jpeg_gpu_pinned_peak);
    if (st.remote[0]) {
      printf(",\"remote\":{\"storage\":");
      json_str(st.remote);
      printf(",\"requests\":%llu,\"bytes\":%llu,\"failed\":%llu,"
             "\"retries\":%llu,\"block_reads\":%llu,\"cached_samples\":%llu,"
             "\"wait_ms\":%.1f,\"in_flight_max\":%u,\"held_max_bytes\":%llu,"
             "\"budget_bytes\":%llu,\"disk_cache\":{\"hits\":%llu,"
             "\"misses\":%llu,\"bytes_read\":%llu,\"bytes_written\":%llu,"
             "\"evictions\":%llu},\"index\":{\"reads\":%llu,\"bytes\":%llu,"
             "\"pages\":%llu},\"unprepared\":%llu}",
             (unsigned long long)st.fetch_requests,
             (unsigned long long)st.fetch_bytes,
             (unsigned long long)st.fetch_failed,
             (unsigned long long)st.fetch_retries,
             (unsigned long long)st.fetch_block_reads,
             (unsigned long long)st.fetch_cached, st.fetch_wait_ns / 1e6,
             st.fetch_inflight_max, (unsigned long long)st.fetch_held_max,
             (unsigned long long)st.fetch_budget,
             (unsigned long long)st.disk_cache_hits,
             (unsigned long long)st.disk_cache_misses,
             (unsigned long long)st.disk_cache_bytes_read,
             (unsigned long long)st.disk_cache_bytes_written,
             (unsigned long long)st.disk_cache_evictions,
             (unsigned long long)st.index_reads,
             (unsigned long long)st.index_bytes,
             (unsigned long long)st.index_pages,
             (unsigned long long)st.fetch_unprepared);
    }
    if (o->trace) {
      printf(",\"trace\":{\"file\":");
      json_str(o->trace);
      printf(",\"events\":%llu,\"dropped\":%llu}",
             (unsigned long long)st.trace_recorded,
             (unsigned long long)st.trace_dropped);
    }
    printf(",\"epoch_images_per_s\":[");
    for (uint32_t e = 0; e < o->epochs; e++)
      printf("%s%.1f", e ? "," : "",
             ep[e].seconds > 0 ? (double)ep[e].images / ep[e].seconds : 0.0);
    printf("]}\n");
  } else {
    char b1[32], b2[32], b3[32];
    printf("gpufeed bench: %s\n", shown);
    printf("  mode              %s, %u threads, batch %u, io %s x %u%s%s",
           mode, st.threads, o->batch, st.io_backend, st.io_in_flight,
           st.io_fallback_reason[0] ? " (" : "", st.io_fallback_reason[0]
                                                    ? st.io_fallback_reason
                                                    : "");
    if (st.io_fallback_reason[0])
      printf(")");
    printf("\n");
    printf("  transform         %s\n", xf);
    printf("  autotune          %s\n", st.tuning);
    printf("  throughput        %.0f images/s, %.3f GB/s delivered (epochs "
           "%u-%u)\n",
           ips, gbs, from + 1, o->epochs);
    printf("  first batch       %.1f ms after create (create %.1f ms)",
           first_batch_s * 1e3, create_s * 1e3);
    if (ctx_ms >= 0)
      printf("; CUDA context made before, %.0f ms", ctx_ms);
    printf("\n");
    printf("  stage busy        read %.0f%%, decode %.0f%%, cache copy %.0f%%, "
           "idle %.0f%% (of %u threads x %.2f s)\n",
           pct((double)st.read.busy_ns * 1e-9, thread_s),
           pct((double)st.decode.busy_ns * 1e-9, thread_s),
           pct((double)st.cache.busy_ns * 1e-9, thread_s),
           pct((double)st.read.wait_ns * 1e-9, thread_s), st.threads, wall);
    printf("  queue occupancy   %.2f of %llu slots ready at each next()\n", occ,
           (unsigned long long)st.slots);
    printf("  consumer stall    %.2f%% of wall time waiting for data%s\n",
           stall, o->step_ms > 0 ? " (steady epochs: time not in steps)"
                                 : " (no simulated step)");
    printf("  CPU cores used    %.2f\n", cpu / wall);
    if (ov_p50 >= 0)
      printf("  next+release      %.1f us median, %.1f us p99, %.1f us min "
             "(%zu calls that found the batch ready)\n",
             ov_p50, ov_p99, ov_min, ov_n);
    if (gpu)
      printf("  device pool       peak %s in use, %s reserved\n",
             gfc_fmt_bytes(st.device_pool_peak, b1, sizeof b1),
             gfc_fmt_bytes(st.device_pool_reserved, b2, sizeof b2));
    if (h2d_gbps > 0)
      printf("  pinned H2D probe  %.2f GB/s; delivered %.2f GB/s = %.2fx\n",
             h2d_gbps, gbs, gbs / h2d_gbps);
    if (!gpu && st.host_mode_reason[0])
      printf("  host mode         %s\n", st.host_mode_reason);
    printf("  host memory       RSS %s, peak %s\n",
           gfc_fmt_bytes(rss, b1, sizeof b1),
           gfc_fmt_bytes(peak_rss_bytes(), b2, sizeof b2));
    if (st.cache_budget)
      printf("  cache             %llu hits, %llu misses, %s of %s used\n",
             (unsigned long long)st.cache_hits,
             (unsigned long long)st.cache_misses,
             gfc_fmt_bytes(st.cache_bytes, b1, sizeof b1),
             gfc_fmt_bytes(st.cache_budget, b2, sizeof b2));
    if (st.cache_direct || st.cache_pinned_bytes || st.cache_pin_failures)
      printf("  cache to GPU      %llu samples copied straight from the pinned "
             "cache (%s pinned, %llu chunks failed to pin)\n",
             (unsigned long long)st.cache_direct,
             gfc_fmt_bytes(st.cache_pinned_bytes, b1, sizeof b1),
             (unsigned long long)st.cache_pin_failures);
    if (st.jpeg_pixels_full)
      printf("  jpeg decodes      %llu at full scale, %llu at 1/2, %llu at "
             "1/4, %llu at 1/8 (DCT scaling %s); %.1f%% of their pixels "
             "decoded\n",
             (unsigned long long)st.jpeg_decoded[0],
             (unsigned long long)st.jpeg_decoded[1],
             (unsigned long long)st.jpeg_decoded[2],
             (unsigned long long)st.jpeg_decoded[3],
             o->jpeg_scale_off ? "off" : "on", 100.0 * jpeg_frac);
    if (st.jpeg_gpu_backend[0])
      printf("  jpeg decode       %llu on the GPU (nvJPEG, %s backend), %llu "
             "on the CPU (%llu of them refused by the GPU)\n",
             (unsigned long long)st.jpeg_gpu_decoded, st.jpeg_gpu_backend,
             (unsigned long long)st.jpeg_cpu_decoded,
             (unsigned long long)st.jpeg_gpu_refused);
    else if (st.jpeg_cpu_decoded)
      printf("  jpeg decode       %llu on the CPU; not on the GPU: %s\n",
             (unsigned long long)st.jpeg_cpu_decoded, st.jpeg_gpu_why);
    if (st.remote[0]) {
      printf("  remote            %s: %llu reads (%llu of whole blocks), "
             "%s, %llu retries, %llu failed; at most %u in flight, %s of "
             "%s read ahead held; workers waited %.1f ms\n",
             st.remote, (unsigned long long)st.fetch_requests,
             (unsigned long long)st.fetch_block_reads,
             gfc_fmt_bytes(st.fetch_bytes, b1, sizeof b1),
             (unsigned long long)st.fetch_retries,
             (unsigned long long)st.fetch_failed, st.fetch_inflight_max,
             gfc_fmt_bytes(st.fetch_held_max, b2, sizeof b2),
             gfc_fmt_bytes(st.fetch_budget, b3, sizeof b3),
             st.fetch_wait_ns / 1e6);
      if (st.disk_cache_hits || st.disk_cache_misses)
        printf("  disk cache        %llu hits, %llu misses, %s read, %s "
               "written, %llu evicted\n",
               (unsigned long long)st.disk_cache_hits,
               (unsigned long long)st.disk_cache_misses,
               gfc_fmt_bytes(st.disk_cache_bytes_read, b1, sizeof b1),
               gfc_fmt_bytes(st.disk_cache_bytes_written, b2, sizeof b2),
               (unsigned long long)st.disk_cache_evictions);
      if (st.index_reads)
        printf("  index             %llu pages of 4 KiB in memory, read in "
               "%llu reads (%s)%s\n",
               (unsigned long long)st.index_pages,
               (unsigned long long)st.index_reads,
               gfc_fmt_bytes(st.index_bytes, b1, sizeof b1),
               st.fetch_unprepared ? "; some records not read ahead (a "
                                     "failed read)"
                                   : "");
    }
    if (nfields)
      printf("  fields            %s: %llu present, %llu absent, %s "
             "handed on (all epochs)\n",
             o->shards.fields, (unsigned long long)f_present,
             (unsigned long long)f_absent,
             gfc_fmt_bytes(f_bytes, b1, sizeof b1));
    if (st.skipped)
      printf("  skipped           %llu bad samples (last: %s)\n",
             (unsigned long long)st.skipped, st.last_skip_reason);
    printf("  bottleneck        %s\n", neck);
    if (o->trace && st.trace_dropped)
      printf("  trace             %s: %llu events, %llu dropped (buffer "
             "full: raise --trace-events)\n",
             o->trace, (unsigned long long)st.trace_recorded,
             (unsigned long long)st.trace_dropped);
    else if (o->trace)
      printf("  trace             %s: %llu events\n", o->trace,
             (unsigned long long)st.trace_recorded);
  }
  free(ep);
  return GFC_EXIT_OK;
}
