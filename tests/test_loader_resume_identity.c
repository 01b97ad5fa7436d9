/* A resume state identifies the dataset it came from, not only its size:
 * importing it into a loader over another dataset of the same length is
 * refused with GF_ESTATE naming the fingerprint; the same dataset at
 * another path (a copy, or the same build made again) is accepted. For
 * both sources: built datasets that differ in content (shapes and bytes)
 * or labels, and PNG folders that differ in file names and labels. */
#include "loader_fixture.h"

#include <string.h>
#include <sys/stat.h>

#define N 40

static int export_after(const char *src, int batches, gf_loader_state *st) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = src;
  cfg.channels = 3;
  cfg.max_sample_bytes = 16 * 16 * 3;
  cfg.batch_size = 4;
  cfg.threads = 2;
  cfg.seed = 9;
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0)
    return rc;
  for (int i = 0; i < batches && rc == 0; i++) {
    gf_batch *b;
    rc = gf_loader_next(l, &b);
    if (rc == 0)
      rc = gf_loader_release(l, b);
  }
  if (rc == 0)
    rc = gf_loader_state_export(l, st);
  gf_loader_destroy(l);
  return rc;
}

static char msg[1024]; /* the import's message */

/* Imports st into a loader over src with the exporting loader's config:
 * returns the import's result, its message in msg. */
static int import_into(const char *src, const gf_loader_state *st) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = src;
  cfg.channels = 3;
  cfg.max_sample_bytes = 16 * 16 * 3;
  cfg.batch_size = 4;
  cfg.threads = 2;
  cfg.seed = 9;
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0)
    return rc;
  rc = gf_loader_state_import(l, st);
  snprintf(msg, sizeof msg, "%s", rc ? gf_last_error()->message : "");
  gf_loader_destroy(l);
  return rc;
}

static void expect_refused(const char *what, const char *from,
                           const char *into) {
  gf_loader_state st;
  CHECK_OK(export_after(from, 3, &st));
  int rc = import_into(into, &st);
  if (rc != GF_ESTATE || !strstr(msg, "fingerprint")) {
    fprintf(stderr, "%s: a state from %s imported into %s gave %s (%s); "
            "expected GF_ESTATE naming the fingerprint\n", what, from, into,
            gf_err_name(rc), rc ? msg : "accepted");
    gf_test_failures++;
  }
}

static void expect_accepted(const char *what, const char *from,
                            const char *into) {
  gf_loader_state st;
  CHECK_OK(export_after(from, 3, &st));
  int rc = import_into(into, &st);
  if (rc != 0) {
    fprintf(stderr, "%s: refused: %s: %s\n", what, gf_err_name(rc), msg);
    gf_test_failures++;
  }
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  char d[4][4200];
  fixture f[4];
  /* The same N samples four ways: a (ragged, 4 classes), b (a made again
   * elsewhere), c (other shapes and bytes, same classes), e (3 classes:
   * other labels and folder names). */
  static const struct {
    bool ragged;
    uint32_t classes;
  } kind[4] = {{true, 4}, {true, 4}, {false, 4}, {true, 3}};
  for (int i = 0; i < 4; i++) {
    snprintf(d[i], sizeof d[i], "%s/f%d", tmp, i);
    mkdir(d[i], 0755);
    CHECK_OK(fixture_make(&f[i], d[i], N, kind[i].classes, kind[i].ragged, 1,
                          3));
  }
  if (gf_test_failures)
    return gf_test_finish();

  expect_accepted("same dataset", f[0].ds_dir, f[0].ds_dir);
  expect_accepted("same dataset built again elsewhere", f[0].ds_dir,
                  f[1].ds_dir);
  expect_accepted("same folder listed elsewhere", f[0].png_dir, f[1].png_dir);
  expect_refused("dataset with other samples", f[0].ds_dir, f[2].ds_dir);
  expect_refused("dataset with other labels", f[0].ds_dir, f[3].ds_dir);
  expect_refused("folder with other names and labels", f[0].png_dir,
                 f[3].png_dir);
  expect_refused("folder state into its built dataset", f[0].png_dir,
                 f[0].ds_dir);
  for (int i = 0; i < 4; i++)
    fixture_free(&f[i]);
  return gf_test_finish();
}
