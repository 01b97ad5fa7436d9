/* gf_loader_next_timed (the call a language binding waits with, in slices,
 * so that it can react to signals between them) and gf_loader_batch_wait_on:
 *  - polling with timeout 0 delivers exactly the batches next() delivers,
 *    epoch ends included, and a timed-out call takes nothing and is not
 *    counted in next_calls;
 *  - a timeout is honoured: a batch that cannot be ready yet (one worker
 *    decoding a 27 MB PNG) gives -ETIMEDOUT after the timeout, not before
 *    and not much after, and the next call delivers it;
 *  - -EBUSY (every slot held) comes before any wait;
 *  - batch_wait_on answers 0 for a lent batch in host mode and -EINVAL for
 *    anything else. */
#include "loader_fixture.h"

#include "decode/decode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void same_sequence(const fixture *f) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f->ds_dir;
  cfg.batch_size = 7;
  cfg.threads = 3;
  cfg.seed = 12;
  gf_loader *a, *b;
  CHECK_OK(gf_loader_create(&cfg, &a));
  CHECK_OK(gf_loader_create(&cfg, &b));
  if (gf_test_failures)
    return;
  uint64_t timeouts = 0, delivered = 0;
  for (int epoch = 0; epoch < 2; epoch++) {
    for (;;) {
      gf_batch *ba = NULL, *bb = (gf_batch *)&cfg; /* must be reset */
      int ra = gf_loader_next(a, &ba);
      int rb;
      while ((rb = gf_loader_next_timed(b, NULL, 0, &bb)) == -ETIMEDOUT) {
        CHECK(bb == NULL);
        timeouts++;
        bb = (gf_batch *)&cfg;
      }
      CHECK(ra == rb);
      if (ra != 0 || rb != 0)
        break;
      delivered++;
      CHECK(ba->epoch == bb->epoch && ba->index == bb->index);
      CHECK(batch_hash(ba) == batch_hash(bb));
      CHECK(fixture_check_batch(f, bb) == 0);
      CHECK_OK(gf_loader_release(a, ba));
      CHECK_OK(gf_loader_release(b, bb));
    }
  }
  gf_loader_stats sa = {.struct_size = sizeof sa}, sb = {.struct_size = sizeof sb};
  CHECK_OK(gf_loader_stats_get(a, &sa));
  CHECK_OK(gf_loader_stats_get(b, &sb));
  CHECK(sa.batches == delivered && sb.batches == delivered);
  CHECK(sa.next_calls == sb.next_calls);
  printf("same sequence: %llu batches, %llu timed-out polls\n",
         (unsigned long long)delivered, (unsigned long long)timeouts);
  gf_loader_destroy(a);
  gf_loader_destroy(b);
}

/* One 3000x3000 RGB noise PNG: a worker needs well over a few ms for it. */
static int make_big(const char *dir, char *out, size_t cap) {
  snprintf(out, cap, "%s/big", dir);
  char sub[4200], path[4300];
  snprintf(sub, sizeof sub, "%s/c", out);
  if (mkdir(out, 0777) != 0 || mkdir(sub, 0777) != 0)
    return -1;
  gf_shape s = {3000, 3000, 3, GF_DTYPE_U8};
  uint8_t *px = malloc(gf_shape_bytes(&s));
  if (!px)
    return -1;
  uint64_t seed = 5;
  for (uint64_t i = 0; i < gf_shape_bytes(&s); i += 8) {
    uint64_t r = gf_test_rand(&seed);
    memcpy(px + i, &r, 8);
  }
  void *png;
  size_t len;
  int rc = gf_png_encode(px, &s, 1, &png, &len);
  free(px);
  if (rc < 0)
    return rc;
  snprintf(path, sizeof path, "%s/a.png", sub);
  rc = gf_test_write_file(path, png, len);
  free(png);
  return rc;
}

static void deadline(const char *dir) {
  char big[4096];
  CHECK_OK(make_big(dir, big, sizeof big));
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = big;
  cfg.batch_size = 1;
  cfg.threads = 1;
  cfg.prefetch = 1;
  cfg.device = GF_DEVICE_CPU;
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  CHECK_OK(rc);
  if (rc < 0)
    return;
  const int64_t timeout = 3000000; /* 3 ms */
  gf_batch *b = (gf_batch *)&cfg;
  uint64_t t0 = now_ns();
  CHECK_ERR(gf_loader_next_timed(l, NULL, timeout, &b), -ETIMEDOUT);
  uint64_t waited = now_ns() - t0;
  CHECK(b == NULL);
  CHECK(waited >= (uint64_t)timeout);
  CHECK(waited < 2000000000ull); /* not a wait for the batch */
  printf("timed out after %.2f ms\n", (double)waited / 1e6);
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  CHECK(st.next_calls == 0 && st.ready_sum == 0); /* the timeout is not a call */
  CHECK(st.consumer_wait_ns >= (uint64_t)timeout); /* but its wait counts */
  /* No limit: the batch comes. */
  CHECK_OK(gf_loader_next_timed(l, NULL, -1, &b));
  CHECK_OK(gf_loader_stats_get(l, &st));
  CHECK(st.next_calls == 1 && st.batches == 1);
  if (b && b != (gf_batch *)&cfg) {
    CHECK(b->count == 1 && b->indices[0] == 0);
    CHECK_OK(gf_loader_batch_wait_on(l, b, NULL)); /* host mode: nothing */
    /* Every slot held: -EBUSY at once, not a timeout. */
    gf_batch *b2;
    t0 = now_ns();
    CHECK_ERR(gf_loader_next_timed(l, NULL, 1000000000, &b2), -EBUSY);
    CHECK(now_ns() - t0 < 500000000ull);
    gf_batch fake;
    memset(&fake, 0, sizeof fake);
    CHECK_ERR(gf_loader_batch_wait_on(l, &fake, NULL), -EINVAL);
    CHECK_OK(gf_loader_release(l, b));
    CHECK_ERR(gf_loader_batch_wait_on(l, b, NULL), -EINVAL); /* released */
  }
  gf_batch *b3;
  CHECK_ERR(gf_loader_next_timed(l, NULL, -1, &b3), GF_EEPOCHEND);
  CHECK_ERR(gf_loader_next_timed(NULL, NULL, 0, &b3), -EINVAL);
  CHECK_ERR(gf_loader_batch_wait_on(NULL, b3, NULL), -EINVAL);
  gf_loader_destroy(l);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 60, 3, true, 1, 0));
  if (gf_test_failures)
    return gf_test_finish();
  same_sequence(&f);
  deadline(dir);
  fixture_free(&f);
  return gf_test_finish();
}
