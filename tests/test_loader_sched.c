/* The workers' scheduling policy (gf_loader_config.worker_sched): by
 * default each worker runs under SCHED_BATCH, so that a waking thread of
 * the caller (the consumer, a training loop) preempts a decoding worker at
 * once; GF_WORKER_SCHED_NORMAL leaves them SCHED_OTHER; any other value
 * fails create with -EINVAL naming the field. GPUFEED_WORKER_SCHED, which
 * set it for the whole process before the field existed, is not read any
 * more: set to the other policy, it changes nothing. Each case loads an
 * epoch, every sample exactly once with its pixels. The policy is read on
 * each worker's own thread (the internal "read buffer" hook, after the
 * policy is set). */
#include "loader_fixture.h"

#include "pipeline/loader_impl.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 3

static _Atomic int workers, batch;

static void hook(gf_loader *l, const char *event) {
  (void)l;
  if (strcmp(event, "read buffer") != 0)
    return;
  atomic_fetch_add(&workers, 1);
  if (sched_getscheduler(0) == SCHED_BATCH)
    atomic_fetch_add(&batch, 1);
}

static void epoch(const fixture *f, gf_loader *l) {
  uint32_t *cnt = calloc(f->n, sizeof *cnt);
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) == 0) {
    gf_test_failures += fixture_check_batch(f, b);
    for (uint32_t j = 0; j < b->count; j++)
      cnt[b->indices[j]]++;
    CHECK_OK(gf_loader_release(l, b));
  }
  CHECK(rc == GF_EEPOCHEND);
  for (uint64_t i = 0; i < f->n; i++)
    CHECK(cnt[i] == 1);
  free(cnt);
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 30, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  gf_loader__event_hook = hook;
  static const struct {
    uint32_t sched;  /* cfg.worker_sched */
    const char *env; /* GPUFEED_WORKER_SCHED (ignored); NULL: unset */
    int want_batch;  /* workers under SCHED_BATCH; -1: create fails */
  } cases[] = {{GF_WORKER_SCHED_BATCH, NULL, THREADS},
               {GF_WORKER_SCHED_NORMAL, NULL, 0},
               {GF_WORKER_SCHED_BATCH, "normal", THREADS},
               {GF_WORKER_SCHED_NORMAL, "batch", 0},
               {2, NULL, -1},
               {UINT32_MAX, NULL, -1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    if (cases[c].env)
      setenv("GPUFEED_WORKER_SCHED", cases[c].env, 1);
    else
      unsetenv("GPUFEED_WORKER_SCHED");
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.batch_size = 4;
    cfg.threads = THREADS;
    cfg.channels = 3;
    cfg.device = GF_DEVICE_CPU;
    cfg.worker_sched = cases[c].sched;
    atomic_store(&workers, 0);
    atomic_store(&batch, 0);
    gf_loader *l = NULL;
    int rc = gf_loader_create(&cfg, &l);
    if (cases[c].want_batch < 0) {
      CHECK_ERR(rc, -EINVAL);
      CHECK(strstr(gf_last_error()->message, "worker_sched") != NULL);
      printf("worker_sched %u: refused: %s\n", (unsigned)cases[c].sched,
             gf_last_error()->message);
      gf_loader_destroy(l);
      continue;
    }
    CHECK_OK(rc);
    if (!l)
      continue;
    epoch(&f, l);
    gf_loader_destroy(l); /* joins the workers: every one has reported */
    printf("worker_sched %u, GPUFEED_WORKER_SCHED=%s: %d of %d workers "
           "SCHED_BATCH\n",
           (unsigned)cases[c].sched, cases[c].env ? cases[c].env : "(unset)",
           atomic_load(&batch), atomic_load(&workers));
    CHECK(atomic_load(&workers) == THREADS);
    CHECK(atomic_load(&batch) == cases[c].want_batch);
  }
  unsetenv("GPUFEED_WORKER_SCHED");
  fixture_free(&f);
  return gf_test_finish();
}
