/* A read error of the whole reader (issue 33, item 4): a worker's
 * gf_reader_wait failing as a whole (fault site reader_wait, as when the
 * io_uring ring itself errs), not one read of it.
 * - The reader alone, both backends: the call fails with its context, the
 *   reads stay outstanding, destroy waits for them.
 * - The loader, on a dataset and on a PNG folder (whose samples the
 *   workers open one by one), io_uring and the pread pool, 1 and 3
 *   threads: under the fail policy next() returns the error once, naming a
 *   file and a sample of the source, never 0 without a batch; under the
 *   skip policy every sample arrives exactly once with its pixels (the
 *   chunk's samples were not bad: they are read again, not skipped); the
 *   worker replaces its reader (a test hook counts it) and the next epoch,
 *   the fault disarmed, is exactly once; no descriptor is left open.
 * - A fresh reader that cannot be made (io_uring forced, its setup refused
 *   with EPERM from then on): each chunk of that worker fails with that
 *   error, which the policies handle as above; once setup works again the
 *   worker gets its reader back. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "io/io.h"
#include "pipeline/loader_impl.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 8
#define RUN_ALARM_S 120

static _Atomic int replaced, refused;

static void hook(gf_loader *l, const char *event) {
  (void)l;
  if (strcmp(event, "reader replaced") == 0)
    atomic_fetch_add(&replaced, 1);
  else if (strcmp(event, "reader refused") == 0)
    atomic_fetch_add(&refused, 1);
}

static char current[256];

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "HANG: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  w = write(2, current, strlen(current));
  w = write(2, "\n", 1);
  (void)w;
  _exit(1);
}

static int fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1; /* the listing's own descriptor */
}

/* The reader alone: a wait failing as a whole leaves its reads out, and
 * destroy waits for them. */
static void reader_alone(const char *file, int backend) {
  int fd0 = fd_count();
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = backend;
  gf_reader *r;
  if (gf_reader_create(&o, &r) < 0) {
    printf("reader: %s unavailable here: %s\n",
           backend == GF_IO_URING ? "io_uring" : "pread",
           gf_last_error()->message);
    return;
  }
  gf_object *obj = NULL;
  CHECK_OK(gf_object_open_path(file, 0, &obj));
  static uint8_t buf[4][64];
  gf_read_req q[4];
  for (unsigned i = 0; i < 4; i++)
    q[i] = (gf_read_req){.obj = obj,
                         .offset = 0,
                         .length = sizeof buf[i],
                         .buf = buf[i],
                         .user_data = i};
  CHECK_OK(gf_reader_submit(r, q, 4));
  CHECK_OK(gf_fault_arm(GF_FAULT_READER_WAIT, 1, -EIO, 0));
  gf_read_done d[4];
  CHECK_ERR(gf_reader_wait(r, d, 4, 1), -EIO);
  CHECK(gf_last_error()->code == -EIO);
  CHECK(strstr(gf_last_error()->message, "completions") != NULL);
  printf("reader (%s): %s\n", gf_reader_backend(r), gf_last_error()->message);
  CHECK(gf_reader_inflight(r) == 4);
  CHECK(gf_fault_fired(GF_FAULT_READER_WAIT) == 1);
  gf_fault_disarm_all();
  gf_reader_destroy(r);
  gf_object_close(obj);
  CHECK(fd_count() == fd0);
}

typedef struct kase {
  const char *what; /* "dataset" or "folder" */
  const char *source;
  int backend; /* GF_IO_URING or GF_IO_PREAD */
  int policy;
  uint32_t threads;
  bool no_renew; /* io_uring setup refused after create */
} kase;

/* One epoch; counts deliveries per sample into cnt, returns next()'s
 * errors, each checked. */
static int epoch(const fixture *f, const kase *k, gf_loader *l, uint32_t *cnt,
                 int e_no) {
  memset(cnt, 0, f->n * sizeof *cnt);
  int errors = 0, rc;
  gf_batch *b;
  while ((rc = gf_loader_next(l, &b)) != GF_EEPOCHEND) {
    if (rc < 0) {
      const gf_error_info *e = gf_last_error();
      printf("  %s: epoch %d: (expected) %s: %s\n", current, e_no,
             gf_err_name(rc), e->message);
      CHECK(e->code == rc);
      CHECK(rc == -EIO || (k->no_renew && rc == -EPERM));
      /* The file of a sample of the failed batch: the shard (dataset)
       * or the image (folder), under the source. */
      CHECK(strncmp(e->path, k->source, strlen(k->source)) == 0);
      CHECK(e->sample < f->n);
      CHECK(strstr(e->message, gf_strerror(rc)) != NULL);
      if (++errors > 100)
        break;
      continue;
    }
    CHECK(rc == 0 && b != NULL);
    if (rc != 0 || !b) {
      fprintf(stderr, "%s: next returned %d and batch %p\n", current, rc,
              (void *)b);
      if (++errors > 100)
        break;
      continue;
    }
    int mism = fixture_check_batch(f, b);
    CHECK(mism == 0);
    for (uint32_t j = 0; j < b->count; j++)
      if (b->indices[j] < f->n)
        cnt[b->indices[j]]++;
    CHECK_OK(gf_loader_release(l, b));
  }
  return errors;
}

/* Returns false when the backend is not available here. */
static bool run(const fixture *f, const kase *k) {
  snprintf(current, sizeof current, "%s, %s, %s policy, %u thread(s)%s",
           k->what, k->backend == GF_IO_URING ? "io_uring" : "pread",
           k->policy == GF_ON_ERROR_SKIP ? "skip" : "fail", k->threads,
           k->no_renew ? ", no fresh reader" : "");
  alarm(RUN_ALARM_S);
  int fd0 = fd_count();
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = k->source;
  cfg.channels = 3;
  cfg.batch_size = BATCH;
  cfg.threads = k->threads;
  cfg.error_policy = (uint32_t)k->policy;
  cfg.io_backend = (uint32_t)k->backend;
  cfg.device = GF_DEVICE_CPU;
  atomic_store(&replaced, 0);
  atomic_store(&refused, 0);
  /* The third wait of the load fails: a chunk of the first batches. */
  CHECK_OK(gf_fault_arm(GF_FAULT_READER_WAIT, 3, -EIO, 0));
  /* Create makes one ring a worker; only a fresh one meets the refusal.
   * Armed before create: the workers read (and may meet the ring error)
   * before create returns. */
  if (k->no_renew)
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, k->threads + 1, -EPERM,
                          GF_FAULT_STICKY));
  gf_loader *l = NULL;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0 && k->backend == GF_IO_URING) {
    printf("%s: io_uring unavailable here: %s\n", current,
           gf_last_error()->message);
    gf_fault_disarm_all();
    alarm(0);
    return false;
  }
  CHECK_OK(rc);
  if (!l)
    return true;
  uint32_t *cnt = calloc(f->n, sizeof *cnt);

  int errors = epoch(f, k, l, cnt, 0);
  CHECK(gf_fault_fired(GF_FAULT_READER_WAIT) == 1);
  uint64_t delivered = 0;
  for (uint64_t i = 0; i < f->n; i++) {
    delivered += cnt[i];
    CHECK(cnt[i] <= 1);
  }
  if (k->policy == GF_ON_ERROR_SKIP) {
    CHECK(errors == 0);
    for (uint64_t i = 0; i < f->n; i++)
      if (cnt[i] != 1)
        fprintf(stderr, "%s: sample %llu delivered %u times\n", current,
                (unsigned long long)i, cnt[i]);
    CHECK(delivered == f->n);
  } else {
    /* One batch for the failed chunk; more when no reader can be made
     * (each chunk of that worker fails). */
    CHECK(errors >= 1);
    if (!k->no_renew)
      CHECK(errors == 1);
    CHECK(delivered >= f->n - (uint64_t)errors * BATCH);
  }
  if (k->no_renew)
    CHECK(atomic_load(&refused) >= 1);
  gf_loader_stats st;
  st.struct_size = sizeof st;
  CHECK_OK(gf_loader_stats_get(l, &st));
  /* The chunk's samples were read again, not skipped. */
  CHECK(st.skipped == 0);

  /* The fault gone: the next epoch exactly once, on a working reader.
   * Without a fresh reader, batches of epoch 1 loaded ahead before the
   * disarm fail too (fail policy), so epoch 2 is the clean one then. */
  gf_fault_disarm_all();
  int last = k->no_renew ? 2 : 1;
  for (int e = 1; e <= last; e++) {
    errors = epoch(f, k, l, cnt, e);
    if (e < last && k->policy == GF_ON_ERROR_FAIL)
      continue;
    CHECK(errors == 0);
    for (uint64_t i = 0; i < f->n; i++)
      CHECK(cnt[i] == 1);
  }
  /* The worker that met the error made a fresh reader before its next
   * chunk; with one worker that chunk surely came. */
  int rep = atomic_load(&replaced);
  if (k->threads == 1)
    CHECK(rep == 1);
  else
    CHECK(rep <= 1);
  printf("%s: ok (replaced %d, refused %d)\n", current, rep,
         atomic_load(&refused));
  gf_loader_destroy(l);
  free(cnt);
  CHECK(fd_count() == fd0);
  alarm(0);
  return true;
}

int main(void) {
  signal(SIGALRM, on_alarm);
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 60, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  gf_loader__event_hook = hook;

  char file[4200];
  snprintf(file, sizeof file, "%s/index.gfi", f.ds_dir);
  reader_alone(file, GF_IO_URING);
  reader_alone(file, GF_IO_PREAD);

  const struct {
    const char *what, *source;
  } sources[] = {{"dataset", f.ds_dir}, {"folder", f.png_dir}};
  bool uring = true;
  for (size_t s = 0; s < 2; s++)
    for (int backend = GF_IO_URING; backend <= GF_IO_PREAD; backend++)
      for (int policy = GF_ON_ERROR_FAIL; policy <= GF_ON_ERROR_SKIP; policy++)
        for (uint32_t threads = 1; threads <= 3; threads += 2) {
          if (backend == GF_IO_URING && !uring)
            continue;
          kase k = {sources[s].what, sources[s].source, backend,
                    policy,          threads,           false};
          if (!run(&f, &k))
            uring = false;
        }
  /* No fresh reader to be had until the fault is disarmed. */
  for (size_t s = 0; s < 2 && uring; s++)
    for (int policy = GF_ON_ERROR_FAIL; policy <= GF_ON_ERROR_SKIP; policy++) {
      kase k = {
          sources[s].what, sources[s].source, GF_IO_URING, policy, 1, true};
      run(&f, &k);
    }
  fixture_free(&f);
  return gf_test_finish();
}
