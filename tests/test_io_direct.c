/* O_DIRECT reads on both backends: aligned extents into aligned buffers,
 * alignment checked at submit, the last extent of a file whose size is not
 * aligned (GF_READ_EOF_OK), and a short count continued from the aligned
 * offset below it. Skips where the filesystem refuses O_DIRECT (tmpfs). */
#include "common/fault.h"
#include "io/io.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 4096u
#define FILE_SIZE ((size_t)(1u << 20) + 1000) /* not a multiple of ALIGN */
#define READS 48
#define MAX_BLOCKS 16

static uint8_t *file_data;
static gf_object *dobj;
static int dfd = -1;
static uint8_t *bufs; /* READS x MAX_BLOCKS x ALIGN, aligned */

static gf_reader *open_direct(int backend) {
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = backend;
  o.direct = 1;
  o.queue_depth = 8;
  o.max_pending = 64;
  gf_reader *r = NULL;
  int rc = gf_reader_create(&o, &r);
  if (rc < 0) {
    if (backend == GF_IO_URING) {
      fprintf(stderr, "io_uring unavailable (%s): skipping it\n",
              gf_last_error()->message);
      return NULL;
    }
    CHECK_OK(rc);
  }
  return r;
}

/* Runs `n` reads and returns the completions in done[] ordered by
 * user_data (which must be 0..n-1). */
static void run(gf_reader *r, const gf_read_req *reqs, unsigned n,
                gf_read_done *done) {
  CHECK_OK(gf_reader_submit(r, reqs, n));
  unsigned got = 0;
  gf_read_done d[READS];
  while (got < n) {
    int k = gf_reader_wait(r, d, READS, 1);
    CHECK(k >= 1);
    if (k < 1)
      return;
    for (int i = 0; i < k; i++) {
      CHECK(d[i].user_data < n);
      if (d[i].user_data < n)
        done[d[i].user_data] = d[i];
    }
    got += (unsigned)k;
  }
}

/* READS random aligned extents inside the file; checks every byte. Returns
 * how many were correct. */
static int aligned_reads(gf_reader *r, uint64_t seed) {
  gf_read_req q[READS];
  gf_read_done d[READS];
  uint64_t blocks_in_file = FILE_SIZE / ALIGN;
  for (unsigned i = 0; i < READS; i++) {
    uint64_t nb = 1 + gf_test_rand(&seed) % MAX_BLOCKS;
    uint64_t first = gf_test_rand(&seed) % (blocks_in_file - nb + 1);
    q[i] = (gf_read_req){dobj,
                         0,
                         first * ALIGN,
                         nb * ALIGN,
                         bufs + (size_t)i * MAX_BLOCKS * ALIGN,
                         i};
  }
  memset(bufs, 0, (size_t)READS * MAX_BLOCKS * ALIGN);
  run(r, q, READS, d);
  int ok = 0;
  for (unsigned i = 0; i < READS; i++)
    ok += d[i].result == (int64_t)q[i].length &&
          memcmp(q[i].buf, file_data + q[i].offset, q[i].length) == 0;
  return ok;
}

static void check_backend(int backend, gf_fault_site site) {
  gf_reader *r = open_direct(backend);
  if (!r)
    return;
  fprintf(stderr, "-- %s\n", gf_reader_backend(r));
  CHECK(aligned_reads(r, 5) == READS);

  /* Misaligned buffer, offset or length: refused at submit, nothing
   * queued. */
  gf_read_req bad[3] = {
      {dobj, 0, 0, ALIGN, bufs + 512, 0},
      {dobj, 0, 100, ALIGN, bufs, 1},
      {dobj, 0, 0, ALIGN + 1, bufs, 2},
  };
  for (int i = 0; i < 3; i++) {
    CHECK_ERR(gf_reader_submit(r, &bad[i], 1), -EINVAL);
    CHECK(strstr(gf_last_error()->message, "aligned to 4096") != NULL);
  }
  CHECK(gf_reader_inflight(r) == 0);

  /* The file's last, partial block, read as a whole block. */
  uint64_t last = FILE_SIZE / ALIGN * ALIGN;
  uint64_t tail = FILE_SIZE - last;
  gf_read_req q[3] = {
      {dobj, GF_READ_EOF_OK, last, ALIGN, bufs, 0},
      {dobj, 0, last, ALIGN, bufs + 4 * ALIGN, 1},
      {dobj, GF_READ_EOF_OK, last - 2 * ALIGN, 4 * ALIGN, bufs + 8 * ALIGN, 2},
  };
  gf_read_done d[3];
  memset(bufs, 0, 12 * ALIGN);
  run(r, q, 3, d);
  CHECK(d[0].result == (int64_t)tail);
  CHECK(d[0].stop_offset == FILE_SIZE);
  CHECK(memcmp(bufs, file_data + last, tail) == 0);
  CHECK_ERR(d[1].result, GF_ETRUNCATED);
  CHECK(d[1].stop_offset == FILE_SIZE);
  CHECK(d[2].result == (int64_t)(2 * ALIGN + tail));
  CHECK(memcmp(bufs + 8 * ALIGN, file_data + last - 2 * ALIGN,
               2 * ALIGN + tail) == 0);

  /* A short count at any one operation (here: halved, so often not a
   * multiple of the alignment) is continued from the aligned offset below
   * it and the data is still right. */
  CHECK_OK(gf_fault_arm(site, 0, 0, 0));
  CHECK(aligned_reads(r, 6) == READS);
  uint64_t calls = gf_fault_calls(site);
  CHECK(calls == READS);
  for (uint64_t n = 1; n <= calls; n++) {
    CHECK_OK(gf_fault_arm(site, n, 0, GF_FAULT_SHORT));
    int ok = aligned_reads(r, 6);
    CHECK(ok == READS);
    CHECK(gf_fault_fired(site) == 1);
    if (ok != READS)
      fprintf(stderr, "  ... short at call %llu\n", (unsigned long long)n);
  }
  /* ... also at the end of the file. */
  CHECK_OK(gf_fault_arm(site, 1, 0, GF_FAULT_SHORT));
  memset(bufs, 0, 12 * ALIGN);
  run(r, q, 1, d);
  CHECK(d[0].result == (int64_t)tail);
  CHECK(memcmp(bufs, file_data + last, tail) == 0);
  gf_fault_disarm_all();

  gf_reader_stats st;
  gf_reader_get_stats(r, &st);
  CHECK(st.continued > 0);
  gf_reader_destroy(r);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/direct.bin", dir);
  file_data = malloc(FILE_SIZE);
  uint64_t seed = 77;
  for (size_t i = 0; i < FILE_SIZE; i++)
    file_data[i] = (uint8_t)gf_test_rand(&seed);
  if (gf_test_write_file(path, file_data, FILE_SIZE) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  if (gf_object_open_path(path, GF_OBJ_DIRECT, &dobj) == 0)
    dfd = dobj->fd;
  if (dfd < 0) {
    int e = -gf_last_error()->code;
    free(file_data);
    if (e == EINVAL || e == EOPNOTSUPP)
      gf_test_skip(false, "the filesystem of %s refuses O_DIRECT (%s)", dir,
                   strerror(e));
    perror(path);
    return 1;
  }
  /* Some filesystems accept the flag at open and refuse the reads. */
  if (posix_memalign((void **)&bufs, ALIGN, (size_t)READS * MAX_BLOCKS * ALIGN))
    return 1;
  if (pread(dfd, bufs, ALIGN, 0) < 0 && errno == EINVAL) {
    free(bufs);
    free(file_data);
    gf_object_close(dobj);
    gf_test_skip(false, "O_DIRECT reads fail with EINVAL on %s", dir);
  }
  unsetenv("GPUFEED_IO");
  check_backend(GF_IO_URING, GF_FAULT_URING_CQE);
  check_backend(GF_IO_PREAD, GF_FAULT_PREAD);
  gf_object_close(dobj);
  free(bufs);
  free(file_data);
  return gf_test_finish();
}
