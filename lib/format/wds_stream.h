/* One WebDataset shard read front to back (wds_stream.c), for streaming
 * mode: its tar headers parsed as its bytes come (tar_scan.h, through a
 * pull function asked for offsets that only grow, but for the last
 * GF_WDS_STREAM_BACK bytes), its members grouped as webdataset groups them
 * (wds_keys.h), the members the rules take (wds_rules.h: the image, the
 * label, the asked fields) copied out as they pass, and each sample handed on
 * once its last member has passed. Nothing of the shard is held but one
 * sample's taken members: memory does not grow with the shard.
 *
 * Threads: a call uses only its own state and the caller's buffer; any
 * number may run at once. */
#ifndef GF_FORMAT_WDS_STREAM_H
#define GF_FORMAT_WDS_STREAM_H

#include "common/common.h"
#include "format/tar_scan.h"
#include "format/wds_rules.h"

/* How far back of the furthest byte asked a pull may be asked again: the
 * tar reader's block (a member's data starts in the block that held its
 * header) and one more. */
#define GF_WDS_STREAM_BACK (2ull * GF_TAR_READ_BLOCK)

/* A sample as it passed. */
typedef struct gf_wds_streamed {
  const char *key;      /* valid during the call */
  uint64_t ordinal;     /* its number among the shard's samples: 0, 1, ... */
  uint64_t offset;      /* where its first member's data lies in the shard */
  int rc;               /* 0, or what is wrong with it (recorded with gf_fail,
                           naming the shard, the key and the byte); then the
                           fields below are zero */
  const uint8_t *image; /* its image member's bytes (the caller's buffer) */
  uint64_t image_len;
  int codec;     /* what the image field's name promises */
  int64_t label; /* -1 without one */
  /* The asked fields (gf_wds_stream_opts.fields), in their order: each
   * member's bytes (the caller's buffer), or len GF_NO_INDEX where the
   * sample has none. */
  const uint8_t *field[GF_FIELDS_MAX];
  uint64_t field_len[GF_FIELDS_MAX];
} gf_wds_streamed;

/* Called once a sample, in the shard's order. A nonzero return stops the
 * shard and is what gf_wds_stream_shard returns. */
typedef int (*gf_wds_streamed_fn)(void *ctx, const gf_wds_streamed *s);

typedef struct gf_wds_stream_opts {
  const gf_wds_rules *rules;
  const gf_wds_fields *fields; /* other fields taken (NULL: none); one
                                  over its bound fails its sample */
  uint8_t *buf;       /* the caller's, max_bytes long: the taken members */
  uint64_t max_bytes; /* a sample whose taken members hold more fails */
} gf_wds_stream_opts;

/* What a shard held. */
typedef struct gf_wds_stream_counts {
  uint64_t samples; /* handed on, good or bad */
  uint64_t bad;     /* of which with rc < 0 */
  uint64_t skipped; /* members that are not regular files */
  uint64_t dropped; /* members without a key and field, or metadata */
} gf_wds_stream_counts;

/* Reads the tar shard `shard` (its name, for messages) of `size` bytes
 * through pull and calls fn for each sample. Returns 0, fn's nonzero
 * return, or the shard's error (gf_tar_scan's: not a tar file, a damaged
 * header, a truncated shard; GF_ELIMIT for too many field names), after
 * which the rest of the shard is not read. counts (NULL: not kept) says
 * what passed, also after an error. */
int gf_wds_stream_shard(const char *shard, uint64_t size, gf_tar_read_fn pull,
                        void *pull_ctx, const gf_wds_stream_opts *o,
                        gf_wds_streamed_fn fn, void *ctx,
                        gf_wds_stream_counts *counts);

#endif
