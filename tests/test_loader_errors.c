/* Bad samples and failed reads:
 * - a corrupt sample in the middle of a dataset (a flipped bit in its
 *   stored bytes) and a truncated PNG in a folder, under the fail policy
 *   (next() returns the error naming the file, the sample and the reason,
 *   then the loader goes on) and the skip policy (every other sample
 *   exactly once, batches filled from the following samples, stats count
 *   the skip and keep the reason);
 * - a read error and a short read injected into each I/O backend. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "format/format.h"

#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void flip_byte(const char *path, uint64_t off) {
  int fd = open(path, O_RDWR);
  uint8_t c;
  CHECK(pread(fd, &c, 1, (off_t)off) == 1);
  c ^= 0x10;
  CHECK(pwrite(fd, &c, 1, (off_t)off) == 1);
  close(fd);
}

/* Runs one epoch in storage order; counts deliveries per sample and
 * returns the first error next() gave (0 if none). */
static int epoch(gf_loader_config *cfg, const fixture *f, uint32_t *counts,
                 int *errors, gf_loader_stats *st) {
  gf_loader *l;
  CHECK_OK(gf_loader_create(cfg, &l));
  int first = 0, rc;
  gf_batch *b;
  for (;;) {
    rc = gf_loader_next(l, &b);
    if (rc == GF_EEPOCHEND)
      break;
    if (rc < 0) {
      if (!first)
        first = rc;
      (*errors)++;
      fprintf(stderr, "  (expected) %s: %s\n", gf_err_name(rc),
              gf_last_error()->message);
      if (*errors > 100)
        break;
      continue;
    }
    CHECK(fixture_check_batch(f, b) == 0);
    for (uint32_t j = 0; j < b->count; j++)
      counts[b->indices[j]]++;
    gf_loader_release(l, b);
  }
  st->struct_size = sizeof *st;
  gf_loader_stats_get(l, st);
  gf_loader_destroy(l);
  return first;
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 60, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  uint64_t n = f.n;
  uint32_t *counts = calloc(n, sizeof *counts);

  /* Sample 21 (a zstd sample: 21 % 4 == 1) gets a flipped bit. */
  const uint64_t bad = 21;
  gf_dataset *ds;
  CHECK_OK(gf_dataset_open(f.ds_dir, &ds));
  gf_sample_info info;
  CHECK_OK(gf_dataset_sample_info(ds, bad, &info));
  char shard[4200];
  snprintf(shard, sizeof shard, "%s", gf_dataset_shard_path(ds, info.shard));
  gf_dataset_close(ds);
  flip_byte(shard, info.offset + info.length / 2);

  for (int backend = GF_IO_URING; backend <= GF_IO_PREAD; backend++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 8;
    cfg.threads = 3;
    cfg.order = GF_ORDER_SEQUENTIAL;
    cfg.io_backend = (uint32_t)(backend == GF_IO_URING ? GF_IO_AUTO : backend);
    gf_loader_stats st;
    int errors = 0;

    /* Fail: one error, naming shard, sample and reason; the rest of the
     * epoch is delivered. */
    memset(counts, 0, n * sizeof *counts);
    int rc = epoch(&cfg, &f, counts, &errors, &st);
    CHECK(rc == GF_ECORRUPT);
    CHECK(errors == 1);
    const gf_error_info *e = gf_last_error();
    (void)e;
    uint64_t delivered = 0;
    for (uint64_t i = 0; i < n; i++)
      delivered += counts[i];
    CHECK(counts[bad] == 0);
    CHECK(delivered == n - 8); /* the failed batch (16..23) is not lent */

    /* Skip: everything but the bad sample, exactly once, full batches. */
    cfg.error_policy = GF_ON_ERROR_SKIP;
    memset(counts, 0, n * sizeof *counts);
    errors = 0;
    rc = epoch(&cfg, &f, counts, &errors, &st);
    CHECK(rc == 0 && errors == 0);
    for (uint64_t i = 0; i < n; i++)
      CHECK(counts[i] == (i == bad ? 0u : 1u));
    CHECK(st.skipped == 1);
    CHECK(strstr(st.last_skip_reason, "sample 21") != NULL);
    CHECK(strstr(st.last_skip_reason, "checksum") != NULL);
    printf("skip reason: %s\n", st.last_skip_reason);
  }

  /* The fail policy's error message, checked once more directly. */
  {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 64;
    cfg.order = GF_ORDER_SEQUENTIAL;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    gf_batch *b;
    CHECK_ERR(gf_loader_next(l, &b), GF_ECORRUPT);
    const gf_error_info *e = gf_last_error();
    CHECK(e->sample == bad);
    CHECK(strstr(e->path, "shard-") != NULL);
    CHECK(strstr(e->message, "sample 21") != NULL);
    CHECK(strstr(e->message, "checksum") != NULL);
    CHECK(gf_loader_next(l, &b) == GF_EEPOCHEND);
    gf_loader_destroy(l);
  }

  /* A truncated PNG in the folder source. */
  {
    gf_folder *fo;
    CHECK_OK(gf_folder_scan(f.png_dir, NULL, &fo));
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", f.png_dir, fo->entries[33].path);
    gf_folder_free(fo);
    size_t len;
    uint8_t *png = gf_test_read_file(path, &len);
    CHECK_OK(gf_test_write_file(path, png, len / 2));
    free(png);
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.png_dir;
    cfg.channels = 3;
    cfg.batch_size = 10;
    cfg.order = GF_ORDER_SEQUENTIAL;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    gf_batch *b;
    int rc, seen = 0;
    while ((rc = gf_loader_next(l, &b)) != GF_EEPOCHEND) {
      if (rc < 0) {
        seen++;
        CHECK(rc == GF_EDECODE);
        CHECK(gf_last_error()->sample == 33);
        CHECK(strstr(gf_last_error()->message, "img") != NULL);
        continue;
      }
      gf_loader_release(l, b);
    }
    CHECK(seen == 1);
    gf_loader_destroy(l);
    cfg.error_policy = GF_ON_ERROR_SKIP;
    memset(counts, 0, n * sizeof *counts);
    int errors = 0;
    gf_loader_stats st;
    CHECK(epoch(&cfg, &f, counts, &errors, &st) == 0);
    CHECK(counts[33] == 0 && st.skipped == 1);
  }

  /* Injected read errors and short reads, each backend (in a fresh
   * dataset without the bad sample: the fixture's own copy). */
  fixture g;
  char sub[4400];
  snprintf(sub, sizeof sub, "%s/clean", dir);
  CHECK_OK(fixture_make(&g, sub, 40, 2, false, 1, 3));
  for (int backend = 0; backend < 2; backend++) {
    gf_fault_site site = backend ? GF_FAULT_PREAD : GF_FAULT_URING_CQE;
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = g.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 5;
    cfg.threads = 2;
    cfg.order = GF_ORDER_SEQUENTIAL;
    cfg.io_backend = backend ? GF_IO_PREAD : GF_IO_URING;
    gf_loader *probe;
    if (!backend && gf_loader_create(&cfg, &probe) < 0) {
      printf("io_uring unavailable here: %s\n", gf_last_error()->message);
      continue;
    }
    if (!backend)
      gf_loader_destroy(probe);
    /* A short read is continued: the data is right, nothing fails. */
    CHECK_OK(gf_fault_arm(site, 7, 0, GF_FAULT_SHORT));
    uint32_t *cnt = calloc(g.n, sizeof *cnt);
    int errors = 0;
    gf_loader_stats st;
    CHECK(epoch(&cfg, &g, cnt, &errors, &st) == 0);
    CHECK(gf_fault_fired(site) == 1);
    for (uint64_t i = 0; i < g.n; i++)
      CHECK(cnt[i] == 1);
    /* EIO on one read: that batch fails with -EIO, the rest arrive. */
    CHECK_OK(gf_fault_arm(site, 9, -EIO, 0));
    memset(cnt, 0, g.n * sizeof *cnt);
    errors = 0;
    CHECK(epoch(&cfg, &g, cnt, &errors, &st) == -EIO);
    CHECK(errors == 1);
    CHECK(gf_fault_fired(site) == 1);
    /* EINTR and EAGAIN are retried, invisible to the caller. */
    CHECK_OK(gf_fault_arm(site, 3, -EINTR, 0));
    memset(cnt, 0, g.n * sizeof *cnt);
    errors = 0;
    CHECK(epoch(&cfg, &g, cnt, &errors, &st) == 0);
    CHECK_OK(gf_fault_arm(site, 4, -EAGAIN, 0));
    errors = 0;
    CHECK(epoch(&cfg, &g, cnt, &errors, &st) == 0);
    gf_fault_disarm_all();
    free(cnt);
  }
  /* io_uring refused at setup: auto falls back to pread, says why. */
  {
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, 1, -EPERM, GF_FAULT_STICKY));
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = g.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 6;
    uint32_t *cnt = calloc(g.n, sizeof *cnt);
    int errors = 0;
    gf_loader_stats st;
    CHECK(epoch(&cfg, &g, cnt, &errors, &st) == 0);
    CHECK(strcmp(st.io_backend, "pread") == 0);
    CHECK(strstr(st.io_fallback_reason, "EPERM") != NULL);
    printf("fallback reason: %s\n", st.io_fallback_reason);
    /* Forced io_uring fails with the reason instead. */
    cfg.io_backend = GF_IO_URING;
    gf_loader *l = NULL;
    CHECK(gf_loader_create(&cfg, &l) == -EPERM);
    CHECK(l == NULL);
    gf_fault_disarm_all();
    free(cnt);
  }
  fixture_free(&g);
  fixture_free(&f);
  free(counts);
  return gf_test_finish();
}
