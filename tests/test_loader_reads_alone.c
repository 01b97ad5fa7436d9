/* Autotune's rule for reads alone: a raw dataset read with O_DIRECT, whose
 * samples the CPU neither decodes nor transforms, gets 2 threads x 64 reads
 * in flight where the config leaves threads and io_queue_depth 0 (on a
 * disk where more submitting threads made the same reads slower:
 * bench/RESULTS.md, "Cold reads"). Everything else keeps the queue depth
 * 16 and the CPU budget's threads; values the config sets are kept. A
 * loader made under the rule delivers every sample once an epoch, its
 * statistics saying the threads and reads in flight the plan chose. */
#include "loader_fixture.h"

#include "pipeline/loader_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 48
#define B 32

static gf_loader_sizes plan_of(const gf_loader_config *cfg) {
  gf_memory_plan p;
  gf_loader_sizes z;
  memset(&z, 0, sizeof z);
  int rc = gf_loader_plan_get(cfg, &p, &z);
  CHECK_OK(rc);
  printf("%-44s %u threads x %u in flight (depth %u): %s\n", cfg->source,
         z.threads, z.chunk, z.queue_depth, z.tuning);
  return z;
}

static bool alone(const gf_loader_sizes *z) {
  return strstr(z->tuning, "O_DIRECT raw reads") != NULL;
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), N, 3, false, 4096, 3));
  char raw[4200];
  snprintf(raw, sizeof raw, "%s/raw", gf_test_tmpdir());
  CHECK_OK(fixture_build_dataset(f.png_dir, raw, GF_CODEC_RAW, 4096));
  if (gf_test_failures)
    return gf_test_finish();
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cores = n > 0 ? (uint32_t)n : 1;
  uint32_t want_t = cores > 2 ? 2 : cores; /* the rule, within the budget */

  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = raw;
  cfg.batch_size = B;
  cfg.io_direct = 1;
  cfg.threads = 0;
  cfg.io_queue_depth = 0;
  /* GPU mode (the plan's, with or without a device here), a transform on
   * the GPU: reads alone. */
  cfg.transform.height = 8;
  cfg.transform.width = 8;
  cfg.transform.out_dtype = GF_OUT_F16;
  gf_loader_sizes z = plan_of(&cfg);
  CHECK(alone(&z));
  CHECK(z.queue_depth == 64);
  CHECK(z.threads == want_t);
  CHECK(z.chunk == (B / (2 * want_t) < 64 ? B / (2 * want_t) : 64));

  /* Host mode without a transform: nothing for the CPU but the reads. */
  cfg.device = GF_DEVICE_CPU;
  memset(&cfg.transform, 0, sizeof cfg.transform);
  z = plan_of(&cfg);
  CHECK(alone(&z) && z.queue_depth == 64 && z.threads == want_t);

  /* Host mode with a transform: the CPU resizes, the usual budget. */
  cfg.transform.height = 8;
  cfg.transform.width = 8;
  z = plan_of(&cfg);
  CHECK(!alone(&z) && z.queue_depth == 16);
  CHECK(z.threads == (cores > 2 ? cores - 1 : cores) ||
        strstr(z.tuning, "cut to fit RAM") != NULL);
  memset(&cfg.transform, 0, sizeof cfg.transform);

  /* Buffered reads (the page cache's readahead): not the rule. */
  cfg.io_direct = 0;
  z = plan_of(&cfg);
  CHECK(!alone(&z) && z.queue_depth == 16);
  cfg.io_direct = 1;

  /* A dataset with decoded codecs (zstd, gradzstd, png records): the
   * workers decode, not the rule. */
  cfg.source = f.ds_dir;
  z = plan_of(&cfg);
  CHECK(!alone(&z) && z.queue_depth == 16);
  cfg.source = raw;

  /* Values the config sets are kept. */
  cfg.io_queue_depth = 8;
  z = plan_of(&cfg);
  CHECK(z.queue_depth == 8 && z.threads == want_t);
  cfg.io_queue_depth = 0;
  cfg.threads = 5;
  z = plan_of(&cfg);
  CHECK(z.queue_depth == 64 && z.threads == 5);
  cfg.threads = 0;

  /* A loader under the rule: the threads and reads in flight planned, and
   * every sample once an epoch, its pixels right. */
  z = plan_of(&cfg);
  gf_loader *l;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!gf_test_failures) {
    gf_loader_stats st = {.struct_size = sizeof st};
    CHECK_OK(gf_loader_stats_get(l, &st));
    CHECK(st.threads == z.threads && st.io_in_flight == z.chunk);
    CHECK(strcmp(st.tuning, z.tuning) == 0);
    uint32_t seen[N] = {0};
    gf_batch *b;
    int rc;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      for (uint32_t j = 0; j < b->count; j++)
        if (b->indices[j] < N)
          seen[b->indices[j]]++;
      /* Raw records of the native pixels: the references (RGB). */
      gf_test_failures += fixture_check_batch(&f, b);
      CHECK_OK(gf_loader_release(l, b));
    }
    CHECK(rc == GF_EEPOCHEND);
    for (uint32_t i = 0; i < N; i++)
      CHECK(seen[i] == 1);
    gf_loader_destroy(l);
  }
  fixture_free(&f);
  return gf_test_finish();
}
