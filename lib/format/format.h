/* Internal interface of the dataset format (spec: docs/FORMAT.md): the
 * writer used by `gpufeed build`, and the directory commit that makes a
 * build atomic. The reader is the public gf_dataset_* API. */
#ifndef GF_FORMAT_H
#define GF_FORMAT_H

#include "common/common.h"

#define GF_INDEX_NAME "index.gfi"
#define GF_SHARD_FMT "shard-%06u.gfs"
#define GF_DEFAULT_SHARD_SIZE (1ull << 30)

typedef struct gf_writer gf_writer;

typedef struct gf_writer_opts {
  uint64_t shard_size; /* start a new shard once a shard would pass this
                          many bytes (0: GF_DEFAULT_SHARD_SIZE); a sample
                          larger than it gets a shard of its own */
  uint32_t alignment;  /* 0 or 1: packed; a power of two up to 1 MiB (4096
                          for O_DIRECT): each extent starts aligned */
} gf_writer_opts;

/* Creates a writer that writes shards and the index into the existing,
 * empty folder `dir`. Returns 0, -errno or -EINVAL (bad options). Single
 * thread: a writer is not thread-safe. */
int gf_writer_create(const char *dir, const gf_writer_opts *opts,
                     gf_writer **out);
/* Appends a class name (classes are numbered in the order added). */
int gf_writer_add_class(gf_writer *w, const char *name);
/* Appends one sample: its stored bytes, codec, decoded shape, label and the
 * source path (relative to the build root; kept for error messages). The
 * data is written (buffered) at once. Returns 0 or -errno with context. */
int gf_writer_add(gf_writer *w, const void *data, size_t len, int codec,
                  const gf_shape *shape, int64_t label, const char *source);
/* Number of samples added so far. */
uint64_t gf_writer_count(const gf_writer *w);
/* Bytes written to shards so far (including alignment padding). */
uint64_t gf_writer_bytes(const gf_writer *w);
/* Writes the index last, fsyncs every file and the folder. After a
 * successful finish the folder holds a complete dataset. Returns 0 or
 * -errno (ENOSPC, EIO, EFBIG...) with context. */
int gf_writer_finish(gf_writer *w);
/* Frees the writer; closes files without finishing (the caller then removes
 * the folder). NULL accepted. */
void gf_writer_destroy(gf_writer *w);

/* Moves the complete dataset folder `tmp` to `final` atomically: rename()
 * when `final` does not exist; with `force`, an existing `final` that is a
 * gpufeed dataset (or empty folder) is swapped with renameat2
 * RENAME_EXCHANGE and the old one removed. Without force an existing final
 * gives -EEXIST. fsyncs the parent folder. Returns 0 or -errno. */
int gf_dir_commit(const char *tmp, const char *final, bool force);
/* Removes a folder written by the writer (its index, shards and temporary
 * files, then the folder). Best effort; returns 0 or -errno. */
int gf_dir_remove(const char *dir);

/* A source folder listed for `gpufeed build` and the loader's direct PNG
 * folder source. ImageFolder: ROOT/<class>/.../*.png (extension matched
 * case-insensitively), classes sorted by name (byte order), label = class
 * index, files sorted by their relative path. Labels file: lines
 * `relative/path.png label` (split at the last run of blanks; blank lines
 * and lines starting with '#' ignored), kept in file order; every path must
 * stay inside ROOT (no absolute paths, no '..' escaping, no symlink leading
 * out). Hidden entries (leading '.') are ignored. */
typedef struct gf_folder_entry {
  char *path; /* relative to root, NUL-terminated */
  int64_t label;
} gf_folder_entry;

typedef struct gf_folder {
  char *root;
  gf_folder_entry *entries;
  uint64_t count;
  char **classes; /* ImageFolder class names; NULL/0 for a labels file */
  uint32_t class_count;
} gf_folder;

/* Lists `root` as above (labels_file NULL: ImageFolder). *out is owned by
 * the caller and freed with gf_folder_free(). Returns 0, -ENOENT/-ENOTDIR,
 * GF_EBADSOURCE (no images, bad labels line, path escaping the root: with
 * file and line in the context). */
int gf_folder_scan(const char *root, const char *labels_file, gf_folder **out);
void gf_folder_free(gf_folder *f);

/* The open file descriptor of shard i (O_RDONLY, owned by the dataset), or
 * -1 when i is out of range. For the loader's readers. */
int gf_dataset_shard_fd(const gf_dataset *ds, uint32_t i);
/* Size in bytes of shard i as checked at open, 0 when out of range. */
uint64_t gf_dataset_shard_size(const gf_dataset *ds, uint32_t i);

#endif
