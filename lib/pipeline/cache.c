/* The host sample cache: a table word per sample published with release
 * stores, and an arena filled by a compare-and-swap bump. Policy and
 * memory bounds are explained in cache.h. */
#include "pipeline/cache.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* mmap: reserve the arena and table as address space */
#include <unistd.h>   /* sysconf(_SC_PAGESIZE) */

/* Table word values: 0 absent, CLAIMED while a put copies its bytes, else
 * the record's arena offset + 1 (offsets stay below the budget, far from
 * UINT64_MAX). */
#define CLAIMED UINT64_MAX

/* A pin chunk's state. */
enum { CHUNK_FREE = 0, CHUNK_PINNING, CHUNK_PINNED, CHUNK_FAILED };

typedef struct pin_chunk {
  _Atomic uint32_t state;
  uint32_t reserved0;
  uint64_t dev; /* written before state becomes CHUNK_PINNED (release) */
} pin_chunk;

struct gf_cache {
  uint64_t budget;
  uint64_t n;
  _Atomic uint64_t *table; /* n words, or NULL when disabled */
  size_t table_map;        /* bytes mapped for the table */
  uint8_t *arena;          /* budget bytes, or NULL when disabled */
  size_t arena_map;
  gf_cache_pinner pinner;  /* pin NULL: no pinning */
  uint64_t chunk;          /* pin chunk bytes */
  uint64_t nchunks;
  pin_chunk *chunks;       /* nchunks entries, or NULL */
  _Atomic uint64_t pinned_bytes;
  _Atomic uint64_t pin_failures;
  /* Counters written by many threads sit on their own cache lines, so a
   * get's increment does not slow down the cursor's compare-and-swap. */
  alignas(64) _Atomic uint64_t cursor; /* arena bytes reserved */
  alignas(64) _Atomic uint64_t hits;
  alignas(64) _Atomic uint64_t misses;
  alignas(64) _Atomic uint64_t inserted;
  _Atomic uint64_t rejected;
  _Atomic uint64_t present;
  _Atomic uint64_t payload;
};

static void count(_Atomic uint64_t *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int map_bytes(uint64_t bytes, size_t *mapped, void **out) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (bytes > (uint64_t)SIZE_MAX - page)
    return -ENOMEM;
  size_t len = (size_t)((bytes + page - 1) / page * page);
  /* MAP_NORESERVE: the memory is committed page by page as records are
   * written, so an unused budget costs address space only. The mapping
   * starts zero-filled, which is what the table needs. */
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return -errno;
  *mapped = len;
  *out = p;
  return 0;
}

int gf_cache_create(uint64_t budget, uint64_t n, gf_cache **out) {
  if (!out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: out is NULL");
  *out = NULL;
  uint64_t table_bytes;
  if (!gf_mul_u64(n, sizeof(uint64_t), &table_bytes))
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: a table of %llu samples (8 bytes each) overflows",
                   (unsigned long long)n);
  size_t hsize = (sizeof(gf_cache) + 63) / 64 * 64;
  gf_cache *c = aligned_alloc(64, hsize);
  if (!c)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: cannot allocate the handle");
  memset(c, 0, sizeof *c);
  c->budget = budget;
  c->n = n;
  atomic_init(&c->cursor, 0);
  atomic_init(&c->hits, 0);
  atomic_init(&c->misses, 0);
  atomic_init(&c->inserted, 0);
  atomic_init(&c->rejected, 0);
  atomic_init(&c->present, 0);
  atomic_init(&c->payload, 0);
  atomic_init(&c->pinned_bytes, 0);
  atomic_init(&c->pin_failures, 0);
  if (budget > 0 && n > 0) {
    void *p = NULL;
    int rc = map_bytes(table_bytes, &c->table_map, &p);
    if (rc < 0) {
      gf_cache_destroy(c);
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cache: cannot reserve the table of %llu samples "
                     "(%llu bytes): %s",
                     (unsigned long long)n, (unsigned long long)table_bytes,
                     gf_strerror(rc));
    }
    c->table = p;
    rc = map_bytes(budget, &c->arena_map, &p);
    if (rc < 0) {
      gf_cache_destroy(c);
      return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "cache: cannot reserve the budget of %llu bytes: %s",
                     (unsigned long long)budget, gf_strerror(rc));
    }
    c->arena = p;
  }
  *out = c;
  return 0;
}

int gf_cache_set_pinner(gf_cache *c, const gf_cache_pinner *p) {
  if (!c || !p || !p->pin || !p->unpin)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: set_pinner needs a cache and pin/unpin functions");
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t chunk = p->chunk_bytes ? p->chunk_bytes : GF_CACHE_PIN_CHUNK;
  if (chunk % page)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: pin chunk of %llu bytes is not a multiple of the "
                   "page size (%llu)",
                   (unsigned long long)chunk, (unsigned long long)page);
  if (atomic_load_explicit(&c->cursor, memory_order_relaxed) != 0 ||
      c->chunks)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: set_pinner after records were admitted");
  if (!c->arena)
    return 0;
  uint64_t n = (c->arena_map + chunk - 1) / chunk;
  pin_chunk *t = calloc(n, sizeof *t);
  if (!t)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cache: cannot allocate the table of %llu pin chunks",
                   (unsigned long long)n);
  c->pinner = *p;
  c->chunk = chunk;
  c->nchunks = n;
  c->chunks = t;
  return 0;
}

static uint64_t chunk_len(const gf_cache *c, uint64_t k) {
  uint64_t start = k * c->chunk;
  return c->arena_map - start < c->chunk ? c->arena_map - start : c->chunk;
}

/* Pins chunk k unless someone did or is doing it. */
static void pin_chunk_once(gf_cache *c, uint64_t k) {
  pin_chunk *ch = &c->chunks[k];
  uint32_t expect = CHUNK_FREE;
  if (atomic_load_explicit(&ch->state, memory_order_relaxed) != CHUNK_FREE ||
      !atomic_compare_exchange_strong_explicit(&ch->state, &expect,
                                               CHUNK_PINNING,
                                               memory_order_relaxed,
                                               memory_order_relaxed))
    return;
  uint64_t len = chunk_len(c, k), dev = 0;
  gf_error_info saved = *gf_last_error();
  int rc = c->pinner.pin(c->pinner.ctx, c->arena + k * c->chunk, (size_t)len,
                         &dev);
  /* A failed pin is not this put's error: the sample is still cached. */
  gf_error_restore(&saved);
  if (rc == 0 && dev != 0) {
    ch->dev = dev;
    atomic_fetch_add_explicit(&c->pinned_bytes, len, memory_order_relaxed);
    atomic_store_explicit(&ch->state, CHUNK_PINNED, memory_order_release);
  } else {
    count(&c->pin_failures);
    atomic_store_explicit(&ch->state, CHUNK_FAILED, memory_order_release);
  }
}

void gf_cache_destroy(gf_cache *c) {
  if (!c)
    return;
  for (uint64_t k = 0; c->chunks && k < c->nchunks; k++)
    if (atomic_load_explicit(&c->chunks[k].state, memory_order_acquire) ==
        CHUNK_PINNED)
      c->pinner.unpin(c->pinner.ctx, c->arena + k * c->chunk,
                      (size_t)chunk_len(c, k));
  free(c->chunks);
  if (c->table)
    munmap((void *)c->table, c->table_map);
  if (c->arena)
    munmap(c->arena, c->arena_map);
  free(c);
}

static int out_of_range(const gf_cache *c, uint64_t idx, const char *what) {
  return gf_fail(-ERANGE, NULL, idx, GF_NO_INDEX,
                 "cache %s: sample index %llu is not below the sample count "
                 "%llu",
                 what, (unsigned long long)idx, (unsigned long long)c->n);
}

int gf_cache_get(gf_cache *c, uint64_t idx, const void **data, size_t *len) {
  return gf_cache_get_dev(c, idx, data, len, NULL);
}

int gf_cache_get_dev(gf_cache *c, uint64_t idx, const void **data,
                     size_t *len, uint64_t *dev) {
  if (dev)
    *dev = 0;
  if (GF_UNLIKELY(idx >= c->n))
    return out_of_range(c, idx, "get");
  uint64_t w =
      c->table ? atomic_load_explicit(&c->table[idx], memory_order_acquire) : 0;
  if (w == 0 || w == CLAIMED) {
    count(&c->misses);
    return 0;
  }
  /* The acquire load pairs with put's release store: the header and the
   * payload written before it are visible here. */
  const uint8_t *rec = c->arena + (w - 1);
  uint64_t hdr[2];
  memcpy(hdr, rec, sizeof hdr);
  if (GF_UNLIKELY(hdr[1] != idx))
    return gf_fail(GF_EINTERNAL, NULL, idx, w - 1,
                   "cache: the record at arena offset %llu belongs to "
                   "sample %llu",
                   (unsigned long long)(w - 1), (unsigned long long)hdr[1]);
  *data = rec + GF_CACHE_RECORD_HEADER;
  *len = (size_t)hdr[0];
  if (dev && c->chunks) {
    uint64_t off = w - 1, k = off / c->chunk;
    uint64_t end = off + gf_cache_record_bytes(hdr[0]);
    pin_chunk *ch = &c->chunks[k];
    if (end <= (k + 1) * c->chunk &&
        atomic_load_explicit(&ch->state, memory_order_acquire) ==
            CHUNK_PINNED)
      *dev = ch->dev + (off - k * c->chunk) + GF_CACHE_RECORD_HEADER;
  }
  count(&c->hits);
  return 1;
}

int gf_cache_put_parts(gf_cache *c, uint64_t idx, const void *head,
                       size_t head_len, const void *data, size_t data_len) {
  gf_cache_part parts[2] = {{head, head_len}, {data, data_len}};
  return gf_cache_put_iov(c, idx, parts, 2);
}

int gf_cache_put_iov(gf_cache *c, uint64_t idx, const gf_cache_part *parts,
                     uint32_t n) {
  size_t len = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (len + parts[i].len < len)
      return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                     "cache put: size overflow");
    len += parts[i].len;
    if (!parts[i].data && parts[i].len)
      return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                     "cache put: data is NULL for %zu bytes", parts[i].len);
  }
  if (GF_UNLIKELY(idx >= c->n))
    return out_of_range(c, idx, "put");
  uint64_t need = gf_cache_record_bytes(len);
  if (!c->table || need > c->budget) {
    count(&c->rejected);
    return GF_CACHE_FULL;
  }
  /* Claim the slot first, so two threads that missed on the same sample
   * do not both spend budget on it. */
  uint64_t expect = 0;
  if (!atomic_compare_exchange_strong_explicit(&c->table[idx], &expect, CLAIMED,
                                               memory_order_relaxed,
                                               memory_order_relaxed)) {
    count(&c->present);
    return GF_CACHE_PRESENT;
  }
  uint64_t cur = atomic_load_explicit(&c->cursor, memory_order_relaxed), at;
  do {
    /* With pinning, a record that fits a chunk starts a new chunk rather
     * than cross into it. */
    at = cur;
    if (c->chunks && need <= c->chunk && at % c->chunk + need > c->chunk)
      at = (at / c->chunk + 1) * c->chunk;
    if (at > c->budget || need > c->budget - at) {
      atomic_store_explicit(&c->table[idx], 0, memory_order_relaxed);
      count(&c->rejected);
      return GF_CACHE_FULL;
    }
  } while (!atomic_compare_exchange_weak_explicit(&c->cursor, &cur, at + need,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed));
  if (c->chunks && need <= c->chunk)
    pin_chunk_once(c, at / c->chunk);
  /* [at, at + need) is ours alone: no other thread reads it before the
   * release store below publishes it. */
  cur = at;
  uint8_t *rec = c->arena + cur;
  uint64_t hdr[2] = {(uint64_t)len, idx};
  memcpy(rec, hdr, sizeof hdr);
  uint8_t *w = rec + GF_CACHE_RECORD_HEADER;
  for (uint32_t i = 0; i < n; i++)
    if (parts[i].len) {
      memcpy(w, parts[i].data, parts[i].len);
      w += parts[i].len;
    }
  atomic_fetch_add_explicit(&c->payload, len, memory_order_relaxed);
  count(&c->inserted);
  atomic_store_explicit(&c->table[idx], cur + 1, memory_order_release);
  return GF_CACHE_INSERTED;
}

int gf_cache_put(gf_cache *c, uint64_t idx, const void *data, size_t len) {
  return gf_cache_put_parts(c, idx, NULL, 0, data, len);
}

void gf_cache_stats(const gf_cache *c, gf_cache_counters *out) {
  memset(out, 0, sizeof *out);
  if (!c)
    return;
  /* The counters are only read here; casting away const for the atomic
   * loads is safe (C11's atomic_load takes a non-const pointer). */
  gf_cache *m = (gf_cache *)c;
  out->hits = atomic_load_explicit(&m->hits, memory_order_relaxed);
  out->misses = atomic_load_explicit(&m->misses, memory_order_relaxed);
  out->inserted = atomic_load_explicit(&m->inserted, memory_order_relaxed);
  out->rejected = atomic_load_explicit(&m->rejected, memory_order_relaxed);
  out->present = atomic_load_explicit(&m->present, memory_order_relaxed);
  out->payload_bytes = atomic_load_explicit(&m->payload, memory_order_relaxed);
  out->bytes_used = atomic_load_explicit(&m->cursor, memory_order_relaxed);
  out->budget = c->budget;
  out->table_bytes = c->table ? c->n * sizeof(uint64_t) : 0;
  out->n = c->n;
  out->pinned_bytes =
      atomic_load_explicit(&m->pinned_bytes, memory_order_relaxed);
  out->pin_failures =
      atomic_load_explicit(&m->pin_failures, memory_order_relaxed);
}
