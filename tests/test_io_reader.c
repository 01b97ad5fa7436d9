/* The reader, the same checks on both backends (forced through the options
 * and through GPUFEED_IO): random reads verified against the file, more
 * reads than the queue depth, end of file, bad file descriptors, argument
 * checks, and readers on several threads at once. */
#include "io/io.h"
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE ((size_t)(3u << 20) + 123)

typedef struct file_fixture {
  char path[4200];
  uint8_t *data;
  size_t size;
  gf_object *obj;
} file_fixture;

static file_fixture F;

static void make_file(const char *dir) {
  snprintf(F.path, sizeof F.path, "%s/data.bin", dir);
  F.size = FILE_SIZE;
  F.data = malloc(F.size);
  uint64_t seed = 42;
  for (size_t i = 0; i < F.size; i += 8) {
    uint64_t v = gf_test_rand(&seed);
    memcpy(F.data + i, &v, F.size - i < 8 ? F.size - i : 8);
  }
  if (gf_test_write_file(F.path, F.data, F.size) != 0) {
    fprintf(stderr, "cannot write %s\n", F.path);
    exit(1);
  }
  if (gf_object_open_path(F.path, 0, &F.obj) != 0) {
    fprintf(stderr, "%s\n", gf_last_error()->message);
    exit(1);
  }
}

typedef struct mode {
  const char *name;
  int backend;
  const char *env; /* GPUFEED_IO, or NULL to unset it */
  const char *want;
} mode;

static const mode MODES[] = {
    {"options: io_uring", GF_IO_URING, NULL, "io_uring"},
    {"options: pread", GF_IO_PREAD, NULL, "pread"},
    {"GPUFEED_IO=uring", GF_IO_AUTO, "uring", "io_uring"},
    {"GPUFEED_IO=pread", GF_IO_AUTO, "pread", "pread"},
};

static bool uring_missing;

/* Creates a reader for mode m; returns NULL (after saying why) when m needs
 * io_uring and this kernel refuses it. */
static gf_reader *open_reader(const mode *m, unsigned depth,
                              unsigned max_pending) {
  if (m->env)
    setenv("GPUFEED_IO", m->env, 1);
  else
    unsetenv("GPUFEED_IO");
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = m->backend;
  o.queue_depth = depth;
  o.max_pending = max_pending;
  gf_reader *r = NULL;
  int rc = gf_reader_create(&o, &r);
  unsetenv("GPUFEED_IO");
  if (rc == -EPERM || rc == -ENOSYS || rc == -ENOMEM) {
    if (!uring_missing)
      fprintf(stderr,
              "io_uring unavailable here (%s); its checks are "
              "skipped\n",
              gf_last_error()->message);
    uring_missing = true;
    return NULL;
  }
  CHECK_OK(rc);
  if (r) {
    CHECK(strcmp(gf_reader_backend(r), m->want) == 0);
    CHECK(strcmp(gf_reader_fallback_reason(r), "") == 0);
  }
  return r;
}

typedef struct pending {
  uint64_t offset;
  uint64_t length;
  uint8_t *buf;
  bool busy;
} pending;

/* Issues `count` reads of random extents in random batches, reaping with
 * random min/max, and checks every byte and that each read completes
 * exactly once. Returns the number of failed checks. */
static int random_reads(gf_reader *r, unsigned max_pending, unsigned count,
                        uint64_t seed) {
  int before = gf_test_failures;
  pending *p = calloc(count, sizeof *p);
  gf_read_req *reqs = calloc(64, sizeof *reqs);
  gf_read_done *done = calloc(128, sizeof *done);
  unsigned issued = 0, completed = 0;
  while (completed < count) {
    unsigned room = max_pending - gf_reader_inflight(r);
    unsigned k = 1 + (unsigned)(gf_test_rand(&seed) % 48);
    if (k > room)
      k = room;
    if (k > count - issued)
      k = count - issued;
    for (unsigned i = 0; i < k; i++) {
      pending *q = &p[issued + i];
      uint64_t pick = gf_test_rand(&seed) % 16;
      q->length = pick == 0  ? 1 + gf_test_rand(&seed) % 400000
                  : pick < 4 ? 1 + gf_test_rand(&seed) % 64
                             : 1 + gf_test_rand(&seed) % 65536;
      q->offset = gf_test_rand(&seed) % (F.size - q->length + 1);
      q->buf = malloc(q->length);
      q->busy = true;
      reqs[i] = (gf_read_req){F.obj,     0,      q->offset,
                              q->length, q->buf, 1000 + issued + i};
    }
    if (k) {
      CHECK_OK(gf_reader_submit(r, reqs, k));
      issued += k;
    }
    unsigned inflight = gf_reader_inflight(r);
    unsigned max = 1 + (unsigned)(gf_test_rand(&seed) % 128);
    unsigned min = (unsigned)(gf_test_rand(&seed) % (max + 1));
    if (min > inflight)
      min = inflight;
    if (issued == count && !min)
      min = 1;
    int n = gf_reader_wait(r, done, max, min);
    CHECK(n >= (int)min && n <= (int)max);
    for (int i = 0; i < n; i++) {
      uint64_t ud = done[i].user_data;
      CHECK(ud >= 1000 && ud < 1000 + issued);
      if (ud < 1000 || ud >= 1000 + issued)
        continue;
      pending *q = &p[ud - 1000];
      CHECK(q->busy);
      q->busy = false;
      CHECK(done[i].result == (int64_t)q->length);
      CHECK(done[i].stop_offset == q->offset + q->length);
      CHECK(memcmp(q->buf, F.data + q->offset, q->length) == 0);
      free(q->buf);
      q->buf = NULL;
      completed++;
    }
    if (gf_test_failures - before > 20)
      break; /* do not drown the log */
  }
  CHECK(gf_reader_inflight(r) == 0);
  for (unsigned i = 0; i < count; i++)
    free(p[i].buf);
  free(p);
  free(reqs);
  free(done);
  return gf_test_failures - before;
}

static void check_more_than_depth(const mode *m) {
  gf_reader *r = open_reader(m, 4, 100);
  if (!r)
    return;
  enum { N = 100, LEN = 5000 };
  uint8_t *buf = malloc((size_t)N * LEN);
  gf_read_req reqs[N + 1];
  for (unsigned i = 0; i < N + 1; i++)
    reqs[i] = (gf_read_req){
        F.obj, 0, (uint64_t)i * 7919, LEN, buf + (size_t)(i % N) * LEN, i};
  /* All 100 are accepted at once though only 4 fit in the ring; the ring
   * is filled with one submit call. */
  CHECK_OK(gf_reader_submit(r, reqs, N));
  CHECK(gf_reader_inflight(r) == N);
  gf_reader_stats st;
  gf_reader_get_stats(r, &st);
  if (!strcmp(m->want, "io_uring"))
    CHECK(st.submit_calls == 1);
  else
    CHECK(st.submit_calls == 0);
  /* The 101st is refused and nothing is queued. */
  CHECK_ERR(gf_reader_submit(r, &reqs[N], 1), -EBUSY);
  CHECK(strstr(gf_last_error()->message, "outstanding") != NULL);
  CHECK(gf_reader_inflight(r) == N);
  gf_read_done done[N];
  int n = gf_reader_wait(r, done, N, N);
  CHECK(n == N);
  bool seen[N] = {false};
  for (int i = 0; i < n; i++) {
    uint64_t id = done[i].user_data;
    CHECK(id < N && !seen[id]);
    if (id >= N || seen[id])
      continue;
    seen[id] = true;
    CHECK(done[i].result == LEN);
    CHECK(memcmp(buf + id * LEN, F.data + id * 7919, LEN) == 0);
  }
  gf_reader_get_stats(r, &st);
  CHECK(st.accepted == N && st.completed == N && st.failed == 0);
  CHECK(st.ops == N);
  if (!strcmp(m->want, "io_uring"))
    CHECK(st.submit_calls < N / 2); /* batched, never one per read */
  /* Nothing outstanding: wait returns at once even with min > 0. */
  CHECK(gf_reader_wait(r, done, 4, 4) == 0);
  CHECK(gf_reader_wait(r, done, 4, 0) == 0);
  gf_reader_destroy(r);
  free(buf);
}

static void check_eof_and_errors(const mode *m) {
  gf_reader *r = open_reader(m, 8, 32);
  if (!r)
    return;
  uint8_t b[8][200];
  memset(b, 0xAA, sizeof b);
  uint64_t end = F.size;
  /* Objects whose descriptors the kernel refuses: each read fails alone. */
  static gf_object no_fd = {.fd = -1, .display = (char *)"no descriptor"};
  static gf_object closed_fd = {.fd = 1000000,
                                .display = (char *)"a closed descriptor"};
  gf_read_req reqs[] = {
      /* the last 10 bytes of the file asked as 100 */
      {F.obj, 0, end - 10, 100, b[0], 0},
      /* the same with GF_READ_EOF_OK: the 10 bytes */
      {F.obj, GF_READ_EOF_OK, end - 10, 100, b[1], 1},
      /* wholly past the end */
      {F.obj, 0, end + 5000, 50, b[2], 2},
      /* fine reads among bad ones */
      {F.obj, 0, 12345, 200, b[3], 3},
      {&no_fd, 0, 0, 100, b[4], 4},
      {&closed_fd, 0, 0, 100, b[5], 5},
      {F.obj, 0, 0, 0, b[6], 6}, /* zero bytes: done at once */
      {F.obj, 0, end - 200, 200, b[7], 7},
  };
  unsigned n = sizeof reqs / sizeof reqs[0];
  CHECK_OK(gf_reader_submit(r, reqs, n));
  gf_read_done done[16];
  int got = 0;
  while (got < (int)n) {
    int k = gf_reader_wait(r, done + got, 16 - (unsigned)got, 1);
    CHECK(k >= 1);
    if (k < 1)
      break;
    got += k;
  }
  CHECK(got == (int)n);
  for (int i = 0; i < got; i++) {
    uint64_t id = done[i].user_data;
    int64_t res = done[i].result;
    switch (id) {
    case 0:
      CHECK_ERR(res, GF_ETRUNCATED);
      CHECK(done[i].stop_offset == end);
      break;
    case 1:
      CHECK(res == 10);
      CHECK(done[i].stop_offset == end);
      CHECK(memcmp(b[1], F.data + end - 10, 10) == 0);
      CHECK(b[1][10] == 0xAA);
      break;
    case 2:
      CHECK_ERR(res, GF_ETRUNCATED);
      CHECK(done[i].stop_offset == end + 5000);
      break;
    case 3:
      CHECK(res == 200 && memcmp(b[3], F.data + 12345, 200) == 0);
      break;
    case 4:
    case 5:
      CHECK_ERR(res, -EBADF);
      CHECK(b[id][0] == 0xAA);
      break;
    case 6:
      CHECK(res == 0);
      break;
    case 7:
      CHECK(res == 200 && memcmp(b[7], F.data + end - 200, 200) == 0);
      break;
    default:
      CHECK(!"unexpected user_data");
    }
  }
  gf_reader_stats st;
  gf_reader_get_stats(r, &st);
  CHECK(st.completed == n && st.failed == 4);

  /* Argument checks: all or nothing, with context. */
  gf_read_req bad[2] = {{F.obj, 0, 0, 10, b[0], 0}, {F.obj, 0, 0, 10, NULL, 1}};
  CHECK_ERR(gf_reader_submit(r, bad, 2), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "NULL") != NULL);
  CHECK(gf_reader_inflight(r) == 0);
  bad[1] = (gf_read_req){F.obj, 0, UINT64_MAX - 5, 10, b[0], 1};
  CHECK_ERR(gf_reader_submit(r, bad, 2), -EINVAL);
  bad[1] = (gf_read_req){F.obj, 0, (uint64_t)INT64_MAX, 1, b[0], 1};
  CHECK_ERR(gf_reader_submit(r, bad, 2), -EINVAL);
  bad[1] = (gf_read_req){F.obj, 0x10, 0, 1, b[0], 1};
  CHECK_ERR(gf_reader_submit(r, bad, 2), -EINVAL);
  CHECK(gf_reader_inflight(r) == 0);
  CHECK_OK(gf_reader_submit(r, bad, 0));
  CHECK_ERR(gf_reader_submit(r, NULL, 1), -EINVAL);
  CHECK_ERR(gf_reader_submit(NULL, bad, 1), -EINVAL);
  CHECK_ERR(gf_reader_wait(r, NULL, 1, 0), -EINVAL);
  CHECK_ERR(gf_reader_wait(r, done, 0, 0), -EINVAL);
  CHECK_ERR(gf_reader_wait(r, done, 2, 3), -EINVAL);
  CHECK(gf_reader_inflight(NULL) == 0);

  /* Destroy with reads outstanding: waits for the ones in the kernel and
   * drops the rest (the sanitizers see no leak or late write). */
  enum { MANY = 20, MANY_LEN = 256 << 10 };
  uint8_t *big = malloc((size_t)MANY * MANY_LEN);
  gf_read_req many[MANY];
  for (unsigned i = 0; i < MANY; i++)
    many[i] = (gf_read_req){
        F.obj, 0, (uint64_t)i * 4096, MANY_LEN, big + (size_t)i * MANY_LEN, i};
  CHECK_OK(gf_reader_submit(r, many, MANY));
  gf_reader_destroy(r);
  free(big);
}

/* A read longer than one operation's chunk is not needed for coverage, but
 * a whole-file read in one request is: it checks the offsets of a large
 * buffer end to end. */
static void check_whole_file(const mode *m) {
  gf_reader *r = open_reader(m, 0, 0);
  if (!r)
    return;
  uint8_t *buf = malloc(F.size);
  gf_read_req q = {F.obj, 0, 0, F.size, buf, 77};
  CHECK_OK(gf_reader_submit(r, &q, 1));
  gf_read_done d;
  CHECK(gf_reader_wait(r, &d, 1, 1) == 1);
  CHECK(d.user_data == 77 && d.result == (int64_t)F.size);
  CHECK(memcmp(buf, F.data, F.size) == 0);
  free(buf);
  gf_reader_destroy(r);
}

static void check_options(void) {
  gf_reader *r = NULL;
  gf_reader_opts o = GF_READER_OPTS_INIT;
  unsetenv("GPUFEED_IO");
  o.struct_size = sizeof o + 8;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  CHECK(r == NULL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.reserved[2] = 1;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "reserved") != NULL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.queue_depth = 5000;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.pread_threads = 65;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.backend = 7;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.direct = 1;
  o.direct_align = 1000;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.max_pending = (1u << 20) + 1;
  CHECK_ERR(gf_reader_create(&o, &r), -EINVAL);
  CHECK_ERR(gf_reader_create(&o, NULL), -EINVAL);

  /* An older, smaller options struct is accepted (the rest defaults). */
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.struct_size = offsetof(gf_reader_opts, queue_depth);
  o.backend = GF_IO_PREAD;
  o.queue_depth = 5000; /* beyond struct_size: not read */
  CHECK_OK(gf_reader_create(&o, &r));
  CHECK(r && !strcmp(gf_reader_backend(r), "pread"));
  gf_reader_destroy(r);
  r = NULL;

  /* NULL options: defaults (auto). */
  CHECK_OK(gf_reader_create(NULL, &r));
  CHECK(r != NULL);
  if (r && !strcmp(gf_reader_backend(r), "pread"))
    CHECK(gf_reader_fallback_reason(r)[0] != '\0');
  gf_reader_destroy(r);
  r = NULL;

  /* GPUFEED_IO decides only under auto, and must be a known value. */
  setenv("GPUFEED_IO", "bogus", 1);
  CHECK_ERR(gf_reader_create(NULL, &r), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "GPUFEED_IO=bogus") != NULL);
  o = (gf_reader_opts)GF_READER_OPTS_INIT;
  o.backend = GF_IO_PREAD;
  CHECK_OK(gf_reader_create(&o, &r));
  gf_reader_destroy(r);
  r = NULL;
  if (!uring_missing) {
    setenv("GPUFEED_IO", "pread", 1);
    o.backend = GF_IO_URING;
    CHECK_OK(gf_reader_create(&o, &r));
    CHECK(r && !strcmp(gf_reader_backend(r), "io_uring"));
    gf_reader_destroy(r);
    r = NULL;
  }
  setenv("GPUFEED_IO", "auto", 1);
  CHECK_OK(gf_reader_create(NULL, &r));
  gf_reader_destroy(r);
  unsetenv("GPUFEED_IO");
  gf_reader_destroy(NULL);
}

typedef struct thread_arg {
  const mode *m;
  uint64_t seed;
  int failures;
} thread_arg;

static void *reader_thread(void *p) {
  thread_arg *a = p;
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = a->m->backend;
  o.queue_depth = 16;
  o.max_pending = 64;
  o.pread_threads = 3;
  gf_reader *r = NULL;
  if (gf_reader_create(&o, &r) < 0) {
    a->failures = 1;
    return NULL;
  }
  a->failures = random_reads(r, 64, 400, a->seed);
  gf_reader_destroy(r);
  return NULL;
}

int main(void) {
  make_file(gf_test_tmpdir());
  for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++) {
    const mode *m = &MODES[i];
    fprintf(stderr, "-- %s\n", m->name);
    gf_reader *r = open_reader(m, 8, 64);
    if (r) {
      random_reads(r, 64, 1500, 1 + i);
      gf_reader_stats st;
      gf_reader_get_stats(r, &st);
      CHECK(st.accepted == 1500 && st.completed == 1500 && st.failed == 0);
      CHECK(st.ops >= 1500);
      gf_reader_destroy(r);
    }
    check_more_than_depth(m);
    check_eof_and_errors(m);
    check_whole_file(m);
  }
  check_options();

  /* One reader per thread, several threads at once, both backends. */
  pthread_t t[4];
  thread_arg a[4];
  int started = 0;
  for (int i = 0; i < 4; i++) {
    a[i] = (thread_arg){&MODES[i % 2], 100 + (uint64_t)i, 0};
    if (i % 2 == 0 && uring_missing)
      a[i].m = &MODES[1];
    if (pthread_create(&t[started], NULL, reader_thread, &a[i]) == 0)
      started++;
  }
  CHECK(started == 4);
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    CHECK(a[i].failures == 0);
  }
  gf_object_close(F.obj);
  free(F.data);
  return gf_test_finish();
}
