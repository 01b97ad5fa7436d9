/* The disk cache tier when its disk fails it (faults injected through
 * common/fault.h): a full disk (ENOSPC on every write, or on one) and a
 * failed rename never fail a read, synchronous or through the engine or a
 * loader's epochs: the bytes come from slow://, writing stops (the
 * counters and gf_storage_cache_info say why) and nothing half-written is
 * left; a cache_dir that cannot be made leaves the tier off and the reads
 * working; a missing one is made, its folder private (0700). */
#include "cache_testutil.h"
#include "loader_fixture.h"
#include "slow_storage.h"

#include "common/fault.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SIZE (1u << 20)
#define N 300

static char src[4200], loc[4300], cache_dir[4200];
static uint8_t *content;
static fixture F;

static gf_remote_config remote_for(const char *dir) {
  gf_remote_config r = GF_REMOTE_CONFIG_INIT;
  r.cache_dir = dir;
  return r;
}

static void read_both(gf_storage *st, uint64_t off, uint64_t len) {
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  uint8_t *b = malloc(len);
  CHECK_OK(gf_object_read(o, b, off, len));
  CHECK(memcmp(b, content + off, len) == 0);
  memset(b, 0, len);
  CHECK(cache_read_engine(st, o, off + 7, len, b) == (int64_t)len);
  CHECK(memcmp(b, content + off + 7, len) == 0);
  free(b);
  gf_object_close(o);
}

static gf_storage_cache_info info(gf_storage *st) {
  gf_storage_cache_info ci;
  CHECK(gf_storage_cache_info_get(st, &ci));
  return ci;
}

/* Every write fails with ENOSPC: reads go on; writing stops, said why. */
static void disk_full(void) {
  cache_rmrf(cache_dir);
  gf_remote_config r = remote_for(cache_dir);
  gf_storage *st;
  CHECK_OK(gf_storage_open(loc, &r, &st));
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -ENOSPC, GF_FAULT_STICKY));
  slow_storage_reset();
  for (uint64_t i = 0; i < 10; i++)
    read_both(st, i * 10000, 5000);
  gf_fault_disarm(GF_FAULT_WRITE);
  gf_storage_cache_info ci = info(st);
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  printf("disk full: %llu slow:// reads, %llu write errors, writing %d "
         "(%s), %llu entries, %llu tmps, %llu claims\n",
         (unsigned long long)slow_storage_reads,
         (unsigned long long)ci.write_errors, ci.writing, ci.why_not,
         (unsigned long long)cs.entries, (unsigned long long)cs.tmps,
         (unsigned long long)cs.claims);
  CHECK(slow_storage_reads == 20);
  CHECK(ci.write_errors == 1); /* then off for a while: not tried again */
  CHECK(!ci.writing && strstr(ci.why_not, "space"));
  CHECK(cs.entries == 0 && cs.tmps == 0 && cs.claims == 0);
  gf_storage_close(st);
}

/* One write fails (the Nth: a header, a payload, the usage counter) and
 * one rename: that entry is not kept, the reads are right. */
static void one_failure(gf_fault_site site, uint64_t nth, int err) {
  cache_rmrf(cache_dir);
  gf_remote_config r = remote_for(cache_dir);
  gf_storage *st;
  CHECK_OK(gf_storage_open(loc, &r, &st));
  CHECK_OK(gf_fault_arm(site, nth, err, 0));
  for (uint64_t i = 0; i < 6; i++)
    read_both(st, i * 10000, 5000);
  uint64_t fired = gf_fault_fired(site);
  gf_fault_disarm(site);
  gf_storage_cache_info ci = info(st);
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  printf("%s #%llu fails: %llu fired, %llu write errors, %llu entries, "
         "%llu tmps, %llu claims\n",
         gf_fault_site_name(site), (unsigned long long)nth,
         (unsigned long long)fired, (unsigned long long)ci.write_errors,
         (unsigned long long)cs.entries, (unsigned long long)cs.tmps,
         (unsigned long long)cs.claims);
  CHECK(fired == 1 && ci.write_errors == 1 && !ci.writing);
  CHECK(cs.entries == ci.writes && cs.entries < 12);
  CHECK(cs.tmps == 0 && cs.claims == 0);
  gf_storage_close(st);
  /* The usage counter still counts what is there: a walk agrees. */
  uint8_t b[32];
  char state[4400];
  snprintf(state, sizeof state, "%s/%s/state", cache_dir, GF_DCACHE_FOLDER);
  size_t len;
  uint8_t *s = gf_test_read_file(state, &len);
  CHECK(s && len >= sizeof b);
  if (s && len >= sizeof b)
    CHECK(gf_le64(s + 8) == cs.charge);
  free(s);
}

/* A loader's epochs on a full disk: the local dataset's batches. */
static void loader_disk_full(void) {
  cache_rmrf(cache_dir);
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = F.ds_dir;
  c.batch_size = 32;
  c.threads = 2;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  gf_remote_config r = remote_for(cache_dir);
  c.remote = &r;
  gf_loader *ll, *rl;
  CHECK_OK(gf_loader_create(&c, &ll));
  char slow[4200];
  snprintf(slow, sizeof slow, "slow://%s", F.ds_dir);
  c.source = slow;
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -ENOSPC, GF_FAULT_STICKY));
  CHECK_OK(gf_loader_create(&c, &rl));
  for (int e = 0; e < 2; e++) {
    uint64_t h[2] = {0, 0};
    gf_loader *ls[2] = {ll, rl};
    for (int k = 0; k < 2; k++) {
      gf_batch *b;
      int rc;
      while ((rc = gf_loader_next(ls[k], &b)) == 0) {
        h[k] = h[k] * 1000003u ^ batch_hash(b);
        CHECK(fixture_check_batch(&F, b) == 0);
        gf_loader_release(ls[k], b);
      }
      CHECK(rc == GF_EEPOCHEND);
    }
    CHECK(h[0] == h[1]);
  }
  gf_fault_disarm(GF_FAULT_WRITE);
  gf_storage_cache_info ci = info(cache_loader_storage(rl));
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  printf("a loader on a full disk: %llu misses, %llu write errors, %llu "
         "entries\n",
         (unsigned long long)ci.misses, (unsigned long long)ci.write_errors,
         (unsigned long long)cs.entries);
  CHECK(ci.write_errors == 1 && cs.entries == 0 && cs.tmps == 0);
  gf_loader_destroy(rl);
  gf_loader_destroy(ll);
}

/* A cache_dir that cannot be made: the tier is off, reads work. A missing
 * one is made. */
static void folders(void) {
  char bad[4500], file[4400];
  snprintf(file, sizeof file, "%s/a-file", gf_test_tmpdir());
  CHECK(gf_test_write_file(file, "x", 1) == 0);
  snprintf(bad, sizeof bad, "%s/cache", file); /* under a file: ENOTDIR */
  gf_remote_config r = remote_for(bad);
  gf_storage *st;
  CHECK_OK(gf_storage_open(loc, &r, &st));
  gf_storage_cache_info ci;
  CHECK(!gf_storage_cache_info_get(st, &ci));
  slow_storage_reset();
  read_both(st, 100, 1000);
  read_both(st, 100, 1000);
  CHECK(slow_storage_reads == 4);
  gf_storage_close(st);

  char fresh[4400], root[4500];
  snprintf(fresh, sizeof fresh, "%s/made/on/demand", gf_test_tmpdir());
  r = remote_for(fresh);
  CHECK_OK(gf_storage_open(loc, &r, &st));
  CHECK(gf_storage_cache_info_get(st, &ci));
  snprintf(root, sizeof root, "%s/%s", fresh, GF_DCACHE_FOLDER);
  struct stat sb;
  CHECK(stat(root, &sb) == 0 && S_ISDIR(sb.st_mode));
  CHECK((sb.st_mode & 0777) == 0700);
  read_both(st, 100, 1000);
  gf_storage_close(st);
}

int main(void) {
  CHECK_OK(slow_storage_register());
  snprintf(src, sizeof src, "%s/src", gf_test_tmpdir());
  snprintf(loc, sizeof loc, "slow://%s", src);
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", gf_test_tmpdir());
  CHECK(mkdir(src, 0755) == 0);
  content = malloc(SIZE);
  uint64_t seed = 9;
  for (size_t i = 0; i < SIZE; i++)
    content[i] = (uint8_t)(gf_test_rand(&seed) >> 24);
  char file[4400];
  snprintf(file, sizeof file, "%s/obj", src);
  CHECK(gf_test_write_file(file, content, SIZE) == 0);
  disk_full();
  one_failure(GF_FAULT_WRITE, 4, -ENOSPC);
  one_failure(GF_FAULT_WRITE, 5, -EIO);
  one_failure(GF_FAULT_WRITE, 6, -ENOSPC);
  one_failure(GF_FAULT_RENAME, 3, -EIO);
  folders();
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  if (fixture_make(&F, dir, N, 3, true, 1, 3) != 0) {
    fprintf(stderr, "cannot make the fixture\n");
    return 1;
  }
  loader_disk_full();
  fixture_free(&F);
  free(content);
  return gf_test_finish();
}
