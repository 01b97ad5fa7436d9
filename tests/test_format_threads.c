/* Every dataset accessor on one handle from several threads at once (run
 * under ThreadSanitizer in CI): reads return the right bytes, and each
 * thread's errors stay its own. */
#include "format/format.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NS 400
#define THREADS 4

static uint8_t *g_data[NS];
static size_t g_len[NS];
static gf_dataset *g_ds;
static atomic_int g_bad;

static void *reader(void *arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg;
  uint8_t *buf = malloc(5000);
  for (int it = 0; it < 3 * NS; it++) {
    uint64_t i = gf_test_rand(&seed) % NS;
    gf_sample_info info;
    if (gf_dataset_sample_info(g_ds, i, &info) != 0 || info.length != g_len[i])
      atomic_fetch_add(&g_bad, 1);
    int64_t n = gf_dataset_read(g_ds, i, buf, 5000);
    if (n != (int64_t)g_len[i] || memcmp(buf, g_data[i], g_len[i]) != 0)
      atomic_fetch_add(&g_bad, 1);
    if (it % 50 == 0) {
      /* An error on this thread is recorded for this thread only. */
      if (gf_dataset_read(g_ds, NS + i, buf, 5000) != -ERANGE ||
          gf_last_error()->sample != NS + i)
        atomic_fetch_add(&g_bad, 1);
      const char *name = gf_dataset_class_name(g_ds, (uint32_t)(i % 2));
      if (!name || strcmp(name, i % 2 ? "b" : "a") != 0)
        atomic_fetch_add(&g_bad, 1);
      if (!gf_dataset_shard_object(g_ds, info.shard) ||
          gf_dataset_shard_size(g_ds, info.shard) == 0 ||
          !gf_dataset_shard_path(g_ds, info.shard))
        atomic_fetch_add(&g_bad, 1);
    }
  }
  if (seed % 2 == 0 && gf_dataset_check_index(g_ds) != 0)
    atomic_fetch_add(&g_bad, 1);
  free(buf);
  return NULL;
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/ds", tmp);
  CHECK(mkdir(dir, 0755) == 0);
  gf_writer *w = NULL;
  gf_writer_opts o = {
      .shard_size = 64 << 10, .alignment = 64, .index_version = 0};
  CHECK_OK(gf_writer_create(dir, &o, &w));
  CHECK_OK(gf_writer_add_class(w, "a"));
  CHECK_OK(gf_writer_add_class(w, "b"));
  uint64_t seed = 11;
  for (int i = 0; i < NS; i++) {
    g_len[i] = 1 + (size_t)(gf_test_rand(&seed) % 5000);
    g_data[i] = malloc(g_len[i]);
    for (size_t k = 0; k < g_len[i]; k++)
      g_data[i][k] = (uint8_t)gf_test_rand(&seed);
    gf_shape sh = {8, 8, 3, GF_DTYPE_U8};
    CHECK_OK(
        gf_writer_add(w, g_data[i], g_len[i], GF_CODEC_ZSTD, &sh, i % 2, "x"));
  }
  CHECK_OK(gf_writer_finish(w));
  gf_writer_destroy(w);
  CHECK_OK(gf_dataset_open(dir, &g_ds));
  if (!g_ds)
    return gf_test_finish();
  pthread_t t[THREADS];
  for (uintptr_t i = 0; i < THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, reader, (void *)(i + 1)) == 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  CHECK(atomic_load(&g_bad) == 0);
  gf_dataset_close(g_ds);
  for (int i = 0; i < NS; i++)
    free(g_data[i]);
  return gf_test_finish();
}
