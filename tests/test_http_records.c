/* The loader over a remote dataset whose index is read in pages (every
 * record through them: the test hook makes the open read the header
 * only). The fetch stage's record thread reads a chunk of positions'
 * records at once, many pages in flight and adjacent pages as one read,
 * so the index costs a few reads, not one round trip a page: an epoch
 * delivers each sample once with every page read and at most a handful
 * of index reads. Then the index fails (503 for good) once the loader is
 * made: the records that cannot be read ahead are left to the workers,
 * counted, and next() fails naming the index, the byte range and the
 * status, never with a wrong batch. Threads: the record thread, the
 * fetch thread and the workers share the pages (labelled threaded). */
#include "format/format.h"
#include "http_fixture.h"

#include <stdlib.h>
#include <string.h>

#define N 2000u
#define BATCH 256u

static http_fixture f;

static gf_loader *make(const char *url, const gf_remote_config *rc) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = url;
  cfg.remote = rc;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = BATCH;
  cfg.threads = 3;
  cfg.seed = 5;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  return l;
}

int main(void) {
  if (http_fixture_start(&f, N, 64, HTTP_PROXY) < 0)
    return 77;
  gf_dataset__test_first_read = GF_INDEX_HEADER_SIZE;
  gf_remote_config rc = http_test_remote();

  /* One epoch: each sample once, every record page read, few reads. */
  gf_loader *l = make(f.proxy_url, &rc);
  if (l) {
    uint8_t *seen = calloc(N, 1);
    gf_batch *b;
    uint64_t got = 0;
    int r;
    while ((r = gf_loader_next(l, &b)) == 0) {
      for (uint32_t j = 0; j < b->count; j++) {
        CHECK(b->indices[j] < N && !seen[b->indices[j]]);
        if (b->indices[j] < N)
          seen[b->indices[j]] = 1;
      }
      got += b->count;
      gf_loader_release(l, b);
    }
    CHECK(r == GF_EEPOCHEND);
    CHECK(got == N);
    gf_loader_stats st = {.struct_size = sizeof st};
    CHECK_OK(gf_loader_stats_get(l, &st));
    uint64_t rec_pages = (uint64_t)N * GF_RECORD_SIZE / 4096;
    printf("index: %llu reads, %llu bytes, %llu pages; unprepared %llu\n",
           (unsigned long long)st.index_reads,
           (unsigned long long)st.index_bytes,
           (unsigned long long)st.index_pages,
           (unsigned long long)st.fetch_unprepared);
    CHECK(st.index_pages >= rec_pages);
    /* A page a read would be index_reads >= rec_pages (31); a chunk of
     * records read ahead takes its pages in runs (2 to 8 reads seen). */
    CHECK(st.index_reads > 0 && st.index_reads <= 16);
    CHECK(st.fetch_unprepared == 0);
    free(seen);
    gf_loader_destroy(l);
  }

  /* The index fails for good after the open's reads of it (the header and
   * the tables: counted by a rule that only counts, over an open alone):
   * next() names it. */
  http_ctl(&f, "add delay 0 method=GET path=/ds/index.gfi");
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open_with(f.proxy_url, &rc, &ds));
  gf_dataset_close(ds);
  char reply[1024];
  CHECK(gf_net_proxy_ctl(&f.px, "rules", reply, sizeof reply) == 0);
  const char *seen = strstr(reply, "seen=");
  unsigned long long opens = seen ? strtoull(seen + 5, NULL, 10) : 0;
  CHECK(opens >= 1);
  http_ctl(&f, "clear");
  http_ctl(&f, "add status 503 method=GET path=/ds/index.gfi from=%llu",
           opens + 1);
  /* One attempt a read: each of a batch's samples reads its record
   * again, and fails, on its own. */
  gf_remote_config once = rc;
  once.max_attempts = 1;
  l = make(f.proxy_url, &once);
  if (l) {
    gf_batch *b;
    int r;
    uint64_t ok = 0;
    while ((r = gf_loader_next(l, &b)) == 0) {
      ok += b->count;
      gf_loader_release(l, b);
    }
    const char *m = gf_last_error()->message;
    printf("failed with %d: %s\n", r, m);
    CHECK(r != GF_EEPOCHEND && ok < N);
    CHECK(strstr(m, "index.gfi") != NULL);
    CHECK(strstr(m, "HTTP 503") != NULL);
    CHECK(strstr(m, "sample ") != NULL);
    CHECK(strstr(m, "bytes ") != NULL);
    gf_loader_stats st = {.struct_size = sizeof st};
    CHECK_OK(gf_loader_stats_get(l, &st));
    CHECK(st.fetch_unprepared > 0);
    gf_loader_destroy(l);
    http_ctl(&f, "clear");
  }
  CHECK(http_fixture_stop(&f) == 0);
  return gf_test_finish();
}
