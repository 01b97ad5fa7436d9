/* The device pool's allocator, without CUDA: best-fit sub-allocation with
 * splitting and coalescing over one or more address ranges ("regions").
 * lib/gpu/devpool_cuda.c puts it over cudaMalloc'd memory; the tests put it
 * over plain numbers.
 *
 * Addresses. A region is handed over as [base, base + size) in whatever
 * address space the caller uses (device pointers cast to uint64_t on the
 * GPU, any numbers in tests); regions must not overlap. The pool trims each
 * region inward to its alignment. Every address and size it returns is a
 * multiple of the alignment; a block never spans two regions, even when two
 * regions happen to be adjacent.
 *
 * Policy. Best fit: the smallest free block that holds the request (rounded
 * up to the alignment); among equal sizes, the lowest address. The request
 * takes the low end of that block and the rest stays free. A freed block
 * merges at once with free neighbours of its region, so freeing everything
 * leaves exactly one free block a region.
 *
 * Cost. Free blocks sit in a balanced tree keyed (size, address), live
 * blocks in one keyed by address, and each region's blocks in an
 * address-ordered list: alloc and free are O(log n) in the number of
 * blocks. Nodes come from an array that doubles when it runs out and is
 * reused after that, so a steady state allocates nothing.
 *
 * Threads: none of this is thread-safe; one pool, one thread at a time (the
 * public device pool holds a mutex around it). */
#ifndef GF_GPU_POOL_H
#define GF_GPU_POOL_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_POOL_DEFAULT_ALIGNMENT 256u
/* The growth chunk a device pool uses when its config leaves it 0. */
#define GF_POOL_DEFAULT_CHUNK (64ull << 20)

typedef struct gf_pool gf_pool;

/* Asked by gf_pool_alloc for a new region of exactly `bytes` (a multiple of
 * the alignment). Returns 0 with the region's base in *base, or a negative
 * code with the reason recorded by gf_fail(). */
typedef int (*gf_pool_grow_fn)(void *ctx, uint64_t bytes, uint64_t *base);
/* Called by gf_pool_destroy once for every region, with the base and size
 * that gf_pool_add_region (or the grow callback) was given. */
typedef void (*gf_pool_release_fn)(void *ctx, uint64_t base, uint64_t bytes);

typedef struct gf_pool_config {
  uint64_t alignment;    /* a power of two >= 1; 0: 256 */
  uint64_t growth_chunk; /* grow by multiples of this (rounded up to the
                            alignment); 0: never grow */
  uint64_t limit;        /* cap on the bytes of all regions; 0: none */
  gf_pool_grow_fn grow;  /* needed when growth_chunk is set */
  gf_pool_release_fn release; /* may be NULL */
  void *ctx;             /* passed to both callbacks */
  const char *name;      /* starts error messages; NULL: "pool" */
} gf_pool_config;

/* Creates an empty pool (no region). *out is freed with gf_pool_destroy.
 * Returns 0, -EINVAL (alignment not a power of two, growth without a grow
 * callback, limit below one chunk) or -ENOMEM. */
int gf_pool_create(const gf_pool_config *cfg, gf_pool **out);
/* Calls the release callback for every region, then frees the pool. Blocks
 * still live are dropped with it. NULL accepted. */
void gf_pool_destroy(gf_pool *p);

/* Adds [base, base + bytes) as a new region, trimmed inward to the
 * alignment. Returns 0, -EINVAL (empty after trimming, overflows, overlaps a
 * region, or would pass the limit) or -ENOMEM. */
int gf_pool_add_region(gf_pool *p, uint64_t base, uint64_t bytes);

/* gf_pool_alloc flags. */
#define GF_POOL_NO_GROW 1u /* fail rather than call the grow callback */

/* Allocates `bytes` (> 0) rounded up to the alignment; writes the block's
 * address to *addr. When nothing fits and growth is on (and NO_GROW is not
 * given), asks the grow callback for a region of round_up(bytes,
 * growth_chunk), or of what is left below the limit when that is smaller
 * but still enough. Returns 0; GF_EDEVOOM with the request, the free bytes,
 * the largest free block, the reserved bytes and the limit in the message,
 * blaming fragmentation (enough free in total, no block fits) or the limit
 * (not enough free in total, and no chunk can be added); the grow
 * callback's error with context; -EINVAL (bytes 0); -ENOMEM. */
int gf_pool_alloc(gf_pool *p, uint64_t bytes, unsigned flags, uint64_t *addr);

/* Whether gf_pool_alloc(bytes) would succeed without growing: a free block
 * holds bytes rounded up to the alignment. O(log n); records no error. */
bool gf_pool_fits(const gf_pool *p, uint64_t bytes);

/* Frees the block that starts at addr. Returns 0, or -EINVAL when addr is
 * not the start of a live block: outside every region, inside free memory
 * (a double free), or inside a live block; the message says which. */
int gf_pool_free(gf_pool *p, uint64_t addr);

/* Size and tag of the live block that starts at addr. Returns 0 or -EINVAL
 * (with the same diagnosis as gf_pool_free). size or tag may be NULL. */
int gf_pool_lookup(const gf_pool *p, uint64_t addr, uint64_t *size,
                   uint32_t *tag);
/* Sets the caller's tag on a live block (0 after alloc). Returns 0 or
 * -EINVAL like gf_pool_lookup. */
int gf_pool_set_tag(gf_pool *p, uint64_t addr, uint32_t tag);

typedef struct gf_pool_stats {
  uint64_t in_use;       /* bytes of live blocks (after alignment) */
  uint64_t peak_in_use;  /* most in_use since create or reset_peak */
  uint64_t reserved;     /* bytes of all regions as handed over */
  uint64_t usable;       /* the same after trimming to the alignment */
  uint64_t limit;        /* the cap on reserved (0: none) */
  uint64_t free_bytes;   /* usable - in_use */
  uint64_t largest_free; /* the largest free block */
  /* 1 - largest_free / free_bytes, or 0 when nothing is free: the share of
   * free memory that a single request cannot use. 0 when all free memory
   * is one block; near 1 when it is scattered in crumbs. */
  double fragmentation;
  uint64_t live;         /* live blocks */
  uint64_t free_blocks;
  uint64_t regions;
  uint64_t total_allocs; /* successful allocations since create */
  uint64_t total_frees;
  uint64_t alignment;
} gf_pool_stats;

/* Fills *st. O(log n). */
void gf_pool_get_stats(const gf_pool *p, gf_pool_stats *st);
/* Makes the peak equal to the bytes in use now. */
void gf_pool_reset_peak(gf_pool *p);

/* Region i (in the order added): the base and size handed over, and the
 * usable range after trimming. Returns 0 or -ERANGE (no region i). Any
 * output pointer may be NULL. */
int gf_pool_region(const gf_pool *p, size_t i, uint64_t *base, uint64_t *bytes,
                   uint64_t *usable_base, uint64_t *usable_bytes);

/* Checks every invariant (regions tiled exactly by their blocks, no two
 * adjacent free blocks, alignment, both trees ordered and balanced and
 * holding exactly the free / live blocks, counters agreeing). O(n); for
 * tests. Returns 0, GF_EINTERNAL naming the first violation, or -EINVAL
 * (p NULL). */
int gf_pool_check(const gf_pool *p);

/* ------------------------------------------------------------------------ */
/* The public device pool's configuration, checked without a device        */
/* ------------------------------------------------------------------------ */

/* gf_device_pool_config after validation, with defaults applied. */
typedef struct gf_devpool_params {
  int32_t device;
  uint64_t bytes;        /* the reservation made at create (0: none yet) */
  double fraction;       /* of free memory, when bytes was 0 */
  uint64_t alignment;
  bool growth;
  uint64_t growth_chunk; /* growth only; aligned */
  uint64_t limit;        /* 0 until settled when it depends on bytes */
} gf_devpool_params;

/* Validates cfg (NULL is refused: a pool needs a size) and fills *out.
 * Shared by the CUDA and no-CUDA builds so both reject the same configs.
 * Returns 0 or -EINVAL naming the field. */
int gf_devpool_params_check(const gf_device_pool_config *cfg,
                            gf_devpool_params *out);
/* Completes *pp once the device's free memory is known: turns the fraction
 * into bytes (rounded down to the alignment, capped by the limit) and
 * defaults the limit to bytes. Returns 0 or -EINVAL (the fraction gives no
 * usable bytes). */
int gf_devpool_params_settle(gf_devpool_params *pp, uint64_t device_free);

#endif /* GF_GPU_POOL_H */
