/* The split of an epoch between ranks and into batches, against a literal
 * model of PyTorch's DistributedSampler over hundreds of random
 * configurations; exactly-once delivery (plus only the documented
 * padding); epochs and seeds; config validation. */
#include "pipeline/sampler.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static const char *order_name(uint32_t o) {
  return o == GF_ORDER_SHUFFLE      ? "shuffle"
         : o == GF_ORDER_SEQUENTIAL ? "sequential"
                                    : "block";
}

/* One configuration: every rank's batches against the model, and the
 * multiset of samples over all ranks counted exactly. Returns false after
 * the first difference (printed). */
static bool check_config(const gf_sampler_config *base, uint64_t epoch) {
  const uint64_t n = base->n, w = base->world, B = base->batch_size;
  gf_sampler s0;
  if (gf_sampler_init(&s0, base) != 0) {
    fprintf(stderr, "init failed: %s\n", gf_last_error()->message);
    return false;
  }
  gf_sampler_set_epoch(&s0, epoch);

  /* The epoch's order of all n (the same on every rank). */
  uint64_t *perm = malloc(n * sizeof *perm);
  uint64_t *count = calloc(n, sizeof *count);
  uint8_t *seen = calloc(n, 1);
  /* DistributedSampler: indices = perm; pad by appending perm's head
   * (repeated whole when the padding is longer than perm), or truncate. */
  uint64_t total =
      base->partition == GF_PARTITION_DROP ? n / w * w : (n + w - 1) / w * w;
  uint64_t *idx = malloc((total ? total : 1) * sizeof *idx);
  bool ok = perm && count && seen && idx;
  for (uint64_t q = 0; ok && q < n; q++) {
    perm[q] = gf_sampler_order(&s0, q);
    if (perm[q] >= n || seen[perm[q]]) {
      fprintf(stderr, "order is not a permutation at q=%llu\n",
              (unsigned long long)q);
      ok = false;
    } else {
      seen[perm[q]] = 1;
    }
  }
  if (ok) {
    uint64_t len = total < n ? total : n;
    memcpy(idx, perm, len * sizeof *idx);
    while (len < total) {
      uint64_t take = total - len < n ? total - len : n;
      memcpy(idx + len, perm, take * sizeof *idx);
      len += take;
    }
  }
  uint64_t share = total / w;
  uint64_t batches = base->drop_last ? share / B : (share + B - 1) / B;
  uint64_t delivered = base->drop_last ? batches * B : share;

  for (uint32_t r = 0; ok && r < w; r++) {
    gf_sampler_config c = *base;
    c.rank = r;
    gf_sampler s;
    CHECK_OK(gf_sampler_init(&s, &c));
    gf_sampler_set_epoch(&s, epoch);
    if (gf_sampler_samples_per_epoch(&s) != share ||
        gf_sampler_batches_per_epoch(&s) != batches) {
      fprintf(stderr, "rank %u: share %llu batches %llu, model %llu %llu\n", r,
              (unsigned long long)gf_sampler_samples_per_epoch(&s),
              (unsigned long long)gf_sampler_batches_per_epoch(&s),
              (unsigned long long)share, (unsigned long long)batches);
      ok = false;
      break;
    }
    uint64_t pos = 0; /* the model's position in the rank's list */
    for (uint64_t k = 0; ok && k < batches; k++) {
      uint64_t first, cnt;
      if (gf_sampler_batch(&s, k, &first, &cnt) != 0 || first != pos ||
          cnt != (share - pos < B ? share - pos : B)) {
        fprintf(stderr, "rank %u batch %llu: bad range\n", r,
                (unsigned long long)k);
        ok = false;
        break;
      }
      for (uint64_t i = first; i < first + cnt; i++, pos++) {
        uint64_t want = idx[r + pos * w]; /* indices[rank::world] */
        uint64_t got = gf_sampler_get(&s, i);
        if (got != want) {
          fprintf(stderr, "rank %u position %llu: got %llu, model %llu\n", r,
                  (unsigned long long)i, (unsigned long long)got,
                  (unsigned long long)want);
          ok = false;
          break;
        }
        count[got]++;
      }
    }
    if (ok && pos != delivered) {
      fprintf(stderr, "rank %u delivered %llu, expected %llu\n", r,
              (unsigned long long)pos, (unsigned long long)delivered);
      ok = false;
    }
    uint64_t f, cn;
    if (ok && gf_sampler_batch(&s, batches, &f, &cn) != -ERANGE)
      ok = false;
    if (ok && gf_sampler_get(&s, share) != GF_NO_INDEX)
      ok = false;
  }

  /* Exactly once, plus only the documented padding (the epoch's head) or
   * minus only the truncated tail. Counted without the model's list. */
  if (ok && !base->drop_last) {
    uint64_t sum = 0;
    for (uint64_t v = 0; v < n; v++)
      sum += count[v];
    if (sum != total)
      ok = false;
    if (base->partition == GF_PARTITION_PAD) {
      /* Every sample at least once; the extras are perm[0..total-n)
       * (cyclically when total - n > n, which needs n < world). */
      for (uint64_t v = 0; ok && v < n; v++)
        if (count[v] == 0)
          ok = false;
      uint64_t pad = total - n;
      for (uint64_t j = 0; ok && j < pad; j++)
        count[perm[j % n]]--;
      for (uint64_t v = 0; ok && v < n; v++)
        if (count[v] != 1)
          ok = false;
    } else {
      for (uint64_t q = 0; ok && q < n; q++)
        if (count[perm[q]] != (q < total ? 1u : 0u))
          ok = false;
    }
    if (!ok)
      fprintf(stderr, "sample counts over ranks are not as documented\n");
  } else if (ok) {
    /* With drop_last each sample still comes at most as often as the
     * partition allows, and every rank delivered whole batches only. */
    uint64_t sum = 0;
    for (uint64_t v = 0; v < n; v++) {
      sum += count[v];
      if (base->partition == GF_PARTITION_DROP && count[v] > 1)
        ok = false;
    }
    if (sum != w * batches * B)
      ok = false;
  }
  free(perm);
  free(count);
  free(seen);
  free(idx);
  return ok;
}

static void random_configs(void) {
  uint64_t rng = 2024;
  int configs = 0;
  for (int t = 0; t < 300; t++) {
    gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
    uint64_t kind = gf_test_rand(&rng) % 4;
    c.n = kind == 0   ? 1 + gf_test_rand(&rng) % 12 /* often < world */
          : kind == 1 ? 1 + gf_test_rand(&rng) % 300
                      : 1 + gf_test_rand(&rng) % 3000;
    c.seed = gf_test_rand(&rng);
    c.order = (uint32_t)(gf_test_rand(&rng) % 3);
    c.world = 1 + (uint32_t)(gf_test_rand(&rng) % 8);
    c.partition = (uint32_t)(gf_test_rand(&rng) % 2);
    c.drop_last = (uint32_t)(gf_test_rand(&rng) % 2);
    c.batch_size = 1 + gf_test_rand(&rng) % 70;
    if (c.order == GF_ORDER_BLOCK) {
      /* Small blocks and windows: many windows, short last blocks. */
      c.block_size = 1 + gf_test_rand(&rng) % 40;
      c.window_blocks = 1 + (uint32_t)(gf_test_rand(&rng) % 5);
    }
    uint64_t epoch = gf_test_rand(&rng) % 1000;
    if (!check_config(&c, epoch)) {
      fprintf(stderr,
              "config %d: n=%llu seed=%llu order=%s world=%u partition=%u "
              "drop_last=%u batch=%llu block=%llu windows=%u epoch=%llu\n",
              t, (unsigned long long)c.n, (unsigned long long)c.seed,
              order_name(c.order), c.world, c.partition, c.drop_last,
              (unsigned long long)c.batch_size,
              (unsigned long long)c.block_size, c.window_blocks,
              (unsigned long long)epoch);
      gf_test_failures++;
      return;
    }
    configs++;
  }
  CHECK(configs == 300);
}

/* Fraction of positions where two epochs' orders differ. */
static double differ(const gf_sampler *a, const gf_sampler *b, uint64_t n) {
  uint64_t d = 0;
  for (uint64_t q = 0; q < n; q++)
    d += gf_sampler_order(a, q) != gf_sampler_order(b, q);
  return (double)d / (double)n;
}

static void epochs_and_seeds(void) {
  const uint64_t n = 5000;
  static const uint32_t modes[] = {GF_ORDER_SHUFFLE, GF_ORDER_BLOCK};
  for (int m = 0; m < 2; m++) {
    gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
    c.n = n;
    c.seed = 17;
    c.order = modes[m];
    c.block_size = 64;
    c.window_blocks = 4;
    gf_sampler a, b;
    CHECK_OK(gf_sampler_init(&a, &c));
    CHECK_OK(gf_sampler_init(&b, &c));
    /* Different epochs: different orders (almost every position). */
    for (uint64_t e = 0; e < 5; e++) {
      gf_sampler_set_epoch(&a, e);
      gf_sampler_set_epoch(&b, e + 1);
      CHECK(differ(&a, &b, n) > 0.9);
    }
    /* The same (seed, epoch): the same order, whatever came before. */
    gf_sampler_set_epoch(&a, 3);
    gf_sampler_set_epoch(&b, 9);
    gf_sampler_set_epoch(&b, 3);
    CHECK(differ(&a, &b, n) == 0.0);
    CHECK(gf_sampler_epoch(&b) == 3);
    gf_sampler fresh;
    CHECK_OK(gf_sampler_init(&fresh, &c));
    gf_sampler_set_epoch(&fresh, 3);
    CHECK(differ(&a, &fresh, n) == 0.0);
    /* Another seed: another order. */
    c.seed = 18;
    gf_sampler other;
    CHECK_OK(gf_sampler_init(&other, &c));
    gf_sampler_set_epoch(&other, 3);
    CHECK(differ(&a, &other, n) > 0.9);
  }
  /* Sequential ignores seed and epoch. */
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = 100;
  c.order = GF_ORDER_SEQUENTIAL;
  gf_sampler s;
  CHECK_OK(gf_sampler_init(&s, &c));
  gf_sampler_set_epoch(&s, 7);
  for (uint64_t q = 0; q < 100; q++)
    CHECK(gf_sampler_order(&s, q) == q);
}

static void bad_configs(void) {
  gf_sampler s;
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = 10;
  CHECK_OK(gf_sampler_init(&s, &c));
  c.world = 0; /* default 1 */
  CHECK_OK(gf_sampler_init(&s, &c));
  CHECK(gf_sampler_samples_per_epoch(&s) == 10);

  gf_sampler_config bad = c;
  bad.n = 0;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "n is 0") != NULL);
  bad = c;
  bad.batch_size = 0;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "batch_size") != NULL);
  bad = c;
  bad.world = 4;
  bad.rank = 4;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "rank 4") != NULL);
  bad = c;
  bad.order = 3;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "order") != NULL);
  bad = c;
  bad.partition = 2;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "partition") != NULL);
  bad = c;
  bad.drop_last = 2;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL);
  bad = c;
  bad.n = UINT64_MAX;
  bad.world = 2;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL); /* padding overflows */
  bad.partition = GF_PARTITION_DROP;
  CHECK_OK(gf_sampler_init(&s, &bad));
  bad = c;
  bad.order = GF_ORDER_BLOCK;
  bad.n = UINT64_MAX - 5;
  bad.block_size = 1ull << 40;
  CHECK_ERR(gf_sampler_init(&s, &bad), -EINVAL); /* window bounds overflow */
  CHECK(strstr(gf_last_error()->message, "block_size") != NULL);

  /* n smaller than world: padding repeats the whole epoch. */
  c.n = 3;
  c.world = 8;
  c.rank = 7;
  CHECK_OK(gf_sampler_init(&s, &c));
  CHECK(gf_sampler_samples_per_epoch(&s) == 1);
  CHECK(gf_sampler_get(&s, 0) == gf_sampler_order(&s, 7 % 3));
  c.partition = GF_PARTITION_DROP;
  CHECK_OK(gf_sampler_init(&s, &c));
  CHECK(gf_sampler_samples_per_epoch(&s) == 0);
  CHECK(gf_sampler_batches_per_epoch(&s) == 0);
  CHECK(gf_sampler_get(&s, 0) == GF_NO_INDEX);
}

int main(void) {
  random_configs();
  epochs_and_seeds();
  bad_configs();
  return gf_test_finish();
}
