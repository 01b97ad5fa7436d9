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
  uint64_t charge;  /* their blocks and the temporary files' (what each
                       will take: gf_dcache_charge) */
  uint64_t tmps;    /* temporary files */
  uint64_t claims;  /* claim files */
} cache_census;
/* Taken under the tier's lock (flock on its state file). */
void cache_census_take(const char *cache_dir, cache_census *out);

/* Calls fn on the path of every entry file (ctx passed through); stops at
 * a nonzero return. Returns the count visited. */
uint64_t cache_each_entry(const char *cache_dir,
                          int (*fn)(void *ctx, const char *path), void *ctx);

/* The path of the entry file [off, off + len) of object o (opened through
 * the tier) under cache_dir. */
void cache_entry_file(const char *cache_dir, const gf_object *o, uint64_t off,
                      uint64_t len, char *buf, size_t cap);
/* The folder of object o's entries under cache_dir. */
void cache_object_dir(const char *cache_dir, const gf_object *o, char *buf,
                      size_t cap);

/* One read of [off, off + len) of o through a reader over st (its engine):
 * the read's result (bytes, or a negative code). */
int64_t cache_read_engine(gf_storage *st, const gf_object *o, uint64_t off,
                          uint64_t len, void *buf);

/* The pid of a process that has exited and been reaped. */
int cache_dead_pid(void);

/* rm -rf path (a test's own folder). */
void cache_rmrf(const char *path);

/* The storage of a loader's source (its remote storage, maybe in the tier). */
gf_storage *cache_loader_storage(gf_loader *l);

#endif
