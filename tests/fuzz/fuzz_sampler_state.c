/* Fuzz target: the sampler's resume state (lib/pipeline/sampler.h):
 * gf_sampler_state_decode on untrusted bytes, then gf_sampler_init and
 * gf_sampler_import with a config made from the decoded fields.
 *
 * Input: u8 flags, then the state bytes (GF_SAMPLER_STATE_BYTES when
 * well formed; any length is tried). Flags: bit 0 rewrites the state's
 * check hash (bytes 72-79) over the mutated fields, so the fuzzer gets
 * past it; bits 1-7 pick the rank (mod world).
 *
 * Checks: a decoded state re-encodes to the same bytes and carries its
 * check; a sampler made from its fields accepts it (unless the position is
 * past the share) and then hands out only sample indices below n, batches
 * that tile the share, and an export that imports back. */
#include "fuzz.h"

#include "pipeline/sampler.h"

/* The check hash of sampler.h over the first 72 bytes. */
static uint64_t check_of(const uint8_t *b) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int w = 0; w < 9; w++)
    h = gf_order_mix(h ^ fuzz_le64(b + 8 * w));
  return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  unsigned flags = data[0];
  size_t len = size - 1;
  uint8_t *b = fuzz_alloc(len);
  memcpy(b, data + 1, len);
  if ((flags & 1) && len == GF_SAMPLER_STATE_BYTES)
    fuzz_put64(b + 72, check_of(b));

  gf_sampler_state st;
  int rc = gf_sampler_state_decode(b, len, &st);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_sampler_state_decode");
    FUZZ_ASSERT(rc == GF_ESTATE);
    free(b);
    return 0;
  }
  FUZZ_ASSERT(len == GF_SAMPLER_STATE_BYTES);
  FUZZ_ASSERT(st.check == gf_sampler_state_check(&st));
  uint8_t again[GF_SAMPLER_STATE_BYTES];
  gf_sampler_state_encode(&st, again);
  FUZZ_ASSERT(memcmp(again, b, GF_SAMPLER_STATE_BYTES) == 0);
  free(b);

  gf_sampler_config cfg = GF_SAMPLER_CONFIG_INIT;
  cfg.n = st.n;
  cfg.seed = st.seed;
  cfg.order = st.order;
  cfg.partition = st.partition;
  cfg.world = st.world;
  cfg.rank = st.world ? (flags >> 1) % st.world : 0;
  cfg.batch_size = st.batch_size;
  cfg.drop_last = st.drop_last;
  cfg.block_size = st.block_size;
  cfg.window_blocks = st.window_blocks;
  gf_sampler s;
  rc = gf_sampler_init(&s, &cfg);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_sampler_init");
    return 0;
  }
  uint64_t share = gf_sampler_samples_per_epoch(&s);
  uint64_t pos = UINT64_MAX;
  rc = gf_sampler_import(&s, &st, &pos);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_sampler_import");
    FUZZ_ASSERT(rc == GF_ESTATE);
    /* The only field a sampler built from the state itself may refuse is
     * a position past the share, or a field the state holds as 0 that the
     * config resolves to its default (block_size, window_blocks, world). */
    gf_sampler_state want;
    FUZZ_ASSERT(gf_sampler_export(&s, 0, &want) == 0);
    FUZZ_ASSERT(st.position > share || want.block_size != st.block_size ||
                want.window_blocks != st.window_blocks ||
                want.world != st.world);
    return 0;
  }
  FUZZ_ASSERT(pos == st.position && pos <= share);
  FUZZ_ASSERT(gf_sampler_epoch(&s) == st.epoch);
  uint64_t n = st.n;
  for (uint64_t i = pos; i < share && i < pos + 64; i++) {
    uint64_t idx = gf_sampler_get(&s, i);
    FUZZ_ASSERT(idx < n);
  }
  FUZZ_ASSERT(gf_sampler_get(&s, share) == GF_NO_INDEX);
  uint64_t nb = gf_sampler_batches_per_epoch(&s);
  uint64_t first, count;
  if (nb) {
    FUZZ_ASSERT(gf_sampler_batch(&s, 0, &first, &count) == 0);
    FUZZ_ASSERT(first == 0 && count >= 1 && count <= st.batch_size);
    FUZZ_ASSERT(gf_sampler_batch(&s, nb - 1, &first, &count) == 0);
    FUZZ_ASSERT(count >= 1 && count <= st.batch_size);
    FUZZ_ASSERT(first + count <= share);
    if (!st.drop_last)
      FUZZ_ASSERT(first + count == share);
  }
  FUZZ_ASSERT(gf_sampler_batch(&s, nb, &first, &count) == -ERANGE);
  gf_sampler_state out;
  FUZZ_ASSERT(gf_sampler_export(&s, pos, &out) == 0);
  gf_sampler s2;
  FUZZ_ASSERT(gf_sampler_init(&s2, &cfg) == 0);
  uint64_t pos2;
  FUZZ_ASSERT(gf_sampler_import(&s2, &out, &pos2) == 0 && pos2 == pos);
  for (uint64_t i = pos; i < share && i < pos + 16; i++)
    FUZZ_ASSERT(gf_sampler_get(&s2, i) == gf_sampler_get(&s, i));
  return 0;
}
