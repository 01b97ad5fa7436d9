/* The disk cache tier under the loader (lib/io/storage_cached.c over
 * tests/slow_storage.h): a dataset read through slow:// with cache_dir set
 * delivers the same batches as the local dataset, every epoch, in shuffle
 * and block order (aligned extents: padding between samples); each range
 * is fetched from slow:// once, and the epochs after the first read
 * nothing from it; a new loader over the same folder reads nothing from
 * it at all (the index included); the decoded-sample cache keeps working
 * on top (its epochs read nothing from slow:// and next to nothing from
 * the disk); the tier's counters say so. */
#include "cache_testutil.h"
#include "loader_fixture.h"
#include "slow_storage.h"

#include <stdlib.h>
#include <string.h>

#define N 600
#define B 32

/* Two datasets of the same images: a shard a sample (4 KiB shards, 4 KiB
 * alignment), and 256 KiB shards holding blocks (aligned: padding between
 * the samples, which a read of a run of blocks would take in). */
static fixture F, F2;
static const fixture *cur;
static char slow_src[4200], cache_dir[4200];

typedef struct epoch_out {
  uint64_t hash, batches;
  uint32_t counts[N];
  int rc;
} epoch_out;

static void run_epoch(gf_loader *l, epoch_out *o) {
  memset(o, 0, sizeof *o);
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) == 0) {
    o->hash = o->hash * 1000003u ^ batch_hash(b);
    CHECK(fixture_check_batch(cur, b) == 0);
    for (uint32_t j = 0; j < b->count; j++)
      if (b->indices[j] < N)
        o->counts[b->indices[j]]++;
    o->batches++;
    gf_loader_release(l, b);
  }
  o->rc = rc;
}

static gf_remote_config remote;

static gf_loader_config config(const char *src, uint32_t order) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = src;
  c.batch_size = B;
  c.seed = 11;
  c.order = order;
  c.block_size = 20;
  c.threads = 3;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = cache_dir;
  remote.cache_dir_bytes = 256u << 20;
  c.remote = &remote;
  return c;
}

static void info_of(gf_loader *l, gf_storage_cache_info *ci) {
  CHECK(gf_storage_cache_info_get(cache_loader_storage(l), ci));
}

/* Three epochs from the local dataset and through the tier: the same
 * batches; slow:// read only while the first ran. */
static void epochs(const fixture *fx, uint32_t order, const char *name) {
  cache_rmrf(cache_dir);
  cur = fx;
  snprintf(slow_src, sizeof slow_src, "slow://%s", fx->ds_dir);
  gf_loader_config c = config(fx->ds_dir, order);
  gf_loader *ll, *rl;
  CHECK_OK(gf_loader_create(&c, &ll));
  c.source = slow_src;
  slow_storage_reset();
  slow_storage_latency_us = 1000;
  CHECK_OK(gf_loader_create(&c, &rl));
  gf_storage_cache_info ci;
  info_of(rl, &ci);
  CHECK(strstr(ci.dir, cache_dir) == ci.dir);
  CHECK(ci.limit == 256u << 20);
  uint64_t reads[3], first = 0;
  for (int e = 0; e < 3; e++) {
    static epoch_out a, b;
    run_epoch(ll, &a);
    run_epoch(rl, &b);
    if (e == 0)
      first = a.hash;
    CHECK(a.rc == GF_EEPOCHEND && b.rc == GF_EEPOCHEND);
    CHECK(a.hash == b.hash);
    CHECK(a.batches == b.batches && a.batches > 0);
    for (uint32_t i = 0; i < N; i++)
      CHECK(a.counts[i] == b.counts[i]);
    reads[e] = slow_storage_reads;
  }
  info_of(rl, &ci);
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  printf("%s: slow:// reads after each epoch %llu %llu %llu (%llu by the "
         "engine); %llu entries; hits %llu, misses %llu, waits %llu, "
         "written %llu, served %llu bytes\n",
         name, (unsigned long long)reads[0], (unsigned long long)reads[1],
         (unsigned long long)reads[2],
         (unsigned long long)slow_storage_engine_reads,
         (unsigned long long)cs.entries, (unsigned long long)ci.hits,
         (unsigned long long)ci.misses, (unsigned long long)ci.claim_waits,
         (unsigned long long)ci.writes, (unsigned long long)ci.hit_bytes);
  CHECK(reads[0] > 0);
  /* Epochs 2 and 3 read nothing from slow:// (what the stage read ahead
   * of epoch 2 while epoch 1 ran was epoch 1's ranges: hits, or waits on
   * its own claims). */
  CHECK(reads[1] == reads[0] && reads[2] == reads[0]);
  /* Each range fetched once, and kept. */
  CHECK(slow_storage_reads == ci.writes);
  CHECK(cs.entries == ci.writes);
  CHECK(ci.misses == ci.writes);
  CHECK(ci.hits > 0 && ci.hit_bytes > 0);
  CHECK(ci.corrupt == 0 && ci.write_errors == 0 && ci.uncached == 0);
  CHECK(cs.tmps == 0 && cs.claims == 0);
  gf_loader_destroy(rl);

  /* A new loader over the same folder: nothing from slow://, the index
   * included; its first epoch is the first epoch's. */
  slow_storage_reset();
  CHECK_OK(gf_loader_create(&c, &rl));
  static epoch_out b;
  run_epoch(rl, &b);
  CHECK(b.hash == first && b.rc == GF_EEPOCHEND);
  info_of(rl, &ci);
  printf("%s, a new loader: %llu slow:// reads, %llu hits\n", name,
         (unsigned long long)slow_storage_reads, (unsigned long long)ci.hits);
  CHECK(slow_storage_reads == 0);
  CHECK(ci.misses == 0 && ci.hits > 0);
  gf_loader_destroy(rl);
  gf_loader_destroy(ll);
}

/* The decoded-sample cache on top: once it holds every sample, an epoch
 * reads nothing from slow:// and (nearly) nothing from the disk. */
static void ram_cache_on_top(void) {
  cache_rmrf(cache_dir);
  cur = &F2;
  snprintf(slow_src, sizeof slow_src, "slow://%s", F2.ds_dir);
  gf_loader_config c = config(slow_src, GF_ORDER_SHUFFLE);
  c.cache_bytes = 64u << 20;
  /* Reads in flight well under an epoch, so that the stage's read-ahead
   * (slots + 2 batches and the reads in flight) has planned epoch 3 only
   * once the decoded cache held every sample (at the default 1024 it
   * spans two epochs of this fixture). */
  remote.fetch_requests = 64;
  gf_loader *l;
  slow_storage_reset();
  CHECK_OK(gf_loader_create(&c, &l));
  static epoch_out o;
  run_epoch(l, &o);
  run_epoch(l, &o); /* read ahead before the cache held everything */
  gf_storage_cache_info before, after;
  info_of(l, &before);
  uint64_t reads = slow_storage_reads;
  run_epoch(l, &o);
  CHECK(o.rc == GF_EEPOCHEND);
  info_of(l, &after);
  printf("decoded cache on top: epoch 3 read %llu from slow://, %llu from "
         "the disk\n",
         (unsigned long long)(slow_storage_reads - reads),
         (unsigned long long)(after.hits - before.hits));
  CHECK(slow_storage_reads == reads);
  /* A worker reads a sample itself when the decoded cache held it as the
   * stage planned and no longer gives it at take (fetch.h): rare. */
  CHECK(after.hits - before.hits <= N / 50 && after.misses == before.misses);
  gf_loader_destroy(l);
}

int main(void) {
  CHECK_OK(slow_storage_register());
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", gf_test_tmpdir());
  if (fixture_make(&F, dir, N, 5, true, 4096, 3) != 0) {
    fprintf(stderr, "cannot make the fixture\n");
    return 1;
  }
  fixture_shard_size = 256u << 10;
  snprintf(dir, sizeof dir, "%s/ds2", gf_test_tmpdir());
  if (fixture_make(&F2, dir, N, 5, true, 4096, 3) != 0) {
    fprintf(stderr, "cannot make the fixture\n");
    return 1;
  }
  epochs(&F, GF_ORDER_SHUFFLE, "shuffle, a shard a sample");
  epochs(&F2, GF_ORDER_SHUFFLE, "shuffle");
  epochs(&F2, GF_ORDER_BLOCK, "block");
  ram_cache_on_top();
  fixture_free(&F);
  fixture_free(&F2);
  return gf_test_finish();
}
