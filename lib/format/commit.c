/* Atomic commit of a finished dataset folder, and removal of one. A crash
 * at any point leaves the old dataset or the new one in place: the switch
 * is one rename (or one RENAME_EXCHANGE), made durable by fsync of the
 * parent folder. Replacing and removing touch only a dataset's own files,
 * so `--force` cannot wipe a folder that holds anything else. */
#include "format/format.h"

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

static int fsync_parent(const char *path) {
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", path);
  const char *parent = dirname(copy);
  int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return gf_fail(-e, parent, GF_NO_INDEX, GF_NO_INDEX,
                   "opening the folder to make the rename durable: %s",
                   strerror(e));
  }
  int rc = 0;
  if (fsync(fd) != 0) {
    int e = errno;
    rc =
        gf_fail(-e, parent, GF_NO_INDEX, GF_NO_INDEX, "fsync: %s", strerror(e));
  }
  close(fd);
  return rc;
}

/* 0 when `dir` (a folder, not a link) is empty or a gpufeed dataset: only
 * dataset files, and an index.gfi with the index magic. */
static int check_replaceable(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    int e = errno;
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
    char magic[8] = {0};
    int fd = openat(dfd, GF_INDEX_NAME,
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pread(fd, magic, sizeof magic, 0) : -1;
    if (fd >= 0)
      close(fd);
    if (n != (ssize_t)sizeof magic || memcmp(magic, GF_INDEX_MAGIC, 8) != 0)
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
 * aside, move the new one in, put the old one back if that fails. Not
 * atomic: a crash between the renames leaves no dataset at `final` (the
 * old one is kept beside it). */
static int swap_fallback(const char *tmp, const char *final, char *old,
                         size_t old_cap) {
  snprintf(old, old_cap, "%s.gf-old.%ld", final, (long)getpid());
  if (rename(final, old) != 0) {
    int e = errno;
    return gf_fail(-e, final, GF_NO_INDEX, GF_NO_INDEX,
                   "moving the old dataset aside to %s: %s", old, strerror(e));
  }
  if (rename(tmp, final) != 0) {
    int e = errno;
    if (rename(old, final) != 0)
      gf_log(GF_LOG_ERROR, "%s: could not move the old dataset back from %s",
             final, old);
    return gf_fail(-e, final, GF_NO_INDEX, GF_NO_INDEX,
                   "moving %s into place: %s", tmp, strerror(e));
  }
  return 0;
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

  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
    goto durable;
  int e = errno;
  if (e == EINVAL || e == ENOSYS) {
    /* No RENAME_NOREPLACE here: check, then rename. Between the two only an
     * empty folder could be replaced by rename(). */
    if (lstat(final, &st) != 0 && errno == ENOENT) {
      if (rename(tmp, final) == 0)
        goto durable;
      e = errno;
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
  char old[PATH_MAX + 32];
  if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
    /* The old dataset now sits at tmp's name. */
    snprintf(old, sizeof old, "%s", tmp);
  } else {
    e = errno;
    if (e != EINVAL && e != ENOSYS)
      return gf_fail(-e, final, GF_NO_INDEX, GF_NO_INDEX,
                     "exchanging it with %s: %s", tmp, strerror(e));
    if ((rc = swap_fallback(tmp, final, old, sizeof old)) < 0)
      return rc;
  }
  if ((rc = fsync_parent(final)) < 0)
    return rc;
  if (gf_dir_remove(old) < 0)
    gf_log(GF_LOG_WARN,
           "committed %s, but could not remove the old dataset: "
           "%s",
           final, gf_last_error()->message);
  return fsync_parent(old);

durable:
  rc = fsync_parent(final);
  if (rc == 0)
    rc = fsync_parent(tmp); /* tmp's folder lost an entry (often the same) */
  return rc;
}
