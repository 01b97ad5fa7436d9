/* The GPU stage's staging slots pinned in the background (skips with 77
 * without a GPU; GPUFEED_REQUIRE_GPU=1 makes that a failure): create pins
 * slot 0 only, a loader thread pins the others before any worker fills
 * them.
 * - A failed background pin (injected at cuda_stage_register's call 2:
 *   slot 1) surfaces exactly once from next() as GF_ECUDA, its message
 *   naming the slot and its bytes; nothing is taken by that call, the
 *   caller holding the one usable slot gets -EBUSY (not a hang), and the
 *   loader goes on with slot 0: two epochs deliver every sample exactly
 *   once with pixels, labels and device labels right.
 * - Every slot is pinned once (the site's calls equal the slots) and a
 *   clean loader gives no error.
 * - destroy while slots are still being pinned (large slots, right after
 *   create, and after one batch) is clean: it stops the pinning thread
 *   between two slots and joins it; another loader works afterwards.
 * - The pinning thread starts only once the first batch is submitted (so
 *   that the first batch has the driver to itself): when a worker has
 *   finalised it (an internal hook on the worker's thread), only create's
 *   pin of slot 0 has reached cuda_stage_register, though 7 slots of 64
 *   MiB wait to be pinned. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "cuda_testutil.h"
#include "gpu/stage.h"
#include "pipeline/loader_impl.h"

#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>

static gf_loader_config base(const fixture *f) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f->ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 8;
  cfg.threads = 2;
  cfg.device = 0;
  cfg.prefetch = 2;
  return cfg;
}

/* Device labels read back equal the host labels. */
static int check_labels_device(const gf_batch *b) {
  if (!b->labels_device)
    return 1;
  int64_t *got = calloc(b->count, sizeof *got);
  int bad = cudaMemcpy(got, b->labels_device, b->count * sizeof *got,
                       cudaMemcpyDeviceToHost) != cudaSuccess ||
            memcmp(got, b->labels, b->count * sizeof *got) != 0;
  free(got);
  return bad;
}

/* Consumes the rest of the current epoch: counts samples into cnt, checks
 * each batch, returns the number of errors next() returned. */
static int drain_epoch(gf_loader *l, const fixture *f, uint32_t *cnt) {
  int errors = 0;
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) != GF_EEPOCHEND) {
    if (rc < 0) {
      errors++;
      fprintf(stderr, "unexpected error: %s\n", gf_last_error()->message);
      if (errors > 10)
        break;
      continue;
    }
    gf_test_failures += fixture_check_batch(f, b);
    gf_test_failures += check_labels_device(b);
    for (uint32_t j = 0; j < b->count; j++)
      cnt[b->indices[j]]++;
    gf_loader_release(l, b);
  }
  return errors;
}

/* Section 4: the pins begun when the first batch was finalised. */
static _Atomic int first_seen;
static _Atomic uint64_t pins_at_first = UINT64_MAX;
static void ready_hook(gf_loader *l, const char *event) {
  (void)l;
  if (strcmp(event, "ready") == 0 && atomic_exchange(&first_seen, 1) == 0)
    atomic_store(&pins_at_first,
                 gf_fault_calls(GF_FAULT_CUDA_STAGE_REGISTER));
}

int main(void) {
  char why[256];
  if (!gf_stage_probe(0, why, sizeof why))
    gf_test_skip(true, "%s", why);
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 40, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();

  /* 1. A clean loader pins each slot once and gives no error: holding as
   * many batches as there are slots needs every slot pinned. */
  {
    gf_loader_config cfg = base(&f);
    cfg.prefetch = 3;
    CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_STAGE_REGISTER, 0, GF_ECUDA, 0));
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      return gf_test_finish();
    uint32_t *cnt = calloc(f.n, sizeof *cnt);
    gf_batch *held[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
      CHECK_OK(gf_loader_next(l, &held[k]));
      if (!held[k])
        return gf_test_finish();
      gf_test_failures += fixture_check_batch(&f, held[k]);
      gf_test_failures += check_labels_device(held[k]);
      for (uint32_t j = 0; j < held[k]->count; j++)
        cnt[held[k]->indices[j]]++;
    }
    /* Each slot pinned exactly once, by create or by the pinning thread. */
    CHECK(gf_fault_calls(GF_FAULT_CUDA_STAGE_REGISTER) == 3);
    for (int k = 0; k < 3; k++)
      CHECK_OK(gf_loader_release(l, held[k]));
    CHECK(drain_epoch(l, &f, cnt) == 0);
    for (uint64_t i = 0; i < f.n; i++)
      CHECK(cnt[i] == 1);
    free(cnt);
    gf_fault_disarm_all();
    gf_loader_destroy(l);
  }

  /* 2. Slot 1's pin fails: one error, with context; nothing lost. */
  {
    gf_loader_config cfg = base(&f);
    CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_STAGE_REGISTER, 2, GF_ECUDA, 0));
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      return gf_test_finish();
    uint32_t *cnt = calloc(f.n, sizeof *cnt);
    int errors = 0;
    gf_batch *b0 = NULL, *b1 = NULL;
    /* The error comes first if the pin failed before this call; else the
     * next batch needs slot 1, so the call after batch 0 waits for the pin
     * and must return its failure. */
    for (int k = 0; k < 2 && !b0; k++) {
      int rc = gf_loader_next(l, &b0);
      if (rc < 0) {
        errors++;
        CHECK(rc == GF_ECUDA);
        CHECK(b0 == NULL);
        const gf_error_info *e = gf_last_error();
        printf("the failed pin, from next(): %s\n", e->message);
        CHECK(e->code == GF_ECUDA);
        CHECK(strstr(e->message, "staging slot 1 of 2") != NULL);
        CHECK(strstr(e->message, "bytes") != NULL);
        CHECK(strstr(e->message, "goes on with 1 of its 2") != NULL);
      } else {
        CHECK(rc == 0);
      }
    }
    CHECK(b0 != NULL);
    if (errors == 0) {
      int rc = gf_loader_next(l, &b1);
      CHECK(rc == GF_ECUDA);
      errors += rc == GF_ECUDA;
      CHECK(strstr(gf_last_error()->message, "staging slot 1 of 2") != NULL);
    }
    CHECK(errors == 1);
    /* The one usable slot is held: busy, not a wait that never ends. */
    CHECK_ERR(gf_loader_next(l, &b1), -EBUSY);
    if (b0) {
      gf_test_failures += fixture_check_batch(&f, b0);
      gf_test_failures += check_labels_device(b0);
      for (uint32_t j = 0; j < b0->count; j++)
        cnt[b0->indices[j]]++;
      CHECK_OK(gf_loader_release(l, b0));
    }
    /* The rest of epoch 0 and all of epoch 1, through slot 0 alone. */
    CHECK(drain_epoch(l, &f, cnt) == 0);
    for (uint64_t i = 0; i < f.n; i++)
      CHECK(cnt[i] == 1);
    memset(cnt, 0, f.n * sizeof *cnt);
    CHECK(drain_epoch(l, &f, cnt) == 0);
    for (uint64_t i = 0; i < f.n; i++)
      CHECK(cnt[i] == 1);
    CHECK(gf_fault_fired(GF_FAULT_CUDA_STAGE_REGISTER) == 1);
    free(cnt);
    gf_fault_disarm_all();
    gf_loader_destroy(l);
  }

  /* 2b. Slot 0's pin fails: create fails with the error recorded. */
  {
    gf_loader_config cfg = base(&f);
    CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_STAGE_REGISTER, 1, GF_EDEVOOM, 0));
    gf_loader *l = NULL;
    CHECK_ERR(gf_loader_create(&cfg, &l), GF_EDEVOOM);
    CHECK(l == NULL);
    CHECK(strstr(gf_last_error()->message, "staging slot 0 of 2") != NULL);
    gf_fault_disarm_all();
  }

  /* 3. destroy while slots are being pinned: 8 slots of 64 MiB, most
   * still unpinned when destroy comes. */
  {
    gf_loader_config cfg = base(&f);
    cfg.batch_size = 16;
    cfg.max_sample_bytes = 4u << 20;
    cfg.prefetch = 8;
    for (int round = 0; round < 3; round++) {
      CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_STAGE_REGISTER, 0, GF_ECUDA, 0));
      gf_loader *l;
      CHECK_OK(gf_loader_create(&cfg, &l));
      if (!l)
        break;
      if (round == 2) {
        gf_batch *b;
        CHECK_OK(gf_loader_next(l, &b));
        if (b)
          gf_test_failures += check_labels_device(b);
      }
      gf_loader_destroy(l);
      printf("destroy %s: %llu of 8 slots had been pinned\n",
             round == 2 ? "after one batch" : "right after create",
             (unsigned long long)gf_fault_calls(GF_FAULT_CUDA_STAGE_REGISTER));
      gf_fault_disarm_all();
    }
    /* The device and the pinning still work. */
    gf_loader_config c2 = base(&f);
    gf_loader *l;
    CHECK_OK(gf_loader_create(&c2, &l));
    if (l) {
      uint32_t *cnt = calloc(f.n, sizeof *cnt);
      CHECK(drain_epoch(l, &f, cnt) == 0);
      for (uint64_t i = 0; i < f.n; i++)
        CHECK(cnt[i] == 1);
      free(cnt);
      gf_loader_destroy(l);
    }
  }

  /* 4. No background pin before the first batch is submitted. */
  {
    gf_loader_config cfg = base(&f);
    cfg.batch_size = 16;
    cfg.max_sample_bytes = 4u << 20;
    cfg.prefetch = 8;
    CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_STAGE_REGISTER, 0, GF_ECUDA, 0));
    atomic_store(&first_seen, 0);
    gf_loader__event_hook = ready_hook;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (l) {
      gf_batch *b;
      CHECK_OK(gf_loader_next(l, &b));
      uint64_t at_next = gf_fault_calls(GF_FAULT_CUDA_STAGE_REGISTER);
      if (b) {
        gf_test_failures += fixture_check_batch(&f, b);
        gf_test_failures += check_labels_device(b);
      }
      printf("slots whose pin had begun: %llu when the first batch was "
             "submitted, %llu when next() returned it\n",
             (unsigned long long)atomic_load(&pins_at_first),
             (unsigned long long)at_next);
      CHECK(atomic_load(&first_seen) == 1);
      CHECK(atomic_load(&pins_at_first) == 1);
      gf_loader_destroy(l);
    }
    gf_loader__event_hook = NULL;
    gf_fault_disarm_all();
  }
  fixture_free(&f);
  return gf_test_finish();
}
