/* The loader's sources behind one interface: a dataset made by `gpufeed
 * build` (records from its index, data from its shards) or a folder of PNG
 * and JPEG files opened directly (listed at open with the same label rule
 * as the builder; each sample is a whole file, its codec told by its first
 * bytes: gf_source_file_codec). */
#ifndef GF_PIPELINE_SOURCE_H
#define GF_PIPELINE_SOURCE_H

#include "common/common.h"

typedef struct gf_source gf_source;

/* Where one sample's stored bytes are and how to decode them. */
typedef struct gf_src_sample {
  uint64_t index;
  int fd;          /* dataset: the shard's fd (owned by the source);
                      folder: -1 (open with gf_source_open_file) */
  uint32_t shard;
  uint64_t offset; /* dataset: in the shard; folder: 0 */
  uint64_t length; /* dataset: stored bytes; folder: 0 until opened */
  int codec;       /* dataset: the record's; folder: what the file name
                      promises (GF_FOLDER_CODEC_UNKNOWN for a name of a
                      labels file without a known extension): the bytes
                      decide, gf_source_file_codec */
  gf_shape stored; /* dataset: the record's shape; folder: zeros */
  int64_t label;
  uint32_t crc;    /* dataset: CRC32C of the stored bytes */
  uint32_t has_crc;
} gf_src_sample;

/* Opens `path`: a dataset when it holds an index, else an image folder
 * (ImageFolder, or flat with labels_file). Returns 0 or the error of the
 * dataset/folder open with context. */
int gf_source_open(const char *path, const char *labels_file,
                   gf_source **out);
void gf_source_close(gf_source *s);

uint64_t gf_source_count(const gf_source *s);
bool gf_source_is_dataset(const gf_source *s);
/* Dataset alignment of data extents (1 for a folder). */
uint32_t gf_source_alignment(const gf_source *s);

/* Dataset shards (0 and NULL for a folder). */
uint32_t gf_source_num_shards(const gf_source *s);
const char *gf_source_shard_path(const gf_source *s, uint32_t i);

/* Fills *out for sample idx (dataset: the record, validated). Returns 0,
 * -ERANGE or GF_ECORRUPT. Any thread. */
int gf_source_sample(const gf_source *s, uint64_t idx, gf_src_sample *out);

/* A fingerprint of the source's content, for resume states (gpufeed.h's
 * gf_loader_state): a dataset hashes every index entry's stored length,
 * CRC32C, label, codec and shape (an entry that fails its checks hashes as
 * such, so a damaged index still has a fingerprint); a folder hashes every
 * listed file's path relative to the folder and its label. O(n): a pass
 * over the index or the listing, no file read. Any thread. */
uint64_t gf_source_fingerprint(const gf_source *s);

/* A name for errors about sample idx: the source file (folder) or the
 * shard path (dataset). Writes into buf. */
void gf_source_name(const gf_source *s, uint64_t idx, char *buf, size_t cap);

/* Folder source: opens sample idx's file (O_RDONLY|O_CLOEXEC) and returns
 * its fd and size. The caller closes the fd. Returns 0 or -errno with the
 * file named. */
int gf_source_open_file(const gf_source *s, uint64_t idx, int *fd,
                        uint64_t *size);
/* Folder source: the codec of sample idx from its file's first `len`
 * bytes (`head`), checked against its name (format.h,
 * gf_folder_file_codec): GF_CODEC_PNG or GF_CODEC_JPEG, or GF_EDECODE with
 * the file named (neither, or not what its extension says). Any thread. */
int gf_source_file_codec(const gf_source *s, uint64_t idx, const void *head,
                         size_t len);

/* A built dataset's largest decoded size of any sample under opts, its
 * largest stored size, its largest sample before any conversion (a png
 * record taken 16 bits wide: a bound), all from one scan of the index, the
 * most channels a decoded sample has (opts->channels when set), and its
 * records of each codec (by_codec[GF_CODEC_COUNT_], may be NULL). A folder
 * is sized from every file's header instead (source_shapes.h): -EINVAL. */
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

#endif
