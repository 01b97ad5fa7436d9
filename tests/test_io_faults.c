/* The reader under injected faults: a refused io_uring setup falls back to
 * pread with the reason, and an error, a short count, -EAGAIN or -EINTR at
 * every single completion of a 100-read run gives the right data or the
 * right error for that read alone (io_uring: the uring_cqe site; pread:
 * the pread site). */
#include "common/fault.h"
#include "io/io.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE ((size_t)1 << 20)
#define READS 100
#define MAX_LEN 20000

static uint8_t *file_data;
static gf_object *file_obj;

static void make_file(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/data.bin", dir);
  file_data = malloc(FILE_SIZE);
  uint64_t seed = 9;
  for (size_t i = 0; i < FILE_SIZE; i++)
    file_data[i] = (uint8_t)gf_test_rand(&seed);
  if (gf_test_write_file(path, file_data, FILE_SIZE) != 0 ||
      gf_object_open_path(path, 0, &file_obj) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static void check_setup_fallback(void) {
  static const int errs[] = {-EPERM, -ENOSYS, -ENOMEM, -EINVAL};
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    int err = errs[i];
    const char *name = gf_err_name(err);
    unsetenv("GPUFEED_IO");

    /* Auto: falls back to pread and says why, naming the errno. */
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, 1, err, 0));
    gf_reader *r = NULL;
    CHECK_OK(gf_reader_create(NULL, &r));
    CHECK(gf_fault_fired(GF_FAULT_URING_SETUP) == 1);
    if (!r)
      continue;
    const char *why = gf_reader_fallback_reason(r);
    fprintf(stderr, "fallback reason: %s\n", why);
    CHECK(strcmp(gf_reader_backend(r), "pread") == 0);
    CHECK(strstr(why, "io_uring_queue_init") != NULL);
    CHECK(strstr(why, name) != NULL);
    CHECK(strstr(why, "using pread") != NULL);
    if (err == -EPERM)
      CHECK(strstr(why, "seccomp") != NULL &&
            strstr(why, "kernel.io_uring_disabled") != NULL);
    if (err == -ENOMEM)
      CHECK(strstr(why, "RLIMIT_MEMLOCK") != NULL);
    /* ... and reads work. */
    uint8_t buf[3000];
    gf_read_req q = {file_obj, 0, 4321, sizeof buf, buf, 5};
    CHECK_OK(gf_reader_submit(r, &q, 1));
    gf_read_done d;
    CHECK(gf_reader_wait(r, &d, 1, 1) == 1);
    CHECK(d.result == (int64_t)sizeof buf);
    CHECK(memcmp(buf, file_data + 4321, sizeof buf) == 0);
    gf_reader_destroy(r);

    /* Forced through the options: create fails with the error and why. */
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, 1, err, 0));
    gf_reader_opts o = GF_READER_OPTS_INIT;
    o.backend = GF_IO_URING;
    r = NULL;
    CHECK_ERR(gf_reader_create(&o, &r), err);
    CHECK(r == NULL);
    CHECK(strstr(gf_last_error()->message, name) != NULL);
    CHECK(strstr(gf_last_error()->message, "no pread fallback") != NULL);

    /* Forced through GPUFEED_IO: the same. */
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, 1, err, 0));
    setenv("GPUFEED_IO", "uring", 1);
    CHECK_ERR(gf_reader_create(NULL, &r), err);
    CHECK(strstr(gf_last_error()->message, "GPUFEED_IO=uring") != NULL);
    unsetenv("GPUFEED_IO");

    /* GPUFEED_IO=pread never tries io_uring. */
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_SETUP, 0, 0, 0));
    setenv("GPUFEED_IO", "pread", 1);
    CHECK_OK(gf_reader_create(NULL, &r));
    unsetenv("GPUFEED_IO");
    CHECK(gf_fault_calls(GF_FAULT_URING_SETUP) == 0);
    CHECK(r && strcmp(gf_reader_fallback_reason(r), "") == 0);
    gf_reader_destroy(r);
  }
  gf_fault_disarm_all();
}

typedef struct run {
  gf_read_req req[READS];
  int64_t res[READS];
  bool data_ok[READS];
  int completions;
} run;

static uint8_t *arena;

/* 100 reads of the same random extents every time, submitted 25 at a
 * time, all reaped; records each result and whether its bytes match. */
static void run_reads(gf_reader *r, run *out) {
  uint64_t seed = 1234;
  memset(arena, 0, (size_t)READS * MAX_LEN);
  for (unsigned i = 0; i < READS; i++) {
    uint64_t len = 2 + gf_test_rand(&seed) % (MAX_LEN - 1);
    uint64_t off = gf_test_rand(&seed) % (FILE_SIZE - len + 1);
    out->req[i] =
        (gf_read_req){file_obj, 0, off, len, arena + (size_t)i * MAX_LEN, i};
    out->res[i] = 1; /* not seen */
  }
  out->completions = 0;
  for (unsigned i = 0; i < READS; i += 25)
    CHECK_OK(gf_reader_submit(r, &out->req[i], 25));
  gf_read_done d[READS];
  while (gf_reader_inflight(r)) {
    int n = gf_reader_wait(r, d, READS, 1);
    CHECK(n >= 1);
    if (n < 1)
      break;
    for (int i = 0; i < n; i++) {
      uint64_t id = d[i].user_data;
      CHECK(id < READS && out->res[id] == 1);
      if (id >= READS)
        continue;
      out->res[id] = d[i].result;
      out->completions++;
    }
  }
  for (unsigned i = 0; i < READS; i++)
    out->data_ok[i] = out->res[i] == (int64_t)out->req[i].length &&
                      memcmp(out->req[i].buf, file_data + out->req[i].offset,
                             out->req[i].length) == 0;
}

static int count_ok(const run *x) {
  int ok = 0;
  for (unsigned i = 0; i < READS; i++)
    ok += x->data_ok[i];
  return ok;
}

static void sweep(gf_reader *r, gf_fault_site site) {
  static run x;
  gf_reader_stats before, after;

  /* How many times the site is reached in one clean run. */
  CHECK_OK(gf_fault_arm(site, 0, 0, 0));
  run_reads(r, &x);
  CHECK(count_ok(&x) == READS);
  uint64_t calls = gf_fault_calls(site);
  CHECK(calls == READS);
  fprintf(stderr, "%s: %llu calls at site %s in a clean run\n",
          gf_reader_backend(r), (unsigned long long)calls,
          gf_fault_site_name(site));

  static const struct {
    int err;
    unsigned flags;
    const char *name;
  } kinds[] = {{-EIO, 0, "EIO"},
               {0, GF_FAULT_SHORT, "short"},
               {-EAGAIN, 0, "EAGAIN"},
               {-EINTR, 0, "EINTR"}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    int bad = 0;
    for (uint64_t n = 1; n <= calls; n++) {
      int f0 = gf_test_failures;
      gf_reader_get_stats(r, &before);
      CHECK_OK(gf_fault_arm(site, n, kinds[k].err, kinds[k].flags));
      run_reads(r, &x);
      gf_reader_get_stats(r, &after);
      CHECK(gf_fault_fired(site) == 1);
      CHECK(x.completions == READS);
      if (kinds[k].err == -EIO) {
        /* That read alone fails, with EIO; the others are intact. */
        int eio = 0;
        for (unsigned i = 0; i < READS; i++)
          eio += x.res[i] == -EIO;
        CHECK(eio == 1);
        CHECK(count_ok(&x) == READS - 1);
        CHECK(after.failed - before.failed == 1);
      } else {
        CHECK(count_ok(&x) == READS);
        CHECK(after.failed == before.failed);
        if (kinds[k].flags & GF_FAULT_SHORT)
          CHECK(after.continued - before.continued == 1);
        else
          CHECK(after.retried - before.retried == 1);
      }
      if (gf_test_failures != f0 && ++bad < 4)
        fprintf(stderr, "  ... with %s at call %llu\n", kinds[k].name,
                (unsigned long long)n);
    }
  }

  /* Every completion keeps failing with EAGAIN: each read gives up after
   * GF_IO_MAX_RETRIES retries with -EAGAIN instead of spinning. */
  gf_reader_get_stats(r, &before);
  CHECK_OK(gf_fault_arm(site, 1, -EAGAIN, GF_FAULT_STICKY));
  run_reads(r, &x);
  gf_reader_get_stats(r, &after);
  for (unsigned i = 0; i < READS; i++)
    CHECK(x.res[i] == -EAGAIN);
  CHECK(after.retried - before.retried == (uint64_t)READS * GF_IO_MAX_RETRIES);
  CHECK(gf_fault_calls(site) == (uint64_t)READS * (GF_IO_MAX_RETRIES + 1));

  /* Every count halved: reads still complete, continued many times. */
  gf_reader_get_stats(r, &before);
  CHECK_OK(gf_fault_arm(site, 1, 0, GF_FAULT_SHORT | GF_FAULT_STICKY));
  run_reads(r, &x);
  gf_reader_get_stats(r, &after);
  CHECK(count_ok(&x) == READS);
  CHECK(after.continued - before.continued > READS * 5);

  /* Real errors are not retried: every read fails once, with its error. */
  CHECK_OK(gf_fault_parse(site == GF_FAULT_URING_CQE ? "uring_cqe:1:EIO:sticky"
                                                     : "pread:1:EIO:sticky"));
  run_reads(r, &x);
  for (unsigned i = 0; i < READS; i++)
    CHECK(x.res[i] == -EIO);
  CHECK(gf_fault_calls(site) == READS);
  gf_fault_disarm_all();
}

/* Run with GPUFEED_FAULT=uring_setup:1:EPERM:sticky and GPUFEED_LOG=info
 * in the environment (the test_io_env_fault entry of io.cmake): every auto
 * reader falls back without any arming in code, and the fallback is
 * logged once for the process, not once per reader. */
static int env_mode(void) {
  const char *spec = getenv("GPUFEED_FAULT");
  if (!spec || !strstr(spec, "uring_setup")) {
    fprintf(stderr,
            "env mode needs GPUFEED_FAULT=uring_setup:1:EPERM:sticky\n");
    return 1;
  }
  char log_path[4200];
  snprintf(log_path, sizeof log_path, "%s/stderr.txt", gf_test_tmpdir());
  fflush(stderr);
  int saved = dup(2);
  int lfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || lfd < 0 || dup2(lfd, 2) < 0)
    return 1;
  close(lfd);
  gf_reader *r[3] = {NULL, NULL, NULL};
  int rc[3];
  for (int i = 0; i < 3; i++)
    rc[i] = gf_reader_create(NULL, &r[i]);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  for (int i = 0; i < 3; i++) {
    CHECK_OK(rc[i]);
    CHECK(r[i] && strcmp(gf_reader_backend(r[i]), "pread") == 0);
    CHECK(r[i] && strstr(gf_reader_fallback_reason(r[i]), "EPERM") != NULL);
    gf_reader_destroy(r[i]);
  }
  CHECK(gf_fault_fired(GF_FAULT_URING_SETUP) == 3);
  size_t n = 0;
  char *log = gf_test_read_file(log_path, &n);
  CHECK(log != NULL);
  if (log) {
    log = realloc(log, n + 1);
    log[n] = '\0';
    fprintf(stderr, "captured log:\n%s", log);
    int lines = 0;
    for (const char *p = log; (p = strstr(p, "using pread")); p++)
      lines++;
    CHECK(lines == 1);
    CHECK(strstr(log, "gpufeed info: io_uring_queue_init: Operation not "
                      "permitted (EPERM)") != NULL);
    free(log);
  }
  return gf_test_finish();
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "env") == 0)
    return env_mode();
  make_file(gf_test_tmpdir());
  arena = malloc((size_t)READS * MAX_LEN);
  unsetenv("GPUFEED_IO");

  check_setup_fallback();

  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.queue_depth = 16;
  o.max_pending = 128;

  o.backend = GF_IO_URING;
  gf_reader *r = NULL;
  int rc = gf_reader_create(&o, &r);
  if (rc == 0) {
    /* io_uring never calls pread. */
    CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 0, 0, 0));
    sweep(r, GF_FAULT_URING_CQE);
    CHECK(gf_fault_calls(GF_FAULT_PREAD) == 0);
    gf_reader_destroy(r);
  } else {
    fprintf(stderr, "io_uring unavailable (%s): its sweep is skipped\n",
            gf_last_error()->message);
  }
  gf_fault_disarm_all();

  o.backend = GF_IO_PREAD;
  o.pread_threads = 3;
  r = NULL;
  CHECK_OK(gf_reader_create(&o, &r));
  if (r) {
    CHECK_OK(gf_fault_arm(GF_FAULT_URING_CQE, 0, 0, 0));
    sweep(r, GF_FAULT_PREAD);
    CHECK(gf_fault_calls(GF_FAULT_URING_CQE) == 0);
    gf_reader_destroy(r);
  }
  free(arena);
  free(file_data);
  gf_object_close(file_obj);
  return gf_test_finish();
}
