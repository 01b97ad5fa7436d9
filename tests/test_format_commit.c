/* gf_dir_commit and gf_dir_remove: atomic move into place, -EEXIST without
 * force, the forced swap, the refusals that keep --force from wiping a
 * folder that is not a dataset, and injected faults at each step of the
 * commit: before the publishing rename nothing changes; after it the new
 * dataset is at the target, the old one (--force) is kept, and the error
 * says so. */
#include "common/fault.h"
#include "format/format.h"
#include "testutil.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[512];

/* A finished dataset of n one-byte samples in tmp/name. */
static void make_ds(const char *name, int n, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", g_tmp, name);
  CHECK(mkdir(out, 0755) == 0);
  gf_writer *w = NULL;
  gf_writer_opts o = {.shard_size = 100, .alignment = 1, .index_version = 0};
  CHECK_OK(gf_writer_create(out, &o, &w));
  gf_shape sh = {1, 1, 1, GF_DTYPE_U8};
  for (int i = 0; i < n; i++) {
    uint8_t b = (uint8_t)i;
    CHECK_OK(gf_writer_add(w, &b, 1, GF_CODEC_RAW, &sh, i, NULL));
  }
  CHECK_OK(gf_writer_finish(w));
  gf_writer_destroy(w);
}

static uint64_t count_of(const char *dir) {
  gf_dataset *ds = NULL;
  if (gf_dataset_open(dir, &ds) < 0)
    return UINT64_MAX;
  uint64_t n = gf_dataset_count(ds);
  gf_dataset_close(ds);
  return n;
}

static bool exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

static int entries_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static void put(const char *dir, const char *name, const char *text) {
  char p[1100];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  CHECK_OK(gf_test_write_file(p, text, strlen(text)));
}

static bool has(const char *needle) {
  return strstr(gf_last_error()->message, needle) != NULL;
}

/* The backup "NAME.gf-old.PID" of final. */
static void backup_of(const char *final, char *out, size_t cap) {
  snprintf(out, cap, "%s.gf-old.%ld", final, (long)getpid());
}

/* Commits a new 7-sample dataset to `final` (holding an older 3-sample one
 * when `existing`) with `site` armed to fail its `nth` call with EIO;
 * returns the commit's result. The new folder's path goes to tmp. */
static int faulted_commit(const char *final, bool existing, gf_fault_site site,
                          uint64_t nth, int err, char *tmp, size_t cap) {
  static int seq;
  char name[64];
  if (existing) {
    snprintf(name, sizeof name, "f-old-%d", seq);
    char old[1024];
    make_ds(name, 3, old, sizeof old);
    CHECK(rename(old, final) == 0);
  }
  snprintf(name, sizeof name, "f-new-%d", seq++);
  make_ds(name, 7, tmp, cap);
  CHECK_OK(gf_fault_arm(site, nth, err, 0));
  int rc = gf_dir_commit(tmp, final, existing);
  gf_fault_disarm_all();
  return rc;
}

/* Faults at each step of a commit, into a free name and over an existing
 * dataset (--force). */
static void fault_steps(void) {
  char final[1024], t[1024], bak[1100];
  snprintf(final, sizeof final, "%s/ff", g_tmp);
  backup_of(final, bak, sizeof bak);

  /* The NOREPLACE rename fails: nothing moved. */
  CHECK_ERR(faulted_commit(final, false, GF_FAULT_RENAME, 1, -EIO, t, 1024),
            -EIO);
  CHECK(has(strerror(EIO)) && has("ff"));
  CHECK(!exists(final) && count_of(t) == 7);
  CHECK_OK(gf_dir_remove(t));
  /* Without RENAME_NOREPLACE (EINVAL), the plain rename takes over. */
  CHECK_OK(faulted_commit(final, false, GF_FAULT_RENAME, 1, -EINVAL, t, 1024));
  CHECK(count_of(final) == 7 && !exists(t));
  CHECK_OK(gf_dir_remove(final));

  /* After the publishing rename, opening or fsyncing the folder fails: the
   * new dataset is in place, the error says so and that it is not durable.
   */
  gf_fault_site after[] = {GF_FAULT_OPEN, GF_FAULT_FSYNC};
  for (int i = 0; i < 2; i++) {
    CHECK_ERR(faulted_commit(final, false, after[i], 1, -EIO, t, 1024), -EIO);
    CHECK(has("the new dataset is in place at") && has(final));
    CHECK(has("making the rename durable failed") && has(strerror(EIO)));
    CHECK(has("a crash now may"));
    CHECK(count_of(final) == 7 && !exists(t) && !exists(bak));
    CHECK_OK(gf_dir_remove(final));
  }

  /* --force. Calls: rename 1 NOREPLACE (EEXIST), open 1 and 2 and pread 1
   * check the old dataset, rename 2 the exchange, open 3 and fsync 1 make it
   * durable. Before the exchange, a fault changes nothing. */
  struct {
    gf_fault_site site;
    uint64_t nth;
  } before[] = {{GF_FAULT_RENAME, 1},
                {GF_FAULT_OPEN, 1},
                {GF_FAULT_OPEN, 2},
                {GF_FAULT_PREAD, 1},
                {GF_FAULT_RENAME, 2}};
  for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
    CHECK_ERR(faulted_commit(final, true, before[i].site, before[i].nth, -EIO,
                             t, 1024),
              -EIO);
    /* An I/O error is reported as one, not as "not a dataset". */
    CHECK(has(strerror(EIO)) && has("ff"));
    CHECK(count_of(final) == 3 && count_of(t) == 7 && !exists(bak));
    CHECK_OK(gf_dir_remove(t));
    CHECK_OK(gf_dir_remove(final));
  }
  /* Without RENAME_EXCHANGE the fallback moves the old one aside, then
   * removes it once the new one is durable. */
  CHECK_OK(faulted_commit(final, true, GF_FAULT_RENAME, 2, -EINVAL, t, 1024));
  CHECK(count_of(final) == 7 && !exists(t) && !exists(bak));
  CHECK_OK(gf_dir_remove(final));

  /* After the exchange: the new dataset is in place, the old one is kept
   * whole at the backup the message names, nothing is left at tmp. */
  struct {
    gf_fault_site site;
    uint64_t nth;
  } late[] = {{GF_FAULT_OPEN, 3}, {GF_FAULT_FSYNC, 1}};
  for (size_t i = 0; i < 2; i++) {
    CHECK_ERR(
        faulted_commit(final, true, late[i].site, late[i].nth, -EIO, t, 1024),
        -EIO);
    CHECK(has("the new dataset is in place at") && has(final));
    CHECK(has("making the rename durable failed") && has(strerror(EIO)));
    CHECK(has("bring back the old one") && has(bak));
    CHECK(count_of(final) == 7 && count_of(bak) == 3 && !exists(t));
    CHECK_OK(gf_dir_remove(bak));
    CHECK_OK(gf_dir_remove(final));
  }
  /* ... and when even the move to the backup fails, the old one stays at
   * tmp's name, which the message gives. */
  {
    char old[1024];
    make_ds("f-old-last", 3, old, sizeof old);
    CHECK(rename(old, final) == 0);
    make_ds("f-new-last", 7, t, sizeof t);
    CHECK_OK(gf_fault_arm(GF_FAULT_FSYNC, 1, -EIO, 0));
    CHECK_OK(gf_fault_arm(GF_FAULT_RENAME, 3, -EIO, 0));
    CHECK_ERR(gf_dir_commit(t, final, true), -EIO);
    gf_fault_disarm_all();
    CHECK(has("the new dataset is in place at") && has(t));
    CHECK(count_of(final) == 7 && count_of(t) == 3 && !exists(bak));
    CHECK_OK(gf_dir_remove(t));
    CHECK_OK(gf_dir_remove(final));
  }
}

int main(void) {
  snprintf(g_tmp, sizeof g_tmp, "%s", gf_test_tmpdir());
  char final[1024], t1[1024], t2[1024], t3[1024];
  snprintf(final, sizeof final, "%s/final", g_tmp);

  /* Into a free name. */
  make_ds("t1", 3, t1, sizeof t1);
  CHECK_OK(gf_dir_commit(t1, final, false));
  CHECK(!exists(t1));
  CHECK(count_of(final) == 3);

  /* Without force an existing target stays, and so does the new one. */
  make_ds("t2", 5, t2, sizeof t2);
  CHECK_ERR(gf_dir_commit(t2, final, false), -EEXIST);
  CHECK(strstr(gf_last_error()->message, "final") != NULL);
  CHECK(strstr(gf_last_error()->message, "--force") != NULL);
  CHECK(count_of(final) == 3);
  CHECK(count_of(t2) == 5);

  /* With force: swapped, and the old dataset is gone. */
  int before = entries_in(g_tmp);
  CHECK_OK(gf_dir_commit(t2, final, true));
  CHECK(count_of(final) == 5);
  CHECK(!exists(t2));
  CHECK(entries_in(g_tmp) == before - 1); /* t2 went, nothing else came */

  /* A trailing slash is the same folder. */
  make_ds("t3", 2, t3, sizeof t3);
  char slashed[1100];
  snprintf(slashed, sizeof slashed, "%s/", final);
  CHECK_OK(gf_dir_commit(t3, slashed, true));
  CHECK(count_of(final) == 2);

  /* Force never replaces what is not a dataset. */
  char user[1024], t4[1024];
  snprintf(user, sizeof user, "%s/user", g_tmp);
  CHECK(mkdir(user, 0755) == 0);
  put(user, "thesis.tex", "years of work");
  make_ds("t4", 4, t4, sizeof t4);
  CHECK_ERR(gf_dir_commit(t4, user, true), -ENOTEMPTY);
  CHECK(strstr(gf_last_error()->message, "thesis.tex") != NULL);
  CHECK(strstr(gf_last_error()->message, "user") != NULL);
  CHECK(entries_in(user) == 1);
  CHECK(count_of(t4) == 4);
  /* ... nor a dataset-looking folder with anything else in it ... */
  put(user, "index.gfi", "GFEEDIDX");
  CHECK_ERR(gf_dir_commit(t4, user, true), -ENOTEMPTY);
  CHECK(entries_in(user) == 2);
  /* ... nor dataset names without the index magic ... */
  char fake[1024];
  snprintf(fake, sizeof fake, "%s/fake", g_tmp);
  CHECK(mkdir(fake, 0755) == 0);
  put(fake, "index.gfi", "not an index at all");
  put(fake, "shard-000000.gfs", "x");
  CHECK_ERR(gf_dir_commit(t4, fake, true), -ENOTEMPTY);
  CHECK(strstr(gf_last_error()->message, "index") != NULL);
  CHECK(entries_in(fake) == 2);
  /* ... nor a sub-folder named like a shard. */
  char sub[1024];
  snprintf(sub, sizeof sub, "%s/withsub", g_tmp);
  CHECK(mkdir(sub, 0755) == 0);
  char subsub[1100];
  snprintf(subsub, sizeof subsub, "%s/shard-000000.gfs", sub);
  CHECK(mkdir(subsub, 0755) == 0);
  put(sub, "index.gfi", "GFEEDIDX");
  CHECK_ERR(gf_dir_commit(t4, sub, true), -ENOTEMPTY);
  CHECK(strstr(gf_last_error()->message, "shard-000000.gfs") != NULL);
  CHECK(exists(subsub));
  /* ... nor a file or a symbolic link. */
  char file[1024], link[1024];
  snprintf(file, sizeof file, "%s/plain", g_tmp);
  CHECK_OK(gf_test_write_file(file, "data", 4));
  CHECK_ERR(gf_dir_commit(t4, file, true), -ENOTDIR);
  snprintf(link, sizeof link, "%s/link", g_tmp);
  CHECK(symlink(final, link) == 0);
  CHECK_ERR(gf_dir_commit(t4, link, true), -ENOTDIR);
  CHECK(strstr(gf_last_error()->message, "symbolic link") != NULL);
  CHECK(count_of(final) == 2);
  CHECK(count_of(t4) == 4);
  /* An empty folder may be replaced. */
  char empty[1024];
  snprintf(empty, sizeof empty, "%s/empty", g_tmp);
  CHECK(mkdir(empty, 0755) == 0);
  CHECK_ERR(gf_dir_commit(t4, empty, false), -EEXIST);
  CHECK_OK(gf_dir_commit(t4, empty, true));
  CHECK(count_of(empty) == 4);

  /* Only a finished dataset is committed. */
  char unfinished[1024];
  snprintf(unfinished, sizeof unfinished, "%s/unfinished", g_tmp);
  CHECK(mkdir(unfinished, 0755) == 0);
  put(unfinished, "shard-000000.gfs", "x");
  put(unfinished, "index.gfi.tmp", "x");
  CHECK_ERR(gf_dir_commit(unfinished, final, true), -ENOENT);
  CHECK(count_of(final) == 2);

  /* Remove: a crashed writer's folder goes entirely... */
  CHECK_OK(gf_dir_remove(unfinished));
  CHECK(!exists(unfinished));
  /* ... a folder with other files loses only the dataset files ... */
  put(user, "shard-000001.gfs", "x");
  CHECK(gf_dir_remove(user) == -ENOTEMPTY);
  CHECK(strstr(gf_last_error()->message, "thesis.tex") != NULL);
  CHECK(entries_in(user) == 1);
  /* ... a link is refused, its target untouched ... */
  CHECK_ERR(gf_dir_remove(link), -ENOTDIR);
  CHECK(count_of(final) == 2);
  /* ... and a dataset goes. */
  CHECK_OK(gf_dir_remove(final));
  CHECK(!exists(final));
  CHECK_ERR(gf_dir_remove(final), -ENOENT);
  CHECK_OK(gf_dir_remove(empty));

  fault_steps();
  return gf_test_finish();
}
