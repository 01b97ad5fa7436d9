/* Tar shard header scan (tar_scan.h): libarchive reads each member's
 * header(s) through read, skip and seek callbacks over the caller's
 * read-at-offset function, and skips every payload by the skip callback,
 * so a scan reads a shard's headers (and the small members that share a
 * block with them), never the large payloads. The only includer of
 * archive.h. */
#include "format/tar_scan.h"

#include <archive.h>       /* the tar reader */
#include <archive_entry.h> /* a member's path, type and size */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scan {
  const char *shard;
  uint64_t size;
  uint64_t pos; /* the next byte the read callback gives */
  gf_tar_read_fn read;
  void *read_ctx;
  int read_rc; /* the read function's error, recorded by it */
  uint8_t *buf;
} scan;

static la_ssize_t read_cb(struct archive *a, void *client, const void **out) {
  scan *s = client;
  *out = s->buf;
  if (s->pos >= s->size)
    return 0;
  uint64_t want = s->size - s->pos;
  if (want > GF_TAR_READ_BLOCK)
    want = GF_TAR_READ_BLOCK;
  int64_t n = s->read(s->read_ctx, s->buf, s->pos, want);
  if (n < 0) {
    s->read_rc = (int)n;
    archive_set_error(a, EIO, "read failed");
    return -1;
  }
  if ((uint64_t)n != want) {
    /* The shard is shorter than its size said. */
    s->read_rc =
        gf_fail(GF_ETRUNCATED, s->shard, GF_NO_INDEX, s->pos + n,
                "the shard ends at byte %llu, before its size "
                "of %llu bytes",
                (unsigned long long)(s->pos + n), (unsigned long long)s->size);
    archive_set_error(a, EIO, "short read");
    return -1;
  }
  s->pos += (uint64_t)n;
  return (la_ssize_t)n;
}

static la_int64_t skip_cb(struct archive *a, void *client, la_int64_t req) {
  (void)a;
  scan *s = client;
  if (req <= 0)
    return 0;
  uint64_t n = s->size - s->pos;
  if ((uint64_t)req < n)
    n = (uint64_t)req;
  s->pos += n;
  return (la_int64_t)n;
}

static la_int64_t seek_cb(struct archive *a, void *client, la_int64_t off,
                          int whence) {
  (void)a;
  scan *s = client;
  int64_t base = whence == SEEK_SET   ? 0
                 : whence == SEEK_CUR ? (int64_t)s->pos
                                      : (int64_t)s->size;
  int64_t to;
  if (__builtin_add_overflow(base, off, &to) || to < 0)
    return ARCHIVE_FATAL;
  s->pos = (uint64_t)to > s->size ? s->size : (uint64_t)to;
  return (la_int64_t)s->pos;
}

/* Turns libarchive's failure at header offset `at` into gpufeed's error. */
static int header_error(scan *s, struct archive *a, uint64_t at) {
  /* A shard that ends while the last member's data is skipped leaves the
   * header position at that member: the bytes consumed say where the next
   * header starts. (A bad checksum's header is consumed: not there.) */
  la_int64_t consumed = archive_filter_bytes(a, 0);
  if (s->read_rc)
    return gf_fail_context(s->read_rc, s->shard, GF_NO_INDEX,
                           "reading a tar header");
  const char *why = archive_error_string(a);
  if (!why)
    why = "unknown error";
  int code = GF_ECORRUPT;
  const char *what = "a damaged tar header";
  if (at == 0 && strstr(why, "Unrecognized archive format")) {
    code = GF_EFORMAT;
    what = "not a tar file (no valid tar header at its start)";
  } else if (strstr(why, "Truncated")) {
    code = GF_ETRUNCATED;
    if (consumed > 0 && (uint64_t)consumed > at)
      at = (uint64_t)consumed;
    what = "the shard ends inside a tar header";
  } else if (strstr(why, "Damaged")) {
    what = "a tar header with a bad checksum";
  } else if (archive_errno(a) == ENOMEM) {
    code = -ENOMEM;
    what = "out of memory reading a tar header";
  }
  return gf_fail(code, s->shard, GF_NO_INDEX, at,
                 "%s at byte %llu (libarchive: %s)", what,
                 (unsigned long long)at, why);
}

/* Checks one regular member's fields and gives it to fn. */
static int member(scan *s, struct archive *a, struct archive_entry *e,
                  uint64_t hdr, gf_tar_member_fn fn, void *fn_ctx) {
  /* The UTF-8 form: a PAX path is UTF-8, which the C locale's
   * archive_entry_pathname may fail to convert. */
  const char *path = archive_entry_pathname_utf8(e);
  if (!path)
    path = archive_entry_pathname(e);
  if (!path || !path[0])
    return gf_fail(GF_ECORRUPT, s->shard, GF_NO_INDEX, hdr,
                   "the member at byte %llu has no name",
                   (unsigned long long)hdr);
  size_t len = strnlen(path, GF_TAR_NAME_MAX + 1);
  if (len > GF_TAR_NAME_MAX)
    return gf_fail(GF_ECORRUPT, s->shard, GF_NO_INDEX, hdr,
                   "the member at byte %llu has a name longer than %u "
                   "bytes",
                   (unsigned long long)hdr, GF_TAR_NAME_MAX);
  la_int64_t sz = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
  /* The data follows the headers just consumed: the filter's position. */
  la_int64_t data = archive_filter_bytes(a, 0);
  if (sz < 0 || data < 0 || (uint64_t)data % 512 != 0)
    return gf_fail(GF_ECORRUPT, s->shard, GF_NO_INDEX, hdr,
                   "member '%s' at byte %llu has a bad size or data "
                   "offset",
                   path, (unsigned long long)hdr);
  if ((uint64_t)data > s->size || (uint64_t)sz > s->size - (uint64_t)data)
    return gf_fail(GF_ECORRUPT, s->shard, GF_NO_INDEX, hdr,
                   "member '%s' (header at byte %llu) holds %llu bytes "
                   "from byte %llu, past the shard's end at %llu",
                   path, (unsigned long long)hdr, (unsigned long long)sz,
                   (unsigned long long)data, (unsigned long long)s->size);
  gf_tar_member m = {.path = path,
                     .header_offset = hdr,
                     .data_offset = (uint64_t)data,
                     .size = (uint64_t)sz};
  return fn(fn_ctx, &m);
}

int gf_tar_scan_counted(const char *shard, uint64_t size, gf_tar_read_fn read,
                        void *read_ctx, gf_tar_member_fn fn, void *fn_ctx,
                        uint64_t *skipped) {
  if (skipped)
    *skipped = 0;
  if (!shard)
    shard = "(tar shard)";
  if (!read || !fn)
    return gf_fail(-EINVAL, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_tar_scan: read and fn are required");
  scan s = {.shard = shard, .size = size, .read = read, .read_ctx = read_ctx};
  if (size > INT64_MAX)
    return gf_fail(GF_ELIMIT, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "a shard of %llu bytes is too large",
                   (unsigned long long)size);
  s.buf = malloc(GF_TAR_READ_BLOCK);
  struct archive *a = archive_read_new();
  if (!s.buf || !a) {
    free(s.buf);
    archive_read_free(a);
    return gf_fail(-ENOMEM, shard, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory starting a tar scan");
  }
  int rc = 0;
  if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
      archive_read_set_read_callback(a, read_cb) != ARCHIVE_OK ||
      archive_read_set_skip_callback(a, skip_cb) != ARCHIVE_OK ||
      archive_read_set_seek_callback(a, seek_cb) != ARCHIVE_OK ||
      archive_read_set_callback_data(a, &s) != ARCHIVE_OK) {
    rc = gf_fail(GF_EINTERNAL, shard, GF_NO_INDEX, GF_NO_INDEX,
                 "libarchive refused the tar reader's set-up: %s",
                 archive_error_string(a) ? archive_error_string(a) : "?");
    goto out;
  }
  if (archive_read_open1(a) != ARCHIVE_OK) {
    rc = header_error(&s, a, 0);
    goto out;
  }
  for (;;) {
    struct archive_entry *e;
    int r = archive_read_next_header(a, &e);
    la_int64_t hdr = archive_read_header_position(a);
    if (hdr < 0)
      hdr = 0;
    if (r == ARCHIVE_EOF)
      break;
    /* ARCHIVE_WARN is taken too: its only causes for tar are a name that
     * does not convert to the locale's charset (the UTF-8 form is used)
     * and a header field libarchive ignores. */
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      rc = header_error(&s, a, (uint64_t)hdr);
      goto out;
    }
    /* Regular files only; a hard link is AE_IFREG with a link target; a
     * GNU sparse member is not a sample's bytes as stored. */
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) ||
        archive_entry_sparse_count(e) > 0) {
      if (skipped)
        (*skipped)++;
      continue;
    }
    rc = member(&s, a, e, (uint64_t)hdr, fn, fn_ctx);
    if (rc)
      goto out;
  }
out:
  archive_read_free(a);
  free(s.buf);
  return rc;
}

int gf_tar_scan(const char *shard, uint64_t size, gf_tar_read_fn read,
                void *read_ctx, gf_tar_member_fn fn, void *fn_ctx) {
  return gf_tar_scan_counted(shard, size, read, read_ctx, fn, fn_ctx, NULL);
}

static int64_t object_read(void *ctx, void *buf, uint64_t off, uint64_t len) {
  return gf_object_read_upto(ctx, buf, off, len);
}

int gf_tar_scan_object(gf_object *o, gf_tar_member_fn fn, void *fn_ctx) {
  return gf_tar_scan(o->display, o->size, object_read, o, fn, fn_ctx);
}

int gf_tar_scan_object_counted(gf_object *o, gf_tar_member_fn fn, void *fn_ctx,
                               uint64_t *skipped) {
  return gf_tar_scan_counted(o->display, o->size, object_read, o, fn, fn_ctx,
                             skipped);
}
