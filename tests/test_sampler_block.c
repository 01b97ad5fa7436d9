/* GF_ORDER_BLOCK: a bijection for every shape of blocks and windows
 * (short last block anywhere in the block order, short last window), and
 * locality: a window of positions reads only its W blocks, a batch touches
 * a handful of blocks (a full shuffle touches one per sample), while each
 * batch still mixes several blocks. */
#include "pipeline/sampler.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static bool init_block(gf_sampler *s, uint64_t n, uint64_t bs, uint32_t w,
                       uint64_t seed) {
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = n;
  c.seed = seed;
  c.order = GF_ORDER_BLOCK;
  c.block_size = bs;
  c.window_blocks = w;
  int rc = gf_sampler_init(s, &c);
  CHECK_OK(rc);
  return rc == 0;
}

/* Returns true when O is a bijection of [0, n) and every window of
 * positions holds exactly the samples of its blocks. */
static bool check_shape(uint64_t n, uint64_t bs, uint32_t w, uint64_t epoch,
                        uint8_t *seen) {
  gf_sampler s;
  if (!init_block(&s, n, bs, w, epoch * 31 + n))
    return false;
  gf_sampler_set_epoch(&s, epoch);
  memset(seen, 0, n);
  uint64_t nb = (n + bs - 1) / bs;
  /* Walk the windows in order: window k holds blocks k*w .. and its
   * positions follow one another. */
  uint64_t q = 0;
  for (uint64_t k = 0; k * w < nb; k++) {
    uint64_t blocks = nb - k * w < w ? nb - k * w : w;
    /* The window's blocks are recovered from its samples: it must hold
     * whole blocks only, `blocks` of them. */
    uint64_t want = 0; /* samples in the blocks seen so far */
    uint64_t block_ids[64];
    uint64_t distinct = 0;
    uint64_t size_guess = blocks * bs; /* an upper bound */
    uint64_t got = 0;
    for (; q < n && got < size_guess; q++, got++) {
      uint64_t v = gf_sampler_order(&s, q);
      if (v >= n || seen[v])
        return false;
      seen[v] = 1;
      uint64_t b = v / bs;
      bool known = false;
      for (uint64_t j = 0; j < distinct; j++)
        known |= block_ids[j] == b;
      if (!known) {
        if (distinct == blocks)
          return false; /* a window touched more than its blocks */
        block_ids[distinct++] = b;
        want += b == nb - 1 ? n - (nb - 1) * bs : bs;
      }
      if (distinct == blocks && got + 1 == want) {
        q++;
        got++;
        break;
      }
    }
    if (got != want)
      return false;
  }
  return q == n;
}

static void bijection_shapes(void) {
  uint8_t *seen = malloc(200000);
  CHECK(seen != NULL);
  if (!seen)
    return;
  uint64_t rng = 77;
  static const uint64_t sizes[] = {1, 2, 3, 5, 7, 16, 31};
  for (uint64_t n = 1; n <= 300; n++) {
    for (int t = 0; t < 4; t++) {
      uint64_t bs = sizes[gf_test_rand(&rng) % 7];
      uint32_t w = 1 + (uint32_t)(gf_test_rand(&rng) % 9);
      uint64_t epoch = gf_test_rand(&rng) % 50;
      if (!check_shape(n, bs, w, epoch, seen)) {
        fprintf(stderr,
                "block order n=%llu block=%llu windows=%u epoch=%llu "
                "is not a bijection of whole-block windows\n",
                (unsigned long long)n, (unsigned long long)bs, w,
                (unsigned long long)epoch);
        gf_test_failures++;
        free(seen);
        return;
      }
    }
  }
  /* Larger, with the short block at every kind of place. */
  static const struct {
    uint64_t n, bs;
    uint32_t w;
  } big[] = {{100000, 100, 3},
             {100001, 1000, 7},
             {199999, 256, 8},
             {65536, 256, 8},
             {131071, 13, 64}};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    for (uint64_t epoch = 0; epoch < 3; epoch++)
      if (!check_shape(big[i].n, big[i].bs, big[i].w, epoch, seen)) {
        fprintf(stderr, "block order n=%llu block=%llu windows=%u fails\n",
                (unsigned long long)big[i].n, (unsigned long long)big[i].bs,
                big[i].w);
        gf_test_failures++;
      }
  free(seen);
}

/* Distinct blocks of `bs` samples touched by positions [q, q + len). */
static uint64_t blocks_touched(const gf_sampler *s, uint64_t q, uint64_t len,
                               uint64_t bs) {
  uint64_t seen[512];
  uint64_t d = 0;
  for (uint64_t i = q; i < q + len; i++) {
    uint64_t b = gf_sampler_order(s, i) / bs;
    bool known = false;
    for (uint64_t j = 0; j < d && !known; j++)
      known = seen[j] == b;
    if (!known && d < 512)
      seen[d++] = b;
  }
  return d;
}

static double mean_abs_step(const gf_sampler *s, uint64_t n) {
  double sum = 0;
  uint64_t prev = gf_sampler_order(s, 0);
  for (uint64_t q = 1; q < n; q++) {
    uint64_t v = gf_sampler_order(s, q);
    sum += (double)(v > prev ? v - prev : prev - v);
    prev = v;
  }
  return sum / (double)(n - 1);
}

static void locality(void) {
  const uint64_t n = 1000003, bs = GF_SAMPLER_DEFAULT_BLOCK_SIZE;
  const uint32_t w = GF_SAMPLER_DEFAULT_WINDOW_BLOCKS;
  const uint64_t batch = 256, nbatches = n / batch;
  gf_sampler blk, shuf;
  if (!init_block(&blk, n, 0, 0, 5)) /* zeros: the defaults */
    return;
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = n;
  c.seed = 5;
  CHECK_OK(gf_sampler_init(&shuf, &c));
  gf_sampler_set_epoch(&blk, 2);
  gf_sampler_set_epoch(&shuf, 2);

  /* A batch reads from at most the two windows it overlaps (2W extents of
   * bs consecutive samples), and mixes several blocks; a shuffled batch
   * reads from about one block a sample. */
  uint64_t worst = 0, sum_blk = 0, sum_shuf = 0, fewest = UINT64_MAX;
  for (uint64_t k = 0; k < nbatches; k += 7) {
    uint64_t b = blocks_touched(&blk, k * batch, batch, bs);
    worst = b > worst ? b : worst;
    fewest = b < fewest ? b : fewest;
    sum_blk += b;
    sum_shuf += blocks_touched(&shuf, k * batch, batch, bs);
  }
  uint64_t measured = (nbatches + 6) / 7;
  double avg_blk = (double)sum_blk / (double)measured;
  double avg_shuf = (double)sum_shuf / (double)measured;
  fprintf(stderr,
          "blocks a batch of %llu touches: block mode avg %.2f "
          "(min %llu, max %llu), shuffle avg %.2f\n",
          (unsigned long long)batch, avg_blk, (unsigned long long)fewest,
          (unsigned long long)worst, avg_shuf);
  CHECK(worst <= 2 * w);
  CHECK(avg_blk >= w - 1); /* 256 samples of 8 blocks: nearly all 8 */
  CHECK(avg_shuf > 200);

  /* Consecutive samples: a full shuffle steps n/3 on average. Windows of
   * one block step about bs/3 inside a block and n/3 between blocks. With
   * W blocks a window, steps are n/3 * (1 - 1/W) on average: locality is
   * in which extents a window reads, checked above, not in the order. */
  double step_shuf = mean_abs_step(&shuf, n);
  gf_sampler one;
  if (!init_block(&one, n, bs, 1, 5))
    return;
  gf_sampler_set_epoch(&one, 2);
  double step_one = mean_abs_step(&one, n);
  double step_blk = mean_abs_step(&blk, n);
  fprintf(stderr,
          "mean |step| / n: shuffle %.4f, block(W=1) %.5f, "
          "block(W=%u) %.4f\n",
          step_shuf / (double)n, step_one / (double)n, w, step_blk / (double)n);
  CHECK(step_shuf > 0.32 * (double)n && step_shuf < 0.35 * (double)n);
  CHECK(step_one < (double)n / 100);
  CHECK(step_blk < 0.32 * (double)n);
}

/* Windows dealt to ranks whole (section 3): in a full epoch of world V,
 * the blocks that rank r reads for its own windows (the first Lmin
 * positions of every share: the rests and the padding come after) are
 * read by no other rank, and the ranks' shares together are the epoch
 * (each sample once, plus only PAD's repeats). gf_sampler_window gives a
 * window's positions as one run of the share. */
static void dealt_to_ranks(void) {
  uint64_t rng = 99;
  for (int t = 0; t < 300; t++) {
    uint64_t n = 1 + gf_test_rand(&rng) % 3000;
    uint64_t bs = 1 + gf_test_rand(&rng) % 30;
    uint32_t W = 1 + (uint32_t)(gf_test_rand(&rng) % 6);
    uint32_t V = 2 + (uint32_t)(gf_test_rand(&rng) % 5);
    uint64_t nb = (n + bs - 1) / bs;
    uint32_t *owner = malloc(nb * sizeof *owner);
    uint32_t *count = calloc(n, sizeof *count);
    for (uint64_t b = 0; b < nb; b++)
      owner[b] = UINT32_MAX;
    /* Each rank's own part: its windows, whole, before the rests. */
    uint64_t nw = (nb + W - 1) / W, own_min = UINT64_MAX;
    for (uint32_t r = 0; r < V; r++) {
      uint64_t k = r < nw ? (nw - r + V - 1) / V : 0;
      uint64_t len = k * W * bs;
      if (k && (nw - 1) % V == r)
        len -= (W - (nb - (nw - 1) * W)) * bs;
      own_min = len < own_min ? len : own_min;
    }
    bool bad = false;
    for (uint32_t r = 0; r < V && !bad; r++) {
      gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
      c.n = n;
      c.seed = t;
      c.order = GF_ORDER_BLOCK;
      c.block_size = bs;
      c.window_blocks = W;
      c.world = V;
      c.rank = r;
      c.partition = GF_PARTITION_PAD;
      gf_sampler s;
      CHECK_OK(gf_sampler_init(&s, &c));
      gf_sampler_set_epoch(&s, (uint64_t)t % 3);
      uint64_t share = gf_sampler_samples_per_epoch(&s);
      /* The short block may lie in any window: its rank's own part is d
       * shorter; own_min - bs is within every rank's own part. */
      uint64_t own = own_min > bs ? own_min - bs : 0;
      for (uint64_t i = 0; i < share; i++) {
        uint64_t x = gf_sampler_get(&s, i);
        if (x >= n) {
          bad = true;
          break;
        }
        count[x]++;
        if (i < own) {
          uint64_t b = x / bs;
          if (owner[b] != UINT32_MAX && owner[b] != r) {
            fprintf(stderr,
                    "n %llu bs %llu W %u V %u: block %llu read by "
                    "ranks %u and %u\n",
                    (unsigned long long)n, (unsigned long long)bs, W, V,
                    (unsigned long long)b, owner[b], r);
            bad = true;
          }
          owner[b] = r;
          /* Its window's positions are one run of the share. */
          uint64_t a, e;
          gf_sampler_window(&s, i, &a, &e);
          if (a > i || e <= i || e - a > (uint64_t)W * bs)
            bad = true;
        }
      }
    }
    uint64_t total = (n + V - 1) / V * V;
    uint64_t pad = total - n, extra = 0;
    for (uint64_t x = 0; x < n && !bad; x++) {
      if (count[x] == 0)
        bad = true;
      extra += count[x] - 1;
    }
    if (extra != pad)
      bad = true;
    if (bad) {
      fprintf(stderr, "dealt: n %llu bs %llu W %u V %u failed\n",
              (unsigned long long)n, (unsigned long long)bs, W, V);
      gf_test_failures++;
    }
    free(owner);
    free(count);
  }
}

int main(void) {
  bijection_shapes();
  locality();
  dealt_to_ranks();
  return gf_test_finish();
}
