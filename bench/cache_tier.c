/* R6: epochs served from the disk cache tier against the same epochs read
 * from local disk (bench/cache_tier.sh runs it; bench/RESULTS.md has the
 * figures).
 *
 *   cache_tier DATASET CACHE_DIR [--rounds R] [--epochs E] [--threads T]
 *              [--batch B] [--order shuffle|block] [--latency-us U]
 *
 * The same loader configuration reads DATASET (a) from its folder, and (b)
 * as slow://DATASET (tests/slow_storage.c: the folder served as a remote
 * storage, every read through an engine, U microseconds a read) with
 * gf_remote_config.cache_dir = CACHE_DIR, after one warming epoch that
 * fills the tier. Rounds alternate which goes first; each measures E
 * epochs (create to the last batch) in images/s and in CPU time an image
 * (getrusage: every thread of the process; steadier than images/s on a
 * shared machine). With --plain 1 each round also reads (c) slow:// at no
 * latency without the tier: the remote read path's own cost (the fetch
 * stage), which the tier cannot go below. Prints each round, the medians,
 * their ratios (b / a), the tier's counters over the measured epochs
 * (expected: no miss), and a JSON line.
 *
 * Why a program of its own and not `gpufeed bench`: the CLI sets no
 * cache_dir yet, and slow:// exists only in test builds, so this is built
 * with the tests (bench/CMakeLists.txt) and measures both sides in that
 * same build. */
#include "gpufeed.h"
#include "io/storage.h"
#include "pipeline/loader_impl.h"
#include "slow_storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h> /* getrusage: the CPU an image takes */
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct opts {
  const char *dataset, *cache_dir;
  int rounds, epochs;
  uint32_t threads, batch, order, latency_us;
  bool plain;   /* also slow:// without the tier, at no latency */
  bool profile; /* the tier's rounds only (under perf) */
} opts;

static gf_remote_config remote;

static gf_loader_config config(const opts *o, const char *source, bool tier) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = source;
  c.batch_size = o->batch;
  c.threads = o->threads;
  c.order = o->order;
  c.seed = 1;
  c.device = GF_DEVICE_CPU;
  c.drop_last = 1;
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = tier ? o->cache_dir : NULL;
  c.remote = &remote;
  return c;
}

/* Images a second over `epochs` epochs of a new loader (create
 * included); the tier's counters over them into *ci when it is on. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru); /* every thread's, the exited ones' too */
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The CPU time the last run took an image, in microseconds. */
static double last_cpu_us;

static double run(const opts *o, const char *source, int epochs,
                  gf_storage_cache_info *ci) {
  gf_loader_config c = config(o, source, ci != NULL);
  double c0 = cpu_s();
  double t0 = now_s();
  gf_loader *l;
  int rc = gf_loader_create(&c, &l);
  if (rc < 0) {
    fprintf(stderr, "cache_tier: %s: %s\n", source, gf_last_error()->message);
    exit(1);
  }
  uint64_t images = 0;
  for (int e = 0; e < epochs; e++) {
    gf_batch *b;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      images += b->count;
      gf_loader_release(l, b);
    }
    if (rc != GF_EEPOCHEND) {
      fprintf(stderr, "cache_tier: %s: %s\n", source, gf_last_error()->message);
      exit(1);
    }
  }
  double s = now_s() - t0;
  last_cpu_us = (cpu_s() - c0) * 1e6 / (double)images;
  if (ci && !gf_storage_cache_info_get(gf_source_storage(l->src), ci)) {
    fprintf(stderr, "cache_tier: the disk cache tier is off for %s\n", source);
    exit(1);
  }
  gf_loader_destroy(l);
  return (double)images / s;
}

static void usage(void) {
  fprintf(stderr, "usage: cache_tier DATASET CACHE_DIR [--rounds R] "
                  "[--epochs E] [--threads T] [--batch B] "
                  "[--order shuffle|block] [--latency-us U] [--plain 0|1] "
                  "[--profile 0|1]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3)
    usage();
  opts o = {argv[1], argv[2],          5,    2,     0,
            256,     GF_ORDER_SHUFFLE, 2000, false, false};
  for (int i = 3; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--rounds"))
      o.rounds = atoi(v);
    else if (!strcmp(k, "--epochs"))
      o.epochs = atoi(v);
    else if (!strcmp(k, "--threads"))
      o.threads = (uint32_t)atoi(v);
    else if (!strcmp(k, "--batch"))
      o.batch = (uint32_t)atoi(v);
    else if (!strcmp(k, "--latency-us"))
      o.latency_us = (uint32_t)atoi(v);
    else if (!strcmp(k, "--profile"))
      o.profile = atoi(v) != 0;
    else if (!strcmp(k, "--plain"))
      o.plain = atoi(v) != 0;
    else if (!strcmp(k, "--order"))
      o.order = !strcmp(v, "block") ? GF_ORDER_BLOCK : GF_ORDER_SHUFFLE;
    else
      usage();
  }
  if (o.rounds < 1 || o.rounds > 100 || o.epochs < 1)
    usage();
  slow_storage_register();
  char slow[4200];
  snprintf(slow, sizeof slow, "slow://%s", o.dataset);

  /* The warming epochs (those measured: with drop_last, an epoch leaves
   * out samples the next reads): every range fetched (with the latency)
   * and kept. */
  slow_storage_latency_us = o.latency_us;
  gf_storage_cache_info ci;
  double cold = run(&o, slow, o.epochs, &ci);
  slow_storage_latency_us = 0;
  printf("warming epochs through slow:// (%u us a read): %.0f images/s, "
         "%llu reads, %llu bytes kept in %llu entries\n",
         o.latency_us, cold, (unsigned long long)slow_storage_reads,
         (unsigned long long)ci.written_bytes, (unsigned long long)ci.writes);

  double a[100], b[100], p[100], ca[100], cb[100], cp[100];
  uint64_t misses = 0, hits = 0, reads0 = slow_storage_reads;
  for (int r = 0; r < o.rounds; r++) {
    for (int k = 0; k < 2; k++) {
      bool tier = (r + k) % 2 == 1; /* alternate which goes first */
      if (tier) {
        b[r] = run(&o, slow, o.epochs, &ci);
        cb[r] = last_cpu_us;
        misses += ci.misses;
        hits += ci.hits;
      } else if (o.profile) {
        a[r] = 1;
      } else {
        a[r] = run(&o, o.dataset, o.epochs, NULL);
        ca[r] = last_cpu_us;
      }
    }
    if (o.plain) {
      uint64_t before = slow_storage_reads;
      p[r] = run(&o, slow, o.epochs, NULL);
      cp[r] = last_cpu_us;
      reads0 += slow_storage_reads - before;
    }
    printf("round %d: local %.0f images/s (%.1f us CPU an image), disk "
           "cache tier %.0f images/s (%.1f us) (%.3f)",
           r + 1, a[r], ca[r], b[r], cb[r], b[r] / a[r]);
    if (o.plain)
      printf("; slow:// at no latency without the tier %.0f images/s (%.1f "
             "us) (%.3f)",
             p[r], cp[r], p[r] / a[r]);
    printf("\n");
  }
  if (o.plain)
    printf("median slow:// at no latency without the tier: %.0f images/s, "
           "%.1f us CPU an image\n",
           median(p, o.rounds), median(cp, o.rounds));
  double ma = median(a, o.rounds), mb = median(b, o.rounds);
  double mca = median(ca, o.rounds), mcb = median(cb, o.rounds);
  printf("median of %d rounds of %d epochs: local %.0f images/s, disk cache "
         "tier %.0f images/s: %.3fx; CPU an image: local %.1f us, tier %.1f "
         "us (%.3fx)\n",
         o.rounds, o.epochs, ma, mb, mb / ma, mca, mcb, mcb / mca);
  printf("tier over the measured epochs: %llu hits, %llu misses, %llu reads "
         "of slow://\n",
         (unsigned long long)hits, (unsigned long long)misses,
         (unsigned long long)(slow_storage_reads - reads0));
  printf("{\"bench\":\"cache_tier\",\"order\":\"%s\",\"rounds\":%d,"
         "\"epochs\":%d,\"local_images_per_s\":%.1f,"
         "\"tier_images_per_s\":%.1f,\"ratio\":%.4f,\"tier_misses\":%llu,"
         "\"warm_images_per_s\":%.1f,\"local_cpu_us_per_image\":%.2f,"
         "\"tier_cpu_us_per_image\":%.2f}\n",
         o.order == GF_ORDER_BLOCK ? "block" : "shuffle", o.rounds, o.epochs,
         ma, mb, mb / ma, (unsigned long long)misses, cold, mca, mcb);
  return 0;
}
