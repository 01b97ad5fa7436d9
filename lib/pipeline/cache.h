/* The host sample cache: sample index -> bytes (decoded pixels or stored
 * bytes: the caller decides), under a byte budget, so that when the
 * dataset fits, later epochs do no reads and no decodes.
 *
 * Policy: admit until full, then admit nothing more and evict nothing.
 * Under uniformly shuffled epochs every sample is equally likely to be
 * asked for next, so any resident set of budget bytes gives the same,
 * optimal hit rate (about budget / dataset bytes) and eviction could only
 * add churn: copying bytes in and out each epoch for no gain in hits. A
 * sample larger than the budget left is simply not admitted; a later,
 * smaller one still may be.
 *
 * Memory, all reserved at create and never grown:
 * - a table of 8 bytes a sample (n entries, one 64-bit word each);
 * - an arena of exactly `budget` bytes, reserved up front as address space
 *   (mmap, MAP_NORESERVE) so the operating system backs pages only as
 *   records are written: the resident size follows what was admitted, and
 *   a large budget costs nothing until used;
 * - the handle itself (a few hundred bytes).
 * So memory never exceeds budget + 8 * n bytes (each rounded up to a page)
 * plus the handle. An admitted sample of len bytes takes
 * gf_cache_record_bytes(len) = 16 + len rounded up to 16 from the budget:
 * a 16-byte header (length, index) and the payload, 16-byte aligned.
 * budget 0 disables the cache: nothing is allocated, every get misses and
 * every put reports GF_CACHE_FULL.
 *
 * Concurrency: every call except create/destroy may run from any thread at
 * once. get takes no lock: it is one acquire load of the sample's table
 * word (plus a relaxed counter increment). put claims the table word with
 * a compare-and-swap, reserves its record with a compare-and-swap bump of
 * the arena cursor (exact: it never overshoots the budget), copies the
 * bytes, and publishes the record's offset with a release store; a reader
 * that sees the offset therefore sees the bytes. Records are never moved or
 * freed, so data returned by get stays valid until destroy.
 *
 * Pinning (GPU mode): with a pinner set before the first put, the arena is
 * pinned for device reads chunk by chunk (GF_CACHE_PIN_CHUNK bytes) as the
 * records reach each chunk, so pinned memory follows what was admitted
 * (rounded up to a chunk) and never exceeds the budget. A record no larger
 * than a chunk is then placed so it does not cross a chunk boundary (the
 * skipped tail of a chunk counts as used budget: at most one record's
 * bytes a chunk). gf_cache_get_dev gives a hit's device address when its
 * chunk is pinned, so the GPU can copy it where it lies instead of the CPU
 * copying it into a staging buffer first. The chunk is pinned by the put
 * that first reaches it, before that put publishes its record; other puts
 * into the same chunk meanwhile publish theirs unpinned (their gets report
 * no device address until the pin completes). A failed pin leaves its
 * chunk unpinned for good: its samples take the copying path. */
#ifndef GF_PIPELINE_CACHE_H
#define GF_PIPELINE_CACHE_H

#include "common/common.h"

typedef struct gf_cache gf_cache;

/* gf_cache_put's outcomes that are not errors. */
enum {
  GF_CACHE_INSERTED = 0, /* the bytes are now cached */
  GF_CACHE_PRESENT = 1,  /* idx is cached already, or another thread is
                            inserting it right now (its copy wins) */
  GF_CACHE_FULL = 2,     /* the record does not fit in the budget left */
};

#define GF_CACHE_RECORD_HEADER 16u
#define GF_CACHE_PIN_CHUNK (64ull << 20)
#define GF_CACHE_ALIGN 16u

/* Budget bytes a sample of len bytes takes when admitted (UINT64_MAX when
 * that overflows). */
static inline uint64_t gf_cache_record_bytes(uint64_t len) {
  if (len > UINT64_MAX - GF_CACHE_RECORD_HEADER - GF_CACHE_ALIGN)
    return UINT64_MAX;
  return GF_CACHE_RECORD_HEADER +
         ((len + GF_CACHE_ALIGN - 1) & ~(uint64_t)(GF_CACHE_ALIGN - 1));
}

typedef struct gf_cache_counters {
  uint64_t hits;          /* gets that found the sample */
  uint64_t misses;        /* gets that did not */
  uint64_t inserted;      /* samples admitted (puts that returned 0) */
  uint64_t rejected;      /* puts refused with GF_CACHE_FULL */
  uint64_t present;       /* puts that returned GF_CACHE_PRESENT */
  uint64_t payload_bytes; /* sum of the admitted samples' lengths */
  uint64_t bytes_used;    /* budget taken: sum of gf_cache_record_bytes() */
  uint64_t budget;
  uint64_t table_bytes;   /* the per-sample table: 8 * n (0 if disabled) */
  uint64_t n;
  uint64_t pinned_bytes;  /* arena bytes pinned for device reads */
  uint64_t pin_failures;  /* chunks whose pin failed */
} gf_cache_counters;

/* Pins arena memory for device reads (the GPU stage's cudaHostRegister).
 * pin: [addr, addr + len) is page-aligned; on success it writes the device
 * address of addr to *dev and returns 0, else a negative code with context
 * (the cache counts it and logs nothing). unpin undoes one successful pin,
 * at destroy. Both may be called from any thread the cache is used on. */
typedef struct gf_cache_pinner {
  int (*pin)(void *ctx, void *addr, size_t len, uint64_t *dev);
  void (*unpin)(void *ctx, void *addr, size_t len);
  void *ctx;
  uint64_t chunk_bytes; /* pin granularity, a multiple of the page size
                           (0: GF_CACHE_PIN_CHUNK) */
} gf_cache_pinner;

/* Creates a cache for samples 0 .. n-1 holding at most `budget` bytes of
 * records. *out is owned by the caller and freed with gf_cache_destroy().
 * Returns 0, -EINVAL (out NULL), -EOVERFLOW (8 * n overflows) or -ENOMEM
 * (the address space could not be reserved), with context. Any thread. */
int gf_cache_create(uint64_t budget, uint64_t n, gf_cache **out);
/* Sets the pinner (copied). Must come before any put. Returns 0, -EINVAL
 * (after a put, or a chunk size that is not a page multiple), or -ENOMEM
 * (the per-chunk table: 16 bytes a chunk) with context. A disabled cache
 * (budget 0) accepts it and never pins. */
int gf_cache_set_pinner(gf_cache *c, const gf_cache_pinner *p);
/* Frees every byte, unpinning what was pinned first; NULL accepted. No other call on the cache may be
 * running or follow; data pointers from get become invalid. */
void gf_cache_destroy(gf_cache *c);

/* Looks up sample idx. Returns 1 (hit: *data and *len set; the bytes stay
 * valid and unchanged until destroy; *data is 16-byte aligned), 0 (miss)
 * or -ERANGE (idx >= n, with context). Any thread, lock-free. */
int gf_cache_get(gf_cache *c, uint64_t idx, const void **data, size_t *len);
/* gf_cache_get, and on a hit *dev is the device address of *data when the
 * record lies in a pinned chunk, else 0. */
int gf_cache_get_dev(gf_cache *c, uint64_t idx, const void **data,
                     size_t *len, uint64_t *dev);
/* Copies len bytes of data in as sample idx. Returns GF_CACHE_INSERTED,
 * GF_CACHE_PRESENT or GF_CACHE_FULL (none of which records an error), or
 * -ERANGE (idx >= n) / -EINVAL (data NULL with len > 0) with context. Any
 * thread. */
int gf_cache_put(gf_cache *c, uint64_t idx, const void *data, size_t len);
/* The same with the bytes in two parts, stored one after the other (a
 * small header and the payload, without a copy to join them first). */
int gf_cache_put_parts(gf_cache *c, uint64_t idx, const void *head,
                       size_t head_len, const void *data, size_t data_len);
/* The same with the bytes in n parts, stored one after the other (a
 * header, the pixels, then a sample's other fields). */
typedef struct gf_cache_part {
  const void *data;
  size_t len;
} gf_cache_part;
int gf_cache_put_iov(gf_cache *c, uint64_t idx, const gf_cache_part *parts,
                     uint32_t n);
/* Reads the counters. Each is exact once the threads using the cache are
 * quiet; while they run, each is a value it held recently. Any thread. */
void gf_cache_stats(const gf_cache *c, gf_cache_counters *out);

#endif /* GF_PIPELINE_CACHE_H */
