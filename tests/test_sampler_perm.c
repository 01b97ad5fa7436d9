/* The sampler's keyed permutation: known answers from an independent port
 * of the algorithm in sampler.h, bijection over many domain sizes and one
 * large one, and an order that looks shuffled. */
#include "pipeline/sampler.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static gf_sampler make(uint64_t n, uint64_t seed, uint32_t order, uint32_t rank,
                       uint32_t world, uint64_t batch, uint32_t partition,
                       uint32_t drop_last, uint64_t bs, uint32_t windows) {
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = n;
  c.seed = seed;
  c.order = order;
  c.rank = rank;
  c.world = world;
  c.batch_size = batch;
  c.partition = partition;
  c.drop_last = drop_last;
  c.block_size = bs;
  c.window_blocks = windows;
  gf_sampler s;
  memset(&s, 0, sizeof s);
  CHECK_OK(gf_sampler_init(&s, &c));
  return s;
}

/* Known answers: the first samples a rank delivers, computed by a Python
 * port written from sampler.h's description alone (tests/sampler_ref.py;
 * the block order's with world > 1 since windows are dealt to ranks). A
 * change to the algorithm (and so to every saved run's order) fails
 * here. */
static void known_answers(void) {
  static const struct {
    uint64_t n, seed, epoch;
    uint32_t order, rank, world;
    uint64_t batch;
    uint32_t partition, drop_last;
    uint64_t bs;
    uint32_t windows;
    uint64_t batches;
    uint64_t first[12];
  } kat[] = {
      {10,
       1,
       0,
       GF_ORDER_SHUFFLE,
       0,
       1,
       3,
       GF_PARTITION_PAD,
       0,
       256,
       8,
       4,
       {4, 9, 5, 0, 2, 3, 7, 6, 1, 8, GF_NO_INDEX, 0}},
      {1000003,
       42,
       7,
       GF_ORDER_SHUFFLE,
       2,
       4,
       5,
       GF_PARTITION_PAD,
       0,
       256,
       8,
       50001,
       {475564, 199408, 869058, 891841, 805240, 374679, 204293, 812037, 65794,
        497521, 717179, 40105}},
      {1000,
       9,
       1,
       GF_ORDER_BLOCK,
       1,
       3,
       7,
       GF_PARTITION_PAD,
       1,
       16,
       4,
       47,
       {297, 458, 495, 290, 317, 491, 451, 319, 450, 488, 301, 461}},
      {777,
       123,
       2,
       GF_ORDER_BLOCK,
       0,
       2,
       10,
       GF_PARTITION_DROP,
       0,
       10,
       3,
       39,
       {464, 469, 675, 673, 479, 462, 463, 679, 477, 467, 465, 460}},
      {100000,
       77,
       0,
       GF_ORDER_BLOCK,
       3,
       8,
       6,
       GF_PARTITION_PAD,
       0,
       256,
       8,
       2084,
       {42411, 42484, 1744, 49104, 52541, 42369, 63911, 92672, 52582, 43797,
        48900, 43968}},
      {13,
       3,
       4,
       GF_ORDER_SEQUENTIAL,
       2,
       5,
       2,
       GF_PARTITION_PAD,
       0,
       256,
       8,
       2,
       {2, 7, 12, GF_NO_INDEX, 0, 0, 0, 0, 0, 0, 0, 0}},
  };
  for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
    gf_sampler s = make(kat[t].n, kat[t].seed, kat[t].order, kat[t].rank,
                        kat[t].world, kat[t].batch, kat[t].partition,
                        kat[t].drop_last, kat[t].bs, kat[t].windows);
    gf_sampler_set_epoch(&s, kat[t].epoch);
    CHECK(gf_sampler_batches_per_epoch(&s) == kat[t].batches);
    for (uint64_t i = 0; i < 12; i++) {
      uint64_t want = kat[t].first[i];
      uint64_t got = gf_sampler_get(&s, i);
      if (got != want) {
        fprintf(stderr, "known answer %zu: position %llu is %llu, want %llu\n",
                t, (unsigned long long)i, (unsigned long long)got,
                (unsigned long long)want);
        gf_test_failures++;
      }
      if (want == GF_NO_INDEX) /* past the share: the end of the list */
        break;
    }
  }
  /* Block mode in later windows (each window has its own key) and past
   * the short block. */
  gf_sampler bl =
      make(100000, 77, GF_ORDER_BLOCK, 0, 1, 1, GF_PARTITION_PAD, 0, 256, 8);
  CHECK(gf_sampler_order(&bl, 2048) == 33794);
  CHECK(gf_sampler_order(&bl, 50000) == 14288);
  CHECK(gf_sampler_order(&bl, 77777) == 93127);
  CHECK(gf_sampler_order(&bl, 99999) == 238);
  bl = make(777, 123, GF_ORDER_BLOCK, 0, 1, 1, GF_PARTITION_PAD, 0, 10, 3);
  gf_sampler_set_epoch(&bl, 2);
  CHECK(gf_sampler_order(&bl, 30) == 407);
  CHECK(gf_sampler_order(&bl, 400) == 62);
  CHECK(gf_sampler_order(&bl, 776) == 735);
  /* The full 64-bit domain (a = b = 32 bits). */
  gf_sampler s =
      make(UINT64_MAX, 5, GF_ORDER_SHUFFLE, 0, 1, 4, GF_PARTITION_PAD, 0, 0, 0);
  gf_sampler_set_epoch(&s, 3);
  CHECK(gf_sampler_order(&s, 0) == 768976613813066357ull);
  CHECK(gf_sampler_order(&s, 1) == 4913829105345138273ull);
  CHECK(gf_sampler_order(&s, 2) == 2392280373932092908ull);
  CHECK(gf_sampler_order(&s, 3) == 2303294585153314832ull);
}

/* gf_perm is a bijection of [0, m) for every m up to 5000, and inverse
 * undoes it (checked on a subset of sizes, to keep the test quick). */
static void bijection_small(uint8_t *seen) {
  for (uint64_t m = 1; m <= 5000; m++) {
    gf_perm p;
    gf_perm_init(&p, gf_order_mix(m * 7919), m);
    memset(seen, 0, m);
    int bad = 0;
    bool inv = m <= 600 || m % 50 == 0;
    for (uint64_t x = 0; x < m && !bad; x++) {
      uint64_t y = gf_perm_apply(&p, x);
      if (y >= m || seen[y] || (inv && gf_perm_inverse(&p, y) != x))
        bad = 1;
      else
        seen[y] = 1;
    }
    if (bad) {
      fprintf(stderr, "gf_perm over %llu is not a bijection\n",
              (unsigned long long)m);
      gf_test_failures++;
      return;
    }
  }
}

/* Each mode's epoch order over 1,000,003 samples hits every sample once. */
static void bijection_large(void) {
  const uint64_t n = 1000003;
  uint64_t *bits = calloc((n + 63) / 64, 8);
  CHECK(bits != NULL);
  if (!bits)
    return;
  static const uint32_t modes[] = {GF_ORDER_SHUFFLE, GF_ORDER_SEQUENTIAL,
                                   GF_ORDER_BLOCK};
  for (int m = 0; m < 3; m++) {
    gf_sampler s = make(n, 1234, modes[m], 0, 1, 1, GF_PARTITION_PAD, 0, 0, 0);
    gf_sampler_set_epoch(&s, 11);
    memset(bits, 0, (n + 63) / 64 * 8);
    uint64_t dups = 0, out = 0;
    for (uint64_t q = 0; q < n; q++) {
      uint64_t v = gf_sampler_order(&s, q);
      if (v >= n) {
        out++;
        continue;
      }
      if (bits[v / 64] >> (v % 64) & 1)
        dups++;
      bits[v / 64] |= 1ull << (v % 64);
    }
    if (dups || out)
      fprintf(stderr, "mode %u: %llu duplicates, %llu out of range\n", modes[m],
              (unsigned long long)dups, (unsigned long long)out);
    CHECK(dups == 0 && out == 0);
    CHECK(gf_sampler_order(&s, n) == GF_NO_INDEX);
  }
  free(bits);
}

/* A shuffled order: no long increasing runs, about half the steps go up,
 * no correlation between position and value, about one fixed point. */
static void looks_shuffled(void) {
  const uint64_t n = 1000003;
  gf_sampler s =
      make(n, 99, GF_ORDER_SHUFFLE, 0, 1, 1, GF_PARTITION_PAD, 0, 0, 0);
  for (uint64_t epoch = 0; epoch < 2; epoch++) {
    gf_sampler_set_epoch(&s, epoch);
    uint64_t run = 1, longest = 1, ups = 0, fixed = 0;
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    uint64_t prev = gf_sampler_order(&s, 0);
    for (uint64_t q = 0; q < n; q++) {
      uint64_t v = gf_sampler_order(&s, q);
      if (q > 0) {
        if (v > prev) {
          ups++;
          run++;
        } else {
          run = 1;
        }
        if (run > longest)
          longest = run;
      }
      fixed += v == q;
      double x = (double)q, y = (double)v;
      sx += x;
      sy += y;
      sxx += x * x;
      syy += y * y;
      sxy += x * y;
      prev = v;
    }
    double dn = (double)n;
    double r = (sxy - sx * sy / dn) /
               sqrt((sxx - sx * sx / dn) * (syy - sy * sy / dn));
    double up_frac = (double)ups / (dn - 1);
    fprintf(stderr,
            "epoch %llu: longest increasing run %llu, ups %.4f, "
            "correlation %.5f, fixed points %llu\n",
            (unsigned long long)epoch, (unsigned long long)longest, up_frac, r,
            (unsigned long long)fixed);
    /* A random permutation of 1M has its longest run near 9. */
    CHECK(longest < 16);
    CHECK(fabs(up_frac - 0.5) < 0.005);
    CHECK(fabs(r) < 0.01);
    CHECK(fixed < 12);
  }
}

/* Small domains: where each sample lands is near uniform over many epochs
 * (chi-square over the m x m position/value table). */
static void uniform_small(void) {
  static const uint64_t sizes[] = {2, 3, 5, 6, 8, 12};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    uint64_t m = sizes[k];
    uint64_t counts[12][12];
    memset(counts, 0, sizeof counts);
    gf_sampler s =
        make(m, 7, GF_ORDER_SHUFFLE, 0, 1, 1, GF_PARTITION_PAD, 0, 0, 0);
    const uint64_t epochs = 2000 * m;
    for (uint64_t e = 0; e < epochs; e++) {
      gf_sampler_set_epoch(&s, e);
      for (uint64_t q = 0; q < m; q++)
        counts[q][gf_sampler_order(&s, q)]++;
    }
    double expect = (double)epochs / (double)m, chi = 0;
    for (uint64_t i = 0; i < m; i++)
      for (uint64_t j = 0; j < m; j++) {
        double d = (double)counts[i][j] - expect;
        chi += d * d / expect;
      }
    /* (m-1)^2 degrees of freedom; allow 3x plus slack (p far below 1e-6
     * for a truly uniform one to exceed it). */
    double dof = (double)((m - 1) * (m - 1));
    if (chi > 3 * dof + 30)
      fprintf(stderr, "m=%llu: chi-square %.1f over %.0f dof\n",
              (unsigned long long)m, chi, dof);
    CHECK(chi <= 3 * dof + 30);
  }
}

/* A 64-bit domain: apply and inverse agree, values stay in range. */
static void huge_domain(void) {
  static const uint64_t sizes[] = {UINT64_MAX, (1ull << 63) + 1,
                                   (1ull << 40) + 7, 5000000000ull};
  uint64_t rng = 5;
  for (size_t k = 0; k < 4; k++) {
    gf_perm p;
    gf_perm_init(&p, 77 + k, sizes[k]);
    for (int i = 0; i < 2000; i++) {
      uint64_t x = gf_test_rand(&rng) % sizes[k];
      uint64_t y = gf_perm_apply(&p, x);
      CHECK(y < sizes[k]);
      CHECK(gf_perm_inverse(&p, y) == x);
    }
  }
  /* A billion-sample epoch is ready at once: no setup proportional to n. */
  gf_sampler s = make(1ull << 30, 3, GF_ORDER_SHUFFLE, 1, 8, 256,
                      GF_PARTITION_PAD, 0, 0, 0);
  CHECK(gf_sampler_samples_per_epoch(&s) == (1ull << 30) / 8);
  CHECK(gf_sampler_get(&s, 0) < (1ull << 30));
}

int main(void) {
  known_answers();
  uint8_t *seen = malloc(5000);
  CHECK(seen != NULL);
  if (seen)
    bijection_small(seen);
  free(seen);
  bijection_large();
  looks_shuffled();
  uniform_small();
  huge_domain();
  return gf_test_finish();
}
