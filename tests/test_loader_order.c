/* Determinism, resume and the cache:
 * - the same config with 1 and 8 threads (and different prefetch) gives
 *   byte-identical batch sequences over two epochs, for both sources;
 * - resuming from an exported state at random points, in a fresh loader,
 *   continues exactly as the uninterrupted run, mid-epoch included;
 * - a state from another config is refused with GF_ESTATE;
 * - with a RandomResizedCrop + flip transform (the CPU reference in host
 *   mode, the kernel in GPU mode) on ragged samples, every output is the
 *   reference's for the
 *   sample's (epoch, index) window, 1 and 8 threads give byte-identical
 *   outputs, and a resume mid-epoch continues byte-identically;
 * - with a cache that holds the dataset, a later epoch does no reads and no
 *   decodes (stats). */
#include "gpu_testutil.h"
#include "loader_fixture.h"
#include "xform/transform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAXB 4096

/* A batch's output in host memory: itself in host mode, a copy (freed
 * by the caller) in GPU mode; NULL when it cannot be read. */
static uint8_t *host_output(const gf_batch *b, uint8_t **copy) {
  *copy = NULL;
  if (!b->output || !b->on_device)
    return b->output;
  if (!(*copy = malloc(b->output_bytes)) ||
      gf_test_copy_to_host(*copy, b->output, b->output_bytes) != 0) {
    free(*copy);
    *copy = NULL;
  }
  return *copy;
}

/* A hash of a batch's transformed output (and its indices). */
static uint64_t out_hash(const gf_batch *b) {
  uint64_t h = batch_hash(b);
  uint8_t *copy;
  const uint8_t *p = host_output(b, &copy);
  CHECK(p != NULL || !b->output);
  for (uint64_t i = 0; p && i < b->output_bytes; i++)
    h = (h ^ p[i]) * 0x100000001B3ull;
  free(copy);
  return h ^ b->output_bytes ^ ((uint64_t)b->out_height << 32) ^
         b->out_width;
}

static bool hash_output;

/* Two epochs of cfg: each batch's output equals gf_xform_ref of its own
 * pixels with the windows of (epoch, sample index). Returns mismatches. */
static int check_outputs(const gf_loader_config *cfg) {
  gf_loader *l;
  if (gf_loader_create(cfg, &l) < 0)
    return 1;
  int bad = 0, batches = 0;
  for (int e = 0; e < 2; e++) {
    gf_batch *b;
    while (gf_loader_next(l, &b) == 0) {
      const gf_transform *t = &cfg->transform;
      gf_xform_sample s[64];
      for (uint32_t j = 0; j < b->count && j < 64; j++)
        gf_xform_sample_init(t, b->epoch, b->indices[j], b->offsets[j],
                             &b->shapes[j], t->height, t->width, 0, &s[j]);
      uint8_t *want = malloc(b->output_bytes), *copy;
      const uint8_t *got = host_output(b, &copy);
      if (b->count > 64 || !want || !got ||
          gf_xform_ref(t, b->data, b->data_bytes, s, b->count, t->height,
                       t->width, b->out_channels, want) != 0 ||
          memcmp(want, got, b->output_bytes) != 0)
        bad++;
      free(want);
      free(copy);
      batches++;
      gf_loader_release(l, b);
    }
  }
  gf_loader_destroy(l);
  return bad + (batches < 4);
}

/* Hashes of the first `nb` batches (epoch ends counted as a hash of 0). */
static int run(const gf_loader_config *cfg, uint64_t *h, int nb) {
  gf_loader *l;
  if (gf_loader_create(cfg, &l) < 0) {
    fprintf(stderr, "create: %s\n", gf_last_error()->message);
    return -1;
  }
  for (int i = 0; i < nb; i++) {
    gf_batch *b;
    int rc = gf_loader_next(l, &b);
    if (rc == GF_EEPOCHEND) {
      h[i] = 0;
      continue;
    }
    if (rc < 0) {
      fprintf(stderr, "next: %s\n", gf_last_error()->message);
      gf_loader_destroy(l);
      return -1;
    }
    h[i] = hash_output ? out_hash(b) : batch_hash(b);
    gf_loader_release(l, b);
  }
  gf_loader_destroy(l);
  return 0;
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 83, 4, true, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();

  static uint64_t a[MAXB], b[MAXB];
  const int nb = 40; /* batch 7 of 83 samples: 12 a epoch + end marks */
  for (int src = 0; src < 2; src++) {
    for (int order = 0; order < 3; order++) {
      gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
      cfg.source = src ? f.png_dir : f.ds_dir;
      cfg.channels = 3;
      cfg.max_sample_bytes = 16 * 16 * 3; /* ragged folder: not scanned */
      cfg.batch_size = 7;
      cfg.seed = 42;
      cfg.order = (uint32_t)order;
      cfg.block_size = 5;
      cfg.threads = 1;
      cfg.prefetch = 1;
      CHECK_OK(run(&cfg, a, nb));
      cfg.threads = 8;
      cfg.prefetch = 4;
      cfg.cache_bytes = 1 << 20;
      CHECK_OK(run(&cfg, b, nb));
      CHECK(memcmp(a, b, sizeof(uint64_t) * nb) == 0);
      /* A different seed changes the order (shuffled modes). */
      if (order != GF_ORDER_SEQUENTIAL) {
        cfg.seed = 43;
        CHECK_OK(run(&cfg, b, nb));
        CHECK(memcmp(a, b, sizeof(uint64_t) * nb) != 0);
      }
    }
  }

  /* Resume at random points, mid-epoch and at epoch ends. */
  uint64_t rs = 7;
  for (int trial = 0; trial < 12; trial++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = trial % 2 ? f.png_dir : f.ds_dir;
    cfg.channels = 3;
    cfg.max_sample_bytes = 16 * 16 * 3;
    cfg.batch_size = 1 + (uint32_t)(gf_test_rand(&rs) % 10);
    cfg.world = 1 + (uint32_t)(gf_test_rand(&rs) % 3);
    cfg.rank = (uint32_t)(gf_test_rand(&rs) % cfg.world);
    cfg.order = (uint32_t)(gf_test_rand(&rs) % 3);
    cfg.drop_last = trial % 3 == 0;
    cfg.seed = gf_test_rand(&rs);
    cfg.threads = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    int total = 30;
    CHECK_OK(run(&cfg, a, total));
    int cut = 1 + (int)(gf_test_rand(&rs) % (uint64_t)(total - 2));
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    for (int i = 0; i < cut; i++) {
      gf_batch *bt;
      int rc = gf_loader_next(l, &bt);
      if (rc == 0)
        gf_loader_release(l, bt);
    }
    gf_loader_state st;
    CHECK_OK(gf_loader_state_export(l, &st));
    gf_loader_destroy(l);
    /* A fresh loader (other thread count) picks up at the same batch. */
    cfg.threads = 3;
    CHECK_OK(gf_loader_create(&cfg, &l));
    CHECK_OK(gf_loader_state_import(l, &st));
    for (int i = cut; i < total; i++) {
      gf_batch *bt;
      int rc = gf_loader_next(l, &bt);
      uint64_t h = 0;
      if (rc == 0) {
        h = batch_hash(bt);
        gf_loader_release(l, bt);
      } else {
        CHECK(rc == GF_EEPOCHEND);
      }
      if (h != a[i]) {
        fprintf(stderr, "resume trial %d (cut %d): batch %d differs (batch %u "
                "world %u rank %u order %u drop_last %u, %s)\n", trial, cut,
                i, cfg.batch_size, cfg.world, cfg.rank, cfg.order,
                cfg.drop_last, cfg.source);
        gf_test_failures++;
        break;
      }
    }
    /* A state from another config is refused, naming what differs. */
    gf_loader_state bad = st;
    bad.seed ^= 1;
    CHECK_ERR(gf_loader_state_import(l, &bad), GF_ESTATE);
    CHECK(strstr(gf_last_error()->message, "seed") != NULL);
    bad = st;
    bad.fingerprint ^= 1;
    CHECK_ERR(gf_loader_state_import(l, &bad), GF_ESTATE);
    bad = st;
    bad.version = 99;
    CHECK_ERR(gf_loader_state_import(l, &bad), GF_ESTATE);
    gf_loader_destroy(l);
  }

  /* RandomResizedCrop(12x9) + flip, f16 NCHW normalised, on ragged
   * samples: 1 vs 8 threads, then a resume mid-epoch. */
  hash_output = true;
  for (int src = 0; src < 2; src++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = src ? f.png_dir : f.ds_dir;
    cfg.channels = 3;
    cfg.max_sample_bytes = 16 * 16 * 3;
    cfg.batch_size = 6;
    cfg.seed = 7;
    cfg.transform.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
    cfg.transform.hflip = 1;
    cfg.transform.height = 12;
    cfg.transform.width = 9;
    cfg.transform.out_dtype = GF_OUT_F16;
    cfg.transform.layout = GF_LAYOUT_NCHW;
    cfg.transform.seed = 1234;
    for (int c = 0; c < 3; c++) {
      cfg.transform.mean[c] = 120.0f + (float)c;
      cfg.transform.std[c] = 60.0f;
    }
    cfg.threads = 1;
    cfg.prefetch = 1;
    const int total = 33; /* 14 batches an epoch + end marks */
    CHECK(check_outputs(&cfg) == 0);
    CHECK_OK(run(&cfg, a, total));
    cfg.threads = 8;
    cfg.prefetch = 4;
    CHECK_OK(run(&cfg, b, total));
    CHECK(memcmp(a, b, sizeof(uint64_t) * total) == 0);
    /* A different transform seed changes the outputs. */
    cfg.transform.seed = 1235;
    CHECK_OK(run(&cfg, b, total));
    CHECK(memcmp(a, b, sizeof(uint64_t) * total) != 0);
    cfg.transform.seed = 1234;
    for (int cut = 5; cut <= 20; cut += 15) {
      gf_loader *l;
      CHECK_OK(gf_loader_create(&cfg, &l));
      for (int i = 0; i < cut; i++) {
        gf_batch *bt;
        if (gf_loader_next(l, &bt) == 0)
          gf_loader_release(l, bt);
      }
      gf_loader_state st;
      CHECK_OK(gf_loader_state_export(l, &st));
      gf_loader_destroy(l);
      cfg.threads = 3;
      CHECK_OK(gf_loader_create(&cfg, &l));
      CHECK_OK(gf_loader_state_import(l, &st));
      for (int i = cut; i < total; i++) {
        gf_batch *bt;
        int rc = gf_loader_next(l, &bt);
        uint64_t h = 0;
        if (rc == 0) {
          CHECK(bt->out_height == 12 && bt->out_width == 9 &&
                bt->out_channels == 3 && bt->output_bytes ==
                (uint64_t)bt->count * 12 * 9 * 3 * 2);
          h = out_hash(bt);
          gf_loader_release(l, bt);
        } else {
          CHECK(rc == GF_EEPOCHEND);
        }
        if (h != a[i]) {
          fprintf(stderr, "rrc resume (cut %d, %s): batch %d differs\n", cut,
                  cfg.source, i);
          gf_test_failures++;
          break;
        }
      }
      gf_loader_destroy(l);
      cfg.threads = 8;
    }
  }
  hash_output = false;

  /* The cache: once everything is cached, an epoch reads and decodes
   * nothing. */
  {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 8;
    cfg.threads = 2;
    cfg.cache_bytes = 1 << 22;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    gf_loader_stats s1 = {.struct_size = sizeof s1}, s2 = s1;
    for (int e = 0; e < 3; e++) {
      if (e == 2)
        gf_loader_stats_get(l, &s1);
      gf_batch *bt;
      int rc;
      while ((rc = gf_loader_next(l, &bt)) == 0) {
        CHECK(fixture_check_batch(&f, bt) == 0);
        gf_loader_release(l, bt);
      }
      CHECK(rc == GF_EEPOCHEND);
    }
    gf_loader_stats_get(l, &s2);
    printf("cache: epoch 3 reads %llu, decodes %llu, hits %llu\n",
           (unsigned long long)(s2.read.samples - s1.read.samples),
           (unsigned long long)(s2.decode.samples - s1.decode.samples),
           (unsigned long long)(s2.cache_hits - s1.cache_hits));
    CHECK(s2.read.samples == s1.read.samples);
    CHECK(s2.decode.samples == s1.decode.samples);
    /* Some of epoch 3's first batches were prefetched (and counted)
     * before s1 was taken. */
    CHECK(s2.cache_hits - s1.cache_hits >= f.n - 2 * cfg.batch_size);
    CHECK(s2.cache_bytes > 0 && s2.cache_bytes <= s2.cache_budget);
    /* Without a cache every epoch reads again. */
    gf_loader_destroy(l);
    cfg.cache_bytes = 0;
    CHECK_OK(gf_loader_create(&cfg, &l));
    gf_batch *bt;
    while (gf_loader_next(l, &bt) == 0)
      gf_loader_release(l, bt);
    gf_loader_stats_get(l, &s2);
    CHECK(s2.read.samples >= f.n && s2.cache_hits == 0);
    gf_loader_destroy(l);
  }
  fixture_free(&f);
  return gf_test_finish();
}
