/* The skip policy's repair (the consumer filling a batch's holes with the
 * following samples, read and decoded on its own thread) and the finalize
 * of the repaired batch run outside the loader's mutex, as the design
 * says: at each point (an internal hook on the consumer's thread) another
 * thread can take the mutex. The batches stay right: every good sample
 * exactly once, each checked against its reference. */
#include "loader_fixture.h"

#include "format/format.h"
#include "pipeline/loader_impl.h"

#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int hook_calls, hook_locked;

/* Takes the mutex within a second. A worker may hold it for a moment
 * (trylock then fails now and then: that made the test flaky); the
 * consumer holding it across the hook never lets go while we wait, since
 * it waits for us: that times out. */
static void *try_mu(void *arg) {
  gf_loader *l = arg;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  int rc = pthread_mutex_timedlock(&l->mu, &until);
  if (rc == 0)
    pthread_mutex_unlock(&l->mu);
  return (void *)(intptr_t)rc;
}

static void hook(gf_loader *l, const char *where) {
  pthread_t t;
  void *rc = NULL;
  CHECK(pthread_create(&t, NULL, try_mu, l) == 0);
  pthread_join(t, &rc);
  hook_calls++;
  if (rc != NULL) {
    if (hook_locked++ < 3)
      printf("%s: the loader's mutex is held\n", where);
  }
}

static void flip_byte(const char *path, uint64_t off) {
  int fd = open(path, O_RDWR);
  uint8_t c;
  CHECK(pread(fd, &c, 1, (off_t)off) == 1);
  c ^= 0x10;
  CHECK(pwrite(fd, &c, 1, (off_t)off) == 1);
  close(fd);
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 60, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  /* Samples 21 and 22 get a flipped bit (zstd, gradzstd). */
  gf_dataset *ds;
  CHECK_OK(gf_dataset_open(f.ds_dir, &ds));
  for (uint64_t bad = 21; bad <= 22; bad++) {
    gf_sample_info info;
    CHECK_OK(gf_dataset_sample_info(ds, bad, &info));
    flip_byte(gf_dataset_shard_path(ds, info.shard),
              info.offset + info.length / 2);
  }
  gf_dataset_close(ds);
  gf_loader__test_hook = hook;
  for (int transform = 0; transform < 2; transform++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.order = GF_ORDER_SEQUENTIAL;
    cfg.batch_size = 8;
    cfg.threads = 2;
    cfg.channels = 3;
    cfg.device = GF_DEVICE_CPU;
    cfg.error_policy = GF_ON_ERROR_SKIP;
    if (transform) {
      cfg.transform.out_dtype = GF_OUT_F32;
      cfg.transform.height = 8;
      cfg.transform.width = 8;
    }
    gf_loader *l = NULL;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      break;
    uint32_t counts[60] = {0};
    for (int epoch = 0; epoch < 2; epoch++) {
      gf_batch *b;
      int rc;
      while ((rc = gf_loader_next(l, &b)) == 0) {
        CHECK(fixture_check_batch(&f, b) == 0);
        for (uint32_t j = 0; j < b->count; j++)
          counts[b->indices[j]]++;
        CHECK_OK(gf_loader_release(l, b));
      }
      CHECK_ERR(rc, GF_EEPOCHEND);
    }
    for (uint64_t i = 0; i < 60; i++)
      CHECK(counts[i] == (i == 21 || i == 22 ? 0u : 2u));
    gf_loader_destroy(l);
  }
  gf_loader__test_hook = NULL;
  printf("%d repair points, %d with the mutex held\n", hook_calls,
         hook_locked);
  CHECK(hook_calls >= 8); /* 2 loads and a finalize, 2 epochs, 2 loaders */
  CHECK(hook_locked == 0);
  fixture_free(&f);
  return gf_test_finish();
}
