/* The host cache's pinning (the GPU path that copies cached samples to the
 * device from where they lie), with a fake pinner standing in for
 * cudaHostRegister, so it runs on the CPU:
 * - chunks are pinned as records reach them, once each, and only those;
 * - a record no larger than a chunk never crosses a chunk boundary, and a
 *   hit's device address is its pinned chunk's address plus its offset;
 * - a record larger than a chunk, or in a chunk whose pin failed, has no
 *   device address but is still cached with the right bytes;
 * - the budget still holds; destroy unpins exactly what was pinned;
 * - set_pinner after a put is refused;
 * - 8 threads racing puts and gets: every chunk is pinned exactly once and
 *   no hit ever reports a device address before its chunk's pin finished.
 * Labelled threaded (run under ThreadSanitizer too). */
#include "pipeline/cache.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (64u << 10)
#define MAXPIN 4096
#define DEV_BASE 0x7000000000000000ull

typedef struct pin_rec {
  uint8_t *addr;
  size_t len;
  uint64_t dev;
  _Atomic int done;    /* the pin call returned */
  _Atomic int unpins;
} pin_rec;

typedef struct fake {
  pthread_mutex_t mu;
  pin_rec recs[MAXPIN];
  int n;
  int fail_nth;   /* 1-based pin call to fail (0: none) */
  int calls;
  unsigned sleep_us;
  int bad;        /* misuse seen by the pinner itself */
} fake;

static int fake_pin(void *ctx, void *addr, size_t len, uint64_t *dev) {
  fake *f = ctx;
  pthread_mutex_lock(&f->mu);
  int call = ++f->calls;
  int k = f->n;
  bool fail = call == f->fail_nth || k >= MAXPIN;
  if (!fail) {
    /* Two pins of overlapping memory would be a bug. */
    for (int i = 0; i < f->n; i++)
      if ((uint8_t *)addr < f->recs[i].addr + f->recs[i].len &&
          f->recs[i].addr < (uint8_t *)addr + len)
        f->bad++;
    f->recs[k].addr = addr;
    f->recs[k].len = len;
    f->recs[k].dev = DEV_BASE + (uint64_t)k * (1ull << 32);
    f->n++;
  }
  pthread_mutex_unlock(&f->mu);
  if (f->sleep_us)
    usleep(f->sleep_us); /* widen the window other puts race into */
  if (fail)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "fake pin fails");
  *dev = f->recs[k].dev;
  atomic_store(&f->recs[k].done, 1);
  return 0;
}

static void fake_unpin(void *ctx, void *addr, size_t len) {
  fake *f = ctx;
  pthread_mutex_lock(&f->mu);
  int hit = 0;
  for (int i = 0; i < f->n; i++)
    if (f->recs[i].addr == addr && f->recs[i].len == len) {
      atomic_fetch_add(&f->recs[i].unpins, 1);
      hit = 1;
    }
  if (!hit)
    f->bad++;
  pthread_mutex_unlock(&f->mu);
}

static void fake_init(fake *f) {
  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
}

static void fill(uint8_t *p, size_t len, uint64_t idx) {
  uint64_t s = idx * 1000003 + 7;
  for (size_t i = 0; i < len; i++)
    p[i] = (uint8_t)gf_test_rand(&s);
}

/* 0: a hit with the right bytes whose device address (if any) is
 * consistent with a completed pin of a chunk holding the whole record;
 * 1 otherwise. *pinned: whether it had a device address. */
static int check_hit(gf_cache *c, fake *f, uint64_t idx, size_t len,
                     bool *pinned) {
  const void *data;
  size_t got;
  uint64_t dev = 1;
  if (gf_cache_get_dev(c, idx, &data, &got, &dev) != 1 || got != len)
    return 1;
  uint8_t want[3 * CHUNK];
  fill(want, len, idx);
  if (memcmp(data, want, len) != 0)
    return 1;
  *pinned = dev != 0;
  if (!dev)
    return 0;
  const uint8_t *rec = (const uint8_t *)data - GF_CACHE_RECORD_HEADER;
  size_t rec_len = (size_t)gf_cache_record_bytes(len);
  pthread_mutex_lock(&f->mu);
  int ok = 0;
  for (int i = 0; i < f->n && !ok; i++) {
    const pin_rec *r = &f->recs[i];
    ok = rec >= r->addr && rec + rec_len <= r->addr + r->len &&
         atomic_load(&((pin_rec *)r)->done) &&
         dev == r->dev + (uint64_t)((const uint8_t *)data - r->addr);
  }
  pthread_mutex_unlock(&f->mu);
  return !ok;
}

static void single(void) {
  fake f;
  fake_init(&f);
  f.fail_nth = 3; /* the third chunk reached cannot be pinned */
  const uint64_t budget = 6 * CHUNK;
  gf_cache *c = NULL;
  CHECK_OK(gf_cache_create(budget, 1000, &c));
  if (!c)
    return;
  gf_cache_pinner p = {fake_pin, fake_unpin, &f, CHUNK};
  gf_cache_pinner odd = p;
  odd.chunk_bytes = CHUNK + 1;
  CHECK_ERR(gf_cache_set_pinner(c, &odd), -EINVAL);
  CHECK_OK(gf_cache_set_pinner(c, &p));
  CHECK_ERR(gf_cache_set_pinner(c, &p), -EINVAL); /* only once */
  CHECK(f.calls == 0); /* nothing is pinned before a record needs it */

  /* 20,000-byte records: three fit a chunk, the fourth would cross. */
  static uint8_t buf[3 * CHUNK];
  uint64_t idx = 0;
  for (; idx < 7; idx++) {
    fill(buf, 20000, idx);
    CHECK(gf_cache_put(c, idx, buf, 20000) == GF_CACHE_INSERTED);
  }
  CHECK(f.calls == 3); /* chunks 0, 1 and 2 (records 0-2, 3-5, 6) */
  gf_cache_counters cc;
  gf_cache_stats(c, &cc);
  CHECK(cc.pinned_bytes == 2 * CHUNK);
  CHECK(cc.pin_failures == 1);
  /* Record 6 starts chunk 2, skipping chunk 1's tail. */
  CHECK(cc.bytes_used == 2 * CHUNK + gf_cache_record_bytes(20000));
  int pinned = 0;
  for (uint64_t i = 0; i < 7; i++) {
    bool pn = false;
    CHECK(check_hit(c, &f, i, 20000, &pn) == 0);
    pinned += pn;
  }
  CHECK(pinned == 6); /* record 6 lies in the chunk whose pin failed */

  /* A record larger than a chunk is cached but never direct. */
  fill(buf, 2 * CHUNK, idx);
  CHECK(gf_cache_put(c, idx, buf, 2 * CHUNK) == GF_CACHE_INSERTED);
  bool pn = true;
  CHECK(check_hit(c, &f, idx, 2 * CHUNK, &pn) == 0);
  CHECK(!pn);
  idx++;
  /* A small one after it lands in a fresh chunk, pinned. */
  fill(buf, 100, idx);
  CHECK(gf_cache_put(c, idx, buf, 100) == GF_CACHE_INSERTED);
  CHECK(check_hit(c, &f, idx, 100, &pn) == 0);
  CHECK(pn);
  idx++;
  /* Fill to the end: the budget holds exactly. */
  while (gf_cache_put(c, idx, (fill(buf, 20000, idx), buf), 20000) ==
         GF_CACHE_INSERTED)
    idx++;
  gf_cache_stats(c, &cc);
  CHECK(cc.bytes_used <= budget);
  CHECK(cc.pinned_bytes <= budget);
  CHECK(cc.pinned_bytes == (uint64_t)f.n * CHUNK);
  int n = f.n;
  CHECK(n >= 4);
  gf_cache_destroy(c);
  for (int i = 0; i < n; i++)
    CHECK(atomic_load(&f.recs[i].unpins) == 1);
  CHECK(f.bad == 0);

  /* set_pinner after a put is refused; a disabled cache accepts it. */
  CHECK_OK(gf_cache_create(budget, 10, &c));
  CHECK(gf_cache_put(c, 0, buf, 10) == GF_CACHE_INSERTED);
  CHECK_ERR(gf_cache_set_pinner(c, &p), -EINVAL);
  gf_cache_destroy(c);
  CHECK_OK(gf_cache_create(0, 10, &c));
  CHECK_OK(gf_cache_set_pinner(c, &p));
  gf_cache_destroy(c);
  pthread_mutex_destroy(&f.mu);
}

#define THREADS 8
#define N 4000
#define OPS 6000

static gf_cache *tc;
static fake tf;

static size_t tlen(uint64_t idx) { return 1000 + (size_t)(idx * 7919 % 9000); }

static void *run(void *arg) {
  uint64_t rng = 77 + (uint64_t)(uintptr_t)arg;
  uint8_t *buf = malloc(10000);
  uintptr_t bad = 0;
  for (int op = 0; op < OPS; op++) {
    uint64_t idx = gf_test_rand(&rng) % N;
    bool pn;
    const void *d;
    size_t l;
    if (gf_cache_get(tc, idx, &d, &l) == 1) {
      bad += check_hit(tc, &tf, idx, tlen(idx), &pn) != 0;
      continue;
    }
    fill(buf, tlen(idx), idx);
    int rc = gf_cache_put(tc, idx, buf, tlen(idx));
    bad += rc < 0;
  }
  free(buf);
  return (void *)bad;
}

static void threads(void) {
  fake_init(&tf);
  tf.sleep_us = 200;
  CHECK_OK(gf_cache_create(40 * CHUNK, N, &tc));
  if (!tc)
    return;
  gf_cache_pinner p = {fake_pin, fake_unpin, &tf, CHUNK};
  CHECK_OK(gf_cache_set_pinner(tc, &p));
  pthread_t th[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    CHECK(pthread_create(&th[i], NULL, run, (void *)i) == 0);
  uintptr_t bad = 0;
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    bad += (uintptr_t)r;
  }
  CHECK(bad == 0);
  gf_cache_counters cc;
  gf_cache_stats(tc, &cc);
  /* Every chunk the records reached was pinned once (the pinner counts
   * overlaps as bad), and pinned bytes match. */
  uint64_t reached = (cc.bytes_used + CHUNK - 1) / CHUNK;
  CHECK((uint64_t)tf.n == reached);
  CHECK(cc.pinned_bytes == (uint64_t)tf.n * CHUNK);
  CHECK(cc.inserted > 0 && cc.hits > 0);
  gf_cache_destroy(tc);
  for (int i = 0; i < tf.n; i++)
    CHECK(atomic_load(&tf.recs[i].unpins) == 1);
  CHECK(tf.bad == 0);
  pthread_mutex_destroy(&tf.mu);
}

int main(void) {
  single();
  threads();
  return gf_test_finish();
}
