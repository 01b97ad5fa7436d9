/* A dataset over a storage without descriptors (slow://, a latency a
 * read) used from many threads at once, as the loader's workers and its
 * fetch stage use it: records, source names, reads (shards opened on
 * first use) and prepares of random samples, racing for the same pages
 * and shards. Every answer is the local open's; each page is read once
 * (a thread that finds it being read waits for that read). Run under
 * TSan by tests/run.sh --sanitize=thread. */
#include "format/format.h"
#include "slow_storage.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 50000u
#define THREADS 6
#define ROUNDS 1500

static gf_dataset *g_local, *g_remote;
static _Atomic int g_bad;

static int build(const char *dir) {
  mkdir(dir, 0755);
  gf_writer_opts wo = {
      .shard_size = 16u << 10, .alignment = 1, .index_version = 0};
  gf_writer *w;
  int rc = gf_writer_create(dir, &wo, &w);
  for (uint64_t i = 0; rc == 0 && i < N; i++) {
    gf_shape s = {1 + (uint32_t)(i % 3), 2, 1, GF_DTYPE_U8};
    uint8_t px[6];
    for (int k = 0; k < 6; k++)
      px[k] = (uint8_t)(i * 13 + (uint64_t)k);
    char src[64];
    snprintf(src, sizeof src, "f/%06llu.png", (unsigned long long)i);
    rc = gf_writer_add(w, px, (size_t)gf_shape_bytes(&s), GF_CODEC_RAW, &s,
                       (int64_t)i, src);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  return rc;
}

static void *worker(void *arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg * 7777 + 1;
  uint64_t batch[32];
  for (int r = 0; r < ROUNDS; r++) {
    uint64_t i = gf_test_rand(&seed) % N;
    gf_sample_info a, b;
    int what = (int)(gf_test_rand(&seed) % 4);
    if (gf_dataset_sample_info(g_local, i, &a) < 0) {
      g_bad++;
      continue;
    }
    switch (what) {
    case 0: /* the loader's record */
      if (gf_dataset_record(g_remote, i, &b) < 0 || b.length != a.length ||
          b.offset != a.offset || b.label != a.label ||
          b.checksum != a.checksum)
        g_bad++;
      break;
    case 1: /* with its source name */
      if (gf_dataset_sample_info(g_remote, i, &b) < 0 ||
          b.source_len != a.source_len ||
          memcmp(a.source, b.source, a.source_len) != 0)
        g_bad++;
      break;
    case 2: { /* its bytes: the shard opened by whoever comes first */
      uint8_t x[16], y[16];
      if (gf_dataset_read(g_local, i, x, sizeof x) != (int64_t)a.length ||
          gf_dataset_read(g_remote, i, y, sizeof y) != (int64_t)a.length ||
          memcmp(x, y, a.length) != 0)
        g_bad++;
      break;
    }
    default: /* a fetch stage's prepare of a few */
      for (int k = 0; k < 32; k++)
        batch[k] = gf_test_rand(&seed) % N;
      if (gf_dataset_prepare(g_remote, batch, 32, NULL) < 0)
        g_bad++;
      for (int k = 0; k < 32; k++) {
        gf_object *o;
        if (gf_dataset_record(g_remote, batch[k], &b) < 0 ||
            gf_dataset_shard_open(g_remote, b.shard, &o) < 0 || !o)
          g_bad++;
      }
      break;
    }
  }
  return NULL;
}

int main(void) {
  CHECK_OK(slow_storage_register());
  char dir[4096], url[4200];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  snprintf(url, sizeof url, "slow://%s", dir);
  if (build(dir) < 0) {
    fprintf(stderr, "build: %s\n", gf_last_error()->message);
    return 1;
  }
  CHECK_OK(gf_dataset_open(dir, &g_local));
  slow_storage_reset();
  slow_storage_latency_us = 300;
  slow_storage_engine_threads = 16;
  CHECK_OK(gf_dataset_open(url, &g_remote));
  if (!g_local || !g_remote)
    return gf_test_finish();
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  uint64_t reads, bytes, pages;
  gf_dataset_index_counters(g_remote, &reads, &bytes, &pages);
  printf("%d threads x %d rounds: %llu page reads, %llu bytes, %llu pages "
         "in memory, %llu shard opens; %d wrong\n",
         THREADS, ROUNDS, (unsigned long long)reads, (unsigned long long)bytes,
         (unsigned long long)pages, (unsigned long long)slow_storage_heads - 1,
         (int)g_bad);
  CHECK(g_bad == 0);
  /* Each page read once: the bytes read are the pages in memory (the
   * first read at open aside). */
  CHECK(bytes <= pages * 4096);
  CHECK(slow_storage_heads - 1 <= gf_dataset_num_shards(g_remote));
  CHECK_OK(gf_dataset_check_index(g_remote));
  gf_dataset_close(g_remote);
  gf_dataset_close(g_local);
  return gf_test_finish();
}
