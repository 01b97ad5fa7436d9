/* Exactly once: over many random configurations every epoch delivers each
 * sample of the rank's share exactly once, with the right pixels, and the
 * union over ranks is the whole dataset plus only the documented padding
 * (GF_PARTITION_PAD repeats ceil(n/w)*w - n samples; GF_PARTITION_DROP
 * leaves n - floor(n/w)*w out). GPUFEED_TEST_CONFIGS overrides the count. */
#include "loader_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int run_rank(const fixture *f, gf_loader_config *cfg, int epochs,
                    uint32_t *counts /* [epochs][n] */, const char *what) {
  gf_loader *l;
  int rc = gf_loader_create(cfg, &l);
  if (rc < 0) {
    fprintf(stderr, "%s: create failed: %s\n", what, gf_last_error()->message);
    return -1;
  }
  int bad = 0;
  uint64_t B = cfg->batch_size;
  for (int e = 0; e < epochs; e++) {
    uint64_t k = 0;
    gf_batch *b;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      if (b->epoch != (uint64_t)e || b->index != k || b->count == 0 ||
          b->count > B) {
        fprintf(stderr, "%s: epoch %d batch %llu: got epoch %llu index %llu "
                "count %u\n", what, e, (unsigned long long)k,
                (unsigned long long)b->epoch, (unsigned long long)b->index,
                b->count);
        bad++;
      }
      if (cfg->drop_last && b->count != B) {
        fprintf(stderr, "%s: drop_last delivered a batch of %u\n", what,
                b->count);
        bad++;
      }
      bad += fixture_check_batch(f, b);
      for (uint32_t j = 0; j < b->count; j++)
        if (b->indices[j] < f->n)
          counts[(uint64_t)e * f->n + b->indices[j]]++;
      k++;
      gf_loader_release(l, b);
    }
    if (rc != GF_EEPOCHEND) {
      fprintf(stderr, "%s: next returned %s: %s\n", what, gf_err_name(rc),
              gf_last_error()->message);
      bad++;
      break;
    }
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  gf_loader_stats_get(l, &st);
  if (cfg->io_backend == GF_IO_PREAD && strcmp(st.io_backend, "pread") != 0) {
    fprintf(stderr, "%s: backend %s, wanted pread\n", what, st.io_backend);
    bad++;
  }
  gf_loader_destroy(l);
  return bad;
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture fx[2];
  char sub[4400];
  snprintf(sub, sizeof sub, "%s/uniform", dir);
  CHECK_OK(fixture_make(&fx[0], sub, 97, 5, false, 1, 3));
  snprintf(sub, sizeof sub, "%s/ragged", dir);
  CHECK_OK(fixture_make(&fx[1], sub, 61, 3, true, 4096, 0));
  if (gf_test_failures)
    return gf_test_finish();

  int nconf = 200;
  const char *env = getenv("GPUFEED_TEST_CONFIGS");
  if (env)
    nconf = atoi(env);
  uint64_t rs = 12345;
  int configs_run = 0;
  for (int c = 0; c < nconf; c++) {
    const fixture *f = &fx[gf_test_rand(&rs) % 2];
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    bool folder = gf_test_rand(&rs) % 2;
    cfg.source = folder ? f->png_dir : f->ds_dir;
    cfg.channels = f->channels;
    /* A folder is not scanned for the largest image: say it. */
    cfg.max_sample_bytes = folder ? 16 * 16 * 3 : 0;
    cfg.batch_size = 1 + (uint32_t)(gf_test_rand(&rs) % 24);
    cfg.threads = 1 + (uint32_t)(gf_test_rand(&rs) % 8);
    cfg.world = 1 + (uint32_t)(gf_test_rand(&rs) % 8);
    cfg.partition = (uint32_t)(gf_test_rand(&rs) % 2);
    cfg.drop_last = gf_test_rand(&rs) % 3 == 0;
    cfg.order = (uint32_t)(gf_test_rand(&rs) % 3);
    cfg.block_size = 1 + (uint32_t)(gf_test_rand(&rs) % 9);
    cfg.seed = gf_test_rand(&rs);
    cfg.prefetch = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint64_t cache_choice = gf_test_rand(&rs) % 3;
    cfg.cache_bytes = cache_choice == 0 ? 0 : cache_choice == 1 ? 3000 : 1 << 24;
    cfg.io_backend = gf_test_rand(&rs) % 2 ? GF_IO_PREAD : GF_IO_AUTO;
    cfg.io_queue_depth = 1 + (uint32_t)(gf_test_rand(&rs) % 16);

    uint64_t n = f->n, w = cfg.world, B = cfg.batch_size;
    uint64_t share = cfg.partition == GF_PARTITION_PAD ? (n + w - 1) / w : n / w;
    uint64_t per_rank = cfg.drop_last ? share / B * B : share;
    char what[256];
    snprintf(what, sizeof what,
             "config %d (%s, n %llu, batch %u, threads %u, world %u, %s, "
             "drop_last %u, order %u, cache %llu, io %u)",
             c, folder ? "png folder" : "dataset", (unsigned long long)n,
             cfg.batch_size, cfg.threads, cfg.world,
             cfg.partition ? "drop" : "pad", cfg.drop_last, cfg.order,
             (unsigned long long)cfg.cache_bytes, cfg.io_backend);
    if (per_rank == 0) {
      /* No batch for anyone: create must say so rather than hang. */
      gf_loader *l = NULL;
      CHECK(gf_loader_create(&cfg, &l) == -EINVAL);
      CHECK(l == NULL);
      continue;
    }
    const int epochs = 2;
    uint32_t *all = calloc((size_t)epochs * n, sizeof *all);
    uint32_t *mine = calloc((size_t)epochs * n, sizeof *mine);
    for (uint32_t r = 0; r < cfg.world; r++) {
      cfg.rank = r;
      memset(mine, 0, (size_t)epochs * n * sizeof *mine);
      int bad = run_rank(f, &cfg, epochs, mine, what);
      if (bad) {
        fprintf(stderr, "%s rank %u: %d problem(s)\n", what, r, bad);
        gf_test_failures++;
      }
      for (int e = 0; e < epochs; e++) {
        uint64_t got = 0;
        for (uint64_t i = 0; i < n; i++) {
          uint32_t m = mine[(uint64_t)e * n + i];
          got += m;
          if (m > 1) {
            fprintf(stderr, "%s rank %u epoch %d: sample %llu delivered %u "
                    "times\n", what, r, e, (unsigned long long)i, m);
            gf_test_failures++;
          }
          all[(uint64_t)e * n + i] += m;
        }
        if (got != per_rank) {
          fprintf(stderr, "%s rank %u epoch %d: %llu samples, expected "
                  "%llu\n", what, r, e, (unsigned long long)got,
                  (unsigned long long)per_rank);
          gf_test_failures++;
        }
      }
    }
    if (!cfg.drop_last) {
      for (int e = 0; e < epochs; e++) {
        uint64_t sum = 0, twice = 0, missing = 0;
        for (uint64_t i = 0; i < n; i++) {
          uint32_t m = all[(uint64_t)e * n + i];
          sum += m;
          twice += m == 2;
          missing += m == 0;
          CHECK(m <= 2);
        }
        if (cfg.partition == GF_PARTITION_PAD) {
          CHECK(missing == 0);
          CHECK(sum == share * w);
          CHECK(twice == share * w - n);
        } else {
          CHECK(twice == 0);
          CHECK(missing == n - share * w);
        }
      }
    }
    free(all);
    free(mine);
    configs_run++;
  }
  printf("%d configurations checked\n", configs_run);
  CHECK(configs_run >= nconf * 3 / 4);
  fixture_free(&fx[0]);
  fixture_free(&fx[1]);
  return gf_test_finish();
}
