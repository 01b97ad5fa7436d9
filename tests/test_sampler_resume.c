/* Resume state: export at a random batch, import into a fresh sampler (of
 * any rank: the state is rank-independent), continue identically through
 * the epoch and the next; the encoding; and GF_ESTATE naming the field for
 * every mismatching config, a damaged state and a bad position. */
#include "pipeline/sampler.h"
#include "testutil.h"

#include <string.h>

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

    gf_sampler_state st;
    CHECK_OK(gf_sampler_export(&run, pos, &st));
    uint8_t bytes[GF_SAMPLER_STATE_BYTES];
    gf_sampler_state_encode(&st, bytes);
    gf_sampler_state back;
    CHECK_OK(gf_sampler_state_decode(bytes, sizeof bytes, &back));
    CHECK(memcmp(&back, &st, sizeof st) == 0);

    /* A fresh process resumes, possibly as another rank (checkpoints are
     * usually written by rank 0 and read by all). */
    gf_sampler_config c2 = c;
    c2.rank = (uint32_t)(gf_test_rand(&rng) % c.world);
    gf_sampler fresh, ref;
    CHECK_OK(gf_sampler_init(&fresh, &c2));
    CHECK_OK(gf_sampler_init(&ref, &c2));
    gf_sampler_set_epoch(&ref, epoch);
    uint64_t got_pos = UINT64_MAX;
    CHECK_OK(gf_sampler_import(&fresh, &back, &got_pos));
    CHECK(got_pos == pos);
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
 * GF_ESTATE, names the field and leaves the sampler as it was. */
static void expect_mismatch(const gf_sampler_state *st,
                            const gf_sampler_config *c, const char *field) {
  gf_sampler s;
  CHECK_OK(gf_sampler_init(&s, c));
  gf_sampler_set_epoch(&s, 77);
  uint64_t pos = 12345;
  int rc = gf_sampler_import(&s, st, &pos);
  CHECK_ERR(rc, GF_ESTATE);
  if (!strstr(gf_last_error()->message, field)) {
    fprintf(stderr, "mismatch of %s: message \"%s\" does not name it\n", field,
            gf_last_error()->message);
    gf_test_failures++;
  }
  CHECK(gf_sampler_epoch(&s) == 77 && pos == 12345);
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
  gf_sampler_set_epoch(&s, 3);
  gf_sampler_state st;
  CHECK_OK(gf_sampler_export(&s, 1000, &st));
  /* The same check an independent port computes from the documented
   * layout (defaults resolved: block 256, windows 8). */
  CHECK(st.check == 0x1a31af0119d10f9bull);
  CHECK(st.block_size == 256 && st.window_blocks == 8);
  uint8_t bytes[GF_SAMPLER_STATE_BYTES];
  gf_sampler_state_encode(&st, bytes);
  CHECK(gf_le32(bytes) == GF_SAMPLER_STATE_VERSION);
  CHECK(gf_le64(bytes + 8) == 42 && gf_le64(bytes + 24) == 1000);
  CHECK(gf_le64(bytes + 72) == st.check);

  gf_sampler_config m;
  m = c;
  m.seed = 43;
  expect_mismatch(&st, &m, "seed");
  m = c;
  m.n = 100001;
  expect_mismatch(&st, &m, "n (sample count)");
  m = c;
  m.order = GF_ORDER_SHUFFLE;
  expect_mismatch(&st, &m, "order");
  m = c;
  m.block_size = 128;
  expect_mismatch(&st, &m, "block_size");
  m = c;
  m.window_blocks = 4;
  expect_mismatch(&st, &m, "window_blocks");
  m = c;
  m.world = 8;
  expect_mismatch(&st, &m, "world");
  m = c;
  m.partition = GF_PARTITION_DROP;
  expect_mismatch(&st, &m, "partition");
  m = c;
  m.batch_size = 64;
  expect_mismatch(&st, &m, "batch_size");
  m = c;
  m.drop_last = 0;
  expect_mismatch(&st, &m, "drop_last");

  /* Rank is not part of the state; the same config imports fine. */
  m = c;
  m.rank = 3;
  gf_sampler other;
  CHECK_OK(gf_sampler_init(&other, &m));
  uint64_t pos;
  CHECK_OK(gf_sampler_import(&other, &st, &pos));
  CHECK(pos == 1000 && gf_sampler_epoch(&other) == 3);
  CHECK(gf_sampler_config_check(&other) == gf_sampler_config_check(&s));
  m.seed = 1;
  CHECK_OK(gf_sampler_init(&other, &m));
  CHECK(gf_sampler_config_check(&other) != gf_sampler_config_check(&s));

  /* A damaged state: a field changed without its check. */
  gf_sampler_state bad = st;
  bad.epoch = 4;
  expect_mismatch(&bad, &c, "check");
  bad = st;
  bad.version = 2;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, "version");
  /* A position past the share (with a valid check). */
  bad = st;
  bad.position = gf_sampler_samples_per_epoch(&s) + 1;
  bad.check = gf_sampler_state_check(&bad);
  expect_mismatch(&bad, &c, "position");
  CHECK_ERR(gf_sampler_export(&s, gf_sampler_samples_per_epoch(&s) + 1, &bad),
            -EINVAL);
  /* The end of the share is a valid place to stand (epoch complete). */
  CHECK_OK(gf_sampler_export(&s, gf_sampler_samples_per_epoch(&s), &bad));

  /* Decoding: length, version and check are verified. */
  gf_sampler_state out;
  memset(&out, 0, sizeof out);
  CHECK_ERR(gf_sampler_state_decode(bytes, sizeof bytes - 1, &out), GF_ESTATE);
  CHECK_ERR(gf_sampler_state_decode(NULL, sizeof bytes, &out), GF_ESTATE);
  for (size_t i = 0; i < sizeof bytes; i++) {
    uint8_t flipped[GF_SAMPLER_STATE_BYTES];
    memcpy(flipped, bytes, sizeof flipped);
    flipped[i] ^= 0x10;
    if (gf_sampler_state_decode(flipped, sizeof flipped, &out) != GF_ESTATE) {
      fprintf(stderr, "a flipped bit in byte %zu was not caught\n", i);
      gf_test_failures++;
    }
  }
  CHECK(out.check == 0); /* untouched by the failures */
  CHECK_OK(gf_sampler_state_decode(bytes, sizeof bytes, &out));
  CHECK(out.check == st.check && out.position == 1000);
}

int main(void) {
  resume_random();
  mismatches();
  return gf_test_finish();
}
