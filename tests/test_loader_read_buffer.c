/* The workers' read buffers: create only reserves them; each worker makes
 * its buffer's pages and registers it with its reader on its own thread,
 * before its first read (so that create does not do it for every worker,
 * one after another). An internal hook on the worker's thread says when.
 * - Each worker readies its buffer exactly once, never on the thread that
 *   called create; with io_uring, one registration per worker.
 * - A kernel refusing every registration (injected: uring_register, sticky
 *   EPERM) costs only the fixed buffers: two epochs deliver every sample
 *   exactly once, with pixels and labels right. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "pipeline/loader_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4

static pthread_t creator;
static _Atomic int readied, on_creator;

static void hook(gf_loader *l, const char *event) {
  (void)l;
  if (strcmp(event, "read buffer") != 0)
    return;
  atomic_fetch_add(&readied, 1);
  if (pthread_equal(pthread_self(), creator))
    atomic_fetch_add(&on_creator, 1);
}

/* Two epochs; every sample exactly once in each, checked. */
static void load(const fixture *f, gf_loader *l) {
  uint32_t *cnt = calloc(f->n, sizeof *cnt);
  for (int epoch = 0; epoch < 2; epoch++) {
    memset(cnt, 0, f->n * sizeof *cnt);
    gf_batch *b;
    int rc, errors = 0;
    while ((rc = gf_loader_next(l, &b)) != GF_EEPOCHEND) {
      if (rc < 0) {
        fprintf(stderr, "next: %s\n", gf_last_error()->message);
        if (++errors > 5)
          break;
        continue;
      }
      gf_test_failures += fixture_check_batch(f, b);
      for (uint32_t j = 0; j < b->count; j++)
        cnt[b->indices[j]]++;
      CHECK_OK(gf_loader_release(l, b));
    }
    CHECK(errors == 0);
    for (uint64_t i = 0; i < f->n; i++)
      CHECK(cnt[i] == 1);
  }
  free(cnt);
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 60, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  creator = pthread_self();
  gf_loader__event_hook = hook;
  for (int refuse = 0; refuse < 2; refuse++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.batch_size = 8;
    cfg.threads = THREADS;
    cfg.channels = 3;
    cfg.device = GF_DEVICE_CPU;
    atomic_store(&readied, 0);
    atomic_store(&on_creator, 0);
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_REGISTER, refuse ? 1 : 0, -EPERM,
                          refuse ? GF_FAULT_STICKY : 0));
    gf_loader *l = NULL;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      break;
    load(&f, l);
    gf_loader_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(gf_loader_stats_get(l, &st));
    bool uring = strcmp(st.io_backend, "io_uring") == 0;
    gf_loader_destroy(l); /* joins the workers: every one has readied */
    printf("%s: %d read buffers readied (%d on create's thread), %llu "
           "registrations, %llu refused (io %s)\n",
           refuse ? "registration refused" : "clean", atomic_load(&readied),
           atomic_load(&on_creator),
           (unsigned long long)gf_fault_calls(GF_FAULT_URING_REGISTER),
           (unsigned long long)gf_fault_fired(GF_FAULT_URING_REGISTER),
           st.io_backend);
    CHECK(atomic_load(&readied) == THREADS);
    CHECK(atomic_load(&on_creator) == 0);
    if (uring) {
      CHECK(gf_fault_calls(GF_FAULT_URING_REGISTER) == THREADS);
      CHECK(gf_fault_fired(GF_FAULT_URING_REGISTER) ==
            (refuse ? THREADS : 0));
    }
    gf_fault_disarm_all();
  }
  gf_loader__event_hook = NULL;
  fixture_free(&f);
  return gf_test_finish();
}
