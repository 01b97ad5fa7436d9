/* The fetch stage: for a source whose storage is remote (every read a
 * round trip to a server), the loader's order is read ahead of decode on
 * a thread of its own, many reads in flight, bounded in bytes and in
 * requests by the configuration (gf_remote_config.fetch_bytes,
 * fetch_requests), so that a slow server stalls the stage, never memory.
 *
 * Order. The stage walks the same (epoch, position) sequence as the
 * loader's dispatcher, from the cursor of its last restart, with its own
 * copy of the sampler: positions are numbered by `seq` from that restart
 * (seq 0 is the restart's position), across epochs; the dispatcher gives
 * each batch the seq of its first position. A position whose sample the
 * decoded-sample cache holds when it is planned is not fetched.
 *
 * Reads. A read unit is one ranged request: in GF_ORDER_BLOCK, each block
 * of a window (its samples are adjacent in one object: one request a
 * block and object, the whole window planned at once, since its samples
 * are shuffled among themselves; when a window's blocks do not fit half
 * the budget, its samples are read one by one), in GF_ORDER_SEQUENTIAL a
 * run of samples that follow each other in one object, otherwise one
 * sample. A unit never spans two blocks, nor two samples that merely
 * happened to come one after the other in a shuffled order: so the units
 * of shuffle and block order are the same byte ranges every epoch (less
 * the samples the decoded-sample cache holds), which the disk cache tier
 * keys its entries on (a merged run would hold bytes, such as the
 * alignment padding between two blocks, that no earlier read fetched).
 * Units are read in the order their first position comes, into one arena
 * of `budget` bytes, and freed once every position they hold has been
 * released.
 *
 * Threads: gf_fetch_take and gf_fetch_release from any worker thread at
 * once; gf_fetch_restart only while no take or release is under way (the
 * loader calls it after cancelling every batch). */
#ifndef GF_PIPELINE_FETCH_H
#define GF_PIPELINE_FETCH_H

#include "common/common.h"
#include "pipeline/cache.h"
#include "pipeline/sampler.h"
#include "pipeline/source.h"
#include "pipeline/trace.h"

typedef struct gf_fetch gf_fetch;

typedef struct gf_fetch_config {
  gf_source *src;      /* its storage reads through an engine */
  uint64_t batch_size; /* the dispatcher's (drop_last trims epochs to it) */
  uint32_t drop_last;
  uint64_t budget;     /* bytes fetched or in flight at once */
  uint32_t requests;   /* reads in flight at once */
  uint32_t positions;  /* positions planned ahead at once (gf_fetch_sizes) */
  uint32_t order;      /* gf_order: which runs may be one read */
  uint64_t block_size; /* GF_ORDER_BLOCK: samples a block (0: default) */
  gf_cache *cache;     /* samples it holds are not fetched (NULL: none) */
  gf_trace *trace;     /* spans of the reads (NULL: none) */
} gf_fetch_config;

/* What the stage did since create. */
typedef struct gf_fetch_counters {
  uint64_t requests;   /* ranged reads completed (retries inside one not
                          counted again) */
  uint64_t bytes;      /* their bytes */
  uint64_t failed;     /* reads that failed after their retries */
  uint64_t samples;    /* positions planned to be read */
  uint64_t cached;     /* positions not read: the cache held them */
  uint64_t block_reads;/* reads that held a whole block (GF_ORDER_BLOCK) */
  uint64_t take_wait_ns; /* workers' time waiting for a read */
  uint32_t inflight_max; /* the most reads in flight at once */
  uint64_t bytes_max;  /* the most bytes held at once */
  uint64_t unprepared; /* positions whose records could not be read ahead
                          (left to their workers) */
} gf_fetch_counters;

/* The positions to plan ahead and the bytes a create allocates besides
 * the budget (the ring of positions and the table of reads), from the
 * config alone: for the memory plan. window: the most positions one
 * window spans (GF_ORDER_BLOCK: block_size x window_blocks; else 1),
 * slots: the loader's batch slots, requests: the reads in flight (each
 * may be a position of its own, beyond those the slots hold). */
void gf_fetch_sizes(uint64_t batch_size, uint32_t slots, uint64_t window,
                    uint32_t requests, uint32_t *positions,
                    uint64_t *table_bytes);

/* Creates the stage (its thread, its reader over the source's storage,
 * the arena) at (epoch, pos) of sampler *s. Returns 0 or the error with
 * context. */
int gf_fetch_create(const gf_fetch_config *c, const gf_sampler *s,
                    uint64_t epoch, uint64_t pos, gf_fetch **out);
/* Stops the thread and the reads in flight; takes under way and later
 * ones fail with -ECANCELED. Any thread. */
void gf_fetch_shutdown(gf_fetch *f);
/* gf_fetch_shutdown, then frees (no take may be under way). NULL
 * accepted. */
void gf_fetch_destroy(gf_fetch *f);

/* Drops everything planned and fetched and starts again at (epoch, pos)
 * of *s (copied), which becomes seq 0. */
void gf_fetch_restart(gf_fetch *f, const gf_sampler *s, uint64_t epoch,
                      uint64_t pos);

/* Position seq's stored bytes (its sample is idx): waits until they are
 * read. Returns 1 with *data and *len (valid until gf_fetch_release of
 * seq); 0 when the stage did not read it (the cache held it when planned:
 * the caller reads it itself if the cache no longer gives it; or its
 * record could not be read ahead: the caller reads it and reports); or the
 * read's error with the object, range and what the server said. */
int gf_fetch_take(gf_fetch *f, uint64_t seq, uint64_t idx,
                  const uint8_t **data, uint64_t *len);
/* The caller is done with position seq (taken or not; not yet planned:
 * waits until it is). */
void gf_fetch_release(gf_fetch *f, uint64_t seq);

void gf_fetch_counters_get(gf_fetch *f, gf_fetch_counters *out);
/* Reads in flight now, and bytes held now. */
void gf_fetch_now(gf_fetch *f, uint32_t *inflight, uint64_t *bytes);

#endif
