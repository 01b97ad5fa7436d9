/* WebDataset tar shards written (wds_writer.h): libarchive's pax_restricted
 * writer makes the headers, unblocked (bytes_per_block 0), into a write
 * callback that buffers them for the shard file, so that the writer knows
 * every byte's offset. That is how a sample is placed: it is written to
 * the open shard, and when the shard then passes its size limit (and held
 * samples before), the shard is cut back to where the sample began, closed
 * and the sample written again into a new one; libarchive stays the one
 * that decides how many bytes a header takes. The second includer of
 * archive.h beside tar_scan.c (which reads): the writer's half of it. */
#include "format/wds_writer.h"

#include "common/fault.h"    /* gf_sys_*: system calls tests can fail */
#include "format/wds_keys.h" /* gf_wds_split: names read back as written */
#include <archive.h>         /* the tar writer */
#include <archive_entry.h>   /* a member's header fields */
#include <fcntl.h>
#include <limits.h>
#include <locale.h> /* a fixed charset for libarchive's name conversion */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Header bytes go through this buffer; data at least this big goes
 * straight to the file. */
#define WBUF_SIZE (1u << 20)
/* tar's end of archive: two zero blocks. */
#define TAR_END 1024u
#define TAG_MAX 64u
/* A sample's members, at most (as gf_wds_group_add reads them). */
#define MEMBERS_MAX 65535u

struct gf_wds_writer {
  char *dir;
  uint64_t shard_bytes;
  char tag[TAG_MAX + 1];
  locale_t names_locale; /* C.UTF-8 (else C) while libarchive converts */

  /* The open shard (a == NULL when none). Bytes [buf_off, buf_off +
   * buf_len) of it are in buf, every byte before buf_off is in the file;
   * pos is its size so far. */
  struct archive *a;
  struct archive_entry *entry; /* reused for every member */
  int fd;
  char tmp[PATH_MAX];
  uint32_t shard; /* its number: the shards renamed so far */
  uint64_t pos, buf_off;
  size_t buf_len;
  uint8_t *buf;
  uint64_t shard_samples;
  int io_error; /* the callback's error, recorded (gf_fail) by it */
  bool discard; /* abandoning the shard: the callback drops its bytes */

  /* Keys taken: an open-addressing table of offsets (+1; 0: free) into
   * the arena of NUL-terminated keys. */
  char *keys;
  uint64_t keys_len, keys_cap;
  uint64_t *slots;
  uint64_t nslots, nkeys;

  gf_wds_writer_stats st;
  int error; /* sticky: the first failure, returned again */
  bool closed;
};

/* ---- the keys taken ------------------------------------------------- */

static uint64_t hash_key(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* The slot holding key, or the free slot where it would go. */
static uint64_t find_slot(const gf_wds_writer *w, const char *key) {
  uint64_t mask = w->nslots - 1;
  for (uint64_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
    uint64_t s = w->slots[i];
    if (s == 0 || strcmp(w->keys + s - 1, key) == 0)
      return i;
  }
}

static bool taken(const gf_wds_writer *w, const char *key) {
  return w->nslots && w->slots[find_slot(w, key)] != 0;
}

static int take_key(gf_wds_writer *w, const char *key) {
  if ((w->nkeys + 1) * 2 > w->nslots) {
    uint64_t n = w->nslots ? w->nslots * 2 : 1024;
    uint64_t *old = w->slots, on = w->nslots;
    if (n > SIZE_MAX / sizeof *old || !(w->slots = calloc(n, sizeof *old))) {
      w->slots = old;
      return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for the keys of %llu samples",
                     (unsigned long long)w->nkeys);
    }
    w->nslots = n;
    for (uint64_t i = 0; i < on; i++)
      if (old[i])
        w->slots[find_slot(w, w->keys + old[i] - 1)] = old[i];
    free(old);
  }
  size_t len = strlen(key) + 1;
  if (w->keys_len + len > w->keys_cap) {
    uint64_t n = w->keys_cap ? w->keys_cap : 64 * 1024;
    while (n < w->keys_len + len)
      n *= 2;
    char *k = n <= SIZE_MAX ? realloc(w->keys, (size_t)n) : NULL;
    if (!k)
      return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for the keys of %llu samples",
                     (unsigned long long)w->nkeys);
    w->keys = k;
    w->keys_cap = n;
  }
  memcpy(w->keys + w->keys_len, key, len);
  w->slots[find_slot(w, key)] = w->keys_len + 1;
  w->keys_len += len;
  w->nkeys++;
  return 0;
}

bool gf_wds_writer_has_key(const gf_wds_writer *w, const char *key) {
  return taken(w, key);
}

int gf_wds_writer_unique_key(const gf_wds_writer *w, const char *key, char *buf,
                             size_t cap) {
  for (uint64_t n = 0;; n++) {
    int len = n ? snprintf(buf, cap, "%s_%llu", key, (unsigned long long)n)
                : snprintf(buf, cap, "%s", key);
    if (len < 0 || (size_t)len >= cap)
      return gf_fail(GF_ELIMIT, key, GF_NO_INDEX, GF_NO_INDEX,
                     "the key made unique does not fit %zu bytes", cap);
    if (!taken(w, buf))
      return n ? 1 : 0;
  }
}

/* ---- the shard file ------------------------------------------------- */

/* Writes all of data at off (interrupted calls retried a bounded number
 * of times in a row, short writes continued). Returns 0 or -errno with
 * context. */
static int pwrite_all(int fd, const void *data, size_t len, uint64_t off,
                      const char *path) {
  const uint8_t *p = data;
  int retries = 0;
  while (len) {
    if (off > (uint64_t)INT64_MAX - len)
      return gf_fail(-EFBIG, path, GF_NO_INDEX, off,
                     "writing %zu bytes would pass the largest file offset",
                     len);
    ssize_t n = gf_sys_pwrite(fd, p, len, (off_t)off);
    if (n == -EINTR && ++retries <= 16)
      continue;
    if (n < 0)
      return gf_fail((int)n, path, GF_NO_INDEX, off, "writing %zu bytes: %s",
                     len, gf_strerror((int)n));
    if (n == 0)
      return gf_fail(-EIO, path, GF_NO_INDEX, off,
                     "writing %zu bytes: the write made no progress", len);
    retries = 0;
    p += n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return 0;
}

static int flush_buf(gf_wds_writer *w) {
  if (!w->buf_len)
    return 0;
  int rc = pwrite_all(w->fd, w->buf, w->buf_len, w->buf_off, w->tmp);
  if (rc < 0)
    return rc;
  w->buf_off += w->buf_len;
  w->buf_len = 0;
  return 0;
}

/* Appends len bytes (zeros when data is NULL) at the shard's end. */
static int put(gf_wds_writer *w, const void *data, size_t len) {
  if (len >= WBUF_SIZE && data) {
    int rc = flush_buf(w);
    if (rc == 0)
      rc = pwrite_all(w->fd, data, len, w->pos, w->tmp);
    if (rc < 0)
      return rc;
    w->pos += len;
    w->buf_off = w->pos;
    return 0;
  }
  while (len) {
    size_t n = WBUF_SIZE - w->buf_len;
    if (n > len)
      n = len;
    if (data)
      memcpy(w->buf + w->buf_len, data, n);
    else
      memset(w->buf + w->buf_len, 0, n);
    w->buf_len += n;
    w->pos += n;
    len -= n;
    if (data)
      data = (const uint8_t *)data + n;
    if (w->buf_len == WBUF_SIZE) {
      int rc = flush_buf(w);
      if (rc < 0)
        return rc;
    }
  }
  return 0;
}

/* Cuts the shard back to its first `mark` bytes. Returns 0 or -errno. */
static int cut_back(gf_wds_writer *w, uint64_t mark) {
  if (mark >= w->buf_off) {
    w->buf_len = (size_t)(mark - w->buf_off);
  } else {
    if (ftruncate(w->fd, (off_t)mark) != 0) {
      int e = errno;
      return gf_fail(-e, w->tmp, GF_NO_INDEX, mark,
                     "cutting the shard back to %llu bytes: %s",
                     (unsigned long long)mark, strerror(e));
    }
    w->buf_off = mark;
    w->buf_len = 0;
  }
  w->pos = mark;
  return 0;
}

static la_ssize_t write_cb(struct archive *a, void *client, const void *buf,
                           size_t len) {
  gf_wds_writer *w = client;
  if (w->discard)
    return (la_ssize_t)len;
  int rc = put(w, buf, len);
  if (rc < 0) {
    w->io_error = rc;
    archive_set_error(a, EIO, "write failed");
    return -1;
  }
  return (la_ssize_t)len;
}

/* libarchive's failure as gpufeed's error: the callback's own (recorded
 * with context) or libarchive's message. */
static int archive_failed(gf_wds_writer *w, const char *what,
                          const char *name) {
  if (w->io_error)
    return w->io_error;
  const char *msg = archive_error_string(w->a);
  return gf_fail(GF_EINTERNAL, w->tmp, GF_NO_INDEX, w->pos,
                 "libarchive failed %s%s%s: %s", what, name ? " " : "",
                 name ? name : "", msg ? msg : "no message");
}

/* The shard's size once closed at its present end. */
static uint64_t closed_size(uint64_t pos) {
  uint64_t end = pos + TAR_END;
  return (end + GF_WDS_RECORD - 1) / GF_WDS_RECORD * GF_WDS_RECORD;
}

static void shard_name(const gf_wds_writer *w, uint32_t shard, char *buf,
                       size_t cap) {
  char name[32];
  snprintf(name, sizeof name, GF_WDS_SHARD_FMT, shard);
  snprintf(buf, cap, "%s/%s", w->dir, name);
}

static int open_shard(gf_wds_writer *w) {
  char name[32];
  snprintf(name, sizeof name, GF_WDS_SHARD_FMT, w->shard);
  int n =
      snprintf(w->tmp, sizeof w->tmp, "%s/.%s.gftmp-%s", w->dir, name, w->tag);
  if (n < 0 || (size_t)n >= sizeof w->tmp)
    return gf_fail(-ENAMETOOLONG, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the shard's path is longer than %d bytes", PATH_MAX - 1);
  int fd = gf_sys_open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return gf_fail(fd, w->tmp, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot create the shard's temporary file: %s",
                   gf_strerror(fd));
  w->fd = fd;
  w->pos = w->buf_off = 0;
  w->buf_len = 0;
  w->shard_samples = 0;
  w->io_error = 0;
  w->discard = false;
  w->a = archive_write_new();
  if (!w->a) {
    close(fd);
    unlink(w->tmp);
    w->fd = -1;
    return gf_fail(-ENOMEM, w->tmp, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the tar writer");
  }
  if (archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(w->a, 0) != ARCHIVE_OK ||
      archive_write_open(w->a, w, NULL, write_cb, NULL) != ARCHIVE_OK)
    return archive_failed(w, "to start the shard", NULL);
  return 0;
}

/* Abandons the open shard: its temporary file removed. */
static void drop_shard(gf_wds_writer *w) {
  if (w->a) {
    w->discard = true; /* what closing the archive writes goes nowhere */
    archive_write_free(w->a);
    w->a = NULL;
  }
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
    unlink(w->tmp);
  }
}

/* Ends the open shard (end blocks, padding), makes it durable and renames
 * it into place, never over an existing file. */
static int close_shard(gf_wds_writer *w) {
  int rc = 0;
  if (archive_write_close(w->a) != ARCHIVE_OK)
    rc = archive_failed(w, "to end the shard", NULL);
  /* The end blocks are in: pad what precedes them plus them. */
  uint64_t size = rc == 0 ? closed_size(w->pos - TAR_END) : 0;
  if (rc == 0 && size > w->pos)
    rc = put(w, NULL, (size_t)(size - w->pos));
  if (rc == 0)
    rc = flush_buf(w);
  if (rc == 0 && (rc = gf_sys_fsync(w->fd)) < 0)
    rc = gf_fail(rc, w->tmp, GF_NO_INDEX, GF_NO_INDEX, "fsync of the shard: %s",
                 gf_strerror(rc));
  char final[PATH_MAX];
  shard_name(w, w->shard, final, sizeof final);
  if (rc == 0) {
    rc = gf_sys_renameat2(AT_FDCWD, w->tmp, AT_FDCWD, final, RENAME_NOREPLACE);
    if (rc == -EINVAL || rc == -ENOSYS) {
      /* No renameat2 here: the plain rename, after a check. */
      struct stat sb;
      rc = lstat(final, &sb) == 0 ? -EEXIST : gf_sys_rename(w->tmp, final);
    }
    if (rc == -EEXIST)
      rc = gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                   "a file of that name appeared while the shard was written; "
                   "left as it is");
    else if (rc < 0)
      rc = gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                   "renaming the finished shard into place: %s",
                   gf_strerror(rc));
  }
  if (rc < 0) {
    drop_shard(w);
    return rc;
  }
  archive_write_free(w->a);
  w->a = NULL;
  close(w->fd);
  w->fd = -1;
  w->st.shards++;
  w->st.bytes += size;
  w->shard++;
  /* The rename made durable (the folder's entry). */
  int dfd = gf_sys_open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  rc = dfd < 0 ? dfd : gf_sys_fsync(dfd);
  if (dfd >= 0)
    close(dfd);
  if (rc < 0)
    return gf_fail(rc, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "fsync of the folder after renaming %s: %s", final,
                   gf_strerror(rc));
  return 0;
}

/* ---- samples -------------------------------------------------------- */

static int write_member(gf_wds_writer *w, const char *name,
                        const gf_wds_member *m) {
  struct archive_entry *e = w->entry;
  archive_entry_clear(e);
  archive_entry_copy_pathname(e, name);
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, (la_int64_t)m->size);
  archive_entry_set_mtime(e, 0, 0);
  /* libarchive converts the name from the locale's charset to the PAX
   * header's UTF-8: under C.UTF-8 whatever the caller's locale, valid
   * UTF-8 is written as it is and other bytes as hdrcharset=BINARY (the
   * warning it returns then is expected). */
  locale_t prev = uselocale(w->names_locale);
  int r = archive_write_header(w->a, e);
  uselocale(prev);
  if (r < ARCHIVE_WARN)
    return archive_failed(w, "to write the header of", name);
  const uint8_t *p = m->data;
  for (uint64_t left = m->size; left;) {
    size_t n = left > (1u << 30) ? (1u << 30) : (size_t)left;
    la_ssize_t got = archive_write_data(w->a, p, n);
    if (got <= 0)
      return archive_failed(w, "to write the data of", name);
    p += got;
    left -= (uint64_t)got;
  }
  if (archive_write_finish_entry(w->a) != ARCHIVE_OK)
    return archive_failed(w, "to end", name);
  return 0;
}

static int write_sample(gf_wds_writer *w, char *const *names,
                        const gf_wds_member *members, size_t count) {
  for (size_t i = 0; i < count; i++) {
    int rc = write_member(w, names[i], &members[i]);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static bool ascii_eq_nocase(const char *a, const char *b) {
  for (;; a++, b++) {
    int x = (unsigned char)*a, y = (unsigned char)*b;
    if (x >= 'A' && x <= 'Z')
      x += 'a' - 'A';
    if (y >= 'A' && y <= 'Z')
      y += 'a' - 'A';
    if (x != y)
      return false;
    if (!x)
      return true;
  }
}

/* Checks the key's components: not empty, no "." or "..", no '/' at
 * either end. Returns the problem, or NULL. */
static const char *key_problem(const char *key) {
  if (!key[0])
    return "is empty";
  if (key[0] == '/')
    return "starts with '/'";
  for (const char *c = key; *c;) {
    const char *end = strchr(c, '/');
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (n == 0)
      return "has an empty component";
    if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
      return "has a '.' or '..' component";
    if (!end)
      break;
    if (!end[1])
      return "ends with '/'";
    c = end + 1;
  }
  return NULL;
}

/* The member names KEY.FIELD, checked to read back as (key, field). */
static int member_names(gf_wds_writer *w, const char *key,
                        const gf_wds_member *members, size_t count,
                        char **names) {
  const char *why = key_problem(key);
  if (why)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the key \"%s\" %s", key, why);
  size_t kl = strlen(key);
  for (size_t i = 0; i < count; i++) {
    const char *f = members[i].field;
    if (!f || !f[0])
      return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "member %zu of the sample \"%s\" has no field name", i,
                     key);
    if (members[i].size && !members[i].data)
      return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "member %s of the sample \"%s\" has %llu bytes but no "
                     "data",
                     f, key, (unsigned long long)members[i].size);
    size_t fl = strlen(f);
    if (kl + 1 + fl > GF_WDS_NAME_MAX)
      return gf_fail(GF_ELIMIT, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "the member name %s.%s is %zu bytes long: more than the "
                     "%u a name may have",
                     key, f, kl + 1 + fl, GF_WDS_NAME_MAX);
    for (size_t j = 0; j < i; j++)
      if (ascii_eq_nocase(members[j].field, f))
        return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                       "the sample \"%s\" has the fields \"%s\" and \"%s\": "
                       "webdataset lower-cases fields, so they are one",
                       key, members[j].field, f);
    if (!(names[i] = malloc(kl + 1 + fl + 1)))
      return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory");
    memcpy(names[i], key, kl);
    names[i][kl] = '.';
    memcpy(names[i] + kl + 1, f, fl + 1);
    size_t split_len = 0;
    const char *split_field = NULL;
    if (!gf_wds_split(names[i], &split_len, &split_field) || split_len != kl ||
        strcmp(split_field, f) != 0)
      return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                     "the member name %s would not read back as key \"%s\" "
                     "and field \"%s\" (webdataset's key runs to the first "
                     "'.' of the last component, a field holds no '/', and "
                     "a first component __NAME__ is dropped as metadata)",
                     names[i], key, f);
  }
  return 0;
}

int gf_wds_writer_add(gf_wds_writer *w, const char *key,
                      const gf_wds_member *members, size_t count) {
  if (w->error)
    return w->error;
  if (w->closed)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the writer was closed");
  if (!key || count == 0 || count > MEMBERS_MAX || !members)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "a sample needs a key and 1 to %u members", MEMBERS_MAX);
  char **names = calloc(count, sizeof *names);
  if (!names)
    return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  int rc = member_names(w, key, members, count, names);
  if (rc == 0 && taken(w, key))
    rc = gf_fail(-EEXIST, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                 "the key \"%s\" was taken by an earlier sample", key);
  bool sticky = false;
  if (rc == 0 && !w->a)
    sticky = (rc = open_shard(w)) < 0;
  uint64_t mark = w->pos;
  if (rc == 0)
    sticky = (rc = write_sample(w, names, members, count)) < 0;
  if (rc == 0 && w->shard_samples && closed_size(w->pos) > w->shard_bytes) {
    /* Past the limit, and not alone: the sample goes to a new shard. */
    sticky = true;
    if ((rc = cut_back(w, mark)) == 0 && (rc = close_shard(w)) == 0 &&
        (rc = open_shard(w)) == 0)
      rc = write_sample(w, names, members, count);
  }
  if (rc == 0)
    rc = take_key(w, key);
  if (rc == 0) {
    w->shard_samples++;
    w->st.samples++;
    w->st.members += count;
    for (size_t i = 0; i < count; i++)
      w->st.data_bytes += members[i].size;
  } else if (sticky) {
    w->error = rc;
    drop_shard(w);
  }
  for (size_t i = 0; i < count; i++)
    free(names[i]);
  free(names);
  return rc;
}

/* ---- the writer ----------------------------------------------------- */

int gf_wds_writer_open(const char *dir, const gf_wds_writer_opts *opts,
                       gf_wds_writer **out) {
  *out = NULL;
  gf_wds_writer_opts o = opts ? *opts : (gf_wds_writer_opts){0};
  struct stat sb;
  if (stat(dir, &sb) != 0) {
    int e = errno;
    return gf_fail(-e, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open the shards' folder: %s", strerror(e));
  }
  if (!S_ISDIR(sb.st_mode))
    return gf_fail(-ENOTDIR, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the shards' folder is not a folder");
  char tag[TAG_MAX + 1];
  if (o.tmp_tag) {
    size_t n = strlen(o.tmp_tag);
    bool ok = n > 0 && n <= TAG_MAX;
    for (size_t i = 0; ok && i < n; i++) {
      char c = o.tmp_tag[i];
      ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '_';
    }
    if (!ok)
      return gf_fail(-EINVAL, dir, GF_NO_INDEX, GF_NO_INDEX,
                     "tmp_tag \"%s\": expected 1 to %u letters, digits, '-' "
                     "or '_'",
                     o.tmp_tag, TAG_MAX);
    memcpy(tag, o.tmp_tag, n + 1);
  } else {
    snprintf(tag, sizeof tag, "%ld", (long)getpid());
  }
  gf_wds_writer *w = calloc(1, sizeof *w);
  if (!w)
    return gf_fail(-ENOMEM, dir, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  w->fd = -1;
  w->shard_bytes = o.shard_bytes ? o.shard_bytes : (1ull << 30);
  memcpy(w->tag, tag, sizeof tag);
  w->dir = strdup(dir);
  w->buf = malloc(WBUF_SIZE);
  w->entry = archive_entry_new();
  w->names_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
  if (!w->names_locale) /* an older C library: names not ASCII as BINARY */
    w->names_locale = newlocale(LC_CTYPE_MASK, "C", (locale_t)0);
  if (!w->dir || !w->buf || !w->entry || !w->names_locale) {
    gf_wds_writer_free(w);
    return gf_fail(-ENOMEM, dir, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  *out = w;
  return 0;
}

int gf_wds_writer_close(gf_wds_writer *w) {
  if (w->error)
    return w->error;
  if (w->closed)
    return 0;
  w->closed = true;
  int rc = w->a ? close_shard(w) : 0;
  if (rc < 0)
    w->error = rc;
  return rc;
}

void gf_wds_writer_stats_get(const gf_wds_writer *w, gf_wds_writer_stats *out) {
  *out = w->st;
}

int gf_wds_writer_remove_shards(gf_wds_writer *w) {
  drop_shard(w);
  int rc = 0, removed = 0;
  for (uint32_t i = 0; i < w->st.shards; i++) {
    char path[PATH_MAX];
    shard_name(w, i, path, sizeof path);
    if (unlink(path) == 0) {
      removed++;
    } else if (errno != ENOENT && rc == 0) {
      int e = errno;
      rc = gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot remove the shard: %s", strerror(e));
    }
  }
  return rc < 0 ? rc : removed;
}

void gf_wds_writer_free(gf_wds_writer *w) {
  if (!w)
    return;
  drop_shard(w);
  if (w->entry)
    archive_entry_free(w->entry);
  if (w->names_locale)
    freelocale(w->names_locale);
  free(w->buf);
  free(w->keys);
  free(w->slots);
  free(w->dir);
  free(w);
}

/* ---- a file's key --------------------------------------------------- */

static bool image_ext(const char *ext) {
  return ascii_eq_nocase(ext, "png") || ascii_eq_nocase(ext, "jpg") ||
         ascii_eq_nocase(ext, "jpeg");
}

/* A first component webdataset takes for metadata: __NAME__ (4 bytes at
 * least) before a '/'. */
static bool meta_first(const char *key, size_t n) {
  return n >= 4 && key[0] == '_' && key[1] == '_' && key[n - 2] == '_' &&
         key[n - 1] == '_';
}

int gf_wds_file_key(const char *path, int content, char *key, size_t cap,
                    char *field, size_t field_cap, uint32_t *changes) {
  *changes = 0;
  size_t plen = strlen(path);
  char *norm = malloc(plen + 1);
  if (!norm)
    return gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  /* Components, with "." and empty ones dropped and ".." resolved. */
  size_t len = 0;
  for (const char *c = path; *c;) {
    const char *end = strchr(c, '/');
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (n == 2 && c[0] == '.' && c[1] == '.') {
      while (len && norm[len - 1] != '/')
        len--;
      if (len)
        len--; /* the '/' before it */
    } else if (n && !(n == 1 && c[0] == '.')) {
      if (len)
        norm[len++] = '/';
      memcpy(norm + len, c, n);
      len += n;
    }
    c += n;
    if (*c == '/')
      c++;
  }
  norm[len] = '\0';
  if (!len) {
    free(norm);
    return gf_fail(-EINVAL, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the path names no file");
  }
  char *base = strrchr(norm, '/');
  base = base ? base + 1 : norm;
  char *dot = strrchr(base, '.');
  const char *f;
  if (dot && image_ext(dot + 1)) {
    *dot = '\0';
    f = dot + 1;
  } else if (content == GF_CODEC_PNG || content == GF_CODEC_JPEG) {
    f = content == GF_CODEC_PNG ? "png" : "jpg";
  } else {
    free(norm);
    return gf_fail(-EINVAL, path, GF_NO_INDEX, GF_NO_INDEX,
                   "neither the name's extension nor the content says "
                   "whether the file is a PNG or a JPEG");
  }
  size_t fl = strlen(f);
  if (fl + 1 > field_cap) {
    free(norm);
    return gf_fail(GF_ELIMIT, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the field does not fit %zu bytes", field_cap);
  }
  for (size_t i = 0; i <= fl; i++)
    field[i] = (char)(f[i] >= 'A' && f[i] <= 'Z' ? f[i] + ('a' - 'A') : f[i]);
  for (char *p = base; *p; p++) {
    if (*p == '.') {
      *p = '_';
      *changes |= GF_WDS_KEY_DOTS;
    }
  }
  const char *k = norm;
  char *first_end = strchr(norm, '/');
  while (first_end && meta_first(k, (size_t)(first_end - k))) {
    k++;
    *changes |= GF_WDS_KEY_META;
  }
  bool empty = !*base;
  if (empty)
    *changes |= GF_WDS_KEY_EMPTY;
  int n = snprintf(key, cap, "%s%s", k, empty ? "_" : "");
  free(norm);
  if (n < 0 || (size_t)n >= cap)
    return gf_fail(GF_ELIMIT, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the key made of the path does not fit %zu bytes", cap);
  return 0;
}
