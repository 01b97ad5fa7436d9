/* Internal interface of the dataset format (spec: docs/FORMAT.md): the
 * on-disk layout's constants, the writer used by `gpufeed build`, the
 * directory commit that makes a build atomic, the source folder listing,
 * and the reader's extras for the loader (the reader itself is the public
 * gf_dataset_* API). */
#ifndef GF_FORMAT_H
#define GF_FORMAT_H

#include "common/common.h"
#include "io/storage.h"

#define GF_INDEX_NAME "index.gfi"
#define GF_SHARD_FMT "shard-%06u.gfs"
#define GF_DEFAULT_SHARD_SIZE (1ull << 30)

/* On-disk layout (docs/FORMAT.md is the specification; these names are
 * its tables' fields, as byte offsets). The index is at version 2 (a
 * summary table after the header); version 1 indexes are still read. The
 * shards' layout has not changed since version 1. */
#define GF_INDEX_TMP_NAME "index.gfi.tmp"
#define GF_INDEX_MAGIC "GFEEDIDX"
#define GF_SHARD_MAGIC "GFEEDSHD"
#define GF_INDEX_VERSION 2u     /* what the writer writes */
#define GF_INDEX_VERSION_MIN 1u /* the oldest the reader reads */
#define GF_SHARD_VERSION 1u
#define GF_INDEX_HEADER_SIZE 128u
#define GF_RECORD_SIZE 64u
#define GF_SHARD_HEADER_SIZE 64u
#define GF_MAX_ALIGNMENT (1u << 20)
#define GF_MAX_NAME_LEN 4096u            /* class and source names, bytes */
#define GF_MAX_STORED_BYTES (1ull << 30) /* one sample's stored bytes */

enum gf_index_header_field {
  GF_IH_MAGIC = 0,
  GF_IH_VERSION = 8,
  GF_IH_HEADER_SIZE = 12,
  GF_IH_COUNT = 16,
  GF_IH_SHARDS = 24,
  GF_IH_CLASSES = 28,
  GF_IH_RECORD_SIZE = 32,
  GF_IH_ALIGNMENT = 36,
  GF_IH_RECORDS_OFF = 40,
  GF_IH_SHARDS_OFF = 48,
  GF_IH_CLASSES_OFF = 56,
  GF_IH_CLASSES_SIZE = 64,
  GF_IH_NAMES_OFF = 72,
  GF_IH_NAMES_SIZE = 80,
  GF_IH_FILE_SIZE = 88,
  GF_IH_DATASET_ID = 96,
  GF_IH_FLAGS = 104,
  GF_IH_RECORDS_CRC = 108,
  GF_IH_TABLES_CRC = 112,
  GF_IH_NAMES_CRC = 116,
  GF_IH_RESERVED = 120,     /* version 1: must be zero */
  GF_IH_SUMMARY_SIZE = 120, /* version 2: the summary table's bytes */
  GF_IH_HEADER_CRC = 124,
};

/* The summary table (version 2): at GF_INDEX_HEADER_SIZE, a 16-byte head
 * then one entry per (codec, dtype) the records hold, in increasing
 * order: what sizing a loader's buffers needs, without a pass over the
 * records (summary.c). */
#define GF_SUMMARY_HEAD_SIZE 16u
#define GF_SUMMARY_ENTRY_SIZE 40u
/* A writer of this version writes at most GF_CODEC_COUNT_ x 2 entries;
 * the bound leaves room for later codecs and keeps the table small: at
 * most 41 KiB, inside the first 64 KiB of the index, which a remote open
 * reads first. */
#define GF_SUMMARY_MAX_ENTRIES 1024u
#define GF_SUMMARY_MAX_SIZE                                                    \
  (GF_SUMMARY_HEAD_SIZE + GF_SUMMARY_MAX_ENTRIES * GF_SUMMARY_ENTRY_SIZE)

enum gf_summary_field {
  GF_SM_ENTRIES = 0,    /* u32: entry count */
  GF_SM_ENTRY_SIZE = 4, /* u32: GF_SUMMARY_ENTRY_SIZE */
  GF_SM_RESERVED = 8,   /* u32: must be zero */
  GF_SM_CRC = 12,       /* u32: CRC32C of bytes 0-11 and the entries */
};

enum gf_summary_entry_field {
  GF_SE_CODEC = 0,    /* u16 */
  GF_SE_DTYPE = 2,    /* u8 */
  GF_SE_CHANNELS = 3, /* u8: the most channels of a record */
  GF_SE_RESERVED = 4, /* u32: must be zero */
  GF_SE_COUNT = 8,    /* u64: records */
  GF_SE_PIXELS = 16,  /* u64: the largest height x width */
  GF_SE_VALUES = 24,  /* u64: the largest height x width x channels */
  GF_SE_LENGTH = 32,  /* u64: the largest stored length */
};

enum gf_record_field {
  GF_REC_OFFSET = 0,
  GF_REC_LENGTH = 8,
  GF_REC_LABEL = 16,
  GF_REC_NAME_OFF = 24,
  GF_REC_SHARD = 32,
  GF_REC_HEIGHT = 36,
  GF_REC_WIDTH = 40,
  GF_REC_DATA_CRC = 44,
  GF_REC_NAME_LEN = 48,
  GF_REC_CODEC = 52,
  GF_REC_DTYPE = 54,
  GF_REC_CHANNELS = 55,
  GF_REC_FLAGS = 56,
  GF_REC_RECORD_CRC = 60, /* see gf_record_crc() */
};

enum gf_shard_header_field {
  GF_SH_MAGIC = 0,
  GF_SH_VERSION = 8,
  GF_SH_DATA_START = 12,
  GF_SH_SHARD = 16,
  GF_SH_ALIGNMENT = 20,
  GF_SH_DATASET_ID = 24,
  GF_SH_RESERVED = 32,
  GF_SH_HEADER_CRC = 60,
};

/* Where a shard's first sample may start: max(64, alignment). */
static inline uint64_t gf_shard_data_start(uint32_t alignment) {
  return alignment > GF_SHARD_HEADER_SIZE ? alignment : GF_SHARD_HEADER_SIZE;
}

/* A record's own checksum: CRC32C of its index (u64, little-endian)
 * followed by its bytes 0-59. The index makes a record found in the wrong
 * place (moved, duplicated) fail it too. */
static inline uint32_t gf_record_crc(uint64_t idx, const uint8_t *rec) {
  uint8_t le[8];
  gf_put64(le, idx);
  return gf_crc32c(gf_crc32c(0, le, 8), rec, GF_REC_RECORD_CRC);
}

typedef struct gf_writer gf_writer;

typedef struct gf_writer_opts {
  uint64_t shard_size; /* start a new shard once a shard would pass this
                          many bytes (0: GF_DEFAULT_SHARD_SIZE); a sample
                          larger than it gets a shard of its own */
  uint32_t alignment;  /* 0 or 1: packed; a power of two up to 1 MiB (4096
                          for O_DIRECT): each extent starts aligned */
  uint32_t index_version; /* 0: GF_INDEX_VERSION; 1: a version 1 index (no
                             summary table), as gpufeed wrote before it,
                             for tests and measurements of such datasets */
  /* Streaming the shards out while the build goes on (a build into a
   * bucket): with dataset_id not 0, each shard gets this id in its header
   * when it is opened (instead of the id derived from the content at
   * finish, which rewrites the headers), so that a shard is final once
   * closed: it is then fsynced and handed to on_shard (when set), with its
   * number, path and size, before the next one opens (the last one inside
   * finish, before the index is written). The callee may remove the file.
   * on_shard returns 0, or a negative code that fails the writer (sticky,
   * the callee's context kept). on_shard needs dataset_id. */
  uint64_t dataset_id;
  int (*on_shard)(void *ctx, uint32_t shard, const char *path, uint64_t size);
  void *on_shard_ctx;
} gf_writer_opts;

/* Creates a writer that writes shards and the index into the existing,
 * empty folder `dir`. Returns 0, -errno, -ENOTEMPTY (the folder holds
 * something) or -EINVAL (bad options). Single thread: a writer is not
 * thread-safe. Memory: 64 bytes a sample plus the source names, held until
 * finish; files are written through one 1 MiB buffer. */
int gf_writer_create(const char *dir, const gf_writer_opts *opts,
                     gf_writer **out);
/* Appends a class name of 1 to GF_MAX_NAME_LEN bytes (classes are numbered
 * in the order added). With classes, every label must be a class index
 * (checked at finish). Returns 0 or -EINVAL/-ENOMEM. */
int gf_writer_add_class(gf_writer *w, const char *name);
/* Appends one sample: its stored bytes, codec, decoded shape, label and the
 * source path (relative to the build root, at most GF_MAX_NAME_LEN bytes,
 * NULL for none; kept for error messages). The data is written (buffered)
 * at once. Refuses what a reader would refuse as corrupt: -EINVAL for 0 or
 * more than GF_MAX_STORED_BYTES bytes or an unknown codec, GF_ESHAPE /
 * GF_ELIMIT for a shape outside the default limits, a raw sample whose
 * length is not the shape's size or a loco sample of a u16 shape. A write
 * error (-ENOSPC, -EIO, -EFBIG..., with the file named in the context) is
 * sticky: every later call returns it. Returns 0 or a negative code with
 * context. */
int gf_writer_add(gf_writer *w, const void *data, size_t len, int codec,
                  const gf_shape *shape, int64_t label, const char *source);
/* Number of samples added so far. */
uint64_t gf_writer_count(const gf_writer *w);
/* Shard files closed so far (after finish: all of them). */
uint32_t gf_writer_shards(const gf_writer *w);
/* Bytes of all shard files so far: headers, alignment padding, samples
 * (test holes included). After finish, the sum of the shard sizes. */
uint64_t gf_writer_bytes(const gf_writer *w);
/* Pads and closes the last shard, writes each shard's final header, writes
 * the index as GF_INDEX_TMP_NAME, fsyncs every shard and the index, renames
 * the index into place and fsyncs the folder. After a successful finish the
 * folder holds a complete dataset; after a failed one, no index.gfi unless
 * only the final fsync of the folder failed (the caller removes the folder
 * either way). Returns 0 or -errno (ENOSPC, EIO, EFBIG...) with context,
 * or -EINVAL for a label that is not a class index. */
int gf_writer_finish(gf_writer *w);
/* Test only: leaves a hole of `bytes` bytes in the current shard before the
 * next sample (opening the first shard if none is). The hole reads as zero
 * bytes and costs no disk on file systems with sparse files, so a test can
 * place a sample beyond 4 GiB cheaply. It counts toward the shard's size
 * (a later sample may roll over to a new shard). Returns 0 or -errno. */
int gf_writer_test_hole(gf_writer *w, uint64_t bytes);
/* Frees the writer; closes files without finishing (the caller then removes
 * the folder). NULL accepted. */
void gf_writer_destroy(gf_writer *w);

/* Moves the complete dataset folder `tmp` (it must hold an index.gfi, else
 * -ENOENT) to `final` atomically: renameat2 RENAME_NOREPLACE when `final`
 * does not exist; with `force`, an existing `final` that is a gpufeed
 * dataset (only dataset files, an index.gfi with the index magic) or an
 * empty folder is swapped with renameat2 RENAME_EXCHANGE and the old one
 * removed. Without force an existing final gives -EEXIST. With force, a
 * folder holding anything else gives -ENOTEMPTY and a file or symbolic link
 * -ENOTDIR, each with a message, and nothing is touched. `tmp` and `final`
 * must be on one file system (-EXDEV). fsyncs the parent folder(s).
 * Returns 0 or -errno with context. One caller at a time per target.
 * Failures, by step. Before the rename that publishes the new dataset
 * (the checks, the NOREPLACE rename, the exchange): nothing has changed,
 * `tmp` still holds the new dataset (the caller removes it). After it (the
 * open or fsync of the folder fails): the new dataset is in place at
 * `final` and complete, but a crash may still undo the rename; the error
 * (the fsync's code) says "the new dataset is in place at FINAL but making
 * the rename durable failed: ... (a crash now may ...)", `tmp` no longer
 * holds anything of the new dataset, and nothing has been removed: with
 * force the old dataset is kept whole at FINAL.gf-old.PID (named in the
 * message; at `tmp` if even that move failed, also named). Callers tell
 * the two apart by whether final's index.gfi is the inode tmp's was, and
 * must not remove `tmp` after a publishing failure. The old dataset is
 * removed only once the switch is durable; failing to remove it then is
 * only a warning (the commit succeeded). */
int gf_dir_commit(const char *tmp, const char *final, bool force);
/* Removes a folder written by the writer: its index, shards and temporary
 * index (only files with those names), then the folder, which fails with
 * -ENOTEMPTY (naming a leftover) when it holds anything else. A symbolic
 * link is refused (-ENOTDIR). Returns 0 or -errno with context. */
int gf_dir_remove(const char *dir);

/* A source folder listed for `gpufeed build` and the loader's direct
 * image folder source.
 * ImageFolder: ROOT/<class>/[sub/folders/]<name>.png, .jpg or .jpeg
 * (extensions matched case-insensitively, PNG and JPEG files mixed
 * freely); classes are ROOT's sub-folders sorted by name (byte
 * order; an empty one keeps its label), label = class index; entries come
 * class by class (as torchvision's ImageFolder), each class's files sorted
 * by relative path (byte order). Files directly in ROOT belong to no class
 * and are ignored, as are hidden entries (leading '.', which includes a
 * build's temporary folder) and sub-folders of ROOT that are gpufeed
 * datasets (holding an index.gfi: a build's OUT inside its SRC), which are
 * no class and are named in `not_classes`. Symbolic links to files are
 * followed when they resolve inside ROOT (anywhere with follow_symlinks);
 * links to folders are refused (a listing can never loop).
 * Labels file: lines `relative/path.png label` (split at the last run of
 * blanks, so paths may hold spaces; label a decimal int64; blank lines and
 * lines starting with '#' ignored; a '\r' before the newline dropped; at
 * most 8192 bytes a line), kept in file order. Every listed path must name
 * an existing regular file inside ROOT: absolute paths and '..' climbing
 * out are refused, and symbolic links leading out unless follow_symlinks.
 * A file listed twice (paths compared after removing "." and empty
 * components and resolving ".." lexically) is refused, naming both lines,
 * whether the labels agree or not. A labels file that is a folder is
 * refused as such.
 * With skip_bad, a refused link (leading out, broken, to a folder, to no
 * regular file), an image entry that is no regular file and, in a labels
 * file, a listed path that names no usable file are left out and
 * described in `skipped` instead of failing the scan.
 * The order is a function of the names only, never of readdir's order. */
typedef struct gf_folder_entry {
  char *path; /* relative to root, NUL-terminated */
  int64_t label;
  int codec;  /* what the name promises (gf_folder_name_codec): the file's
                 content decides (its magic bytes), and a content that
                 disagrees with a known extension is an error */
  uint64_t size; /* bytes, as the storage's listing told them (an object
                    store's); UINT64_MAX when it did not */
  char *version; /* the listing's version tag (an ETag), or NULL */
} gf_folder_entry;

/* The codec a file name's extension promises: GF_CODEC_PNG for .png,
 * GF_CODEC_JPEG for .jpg and .jpeg (any case), else
 * GF_FOLDER_CODEC_UNKNOWN (a labels file may list any name). Any thread. */
#define GF_FOLDER_CODEC_UNKNOWN (-1)
int gf_folder_name_codec(const char *name);
/* The codec of a listed file from its first `len` bytes (`head`; 8 are
 * enough): GF_CODEC_PNG for the PNG signature, GF_CODEC_JPEG for a JPEG's
 * SOI followed by a marker (FF D8 FF). Returns it, or GF_EDECODE with the
 * file `name` (NULL: the caller adds it) in the context: content that is
 * neither ("neither a PNG nor
 * a JPEG file: it starts with ..."), or that disagrees with the name's
 * extension, `name_codec` (an entry's codec), which would otherwise decode
 * as something the name does not say ("named .png but holds JPEG data").
 * Any thread. */
int gf_folder_file_codec(int name_codec, const char *name, const void *head,
                         size_t len);

typedef struct gf_folder {
  char *root;
  gf_folder_entry *entries;
  uint64_t count;
  char **classes; /* ImageFolder class names; NULL/0 for a labels file */
  uint32_t class_count;
  char **not_classes; /* ROOT's sub-folders that are gpufeed datasets */
  uint32_t not_class_count;
  char **skipped; /* with skip_bad: "PATH: why" of each entry left out */
  uint64_t skipped_count;
} gf_folder;

/* How gf_folder_scan_with lists. Zero: gf_folder_scan's behaviour. */
typedef struct gf_folder_opts {
  bool follow_symlinks; /* follow links to files that lead out of ROOT */
  bool skip_bad;        /* leave out refused entries (see above) */
} gf_folder_opts;

/* Lists `root` as above (labels_file NULL: ImageFolder). *out is owned by
 * the caller and freed with gf_folder_free(). Returns 0, -ENOENT/-ENOTDIR,
 * -EISDIR (the labels file is a folder), GF_EBADSOURCE (no images, bad or
 * duplicate labels line, path escaping the root: with file and line in the
 * context). */
int gf_folder_scan(const char *root, const char *labels_file, gf_folder **out);
/* The same with options (NULL: all zero). */
int gf_folder_scan_with(const char *root, const char *labels_file,
                        const gf_folder_opts *opts, gf_folder **out);
/* The same for the folder at the root of storage st (which must outlive
 * nothing of *out: the listing holds names only). labels_file is a path or
 * URL of its own. */
int gf_folder_scan_in(gf_storage *st, const char *labels_file,
                      const gf_folder_opts *opts, gf_folder **out);
void gf_folder_free(gf_folder *f);

/* ---- The summary table (summary.c; docs/FORMAT.md, "Summary table") ---- */

/* One entry: records of one codec and dtype. */
typedef struct gf_summary_entry {
  uint16_t codec;
  uint8_t dtype, channels;
  uint64_t count, pixels, values, length;
} gf_summary_entry;

/* The summary of valid records, as they are added (the writer's, and
 * gf_dataset_check_index's from the records it checked). */
typedef struct gf_summary_acc {
  gf_summary_entry e[GF_CODEC_COUNT_][2]; /* [codec][dtype] */
} gf_summary_acc;
void gf_summary_init(gf_summary_acc *a);
/* Adds one record that passed the record checks (others are ignored). */
void gf_summary_add(gf_summary_acc *a, int codec, const gf_shape *s,
                    uint64_t length);
/* Its entries (with a count). */
uint32_t gf_summary_entries(const gf_summary_acc *a);
/* Writes the table (head and entries, CRC included) into out, which holds
 * GF_SUMMARY_HEAD_SIZE + gf_summary_entries() * GF_SUMMARY_ENTRY_SIZE
 * bytes; returns that size. */
uint32_t gf_summary_write(const gf_summary_acc *a, uint8_t *out);
/* Checks the table at p (size bytes, at GF_INDEX_HEADER_SIZE of the index
 * `path`) of an index of `count` records: its head, CRC, order, and each
 * entry within what valid records give; the counts sum to `count`.
 * Returns 0 or GF_ECORRUPT naming the index and the offset. O(entries). */
int gf_summary_check(const uint8_t *p, uint64_t size, uint64_t count,
                     const char *path);
/* The checked table at p against what the records give (a): 0, or
 * GF_ECORRUPT naming the first entry that differs, both versions. */
int gf_summary_compare(const uint8_t *p, const gf_summary_acc *a,
                       const char *path);

/* What a loader sizes its buffers with (source_dataset.c), under decode
 * options: the largest sample decoded (the conversion rules of
 * gf_decode), stored, and as its codec gives it before any conversion (a
 * png record taken 16 bits wide); the most channels a decoded sample has
 * (0: no record counted); the records of each known codec. Samples
 * beyond the options' limit on decoded bytes are not counted (they fail
 * when read). */
typedef struct gf_record_sizes {
  uint64_t max_decoded, max_stored, max_native;
  uint32_t max_channels;
  uint64_t by_codec[GF_CODEC_COUNT_];
} gf_record_sizes;
/* The same from a pass over the records: init, add each record (the
 * fields as stored, unchecked), then read .out. */
typedef struct gf_sizes_scan {
  gf_decode_opts opts, native;
  uint64_t max_bytes;
  gf_record_sizes out;
} gf_sizes_scan;
void gf_sizes_scan_init(gf_sizes_scan *sc, const gf_decode_opts *opts);
void gf_sizes_scan_add(gf_sizes_scan *sc, int codec, const gf_shape *shape,
                       uint64_t length);
/* From a checked summary table: fills *out with exactly what a scan of
 * records that agree with it gives and returns true, or returns false
 * when only a scan can tell (an entry's largest sample lies beyond the
 * options' limit, which a scan leaves out record by record). O(entries). */
bool gf_summary_sizes(const uint8_t *p, const gf_decode_opts *opts,
                      gf_record_sizes *out);

/* Opens the dataset at the root of storage `st` (gf_dataset_open opens the
 * storage of a path or URL and calls this). With own, the dataset closes
 * st (also when the open fails); else st must outlive it. */
int gf_dataset_open_in(gf_storage *st, bool own, gf_dataset **out);
/* The storage the dataset lies in (owned by the dataset or its caller). */
gf_storage *gf_dataset_storage(const gf_dataset *ds);
/* Shard i's object, open for reading and owned by the dataset, or NULL
 * when i is out of range or the shard is not open yet (a dataset without
 * descriptors opens each shard on first use: gf_dataset_shard_open). */
gf_object *gf_dataset_shard_object(const gf_dataset *ds, uint32_t i);
/* Shard i's object (*out, owned by the dataset), opened and checked now if
 * it was not (by one thread; others wait for it). Returns 0, -ERANGE, or
 * the open's or the checks' error naming the shard (FORMAT.md, "at open",
 * step 6). Any thread. */
int gf_dataset_shard_open(const gf_dataset *ds, uint32_t i, gf_object **out);

/* gf_dataset_sample_info without the source name: info->source is NULL
 * (source_len is set), so a remote index reads the record's page only.
 * The loader's call. Any thread. */
int gf_dataset_record(const gf_dataset *ds, uint64_t idx, gf_sample_info *info);
/* The records of samples idx[0..n) (any order, repeats allowed) read
 * together, and the shards they name opened together (up to 64 at once),
 * so that their use costs no round trip each: at once for a mapped index.
 * unready (NULL: not wanted; else n flags): 1 where sample idx[i]'s record
 * is not in memory or its shard not open after it (a read or an open that
 * failed), so that the caller can leave it to a use that reports, rather
 * than ask for it and wait on the network. Returns 0 or the first page
 * read's error (the opens' errors are left to the samples' use, which
 * reports them). Any thread. */
int gf_dataset_prepare(const gf_dataset *ds, const uint64_t *idx, size_t n,
                       uint8_t *unready);
/* The whole index in memory (a remote one read with many reads at once:
 * before a pass over every record). 0 at once for a mapped index. Returns
 * 0 or the read's error. Any thread. */
int gf_dataset_load_index(const gf_dataset *ds);
/* The loader's buffer sizes under opts (format.h's gf_record_sizes): from
 * the summary table when use_summary, the index has one and it is exact
 * under opts (returns 1, O(1)), else from a pass over the records
 * (returns 0; a remote index is read whole first). Negative: that read's
 * error. Any thread. */
int gf_dataset_max_sizes(const gf_dataset *ds, const gf_decode_opts *opts,
                         bool use_summary, gf_record_sizes *out);
/* The summary table (its bytes, *size of them), or NULL and 0 for a
 * version 1 index. */
const uint8_t *gf_dataset_summary(const gf_dataset *ds, uint32_t *size);
/* Whether the index is read in pages (a storage without descriptors)
 * rather than mapped. */
bool gf_dataset_paged(const gf_dataset *ds);
/* What the index's pages cost so far (0 for a mapped index): reads,
 * bytes, pages in memory. */
void gf_dataset_index_counters(const gf_dataset *ds, uint64_t *reads,
                               uint64_t *bytes, uint64_t *pages);

#ifdef GPUFEED_TESTING
/* Test builds only (common/fault.h says which those are): the first read
 * of an index without descriptors, in bytes (0: 64 KiB; the header is read
 * whatever it says). A test sets it to GF_INDEX_HEADER_SIZE so that every
 * table and record of even a small index comes through the pages. Set
 * before an open. */
extern uint32_t gf_dataset__test_first_read;
#endif

/* Size in bytes of shard i as the shard table gives it (checked against
 * the file when the shard is opened), 0 when out of range. */
uint64_t gf_dataset_shard_size(const gf_dataset *ds, uint32_t i);

#endif
