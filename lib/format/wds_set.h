/* The shards of a WebDataset source, opened (wds_set.c): every shard's
 * samples, from its sidecar index (DALI's wds2idx format, wds_index.h)
 * where one lies next to it, else from a scan of its tar headers
 * (tar_scan.h), in parallel, with its verification sidecar (wds_sums.h)
 * where it has one; grouped by webdataset's rules (wds_keys.h);
 * and, for each sample, the one byte range that holds the members a loader
 * needs (its image, its label), so that a sample is one read. The bytes
 * read are checked against the index (each member's tar header must be
 * where the index says, of the size it says) before the image and the
 * label are taken from them (gf_wds_set_unpack).
 *
 * Threads: after open, every call may be made from any thread at once. */
#ifndef GF_FORMAT_WDS_SET_H
#define GF_FORMAT_WDS_SET_H

#include "common/common.h"
#include "format/wds_keys.h"
#include "io/storage.h"

/* gf_wds_set_opts.index. */
enum {
  GF_WDS_INDEX_AUTO = 0, /* a shard's sidecar index where it has one (and
                            it matches the shard), else a scan */
  GF_WDS_INDEX_REQUIRE,  /* every shard must have a matching sidecar */
  GF_WDS_INDEX_SCAN,     /* sidecars are not looked for: every shard is
                            scanned */
};

/* The largest sidecar index read, by default. */
#define GF_WDS_INDEX_BYTES_DEFAULT (256u << 20)

typedef struct gf_wds_set_opts {
  /* The fields an image may come from, ';'-separated, lower-case
   * (NULL or "": "jpg;jpeg;png"). A sample must hold exactly one. */
  const char *image_fields;
  /* Where the label comes from: NULL or "" or "auto": the "cls" field
   * where a sample has one, else -1; "none": -1 for every sample; a field
   * name ("cls", "cls2", "index", ...): that field's decimal integer,
   * which every sample must hold. */
  const char *label;
  /* Other fields a loader hands on (gpufeed.h's gf_shards_config.fields):
   * ';'-separated, lower-case, at most GF_FIELDS_MAX; NULL or "": none.
   * Each sample's extent covers those it holds of at most field_bytes
   * (0: GF_FIELD_BYTES_DEFAULT); one larger fails the sample when
   * unpacked, its member not read. */
  const char *fields;
  uint64_t field_bytes;
  uint32_t index;       /* GF_WDS_INDEX_* */
  uint32_t threads;     /* shards opened at once (0: 128 for a remote
                           storage, else the online cores, at most 64) */
  uint64_t index_bytes; /* the largest sidecar read (0: the default) */
} gf_wds_set_opts;

typedef struct gf_wds_set gf_wds_set;

/* What opening found. */
typedef struct gf_wds_set_info {
  uint32_t shards, indexed, scanned;
  uint32_t index_refused; /* sidecars that did not match their shard (a
                             warning names each; the shard was scanned) */
  uint64_t samples, members;
  uint64_t skipped;  /* scanned members that are not regular files
                        (links, folders, devices, sparse files) */
  uint64_t dropped;  /* members without a key and field (no dot in the
                        file name) or webdataset's metadata names */
  uint64_t no_image; /* samples without an image field, or with two */
  uint64_t field_over; /* samples with an asked field over field_bytes */
  uint64_t shard_bytes;
  uint32_t verified;     /* shards with a verification sidecar (wds_sums.h)
                            that matches them */
  uint32_t sums_refused; /* sidecars that did not (a warning names each:
                            their images are decoded on the CPU) */
} gf_wds_set_info;

/* Opens the shards names[0 .. n) of storage st (which the set uses and
 * does not own: close the set first). Returns 0, or the first failing
 * shard's error (in the names' order): the shard, member and byte named;
 * -EINVAL for a bad option (named). */
int gf_wds_set_open(gf_storage *st, char *const *names, uint32_t n,
                    const gf_wds_set_opts *opts, gf_wds_set **out);
void gf_wds_set_close(gf_wds_set *s);

uint64_t gf_wds_set_count(const gf_wds_set *s);
void gf_wds_set_info_get(const gf_wds_set *s, gf_wds_set_info *out);
/* Shard i: its name under the storage root, its object. */
uint32_t gf_wds_set_shards(const gf_wds_set *s);
const char *gf_wds_set_shard_name(const gf_wds_set *s, uint32_t i);
/* The shard that holds sample idx. */
uint32_t gf_wds_set_shard_of(const gf_wds_set *s, uint64_t idx);
/* Sample idx's key (NUL-terminated, owned by the set). */
const char *gf_wds_set_key(const gf_wds_set *s, uint64_t idx);
/* Every sample's members (gf_wds_key, gf_wds_field_name; owned by the
 * set): sample i is samples[i], its members fields[first ..]. */
const gf_wds_samples *gf_wds_set_samples(const gf_wds_set *s);

/* The fields asked for (gf_wds_set_opts.fields), in the order given, and
 * the bound on each (field_bytes, resolved). */
uint32_t gf_wds_set_field_count(const gf_wds_set *s);
const char *gf_wds_set_field_name(const gf_wds_set *s, uint32_t i);
uint64_t gf_wds_set_field_bytes(const gf_wds_set *s);

/* Where sample idx's bytes lie: one range of its shard that holds its
 * image member, its label member and the members of the asked fields it
 * has (those within field_bytes), their tar headers included. */
typedef struct gf_wds_extent {
  uint32_t shard;
  gf_object *obj;
  uint64_t offset, length;             /* in the shard */
  uint64_t image_offset, image_length; /* in the range */
  int codec; /* what the image field's name promises: GF_CODEC_JPEG,
                GF_CODEC_PNG, or GF_FOLDER_CODEC_UNKNOWN */
  bool has_label;
  uint64_t label_offset, label_length; /* in the range */
  /* The image's CRC32C as its shard's verification sidecar gives it
   * (wds_sums.h): the image decoded whole on the CPU when the sidecar was
   * written, and is the same while its bytes still match. */
  bool has_crc;
  uint32_t crc;
} gf_wds_extent;

/* Fills *out for sample idx. Returns 0, or GF_EBADSOURCE with the shard,
 * the sample's key and byte named: no image field or two, a field twice,
 * no label field where the options require one. Any thread. */
int gf_wds_set_extent(const gf_wds_set *s, uint64_t idx, gf_wds_extent *out);

/* An asked field of a sample within its extent's bytes: offset
 * GF_NO_INDEX when the sample has no such member. */
typedef struct gf_wds_span {
  uint64_t offset, length;
} gf_wds_span;

/* Checks the bytes buf[0 .. len) read for sample idx's extent (every used
 * member's tar header where the index put it, of the size it gave) and
 * takes its label (-1 without one). *image_off and *image_len: the image
 * within buf; fields (NULL, or gf_wds_set_field_count entries): where each
 * asked field lies in buf. Returns 0, or with the shard, key and byte
 * named: GF_ECORRUPT (a header that is not there or says otherwise: the
 * shard is not the one the index was made for), GF_EBADSOURCE (a label
 * that is not a decimal integer), GF_ELIMIT (fields given and an asked
 * field larger than field_bytes: the field and both sizes named). Any
 * thread. */
int gf_wds_set_unpack(const gf_wds_set *s, uint64_t idx, const uint8_t *buf,
                      uint64_t len, uint64_t *image_off, uint64_t *image_len,
                      int64_t *label, gf_wds_span *fields);

/* A name for sample idx in messages: the shard's location and the
 * sample's key. Into buf. */
void gf_wds_set_name(const gf_wds_set *s, uint64_t idx, char *buf, size_t cap);
/* A fingerprint of the shards' names, sizes and every sample's key and
 * members: the same for the same shards, and different when a sample
 * moved. O(samples). */
uint64_t gf_wds_set_fingerprint(const gf_wds_set *s);

#endif
