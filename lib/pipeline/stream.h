/* The streaming stage (stream.c): WebDataset shards read without an
 * index, each front to back in one request (gf_object_stream), as the
 * webdataset library reads them, for remote shards that have no sidecar
 * index (a header scan would cost a request a member).
 *
 * Order, deterministic for a given (shards, seed, rank, world, lanes,
 * shuffle, shuffle_bytes), whatever the timing:
 *   1. Epoch e's shard order is the keyed permutation of the shards
 *      P(sub(E, 3), nshards) (sampler.h's section 2, E its epoch key;
 *      `ordered`: the shards' own order, and no buffer), and
 *      rank r takes positions r, r + world, r + 2*world ... of it: shards
 *      are dealt to ranks whole, so no two ranks read the same bytes.
 *   2. `lanes` shards of a rank are read at once: lane i reads the rank's
 *      shards i, i + lanes, i + 2*lanes ... in that order.
 *   3. The lanes' samples are merged round robin: one from lane 0, one
 *      from lane 1, ..., skipping lanes whose shards are done.
 *   4. A shuffle buffer (webdataset's shuffle(n, initial)): merged
 *      samples are added one at a time; a sample leaves it when it holds
 *      `shuffle` samples or `shuffle_bytes` bytes, or the merge is over
 *      for the epoch (and it holds any), or it holds at least
 *      min(shuffle, GF_STREAM_INITIAL) samples and two were added since
 *      one last left (so the first batch comes after `initial` samples,
 *      and the buffer grows to its size two in, one out). What leaves is
 *      the sample at index k = rng() mod count (the last takes its
 *      place), rng being splitmix64 seeded with sub(E, 4 + rank): the
 *      epoch's next position, 0, 1, 2 ...
 * A rank's epoch ends when its shards are done and the buffer is empty:
 * its length is known only then (ranks may differ: as webdataset, unless
 * the shards hold the same count).
 *
 * Memory: one arena, allocated at create (gf_stream_sizes), in pages; a
 * sample's image takes whole pages. It holds the shuffle buffer, what
 * each lane has read ahead and the positions given out and not yet taken;
 * a lane waits for pages, never allocates.
 *
 * Bad input: a sample without an image, with two, with a label that is no
 * number, larger than max_sample (wds_stream.h) is an error at its
 * position under the fail policy; under skip, it is dropped here (counted,
 * the last reason kept) and takes no position. A shard that fails (not a
 * tar file, damaged, gone, a server that gives up after its retries) ends
 * its lane's shard there: under fail, the error takes the position of the
 * shard's next sample; under skip, the rest of the shard is counted lost
 * and named in a warning.
 *
 * Threads: each lane has GF_STREAM_PUMPS + 1 threads (its pumps, taking
 * turns shard by shard, stream a shard into their rings; one parses the
 * rings, shard after shard: libarchive pulls); the merge and shuffle run
 * on the threads that take, under the stage's lock. gf_stream_take from any
 * thread; gf_stream_restart only while no take is under way. */
#ifndef GF_PIPELINE_STREAM_H
#define GF_PIPELINE_STREAM_H

#include "common/common.h"
#include "format/wds_rules.h"
#include "io/storage.h"

typedef struct gf_stream gf_stream;

/* Defaults. */
#define GF_STREAM_LANES 4u
#define GF_STREAM_SHUFFLE 1000u
#define GF_STREAM_SHUFFLE_BYTES (256ull << 20)
/* Samples the buffer holds before the first leaves (webdataset's). */
#define GF_STREAM_INITIAL 100u
/* Bytes a pump's ring holds between its stream and the lane's parser. */
#define GF_STREAM_RING (4ull << 20)
/* Pumps a lane: each streams every PUMPS-th of the lane's shards, so the
 * next shard is open and its first bytes in while one is parsed
 * (stream_impl.h). */
#define GF_STREAM_PUMPS 2u
/* The arena's page. */
#define GF_STREAM_PAGE (32u * 1024u)

typedef struct gf_stream_config {
  gf_storage *st;
  char *const *shards; /* names under st's root, in the source's order */
  uint32_t nshards;
  const gf_wds_rules *rules;
  const gf_wds_fields *fields; /* other fields handed on (NULL: none) */
  uint64_t seed;
  uint32_t rank, world;
  uint32_t lanes;         /* 0: GF_STREAM_LANES (at most the shards) */
  uint32_t shuffle;       /* samples the buffer holds (0: 1, no shuffle) */
  uint64_t shuffle_bytes; /* and their bytes at most (0: the default) */
  uint64_t max_sample;    /* a sample's image and label bytes at most */
  uint32_t takers;        /* positions given out and not taken at once, at
                             most (the loader's workers x chunk, and one) */
  bool skip_bad;          /* the skip policy: bad samples dropped here */
  bool ordered;           /* GF_ORDER_SEQUENTIAL: the shards in their
                             order every epoch (step 1 without the
                             permutation) and no buffer */
  /* Called (outside the stage's lock) when an epoch's length becomes
   * known, so that a dispatcher waiting for it looks again. */
  void (*notify)(void *ctx);
  void *notify_ctx;
} gf_stream_config;

/* What the stage did since create. */
typedef struct gf_stream_counters {
  uint64_t shards;   /* shards read to their end */
  uint64_t samples;  /* samples handed on (taken) */
  uint64_t bytes;    /* shard bytes streamed */
  uint64_t skipped;  /* bad samples dropped (skip policy) */
  uint64_t lost;     /* shards that failed, under skip */
  uint64_t restarts; /* replays of an epoch (a seek, a repair) */
  uint64_t wait_ns;  /* takers' time waiting for a sample */
} gf_stream_counters;

/* The arena's bytes and the tables' (for the memory plan), from the
 * config alone. */
void gf_stream_sizes(const gf_stream_config *c, uint64_t *arena,
                     uint64_t *tables);

/* Creates the stage at position pos of `epoch` (what comes before is read
 * and dropped: a resumed epoch replays its stream). Returns 0 or the error
 * with context (-EINVAL: fewer shards than ranks, named). */
int gf_stream_create(const gf_stream_config *c, uint64_t epoch, uint64_t pos,
                     gf_stream **out);
/* Stops the lanes; takes under way and later ones fail with -ECANCELED. */
void gf_stream_shutdown(gf_stream *s);
/* Shutdown, then frees. NULL accepted. */
void gf_stream_destroy(gf_stream *s);

/* Starts again at position pos of epoch: everything held is dropped and
 * the epoch's stream replayed from its start, positions before pos
 * dropped as they come. No take may be under way. */
void gf_stream_restart(gf_stream *s, uint64_t epoch, uint64_t pos);

/* Moves to position pos of epoch: nothing to do where the stage stands
 * there already (every position before it taken, none after it handed
 * out), a skip ahead where it has not reached pos of that epoch yet (the
 * positions handed out and not taken dropped), else a restart (a replay).
 * No take may be under way. */
void gf_stream_seek(gf_stream *s, uint64_t epoch, uint64_t pos);

/* One position's sample, as taken. */
typedef struct gf_stream_sample {
  uint64_t len;     /* its image's bytes, copied to the caller's buffer */
  int64_t label;    /* -1 without one */
  int codec;        /* what its image field's name promises */
  uint32_t shard;   /* its shard (an index into the config's shards) */
  uint64_t ordinal; /* its number among the shard's samples */
  uint64_t id;      /* (shard << 40) | ordinal: the same sample every epoch */
} gf_stream_sample;

/* Where a taken sample's asked fields go (fields->n of them): each one's
 * length (GF_NO_INDEX: the sample has none) and fields->bytes of room. */
typedef struct gf_stream_fields_out {
  uint64_t *len;
  uint8_t *data;
} gf_stream_fields_out;

/* Position pos of epoch: waits until it comes, copies its image into
 * dst (cap bytes: max_sample is enough) and its fields into *fo (NULL:
 * none asked), and frees it. Returns 1 with *out; 0 when the epoch ended
 * before pos; or its error (a bad sample or a shard that failed, under
 * the fail policy; -ECANCELED after shutdown), recorded, naming the
 * shard, the sample's key and the byte. */
int gf_stream_take(gf_stream *s, uint64_t epoch, uint64_t pos, uint8_t *dst,
                   uint64_t cap, const gf_stream_fields_out *fo,
                   gf_stream_sample *out);

/* Epoch's length when it is known (its shards done, its buffer empty):
 * 1 with *n; else 0. Any thread, lock-free. */
int gf_stream_epoch_length(gf_stream *s, uint64_t epoch, uint64_t *n);

void gf_stream_counters_get(gf_stream *s, gf_stream_counters *out);
/* Bad samples dropped (skip policy) in the epochs before `epoch`: what
 * a consumer in `epoch` has passed, the stage's read-ahead left out. */
uint64_t gf_stream_skipped(gf_stream *s, uint64_t epoch);
/* The last bad sample dropped and why (""). Into buf. */
void gf_stream_last_skip(gf_stream *s, char *buf, size_t cap);

#endif
