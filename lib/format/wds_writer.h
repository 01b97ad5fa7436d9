/* WebDataset tar shards written (wds_writer.c): samples added one by one,
 * each as adjacent tar members KEY.FIELD (webdataset's grouping rule:
 * notes WEBDATASET.md), packed into shards of a size limit named
 * shard-000000.tar, shard-000001.tar, ... in one folder. What `gpufeed
 * build --format wds` writes.
 *
 * The tar files are POSIX pax (libarchive's pax_restricted writer): a
 * plain ustar header where the name fits one (100 bytes, or a ustar
 * prefix of 155 and a name of 100 split at a '/'), a PAX extended header
 * ('x') before the member only for a longer or non-ASCII name or a size of
 * 8 GiB or more, as GNU tar, bsdtar and Python's tarfile read them. Names
 * are written as the caller's bytes: valid UTF-8 as a PAX path, other
 * bytes as a PAX path with hdrcharset=BINARY, whatever the process's
 * locale. Every member: a regular file, mode 0644, mtime 0, uid and gid 0,
 * no user or group name; each member's data starts on a 512-byte block;
 * a shard ends with tar's two zero blocks and is padded with zeros to a
 * multiple of GF_WDS_RECORD bytes, as GNU tar and tarfile pad. The same
 * calls give byte-identical shards.
 *
 * A shard is written under a hidden temporary name in the folder,
 * ".shard-NNNNNN.tar.gftmp-TAG", and renamed into place (never over an
 * existing file) once complete, after an fsync; the folder is fsynced
 * after each rename. A reader of the folder sees complete shards only.
 *
 * Threads: one writer is used by one thread at a time; writers of
 * different folders are independent. */
#ifndef GF_FORMAT_WDS_WRITER_H
#define GF_FORMAT_WDS_WRITER_H

#include "common/common.h"

/* Shard file names: the shard's number, from 0. */
#define GF_WDS_SHARD_FMT "shard-%06u.tar"
/* A shard's size is a multiple of this: tar's record of 20 blocks. */
#define GF_WDS_RECORD 10240u
/* The longest member name written, in bytes (KEY.FIELD), so that every
 * name reads back through gf_tar_scan (GF_TAR_NAME_MAX). */
#define GF_WDS_NAME_MAX 4096u

typedef struct gf_wds_writer gf_wds_writer;

typedef struct gf_wds_writer_opts {
  /* A shard is closed when adding the next sample would make it larger
   * than this many bytes (its file size: headers, data, padding, the end
   * blocks and the final padding to GF_WDS_RECORD); a sample that alone
   * makes a shard larger gets a shard of its own. 0: 1 GiB. */
  uint64_t shard_bytes;
  /* TAG of the temporary names (letters, digits, '-' and '_'; at most 64
   * bytes): the caller's way of telling whose a leftover temporary file
   * was. NULL: the process id. */
  const char *tmp_tag;
} gf_wds_writer_opts;

/* One member of a sample: the name after "KEY." (a webdataset field:
 * "jpg", "cls", "seg.png"; not empty, no '/') and its bytes. */
typedef struct gf_wds_member {
  const char *field;
  const void *data; /* may be NULL when size is 0 */
  uint64_t size;
} gf_wds_member;

/* What a writer has done. */
typedef struct gf_wds_writer_stats {
  uint64_t samples;    /* added */
  uint64_t members;    /* added, over all samples */
  uint64_t data_bytes; /* the members' data, without tar's headers */
  uint32_t shards;     /* renamed into place */
  uint64_t bytes;      /* of the shards renamed into place */
} gf_wds_writer_stats;

/* Opens a writer of shards in the existing folder `dir` (opts NULL: the
 * defaults). Nothing is written before the first sample. Returns 0, -EINVAL
 * (a bad tmp_tag), -ENOTDIR / -ENOENT (dir is not a folder) or -ENOMEM,
 * with context. *out is owned by the caller: free it with
 * gf_wds_writer_free. */
int gf_wds_writer_open(const char *dir, const gf_wds_writer_opts *opts,
                       gf_wds_writer **out);

/* Appends the sample `key` with its `count` members (1 to 65,535), in the
 * order given, to the current shard, first closing it when the sample
 * would take it past the size limit. The key must be one webdataset reads
 * back as written: not empty, no empty, "." or ".." component, no '.' in
 * its last component, no leading or trailing '/', not a name webdataset
 * drops as metadata (a first component __NAME__ before a '/'), and not a
 * key this writer has taken; fields must differ from each other after
 * ASCII lower-casing (webdataset lower-cases them), and KEY.FIELD be at
 * most GF_WDS_NAME_MAX bytes. Returns 0; -EINVAL (a key or field broken
 * as above, named), -EEXIST (the key was taken), GF_ELIMIT (a name too
 * long); a write error (-ENOSPC, -EIO, -EFBIG...) naming the file, which
 * is sticky: every later call returns it. */
int gf_wds_writer_add(gf_wds_writer *w, const char *key,
                      const gf_wds_member *members, size_t count);

/* Whether `key` was taken by a sample added. */
bool gf_wds_writer_has_key(const gf_wds_writer *w, const char *key);

/* Makes `key` unique among the keys taken: `key` itself when free, else
 * KEY_1, KEY_2, ... (the first free one) into buf (cap bytes; not
 * overlapping key). Returns 0
 * (key as it was), 1 (a suffix added) or GF_ELIMIT (does not fit cap).
 * Deterministic: a function of the keys taken so far. */
int gf_wds_writer_unique_key(const gf_wds_writer *w, const char *key, char *buf,
                             size_t cap);

/* Closes the last shard (when a sample was added since the last one was
 * closed) and renames it into place. After it, only gf_wds_writer_stats_get,
 * gf_wds_writer_remove_shards and gf_wds_writer_free may be called.
 * Returns 0 or the first error (sticky errors included), with context;
 * after a failure no temporary file is left. */
int gf_wds_writer_close(gf_wds_writer *w);

/* Numbers and bytes so far (after close: the totals). */
void gf_wds_writer_stats_get(const gf_wds_writer *w, gf_wds_writer_stats *out);

/* Removes the shards this writer renamed into place (a build that failed
 * after some shards: none of it is left) and its temporary file. Returns
 * the number removed, or the first unlink error (-errno with context; the
 * others are still tried). */
int gf_wds_writer_remove_shards(gf_wds_writer *w);

/* Frees the writer. A shard still open is abandoned: its temporary file
 * is removed; shards already renamed into place stay. NULL accepted. */
void gf_wds_writer_free(gf_wds_writer *w);

/* What gf_wds_file_key changed to make a file's name a key (flags). */
enum {
  /* '.' in the file name's stem (beside its extension) became '_':
   * webdataset's key runs to the first '.' of the last component. */
  GF_WDS_KEY_DOTS = 1u << 0,
  /* The first component, a folder __NAME__, lost leading '_' until
   * webdataset no longer drops it as metadata. */
  GF_WDS_KEY_META = 1u << 1,
  /* An empty stem (a file named ".png") became "_". */
  GF_WDS_KEY_EMPTY = 1u << 2,
};

/* The key and field of the image file `path` (relative, '/'-separated;
 * "." and empty components dropped, ".." resolved lexically): the key is
 * the path less its extension, with the changes of the flags above, set
 * in *changes; the field is the extension lower-cased when it is png, jpg
 * or jpeg (any case), else "png" or "jpg" as `content` says
 * (GF_CODEC_PNG or GF_CODEC_JPEG: what the file holds), the whole file
 * name then being the stem. key gets cap bytes, field field_cap (8 are
 * enough). Returns 0, -EINVAL (a path with no file name, or a content
 * that is neither when the name has no image extension) or GF_ELIMIT
 * (too long for cap), with context. Any thread. */
int gf_wds_file_key(const char *path, int content, char *key, size_t cap,
                    char *field, size_t field_cap, uint32_t *changes);

#endif
