/* The dataset writer (docs/FORMAT.md): shards written through a buffer as
 * samples arrive, records and names kept in memory (64 bytes a sample plus
 * the names), the index (with its summary table) written last under a
 * temporary name and renamed. Deterministic: the same calls give
 * byte-identical files. */
#include "common/fault.h" /* gf_sys_*: system calls tests can fail */
#include "format/format.h"

#include <dirent.h> /* the output folder must be empty */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes go through this buffer; samples at least this big go straight to
 * the file, so large samples are not copied. */
#define WBUF_SIZE (1u << 20)

struct gf_writer {
  char *dir;
  uint64_t shard_size;
  uint32_t align;
  uint64_t data_start;
  uint32_t index_version;
  uint64_t fixed_id; /* gf_writer_opts.dataset_id: shards final at close */
  int (*on_shard)(void *ctx, uint32_t shard, const char *path, uint64_t size);
  void *on_shard_ctx;

  /* The shard being written (fd < 0 when none). Bytes [buf_off, buf_off +
   * buf_len) of it are in buf; pos is its logical size so far (a test hole
   * may lie between what is written and pos). */
  int fd;
  char path[PATH_MAX];
  uint64_t pos;
  uint64_t buf_off;
  size_t buf_len;
  uint8_t *buf;
  bool shard_has_samples;

  uint64_t *shard_sizes; /* of closed shards; nshards entries */
  uint32_t nshards;
  uint64_t shard_cap;

  uint8_t *records; /* count * GF_RECORD_SIZE bytes, on-disk layout */
  uint64_t count;
  uint64_t rec_cap;
  uint8_t *names;
  uint64_t names_len, names_cap;
  uint8_t *classes; /* the class table as written: names with NULs */
  uint64_t classes_len, classes_cap;
  uint32_t nclasses;

  uint64_t bytes; /* shard bytes (headers, padding, samples, holes) */
  int error;      /* sticky: the first write error, returned again */
  bool finished;
};

/* Returns p grown to hold `need` items of `elem` bytes (*cap of them now),
 * or p unchanged with *ok false when memory runs out. */
static void *grow(void *p, uint64_t *cap, uint64_t need, size_t elem,
                  bool *ok) {
  *ok = true;
  if (need <= *cap)
    return p;
  uint64_t n = *cap ? *cap : 64;
  while (n < need) {
    if (n > UINT64_MAX / 2)
      return *ok = false, p;
    n *= 2;
  }
  uint64_t bytes;
  if (!gf_mul_u64(n, elem, &bytes) || bytes > SIZE_MAX)
    return *ok = false, p;
  void *q = realloc(p, (size_t)bytes);
  if (!q)
    return *ok = false, p;
  *cap = n;
  return q;
}

/* Writes all of data at off: interrupted calls retried (a bounded number of
 * times in a row), short writes continued. Returns 0 or -errno with
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

static int fail_sticky(gf_writer *w, int rc) {
  if (!w->error)
    w->error = rc;
  return rc;
}

static int flush_buf(gf_writer *w) {
  if (!w->buf_len)
    return 0;
  int rc = pwrite_all(w->fd, w->buf, w->buf_len, w->buf_off, w->path);
  if (rc < 0)
    return fail_sticky(w, rc);
  w->buf_off += w->buf_len;
  w->buf_len = 0;
  return 0;
}

/* Appends bytes (or zeros when data is NULL) at the shard's end. */
static int append(gf_writer *w, const void *data, uint64_t len) {
  if (w->buf_off + w->buf_len != w->pos) {
    /* After a hole the buffer restarts at the logical end. */
    int rc = flush_buf(w);
    if (rc < 0)
      return rc;
    w->buf_off = w->pos;
  }
  if (data && len >= WBUF_SIZE) {
    int rc = flush_buf(w);
    if (rc < 0)
      return rc;
    rc = pwrite_all(w->fd, data, (size_t)len, w->pos, w->path);
    if (rc < 0)
      return fail_sticky(w, rc);
    w->pos += len;
    w->buf_off = w->pos;
    w->bytes += len;
    return 0;
  }
  const uint8_t *p = data;
  while (len) {
    size_t room = WBUF_SIZE - w->buf_len;
    if (!room) {
      int rc = flush_buf(w);
      if (rc < 0)
        return rc;
      room = WBUF_SIZE;
    }
    size_t n = len < room ? (size_t)len : room;
    if (p) {
      memcpy(w->buf + w->buf_len, p, n);
      p += n;
    } else {
      memset(w->buf + w->buf_len, 0, n);
    }
    w->buf_len += n;
    w->pos += n;
    w->bytes += n;
    len -= n;
  }
  return 0;
}

static void shard_header(uint8_t h[GF_SHARD_HEADER_SIZE], uint32_t shard,
                         uint32_t align, uint64_t id) {
  memset(h, 0, GF_SHARD_HEADER_SIZE);
  memcpy(h + GF_SH_MAGIC, GF_SHARD_MAGIC, 8);
  gf_put32(h + GF_SH_VERSION, GF_SHARD_VERSION);
  gf_put32(h + GF_SH_DATA_START, (uint32_t)gf_shard_data_start(align));
  gf_put32(h + GF_SH_SHARD, shard);
  gf_put32(h + GF_SH_ALIGNMENT, align);
  gf_put64(h + GF_SH_DATASET_ID, id);
  gf_put32(h + GF_SH_HEADER_CRC, gf_crc32c(0, h, GF_SH_HEADER_CRC));
}

static void shard_path(const gf_writer *w, uint32_t i, char *out, size_t cap) {
  char name[32];
  snprintf(name, sizeof name, GF_SHARD_FMT, i);
  snprintf(out, cap, "%s/%s", w->dir, name);
}

static int open_shard(gf_writer *w) {
  if (w->nshards == UINT32_MAX)
    return fail_sticky(w, gf_fail(-EFBIG, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                                  "too many shards (the format holds %u); "
                                  "use a larger shard size",
                                  UINT32_MAX));
  bool ok;
  w->shard_sizes = grow(w->shard_sizes, &w->shard_cap, (uint64_t)w->nshards + 1,
                        sizeof(uint64_t), &ok);
  if (!ok)
    return fail_sticky(w, gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                                  "out of memory for the shard table"));
  int rc;
  shard_path(w, w->nshards, w->path, sizeof w->path);
  int fd = gf_sys_open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail_sticky(w, gf_fail(fd, w->path, GF_NO_INDEX, GF_NO_INDEX,
                                  "cannot create the shard file: %s",
                                  gf_strerror(fd)));
  w->fd = fd;
  w->pos = 0;
  w->buf_off = 0;
  w->buf_len = 0;
  w->shard_has_samples = false;
  /* The dataset id, unless given, is known only at finish, which rewrites
   * this header. */
  uint8_t h[GF_SHARD_HEADER_SIZE];
  shard_header(h, w->nshards, w->align, w->fixed_id);
  rc = append(w, h, sizeof h);
  if (rc < 0)
    return rc;
  return append(w, NULL, w->data_start - GF_SHARD_HEADER_SIZE);
}

/* Pads the tail to the alignment, writes out the buffer, sets the file's
 * size (a trailing test hole has no bytes written) and closes it; with a
 * given dataset id the shard is final: fsynced first, then handed on. */
static int close_shard(gf_writer *w) {
  if (w->fd < 0)
    return 0;
  int rc = 0;
  uint64_t tail = w->pos % w->align;
  if (tail)
    rc = append(w, NULL, w->align - tail);
  if (rc == 0)
    rc = flush_buf(w);
  if (rc == 0 && ftruncate(w->fd, (off_t)w->pos) != 0) {
    int e = errno;
    rc = fail_sticky(w, gf_fail(-e, w->path, GF_NO_INDEX, w->pos,
                                "setting the shard's size: %s", strerror(e)));
  }
  if (rc == 0 && w->fixed_id && (rc = gf_sys_fsync(w->fd)) < 0)
    rc = fail_sticky(w, gf_fail(rc, w->path, GF_NO_INDEX, GF_NO_INDEX,
                                "fsync of the shard: %s", gf_strerror(rc)));
  if (close(w->fd) != 0 && rc == 0) {
    int e = errno;
    rc = fail_sticky(w, gf_fail(-e, w->path, GF_NO_INDEX, GF_NO_INDEX,
                                "closing the shard: %s", strerror(e)));
  }
  w->fd = -1;
  if (rc < 0)
    return rc;
  uint32_t i = w->nshards;
  w->shard_sizes[w->nshards++] = w->pos;
  if (w->on_shard && (rc = w->on_shard(w->on_shard_ctx, i, w->path, w->pos)))
    return fail_sticky(w, rc < 0 ? rc : -EIO);
  return 0;
}

static bool dir_is_empty(const char *dir, int *err) {
  DIR *d = opendir(dir);
  if (!d) {
    *err = -errno;
    return false;
  }
  struct dirent *e;
  bool empty = true;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      empty = false;
      break;
    }
  }
  closedir(d);
  *err = 0;
  return empty;
}

int gf_writer_create(const char *dir, const gf_writer_opts *opts,
                     gf_writer **out) {
  if (!out || !dir || !dir[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_writer_create: dir and out are required");
  *out = NULL;
  uint64_t shard_size =
      opts && opts->shard_size ? opts->shard_size : GF_DEFAULT_SHARD_SIZE;
  uint32_t align = opts && opts->alignment ? opts->alignment : 1;
  if (align > GF_MAX_ALIGNMENT || (align & (align - 1)))
    return gf_fail(-EINVAL, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "alignment %u is not a power of two from 1 to %u", align,
                   GF_MAX_ALIGNMENT);
  uint32_t version =
      opts && opts->index_version ? opts->index_version : GF_INDEX_VERSION;
  if (version < GF_INDEX_VERSION_MIN || version > GF_INDEX_VERSION)
    return gf_fail(-EINVAL, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "index version %u: this build writes versions %u to %u",
                   version, GF_INDEX_VERSION_MIN, GF_INDEX_VERSION);
  if (opts && opts->on_shard && !opts->dataset_id)
    return gf_fail(-EINVAL, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_writer_create: on_shard needs a dataset_id");
  if (strlen(dir) > PATH_MAX - 64)
    return gf_fail(-ENAMETOOLONG, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the folder's path is too long");
  struct stat st;
  if (stat(dir, &st) != 0) {
    int e = errno;
    return gf_fail(-e, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot use the output folder: %s", strerror(e));
  }
  if (!S_ISDIR(st.st_mode))
    return gf_fail(-ENOTDIR, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the output is not a folder");
  int err;
  if (!dir_is_empty(dir, &err))
    return err ? gf_fail(err, dir, GF_NO_INDEX, GF_NO_INDEX,
                         "cannot list the output folder: %s", strerror(-err))
               : gf_fail(-ENOTEMPTY, dir, GF_NO_INDEX, GF_NO_INDEX,
                         "the output folder must be empty");
  gf_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->dir = strdup(dir)) || !(w->buf = malloc(WBUF_SIZE))) {
    if (w) {
      free(w->dir);
      free(w);
    }
    return gf_fail(-ENOMEM, dir, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory creating the writer");
  }
  w->shard_size = shard_size;
  w->fixed_id = opts ? opts->dataset_id : 0;
  w->on_shard = opts ? opts->on_shard : NULL;
  w->on_shard_ctx = opts ? opts->on_shard_ctx : NULL;
  w->align = align;
  w->index_version = version;
  w->data_start = gf_shard_data_start(align);
  w->fd = -1;
  *out = w;
  return 0;
}

static int check_usable(gf_writer *w) {
  if (w->finished)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "the writer has already finished");
  if (w->error)
    return gf_fail(w->error, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "an earlier write failed (%s); the dataset is incomplete",
                   gf_strerror(w->error));
  return 0;
}

int gf_writer_add_class(gf_writer *w, const char *name) {
  if (!w || !name)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_writer_add_class: writer and name are required");
  int rc = check_usable(w);
  if (rc < 0)
    return rc;
  size_t len = strlen(name);
  if (len == 0 || len > GF_MAX_NAME_LEN)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "class name of %zu bytes: expected 1 to %u bytes", len,
                   GF_MAX_NAME_LEN);
  if (w->nclasses == UINT32_MAX)
    return gf_fail(-EINVAL, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "too many classes");
  bool ok;
  w->classes =
      grow(w->classes, &w->classes_cap, w->classes_len + len + 1, 1, &ok);
  if (!ok)
    return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for class names");
  memcpy(w->classes + w->classes_len, name, len + 1);
  w->classes_len += len + 1;
  w->nclasses++;
  return 0;
}

int gf_writer_add(gf_writer *w, const void *data, size_t len, int codec,
                  const gf_shape *shape, int64_t label, const char *source) {
  if (!w || !shape || (!data && len))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_writer_add: writer, data and shape are required");
  int rc = check_usable(w);
  if (rc < 0)
    return rc;
  const char *src = source ? source : "";
  uint64_t idx = w->count;
  size_t name_len = strlen(src);
  /* Refuse here whatever the reader would refuse as corrupt. */
  if (len == 0 || len > GF_MAX_STORED_BYTES)
    return gf_fail(-EINVAL, src, idx, GF_NO_INDEX,
                   "stored size %zu bytes: expected 1 to %llu bytes", len,
                   (unsigned long long)GF_MAX_STORED_BYTES);
  if (codec < 0 || codec >= GF_CODEC_COUNT_)
    return gf_fail(-EINVAL, src, idx, GF_NO_INDEX, "unknown codec %d", codec);
  rc = gf_limits_check(NULL, shape, src, idx);
  if (rc < 0)
    return rc;
  if (codec == GF_CODEC_RAW && len != gf_shape_bytes(shape))
    return gf_fail(GF_ESHAPE, src, idx, GF_NO_INDEX,
                   "raw sample of %zu bytes for a %ux%ux%u image: expected "
                   "%llu bytes",
                   len, shape->height, shape->width, shape->channels,
                   (unsigned long long)gf_shape_bytes(shape));
  if (codec == GF_CODEC_LOCO && shape->dtype != GF_DTYPE_U8)
    return gf_fail(GF_ESHAPE, src, idx, GF_NO_INDEX,
                   "loco sample of a u16 %ux%ux%u image: loco codes 8-bit "
                   "samples only",
                   shape->height, shape->width, shape->channels);
  if (name_len > GF_MAX_NAME_LEN)
    return gf_fail(-ENAMETOOLONG, src, idx, GF_NO_INDEX,
                   "source name of %zu bytes: at most %u are kept", name_len,
                   GF_MAX_NAME_LEN);
  bool ok1, ok2;
  w->records =
      grow(w->records, &w->rec_cap, w->count + 1, GF_RECORD_SIZE, &ok1);
  w->names = grow(w->names, &w->names_cap, w->names_len + name_len, 1, &ok2);
  if (!ok1 || !ok2)
    return gf_fail(-ENOMEM, w->dir, idx, GF_NO_INDEX,
                   "out of memory for the index (%llu samples)",
                   (unsigned long long)w->count);

  if (w->fd >= 0 && w->shard_has_samples) {
    uint64_t start = (w->pos + w->align - 1) & ~(uint64_t)(w->align - 1);
    if (start > w->shard_size || len > w->shard_size - start) {
      rc = close_shard(w);
      if (rc < 0)
        return rc;
    }
  }
  if (w->fd < 0 && (rc = open_shard(w)) < 0)
    return rc;
  uint64_t pad = (w->align - w->pos % w->align) % w->align;
  if ((rc = append(w, NULL, pad)) < 0)
    return rc;
  uint64_t off = w->pos;
  if ((rc = append(w, data, len)) < 0)
    return rc;
  w->shard_has_samples = true;

  uint8_t *r = w->records + w->count * GF_RECORD_SIZE;
  memset(r, 0, GF_RECORD_SIZE);
  gf_put64(r + GF_REC_OFFSET, off);
  gf_put64(r + GF_REC_LENGTH, len);
  gf_put64(r + GF_REC_LABEL, (uint64_t)label);
  gf_put64(r + GF_REC_NAME_OFF, w->names_len);
  gf_put32(r + GF_REC_SHARD, w->nshards);
  gf_put32(r + GF_REC_HEIGHT, shape->height);
  gf_put32(r + GF_REC_WIDTH, shape->width);
  gf_put32(r + GF_REC_DATA_CRC, gf_crc32c(0, data, len));
  gf_put32(r + GF_REC_NAME_LEN, (uint32_t)name_len);
  gf_put16(r + GF_REC_CODEC, (uint16_t)codec);
  r[GF_REC_DTYPE] = (uint8_t)shape->dtype;
  r[GF_REC_CHANNELS] = (uint8_t)shape->channels;
  gf_put32(r + GF_REC_RECORD_CRC, gf_record_crc(w->count, r));
  if (name_len)
    memcpy(w->names + w->names_len, src, name_len);
  w->names_len += name_len;
  w->count++;
  return 0;
}

int gf_writer_test_hole(gf_writer *w, uint64_t bytes) {
  if (!w)
    return -EINVAL;
  int rc = check_usable(w);
  if (rc < 0)
    return rc;
  if (w->fd < 0 && (rc = open_shard(w)) < 0)
    return rc;
  if ((rc = flush_buf(w)) < 0)
    return rc;
  if (w->pos > (uint64_t)INT64_MAX - bytes)
    return gf_fail(-EFBIG, w->path, GF_NO_INDEX, w->pos, "hole too large");
  w->pos += bytes;
  w->buf_off = w->pos;
  w->bytes += bytes;
  return 0;
}

uint32_t gf_writer_shards(const gf_writer *w) { return w->nshards; }

uint64_t gf_writer_count(const gf_writer *w) { return w ? w->count : 0; }
uint64_t gf_writer_bytes(const gf_writer *w) { return w ? w->bytes : 0; }

static int fsync_path(const char *path, int flags, const char *what) {
  int fd = gf_sys_open(path, flags | O_CLOEXEC, 0);
  if (fd < 0)
    return gf_fail(fd, path, GF_NO_INDEX, GF_NO_INDEX, "opening %s: %s", what,
                   gf_strerror(fd));
  int rc = gf_sys_fsync(fd);
  if (rc < 0)
    rc = gf_fail(rc, path, GF_NO_INDEX, GF_NO_INDEX, "fsync of %s: %s", what,
                 gf_strerror(rc));
  close(fd);
  return rc;
}

/* Rewrites each shard's header with the dataset id and makes it durable
 * (a given id: done as each was closed). */
static int seal_shards(gf_writer *w, uint64_t id) {
  if (w->fixed_id)
    return 0;
  char path[PATH_MAX];
  for (uint32_t i = 0; i < w->nshards; i++) {
    shard_path(w, i, path, sizeof path);
    int fd = gf_sys_open(path, O_WRONLY | O_CLOEXEC, 0);
    if (fd < 0)
      return gf_fail(fd, path, GF_NO_INDEX, GF_NO_INDEX,
                     "reopening the shard to seal it: %s", gf_strerror(fd));
    uint8_t h[GF_SHARD_HEADER_SIZE];
    shard_header(h, i, w->align, id);
    int rc = pwrite_all(fd, h, sizeof h, 0, path);
    if (rc == 0 && (rc = gf_sys_fsync(fd)) < 0)
      rc = gf_fail(rc, path, GF_NO_INDEX, GF_NO_INDEX, "fsync of the shard: %s",
                   gf_strerror(rc));
    if (close(fd) != 0 && rc == 0) {
      int e = errno;
      rc = gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "closing the shard: %s",
                   strerror(e));
    }
    if (rc < 0)
      return rc;
  }
  return 0;
}

static uint64_t round8(uint64_t v) { return (v + 7) & ~(uint64_t)7; }

/* One table of the index: its bytes and where they go. */
typedef struct piece {
  uint64_t off;
  const void *data;
  uint64_t len;
} piece;

/* Writes the pieces (in increasing offset, not overlapping) with zero
 * bytes in the gaps and up to file_size, fsyncs and closes. */
static int write_index(const char *tmp, const piece *p, int n,
                       uint64_t file_size) {
  int fd = gf_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return gf_fail(fd, tmp, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot create the index: %s", gf_strerror(fd));
  static const uint8_t zeros[8];
  int rc = 0;
  uint64_t at = 0;
  for (int i = 0; i <= n && rc == 0; i++) {
    uint64_t next = i < n ? p[i].off : file_size;
    /* The gaps are the rounding of a table's start to 8: < 8 bytes. */
    if (next > at)
      rc = pwrite_all(fd, zeros, (size_t)(next - at), at, tmp);
    if (rc == 0 && i < n && p[i].len)
      rc = pwrite_all(fd, p[i].data, (size_t)p[i].len, p[i].off, tmp);
    if (i < n)
      at = p[i].off + p[i].len;
  }
  if (rc == 0 && (rc = gf_sys_fsync(fd)) < 0)
    rc = gf_fail(rc, tmp, GF_NO_INDEX, GF_NO_INDEX, "fsync of the index: %s",
                 gf_strerror(rc));
  if (close(fd) != 0 && rc == 0) {
    int e = errno;
    rc = gf_fail(-e, tmp, GF_NO_INDEX, GF_NO_INDEX, "closing the index: %s",
                 strerror(e));
  }
  return rc;
}

int gf_writer_finish(gf_writer *w) {
  if (!w)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_writer_finish: no writer");
  int rc = check_usable(w);
  if (rc < 0)
    return rc;
  if ((rc = close_shard(w)) < 0)
    return rc;
  if (w->nclasses) {
    for (uint64_t i = 0; i < w->count; i++) {
      int64_t label =
          (int64_t)gf_le64(w->records + i * GF_RECORD_SIZE + GF_REC_LABEL);
      if (label < 0 || label >= (int64_t)w->nclasses)
        return fail_sticky(
            w, gf_fail(-EINVAL, w->dir, i, GF_NO_INDEX,
                       "label %lld is not a class index (the dataset has %u "
                       "classes)",
                       (long long)label, w->nclasses));
    }
  }

  /* Layout (each table's start rounded to 8; sizes follow from counts
   * already held in memory). Version 2: header, summary, shard table,
   * class table, records, names: everything an open reads lies in the
   * first bytes, one ranged read of a remote index. Version 1: header,
   * records, shard table, class table, names. */
  gf_summary_acc sum;
  gf_summary_init(&sum);
  uint8_t summary[GF_SUMMARY_HEAD_SIZE +
                  GF_CODEC_COUNT_ * 2 * GF_SUMMARY_ENTRY_SIZE];
  uint32_t summary_size = 0;
  uint64_t rec_size = w->count * GF_RECORD_SIZE;
  uint64_t shards_size = (uint64_t)w->nshards * 8;
  uint64_t records_off, shards_off, classes_off, names_off;
  if (w->index_version >= 2) {
    for (uint64_t i = 0; i < w->count; i++) {
      const uint8_t *r = w->records + i * GF_RECORD_SIZE;
      gf_shape sh = {gf_le32(r + GF_REC_HEIGHT), gf_le32(r + GF_REC_WIDTH),
                     r[GF_REC_CHANNELS], r[GF_REC_DTYPE]};
      gf_summary_add(&sum, gf_le16(r + GF_REC_CODEC), &sh,
                     gf_le64(r + GF_REC_LENGTH));
    }
    summary_size = gf_summary_write(&sum, summary);
    shards_off = GF_INDEX_HEADER_SIZE + summary_size;
    classes_off = shards_off + shards_size;
    records_off = round8(classes_off + w->classes_len);
    names_off = records_off + rec_size;
  } else {
    records_off = GF_INDEX_HEADER_SIZE;
    shards_off = records_off + rec_size;
    classes_off = shards_off + shards_size;
    names_off = round8(classes_off + w->classes_len);
  }
  uint64_t file_size = round8(names_off + w->names_len);

  uint8_t *shards = malloc(shards_size ? (size_t)shards_size : 1);
  if (!shards)
    return gf_fail(-ENOMEM, w->dir, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the shard table");
  for (uint32_t i = 0; i < w->nshards; i++)
    gf_put64(shards + (uint64_t)i * 8, w->shard_sizes[i]);
  /* The records' CRC fields are left out: a CRC stored right after its
   * bytes makes the pair transparent to an outer CRC (the CRC residue), so
   * a table CRC over them would not depend on the records' content. */
  uint32_t records_crc = 0;
  for (uint64_t i = 0; i < w->count; i++)
    records_crc = gf_crc32c(records_crc, w->records + i * GF_RECORD_SIZE,
                            GF_REC_RECORD_CRC);
  uint32_t tables_crc = gf_crc32c(0, shards, (size_t)shards_size);
  tables_crc = gf_crc32c(tables_crc, w->classes, (size_t)w->classes_len);
  uint32_t names_crc = gf_crc32c(0, w->names, (size_t)w->names_len);
  uint32_t id_hi = gf_crc32c(tables_crc, w->names, (size_t)w->names_len);
  uint64_t id =
      w->fixed_id ? w->fixed_id : ((uint64_t)id_hi << 32) | records_crc;

  uint8_t head[GF_INDEX_HEADER_SIZE];
  memset(head, 0, sizeof head);
  memcpy(head + GF_IH_MAGIC, GF_INDEX_MAGIC, 8);
  gf_put32(head + GF_IH_VERSION, w->index_version);
  gf_put32(head + GF_IH_HEADER_SIZE, GF_INDEX_HEADER_SIZE);
  gf_put64(head + GF_IH_COUNT, w->count);
  gf_put32(head + GF_IH_SHARDS, w->nshards);
  gf_put32(head + GF_IH_CLASSES, w->nclasses);
  gf_put32(head + GF_IH_RECORD_SIZE, GF_RECORD_SIZE);
  gf_put32(head + GF_IH_ALIGNMENT, w->align);
  gf_put64(head + GF_IH_RECORDS_OFF, records_off);
  gf_put64(head + GF_IH_SHARDS_OFF, shards_off);
  gf_put64(head + GF_IH_CLASSES_OFF, classes_off);
  gf_put64(head + GF_IH_CLASSES_SIZE, w->classes_len);
  gf_put64(head + GF_IH_NAMES_OFF, names_off);
  gf_put64(head + GF_IH_NAMES_SIZE, w->names_len);
  gf_put64(head + GF_IH_FILE_SIZE, file_size);
  gf_put64(head + GF_IH_DATASET_ID, id);
  gf_put32(head + GF_IH_RECORDS_CRC, records_crc);
  gf_put32(head + GF_IH_TABLES_CRC, tables_crc);
  gf_put32(head + GF_IH_NAMES_CRC, names_crc);
  gf_put32(head + GF_IH_SUMMARY_SIZE, summary_size); /* version 1: 0 */
  gf_put32(head + GF_IH_HEADER_CRC, gf_crc32c(0, head, GF_IH_HEADER_CRC));

  char tmp[PATH_MAX], final[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/%s", w->dir, GF_INDEX_TMP_NAME);
  snprintf(final, sizeof final, "%s/%s", w->dir, GF_INDEX_NAME);
  rc = seal_shards(w, id);
  if (rc == 0) {
    const piece v2[6] = {{0, head, GF_INDEX_HEADER_SIZE},
                         {GF_INDEX_HEADER_SIZE, summary, summary_size},
                         {shards_off, shards, shards_size},
                         {classes_off, w->classes, w->classes_len},
                         {records_off, w->records, rec_size},
                         {names_off, w->names, w->names_len}};
    const piece v1[5] = {{0, head, GF_INDEX_HEADER_SIZE},
                         {records_off, w->records, rec_size},
                         {shards_off, shards, shards_size},
                         {classes_off, w->classes, w->classes_len},
                         {names_off, w->names, w->names_len}};
    const piece *p = w->index_version >= 2 ? v2 : v1;
    rc = write_index(tmp, p, w->index_version >= 2 ? 6 : 5, file_size);
  }
  free(shards);
  if (rc == 0 && (rc = gf_sys_rename(tmp, final)) < 0)
    rc = gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                 "renaming %s into place: %s", tmp, gf_strerror(rc));
  if (rc == 0)
    rc = fsync_path(w->dir, O_RDONLY | O_DIRECTORY, "the dataset folder");
  if (rc < 0)
    return fail_sticky(w, rc);
  w->finished = true;
  return 0;
}

void gf_writer_destroy(gf_writer *w) {
  if (!w)
    return;
  if (w->fd >= 0)
    close(w->fd);
  free(w->dir);
  free(w->buf);
  free(w->shard_sizes);
  free(w->records);
  free(w->names);
  free(w->classes);
  free(w);
}
