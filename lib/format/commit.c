/* Atomic commit of a finished dataset folder, and removal of one. A crash
 * at any point leaves the old dataset or the new one in place: the switch
 * is one rename (or one RENAME_EXCHANGE), made durable by fsync of the
 * parent folder. Replacing and removing touch only a dataset's own files,
 * so `--force` cannot wipe a folder that holds anything else. */
#include "format/format.h"

#include "common/fault.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h> /* dirname */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* index.gfi, index.gfi.tmp or shard-NNNNNN.gfs (six digits or more). */
static bool is_dataset_file(const char *name) {
  if (!strcmp(name, GF_INDEX_NAME) || !strcmp(name, GF_INDEX_TMP_NAME))
    return true;
  if (strncmp(name, "shard-", 6) != 0)
    return false;
  const char *p = name + 6;
  size_t digits = 0;
  while (p[digits] >= '0' && p[digits] <= '9')
    digits++;
  return digits >= 6 && digits <= 10 && !strcmp(p + digits, ".gfs");
}

/* Copies path without trailing slashes (keeping a lone "/"). */
static int clean_path(const char *in, char *out, size_t cap) {
  size_t n = strlen(in);
  while (n > 1 && in[n - 1] == '/')
    n--;
  if (n == 0 || n >= cap)
    return -ENAMETOOLONG;
  memcpy(out, in, n);
  out[n] = '\0';
  return 0;
}

/* The folder that holds `path`, into out. */
static void parent_of(const char *path, char *out, size_t cap) {
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", path);
  snprintf(out, cap, "%s", dirname(copy));
}

/* fsync of the folder that holds `path`, so a rename there survives a
 * crash. */
static int fsync_parent(const char *path) {
  char parent[PATH_MAX];
  parent_of(path, parent, sizeof parent);
  int fd = gf_sys_open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0)
    return gf_fail(fd, parent, GF_NO_INDEX, GF_NO_INDEX,
                   "opening the folder to make the rename durable: %s",
                   strerror(-fd));
  int rc = gf_sys_fsync(fd);
  if (rc < 0)
    rc = gf_fail(rc, parent, GF_NO_INDEX, GF_NO_INDEX, "fsync: %s",
                 strerror(-rc));
  close(fd);
  return rc;
}

/* 0 when `dir` (a folder, not a link) is empty or a gpufeed dataset: only
 * dataset files, and an index.gfi with the index magic. */
static int check_replaceable(const char *dir) {
  int dfd =
      gf_sys_open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (dfd < 0) {
    int e = -dfd;
    struct stat st;
    if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
      return gf_fail(-ENOTDIR, dir, GF_NO_INDEX, GF_NO_INDEX,
                     "is a symbolic link, not a dataset folder; refusing to "
                     "replace it");
    if (e == ENOTDIR)
      return gf_fail(-ENOTDIR, dir, GF_NO_INDEX, GF_NO_INDEX,
                     "exists and is not a folder; refusing to replace it");
    return gf_fail(-e, dir, GF_NO_INDEX, GF_NO_INDEX, "cannot open: %s",
                   strerror(e));
  }
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return gf_fail(-e, dir, GF_NO_INDEX, GF_NO_INDEX, "cannot list: %s",
                   strerror(e));
  }
  int rc = 0;
  bool any = false;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    any = true;
    struct stat st;
    if (!is_dataset_file(e->d_name) ||
        fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode)) {
      rc = gf_fail(-ENOTEMPTY, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "holds \"%s\", which is not a gpufeed dataset file; "
                   "refusing to replace a folder that is not a gpufeed "
                   "dataset (remove it yourself if it should go)",
                   e->d_name);
      break;
    }
  }
  if (rc == 0 && any) {
    char magic[8] = {0}, index[PATH_MAX + 16];
    snprintf(index, sizeof index, "%s/%s", dir, GF_INDEX_NAME);
    int fd = gf_sys_open(index, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                         0);
    ssize_t n = fd >= 0 ? gf_sys_pread_full(fd, magic, sizeof magic, 0) : fd;
    if (fd >= 0)
      close(fd);
    /* An I/O error says nothing about what the folder holds: report it as
     * such, not as "not a dataset". */
    if (n < 0 && n != -ENOENT && n != -ELOOP)
      rc = gf_fail((int)n, index, GF_NO_INDEX, GF_NO_INDEX,
                   "reading it to check that %s is a gpufeed dataset before "
                   "replacing it: %s",
                   dir, strerror((int)-n));
    else if (n != (ssize_t)sizeof magic ||
             memcmp(magic, GF_INDEX_MAGIC, 8) != 0)
      rc = gf_fail(-ENOTEMPTY, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "is not a gpufeed dataset (no %s with the index magic); "
                   "refusing to replace it",
                   GF_INDEX_NAME);
  }
  closedir(d);
  return rc;
}

int gf_dir_remove(const char *dir) {
  if (!dir || !dir[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_dir_remove: no folder");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    int e = errno;
    return gf_fail(e == ELOOP ? -ENOTDIR : -e, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot remove the dataset folder: %s",
                   e == ELOOP ? "it is a symbolic link" : strerror(e));
  }
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return gf_fail(-e, dir, GF_NO_INDEX, GF_NO_INDEX, "cannot list: %s",
                   strerror(e));
  }
  int rc = 0;
  char other[256] = "";
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    if (!is_dataset_file(e->d_name)) {
      if (!other[0])
        snprintf(other, sizeof other, "%s", e->d_name);
      continue;
    }
    if (unlinkat(dfd, e->d_name, 0) != 0 && errno != ENOENT && rc == 0) {
      int err = errno;
      rc = gf_fail(-err, dir, GF_NO_INDEX, GF_NO_INDEX, "removing %s: %s",
                   e->d_name, strerror(err));
    }
  }
  closedir(d);
  if (rc < 0)
    return rc;
  if (rmdir(dir) != 0) {
    int err = errno;
    if (other[0])
      return gf_fail(-err, dir, GF_NO_INDEX, GF_NO_INDEX,
                     "removed the dataset files but kept the folder: it also "
                     "holds \"%s\", which is not a dataset file",
                     other);
    return gf_fail(-err, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "removing the folder: %s", strerror(err));
  }
  return 0;
}

/* Without RENAME_EXCHANGE (file systems that lack it): move the old one
 * aside to `old`, move the new one in, put the old one back if that fails.
 * Not atomic: a crash between the renames leaves no dataset at `final` (the
 * old one is kept beside it). */
static int swap_fallback(const char *tmp, const char *final, const char *old) {
  int rc = gf_sys_rename(final, old);
  if (rc < 0)
    return gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                   "moving the old dataset aside to %s: %s", old,
                   strerror(-rc));
  rc = gf_sys_rename(tmp, final);
  if (rc < 0) {
    int back = gf_sys_rename(old, final);
    return gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                   "moving %s into place: %s%s%s", tmp, strerror(-rc),
                   back < 0 ? "; the old dataset could not be moved back "
                              "and is kept at "
                            : "",
                   back < 0 ? old : "");
  }
  return 0;
}

/* Reports a failed fsync (or open) of the folder after the rename that
 * published the new dataset: it is in place and complete, only its
 * durability is in doubt, so nothing may be removed and the caller must
 * not say that nothing changed. `old` is where the replaced dataset is
 * kept (NULL: there was none). The code is the fsync's. */
static int fail_not_durable(int rc, const char *final, const char *old) {
  char why[sizeof gf_last_error()->message];
  memcpy(why, gf_last_error()->message, sizeof why);
  why[sizeof why - 1] = '\0';
  if (old)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the new dataset is in place at %s but making the rename "
                   "durable failed: %s (a crash now may bring back the old "
                   "one); the old dataset is kept at %s",
                   final, why, old);
  return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "the new dataset is in place at %s but making the rename "
                 "durable failed: %s (a crash now may undo the rename and "
                 "leave no dataset at %s)",
                 final, why, final);
}

int gf_dir_commit(const char *tmp_in, const char *final_in, bool force) {
  char tmp[PATH_MAX], final[PATH_MAX];
  int rc;
  if (!tmp_in || !final_in || clean_path(tmp_in, tmp, sizeof tmp) < 0 ||
      clean_path(final_in, final, sizeof final) < 0)
    return gf_fail(-EINVAL, final_in, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_dir_commit: two folder paths are required");
  /* Only a finished dataset is committed: a folder without its index would
   * replace a good dataset with nothing usable. */
  char index[PATH_MAX + 16];
  snprintf(index, sizeof index, "%s/%s", tmp, GF_INDEX_NAME);
  struct stat st;
  if (lstat(index, &st) != 0 || !S_ISREG(st.st_mode))
    return gf_fail(-ENOENT, tmp, GF_NO_INDEX, GF_NO_INDEX,
                   "has no %s: not a finished dataset, nothing committed",
                   GF_INDEX_NAME);

  rc = gf_sys_renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE);
  if (rc == 0)
    goto published;
  int e = -rc;
  if (e == EINVAL || e == ENOSYS) {
    /* No RENAME_NOREPLACE here: check, then rename. Between the two only an
     * empty folder could be replaced by rename(). */
    if (lstat(final, &st) != 0 && errno == ENOENT) {
      if ((rc = gf_sys_rename(tmp, final)) == 0)
        goto published;
      e = -rc;
    } else {
      e = EEXIST;
    }
  }
  if (e != EEXIST && e != ENOTEMPTY)
    return gf_fail(-e, final, GF_NO_INDEX, GF_NO_INDEX,
                   "moving %s into place: %s%s", tmp, strerror(e),
                   e == EXDEV ? " (write the temporary folder beside the "
                                "target, on the same file system)"
                              : "");
  if (!force)
    return gf_fail(-EEXIST, final, GF_NO_INDEX, GF_NO_INDEX,
                   "already exists; use --force to replace it");
  rc = check_replaceable(final);
  if (rc < 0)
    return rc;
  /* Where the old dataset goes if it cannot be removed safely: a visible
   * name beside the target, so the user can find it. */
  char backup[PATH_MAX + 32];
  snprintf(backup, sizeof backup, "%s.gf-old.%ld", final, (long)getpid());
  const char *old; /* where the old dataset sits once the new one is in */
  rc = gf_sys_renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE);
  if (rc == 0) {
    old = tmp;
  } else {
    if (rc != -EINVAL && rc != -ENOSYS)
      return gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                     "exchanging it with %s: %s", tmp, strerror(-rc));
    if ((rc = swap_fallback(tmp, final, backup)) < 0)
      return rc;
    old = backup;
  }
  /* From here on the new dataset is at `final`. The old one is removed only
   * once the switch is durable: before that, a crash may bring it back at
   * `final`, and it must then still be whole. */
  if ((rc = fsync_parent(final)) < 0) {
    if (old == tmp && gf_sys_rename(tmp, backup) == 0)
      old = backup;
    return fail_not_durable(rc, final, old);
  }
  /* No fsync after the removal: the new dataset is durable already, and a
   * crash could at worst bring back the removed folder's name. */
  if (gf_dir_remove(old) < 0) {
    char why[sizeof gf_last_error()->message];
    memcpy(why, gf_last_error()->message, sizeof why);
    why[sizeof why - 1] = '\0';
    if (old == tmp && gf_sys_rename(tmp, backup) == 0)
      old = backup;
    gf_log(GF_LOG_WARN,
           "committed %s, but could not remove the old dataset (what is "
           "left of it is at %s): %s",
           final, old, why);
  }
  return 0;

published:
  rc = fsync_parent(final);
  if (rc == 0) {
    /* tmp's folder lost an entry; often it is the same folder. */
    char a[PATH_MAX], b[PATH_MAX];
    parent_of(final, a, sizeof a);
    parent_of(tmp, b, sizeof b);
    if (strcmp(a, b) != 0)
      rc = fsync_parent(tmp);
  }
  return rc < 0 ? fail_not_durable(rc, final, NULL) : 0;
}
