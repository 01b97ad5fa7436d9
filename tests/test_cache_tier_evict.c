/* The disk cache tier's limit: the folder stays under it while reads
 * larger than it go through (synchronous and engine reads, and a loader's
 * epochs over a dataset larger than the limit, watched from another
 * thread), every read still right; the least recently used entries go
 * first, an entry read counting as used (its mtime touched, at most once
 * a minute). */
#include "cache_testutil.h"
#include "loader_fixture.h"
#include "slow_storage.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SIZE (3u << 20)
#define PIECE 8192u

static char src[4200], loc[4300], cache_dir[4200];
static uint8_t *content;
static gf_remote_config remote;

static gf_storage *open_st(uint64_t limit) {
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = cache_dir;
  remote.cache_dir_bytes = limit;
  gf_storage *st = NULL;
  CHECK_OK(gf_storage_open(loc, &remote, &st));
  return st;
}

static void read_at(gf_storage *st, uint64_t off, uint64_t len, bool engine) {
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  uint8_t *b = malloc(len);
  if (engine)
    CHECK(cache_read_engine(st, o, off, len, b) == (int64_t)len);
  else
    CHECK_OK(gf_object_read(o, b, off, len));
  CHECK(memcmp(b, content + off, len) == 0);
  free(b);
  gf_object_close(o);
}

/* Reads of 120 pieces through a 256 KiB limit: never above it. */
static void under_limit(void) {
  cache_rmrf(cache_dir);
  const uint64_t limit = 256u << 10;
  gf_storage *st = open_st(limit);
  uint64_t most = 0;
  for (int round = 0; round < 2; round++)
    for (uint64_t i = 0; i < 120; i++) {
      read_at(st, i * 3 * PIECE, PIECE, i % 2);
      cache_census cs;
      cache_census_take(cache_dir, &cs);
      if (cs.charge > most)
        most = cs.charge;
    }
  gf_storage_cache_info ci;
  CHECK(gf_storage_cache_info_get(st, &ci));
  printf("240 reads of 8 KiB under a 256 KiB limit: %llu bytes at most, "
         "%llu evictions, %llu writes\n",
         (unsigned long long)most, (unsigned long long)ci.evictions,
         (unsigned long long)ci.writes);
  CHECK(most <= limit);
  CHECK(ci.evictions > 0 && ci.writes == 240);
  gf_storage_close(st);
}

static int64_t mtime_of(const char *path) {
  struct stat sb;
  if (stat(path, &sb) < 0)
    return -1;
  return (int64_t)sb.st_mtim.tv_sec;
}

static bool exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Least recently used first; a read entry counts as used. */
static void lru(void) {
  cache_rmrf(cache_dir);
  const uint64_t charge = gf_dcache_charge(PIECE);
  gf_storage *st = open_st(16 * charge);
  char path[20][4400];
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  for (int i = 0; i < 12; i++) {
    read_at(st, (uint64_t)i * PIECE, PIECE, false);
    cache_entry_file(cache_dir, o, (uint64_t)i * PIECE, PIECE, path[i],
                     sizeof path[i]);
    /* Entry i was last used 12 - i hours ago (E1 a minute ago). */
    time_t t = time(NULL) - (i == 11 ? 10 : (12 - i) * 3600);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    CHECK(utimensat(AT_FDCWD, path[i], ts, 0) == 0);
  }
  int64_t before0 = mtime_of(path[0]), before11 = mtime_of(path[11]);
  read_at(st, 0, PIECE, true);           /* entry 0 used: touched */
  read_at(st, 11 * PIECE, PIECE, false); /* used 10 s ago: not touched */
  CHECK(mtime_of(path[0]) > before0 + 3600);
  CHECK(mtime_of(path[11]) == before11);
  /* Four more fill the limit; a fifth evicts down to 7/8 of it, less its
   * own: 3 entries, the least recently used: 1, 2 and 3. */
  for (int i = 12; i < 17; i++)
    read_at(st, (uint64_t)i * PIECE, PIECE, false);
  gf_object_close(o);
  gf_storage_cache_info ci;
  CHECK(gf_storage_cache_info_get(st, &ci));
  printf("lru: %llu evictions; entries 0..4 %s %s %s %s %s\n",
         (unsigned long long)ci.evictions, exists(path[0]) ? "kept" : "gone",
         exists(path[1]) ? "kept" : "gone", exists(path[2]) ? "kept" : "gone",
         exists(path[3]) ? "kept" : "gone", exists(path[4]) ? "kept" : "gone");
  CHECK(ci.evictions == 3);
  CHECK(exists(path[0]) && !exists(path[1]) && !exists(path[2]) &&
        !exists(path[3]) && exists(path[4]) && exists(path[11]));
  gf_storage_close(st);
}

/* ---- a loader's epochs over a dataset larger than the limit ------------ */

#define N 600

static fixture F;
static atomic_bool watching;
static _Atomic uint64_t watched_max;

static void *watch(void *arg) {
  (void)arg;
  while (watching) {
    cache_census cs;
    cache_census_take(cache_dir, &cs);
    if (cs.charge > watched_max)
      watched_max = cs.charge;
    usleep(2000);
  }
  return NULL;
}

static uint64_t epoch_hash(gf_loader *l) {
  uint64_t h = 0;
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) == 0) {
    h = h * 1000003u ^ batch_hash(b);
    CHECK(fixture_check_batch(&F, b) == 0);
    gf_loader_release(l, b);
  }
  CHECK(rc == GF_EEPOCHEND);
  return h;
}

static void loader_epochs(uint32_t order) {
  cache_rmrf(cache_dir);
  const uint64_t limit = 1u << 20; /* the dataset takes about 2.5 MiB */
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = F.ds_dir;
  c.batch_size = 32;
  c.seed = 5;
  c.order = order;
  c.block_size = 20;
  c.threads = 3;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = cache_dir;
  remote.cache_dir_bytes = limit;
  c.remote = &remote;
  gf_loader *ll, *rl;
  CHECK_OK(gf_loader_create(&c, &ll));
  char slow[4200];
  snprintf(slow, sizeof slow, "slow://%s", F.ds_dir);
  c.source = slow;
  watched_max = 0;
  watching = true;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, watch, NULL) == 0);
  CHECK_OK(gf_loader_create(&c, &rl));
  for (int e = 0; e < 2; e++)
    CHECK(epoch_hash(ll) == epoch_hash(rl));
  gf_storage_cache_info ci;
  CHECK(gf_storage_cache_info_get(cache_loader_storage(rl), &ci));
  watching = false;
  pthread_join(t, NULL);
  printf("order %u, 2 epochs under a 1 MiB limit: %llu bytes at most, %llu "
         "evictions, %llu writes, %llu hits\n",
         order, (unsigned long long)watched_max,
         (unsigned long long)ci.evictions, (unsigned long long)ci.writes,
         (unsigned long long)ci.hits);
  CHECK(watched_max <= limit && watched_max > limit / 2);
  CHECK(ci.evictions > 0 && ci.write_errors == 0);
  gf_loader_destroy(rl);
  gf_loader_destroy(ll);
}

int main(void) {
  CHECK_OK(slow_storage_register());
  snprintf(src, sizeof src, "%s/src", gf_test_tmpdir());
  snprintf(loc, sizeof loc, "slow://%s", src);
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", gf_test_tmpdir());
  CHECK(mkdir(src, 0755) == 0);
  content = malloc(SIZE);
  uint64_t seed = 3;
  for (size_t i = 0; i < SIZE; i++)
    content[i] = (uint8_t)(gf_test_rand(&seed) >> 24);
  char file[4400];
  snprintf(file, sizeof file, "%s/obj", src);
  CHECK(gf_test_write_file(file, content, SIZE) == 0);
  under_limit();
  lru();
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  fixture_shard_size = 256u << 10;
  if (fixture_make(&F, dir, N, 5, true, 4096, 3) != 0) {
    fprintf(stderr, "cannot make the fixture\n");
    return 1;
  }
  loader_epochs(GF_ORDER_SHUFFLE);
  loader_epochs(GF_ORDER_BLOCK);
  fixture_free(&F);
  free(content);
  return gf_test_finish();
}
