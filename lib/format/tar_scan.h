/* Tar shard header scan (tar_scan.c): every regular member of a tar file
 * (ustar with its prefix, GNU long names, PAX path and size, base-256
 * sizes): its full path, the offset of its data in the shard and its size,
 * read with libarchive through a read-at-offset callback, so that a shard
 * can be a local file or an HTTP or S3 object alike. Payloads are skipped,
 * never read beyond the block that holds a header (GF_TAR_READ_BLOCK).
 *
 * Threads: a scan uses only its own state; any number may run at once. */
#ifndef GF_FORMAT_TAR_SCAN_H
#define GF_FORMAT_TAR_SCAN_H

#include "common/common.h"
#include "io/storage.h"

/* The longest member path accepted, in bytes (without the NUL): a longer
 * one is an error, so that a scan's memory is bounded. */
#define GF_TAR_NAME_MAX 4096u
/* Bytes asked of the read callback at a time: headers of small members
 * come in one read (one round trip on a remote object); a payload that
 * runs past the block is skipped without being read. */
#define GF_TAR_READ_BLOCK (64u * 1024u)

/* Up to len bytes at off of the shard into buf: the count read (fewer only
 * where the shard ends) or a negative code with the error recorded
 * (gf_fail). */
typedef int64_t (*gf_tar_read_fn)(void *ctx, void *buf, uint64_t off,
                                  uint64_t len);

/* One regular member. */
typedef struct gf_tar_member {
  const char *path;       /* full path (ustar prefix/name, GNU L, PAX path),
                             UTF-8 as stored; valid during the call only */
  uint64_t header_offset; /* its first header (its x/L headers included) */
  uint64_t data_offset;   /* its data: a multiple of 512 */
  uint64_t size;          /* its data's bytes (PAX and base-256 included) */
} gf_tar_member;

/* Called once a regular member, in the shard's order. A nonzero return
 * stops the scan and is what gf_tar_scan returns. */
typedef int (*gf_tar_member_fn)(void *ctx, const gf_tar_member *m);

/* Scans the tar file `shard` (its name, for messages) of `size` bytes,
 * read through read(read_ctx, ...), and calls fn(fn_ctx, member) for each
 * regular member; directories, symbolic and hard links, GNU sparse files
 * and other special members are skipped. Returns 0, fn's nonzero return, or an
 * error with the shard and byte offset recorded: GF_EFORMAT (not a tar file),
 * GF_ECORRUPT (a bad header checksum, a member running past the shard's end, a
 * name longer than GF_TAR_NAME_MAX), GF_ETRUNCATED (the shard ends inside a
 * header), -ENOMEM, or the read's error. Any thread. */
int gf_tar_scan(const char *shard, uint64_t size, gf_tar_read_fn read,
                void *read_ctx, gf_tar_member_fn fn, void *fn_ctx);
/* gf_tar_scan, counting the members skipped in *skipped (NULL: not
 * counted). */
int gf_tar_scan_counted(const char *shard, uint64_t size, gf_tar_read_fn read,
                        void *read_ctx, gf_tar_member_fn fn, void *fn_ctx,
                        uint64_t *skipped);

/* gf_tar_scan over an open object (its display name and size at open). */
int gf_tar_scan_object(gf_object *o, gf_tar_member_fn fn, void *fn_ctx);
int gf_tar_scan_object_counted(gf_object *o, gf_tar_member_fn fn, void *fn_ctx,
                               uint64_t *skipped);

#endif
