/* Fuzz target: gf_loader_state_import with untrusted bytes, on a small
 * loader (23 samples, batches of 4, rank 1 of 2, two decode threads) made
 * once per process.
 *
 * Input: u8 flags, u8 world byte, u8 rank byte, then the state's 120 bytes
 * in its in-memory layout (little-endian; missing bytes are zero). Flags:
 * bit 0 takes the identity (struct_size, version, samples, fingerprint and
 * the order's config) from the loader's own export and recomputes the
 * check, so the fuzzer reaches the cursor fields; bit 1 rebuilds the
 * cursor as a valid one of a job of world size (world byte % 4 + 1), rank
 * (rank byte % world), from the mutated epoch, start, batch and skipped
 * positions (elastic when the world differs from the loader's); bit 2
 * holds a batch during the import (it must be refused).
 *
 * Checks: an accepted state exports back to the place it resumed, and the
 * next batches are exactly the ones the sampler, importing the same state,
 * puts there (epoch, batch number, sample indices, pixels, labels), epoch
 * ends included; a refused one is GF_ESTATE (or -EBUSY while a batch is
 * held) with a message. */
#include "fuzz.h"

#include "format/format.h"
#include "pipeline/sampler.h"

#define N 23
#define H 6
#define W 5
#define C 3
#define BATCH 4
#define WORLD 2
#define RANK 1
#define SEED 7

static gf_loader *loader;
static gf_sampler ref_sampler;
static uint8_t ref_px[N][H * W * C];

static void destroy_loader(void) { gf_loader_destroy(loader); }

static void setup(void) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/ds", fuzz_tmpdir());
  mkdir(dir, 0755);
  gf_writer_opts wo = {.shard_size = 0, .alignment = 1, .index_version = 0};
  gf_writer *w;
  FUZZ_ASSERT(gf_writer_create(dir, &wo, &w) == 0);
  FUZZ_ASSERT(gf_writer_add_class(w, "zero") == 0);
  FUZZ_ASSERT(gf_writer_add_class(w, "one") == 0);
  FUZZ_ASSERT(gf_writer_add_class(w, "two") == 0);
  gf_shape s = {H, W, C, GF_DTYPE_U8};
  static const int codecs[3] = {GF_CODEC_RAW, GF_CODEC_ZSTD, GF_CODEC_GRADZSTD};
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < H * W * C; k++)
      ref_px[i][k] = (uint8_t)(i * 31 + k * 7 + (k / 3) * (k % 3));
    void *enc;
    size_t len;
    FUZZ_ASSERT(gf_encode(codecs[i % 3], ref_px[i], &s, 0, &enc, &len) == 0);
    FUZZ_ASSERT(gf_writer_add(w, enc, len, codecs[i % 3], &s, i % 3, NULL) ==
                0);
    free(enc);
  }
  FUZZ_ASSERT(gf_writer_finish(w) == 0);
  gf_writer_destroy(w);

  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = dir;
  cfg.batch_size = BATCH;
  cfg.threads = 2;
  cfg.world = WORLD;
  cfg.rank = RANK;
  cfg.seed = SEED;
  cfg.prefetch = 2;
  if (gf_loader_create(&cfg, &loader) != 0) {
    fprintf(stderr, "fuzz_loader_state: loader: %s\n", gf_last_error()->message);
    abort();
  }
  atexit(destroy_loader);
  gf_sampler_config sc = GF_SAMPLER_CONFIG_INIT;
  sc.n = N;
  sc.seed = SEED;
  sc.world = WORLD;
  sc.rank = RANK;
  sc.batch_size = BATCH;
  FUZZ_ASSERT(gf_sampler_init(&ref_sampler, &sc) == 0);
}

/* Checks b against the batch the reference sampler r (moved to the
 * epoch) puts at pos. */
static void check_batch(const gf_batch *b, const gf_sampler *r, uint64_t pos,
                        uint64_t k) {
  uint64_t share = gf_sampler_samples_per_epoch(r);
  FUZZ_ASSERT(pos < share);
  uint64_t want = share - pos < BATCH ? share - pos : BATCH;
  FUZZ_ASSERT(b->epoch == gf_sampler_epoch(r) && b->index == k &&
              b->count == want);
  for (uint32_t j = 0; j < b->count; j++) {
    uint64_t idx = b->indices[j];
    FUZZ_ASSERT(idx == gf_sampler_get(r, pos + j));
    FUZZ_ASSERT(b->labels[j] == (int64_t)(idx % 3));
    FUZZ_ASSERT(b->shapes[j].height == H && b->shapes[j].width == W &&
                b->shapes[j].channels == C);
    FUZZ_ASSERT(memcmp((const uint8_t *)b->data + b->offsets[j], ref_px[idx],
                       H * W * C) == 0);
  }
}

/* A valid cursor for rank `rank` of a job of `world` over the loader's
 * dataset and order, from the mutated fields of *st. */
static void valid_cursor(gf_loader_state *st, uint32_t world, uint32_t rank,
                         uint64_t fp) {
  gf_sampler_config sc = ref_sampler.cfg;
  sc.world = world;
  sc.rank = rank;
  gf_sampler s;
  FUZZ_ASSERT(gf_sampler_init(&s, &sc) == 0);
  gf_sampler_set_resume(&s, st->epoch, st->start % (N + 1));
  uint64_t share = gf_sampler_samples_per_epoch(&s);
  uint64_t k = st->batch % (gf_sampler_batches_per_epoch(&s) + 1);
  uint64_t least = k * BATCH < share ? k * BATCH : share;
  uint64_t pos = least + st->rank_position % (share - least + 1);
  FUZZ_ASSERT(gf_sampler_state_export(&s, fp, st->epoch, pos, k, st) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!loader)
    setup();
  if (size < 3)
    return 0;
  unsigned flags = data[0], wbyte = data[1], rbyte = data[2];
  gf_loader_state st;
  memset(&st, 0, sizeof st);
  memcpy(&st, data + 3, size - 3 < sizeof st ? size - 3 : sizeof st);
  gf_loader_state mine;
  FUZZ_ASSERT(gf_loader_state_export(loader, &mine) == 0);
  FUZZ_ASSERT(mine.check == gf_sampler_state_check(&mine));
  if (flags & 1) {
    st.struct_size = mine.struct_size;
    st.version = mine.version;
    st.samples = mine.samples;
    st.fingerprint = mine.fingerprint;
    st.seed = mine.seed;
    st.batch_size = mine.batch_size;
    st.block_size = mine.block_size;
    st.window_blocks = mine.window_blocks;
    st.order = mine.order;
    st.partition = mine.partition;
    st.drop_last = mine.drop_last;
    st.check = gf_sampler_state_check(&st);
  }
  if (flags & 2) {
    uint32_t world = wbyte % 4 + 1;
    valid_cursor(&st, world, rbyte % world, mine.fingerprint);
  }

  if (flags & 4) {
    gf_batch *held = NULL;
    int rc = gf_loader_next(loader, &held);
    if (rc == GF_EEPOCHEND)
      rc = gf_loader_next(loader, &held);
    FUZZ_ASSERT(rc == 0);
    /* Valid or not, a state is refused while a batch is held. */
    rc = gf_loader_state_import(loader, &st);
    FUZZ_ASSERT(rc == GF_ESTATE || rc == -EBUSY);
    FUZZ_CHECK_FAILURE(rc, "gf_loader_state_import");
    FUZZ_ASSERT(gf_loader_release(loader, held) == 0);
  }
  /* What the sampler makes of the same state. */
  gf_sampler ref = ref_sampler;
  uint64_t pos, k;
  int want = gf_sampler_state_import(&ref, mine.fingerprint, &st, &pos, &k);
  int rc = gf_loader_state_import(loader, &st);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_loader_state_import");
    FUZZ_ASSERT(rc == GF_ESTATE && want == GF_ESTATE);
    FUZZ_ASSERT(!(flags & 2)); /* a rebuilt cursor is valid */
    return 0;
  }
  FUZZ_ASSERT(want == 0);
  gf_loader_state back;
  FUZZ_ASSERT(gf_loader_state_export(loader, &back) == 0);
  FUZZ_ASSERT(back.epoch == st.epoch && back.rank_position == pos &&
              back.batch == k &&
              back.start == gf_sampler_epoch_start(&ref, st.epoch) &&
              back.world == WORLD && back.rank == RANK);
  for (int step = 0; step < 3; step++) {
    gf_batch *b;
    rc = gf_loader_next(loader, &b);
    if (pos == gf_sampler_samples_per_epoch(&ref)) {
      FUZZ_ASSERT(rc == GF_EEPOCHEND);
      gf_sampler_set_epoch(&ref, gf_sampler_epoch(&ref) + 1);
      pos = 0;
      k = 0;
      continue;
    }
    if (rc != 0)
      fprintf(stderr, "next: %s: %s\n", gf_err_name(rc),
              gf_last_error()->message);
    FUZZ_ASSERT(rc == 0);
    check_batch(b, &ref, pos, k);
    pos += b->count;
    k++;
    FUZZ_ASSERT(gf_loader_release(loader, b) == 0);
  }
  return 0;
}
