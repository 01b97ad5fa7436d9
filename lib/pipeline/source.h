/* The loader's sources behind one table of operations (as libarchive's
 * format readers): a dataset made by `gpufeed build` (records from its
 * index, data from its shards: source_dataset.c) and a folder of PNG and
 * JPEG files opened directly (listed at open with the same label rule as
 * the builder; each sample is a whole file, its codec told by its first
 * bytes: source_folder.c). Each lies in a storage (io/storage.h), local or
 * remote. The loader asks a source what it can do (gf_source_caps, and what
 * each sample's description carries), never which kind it is.
 *
 * Adding a source: one file filling one const gf_source_ops, and one line
 * in source.c's table.
 *
 * Threads: after open, every call may be made from any thread at once. */
#ifndef GF_PIPELINE_SOURCE_H
#define GF_PIPELINE_SOURCE_H

#include "common/common.h"
#include "io/storage.h"

typedef struct gf_source gf_source;
struct gf_stream_config; /* stream.h */

/* What a source knows and gives (gf_source_caps). */
enum {
  /* A record a sample, known before any read: stored length, codec,
   * shape (gf_source_max_sizes sizes the buffers from them). Without it
   * the buffers are sized from the files' headers (source_shapes.h). */
  GF_SOURCE_RECORDS = 1u << 0,
  /* A checksum of each sample's stored bytes (gf_src_sample.crc): damage
   * anywhere in a file is caught before decoding. A source may have them
   * for some samples only (has_crc says which): tar shards verified by
   * `gpufeed index --verify`. */
  GF_SOURCE_CHECKSUMS = 1u << 1,
  /* A sample's extent holds more than its image (a tar shard's members,
   * their headers, its label): once read, gf_source_unpack checks it and
   * says where the image is and what the label is (gf_src_sample.label is
   * -1 until then). */
  GF_SOURCE_PACKED = 1u << 2,
  /* Its samples come as a stream, not by index (tar shards in streaming
   * mode: stream.h): no count, no sample before its bytes are read; the
   * loader reads it through the stage gf_source_stream_config sets up.
   * Sample "indices" are then the stage's ids (shard << 40 | ordinal). */
  GF_SOURCE_STREAM = 1u << 3,
};

/* gf_src_sample.has_crc. */
enum {
  GF_SRC_CRC_NONE = 0,
  /* The record's checksum: bytes that differ are damaged (an error). */
  GF_SRC_CRC_RECORD = 1,
  /* A verification's (a tar shard's sums, format/wds_sums.h): the bytes
   * decoded whole on the CPU when they had it. While they match, the GPU's
   * JPEG engines may take them under gpu_decode auto; bytes that differ
   * (a shard changed since) are decoded on the CPU, whose verdict holds. */
  GF_SRC_CRC_VERIFIED = 2,
};

/* Where one sample's stored bytes are and how to decode them. */
typedef struct gf_src_sample {
  uint64_t index;
  gf_object *obj;  /* the object holding its bytes, owned by the source
                      (a dataset's shard); NULL: the sample is an object
                      of its own, opened with gf_source_open_sample */
  uint32_t object; /* obj's number (gf_source_object); 0 when obj is NULL */
  uint64_t offset; /* in obj; 0 for an object of its own */
  uint64_t length; /* stored bytes; for an object of its own, what the
                      listing told (0 when it did not: known once opened) */
  int codec;       /* the record's; with sniff: what the file name promises
                      (GF_FOLDER_CODEC_UNKNOWN for a name without a known
                      extension) */
  bool sniff;      /* the bytes decide the codec (gf_source_file_codec) */
  gf_shape stored; /* the record's shape; zeros when not known */
  int64_t label;
  uint32_t crc;     /* CRC32C of the stored bytes (of the image, for a
                       packed sample), when has_crc */
  uint32_t has_crc; /* GF_SRC_CRC_* */
  /* GF_SOURCE_PACKED: where the image lies in the extent, as the source's
   * index says (gf_source_unpack checks it once the bytes are read). */
  uint64_t inner_offset, inner_length;
} gf_src_sample;

/* An asked field within a packed sample's extent (gf_source_unpack):
 * offset GF_NO_INDEX when the sample has none. */
typedef struct gf_src_span {
  uint64_t offset, length;
} gf_src_span;

/* One kind of source. impl is the kind's own state. */
typedef struct gf_source_ops {
  const char *name; /* "dataset", "folder", "shards" */
  uint32_t caps;    /* GF_SOURCE_* */
  /* Optional: what this source gives beyond caps, known once open
   * (GF_SOURCE_CHECKSUMS for shards of which some are verified). */
  uint32_t (*caps_more)(const void *impl);
  /* Optional: whether `path` itself names a source of this kind (a list
   * of shards), which then opens its own storage (open_at) instead of
   * being probed at a storage's root. */
  bool (*claims)(const char *path, const gf_shards_config *shards);
  int (*open_at)(const char *path, const gf_shards_config *shards,
                 const gf_remote_config *remote, gf_storage **st, void **impl);
  /* Whether the storage's root holds a source of this kind (1) or not
   * (0), asked in source.c's order; the last kind takes what is left. */
  int (*probe)(gf_storage *st, const char *labels_file);
  int (*open)(gf_storage *st, const char *labels_file, void **impl);
  void (*close)(void *impl);
  uint64_t (*count)(const void *impl);
  int (*sample)(const void *impl, uint64_t idx, gf_src_sample *out);
  uint64_t (*fingerprint)(const void *impl);
  void (*sample_name)(const void *impl, uint64_t idx, char *buf, size_t cap);
  /* For samples that are objects of their own (obj NULL). */
  int (*open_sample)(const void *impl, uint64_t idx, gf_object **out);
  /* GF_SOURCE_RECORDS. */
  int (*max_sizes)(const void *impl, const gf_decode_opts *opts,
                   uint64_t *max_decoded, uint64_t *max_stored,
                   uint64_t *max_native, uint32_t *max_channels,
                   uint64_t *by_codec);
  uint32_t (*class_count)(const void *impl);
  const char *(*class_name)(const void *impl, uint32_t i);
  int (*sample_path)(const void *impl, uint64_t idx, const char **name,
                     size_t *len);
  /* The objects the source holds open (gf_src_sample.obj), and the name of
   * each in the storage, so a loader can open them again (O_DIRECT). */
  uint32_t (*objects)(const void *impl);
  const char *(*object_name)(const void *impl, uint32_t i, char *buf,
                             size_t cap);
  /* The alignment of every sample's extent in its object (1: none). */
  uint32_t (*alignment)(const void *impl);
  /* Optional (NULL: nothing to do): makes the descriptions of samples
   * idx[0..n) cheap to ask for, with what they need read together (a
   * remote index's pages, many reads in flight), and says in unready
   * (NULL, or n flags) which are still not (gf_source_prepare). idx NULL
   * and n 0: 1 when it may ever read anything, else 0. */
  int (*prepare)(const void *impl, const uint64_t *idx, size_t n,
                 uint8_t *unready);
  /* GF_SOURCE_PACKED: checks the extent's bytes and finds the image,
   * the label and the asked fields in them (gf_source_unpack). */
  int (*unpack)(const void *impl, const gf_src_sample *smp, const uint8_t *buf,
                uint64_t len, uint64_t *image_off, uint64_t *image_len,
                int64_t *label, gf_src_span *fields);
  /* Optional (NULL: none): the other fields each sample hands on
   * (gf_source_fields). */
  uint32_t (*field_count)(const void *impl);
  const char *(*field_name)(const void *impl, uint32_t i);
  uint64_t (*field_bytes)(const void *impl);
  /* GF_SOURCE_STREAM: fills the streaming stage's config with what the
   * source holds (its storage, shards, rules; lanes and shuffle as its
   * options say). */
  void (*stream_config)(const void *impl, struct gf_stream_config *out);
  /* Optional: what reading the records cost (a remote index's reads,
   * bytes, pages in memory). */
  void (*record_counters)(const void *impl, uint64_t *reads, uint64_t *bytes,
                          uint64_t *pages);
} gf_source_ops;

/* Opens the source at `path` (a folder path or a URL; remote: how a
 * server is read, NULL for the defaults): WebDataset shards when the path
 * names them (gpufeed.h's gf_shards_config: read as `shards` says, NULL
 * for the defaults); else the storage that serves it, then the first kind
 * that claims it (a dataset when it holds an index and no labels file is
 * given, else an image folder: ImageFolder, or flat with labels_file).
 * Returns 0 or the storage's or the source's error with context. */
int gf_source_open(const char *path, const char *labels_file,
                   const gf_shards_config *shards,
                   const gf_remote_config *remote, gf_source **out);
void gf_source_close(gf_source *s);

uint64_t gf_source_count(const gf_source *s);
uint32_t gf_source_caps(const gf_source *s);
/* "dataset", "folder" or "shards", for reports. */
const char *gf_source_kind(const gf_source *s);
/* The storage the source lies in (owned by the source). */
gf_storage *gf_source_storage(const gf_source *s);
/* The alignment of the samples' extents in their objects (1: none). */
uint32_t gf_source_alignment(const gf_source *s);
/* The objects the source holds open (a dataset's shards; 0 for a
 * folder), and object i's name in the storage (into buf) or NULL. */
uint32_t gf_source_objects(const gf_source *s);
const char *gf_source_object_name(const gf_source *s, uint32_t i, char *buf,
                                  size_t cap);

/* Fills *out for sample idx (dataset: the record, validated). Returns 0,
 * -ERANGE or GF_ECORRUPT. Any thread. */
int gf_source_sample(const gf_source *s, uint64_t idx, gf_src_sample *out);

/* Reads ahead what the descriptions of samples idx[0..n) need (a remote
 * dataset's index pages: together, many reads in flight), so that
 * gf_source_sample on them then costs no round trip each. Indices beyond
 * the count are left out. unready (NULL, or n flags): 1 where sample
 * idx[i] could not be made ready (gf_source_sample on it would go to the
 * network again, and may wait out its retries). Returns 0 (at once for a
 * source that has nothing to read) or the read's error; a failure is only
 * a read ahead that did not happen: gf_source_sample reads again and
 * reports. Any thread. */
int gf_source_prepare(const gf_source *s, const uint64_t *idx, size_t n,
                      uint8_t *unready);
/* Whether gf_source_prepare may have anything to read (a dataset read
 * through a storage without descriptors). */
bool gf_source_can_prepare(const gf_source *s);
/* What reading the records cost so far (0s when nothing is read for
 * them: a mapped index, a folder). Any thread. */
void gf_source_record_counters(const gf_source *s, uint64_t *reads,
                               uint64_t *bytes, uint64_t *pages);

/* A fingerprint of the source's content, for resume states (gpufeed.h's
 * gf_loader_state): a dataset hashes every index entry's stored length,
 * CRC32C, label, codec and shape (an entry that fails its checks hashes as
 * such, so a damaged index still has a fingerprint); a folder hashes every
 * listed file's path relative to the folder and its label. O(n): a pass
 * over the index or the listing, no file read. Any thread. */
uint64_t gf_source_fingerprint(const gf_source *s);

/* A name for errors about sample idx: the source file (folder) or the
 * shard's location (dataset). Writes into buf. */
void gf_source_name(const gf_source *s, uint64_t idx, char *buf, size_t cap);

/* A sample that is an object of its own (gf_src_sample.obj NULL): opens
 * it (*out, the caller closes it; its size is the sample's length).
 * Returns 0 or the storage's error with the file named. */
int gf_source_open_sample(const gf_source *s, uint64_t idx, gf_object **out);
/* A sample whose bytes decide its codec (smp->sniff): the codec from its
 * first `len` bytes (`head`), checked against what its name promises
 * (format.h, gf_folder_file_codec): GF_CODEC_PNG or GF_CODEC_JPEG, or
 * GF_EDECODE with the file named (neither, or not what its extension
 * says). Any thread. */
int gf_source_file_codec(const gf_source *s, const gf_src_sample *smp,
                         const void *head, size_t len);

/* GF_SOURCE_RECORDS: the largest decoded size of any sample under opts, its
 * largest stored size, its largest sample before any conversion (a png
 * record taken 16 bits wide: a bound), all from one scan of the records,
 * the most channels a decoded sample has (opts->channels when set), and
 * its records of each codec (by_codec[GF_CODEC_COUNT_], may be NULL).
 * Without records the source is sized from every file's header instead
 * (source_shapes.h): -EINVAL. */
int gf_source_max_sizes(const gf_source *s, const gf_decode_opts *opts,
                        uint64_t *max_decoded, uint64_t *max_stored,
                        uint64_t *max_native, uint32_t *max_channels,
                        uint64_t *by_codec);

/* Metadata for training scripts (gpufeed.h's gf_loader_class_* and
 * gf_loader_sample_path). Class names: an image folder in the ImageFolder
 * convention has its class folders' names, a dataset its index's class
 * table (built from an ImageFolder); a labels-file folder, and a dataset
 * built from one, store none: 0 classes. Any thread. */
uint32_t gf_source_class_count(const gf_source *s);
/* Class i's name, NUL-terminated, owned by the source; NULL when i >=
 * gf_source_class_count(s). */
const char *gf_source_class_name(const gf_source *s, uint32_t i);
/* Sample idx's source path: the file's path relative to the folder
 * (folder), or the source name the index stores (dataset: the path
 * relative to the build root; it may be empty). Sets *name to bytes owned
 * by the source (not NUL-terminated) and *len to their count. Returns 0,
 * -ERANGE (idx >= count) or GF_ECORRUPT (a damaged dataset record, with
 * context). */
int gf_source_sample_path(const gf_source *s, uint64_t idx, const char **name,
                          size_t *len);

/* GF_SOURCE_PACKED: checks the bytes buf[0 .. len) read for smp's
 * extent and finds in them the image (*image_off, *image_len within buf),
 * the label (-1 without one) and, with fields (NULL, or
 * gf_source_field_count entries), each asked field. Returns 0, or the
 * error with the sample named (bytes that are not what the source's index
 * says, a label that is not a number, a field over its bound). Any
 * thread. */
int gf_source_unpack(const gf_source *s, const gf_src_sample *smp,
                     const uint8_t *buf, uint64_t len, uint64_t *image_off,
                     uint64_t *image_len, int64_t *label, gf_src_span *fields);

/* The other fields each sample hands on beside its image and label (tar
 * shards' gf_shards_config.fields): how many (0 for a source without
 * them), field i's name (owned by the source; NULL past the count), and
 * the most bytes one may hold. Any thread. */
uint32_t gf_source_field_count(const gf_source *s);
const char *gf_source_field_name(const gf_source *s, uint32_t i);
uint64_t gf_source_field_bytes(const gf_source *s);

/* *in (NULL: the defaults) checked (struct_size, reserved zero, index,
 * stream options only in streaming mode) and copied into *out. Returns 0
 * or -EINVAL naming the field. */
int gf_source_shards_config(const gf_shards_config *in, gf_shards_config *out);

/* GF_SOURCE_STREAM: fills *out (stream.h) with the source's storage,
 * shards, rules and stream options; the caller adds the order's (seed,
 * rank, world) and the loader's sizes. Returns 0, or GF_EINTERNAL for a
 * source read by index. */
int gf_source_stream_config(const gf_source *s, struct gf_stream_config *out);

/* The kinds (source.c's table). */
extern const gf_source_ops gf_source_dataset;
extern const gf_source_ops gf_source_folder;
extern const gf_source_ops gf_source_shards;
extern const gf_source_ops gf_source_shards_stream;

#endif
