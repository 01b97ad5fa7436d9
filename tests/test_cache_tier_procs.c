/* Processes sharing one disk cache folder (one per GPU on a node): two
 * processes (fork) read the same dataset through slow:// and one
 * cache_dir at once, each with its own loader; together they read each
 * range from slow:// exactly once (the reads of both, counted in each
 * process, add up to the entries in the folder: a range one of them is
 * fetching, the other waits for), and both get the local dataset's
 * batches. In shuffle and in block order. */
#include "cache_testutil.h"
#include "loader_fixture.h"
#include "slow_storage.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 600
#define EPOCHS 2

static fixture F;
static char slow_src[4200], cache_dir[4200];
static gf_remote_config remote;

typedef struct result {
  uint64_t hash[EPOCHS];
  uint64_t reads, engine_reads;
  uint64_t waits, timeouts, hits, misses, writes;
  int failures;
} result;

static gf_loader_config config(const char *src, uint32_t order) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = src;
  c.batch_size = 32;
  c.seed = 3;
  c.order = order;
  c.block_size = 20;
  c.threads = 2;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = cache_dir;
  c.remote = &remote;
  return c;
}

static void epochs(gf_loader *l, uint64_t *hash) {
  for (int e = 0; e < EPOCHS; e++) {
    hash[e] = 0;
    gf_batch *b;
    int rc;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      hash[e] = hash[e] * 1000003u ^ batch_hash(b);
      CHECK(fixture_check_batch(&F, b) == 0);
      gf_loader_release(l, b);
    }
    CHECK(rc == GF_EEPOCHEND);
  }
}

/* A child: waits for the start, reads, reports. */
static void child(int go, int out, uint32_t order) {
  char c;
  if (read(go, &c, 1) != 1)
    _exit(2);
  slow_storage_reset();
  slow_storage_latency_us = 5000;
  result r = {0};
  gf_loader_config cfg = config(slow_src, order);
  gf_loader *l;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (l) {
    epochs(l, r.hash);
    gf_storage_cache_info ci;
    CHECK(gf_storage_cache_info_get(cache_loader_storage(l), &ci));
    /* Read ahead of a third epoch: the counts are taken once the stage
     * has stopped. */
    gf_loader_destroy(l);
    r.waits = ci.claim_waits;
    r.timeouts = ci.claim_timeouts;
    r.hits = ci.hits;
    r.misses = ci.misses;
    r.writes = ci.writes;
  }
  r.reads = slow_storage_reads;
  r.engine_reads = slow_storage_engine_reads;
  r.failures = gf_test_failures;
  _exit(write(out, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 3);
}

static void two_processes(uint32_t order, const char *name) {
  cache_rmrf(cache_dir);
  /* The local batches first, and no thread left when forking. */
  uint64_t local[EPOCHS];
  gf_loader_config cfg = config(F.ds_dir, order);
  gf_loader *l;
  CHECK_OK(gf_loader_create(&cfg, &l));
  epochs(l, local);
  gf_loader_destroy(l);

  int go[2], out[2][2];
  CHECK(pipe(go) == 0);
  pid_t pid[2];
  for (int k = 0; k < 2; k++) {
    CHECK(pipe(out[k]) == 0);
    pid[k] = fork();
    if (pid[k] == 0) {
      close(go[1]);
      close(out[k][0]);
      child(go[0], out[k][1], order);
    }
    close(out[k][1]);
  }
  close(go[0]);
  CHECK(write(go[1], "gg", 2) == 2); /* both at once */
  close(go[1]);
  result r[2];
  for (int k = 0; k < 2; k++) {
    memset(&r[k], 0, sizeof r[k]);
    CHECK(read(out[k][0], &r[k], sizeof r[k]) == (ssize_t)sizeof r[k]);
    close(out[k][0]);
    int st;
    CHECK(waitpid(pid[k], &st, 0) == pid[k]);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK(r[k].failures == 0);
    for (int e = 0; e < EPOCHS; e++)
      CHECK(r[k].hash[e] == local[e]);
  }
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  printf("%s: slow:// reads %llu + %llu (engine %llu + %llu), %llu entries; "
         "waits %llu + %llu (timed out %llu + %llu), hits %llu + %llu, "
         "misses %llu + %llu\n",
         name, (unsigned long long)r[0].reads, (unsigned long long)r[1].reads,
         (unsigned long long)r[0].engine_reads,
         (unsigned long long)r[1].engine_reads, (unsigned long long)cs.entries,
         (unsigned long long)r[0].waits, (unsigned long long)r[1].waits,
         (unsigned long long)r[0].timeouts, (unsigned long long)r[1].timeouts,
         (unsigned long long)r[0].hits, (unsigned long long)r[1].hits,
         (unsigned long long)r[0].misses, (unsigned long long)r[1].misses);
  /* Each range downloaded once, by one of them. */
  CHECK(r[0].reads + r[1].reads == cs.entries);
  CHECK(r[0].writes + r[1].writes == cs.entries);
  CHECK(r[0].waits + r[1].waits > 0);
  CHECK(r[0].timeouts + r[1].timeouts == 0);
  CHECK(cs.tmps == 0 && cs.claims == 0);
}

int main(void) {
  CHECK_OK(slow_storage_register());
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", gf_test_tmpdir());
  fixture_shard_size = 256u << 10;
  if (fixture_make(&F, dir, N, 5, true, 4096, 3) != 0) {
    fprintf(stderr, "cannot make the fixture\n");
    return 1;
  }
  snprintf(slow_src, sizeof slow_src, "slow://%s", F.ds_dir);
  two_processes(GF_ORDER_SHUFFLE, "shuffle");
  two_processes(GF_ORDER_BLOCK, "block");
  fixture_free(&F);
  return gf_test_finish();
}
