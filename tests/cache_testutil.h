/* What the disk cache tier's tests share: a look at the tier's folder from
 * outside (its entries, their blocks, leftovers), and a loader config that
 * reads a dataset through slow:// with the tier on. */
#ifndef GF_TESTS_CACHE_TESTUTIL_H
#define GF_TESTS_CACHE_TESTUTIL_H

#include "io/dcache.h"
#include "testutil.h"

#include <stdint.h>

/* What the folder cache_dir/gpufeed-cache-v1 holds now. */
typedef struct cache_census {
  uint64_t entries; /* entry files */
  uint64_t charge;  /* their blocks (gf_dcache_charge of each) */
  uint64_t tmps;    /* temporary files */
  uint64_t claims;  /* claim files */
} cache_census;
void cache_census_take(const char *cache_dir, cache_census *out);

/* Calls fn on the path of every entry file (ctx passed through); stops at
 * a nonzero return. Returns the count visited. */
uint64_t cache_each_entry(const char *cache_dir,
                          int (*fn)(void *ctx, const char *path), void *ctx);

/* rm -rf path (a test's own folder). */
void cache_rmrf(const char *path);

/* The storage of a loader's source (its remote storage, maybe in the tier). */
gf_storage *cache_loader_storage(gf_loader *l);

#endif
