/* Fuzz target: the resume state's logic (lib/pipeline/sampler.c):
 * gf_sampler_state_import of an untrusted gf_loader_state into a sampler
 * whose config is made from the state's own fields, so the fuzzer reaches
 * past the identity checks to the cursor and to elastic resume.
 *
 * Input: u8 flags, u8 world byte, u8 rank byte, then the state's 120 bytes
 * in its in-memory layout (little-endian; missing bytes are zero). Flags:
 * bit 0 writes struct_size and version and recomputes the check over the
 * mutated fields, so the fuzzer gets past them; bit 1 imports into a world
 * size of its own (world byte % 16 + 1) instead of the state's; bit 2
 * hands the import another dataset fingerprint (it must be refused).
 *
 * Checks: a refused state is GF_ESTATE with a message. An accepted one
 * puts the sampler in the state's epoch with a cursor inside its share
 * (same world: the state's own; another world: the epoch's start, at the
 * state's global position), every sample index below n; for small
 * datasets, the rest of the epoch over all ranks of the new world holds
 * each sample at most once, none of the prefix before the position, and
 * (partition pad) every sample after it (at position 0: a full epoch of
 * the new world, as a fresh job's); and the cursor exports into a
 * state that a fresh sampler imports to the same place. */
#include "fuzz.h"

#include "pipeline/sampler.h"

#define FP 0x5eed5eed5eed5eedull

static void check_rest(const gf_sampler *s, uint64_t start) {
  const uint64_t n = s->cfg.n;
  if (n > 4096 || s->cfg.world > 16)
    return;
  uint8_t *seen = fuzz_alloc(n);
  memset(seen, 0, n);
  /* Nothing delivered yet (start 0): a full epoch of the new world size,
   * padding included, as a fresh job's. */
  uint64_t w = s->cfg.world, padded = (n + w - 1) / w * w;
  uint8_t most = start == 0 && s->cfg.partition == GF_PARTITION_PAD
                     ? (uint8_t)((padded + n - 1) / n) /* <= 16 */
                     : 1;
  /* The prefix is the epoch order of the world that began the epoch (in
   * block order it deals windows to that world's ranks): o_world. */
  gf_sampler_config fc = s->cfg;
  fc.world = s->o_world;
  fc.rank = 0;
  gf_sampler full;
  FUZZ_ASSERT(gf_sampler_init(&full, &fc) == 0);
  gf_sampler_set_epoch(&full, s->epoch);
  for (uint64_t q = 0; q < start; q++)
    seen[gf_sampler_order(&full, q)] = 2; /* delivered before */
  uint64_t got = 0;
  for (uint32_t r = 0; r < s->cfg.world; r++) {
    gf_sampler t = *s;
    t.cfg.rank = r;
    gf_sampler_set_epoch(&t, s->epoch);
    for (uint64_t i = 0; i < gf_sampler_samples_per_epoch(&t); i++) {
      uint64_t idx = gf_sampler_get(&t, i);
      FUZZ_ASSERT(idx < n && seen[idx] < most);
      seen[idx]++;
      got++;
    }
  }
  uint64_t rest = n - start;
  if (s->cfg.partition == GF_PARTITION_DROP)
    FUZZ_ASSERT(got == rest / w * w);
  else if (start == 0)
    FUZZ_ASSERT(got == padded);
  else
    FUZZ_ASSERT(got == rest);
  if (s->cfg.partition == GF_PARTITION_PAD)
    for (uint64_t i = 0; i < n; i++)
      FUZZ_ASSERT(seen[i] != 0); /* every sample, before or now */
  free(seen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  unsigned flags = data[0], wbyte = data[1], rbyte = data[2];
  gf_loader_state st;
  memset(&st, 0, sizeof st);
  memcpy(&st, data + 3, size - 3 < sizeof st ? size - 3 : sizeof st);
  if (flags & 1) {
    st.struct_size = (uint32_t)sizeof st;
    st.version = GF_LOADER_STATE_VERSION;
    st.check = gf_sampler_state_check(&st);
  }

  gf_sampler_config cfg = GF_SAMPLER_CONFIG_INIT;
  cfg.n = st.samples;
  cfg.seed = st.seed;
  cfg.order = st.order;
  cfg.partition = st.partition;
  cfg.world = flags & 2 ? wbyte % 16 + 1 : st.world;
  cfg.rank = cfg.world ? rbyte % cfg.world : 0;
  cfg.batch_size = st.batch_size;
  cfg.drop_last = st.drop_last;
  cfg.block_size = st.block_size;
  cfg.window_blocks = st.window_blocks;
  gf_sampler s;
  int rc = gf_sampler_init(&s, &cfg);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_sampler_init");
    return 0;
  }
  gf_sampler before = s;
  uint64_t fp = flags & 4 ? ~st.fingerprint : st.fingerprint;
  uint64_t pos = UINT64_MAX, k = UINT64_MAX;
  rc = gf_sampler_state_import(&s, fp, &st, &pos, &k);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_sampler_state_import");
    FUZZ_ASSERT(rc == GF_ESTATE);
    FUZZ_ASSERT(memcmp(&s, &before, sizeof s) == 0);
    FUZZ_ASSERT(pos == UINT64_MAX && k == UINT64_MAX);
    return 0;
  }
  FUZZ_ASSERT(!(flags & 4));
  /* Accepted: a version 3 state whose check holds, or a version 2 one
   * (120 bytes, its check where order_world now is: the import checked
   * that one, and bytes past its 120 are not the state's). */
  if (st.version == GF_LOADER_STATE_VERSION)
    FUZZ_ASSERT(st.struct_size == sizeof st &&
                st.check == gf_sampler_state_check(&st));
  else
    FUZZ_ASSERT(st.version == 2 && st.struct_size == 120);
  FUZZ_ASSERT(gf_sampler_epoch(&s) == st.epoch);
  uint64_t share = gf_sampler_samples_per_epoch(&s);
  FUZZ_ASSERT(pos <= share && k <= gf_sampler_batches_per_epoch(&s));
  uint64_t n = st.samples;
  FUZZ_ASSERT(st.position <= n && st.start <= n);
  uint64_t start = gf_sampler_epoch_start(&s, st.epoch);
  if (cfg.world == st.world) {
    FUZZ_ASSERT(start == st.start);
    FUZZ_ASSERT(k == (st.batch < gf_sampler_batches_per_epoch(&s)
                          ? st.batch
                          : gf_sampler_batches_per_epoch(&s)));
    FUZZ_ASSERT(pos == (st.rank_position < share ? st.rank_position : share));
  } else {
    FUZZ_ASSERT(pos == 0 && k == 0 && start == st.position);
    check_rest(&s, start);
  }
  for (uint64_t i = pos; i < share && i < pos + 64; i++)
    FUZZ_ASSERT(gf_sampler_get(&s, i) < n);
  FUZZ_ASSERT(gf_sampler_get(&s, share) == GF_NO_INDEX);

  /* Where it stands exports and imports back to the same place. */
  gf_loader_state out;
  FUZZ_ASSERT(gf_sampler_state_export(&s, fp, st.epoch, pos, k, &out) == 0);
  gf_sampler s2;
  FUZZ_ASSERT(gf_sampler_init(&s2, &cfg) == 0);
  uint64_t pos2, k2;
  FUZZ_ASSERT(gf_sampler_state_import(&s2, fp, &out, &pos2, &k2) == 0);
  FUZZ_ASSERT(pos2 == pos && k2 == k);
  FUZZ_ASSERT(gf_sampler_samples_per_epoch(&s2) == share);
  for (uint64_t i = pos; i < share && i < pos + 16; i++)
    FUZZ_ASSERT(gf_sampler_get(&s2, i) == gf_sampler_get(&s, i));
  return 0;
}
