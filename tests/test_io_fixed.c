/* Registered (fixed) buffers: reads that land inside a registered region
 * use IORING_OP_READ_FIXED with that region's index and give the right
 * bytes; reads outside or straddling a region use plain reads; the
 * register/unregister rules; and the pread backend accepts the same calls. */
#include "io/io.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE ((size_t)1 << 20)
#define REGION ((size_t)256 << 10)

static uint8_t *file_data;
static gf_object *fobj;

/* Reads n extents given by (offset, length, buf) and checks them. Returns
 * the number of correct reads. */
static int read_check(gf_reader *r, const uint64_t *off, const uint64_t *len,
                      uint8_t *const *buf, unsigned n) {
  gf_read_req q[16];
  for (unsigned i = 0; i < n; i++) {
    q[i] = (gf_read_req){fobj, 0, off[i], len[i], buf[i], i};
    memset(buf[i], 0, len[i]);
  }
  CHECK_OK(gf_reader_submit(r, q, n));
  gf_read_done d[16];
  int got = 0, ok = 0;
  while (got < (int)n) {
    int k = gf_reader_wait(r, d, 16, 1);
    CHECK(k >= 1);
    if (k < 1)
      break;
    for (int i = 0; i < k; i++) {
      unsigned id = (unsigned)d[i].user_data;
      if (d[i].result != (int64_t)len[id])
        fprintf(stderr, "read %u: %lld (%s)\n", id, (long long)d[i].result,
                gf_err_name((int)d[i].result));
      ok += id < n && d[i].result == (int64_t)len[id] &&
            memcmp(buf[id], file_data + off[id], len[id]) == 0;
    }
    got += k;
  }
  return ok;
}

static void check_uring(void) {
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = GF_IO_URING;
  o.queue_depth = 8;
  gf_reader *r = NULL;
  if (gf_reader_create(&o, &r) < 0) {
    fprintf(stderr, "io_uring unavailable (%s): fixed buffers not tested\n",
            gf_last_error()->message);
    return;
  }
  /* Three regions in one allocation with gaps between them, so that a
   * wrong region index makes the kernel refuse the read (EFAULT). */
  uint8_t *mem = malloc(4 * REGION);
  struct iovec iov[3] = {{mem, REGION},
                         {mem + REGION + 4096, REGION - 8192},
                         {mem + 3 * REGION, REGION}};
  CHECK_OK(gf_reader_register(r, iov, 3));

  gf_reader_stats s0, s1;
  gf_reader_get_stats(r, &s0);
  /* Disjoint buffers: the reads run at the same time. The 1st, 4th and
   * 6th end exactly at their region's end. */
  uint64_t off[6] = {0, 5000, 123457, 777, 4096 * 7, 99};
  uint64_t len[6] = {REGION / 2, 1000, 60000, 70000, 4096, 1};
  uint8_t *buf[6] = {mem + REGION / 2,          mem + 100,
                     mem + REGION + 4096 + 500, mem + 2 * REGION - 4096 - 70000,
                     mem + 3 * REGION + 10,     mem + 4 * REGION - 1};
  CHECK(read_check(r, off, len, buf, 6) == 6);
  gf_reader_get_stats(r, &s1);
  CHECK(s1.ops - s0.ops == 6);
  CHECK(s1.fixed_ops - s0.fixed_ops == 6);

  /* Outside every region, or straddling a region's end: plain reads. */
  uint8_t *other = malloc(8192);
  uint64_t off2[3] = {10, 20000, 300};
  uint64_t len2[3] = {8192, 4096, 8000};
  uint8_t *buf2[3] = {other, mem + REGION - 100, mem + REGION + 4000};
  s0 = s1;
  CHECK(read_check(r, off2, len2, buf2, 3) == 3);
  gf_reader_get_stats(r, &s1);
  CHECK(s1.ops - s0.ops == 3);
  CHECK(s1.fixed_ops == s0.fixed_ops);

  /* Rules: once, and not while reads are outstanding. */
  CHECK_ERR(gf_reader_register(r, iov, 1), -EBUSY);
  gf_read_req q = {fobj, 0, 0, 100, mem, 1};
  CHECK_OK(gf_reader_submit(r, &q, 1));
  CHECK_ERR(gf_reader_unregister(r), -EBUSY);
  gf_read_done d;
  CHECK(gf_reader_wait(r, &d, 1, 1) == 1 && d.result == 100);
  CHECK_OK(gf_reader_unregister(r));
  CHECK_OK(gf_reader_unregister(r));
  gf_reader_get_stats(r, &s0);
  CHECK(read_check(r, off, len, buf, 6) == 6);
  gf_reader_get_stats(r, &s1);
  CHECK(s1.fixed_ops == s0.fixed_ops);
  /* Registered again after unregistering. */
  CHECK_OK(gf_reader_register(r, &iov[2], 1));
  s0 = s1;
  CHECK(read_check(r, &off[4], &len[4], &buf[4], 1) == 1);
  gf_reader_get_stats(r, &s1);
  CHECK(s1.fixed_ops - s0.fixed_ops == 1);
  CHECK_OK(gf_reader_submit(r, &q, 1));
  CHECK_ERR(gf_reader_register(r, iov, 1), -EBUSY);
  CHECK(gf_reader_wait(r, &d, 1, 1) == 1);

  gf_reader_destroy(r); /* drops the registration with the ring */
  free(other);
  free(mem);
}

static void check_args_and_pread(void) {
  gf_reader_opts o = GF_READER_OPTS_INIT;
  o.backend = GF_IO_PREAD;
  gf_reader *r = NULL;
  CHECK_OK(gf_reader_create(&o, &r));
  if (!r)
    return;
  uint8_t *mem = malloc(REGION);
  struct iovec iov = {mem, REGION};
  struct iovec empty = {mem, 0};
  struct iovec null = {NULL, 100};
  struct iovec huge = {mem, (size_t)1 << 31};
  CHECK_ERR(gf_reader_register(r, &iov, 0), -EINVAL);
  CHECK_ERR(gf_reader_register(r, NULL, 1), -EINVAL);
  CHECK_ERR(gf_reader_register(r, &empty, 1), -EINVAL);
  CHECK_ERR(gf_reader_register(r, &null, 1), -EINVAL);
  CHECK_ERR(gf_reader_register(r, &huge, 1), -EINVAL);
  CHECK_ERR(gf_reader_register(r, &iov, 1025), -EINVAL);
  CHECK_ERR(gf_reader_register(NULL, &iov, 1), -EINVAL);
  CHECK_ERR(gf_reader_unregister(NULL), -EINVAL);
  /* pread: accepted, and reads work the same. */
  CHECK_OK(gf_reader_register(r, &iov, 1));
  CHECK_ERR(gf_reader_register(r, &iov, 1), -EBUSY);
  uint64_t off = 4242, len = REGION;
  uint8_t *b = mem;
  CHECK(read_check(r, &off, &len, &b, 1) == 1);
  gf_reader_stats st;
  gf_reader_get_stats(r, &st);
  CHECK(st.fixed_ops == 0 && st.ops == 1);
  CHECK_OK(gf_reader_unregister(r));
  gf_reader_destroy(r);
  free(mem);
}

int main(void) {
  char path[4200];
  snprintf(path, sizeof path, "%s/data.bin", gf_test_tmpdir());
  file_data = malloc(FILE_SIZE);
  uint64_t seed = 3;
  for (size_t i = 0; i < FILE_SIZE; i++)
    file_data[i] = (uint8_t)gf_test_rand(&seed);
  if (gf_test_write_file(path, file_data, FILE_SIZE) != 0 ||
      gf_object_open_path(path, 0, &fobj) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  unsetenv("GPUFEED_IO");
  check_uring();
  check_args_and_pread();
  gf_object_close(fobj);
  free(file_data);
  return gf_test_finish();
}
