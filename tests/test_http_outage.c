/* The loader over HTTP when the server goes away (issue: datasets over
 * HTTP, "what goes wrong over a network"), through netproxy in front of
 * nginx, with a read-ahead too small to hold the dataset (so the outage
 * meets reads still to be made):
 *   1. the server killed mid-epoch (its connections reset, connects
 *      refused) and back 1.5 s later: two epochs complete, every sample
 *      delivered exactly once an epoch with the local source's bytes, and
 *      the loader did wait for it (retries counted, the time spent);
 *   2. the server down for good: next() fails with GF_EREMOTE naming the
 *      server and the tries, within retry_ms and a try's own bound of the
 *      outage; the state exported after the last batch delivered, imported
 *      into a new loader once the server is back, delivers the rest of the
 *      epoch: every sample exactly once across the two loaders;
 *   3. the skip policy with one shard failing for good: its samples are
 *      skipped and counted (stats.skipped, last_skip_reason naming the
 *      shard and the status), every other sample delivered exactly once,
 *      none twice, none with other bytes.
 * Labelled threaded: the fetch stage, the workers and the engine meet
 * faults under TSan. */
#include "http_fixture.h"

#include "format/format.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { N = 96, BATCH = 6 };

static http_fixture f;
static uint64_t want_hash[N]; /* each sample's bytes, from the local source */
static uint32_t shard_of[N];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t sample_hash(const gf_batch *b, uint32_t j) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv(h, &b->labels[j], sizeof b->labels[j]);
  h = fnv(h, &b->shapes[j], sizeof b->shapes[j]);
  return fnv(h, (const uint8_t *)b->data + b->offsets[j],
             gf_shape_bytes(&b->shapes[j]));
}

/* Counts each delivered sample in seen[] and checks its bytes. */
static void take(const gf_batch *b, uint32_t *seen) {
  for (uint32_t j = 0; j < b->count; j++) {
    uint64_t i = b->indices[j];
    CHECK(i < N);
    if (i >= N)
      continue;
    seen[i]++;
    if (sample_hash(b, j) != want_hash[i]) {
      fprintf(stderr, "sample %llu: other bytes than the local source's\n",
              (unsigned long long)i);
      CHECK(false);
    }
  }
}

static gf_loader *make(const char *source, const gf_remote_config *rc,
                       uint32_t policy) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = source;
  cfg.remote = rc;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = BATCH;
  cfg.threads = 2;
  cfg.seed = 5;
  cfg.error_policy = policy;
  gf_loader *l = NULL;
  int got = gf_loader_create(&cfg, &l);
  CHECK_OK(got);
  if (got < 0)
    fprintf(stderr, "create: %s\n", gf_last_error()->message);
  return l;
}

/* The read-ahead at its least (the batches in flight): most of an epoch's
 * reads are still to be made when the server goes. */
static gf_remote_config remote(uint32_t attempts, uint32_t retry_ms) {
  gf_remote_config r = http_test_remote();
  r.max_attempts = attempts;
  r.retry_ms = retry_ms;
  r.connect_timeout_ms = 500;
  r.stall_ms = 1000;
  r.fetch_bytes = 1;
  r.fetch_requests = 4;
  return r;
}

static bool each_once(const char *what, const uint32_t *seen) {
  for (uint32_t i = 0; i < N; i++)
    if (seen[i] != 1) {
      fprintf(stderr, "%s: sample %u delivered %u times\n", what, i, seen[i]);
      return false;
    }
  return true;
}

static void *resume_later(void *arg) {
  (void)arg;
  usleep(1500 * 1000);
  http_ctl(&f, "resume");
  return NULL;
}

/* 1. Killed after 3 batches, back 1.5 s later. */
static void killed_and_back(void) {
  gf_remote_config rc = remote(40, 30000);
  gf_loader *l = make(f.proxy_url, &rc, GF_ON_ERROR_FAIL);
  if (!l)
    return;
  uint32_t seen[2][N] = {{0}};
  double t_kill = 0, t_end = 0;
  pthread_t th;
  bool started = false;
  for (uint64_t e = 0; e < 2; e++) {
    gf_batch *b;
    int got;
    uint64_t k = 0;
    while ((got = gf_loader_next(l, &b)) == 0) {
      take(b, seen[e]);
      CHECK_OK(gf_loader_release(l, b));
      if (e == 0 && ++k == 3) {
        http_ctl(&f, "kill");
        t_kill = now_s();
        started = pthread_create(&th, NULL, resume_later, NULL) == 0;
        CHECK(started);
      }
    }
    CHECK(got == GF_EEPOCHEND);
    if (got != GF_EEPOCHEND)
      fprintf(stderr, "killed and back: next: %d %s\n", got,
              gf_last_error()->message);
    if (e == 0)
      t_end = now_s();
  }
  if (started)
    pthread_join(th, NULL);
  CHECK(each_once("killed and back, epoch 0", seen[0]));
  CHECK(each_once("killed and back, epoch 1", seen[1]));
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  /* The outage was met: reads were retried, and the epoch waited for the
   * server's return. */
  CHECK(st.fetch_retries > 0);
  CHECK(t_end - t_kill >= 1.4);
  CHECK(st.fetch_failed == 0);
  if (st.fetch_retries == 0 || t_end - t_kill < 1.4)
    fprintf(stderr, "killed and back: %llu retries, epoch ended %.2f s after\n",
            (unsigned long long)st.fetch_retries, t_end - t_kill);
  gf_loader_destroy(l);
}

/* 2. Down for good after 4 batches; resumed later from the last state. */
static void down_for_good(void) {
  const uint32_t retry_ms = 2000;
  gf_remote_config rc = remote(3, retry_ms);
  gf_loader *l = make(f.proxy_url, &rc, GF_ON_ERROR_FAIL);
  if (!l)
    return;
  uint32_t seen[N] = {0};
  gf_loader_state state = {.struct_size = sizeof state};
  gf_batch *b;
  int got;
  uint64_t k = 0;
  double t_kill = 0;
  while ((got = gf_loader_next(l, &b)) == 0) {
    take(b, seen);
    CHECK_OK(gf_loader_release(l, b));
    CHECK_OK(gf_loader_state_export(l, &state));
    if (++k == 4) {
      http_ctl(&f, "kill");
      t_kill = now_s();
    }
  }
  double waited = now_s() - t_kill;
  char msg[sizeof gf_last_error()->message];
  snprintf(msg, sizeof msg, "%s", gf_last_error()->message);
  CHECK(k >= 4 && k < N / BATCH);
  CHECK(got == GF_EREMOTE);
  /* Within the bound: retry_ms for a request's tries, one try's own
   * (connect_timeout_ms), and slack for a loaded machine. */
  CHECK(waited <= retry_ms / 1000.0 + 0.5 + 3.0);
  char host[64];
  snprintf(host, sizeof host, "127.0.0.1:%u", (unsigned)f.px.port);
  CHECK(strstr(msg, host) && strstr(msg, "/ds/shard-") &&
        strstr(msg, "attempt"));
  if (got != GF_EREMOTE || !strstr(msg, host) || waited > 5.5)
    fprintf(stderr, "down for good: next %d after %.2f s: %s\n", got, waited,
            msg);
  gf_loader_destroy(l);

  /* Later, the server back: the rest of the epoch from the state. */
  http_ctl(&f, "resume");
  gf_loader *l2 = make(f.proxy_url, &rc, GF_ON_ERROR_FAIL);
  if (!l2)
    return;
  CHECK_OK(gf_loader_state_import(l2, &state));
  while ((got = gf_loader_next(l2, &b)) == 0) {
    take(b, seen);
    CHECK_OK(gf_loader_release(l2, b));
  }
  CHECK(got == GF_EEPOCHEND);
  CHECK(each_once("down for good, then resumed", seen));
  gf_loader_destroy(l2);
}

/* 3. The skip policy: shard 1 fails for good once the loader runs. */
static void skip_a_shard(void) {
  gf_remote_config rc = remote(2, 2000);
  gf_loader *l = make(f.proxy_url, &rc, GF_ON_ERROR_SKIP);
  if (!l)
    return;
  http_ctl(&f, "add status 503 method=GET path=/ds/shard-000001");
  uint32_t seen[N] = {0};
  gf_batch *b;
  int got;
  uint64_t skipped = 0;
  while ((got = gf_loader_next(l, &b)) == 0) {
    take(b, seen);
    skipped += b->skipped;
    CHECK_OK(gf_loader_release(l, b));
  }
  CHECK(got == GF_EEPOCHEND);
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  uint32_t missing = 0, in_shard1 = 0, twice = 0;
  for (uint32_t i = 0; i < N; i++) {
    in_shard1 += shard_of[i] == 1;
    twice += seen[i] > 1;
    if (!seen[i]) {
      missing++;
      CHECK(shard_of[i] == 1); /* only the failing shard's are missing */
    }
  }
  CHECK(twice == 0);
  CHECK(in_shard1 > 0 && missing > 0);
  /* Every sample not delivered was skipped and counted, none more. */
  CHECK(st.skipped == missing && skipped == missing);
  CHECK(strstr(st.last_skip_reason, "shard-000001") &&
        strstr(st.last_skip_reason, "503"));
  if (st.skipped != missing || !strstr(st.last_skip_reason, "503"))
    fprintf(stderr,
            "skip: %u missing (%u in shard 1), %llu skipped (%llu in "
            "batches): %s\n",
            missing, in_shard1, (unsigned long long)st.skipped,
            (unsigned long long)skipped, st.last_skip_reason);
  http_ctl(&f, "clear");
  gf_loader_destroy(l);
}

/* 4. A shard that cannot be opened (its header's GET fails from the
 * start): the read-ahead says its samples are not ready, the plan leaves
 * them to their workers (which report and skip them) instead of opening
 * the shard again under the fetch stage's lock, where every retry would
 * hold up the other shards' samples. */
static void shard_never_opens(void) {
  http_ctl(&f, "add status 503 method=GET path=/ds/shard-000002");
  gf_remote_config rc = remote(2, 2000);
  rc.fetch_requests = 64;
  gf_loader *l = make(f.proxy_url, &rc, GF_ON_ERROR_SKIP);
  if (!l) {
    http_ctl(&f, "clear");
    return;
  }
  uint32_t seen[N] = {0};
  gf_batch *b;
  int got;
  while ((got = gf_loader_next(l, &b)) == 0) {
    take(b, seen);
    CHECK_OK(gf_loader_release(l, b));
  }
  CHECK(got == GF_EEPOCHEND);
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    bad += shard_of[i] == 2 ? seen[i] != 0 : seen[i] != 1;
  }
  CHECK(bad == 0);
  /* Shard 2's samples were left to the workers by the plan. */
  CHECK(st.fetch_unprepared > 0);
  if (bad || !st.fetch_unprepared)
    fprintf(stderr,
            "shard never opens: %u wrong, %llu unprepared, %llu "
            "skipped: %s\n",
            bad, (unsigned long long)st.fetch_unprepared,
            (unsigned long long)st.skipped, st.last_skip_reason);
  http_ctl(&f, "clear");
  gf_loader_destroy(l);
}

int main(void) {
  if (http_fixture_start(&f, N, 24, HTTP_PROXY) < 0)
    return 1;
  /* Each sample's bytes and shard, from the local source. */
  gf_dataset *ds;
  CHECK_OK(gf_dataset_open(f.local, &ds));
  for (uint32_t i = 0; i < N; i++) {
    gf_sample_info info;
    CHECK_OK(gf_dataset_sample_info(ds, i, &info));
    shard_of[i] = info.shard;
  }
  CHECK(gf_dataset_num_shards(ds) >= 3);
  gf_dataset_close(ds);
  gf_loader *l = make(f.local, NULL, GF_ON_ERROR_FAIL);
  uint32_t seen[N] = {0};
  gf_batch *b;
  while (l && gf_loader_next(l, &b) == 0) {
    for (uint32_t j = 0; j < b->count; j++) {
      want_hash[b->indices[j]] = sample_hash(b, j);
      seen[b->indices[j]]++;
    }
    CHECK_OK(gf_loader_release(l, b));
  }
  CHECK(each_once("local", seen));
  gf_loader_destroy(l);

  killed_and_back();
  down_for_good();
  skip_a_shard();
  shard_never_opens();
  CHECK(http_fixture_stop(&f) == 0);
  return gf_test_finish();
}
