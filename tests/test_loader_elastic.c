/* Elastic resume (docs/RESUME.md): a state exported by a job of world size
 * W, imported by every rank of a job of world size W'. Over real loaders
 * in host mode, at random points of a random epoch, for W=4 -> W'=3 and
 * W=2 -> W'=8, several seeds, shuffle and block order, pad and drop
 * partitions, with and without drop_last and a cache:
 * - every old rank, exporting after the same number of batches, gives the
 *   same global position, and the old job delivered exactly that many
 *   distinct samples (a prefix of the epoch order holds no repeats);
 * - the new job's rest of the epoch delivers no sample twice and none the
 *   old job delivered, and as many as the documented split of the rest
 *   gives (all n together with the old job's under pad without drop_last);
 *   a state at position 0 gives a full epoch of W', padding included;
 * - every batch holds the right pixels and labels;
 * - the next epoch is, rank by rank and batch by batch, what a fresh job
 *   of world size W' delivers.
 * gf_loader_set_epoch after an elastic import restarts the epoch whole, as
 * a fresh job's. And under the skip policy, over a dataset with bad samples: a same-size
 * resume is exact (the batches after the cut are the uninterrupted run's),
 * and an elastic one loses no good sample, delivers no bad one and no
 * sample twice within the new job. */
#include "loader_fixture.h"

#include "format/format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#define N 83
#define MAXW 8

static fixture f;

static gf_loader *make(const gf_loader_config *base, uint32_t world,
                       uint32_t rank, bool cache) {
  gf_loader_config cfg = *base;
  cfg.world = world;
  cfg.rank = rank;
  cfg.threads = 1 + rank % 2;
  cfg.cache_bytes = cache ? 1 << 20 : 0;
  gf_loader *l = NULL;
  if (gf_loader_create(&cfg, &l) < 0) {
    fprintf(stderr, "create (world %u rank %u): %s\n", world, rank,
            gf_last_error()->message);
    gf_test_failures++;
  }
  return l;
}

/* Takes the next batch: 1 with *b set, 0 at the epoch's end, -1 on error. */
static int take(gf_loader *l, gf_batch **b) {
  int rc = gf_loader_next(l, b);
  if (rc == GF_EEPOCHEND)
    return 0;
  if (rc < 0) {
    fprintf(stderr, "next: %s: %s\n", gf_err_name(rc),
            gf_last_error()->message);
    gf_test_failures++;
    return -1;
  }
  if (fixture_check_batch(&f, *b))
    gf_test_failures++;
  return 1;
}

/* One rank's batch hashes over the epoch it stands in (until the end). */
static int epoch_hashes(gf_loader *l, uint64_t epoch, uint64_t *h, int cap) {
  int nb = 0;
  gf_batch *b;
  int rc;
  while ((rc = take(l, &b)) == 1) {
    CHECK(b->epoch == epoch);
    if (nb < cap)
      h[nb] = batch_hash(b);
    nb++;
    gf_loader_release(l, b);
  }
  return rc < 0 ? -1 : nb;
}

static void trial(uint32_t W, uint32_t W2, int t, uint64_t *rng) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 1 + (uint32_t)(gf_test_rand(rng) % 6);
  cfg.seed = gf_test_rand(rng);
  cfg.order = gf_test_rand(rng) % 2 ? GF_ORDER_BLOCK : GF_ORDER_SHUFFLE;
  cfg.block_size = 5;
  cfg.partition = gf_test_rand(rng) % 2 ? GF_PARTITION_DROP : GF_PARTITION_PAD;
  cfg.drop_last = gf_test_rand(rng) % 3 == 0;
  cfg.prefetch = 2;
  bool cache = gf_test_rand(rng) % 2;
  uint64_t epoch = gf_test_rand(rng) % 5;
  uint64_t B = cfg.batch_size;
  uint64_t share = cfg.partition == GF_PARTITION_PAD ? (N + W - 1) / W : N / W;
  uint64_t nbat = cfg.drop_last ? share / B : (share + B - 1) / B;
  /* Random points, and every fifth trial the epoch's start or end. */
  uint64_t k = t % 5 == 0 ? 0 : t % 5 == 1 ? nbat : gf_test_rand(rng) % (nbat + 1);
  char what[256];
  snprintf(what, sizeof what,
           "W %u -> %u, batch %llu, order %u, partition %u, drop_last %u, "
           "cache %d, epoch %llu, after %llu of %llu batches",
           W, W2, (unsigned long long)B, cfg.order, cfg.partition,
           cfg.drop_last, cache, (unsigned long long)epoch,
           (unsigned long long)k, (unsigned long long)nbat);
  int fails = gf_test_failures;

  /* The old job: every rank delivers k batches in lockstep, then exports. */
  uint32_t seen[N] = {0}; /* times the old job delivered each sample */
  gf_loader_state st[MAXW];
  for (uint32_t r = 0; r < W; r++) {
    gf_loader *l = make(&cfg, W, r, cache);
    if (!l)
      return;
    CHECK_OK(gf_loader_set_epoch(l, epoch));
    for (uint64_t i = 0; i < k; i++) {
      gf_batch *b;
      if (take(l, &b) != 1) {
        fprintf(stderr, "%s: old rank %u ended early\n", what, r);
        gf_test_failures++;
        break;
      }
      for (uint32_t j = 0; j < b->count; j++)
        seen[b->indices[j]]++;
      gf_loader_release(l, b);
    }
    CHECK_OK(gf_loader_state_export(l, &st[r]));
    gf_loader_destroy(l);
  }
  uint64_t P = st[0].position;
  uint64_t distinct = 0, delivered = 0;
  for (int i = 0; i < N; i++) {
    distinct += seen[i] != 0;
    delivered += seen[i];
  }
  for (uint32_t r = 1; r < W; r++)
    if (st[r].position != P) {
      fprintf(stderr, "%s: rank %u exports position %llu, rank 0 %llu\n",
              what, r, (unsigned long long)st[r].position,
              (unsigned long long)P);
      gf_test_failures++;
    }
  if (P < N && (distinct != P || delivered != P)) {
    fprintf(stderr, "%s: position %llu, but the old job delivered %llu "
            "samples, %llu distinct\n", what, (unsigned long long)P,
            (unsigned long long)delivered, (unsigned long long)distinct);
    gf_test_failures++;
  }

  /* The new job: every rank imports the same state (rank 0's, or another
   * rank's: they must not differ in what they resume). */
  const gf_loader_state *use = &st[gf_test_rand(rng) % W];
  uint32_t got[N] = {0};
  uint64_t rest = N - (P < N ? P : N), want = 0;
  static uint64_t hr[MAXW][64], hf[MAXW][64];
  int nr[MAXW], nf[MAXW];
  for (uint32_t r = 0; r < W2; r++) {
    gf_loader *l = make(&cfg, W2, r, cache);
    if (!l)
      return;
    int rc = gf_loader_state_import(l, use);
    if (rc != 0) {
      fprintf(stderr, "%s: import into rank %u of %u: %s\n", what, r, W2,
              gf_last_error()->message);
      gf_test_failures++;
      gf_loader_destroy(l);
      return;
    }
    /* The documented split of the rest (docs/RESUME.md); at position 0
     * a full epoch of W2, as a fresh job's. */
    uint64_t sh = cfg.partition == GF_PARTITION_DROP ? rest / W2
                  : P == 0                           ? (N + W2 - 1) / W2
                  : rest > r                         ? (rest - r - 1) / W2 + 1
                                                     : 0;
    want += cfg.drop_last ? sh / B * B : sh;
    gf_batch *b;
    while ((rc = take(l, &b)) == 1) {
      CHECK(b->epoch == epoch);
      for (uint32_t j = 0; j < b->count; j++)
        got[b->indices[j]]++;
      gf_loader_release(l, b);
    }
    /* The next epoch, then a fresh job's. */
    nr[r] = rc < 0 ? -1 : epoch_hashes(l, epoch + 1, hr[r], 64);
    gf_loader_destroy(l);
    l = make(&cfg, W2, r, false);
    if (!l)
      return;
    CHECK_OK(gf_loader_set_epoch(l, epoch + 1));
    nf[r] = epoch_hashes(l, epoch + 1, hf[r], 64);
    gf_loader_destroy(l);
  }
  uint64_t total = 0;
  for (int i = 0; i < N; i++) {
    total += got[i];
    /* Padding repeats only in a full epoch (P == 0, pad). */
    uint32_t most = P == 0 && cfg.partition == GF_PARTITION_PAD ? 2 : 1;
    if (got[i] > most || (got[i] && seen[i])) {
      fprintf(stderr, "%s: sample %d delivered %u times by the new job, %u "
              "by the old\n", what, i, got[i], seen[i]);
      gf_test_failures++;
      break;
    }
    if (cfg.partition == GF_PARTITION_PAD && !cfg.drop_last &&
        !got[i] && !seen[i]) {
      fprintf(stderr, "%s: sample %d never delivered\n", what, i);
      gf_test_failures++;
      break;
    }
  }
  if (total != want) {
    fprintf(stderr, "%s: the new job delivered %llu samples of the rest, "
            "expected %llu\n", what, (unsigned long long)total,
            (unsigned long long)want);
    gf_test_failures++;
  }
  for (uint32_t r = 0; r < W2; r++)
    if (nr[r] != nf[r] || nr[r] < 0 ||
        memcmp(hr[r], hf[r], sizeof(uint64_t) * (size_t)(nr[r] < 64 ? nr[r] : 64))) {
      fprintf(stderr, "%s: rank %u's next epoch (%d batches) differs from a "
              "fresh job's (%d)\n", what, r, nr[r], nf[r]);
      gf_test_failures++;
    }
  if (gf_test_failures != fails)
    fprintf(stderr, "  in trial: %s\n", what);
}

/* The batch hashes rank r of W delivers from where l stands to the end of
 * the next epoch (epoch ends hash as 0). */
static int run_on(gf_loader *l, uint64_t *h, int cap) {
  int nb = 0, ends = 0;
  while (ends < 2 && nb < cap) {
    gf_batch *b;
    int rc = take(l, &b);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      ends++;
      h[nb++] = 0;
      continue;
    }
    h[nb++] = batch_hash(b);
    gf_loader_release(l, b);
  }
  return nb;
}

static void skip_policy(uint64_t *rng) {
  static const uint64_t bad[] = {5, 21, 40, 66};
  fixture g;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/bad", gf_test_tmpdir());
  mkdir(dir, 0755);
  CHECK_OK(fixture_make(&g, dir, N, 4, true, 1, 3));
  if (gf_test_failures)
    return;
  gf_dataset *ds;
  CHECK_OK(gf_dataset_open(g.ds_dir, &ds));
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_sample_info info;
    CHECK_OK(gf_dataset_sample_info(ds, bad[i], &info));
    int fd = open(gf_dataset_shard_path(ds, info.shard), O_RDWR);
    uint8_t c;
    off_t off = (off_t)(info.offset + info.length / 2);
    CHECK(pread(fd, &c, 1, off) == 1);
    c ^= 0x10;
    CHECK(pwrite(fd, &c, 1, off) == 1);
    close(fd);
  }
  gf_dataset_close(ds);

  for (int t = 0; t < 8 && !gf_test_failures; t++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = g.ds_dir;
    cfg.channels = 3;
    cfg.error_policy = GF_ON_ERROR_SKIP;
    cfg.batch_size = 1 + (uint32_t)(gf_test_rand(rng) % 5);
    cfg.seed = gf_test_rand(rng);
    cfg.order = t % 2 ? GF_ORDER_BLOCK : GF_ORDER_SHUFFLE;
    cfg.block_size = 5;
    bool cache = t % 4 < 2;

    /* Same size (2 ranks): exact. */
    for (uint32_t r = 0; r < 2; r++) {
      static uint64_t a[256], b[256];
      gf_loader *l = make(&cfg, 2, r, cache);
      if (!l)
        return;
      int na = run_on(l, a, 256);
      gf_loader_destroy(l);
      int cut = na > 1 ? (int)(gf_test_rand(rng) % (uint64_t)(na - 1)) : 0;
      l = make(&cfg, 2, r, cache);
      for (int i = 0; i < cut; i++) {
        gf_batch *bt;
        if (take(l, &bt) == 1)
          gf_loader_release(l, bt);
      }
      gf_loader_state st;
      CHECK_OK(gf_loader_state_export(l, &st));
      gf_loader_destroy(l);
      l = make(&cfg, 2, r, !cache);
      CHECK_OK(gf_loader_state_import(l, &st));
      /* From the cut to the end of the epoch after the cut's. */
      int nb = run_on(l, b, 256);
      gf_loader_destroy(l);
      /* The uninterrupted run's rest: b goes on through one more epoch
       * when the cut was in the second. */
      int want = na - cut;
      if (nb < want || memcmp(a + cut, b, sizeof(uint64_t) * (size_t)want)) {
        fprintf(stderr, "skip policy, trial %d rank %u: resumed at batch %d "
                "of %d, the batches differ\n", t, r, cut, na);
        gf_test_failures++;
      }
    }

    /* Elastic, 4 -> 3. */
    uint64_t share = (N + 3) / 4, B = cfg.batch_size;
    uint64_t k = gf_test_rand(rng) % ((share + B - 1) / B + 1);
    uint32_t seen[N] = {0}, got[N] = {0};
    gf_loader_state st;
    for (uint32_t r = 0; r < 4; r++) {
      gf_loader *l = make(&cfg, 4, r, cache);
      if (!l)
        return;
      for (uint64_t i = 0; i < k; i++) {
        gf_batch *bt;
        if (take(l, &bt) != 1)
          break; /* skips may end a rank's epoch a batch early */
        for (uint32_t j = 0; j < bt->count; j++)
          seen[bt->indices[j]]++;
        gf_loader_release(l, bt);
      }
      if (r == 0)
        CHECK_OK(gf_loader_state_export(l, &st));
      gf_loader_destroy(l);
    }
    for (uint32_t r = 0; r < 3; r++) {
      gf_loader *l = make(&cfg, 3, r, cache);
      if (!l)
        return;
      CHECK_OK(gf_loader_state_import(l, &st));
      gf_batch *bt;
      while (take(l, &bt) == 1) {
        for (uint32_t j = 0; j < bt->count; j++)
          got[bt->indices[j]]++;
        gf_loader_release(l, bt);
      }
      gf_loader_destroy(l);
    }
    for (uint64_t i = 0; i < N; i++) {
      bool is_bad = i == 5 || i == 21 || i == 40 || i == 66;
      if (got[i] > 1 || (is_bad && (got[i] || seen[i])) ||
          (!is_bad && st.position < N && !got[i] && !seen[i])) {
        fprintf(stderr, "skip policy, trial %d, 4 -> 3 after %llu batches: "
                "sample %llu delivered %u times by the old job, %u by the "
                "new\n", t, (unsigned long long)k, (unsigned long long)i,
                seen[i], got[i]);
        gf_test_failures++;
        break;
      }
    }
  }
  fixture_free(&g);
}

/* set_epoch(e) after importing a mid-epoch state of e from another world
 * size drops the resumed rest: epoch e whole, as a fresh job's. */
static void set_epoch_drops_rest(void) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 3;
  cfg.seed = 5;
  gf_loader *l = make(&cfg, 4, 2, false);
  if (!l)
    return;
  CHECK_OK(gf_loader_set_epoch(l, 2));
  for (int i = 0; i < 2; i++) {
    gf_batch *b;
    if (take(l, &b) == 1)
      gf_loader_release(l, b);
  }
  gf_loader_state st;
  CHECK_OK(gf_loader_state_export(l, &st));
  gf_loader_destroy(l);
  CHECK(st.position == 2 * 3 * 4);
  static uint64_t a[64], b[64];
  for (uint32_t r = 0; r < 3; r++) {
    l = make(&cfg, 3, r, false);
    CHECK_OK(gf_loader_state_import(l, &st));
    CHECK_OK(gf_loader_set_epoch(l, 2));
    int na = epoch_hashes(l, 2, a, 64);
    gf_loader_destroy(l);
    l = make(&cfg, 3, r, false);
    CHECK_OK(gf_loader_set_epoch(l, 2));
    int nb = epoch_hashes(l, 2, b, 64);
    gf_loader_destroy(l);
    CHECK(na == nb && na == (N + 2) / 3 / 3 + 1 &&
          memcmp(a, b, sizeof(uint64_t) * (size_t)na) == 0);
  }
}

int main(void) {
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), N, 4, true, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  uint64_t rng = 20261124;
  for (int t = 0; t < 24 && !gf_test_failures; t++) {
    trial(4, 3, t, &rng);
    trial(2, 8, t, &rng);
  }
  set_epoch_drops_rest();
  skip_policy(&rng);
  fixture_free(&f);
  return gf_test_finish();
}
