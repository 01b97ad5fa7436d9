/* Autotune's rule for reads alone: a raw dataset read with O_DIRECT, whose
 * samples the CPU neither decodes nor transforms, gets 2 threads x 64 reads
 * in flight where the config leaves threads and io_queue_depth 0 (on a
 * disk where more submitting threads made the same reads slower:
 * bench/RESULTS.md, "Cold reads"). Everything else keeps the queue depth
 * 16 and the CPU budget's threads; values the config sets are kept. A
 * loader made under the rule delivers every sample once an epoch, its
 * statistics saying the threads and reads in flight the plan chose. */
#include "loader_fixture.h"

#include "decode/decode.h"
#include "format/format.h"
#include "pipeline/loader_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 48
#define B 32

/* dir: f's PNG files as raw records, extents aligned to 4096 bytes. */
static int build_raw(const fixture *f, const char *dir) {
  gf_folder *fo;
  if (gf_folder_scan(f->png_dir, NULL, &fo) < 0)
    return -1;
  gf_writer_opts wo = {1u << 20, 4096};
  gf_writer *w;
  int rc = mkdir(dir, 0755) == 0 ? 0 : -1;
  if (rc == 0)
    rc = gf_writer_create(dir, &wo, &w);
  if (rc < 0) {
    gf_folder_free(fo);
    return -1;
  }
  for (uint32_t c = 0; rc == 0 && c < fo->class_count; c++)
    rc = gf_writer_add_class(w, fo->classes[c]);
  gf_decode_opts native = GF_DECODE_OPTS_INIT;
  for (uint64_t k = 0; rc == 0 && k < fo->count; k++) {
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", f->png_dir, fo->entries[k].path);
    size_t len;
    uint8_t *png = gf_test_read_file(path, &len);
    gf_shape s;
    rc = png ? gf_png_shape(png, len, &native, &s) : -1;
    uint8_t *px = rc == 0 ? malloc(gf_shape_bytes(&s)) : NULL;
    if (rc == 0 && px &&
        (rc = gf_png_decode(png, len, &native, px, gf_shape_bytes(&s), &s)) ==
            0)
      rc = gf_writer_add(w, px, gf_shape_bytes(&s), GF_CODEC_RAW, &s,
                         fo->entries[k].label, fo->entries[k].path);
    free(px);
    free(png);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  gf_folder_free(fo);
  return rc < 0 ? -1 : 0;
}

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
  CHECK_OK(build_raw(&f, raw));
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
