/* loco datasets through the loader in host mode (GPU off): a PNG folder of
 * ragged gray and RGB images built with `gpufeed build --codec loco`
 * ($GPUFEED; bands of 3 rows and the default 8) and with the library's
 * writer (4096-aligned, so read with O_DIRECT where it can), loaded for two
 * epochs by 1 and 3 threads: every sample arrives once an epoch, its
 * pixels those libpng gives for its file, natively and converted to RGB. */
#include "loader_fixture.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Runs "$GPUFEED <args>" through the shell; returns its exit status. */
static int run_cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_cli(const char *fmt, ...) {
  const char *cli = getenv("GPUFEED");
  if (!cli || !cli[0]) {
    fprintf(stderr, "GPUFEED (the CLI binary) is not set\n");
    return -1;
  }
  char args[9000], cmd[9500];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s", cli, args);
  int st = system(cmd);
  int rc = st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
  if (rc != 0)
    fprintf(stderr, "exit %d: %s\n", rc, cmd);
  return rc;
}

/* Two epochs of the dataset ds against the references of f. */
static void load(const fixture *f, const char *ds, uint32_t threads,
                 const char *what) {
  gf_dataset *d = NULL;
  CHECK_OK(gf_dataset_open(ds, &d));
  for (uint64_t i = 0; d && i < gf_dataset_count(d); i++) {
    gf_sample_info s;
    CHECK_OK(gf_dataset_sample_info(d, i, &s));
    CHECK(s.codec == GF_CODEC_LOCO);
  }
  gf_dataset_close(d);

  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = ds;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 4;
  cfg.threads = threads;
  cfg.channels = f->channels;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l) {
    fprintf(stderr, "%s: create failed: %s\n", what, gf_last_error()->message);
    return;
  }
  uint32_t *seen = calloc(f->n, sizeof *seen);
  for (int epoch = 0; epoch < 2; epoch++) {
    memset(seen, 0, f->n * sizeof *seen);
    gf_batch *b;
    int rc;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      CHECK(b->skipped == 0);
      if (fixture_check_batch(f, b)) {
        fprintf(stderr, "%s: epoch %d: batch %llu differs\n", what, epoch,
                (unsigned long long)b->index);
        gf_test_failures++;
      }
      for (uint32_t j = 0; j < b->count; j++)
        if (b->indices[j] < f->n)
          seen[b->indices[j]]++;
      CHECK_OK(gf_loader_release(l, b));
    }
    if (rc != GF_EEPOCHEND) {
      fprintf(stderr, "%s: next: %s\n", what, gf_last_error()->message);
      gf_test_failures++;
      break;
    }
    for (uint64_t k = 0; k < f->n; k++)
      if (seen[k] != 1) {
        fprintf(stderr, "%s: epoch %d delivered sample %llu %u times\n", what,
                epoch, (unsigned long long)k, seen[k]);
        gf_test_failures++;
      }
  }
  free(seen);
  gf_loader_destroy(l);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  /* The same images twice (the fixture's are deterministic), with native
   * and RGB references. */
  fixture fn, f3;
  char sub[4400], ds[4400];
  snprintf(sub, sizeof sub, "%s/native", dir);
  CHECK_OK(fixture_make(&fn, sub, 29, 3, true, 1, 0));
  snprintf(sub, sizeof sub, "%s/rgb", dir);
  CHECK_OK(fixture_make(&f3, sub, 29, 3, true, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();

  snprintf(ds, sizeof ds, "%s/cli-3", dir);
  CHECK(run_cli("build '%s' '%s' --codec loco --level 3 --quiet", fn.png_dir,
                ds) == 0);
  load(&fn, ds, 1, "cli, bands of 3 rows, native");
  load(&f3, ds, 3, "cli, bands of 3 rows, RGB");

  snprintf(ds, sizeof ds, "%s/cli-8", dir);
  CHECK(run_cli("build '%s' '%s' --codec loco --threads 2 --quiet",
                fn.png_dir, ds) == 0);
  load(&fn, ds, 3, "cli, bands of 8 rows, native");

  snprintf(ds, sizeof ds, "%s/lib-4096", dir);
  CHECK_OK(fixture_build_dataset(fn.png_dir, ds, GF_CODEC_LOCO, 4096));
  load(&fn, ds, 3, "writer, 4096-aligned, native");
  load(&f3, ds, 1, "writer, 4096-aligned, RGB");

  fixture_free(&fn);
  fixture_free(&f3);
  return gf_test_finish();
}
