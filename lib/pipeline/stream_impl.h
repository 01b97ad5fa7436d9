/* The streaming stage's private header (stream.h is its interface): the
 * state its two files share. Nothing else includes it.
 *
 * Files, one job each:
 *   stream.c       the merge and the shuffle buffer, the positions handed
 *                  to the takers, the lanes started and stopped, the calls
 *   stream_lane.c  a lane: its pumps (each shard's one GET into a ring)
 *                  and its parser (the ring's tar members into items)
 *   stream_arena.c items in the arena's pages
 * (calls point down that list).
 *
 * A lane reads its shards one after the other (its k-th shard of the
 * stage's run is g = k across epochs: (epoch - start) x its count + the
 * shard's place in the epoch). Its GF_STREAM_PUMPS pumps take turns:
 * pump g % PUMPS opens shard g and streams it into its own ring, so that
 * the next shard is open, and its first bytes read, while the parser is
 * still in this one: the open's round trips and the GET's first byte
 * (two or more round trips from a distant server) are not waited for
 * between shards, and a lane draws on more than one connection where one
 * connection's window limits it. The order of the samples is the
 * parser's, shard after shard, whatever the pumps' timing. */
#ifndef GF_PIPELINE_STREAM_IMPL_H
#define GF_PIPELINE_STREAM_IMPL_H

#include "pipeline/stream.h"

#include <pthread.h>
#include <stdatomic.h>

/* Entries a lane's queue holds (samples read ahead, or its epoch's end),
 * and their bytes at most (one sample whatever its size): a lane reads
 * ahead of the merge, so that one slower for a moment does not hold the
 * round robin up. */
#define QLEN 64u
#define LANE_AHEAD (8ull << 20)
#define NO_PAGE UINT32_MAX

enum { IT_FREE, IT_SAMPLE, IT_BAD, IT_END };

/* A sample (or a bad one, or a lane's epoch end) between a lane and a
 * taker. Its bytes lie in pages: its key (NUL-terminated), then its image,
 * or its error (a gf_error_info) for a bad one. */
typedef struct item {
  uint32_t kind;
  uint32_t page, npages; /* its first page; the others follow by next[] */
  uint32_t shard;
  uint64_t epoch, ordinal;
  uint64_t keylen, len; /* the key's bytes (with its NUL), the image's */
  uint64_t flen;        /* the asked fields' after it: per field its
                           length (8 bytes), then its bytes */
  int64_t label;
  int codec;
  uint32_t next_free;
} item;

/* A position handed out and not yet taken. */
typedef struct out_slot {
  bool used;
  uint64_t epoch, pos;
  uint32_t item;
} out_slot;

struct lane;

/* A pump: one shard at a time opened and streamed (one GET) into its
 * ring, which holds the shard's bytes [lo, hi) (none below lo are needed:
 * the parser's back window). Its job is shard g of the lane (ready once
 * opened, or once its open failed), released by the parser when it is
 * done with it; the pump then closes it and opens its next. */
typedef struct pump {
  struct lane *ln;
  uint32_t idx;
  pthread_t th;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *ring;
  uint64_t lo, hi;
  gf_object *job;
  uint64_t job_g;    /* the lane's shard number of the job */
  bool job_ready;    /* the job is shard job_g, opened or failed (open_rc) */
  bool job_done;     /* streamed to its end, or failed (pump_rc) */
  bool job_stop;     /* the parser wants no more of its bytes */
  bool job_released; /* the parser is done with it: the pump closes it */
  bool paused;       /* the sink ended a request for want of room */
  bool exited;       /* the pump thread is gone (stopping) */
  int open_rc, pump_rc;
  gf_error_info open_err, pump_err;
} pump;

typedef struct lane {
  struct gf_stream *s;
  uint32_t id;
  pthread_t parse_th;
  bool parse_started;
  pump pumps[GF_STREAM_PUMPS];
  uint8_t *scratch; /* max_sample bytes: a sample's taken members */
  /* Its queue to the merge, under the stage's mu. */
  uint32_t q[QLEN];
  uint32_t qhead, qlen;
  uint64_t qpages; /* the queued items' pages */
  bool done;       /* the merge took its end of the current epoch */
} lane;

struct gf_stream {
  gf_stream_config c;
  uint32_t nlanes;
  pthread_mutex_t mu;
  /* Lanes wait on lane_cv (pages, room in their queue), takers on take_cv
   * (a lane's sample, a position's place); each is signalled only when
   * someone waits on it. */
  pthread_cond_t lane_cv, take_cv;
  uint32_t lane_waiting, take_waiting;
  bool emit_blocked;     /* a position's place was held: a free wakes takers */
  _Atomic bool stopping; /* the lanes end (restart, shutdown) */
  bool shut;             /* shutdown: takes fail */
  /* The arena and its pages. */
  uint8_t *arena;
  uint64_t arena_bytes;
  uint32_t npages;
  uint32_t *next;     /* a page's next in its item, or in the free list */
  uint32_t free_page; /* the free list's head */
  uint32_t free_pages;
  /* Items. */
  item *items;
  uint32_t nitems, free_item;
  /* The merge (under mu). */
  lane *lanes;
  uint64_t start_epoch;         /* where the lanes began */
  uint64_t cur_epoch;           /* the epoch being merged */
  uint64_t emitted;             /* its positions handed out */
  uint64_t skip_epoch, skip_to; /* positions before are dropped */
  uint32_t rr, lanes_done;
  uint64_t rng;
  uint32_t *buf; /* the shuffle buffer's items */
  uint32_t buf_count, buf_cap;
  uint64_t buf_pages;
  uint64_t shuffle_pages; /* the buffer is full at this many pages */
  uint32_t adds;          /* samples added since one last left */
  out_slot *out;
  uint32_t out_cap;
  /* Epoch lengths, published: slot e % 4 holds e + 1 and its length. */
  _Atomic uint64_t len_tag[4], len_val[4];
  /* Counters. */
  _Atomic uint64_t shards_done, samples, bytes, skipped, lost, restarts,
      wait_ns;
  /* Bad samples dropped (skip policy) by epoch: slot e % 8 holds epoch e's
   * (tag e + 1), for gf_stream_skipped. Under mu. */
  uint64_t skip_tag[8], skip_count[8];
  char last_skip[512];
  gf_error_info fatal; /* a lane's failure to start (code 0: none) */
};

static inline uint64_t gf_stream__pages_for(uint64_t bytes) {
  return (bytes + GF_STREAM_PAGE - 1) / GF_STREAM_PAGE;
}

static inline uint32_t gf_stream__nfields(const gf_stream_config *c) {
  return c->fields ? c->fields->n : 0;
}

/* The asked fields' bytes in an item, at most. */
static inline uint64_t gf_stream__fields_max(const gf_stream_config *c) {
  return (uint64_t)gf_stream__nfields(c) *
         (8 + (c->fields ? c->fields->bytes : 0));
}

/* A lane's buffer for a sample's taken members: its image, its label,
 * its asked fields. */
static inline uint64_t gf_stream__scratch(const gf_stream_config *c) {
  return c->max_sample + gf_stream__fields_max(c) + 65536;
}

/* stream_arena.c, under mu: items in the arena's pages. */
void gf_stream__free_item(gf_stream *s, uint32_t i);
/* An item of `bytes` bytes in pages; waits for them. Returns its index,
 * or UINT32_MAX when the lanes stop. */
uint32_t gf_stream__alloc_item(gf_stream *s, uint64_t bytes);
/* Waits on cv under mu, counted in *waiting. */
void gf_stream__wait_on(gf_stream *s, pthread_cond_t *cv, uint32_t *waiting);
/* Copies len bytes between an item's bytes at off and mem (outside mu
 * where the item is the caller's alone). */
void gf_stream__item_io(gf_stream *s, const item *it, uint64_t off,
                        uint8_t *mem, uint64_t len, bool to_item);

/* stream_lane.c. A lane's rings and buffer (0, or -ENOMEM); freed by
 * gf_stream__lane_free, which a lane never set up accepts. */
int gf_stream__lane_init(gf_stream *s, lane *ln, uint32_t id);
void gf_stream__lane_free(lane *ln);
/* Starts a lane's threads (its queue, its pumps' jobs reset): 0, or the
 * error recorded. Under mu. */
int gf_stream__lane_start(lane *ln);
/* Wakes a lane's threads (s->stopping set) and joins them. Not under mu. */
void gf_stream__lane_stop(lane *ln);

#endif
