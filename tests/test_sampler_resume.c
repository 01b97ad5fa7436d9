/* Resume state (gpufeed.h's gf_loader_state, built by sampler.c): export
 * at a random batch, import into a fresh sampler (of any rank: the state
 * is rank-independent at the same world size), continue identically
 * through the epoch and the next; the check hash as documented; and
 * GF_ESTATE naming the field, the state's value and the sampler's for
 * every mismatching config, a damaged state and a bad cursor. */
#include "pipeline/sampler.h"
#include "testutil.h"

#include <string.h>

#define FP 0x0123456789abcdefull /* a dataset fingerprint */

static gf_sampler_config random_config(uint64_t *rng) {
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = 1 + gf_test_rand(rng) % 5000;
  c.seed = gf_test_rand(rng);
  c.order = (uint32_t)(gf_test_rand(rng) % 3);
  c.world = 1 + (uint32_t)(gf_test_rand(rng) % 8);
  c.rank = (uint32_t)(gf_test_rand(rng) % c.world);
  c.partition = (uint32_t)(gf_test_rand(rng) % 2);
  c.drop_last = (uint32_t)(gf_test_rand(rng) % 2);
  c.batch_size = 1 + gf_test_rand(rng) % 100;
  if (c.order == GF_ORDER_BLOCK) {
    c.block_size = 1 + gf_test_rand(rng) % 300;
    c.window_blocks = 1 + (uint32_t)(gf_test_rand(rng) % 10);
  }
  return c;
}

/* Compares batches [k, end) of the current epoch of a and b. */
static bool same_batches(const gf_sampler *a, const gf_sampler *b, uint64_t k) {
  if (gf_sampler_batches_per_epoch(a) != gf_sampler_batches_per_epoch(b))
    return false;
  for (; k < gf_sampler_batches_per_epoch(a); k++) {
    uint64_t fa, ca, fb, cb;
    if (gf_sampler_batch(a, k, &fa, &ca) || gf_sampler_batch(b, k, &fb, &cb) ||
        fa != fb || ca != cb)
      return false;
    for (uint64_t i = fa; i < fa + ca; i++)
      if (gf_sampler_get(a, i) != gf_sampler_get(b, i))
        return false;
  }
  return true;
}

static void resume_random(void) {
  uint64_t rng = 31337;
  for (int t = 0; t < 250; t++) {
    gf_sampler_config c = random_config(&rng);
    gf_sampler run;
    CHECK_OK(gf_sampler_init(&run, &c));
    uint64_t epoch = gf_test_rand(&rng) % 100000;
    gf_sampler_set_epoch(&run, epoch);
    uint64_t nb = gf_sampler_batches_per_epoch(&run);
    uint64_t k = nb ? gf_test_rand(&rng) % (nb + 1) : 0;
    uint64_t pos = gf_sampler_samples_per_epoch(&run);
    uint64_t cnt;
    if (k < nb)
      CHECK_OK(gf_sampler_batch(&run, k, &pos, &cnt));

    gf_loader_state st;
    CHECK_OK(gf_sampler_state_export(&run, FP, epoch, pos, k, &st));
    gf_loader_state back;
    memcpy(&back, &st, sizeof back); /* what a checkpoint stores */

    /* A fresh process resumes, possibly as another rank (checkpoints are
     * usually written by rank 0 and read by all). */
    gf_sampler_config c2 = c;
    c2.rank = (uint32_t)(gf_test_rand(&rng) % c.world);
    gf_sampler fresh, ref;
    CHECK_OK(gf_sampler_init(&fresh, &c2));
    CHECK_OK(gf_sampler_init(&ref, &c2));
    gf_sampler_set_epoch(&ref, epoch);
    uint64_t got_pos = UINT64_MAX, got_k = UINT64_MAX;
    CHECK_OK(gf_sampler_state_import(&fresh, FP, &back, &got_pos, &got_k));
    CHECK(got_pos == pos && got_k == k);
    CHECK(gf_sampler_epoch(&fresh) == epoch);
    /* The batch holding the position onwards, then the next epoch. */
    bool ok = same_batches(&fresh, &ref, got_pos / c.batch_size);
    gf_sampler_set_epoch(&fresh, epoch + 1);
    gf_sampler_set_epoch(&ref, epoch + 1);
    ok = ok && same_batches(&fresh, &ref, 0);
    if (!ok) {
      fprintf(stderr, "config %d: resumed order differs (n=%llu order=%u)\n", t,
              (unsigned long long)c.n, c.order);
      gf_test_failures++;
      return;
    }
  }
}

/* Importing into a sampler whose config differs in `field` fails with
 * GF_ESTATE, names the field and both values, and leaves the sampler and
 * the outputs as they were. */
static void expect_mismatch(const gf_loader_state *st,
                            const gf_sampler_config *c, uint64_t fp,
                            const char *field, const char *values) {
  gf_sampler s;
  CHECK_OK(gf_sampler_init(&s, c));
  gf_sampler_set_epoch(&s, 77);
  uint64_t pos = 12345, k = 678;
  int rc = gf_sampler_state_import(&s, fp, st, &pos, &k);
  CHECK_ERR(rc, GF_ESTATE);
  const char *m = gf_last_error()->message;
  if (!strstr(m, field) || (values && !strstr(m, values))) {
    fprintf(stderr, "mismatch of %s: message \"%s\" does not name it (and "
            "\"%s\")\n", field, m, values ? values : "");
    gf_test_failures++;
  }
  CHECK(gf_sampler_epoch(&s) == 77 && pos == 12345 && k == 678);
}

/* The check as gpufeed.h documents it, computed here independently. */
static uint64_t documented_check(const gf_loader_state *st) {
  uint8_t b[sizeof *st];
  memcpy(b, st, sizeof b);
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i + 8 <= sizeof b - 8; i += 8) {
    uint64_t w = 0;
    for (int j = 7; j >= 0; j--)
      w = w << 8 | b[i + (size_t)j];
    uint64_t z = h ^ w;
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    h = z;
  }
  return h;
}

static void mismatches(void) {
  gf_sampler_config c = GF_SAMPLER_CONFIG_INIT;
  c.n = 100000;
  c.seed = 42;
  c.order = GF_ORDER_BLOCK;
  c.world = 4;
  c.rank = 1;
  c.batch_size = 32;
  c.drop_last = 1;
  gf_sampler s;
  CHECK_OK(gf_sampler_init(&s, &c));
  gf_loader_state st;
  CHECK_OK(gf_sampler_state_export(&s, FP, 3, 1024, 32, &st));
  CHECK(st.struct_size == sizeof st && st.version == GF_LOADER_STATE_VERSION);
  CHECK(st.check == documented_check(&st));
  /* Defaults resolved (block 256, windows 8); the global position is the
   * 32 batches of 32 of all 4 ranks. */
  CHECK(st.block_size == 256 && st.window_blocks == 8);
  CHECK(st.position == 32 * 32 * 4 && st.rank_position == 1024 &&
        st.start == 0 && st.rank == 1 && st.world == 4);

  gf_sampler_config m;
  m = c;
  m.seed = 43;
  expect_mismatch(&st, &m, FP, "seed", "is 42 in the state, 43 in this");
  m = c;
  m.n = 100001;
  expect_mismatch(&st, &m, FP, "samples", "100000 in the state, 100001");
  expect_mismatch(&st, &c, FP ^ 1, "fingerprint", "0x0123456789abcdef");
  m = c;
  m.order = GF_ORDER_SHUFFLE;
  expect_mismatch(&st, &m, FP, "order", NULL);
  m = c;
  m.block_size = 128;
  expect_mismatch(&st, &m, FP, "block_size", "256 in the state, 128");
  m = c;
  m.window_blocks = 4;
  expect_mismatch(&st, &m, FP, "window_blocks", NULL);
  m = c;
  m.partition = GF_PARTITION_DROP;
  expect_mismatch(&st, &m, FP, "partition", NULL);
  m = c;
  m.batch_size = 64;
  expect_mismatch(&st, &m, FP, "batch_size", "32 in the state, 64");
  m = c;
  m.drop_last = 0;
  expect_mismatch(&st, &m, FP, "drop_last", NULL);

  /* Rank is not part of the order; the same config imports fine. */
  m = c;
  m.rank = 3;
  gf_sampler other;
  CHECK_OK(gf_sampler_init(&other, &m));
  uint64_t pos, k;
  CHECK_OK(gf_sampler_state_import(&other, FP, &st, &pos, &k));
  CHECK(pos == 1024 && k == 32 && gf_sampler_epoch(&other) == 3);
  /* Another world size is elastic: the rest of epoch 3 from the global
   * position, this rank at its start. */
  m.world = 8;
  m.rank = 5;
  CHECK_OK(gf_sampler_init(&other, &m));
  CHECK_OK(gf_sampler_state_import(&other, FP, &st, &pos, &k));
  CHECK(pos == 0 && k == 0 && gf_sampler_epoch(&other) == 3);
  CHECK(gf_sampler_epoch_start(&other, 3) == 4096);
  CHECK(gf_sampler_get(&other, 0) == gf_sampler_order(&other, 4096 + 5));

  /* A damaged state: a cursor field changed without its check. */
  gf_loader_state bad = st;
  bad.epoch = 4;
  expect_mismatch(&bad, &c, FP, "check", NULL);
  bad = st;
  bad.version = 1;
  expect_mismatch(&bad, &c, FP, "version", NULL);
  bad = st;
  bad.struct_size = 56;
  expect_mismatch(&bad, &c, FP, "struct_size", NULL);
  /* Cursors that no rank can stand at (with a valid check). */
  uint64_t share = gf_sampler_samples_per_epoch(&s);
  bad = st;
  bad.rank_position = share + 1;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "rank_position", NULL);
  bad = st;
  bad.rank_position = 1000; /* 32 batches of 32 take at least 1024 */
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "rank_position", NULL);
  bad = st;
  bad.batch = gf_sampler_batches_per_epoch(&s) + 1;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "batch", NULL);
  bad = st;
  bad.position = st.position + 1;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "position is 4097", "make it 4096");
  bad = st;
  bad.rank = 4;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "rank 4 of world 4", NULL);
  bad = st;
  bad.start = c.n + 1;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, FP, "start", NULL);
  CHECK_ERR(gf_sampler_state_export(&s, FP, 3, share + 1, 0, &bad), -EINVAL);
  /* The end of the share is a valid place to stand (epoch complete). */
  CHECK_OK(gf_sampler_state_export(&s, FP, 3, share,
                                   gf_sampler_batches_per_epoch(&s), &bad));
  CHECK(bad.position == c.n);
}

int main(void) {
  resume_random();
  mismatches();
  return gf_test_finish();
}
