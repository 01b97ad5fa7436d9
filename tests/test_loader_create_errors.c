/* Errors raised while a loader is created keep the inner error's message:
 * the file (and sample, offset) named once, not "path: offset N:" again in
 * front of a message that already says it. A corrupt index, a PNG folder
 * whose first image is not a PNG, and a folder smaller than one batch
 * (that error says why and what to do). An unknown GPUFEED_LOG fails
 * create, as an unknown GPUFEED_IO does. */
#include "loader_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Occurrences of needle in hay. */
static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

/* gf_loader_create on src fails, naming `file` exactly once and each of
 * `once` (a "sample N:" or "offset N:") at most once. */
static void fails_naming_once(const char *src, uint32_t batch,
                              const char *file, const char *once) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = src;
  cfg.batch_size = batch;
  cfg.threads = 1;
  cfg.device = GF_DEVICE_CPU;
  gf_loader *l = NULL;
  int rc = gf_loader_create(&cfg, &l);
  CHECK(rc < 0 && l == NULL);
  const gf_error_info *e = gf_last_error();
  printf("%s\n", e->message);
  CHECK(e->code == rc);
  if (count(e->message, file) != 1 || (once && count(e->message, once) > 1)) {
    printf("  names %s %d times, %s %d times\n", file,
           count(e->message, file), once ? once : "-",
           once ? count(e->message, once) : 0);
    gf_test_failures++;
  }
  CHECK(strcmp(e->path, file) == 0);
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 12, 2, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();

  /* A folder smaller than one batch: why no batch, and what to do. */
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.batch_size = 64;
  cfg.threads = 1;
  cfg.device = GF_DEVICE_CPU;
  cfg.drop_last = 1;
  gf_loader *l = NULL;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  const char *m = gf_last_error()->message;
  printf("%s\n", m);
  CHECK(strstr(m, "rank 0 of 1 gets no batch of 64 from 12 samples") != NULL);
  CHECK(strstr(m, "drop_last drops the last partial batch") != NULL);
  CHECK(strstr(m, "use a batch of at most 12") != NULL);
  CHECK(strstr(m, "drop_last 0") != NULL);
  CHECK(count(m, f.ds_dir) == 1);
  /* More ranks than samples: an empty share, said so. */
  cfg.batch_size = 4;
  cfg.world = 16;
  cfg.rank = 15;
  cfg.partition = GF_PARTITION_DROP;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  m = gf_last_error()->message;
  printf("%s\n", m);
  CHECK(strstr(m, "share of the epoch is empty") != NULL);
  CHECK(strstr(m, "use at most 12 ranks") != NULL);
  /* Partial batches kept: the same folder loads. */
  cfg.world = 1;
  cfg.rank = 0;
  cfg.batch_size = 64;
  cfg.drop_last = 0;
  CHECK_OK(gf_loader_create(&cfg, &l));
  gf_loader_destroy(l);

  /* A mistyped environment setting: refused, as GPUFEED_IO's is. */
  static const char *const vars[] = {"GPUFEED_LOG", "GPUFEED_IO"};
  for (int v = 0; v < 2; v++) {
    setenv(vars[v], "bogus", 1);
    l = NULL;
    CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
    CHECK(l == NULL);
    m = gf_last_error()->message;
    printf("%s\n", m);
    CHECK(strstr(m, vars[v]) != NULL && strstr(m, "bogus") != NULL);
    unsetenv(vars[v]);
  }
  CHECK_OK(gf_loader_create(&cfg, &l));
  gf_loader_destroy(l);

  /* A damaged index header. */
  char index[4200];
  snprintf(index, sizeof index, "%s/index.gfi", f.ds_dir);
  int fd = open(index, O_WRONLY);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(pwrite(fd, "garbage!", 8, 100) == 8);
    close(fd);
  }
  fails_naming_once(f.ds_dir, 4, index, "offset ");

  /* The first image of a PNG folder is not a PNG (it sizes the slots). */
  char first[4200];
  snprintf(first, sizeof first, "%s/class00/img000000.png", f.png_dir);
  fd = open(first, O_WRONLY | O_TRUNC);
  if (fd < 0) {
    printf("no %s: the fixture's layout changed\n", first);
    gf_test_failures++;
  } else {
    CHECK(write(fd, "notapng\n", 8) == 8);
    close(fd);
    fails_naming_once(f.png_dir, 4, first, "sample 0:");
  }
  fixture_free(&f);
  return gf_test_finish();
}
