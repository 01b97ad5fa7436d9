/* The loader's trace: a bounded in-memory record of timed spans (reads,
 * decodes, cache copies, batch finalisation, the consumer's calls, the GPU
 * copy stream), written as a Chrome trace (Trace Event JSON) that Perfetto
 * and chrome://tracing open.
 *
 * Recording is one relaxed atomic increment into an array allocated at
 * create: no lock, no allocation, any thread. When the array is full,
 * later events are dropped and counted. A NULL trace records nothing, so
 * a loader without tracing pays one branch a span. */
#ifndef GF_PIPELINE_TRACE_H
#define GF_PIPELINE_TRACE_H

#include "common/common.h"

/* What a span measured; the names the file shows. */
typedef enum gf_trace_kind {
  GF_TR_READ = 0, /* a worker's chunk: read submission to last completion */
  GF_TR_DECODE,   /* one sample's decode (checksum excluded) */
  GF_TR_CACHE,    /* one sample copied out of the cache */
  GF_TR_FINALIZE, /* a batch made dense, transformed or submitted */
  GF_TR_NEXT,     /* the consumer in next(): mostly waiting for data */
  GF_TR_STEP,     /* the consumer held the batch: its training step */
  GF_TR_RELEASE,  /* the consumer in release() */
  GF_TR_GPU_COPY, /* copy stream: H2D copy + transform kernel of a batch */
  GF_TR_FETCH,    /* the fetch stage: one ranged read, issue to done
                     (arg: GF_TRACE_FETCH_ARG) */
  GF_TR_KIND_COUNT_
} gf_trace_kind;

/* A fetch span's arg: the samples the read holds and the epoch they are
 * of (written as "samples" and "epoch": a read ahead into the next epoch
 * is told from the current one's). */
#define GF_TRACE_FETCH_ARG(samples, epoch)                                     \
  ((uint64_t)(uint32_t)(samples) | ((uint64_t)(epoch) << 32))

/* Tracks: the consumer, each worker, the GPU copy stream. */
#define GF_TRACE_TID_CONSUMER 0u
#define GF_TRACE_TID_WORKER(i) (1u + (uint32_t)(i))
#define GF_TRACE_TID_COPY_STREAM 100000u
#define GF_TRACE_TID_FETCH 100001u

typedef struct gf_trace gf_trace;

/* Creates a trace holding up to `capacity` events (> 0) with `workers`
 * worker tracks; times are taken relative to `origin_ns` (CLOCK_MONOTONIC).
 * Returns 0, -EINVAL or -ENOMEM with context. */
int gf_trace_create(uint64_t capacity, uint32_t workers, uint64_t origin_ns,
                    bool gpu_track, gf_trace **out);
/* NULL accepted. No recording may be under way. */
void gf_trace_destroy(gf_trace *t);

/* Records a span [start_ns, end_ns) on track tid; arg is a sample index or
 * batch number (shown in the event's args), GF_NO_INDEX for none. Any
 * thread; NULL t: nothing. */
void gf_trace_span(gf_trace *t, gf_trace_kind kind, uint32_t tid,
                   uint64_t start_ns, uint64_t end_ns, uint64_t arg);

/* Events recorded and dropped so far. Any thread. */
void gf_trace_counts(const gf_trace *t, uint64_t *recorded, uint64_t *dropped);

/* Writes every completed event to `path` as {"traceEvents":[...]}. Events
 * still being written by another thread are left out. Returns 0 or a
 * negated errno with context. Any thread. */
int gf_trace_write(const gf_trace *t, const char *path);

/* The monotonic clock the trace uses, in ns. */
uint64_t gf_trace_now(void);

#endif
