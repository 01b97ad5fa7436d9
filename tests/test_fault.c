/* The fault injection layer: arming, counting, sticky and short faults,
 * GPUFEED_FAULT parsing (read once at first use), the system call wrappers,
 * and exact counting when several threads hit one site. */
#include "common/fault.h"
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define HITS 20000

typedef struct hit_arg {
  gf_fault_site site;
  int faults;
  int wrong;
} hit_arg;

static void *hit_thread(void *p) {
  hit_arg *a = p;
  for (int i = 0; i < HITS; i++) {
    int rc = gf_fault_check(a->site);
    if (rc == -EIO)
      a->faults++;
    else if (rc != 0)
      a->wrong++;
  }
  return NULL;
}

/* Runs THREADS threads that each hit `site` HITS times; returns the total
 * faults they saw. */
static int hit_from_threads(gf_fault_site site) {
  pthread_t t[THREADS];
  hit_arg a[THREADS];
  for (int i = 0; i < THREADS; i++) {
    a[i] = (hit_arg){site, 0, 0};
    CHECK(pthread_create(&t[i], NULL, hit_thread, &a[i]) == 0);
  }
  int faults = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    faults += a[i].faults;
    CHECK(a[i].wrong == 0);
  }
  return faults;
}

static void check_env_armed(const char *dir) {
  /* fsync:2:EIO */
  CHECK(gf_fault_check(GF_FAULT_FSYNC) == 0);
  CHECK(gf_fault_check(GF_FAULT_FSYNC) == -EIO);
  CHECK(gf_fault_check(GF_FAULT_FSYNC) == 0);
  CHECK(gf_fault_calls(GF_FAULT_FSYNC) == 3);
  CHECK(gf_fault_fired(GF_FAULT_FSYNC) == 1);
  /* uring_setup:1:EPERM */
  CHECK(gf_fault_check(GF_FAULT_URING_SETUP) == -EPERM);
  CHECK(gf_fault_check(GF_FAULT_URING_SETUP) == 0);

  /* write:3:ENOSPC through the wrapper: the third write fails without
   * writing, with errno set too. */
  char path[4200];
  snprintf(path, sizeof path, "%s/w.bin", dir);
  int fd = gf_sys_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(gf_sys_write(fd, "ab", 2) == 2);
  CHECK(gf_sys_write(fd, "cd", 2) == 2);
  errno = 0;
  CHECK(gf_sys_write(fd, "ef", 2) == -ENOSPC);
  CHECK(errno == ENOSPC);
  CHECK(gf_sys_write(fd, "gh", 2) == 2);
  /* pread:2:short:sticky: the first pread is whole, every later one
   * halved. */
  char buf[8] = {0};
  CHECK(gf_sys_pread(fd, buf, 8, 0) == 6);
  CHECK(memcmp(buf, "abcdgh", 6) == 0);
  CHECK(gf_sys_pread(fd, buf, 6, 0) == 3);
  CHECK(gf_sys_pread(fd, buf, 4, 0) == 2);
  CHECK(gf_fault_fired(GF_FAULT_PREAD) == 2);
  /* A count of 1 cannot be made shorter without meaning end of file. */
  CHECK(gf_sys_pread(fd, buf, 1, 0) == 1);
  CHECK(gf_fault_fired(GF_FAULT_PREAD) == 2);
  /* ... and the loop helper still gets everything. */
  memset(buf, 0, sizeof buf);
  CHECK(gf_sys_pread_full(fd, buf, 6, 0) == 6);
  CHECK(memcmp(buf, "abcdgh", 6) == 0);
  close(fd);
  gf_fault_disarm_all();
}

static void check_arming(void) {
  gf_fault_disarm_all();
  /* Disarmed: the fast path sees no bit at all. */
  CHECK(atomic_load(&gf_fault_mask_) == 0);
  for (int s = 0; s < GF_FAULT_SITE_COUNT_; s++)
    CHECK(gf_fault_check((gf_fault_site)s) == 0);

  /* Once, at call 3. */
  CHECK_OK(gf_fault_arm(GF_FAULT_READ, 3, -EIO, 0));
  CHECK(gf_fault_calls(GF_FAULT_READ) == 0);
  int got[6];
  for (int i = 0; i < 6; i++)
    got[i] = gf_fault_check(GF_FAULT_READ);
  CHECK(got[0] == 0 && got[1] == 0 && got[2] == -EIO && got[3] == 0 &&
        got[4] == 0 && got[5] == 0);
  CHECK(gf_fault_calls(GF_FAULT_READ) == 6);
  CHECK(gf_fault_fired(GF_FAULT_READ) == 1);
  /* Other sites are untouched (and, disarmed, not counted). */
  uint64_t writes = gf_fault_calls(GF_FAULT_WRITE);
  CHECK(gf_fault_check(GF_FAULT_WRITE) == 0);
  CHECK(gf_fault_calls(GF_FAULT_WRITE) == writes);

  /* Re-arming resets the counters. Sticky: call 2 and every later one. */
  CHECK_OK(gf_fault_arm(GF_FAULT_READ, 2, -EAGAIN, GF_FAULT_STICKY));
  CHECK(gf_fault_calls(GF_FAULT_READ) == 0);
  CHECK(gf_fault_check(GF_FAULT_READ) == 0);
  for (int i = 0; i < 9; i++)
    CHECK(gf_fault_check(GF_FAULT_READ) == -EAGAIN);
  CHECK(gf_fault_fired(GF_FAULT_READ) == 9);

  /* Disarm stops faults and counting but keeps the counts readable. */
  gf_fault_disarm(GF_FAULT_READ);
  CHECK(gf_fault_check(GF_FAULT_READ) == 0);
  CHECK(gf_fault_calls(GF_FAULT_READ) == 10);

  /* Count only (nth 0): for tests that sweep N over every call. */
  CHECK_OK(gf_fault_arm(GF_FAULT_URING_CQE, 0, 0, 0));
  for (int i = 0; i < 17; i++)
    CHECK(gf_fault_check(GF_FAULT_URING_CQE) == 0);
  CHECK(gf_fault_calls(GF_FAULT_URING_CQE) == 17);
  CHECK(gf_fault_fired(GF_FAULT_URING_CQE) == 0);

  /* Short: the count is halved, the call goes ahead. */
  CHECK_OK(gf_fault_arm(GF_FAULT_URING_CQE, 2, 0, GF_FAULT_SHORT));
  size_t len = 1000;
  CHECK(gf_fault_check_len(GF_FAULT_URING_CQE, &len) == 0 && len == 1000);
  CHECK(gf_fault_check_len(GF_FAULT_URING_CQE, &len) == 0 && len == 500);
  CHECK(gf_fault_check_len(GF_FAULT_URING_CQE, &len) == 0 && len == 500);
  CHECK(gf_fault_fired(GF_FAULT_URING_CQE) == 1);

  /* Any negative code can be injected, gpufeed's own included. */
  CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_MALLOC, 1, GF_ECUDA, 0));
  CHECK(gf_fault_check(GF_FAULT_CUDA_MALLOC) == GF_ECUDA);

  /* Refused: no error code, short on a site that moves no bytes, unknown
   * site or flag. */
  gf_error_clear();
  CHECK_ERR(gf_fault_arm(GF_FAULT_FSYNC, 1, 0, 0), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "gf_fault_arm") != NULL);
  CHECK_ERR(gf_fault_arm(GF_FAULT_FSYNC, 1, 5, 0), -EINVAL);
  CHECK_ERR(gf_fault_arm(GF_FAULT_OPEN, 1, 0, GF_FAULT_SHORT), -EINVAL);
  CHECK_ERR(gf_fault_arm((gf_fault_site)GF_FAULT_SITE_COUNT_, 1, -EIO, 0),
            -EINVAL);
  CHECK_ERR(gf_fault_arm((gf_fault_site)-1, 1, -EIO, 0), -EINVAL);
  CHECK_ERR(gf_fault_arm(GF_FAULT_READ, 1, -EIO, 0x80), -EINVAL);
  CHECK(gf_fault_check(GF_FAULT_FSYNC) == 0);
  CHECK(gf_fault_check(GF_FAULT_OPEN) == 0);
  gf_fault_disarm_all();
  CHECK(atomic_load(&gf_fault_mask_) == 0);
}

static void check_parse(void) {
  gf_fault_disarm_all();
  /* Site names round-trip. */
  for (int s = 0; s < GF_FAULT_SITE_COUNT_; s++)
    CHECK(gf_fault_site_parse(gf_fault_site_name(s)) == s);
  CHECK(gf_fault_site_name(GF_FAULT_SITE_COUNT_) == NULL);
  CHECK(gf_fault_site_name(-1) == NULL);
  CHECK(gf_fault_site_parse("nope") == -EINVAL);
  CHECK(gf_fault_site_parse(NULL) == -EINVAL);
  CHECK(strcmp(gf_fault_site_name(GF_FAULT_URING_CQE), "uring_cqe") == 0);
  CHECK(strcmp(gf_fault_site_name(GF_FAULT_CUDA_HOST_REGISTER),
               "cuda_host_register") == 0);

  /* Numbers, errno names and gpufeed names. */
  CHECK_OK(gf_fault_parse("read:2:5,cuda_memcpy:1:GF_ECUDA,rename:1:EXDEV,"
                          "open:1:EACCES"));
  CHECK(gf_fault_check(GF_FAULT_READ) == 0);
  CHECK(gf_fault_check(GF_FAULT_READ) == -5);
  CHECK(gf_fault_check(GF_FAULT_CUDA_MEMCPY) == GF_ECUDA);
  errno = 0;
  CHECK(gf_sys_rename("/nonexistent-a", "/nonexistent-b") == -EXDEV);
  CHECK(errno == EXDEV);
  /* The open fault returns before opening anything. */
  CHECK(gf_sys_open("/dev/null", O_RDONLY, 0) == -EACCES);
  int fd = gf_sys_open("/dev/null", O_RDONLY, 0);
  CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  /* Empty entries are skipped; count-only with N = 0. */
  CHECK_OK(gf_fault_parse(",fsync:0:EIO,,"));
  CHECK(gf_fault_check(GF_FAULT_FSYNC) == 0);
  CHECK(gf_fault_calls(GF_FAULT_FSYNC) == 1);
  gf_fault_disarm_all();

  static const char *const bad[] = {
      "nosuch:1:EIO",    "read:x:EIO",
      "read:1:EWHAT",    "read:1",
      "read:-1:EIO",     "fsync:1:short",
      "read:1:EIO:ever", "read:1:EIO:sticky:more",
      "read::EIO",       "read:1:0",
      "read:1:4096",     ":1:EIO",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gf_error_clear();
    int rc = gf_fault_parse(bad[i]);
    if (rc != -EINVAL)
      fprintf(stderr, "spec '%s' gave %d\n", bad[i], rc);
    CHECK(rc == -EINVAL);
    CHECK(gf_last_error()->message[0] != '\0');
  }
  CHECK(strstr((gf_fault_parse("read:1:EWHAT"), gf_last_error()->message),
               "EWHAT") != NULL);
  CHECK(gf_fault_parse(NULL) == -EINVAL);
  /* All or nothing: a bad entry arms none of the good ones. */
  CHECK_ERR(gf_fault_parse("read:1:EIO,bogus:1:EIO"), -EINVAL);
  CHECK(gf_fault_check(GF_FAULT_READ) == 0);
  CHECK(atomic_load(&gf_fault_mask_) == 0);
}

static void check_wrappers(const char *dir) {
  char path[4200], path2[4200];
  snprintf(path, sizeof path, "%s/data.bin", dir);
  snprintf(path2, sizeof path2, "%s/data2.bin", dir);
  uint8_t src[10000];
  uint64_t seed = 7;
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (uint8_t)gf_test_rand(&seed);

  /* Every write halved: write_full still writes everything. */
  int fd = gf_sys_open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK_OK(
      gf_fault_arm(GF_FAULT_WRITE, 1, 0, GF_FAULT_SHORT | GF_FAULT_STICKY));
  CHECK_OK(gf_sys_write_full(fd, src, sizeof src));
  CHECK(gf_fault_calls(GF_FAULT_WRITE) > 10);
  gf_fault_disarm_all();
  CHECK_OK(gf_sys_fsync(fd));
  CHECK_OK(gf_sys_fdatasync(fd));
  size_t n = 0;
  uint8_t *back = gf_test_read_file(path, &n);
  CHECK(back && n == sizeof src && memcmp(back, src, n) == 0);
  free(back);

  /* EINTR once: retried. Sticky EINTR: given up after a bounded number. */
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -EINTR, 0));
  CHECK_OK(gf_sys_write_full(fd, src, 10));
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -EINTR, GF_FAULT_STICKY));
  CHECK_ERR(gf_sys_write_full(fd, src, 10), -EINTR);
  CHECK(gf_fault_calls(GF_FAULT_WRITE) < 100);
  /* An error at the 2nd write call: the first call writes everything, so
   * the next write_full is the one that meets it. */
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 2, -ENOSPC, 0));
  CHECK_OK(gf_sys_write_full(fd, src, 10));
  CHECK_ERR(gf_sys_write_full(fd, src, 10), -ENOSPC);
  /* Short once: the caller of a single write sees half. */
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, 0, GF_FAULT_SHORT));
  CHECK(gf_sys_write(fd, src, 10) == 5);
  CHECK(gf_sys_write(fd, src, 10) == 10);
  CHECK_OK(gf_fault_arm(GF_FAULT_FSYNC, 1, -EIO, 0));
  CHECK_ERR(gf_sys_fsync(fd), -EIO);
  CHECK_OK(gf_fault_arm(GF_FAULT_FSYNC, 1, -EIO, 0));
  CHECK_ERR(gf_sys_fdatasync(fd), -EIO);

  /* pread_full: short and interrupted reads still return all the data. */
  uint8_t buf[sizeof src];
  CHECK_OK(
      gf_fault_arm(GF_FAULT_PREAD, 1, 0, GF_FAULT_SHORT | GF_FAULT_STICKY));
  memset(buf, 0, sizeof buf);
  CHECK(gf_sys_pread_full(fd, buf, 5000, 100) == 5000);
  CHECK(memcmp(buf, src + 100, 5000) == 0);
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 1, -EAGAIN, 0));
  memset(buf, 0, sizeof buf);
  CHECK(gf_sys_pread_full(fd, buf, sizeof src, 0) == (ssize_t)sizeof src);
  CHECK(memcmp(buf, src, sizeof src) == 0);
  CHECK(gf_fault_fired(GF_FAULT_PREAD) == 1);
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 1, -EIO, 0));
  CHECK_ERR(gf_sys_pread_full(fd, buf, 10, 0), -EIO);
  /* Past the end: fewer bytes, not an error. */
  gf_fault_disarm_all();
  CHECK(gf_sys_pread_full(fd, buf, 100, (off_t)sizeof src - 10) >= 10);
  CHECK(gf_sys_read(fd, buf, 0) == 0);
  CHECK_OK(gf_fault_arm(GF_FAULT_READ, 1, -EIO, 0));
  CHECK(gf_sys_read(fd, buf, 10) == -EIO);
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 1, -EDQUOT, 0));
  CHECK(gf_sys_pwrite(fd, src, 10, 0) == -EDQUOT);
  gf_fault_disarm_all();
  CHECK(gf_sys_pwrite(fd, src, 10, 0) == 10);
  close(fd);

  /* Real errors come back as -errno too. */
  CHECK(gf_sys_open("/nonexistent/x", O_RDONLY, 0) == -ENOENT);
  CHECK(gf_sys_pread(-1, buf, 1, 0) == -EBADF);
  CHECK(gf_sys_fsync(-1) == -EBADF);
  CHECK_OK(gf_sys_rename(path, path2));
  CHECK(access(path2, F_OK) == 0);
}

static void check_threads(void) {
  /* Exactly one of all the threads' calls is the Nth. */
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 33333, -EIO, 0));
  CHECK(hit_from_threads(GF_FAULT_PREAD) == 1);
  CHECK(gf_fault_calls(GF_FAULT_PREAD) == THREADS * HITS);
  CHECK(gf_fault_fired(GF_FAULT_PREAD) == 1);
  /* Sticky: every call from the Nth on, counted exactly. */
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 50001, -EIO, GF_FAULT_STICKY));
  CHECK(hit_from_threads(GF_FAULT_PREAD) == THREADS * HITS - 50000);
  CHECK(gf_fault_fired(GF_FAULT_PREAD) == THREADS * HITS - 50000);
  /* Past the number of calls: never. */
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, THREADS * HITS + 1, -EIO, 0));
  CHECK(hit_from_threads(GF_FAULT_PREAD) == 0);
  gf_fault_disarm_all();
  CHECK(hit_from_threads(GF_FAULT_PREAD) == 0);
}

int main(void) {
  /* Before any use of the layer: it reads GPUFEED_FAULT once, at first
   * use. */
  setenv("GPUFEED_FAULT",
         "fsync:2:EIO,write:3:ENOSPC,uring_setup:1:EPERM,"
         "pread:2:short:sticky",
         1);
  const char *dir = gf_test_tmpdir();
  check_env_armed(dir);
  /* Read once only: a later change of the variable arms nothing. */
  setenv("GPUFEED_FAULT", "read:1:EIO", 1);
  CHECK(gf_fault_check(GF_FAULT_READ) == 0);
  unsetenv("GPUFEED_FAULT");

  check_arming();
  check_parse();
  check_wrappers(dir);
  check_threads();
  return gf_test_finish();
}
