/* An index of a million records opens in O(1): the time is printed (the
 * benchmarks measure it properly) and only a generous bound is asserted.
 * Also: the full check is O(n) and finds a damaged record far in. */
#include "format/format.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COUNT 1000000u

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/big", tmp);
  CHECK(mkdir(dir, 0755) == 0);
  gf_writer *w = NULL;
  CHECK_OK(gf_writer_create(dir, NULL, &w));
  if (!w)
    return gf_test_finish();
  CHECK_OK(gf_writer_add_class(w, "even"));
  CHECK_OK(gf_writer_add_class(w, "odd"));
  gf_shape sh = {1, 1, 1, GF_DTYPE_U8};
  double t0 = now_s();
  int rc = 0;
  char src[32];
  for (uint32_t i = 0; i < COUNT && rc == 0; i++) {
    uint8_t b = (uint8_t)(i * 31);
    snprintf(src, sizeof src, "s%07u", i);
    rc = gf_writer_add(w, &b, 1, GF_CODEC_RAW, &sh, i & 1, src);
  }
  CHECK_OK(rc);
  double t1 = now_s();
  CHECK_OK(gf_writer_finish(w));
  double t2 = now_s();
  gf_writer_destroy(w);
  printf("writer: %u samples added in %.3f s, finish (index + fsync) %.3f s\n",
         COUNT, t1 - t0, t2 - t1);

  char index[1100];
  snprintf(index, sizeof index, "%s/index.gfi", dir);
  struct stat st;
  CHECK(stat(index, &st) == 0);
  /* Warm the page cache so the open time is the library's, not the disk's
   * first read. */
  size_t len;
  free(gf_test_read_file(index, &len));

  gf_dataset *ds = NULL;
  double t3 = now_s();
  CHECK_OK(gf_dataset_open(dir, &ds));
  double t4 = now_s();
  printf("gf_dataset_open: %.3f ms for %u records (index %lld bytes)\n",
         (t4 - t3) * 1e3, COUNT, (long long)st.st_size);
  CHECK(t4 - t3 < 1.0);
  if (!ds)
    return gf_test_finish();
  CHECK(gf_dataset_count(ds) == COUNT);

  /* Random access works straight after open. */
  uint64_t seed = 3;
  for (int k = 0; k < 1000; k++) {
    uint64_t i = gf_test_rand(&seed) % COUNT;
    gf_sample_info info;
    CHECK_OK(gf_dataset_sample_info(ds, i, &info));
    CHECK(info.label == (int64_t)(i & 1));
    snprintf(src, sizeof src, "s%07u", (unsigned)i);
    CHECK(info.source_len == 8 && memcmp(info.source, src, 8) == 0);
    uint8_t b = 0;
    CHECK(gf_dataset_read(ds, i, &b, 1) == 1);
    CHECK(b == (uint8_t)(i * 31));
  }
  double t5 = now_s();
  CHECK_OK(gf_dataset_check_index(ds));
  double t6 = now_s();
  printf("gf_dataset_check_index: %.3f ms\n", (t6 - t5) * 1e3);
  gf_dataset_close(ds);

  /* A flipped byte near the end: open does not notice, the check does. */
  int fd = open(index, O_RDWR);
  CHECK(fd >= 0);
  uint8_t h[GF_INDEX_HEADER_SIZE];
  CHECK(pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h);
  off_t off = (off_t)gf_le64(h + GF_IH_RECORDS_OFF) +
              (off_t)(COUNT - 7) * GF_RECORD_SIZE + GF_REC_LABEL;
  uint8_t b;
  CHECK(pread(fd, &b, 1, off) == 1);
  b ^= 1;
  CHECK(pwrite(fd, &b, 1, off) == 1);
  close(fd);
  ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  CHECK_ERR(gf_dataset_check_index(ds), GF_ECORRUPT);
  CHECK(strstr(gf_last_error()->message, "index.gfi") != NULL);
  gf_sample_info info;
  CHECK_ERR(gf_dataset_sample_info(ds, COUNT - 7, &info), GF_ECORRUPT);
  CHECK_OK(gf_dataset_sample_info(ds, COUNT - 8, &info));
  gf_dataset_close(ds);
  CHECK_OK(gf_dir_remove(dir));
  return gf_test_finish();
}
