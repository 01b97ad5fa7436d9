/* Fuzz target: gf_loader_state_import with untrusted bytes, on a small
 * loader (23 samples, batches of 4, rank 1 of 2, two decode threads) made
 * once per process.
 *
 * Input: u8 flags, then the state's fields little-endian in struct order
 * (u32 version, u32 world, u64 seed, epoch, position, batch,
 * config_check; missing bytes are zero). Flags: bit 0 takes version,
 * world, seed and config_check from the loader's own export, so the
 * fuzzer reaches the cursor fields; bit 1 reduces position modulo
 * share + 1; bit 2 holds a batch during the import (it must be refused
 * with -EBUSY).
 *
 * Checks: an accepted state exports back unchanged, and the next batch is
 * exactly the one the sampler puts at that position (epoch, batch number,
 * sample indices, pixels, labels); a refused one names its reason. */
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
  gf_writer_opts wo = {0, 1};
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

/* The batch the sampler puts at (epoch, pos): checks b against it. */
static void check_batch(const gf_batch *b, uint64_t epoch, uint64_t pos,
                        uint64_t k) {
  gf_sampler s = ref_sampler;
  gf_sampler_set_epoch(&s, epoch);
  uint64_t share = gf_sampler_samples_per_epoch(&s);
  FUZZ_ASSERT(pos < share);
  uint64_t want = share - pos < BATCH ? share - pos : BATCH;
  FUZZ_ASSERT(b->epoch == epoch && b->index == k && b->count == want);
  for (uint32_t j = 0; j < b->count; j++) {
    uint64_t idx = b->indices[j];
    FUZZ_ASSERT(idx == gf_sampler_get(&s, pos + j));
    FUZZ_ASSERT(b->labels[j] == (int64_t)(idx % 3));
    FUZZ_ASSERT(b->shapes[j].height == H && b->shapes[j].width == W &&
                b->shapes[j].channels == C);
    FUZZ_ASSERT(memcmp((const uint8_t *)b->data + b->offsets[j], ref_px[idx],
                       H * W * C) == 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!loader)
    setup();
  if (size < 1)
    return 0;
  unsigned flags = data[0];
  uint8_t f[48] = {0};
  memcpy(f, data + 1, size - 1 < sizeof f ? size - 1 : sizeof f);
  gf_loader_state st = {fuzz_le32(f), fuzz_le32(f + 4), fuzz_le64(f + 8),
                        fuzz_le64(f + 16), fuzz_le64(f + 24),
                        fuzz_le64(f + 32), fuzz_le64(f + 40)};
  gf_loader_state mine;
  FUZZ_ASSERT(gf_loader_state_export(loader, &mine) == 0);
  if (flags & 1) {
    st.version = mine.version;
    st.world = mine.world;
    st.seed = mine.seed;
    st.config_check = mine.config_check;
  }
  uint64_t share = gf_sampler_samples_per_epoch(&ref_sampler);
  if (flags & 2)
    st.position %= share + 1;

  gf_batch *held = NULL;
  if (flags & 4) {
    int rc = gf_loader_next(loader, &held);
    if (rc == GF_EEPOCHEND)
      rc = gf_loader_next(loader, &held);
    FUZZ_ASSERT(rc == 0);
    FUZZ_ASSERT(gf_loader_state_import(loader, &st) < 0);
    FUZZ_ASSERT(gf_loader_release(loader, held) == 0);
    /* Valid or not, a state is refused while a batch is held. */
  }
  int rc = gf_loader_state_import(loader, &st);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_loader_state_import");
    FUZZ_ASSERT(rc == GF_ESTATE);
    FUZZ_ASSERT(st.version != mine.version || st.world != mine.world ||
                st.seed != mine.seed || st.config_check != mine.config_check ||
                st.position > share);
    return 0;
  }
  FUZZ_ASSERT(st.position <= share);
  gf_loader_state back;
  FUZZ_ASSERT(gf_loader_state_export(loader, &back) == 0);
  FUZZ_ASSERT(back.epoch == st.epoch && back.position == st.position &&
              back.batch == st.batch);
  uint64_t epoch = st.epoch, pos = st.position, k = st.batch;
  for (int step = 0; step < 3; step++) {
    gf_batch *b;
    rc = gf_loader_next(loader, &b);
    if (pos == share) {
      FUZZ_ASSERT(rc == GF_EEPOCHEND);
      epoch++;
      pos = 0;
      k = 0;
      continue;
    }
    if (rc != 0)
      fprintf(stderr, "next: %s: %s\n", gf_err_name(rc),
              gf_last_error()->message);
    FUZZ_ASSERT(rc == 0);
    check_batch(b, epoch, pos, k);
    pos += b->count;
    k++;
    FUZZ_ASSERT(gf_loader_release(loader, b) == 0);
  }
  return 0;
}
