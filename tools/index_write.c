/* `gpufeed index`, one shard (cli.h's gfc_index_shard): the shard opened
 * through the storage of its folder, its tar headers scanned (tar_scan.h),
 * its DALI v1.2 index made (wds_index.h) and stored where a reader looks
 * for it:
 *   - a local file: written to a temporary file beside it, synced, and
 *     renamed into place, then its folder synced: a crash leaves the old
 *     index or the new one, never part of one;
 *   - an S3 object: one PUT, which the store makes visible whole or not at
 *     all (io/s3_upload.h);
 *   - under --out DIR: a local file there, named after the shard's.
 * The indexing threads share the storages (one a folder, opened at first
 * use) and the S3 uploaders (one a bucket). */
#include "cli.h"

#include "common/common.h"
#include "common/fault.h" /* gf_sys_*: the write path's fault sites */
#include "format/tar_scan.h"
#include "format/wds_index.h"
#include "format/wds_sums.h"
#include "io/s3_client.h"
#include "io/s3_upload.h"
#include "io/storage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h> /* RENAME_NOREPLACE */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CMD "index"
/* Requests in flight on one bucket's uploader: each index is one PUT. */
#define UPLOAD_PARALLEL 16u

typedef struct folder {
  char *dir; /* the location the storage is opened at; NULL: a free slot */
  gf_storage *st;
} folder;

typedef struct bucket {
  char name[64];
  gf_s3_client *c;
  gf_s3_uploader *u;
} bucket;

struct gfc_index_io {
  const gfc_index_opts *o;
  const atomic_int *interrupted;
  mode_t file_mode; /* of an index file: what a plain create gives */
  atomic_uint_fast64_t members;
  pthread_mutex_t mu; /* what follows */
  folder *folders;    /* open addressing, a power of two of slots */
  size_t nfolders, cap;
  bucket *buckets;
  size_t nbuckets;
  bool cancelled;
};

bool gfc_is_http(const char *location) {
  return strncasecmp(location, "http://", 7) == 0 ||
         strncasecmp(location, "https://", 8) == 0;
}

/* location split into the folder that its storage is opened at and the
 * shard's name there, both malloc'd. A URL's query stays with the folder
 * (the storage adds it to every request), so the name never holds it.
 * Returns 0, -EINVAL (the location ends with '/') or -ENOMEM. */
static int split(const char *loc, char **dir, char **base) {
  const char *scheme = strstr(loc, "://");
  if (!scheme)
    return gf_location_split(loc, dir, base);
  size_t end = (size_t)(scheme + 3 - loc) + strcspn(scheme + 3, "?#");
  char *path = strndup(loc, end);
  if (!path)
    return -ENOMEM;
  int rc = gf_location_split(path, dir, base);
  free(path);
  if (rc == 0 && loc[end]) {
    size_t dl = strlen(*dir), ql = strlen(loc + end);
    char *d = realloc(*dir, dl + ql + 1);
    if (!d) {
      free(*dir);
      free(*base);
      *dir = *base = NULL;
      return -ENOMEM;
    }
    memcpy(d + dl, loc + end, ql + 1);
    *dir = d;
  }
  return rc;
}

int gfc_index_out_name(const char *location, char *buf, size_t cap) {
  char *dir, *base;
  int rc = split(location, &dir, &base);
  if (rc < 0)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s",
                   rc == -ENOMEM ? "out of memory"
                                 : "not a shard's location (it ends with '/')");
  rc = gf_wds_sidecar_name(base, buf, cap);
  free(dir);
  free(base);
  return rc;
}

int gfc_index_io_open(const gfc_index_opts *o, const atomic_int *interrupted,
                      gfc_index_io **out) {
  *out = NULL;
  gfc_index_io *io = calloc(1, sizeof *io);
  if (!io) {
    gfc_error(CMD, "out of memory");
    return -ENOMEM;
  }
  io->o = o;
  io->interrupted = interrupted;
  /* Read while this is the only thread: umask() sets it as it reads. */
  mode_t mask = umask(022);
  umask(mask);
  io->file_mode = 0666 & ~mask;
  pthread_mutex_init(&io->mu, NULL);
  if (o->out) {
    /* Made when missing (its parent must exist), as build makes OUT. */
    struct stat st;
    int e = 0;
    if (stat(o->out, &st) != 0) {
      e = errno;
      if (e == ENOENT)
        e = mkdir(o->out, 0777) == 0 && stat(o->out, &st) == 0 ? 0 : errno;
    }
    if (e || !S_ISDIR(st.st_mode)) {
      gfc_error(CMD, "--out %s: %s", o->out, e ? strerror(e) : "not a folder");
      gfc_index_io_close(io);
      return e ? -e : -ENOTDIR;
    }
  }
  *out = io;
  return 0;
}

void gfc_index_io_close(gfc_index_io *io) {
  if (!io)
    return;
  for (size_t i = 0; i < io->cap; i++) {
    gf_storage_close(io->folders[i].st);
    free(io->folders[i].dir);
  }
  free(io->folders);
  for (size_t i = 0; i < io->nbuckets; i++) {
    gf_s3_uploader_destroy(io->buckets[i].u);
    gf_s3_client_free(io->buckets[i].c);
  }
  free(io->buckets);
  pthread_mutex_destroy(&io->mu);
  free(io);
}

void gfc_index_io_cancel(gfc_index_io *io) {
  pthread_mutex_lock(&io->mu);
  io->cancelled = true;
  for (size_t i = 0; i < io->nbuckets; i++)
    gf_s3_uploader_cancel(io->buckets[i].u);
  pthread_mutex_unlock(&io->mu);
}

uint64_t gfc_index_io_members(gfc_index_io *io) {
  return atomic_load(&io->members);
}

static size_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (size_t)h;
}

/* The slot of dir in the table, or the free slot where it would go. */
static folder *slot_of(folder *tab, size_t cap, const char *dir) {
  size_t i = hash(dir) & (cap - 1);
  while (tab[i].dir && strcmp(tab[i].dir, dir) != 0)
    i = (i + 1) & (cap - 1);
  return &tab[i];
}

/* The storage of folder dir, opened at its first use and kept to the end
 * (many shards share a folder: one client, its connections, its
 * credentials). Under io->mu. Returns 0 or the open's error. */
static int storage_of(gfc_index_io *io, const char *dir, gf_storage **st) {
  if (io->cap && slot_of(io->folders, io->cap, dir)->dir) {
    *st = slot_of(io->folders, io->cap, dir)->st;
    return 0;
  }
  if ((io->nfolders + 1) * 2 > io->cap) {
    size_t cap = io->cap ? io->cap * 2 : 16;
    folder *tab = calloc(cap, sizeof *tab);
    if (!tab)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    for (size_t i = 0; i < io->cap; i++)
      if (io->folders[i].dir)
        *slot_of(tab, cap, io->folders[i].dir) = io->folders[i];
    free(io->folders);
    io->folders = tab;
    io->cap = cap;
  }
  char *copy = strdup(dir);
  if (!copy)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  int rc = gf_storage_open(dir, &io->o->remote, st);
  if (rc < 0) {
    free(copy);
    return rc;
  }
  *slot_of(io->folders, io->cap, dir) = (folder){copy, *st};
  io->nfolders++;
  return 0;
}

/* The uploader of the bucket of s3:// location loc (one client at the
 * bucket's root: keys are whole), made at its first use. Under io->mu.
 * Returns 0 or a negative code with the error recorded. */
static int uploader_of(gfc_index_io *io, const char *loc, gf_s3_uploader **u) {
  const char *b = loc + 5;
  size_t n = strcspn(b, "/");
  if (io->cancelled)
    return gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX, "interrupted");
  for (size_t i = 0; i < io->nbuckets; i++)
    if (strlen(io->buckets[i].name) == n &&
        strncmp(io->buckets[i].name, b, n) == 0) {
      *u = io->buckets[i].u;
      return 0;
    }
  bucket k = {{0}, NULL, NULL};
  if (n >= sizeof k.name)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "a bucket name has 3 to 63 characters");
  memcpy(k.name, b, n);
  bucket *v = realloc(io->buckets, (io->nbuckets + 1) * sizeof *v);
  if (!v)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  io->buckets = v;
  char root[80], why[600];
  snprintf(root, sizeof root, "s3://%s", k.name);
  int rc = gf_s3_client_open(root, &io->o->remote, &k.c);
  if (rc == 0 &&
      (rc = gf_s3_uploader_create(k.c, &io->o->remote, GF_S3_PART_MIN,
                                  UPLOAD_PARALLEL, &k.u, why, sizeof why)) < 0)
    gf_fail(rc, root, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  if (rc < 0) {
    gf_s3_client_free(k.c);
    return rc;
  }
  io->buckets[io->nbuckets++] = k;
  *u = k.u;
  return 0;
}

/* The members a scan found, their paths copied (valid during the callback
 * only). */
typedef struct members {
  gfc_index_io *io;
  gf_tar_member *v;
  uint64_t n, cap;
} members;

static int add_member(void *ctx, const gf_tar_member *m) {
  members *s = ctx;
  if (*s->io->interrupted)
    return gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX, "interrupted");
  if (s->n == s->cap) {
    uint64_t c = s->cap ? s->cap * 2 : 256;
    gf_tar_member *v =
        c <= SIZE_MAX / sizeof *v ? realloc(s->v, (size_t)c * sizeof *v) : NULL;
    if (!v)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for the shard's member list");
    s->v = v;
    s->cap = c;
  }
  s->v[s->n] = *m;
  if (!(s->v[s->n].path = strdup(m->path)))
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the shard's member list");
  s->n++;
  atomic_fetch_add(&s->io->members, 1);
  return 0;
}

static void members_free(members *s) {
  for (uint64_t i = 0; i < s->n; i++)
    free((char *)s->v[i].path);
  free(s->v);
}

/* Compressed shards: by name, and by their first bytes when the scan
 * found no tar header. The tool that decompresses them, or NULL. */
static const char *compressed_name(const char *base, const char **suffix) {
  static const char *const z[][2] = {{".tar.gz", "gunzip"},
                                     {".tgz", "gunzip"},
                                     {".tar.zst", "zstd -d"},
                                     {".tar.xz", "xz -d"},
                                     {".tar.bz2", "bunzip2"}};
  size_t n = strlen(base);
  for (size_t i = 0; i < sizeof z / sizeof z[0]; i++) {
    size_t k = strlen(z[i][0]);
    if (n >= k && strcasecmp(base + n - k, z[i][0]) == 0) {
      *suffix = z[i][0];
      return z[i][1];
    }
  }
  return NULL;
}

static const char *compressed_magic(gf_object *obj, const char **kind) {
  uint8_t b[10] = {0};
  int64_t n = gf_object_read_upto(obj, b, 0, sizeof b);
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    *kind = "gzip data: its first bytes are 1f 8b";
    return "gunzip";
  }
  if (n >= 4 && !memcmp(b, "\x28\xb5\x2f\xfd", 4)) {
    *kind = "zstd data";
    return "zstd -d";
  }
  if (n >= 6 && !memcmp(b,
                        "\xfd"
                        "7zXZ\0",
                        6)) {
    *kind = "xz data";
    return "xz -d";
  }
  if (n >= 10 && !memcmp(b, "BZh", 3) && b[3] >= '1' && b[3] <= '9' &&
      (!memcmp(b + 4, "1AY&SY", 6) ||
       !memcmp(b + 4, "\x17\x72\x45\x38\x50\x90", 6))) {
    *kind = "bzip2 data";
    return "bunzip2";
  }
  return NULL;
}

/* After a failed scan: the last member read, where the message does not
 * name a member already (a damaged or cut header names only its byte). */
static void name_last_member(const members *s) {
  const gf_error_info *e = gf_last_error();
  if (!s->n || e->code == -ECANCELED || strstr(e->message, "member '"))
    return;
  gf_error_info x = *e;
  const gf_tar_member *m = &s->v[s->n - 1];
  size_t len = strlen(x.message);
  snprintf(x.message + len, sizeof x.message - len,
           "; the last member read before it: '%s' (data at bytes %llu to "
           "%llu)",
           m->path, (unsigned long long)m->data_offset,
           (unsigned long long)(m->data_offset + m->size));
  gf_error_restore(&x);
}

/* Writes text as the local file `path`, in folder dir, through a private
 * temporary file beside it (mkostemp), given the mode a plain create
 * would have, synced and renamed into place; without --force only where
 * no file took the name meanwhile (RENAME_NOREPLACE); then dir is synced,
 * so that the rename survives a crash. The temporary file is removed on
 * every failure. Returns GFC_INDEX_WRITTEN, GFC_INDEX_EXISTS, or a
 * negative code recorded against the shard (shown). */
static int write_local(gfc_index_io *io, const char *shown, const char *dir,
                       const char *path, const char *text, size_t len) {
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char tmp[PATH_MAX];
  int n = strlen(name) > 200
              ? snprintf(tmp, sizeof tmp, "%s/.gpufeed-index.tmp-XXXXXX", dir)
              : snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", dir, name);
  if (n < 0 || (size_t)n >= sizeof tmp)
    return gf_fail(-ENAMETOOLONG, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index %s: the path is too long", path);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return gf_fail(-e, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index %s: cannot create a temporary file in %s: %s",
                   path, dir, strerror(e));
  }
  /* mkostemp made it 0600: private while incomplete. */
  const char *step = "writing";
  int rc = gf_sys_write_full(fd, text, len);
  if (rc == 0) {
    step = "setting the mode of";
    rc = fchmod(fd, io->file_mode) == 0 ? 0 : -errno;
  }
  if (rc == 0) {
    step = "syncing";
    rc = gf_sys_fsync(fd);
  }
  if (close(fd) != 0 && rc == 0) {
    step = "closing";
    rc = -errno;
  }
  if (rc < 0) {
    unlink(tmp);
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index %s: %s the temporary file failed: %s", path, step,
                   gf_strerror(rc));
  }
  if (io->o->force) {
    rc = gf_sys_rename(tmp, path);
  } else {
    rc = gf_sys_renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
    if (rc == -EINVAL || rc == -ENOSYS) {
      /* No RENAME_NOREPLACE here: check, then rename. */
      struct stat st;
      rc = lstat(path, &st) == 0 ? -EEXIST : gf_sys_rename(tmp, path);
    }
  }
  if (rc == -EEXIST) {
    unlink(tmp); /* made meanwhile by another run: left as it is */
    return GFC_INDEX_EXISTS;
  }
  if (rc < 0) {
    unlink(tmp);
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index %s: renaming the temporary file into place "
                   "failed: %s",
                   path, gf_strerror(rc));
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  rc = dfd < 0 ? -errno : gf_sys_fsync(dfd);
  if (dfd >= 0)
    close(dfd);
  if (rc < 0 && rc != -EINVAL) /* EINVAL: a file system that cannot */
    return gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index %s is in place, but syncing its folder failed "
                   "(a crash may lose it): %s",
                   path, gf_strerror(rc));
  return GFC_INDEX_WRITTEN;
}

/* The recorded error (rc), its message led by the shard (shown) and what
 * was being done (what; NULL: nothing, and nothing added where the
 * message names the shard already). Returns rc. */
static int about(int rc, const char *shown, const char *what) {
  const gf_error_info *e = gf_last_error();
  if (!what && e->code == rc && strstr(e->message, shown))
    return rc;
  char lead[1200];
  snprintf(lead, sizeof lead, "%s%s%s", shown, what ? ": " : "",
           what ? what : "");
  return gf_fail_context(rc, NULL, GF_NO_INDEX, lead);
}

/* Where a shard's index goes. */
typedef struct target {
  bool s3;             /* an object of the shard's bucket */
  char path[PATH_MAX]; /* local: the file */
  const char *dir;     /* local: its folder */
  char key[1100];      /* s3: the object's key */
  char name[300];      /* s3: its name in the shard's folder */
} target;

/* A sidecar's name for a shard's (gf_wds_sidecar_name, gf_wds_sums_name). */
typedef int (*namer)(const char *shard, char *buf, size_t cap);

static int find_target(gfc_index_io *io, namer name_of, const char *loc,
                       const char *dir, const char *base, const char *shown,
                       target *t) {
  const gfc_index_opts *o = io->o;
  char name[300];
  int rc = name_of(base, name, sizeof name);
  if (rc < 0)
    return about(rc, shown, NULL);
  int n = 0;
  if (o->out) {
    t->dir = o->out;
    n = snprintf(t->path, sizeof t->path, "%s/%s", o->out, name);
  } else if (gfc_is_s3(loc)) {
    const char *key = loc + 5 + strcspn(loc + 5, "/");
    while (*key == '/')
      key++;
    t->s3 = true;
    snprintf(t->name, sizeof t->name, "%s", name);
    if ((rc = name_of(key, t->key, sizeof t->key)) < 0)
      return about(rc, shown, NULL);
  } else if (gfc_is_http(loc)) {
    return gf_fail(-EROFS, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "an index cannot be written beside a shard read over "
                   "HTTP(S); use --out DIR to write it into a local folder");
  } else {
    t->dir = dir;
    n = strcmp(dir, ".") == 0 && !strchr(loc, '/')
            ? snprintf(t->path, sizeof t->path, "%s", name)
            : snprintf(t->path, sizeof t->path, "%s/%s", dir, name);
  }
  if (n < 0 || (size_t)n >= sizeof t->path)
    return gf_fail(-ENAMETOOLONG, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "its index's path is too long");
  return 0;
}

/* Whether the index is there already: 1 yes, 0 no, or a negative code. */
static int exists(gf_storage *st, const target *t, const char *shown) {
  if (t->s3) {
    gf_stat s;
    int rc = gf_storage_stat(st, t->name, false, &s);
    if (rc == -ENOENT)
      return 0;
    if (rc < 0)
      return about(rc, shown, "looking for its sidecars");
    return 1;
  }
  struct stat sb;
  if (stat(t->path, &sb) != 0) {
    int e = errno;
    if (e == ENOENT)
      return 0;
    return gf_fail(-e, shown, GF_NO_INDEX, GF_NO_INDEX, "looking for %s: %s",
                   t->path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode))
    return gf_fail(-EEXIST, shown, GF_NO_INDEX, GF_NO_INDEX,
                   "the sidecar's name %s is taken by something that is not "
                   "a file",
                   t->path);
  return 1;
}

/* Scans the shard into *s and makes its index. Returns 0 or the error,
 * recorded. */
static int scan(gf_object *obj, members *s, char **text, size_t *len,
                gfc_index_counts *c) {
  int rc = gf_tar_scan_object(obj, add_member, s);
  if (rc < 0 && s->n == 0 && rc != -ECANCELED) {
    const char *kind, *tool = compressed_magic(obj, &kind);
    if (tool)
      return gf_fail(GF_EUNSUPPORTED, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                     "compressed shards are not read: decompress them (%s) "
                     "to plain .tar first (this one is %s)",
                     tool, kind);
  }
  if (rc < 0) {
    name_last_member(s);
    return rc;
  }
  c->members = s->n;
  c->bytes = obj->size;
  if ((rc = gf_wds_index_write(obj->display, s->v, s->n, text, len)) < 0)
    return rc;
  c->samples = strtoull(*text + 5, NULL, 10); /* "v1.2 N\n" */
  return 0;
}

/* Stores text (len bytes) at target t: one PUT into a bucket, else a
 * local file replaced atomically. what: "its index", "its sums". */
static int store(gfc_index_io *io, const char *loc, const char *shown,
                 const target *t, const char *text, size_t len,
                 const char *what) {
  if (*io->interrupted)
    return gf_fail(-ECANCELED, shown, GF_NO_INDEX, GF_NO_INDEX, "interrupted");
  if (!t->s3)
    return write_local(io, shown, t->dir, t->path, text, len);
  gf_s3_uploader *u = NULL;
  pthread_mutex_lock(&io->mu);
  int rc = uploader_of(io, loc, &u);
  pthread_mutex_unlock(&io->mu);
  if (rc == 0)
    rc = gf_s3_upload_bytes(u, text, len, t->key);
  if (rc < 0 && rc != -ECANCELED) {
    char doing[64];
    snprintf(doing, sizeof doing, "writing %s", what);
    rc = about(rc, shown, doing);
  }
  return rc;
}

int gfc_index_shard(gfc_index_io *io, const char *loc, gfc_index_counts *c) {
  memset(c, 0, sizeof *c);
  gf_error_clear();
  char shown[1024];
  gfc_shown(loc, &io->o->remote, shown, sizeof shown);
  if (*io->interrupted)
    return gf_fail(-ECANCELED, shown, GF_NO_INDEX, GF_NO_INDEX, "interrupted");
  const bool verify = io->o->verify;
  char *dir = NULL, *base = NULL, *text = NULL, *sums = NULL;
  gf_storage *st = NULL;
  gf_object *obj = NULL;
  members s = {.io = io};
  target *t = calloc(2, sizeof *t); /* the index's, the sums' */
  size_t len = 0, sums_len = 0;
  const char *suffix;
  int rc = t ? split(loc, &dir, &base) : -ENOMEM;
  if (rc < 0) {
    rc = gf_fail(rc, shown, GF_NO_INDEX, GF_NO_INDEX, "%s",
                 rc == -ENOMEM ? "out of memory"
                               : "not a shard's location (it ends with '/')");
    goto out;
  }
  const char *tool = compressed_name(base, &suffix);
  if (tool) {
    rc = gf_fail(GF_EUNSUPPORTED, shown, GF_NO_INDEX, GF_NO_INDEX,
                 "compressed shards are not read: decompress them (%s) to "
                 "plain .tar first (its name ends in %s)",
                 tool, suffix);
    goto out;
  }
  if ((rc = find_target(io, gf_wds_sidecar_name, loc, dir, base, shown,
                        &t[0])) < 0 ||
      (verify && (rc = find_target(io, gf_wds_sums_name, loc, dir, base, shown,
                                   &t[1])) < 0))
    goto out;
  pthread_mutex_lock(&io->mu);
  rc = storage_of(io, dir, &st);
  pthread_mutex_unlock(&io->mu);
  if (rc < 0) {
    rc = about(rc, shown, NULL);
    goto out;
  }
  /* What is there already is left as it is, unless --force. */
  bool write_index = true, write_sums = verify;
  if (!io->o->force) {
    int has_index = exists(st, &t[0], shown);
    int has_sums = verify && has_index >= 0 ? exists(st, &t[1], shown) : 0;
    if ((rc = has_index < 0 ? has_index : has_sums) < 0)
      goto out;
    write_index = !has_index;
    write_sums = verify && !has_sums;
    if (!write_index && !write_sums) {
      rc = GFC_INDEX_EXISTS;
      goto out;
    }
  }
  if ((rc = gf_object_open(st, base, 0, &obj)) < 0 ||
      (rc = scan(obj, &s, &text, &len, c)) < 0 ||
      (write_sums && (rc = gfc_index_verify(obj, s.v, s.n, io->interrupted, c,
                                            &sums, &sums_len)) < 0)) {
    rc = about(rc, shown, NULL);
    goto out;
  }
  /* The index first: sums without it would still be right (they name
   * members by offset), but a reader looks for the index. */
  if (write_index &&
      (rc = store(io, loc, shown, &t[0], text, len, "its index")) < 0)
    goto out;
  if (write_sums)
    rc = store(io, loc, shown, &t[1], sums, sums_len, "its sums");
out:
  gf_object_close(obj);
  members_free(&s);
  free(text);
  free(sums);
  free(dir);
  free(base);
  free(t);
  return rc;
}
