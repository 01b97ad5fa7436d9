/* I/O errors in the writer and the reader, injected at each system call in
 * turn (common/fault.h) and, for EFBIG, produced by the kernel: every one is
 * returned as -errno naming the file, a failed write never leaves an index
 * that looks valid, and interrupted or short calls are continued to
 * byte-identical results. */
#include "common/fault.h"
#include "format/format.h"
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS 24

static uint8_t *g_data[NS];
static size_t g_len[NS];
static char g_tmp[512];
static gf_error_info g_err; /* what the failing call of write_ds said */

/* Writes the test dataset into tmp/name; returns the first error. */
static int write_ds(const char *name, char *dir, size_t cap) {
  snprintf(dir, cap, "%s/%s", g_tmp, name);
  mkdir(dir, 0755);
  gf_writer_opts o = {
      .shard_size = 3u << 20, .alignment = 512, .index_version = 0};
  gf_writer *w = NULL;
  int rc = gf_writer_create(dir, &o, &w);
  if (rc < 0)
    return rc;
  rc = gf_writer_add_class(w, "x");
  for (int i = 0; i < NS && rc == 0; i++) {
    gf_shape sh = {64, 64, 1, GF_DTYPE_U8};
    char src[32];
    snprintf(src, sizeof src, "in/%d.png", i);
    rc = gf_writer_add(w, g_data[i], g_len[i], GF_CODEC_ZSTD, &sh, 0, src);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  g_err = *gf_last_error();
  if (rc < 0) {
    /* Sticky: the writer keeps refusing with the same error. */
    gf_shape sh = {64, 64, 1, GF_DTYPE_U8};
    int again =
        gf_writer_add(w, g_data[0], g_len[0], GF_CODEC_ZSTD, &sh, 0, "again");
    CHECK(again == rc || again == -EINVAL);
  }
  gf_writer_destroy(w);
  return rc;
}

static bool same_dataset(const char *a, const char *b) {
  static const char *names[] = {"index.gfi", "shard-000000.gfs",
                                "shard-000001.gfs", "shard-000002.gfs",
                                "shard-000003.gfs"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char pa[1100], pb[1100];
    snprintf(pa, sizeof pa, "%s/%s", a, names[i]);
    snprintf(pb, sizeof pb, "%s/%s", b, names[i]);
    size_t la = 0, lb = 0;
    uint8_t *fa = gf_test_read_file(pa, &la), *fb = gf_test_read_file(pb, &lb);
    bool same = (!fa && !fb) || (fa && fb && la == lb && !memcmp(fa, fb, la));
    free(fa);
    free(fb);
    if (!same)
      return false;
  }
  return true;
}

static bool has_index(const char *dir) {
  char p[1100];
  snprintf(p, sizeof p, "%s/index.gfi", dir);
  return access(p, F_OK) == 0;
}

static void test_writer_faults(const char *ref) {
  char dir[1024];
  /* Short writes all along, and an interrupted write: same bytes. */
  CHECK_OK(
      gf_fault_arm(GF_FAULT_WRITE, 1, 0, GF_FAULT_SHORT | GF_FAULT_STICKY));
  CHECK_OK(write_ds("short", dir, sizeof dir));
  CHECK(gf_fault_fired(GF_FAULT_WRITE) > 0);
  gf_fault_disarm_all();
  CHECK(same_dataset(ref, dir));
  CHECK_OK(gf_fault_arm(GF_FAULT_WRITE, 2, -EINTR, 0));
  CHECK_OK(write_ds("eintr", dir, sizeof dir));
  CHECK(gf_fault_fired(GF_FAULT_WRITE) == 1);
  gf_fault_disarm_all();
  CHECK(same_dataset(ref, dir));

  /* Every write, fsync, open and the rename failing in turn. */
  struct {
    gf_fault_site site;
    int err;
  } cases[] = {{GF_FAULT_WRITE, -ENOSPC},
               {GF_FAULT_WRITE, -EIO},
               {GF_FAULT_FSYNC, -EIO},
               {GF_FAULT_OPEN, -EMFILE},
               {GF_FAULT_RENAME, -EIO}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    CHECK_OK(gf_fault_arm(cases[c].site, 0, 0, 0)); /* count only */
    CHECK_OK(write_ds("count", dir, sizeof dir));
    uint64_t calls = gf_fault_calls(cases[c].site);
    gf_fault_disarm_all();
    CHECK_OK(gf_dir_remove(dir));
    CHECK(calls > 0);
    for (uint64_t n = 1; n <= calls; n++) {
      char name[64];
      snprintf(name, sizeof name, "fail-%s-%llu",
               gf_fault_site_name((int)cases[c].site), (unsigned long long)n);
      CHECK_OK(gf_fault_arm(cases[c].site, n, cases[c].err, 0));
      int rc = write_ds(name, dir, sizeof dir);
      gf_fault_disarm_all();
      const gf_error_info *e = &g_err;
      if (rc != cases[c].err || !strstr(e->path, name) ||
          !strstr(e->message, name)) {
        fprintf(stderr, "%s call %llu: got %s: %s\n",
                gf_fault_site_name((int)cases[c].site), (unsigned long long)n,
                gf_err_name(rc), e->message);
        gf_test_failures++;
      }
      /* No dataset that looks valid, unless what failed was the last
       * open or fsync: of the folder, after the rename (finish still
       * fails, and the caller removes the folder). */
      bool after_rename =
          (cases[c].site == GF_FAULT_FSYNC || cases[c].site == GF_FAULT_OPEN) &&
          n == calls;
      CHECK(!has_index(dir) || after_rename);
      CHECK_OK(gf_dir_remove(dir));
      CHECK(access(dir, F_OK) != 0);
    }
  }
}

static void test_reader_faults(const char *ref) {
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(ref, &ds));
  if (!ds)
    return;
  uint8_t *buf = malloc(2u << 20);
  /* Short and interrupted reads are continued. */
  CHECK_OK(
      gf_fault_arm(GF_FAULT_PREAD, 1, 0, GF_FAULT_SHORT | GF_FAULT_STICKY));
  for (int i = 0; i < NS; i++) {
    int64_t n = gf_dataset_read(ds, (uint64_t)i, buf, 2u << 20);
    CHECK(n == (int64_t)g_len[i] && memcmp(buf, g_data[i], g_len[i]) == 0);
  }
  CHECK(gf_fault_fired(GF_FAULT_PREAD) > 0);
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 1, -EINTR, 0));
  CHECK(gf_dataset_read(ds, 3, buf, 2u << 20) == (int64_t)g_len[3]);
  /* An I/O error names the shard, the sample and the offset. */
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 1, -EIO, 0));
  gf_sample_info info;
  CHECK_OK(gf_dataset_sample_info(ds, 5, &info));
  CHECK_ERR(gf_dataset_read(ds, 5, buf, 2u << 20), -EIO);
  const gf_error_info *e = gf_last_error();
  CHECK(strcmp(e->path, gf_dataset_shard_path(ds, info.shard)) == 0);
  CHECK(e->sample == 5 && e->offset == info.offset);
  CHECK(strstr(e->message, "shard-") != NULL);
  gf_fault_disarm_all();
  CHECK(gf_dataset_read(ds, 5, buf, 2u << 20) == (int64_t)g_len[5]);
  gf_dataset_close(ds);
  free(buf);

  /* Open: a failing open names the file. */
  CHECK_OK(gf_fault_arm(GF_FAULT_PREAD, 1, -EIO, 0));
  ds = NULL;
  CHECK_ERR(gf_dataset_open(ref, &ds), -EIO);
  CHECK(ds == NULL);
  CHECK(strstr(gf_last_error()->message, "index.gfi") != NULL);
  gf_fault_disarm_all();
}

/* A real EFBIG from the kernel: the file size limit is set in a child. */
static void test_efbig(void) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {300000, RLIM_INFINITY};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
      _exit(77);
    char dir[1024];
    int rc = write_ds("efbig", dir, sizeof dir);
    const gf_error_info *e = &g_err;
    bool ok = rc == -EFBIG && strstr(e->message, "shard-000000.gfs") &&
              !has_index(dir);
    if (!ok)
      fprintf(stderr, "EFBIG case: %s: %s\n", gf_err_name(rc), e->message);
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77));
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s", gf_test_tmpdir());
  uint64_t seed = 5;
  for (int i = 0; i < NS; i++) {
    /* A few samples over the writer's 1 MiB buffer go straight to disk. */
    g_len[i] =
        i % 8 == 3 ? (1u << 20) + 4321 : 1000 + (size_t)(i * 7919 % 60000);
    g_data[i] = malloc(g_len[i]);
    for (size_t k = 0; k < g_len[i]; k++)
      g_data[i][k] = (uint8_t)gf_test_rand(&seed);
  }
  char ref[1024];
  CHECK_OK(write_ds("ref", ref, sizeof ref));
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(ref, &ds));
  CHECK(gf_dataset_num_shards(ds) >= 2);
  gf_dataset_close(ds);

  test_writer_faults(ref);
  test_reader_faults(ref);
  test_efbig();
  for (int i = 0; i < NS; i++)
    free(g_data[i]);
  return gf_test_finish();
}
