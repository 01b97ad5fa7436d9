/* The local file system as a storage: objects are regular files opened
 * with descriptors (the reader reads them with io_uring or pread, the
 * dataset index is mapped), folders are listed with readdir, and symbolic
 * links are reported as such and resolved on request. Every system call
 * that tests fail on purpose goes through the fault layer (gf_sys_*). */
#include "io/storage.h"

#include "common/fault.h" /* gf_sys_open, gf_sys_pread_full */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct local_storage {
  gf_storage base;
  char *root; /* the folder, without trailing slashes ("/" stays) */
} local_storage;

static bool local_claims(const char *location) {
  return !strstr(location, "://") || strncmp(location, "file://", 7) == 0;
}

static int local_open(const char *location, const gf_remote_config *remote,
                      gf_storage **out) {
  (void)remote;
  if (strncmp(location, "file://", 7) == 0)
    location += 7;
  local_storage *s = calloc(1, sizeof *s);
  if (!s || !(s->root = strdup(location))) {
    free(s);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  size_t n = strlen(s->root);
  while (n > 1 && s->root[n - 1] == '/')
    s->root[--n] = '\0';
  s->base.ops = &gf_storage_local;
  s->base.display = s->root;
  *out = &s->base;
  return 0;
}

static void local_close(gf_storage *st) {
  local_storage *s = (local_storage *)st;
  free(s->root);
  free(s);
}

/* root/name into buf; -ENAMETOOLONG with context when it does not fit. */
static int full_path(const local_storage *s, const char *name, char *buf,
                     size_t cap) {
  int n = name && name[0] ? snprintf(buf, cap, "%s/%s", s->root, name)
                          : snprintf(buf, cap, "%s", s->root);
  if (n < 0 || (size_t)n >= cap)
    return gf_fail(-ENAMETOOLONG, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "the path of %.200s is longer than %zu bytes", name, cap);
  return 0;
}

static gf_entry_type type_of(mode_t m) {
  return S_ISREG(m)   ? GF_ENTRY_FILE
         : S_ISDIR(m) ? GF_ENTRY_DIR
         : S_ISLNK(m) ? GF_ENTRY_LINK
                      : GF_ENTRY_OTHER;
}

/* A file's identity as its version tag: it changes when the file is
 * replaced (inode) or rewritten (mtime, size). */
static void version_of(const struct stat *st, char *out, size_t cap) {
  snprintf(out, cap, "%llx-%llx-%llx.%09ld", (unsigned long long)st->st_ino,
           (unsigned long long)st->st_size,
           (unsigned long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

static void fill_stat(const struct stat *st, gf_stat *out) {
  out->type = type_of(st->st_mode);
  out->size = (uint64_t)st->st_size;
  version_of(st, out->version, sizeof out->version);
}

static int local_stat(gf_storage *st, const char *name, bool follow,
                      gf_stat *out) {
  local_storage *s = (local_storage *)st;
  char path[PATH_MAX];
  int rc = full_path(s, name, path, sizeof path);
  if (rc < 0)
    return rc;
  struct stat sb;
  if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0) {
    int e = errno;
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "%s", strerror(e));
  }
  fill_stat(&sb, out);
  return 0;
}

static int local_list(gf_storage *st, const char *dir, gf_list_fn fn,
                      void *ctx) {
  local_storage *s = (local_storage *)st;
  char path[PATH_MAX];
  int rc = full_path(s, dir, path, sizeof path);
  if (rc < 0)
    return rc;
  /* A sub-folder is never reached through a link (a listing must not
   * loop); the root itself may be one. */
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                           (dir && dir[0] ? O_NOFOLLOW : 0));
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    int e = errno;
    if (dfd >= 0)
      close(dfd);
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "%s", strerror(e));
  }
  struct dirent *e;
  rc = 0;
  while (rc == 0) {
    errno = 0;
    if (!(e = readdir(d))) {
      if (errno)
        rc = gf_fail(-errno, path, GF_NO_INDEX, GF_NO_INDEX,
                     "reading the folder: %s", strerror(errno));
      break;
    }
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    gf_dirent de = {e->d_name, GF_ENTRY_NONE, UINT64_MAX, NULL};
    switch (e->d_type) {
    case DT_REG:
      de.type = GF_ENTRY_FILE;
      break;
    case DT_DIR:
      de.type = GF_ENTRY_DIR;
      break;
    case DT_LNK:
      de.type = GF_ENTRY_LINK;
      break;
    case DT_UNKNOWN: {
      /* Some file systems do not fill d_type. */
      struct stat sb;
      if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
        int err = errno;
        rc = gf_fail(-err, path, GF_NO_INDEX, GF_NO_INDEX, "stat %s: %s",
                     e->d_name, strerror(err));
        continue;
      }
      de.type = type_of(sb.st_mode);
      break;
    }
    default:
      de.type = GF_ENTRY_OTHER;
      break;
    }
    rc = fn(ctx, &de);
  }
  closedir(d);
  return rc;
}

static int local_resolve(gf_storage *st, const char *name, gf_stat *out,
                         bool *inside, char *target, size_t cap) {
  local_storage *s = (local_storage *)st;
  char path[PATH_MAX];
  int rc = full_path(s, name, path, sizeof path);
  if (rc < 0)
    return rc;
  char *real = realpath(path, NULL);
  if (!real) {
    int e = errno;
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "%s", strerror(e));
  }
  char *root = realpath(s->root, NULL);
  struct stat sb;
  if (!root || stat(real, &sb) != 0) {
    int e = errno;
    free(real);
    free(root);
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "%s", strerror(e));
  }
  size_t rl = strlen(root);
  /* The root "/" holds everything; otherwise root/... */
  *inside = rl == 1 || (strncmp(real, root, rl) == 0 &&
                        (real[rl] == '/' || real[rl] == '\0'));
  fill_stat(&sb, out);
  gf_strlcpy(target, real, cap);
  free(real);
  free(root);
  return 0;
}

static int local_obj_open(gf_storage *st, const char *name, uint32_t flags,
                          gf_object **out) {
  local_storage *s = (local_storage *)st;
  char path[PATH_MAX];
  int rc = full_path(s, name, path, sizeof path);
  if (rc < 0)
    return rc;
  /* Never blocks: a FIFO put in a file's place would hang a plain open.
   * O_NONBLOCK is dropped again once the file is known to be regular:
   * io_uring would otherwise answer -EAGAIN instead of waiting for the
   * disk. */
  int oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  if (flags & GF_OBJ_DIRECT)
    oflags |= O_DIRECT;
  int fd = gf_sys_open(path, oflags, 0);
  if (fd < 0)
    return gf_fail(fd, path, GF_NO_INDEX, GF_NO_INDEX, "%s", gf_strerror(fd));
  struct stat sb;
  int e = 0;
  if (fstat(fd, &sb) != 0)
    e = -errno;
  else if (S_ISDIR(sb.st_mode))
    e = -EISDIR;
  else if (!S_ISREG(sb.st_mode))
    e = -EINVAL;
  if (!e) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
      e = -errno;
  }
  gf_object *o = NULL;
  if (!e && (!(o = calloc(1, sizeof *o)) || !(o->display = strdup(path))))
    e = -ENOMEM;
  if (e) {
    close(fd);
    if (o)
      free(o);
    return gf_fail(e, path, GF_NO_INDEX, GF_NO_INDEX, "%s",
                   e == -EINVAL ? "not a regular file" : gf_strerror(e));
  }
  o->st = st;
  o->fd = fd;
  o->size = (uint64_t)sb.st_size;
  version_of(&sb, o->version, sizeof o->version);
  *out = o;
  return 0;
}

static void local_obj_close(gf_object *o) {
  if (o->fd >= 0)
    close(o->fd);
  free(o->display);
  free(o);
}

static int64_t local_obj_read(gf_object *o, void *buf, uint64_t off,
                              uint64_t len) {
  ssize_t n = gf_sys_pread_full(o->fd, buf, (size_t)len, (off_t)off);
  if (n < 0)
    return gf_fail((int)n, o->display, GF_NO_INDEX, off, "%s",
                   gf_strerror((int)n));
  return n;
}

const gf_storage_ops gf_storage_local = {
    .name = "file",
    .caps = GF_STORAGE_FD | GF_STORAGE_LIST | GF_STORAGE_LINKS,
    .claims = local_claims,
    .open = local_open,
    .close = local_close,
    .stat = local_stat,
    .list = local_list,
    .resolve = local_resolve,
    .obj_open = local_obj_open,
    .obj_close = local_obj_close,
    .obj_read = local_obj_read,
    .engine = NULL,
};
