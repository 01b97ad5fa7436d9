/* A storage for tests of remote reading without a network: "slow://PATH"
 * serves the local folder PATH as a remote storage would (no descriptors,
 * GF_STORAGE_REMOTE, reads through an engine), each read taking at least
 * slow_storage_latency_us, with faults on request. Register it once with
 * slow_storage_register() before opening anything. */
#ifndef GF_TESTS_SLOW_STORAGE_H
#define GF_TESTS_SLOW_STORAGE_H

#include <stdatomic.h>
#include <stdint.h>

/* Every read (engine or synchronous), object open and stat sleeps this
 * long first: each is a round trip to an HTTP server (an open or a stat
 * is a HEAD). */
extern _Atomic uint32_t slow_storage_latency_us;
/* Reads each engine runs at once (its threads, read at its create; 0: 8,
 * at most 256): a server's connections. */
extern _Atomic uint32_t slow_storage_engine_threads;
/* When nonzero: the reads numbered N (1-based, counted over the whole
 * process since the last reset) fail with -EIO, and every one after it
 * too when fail_sticky is set. */
extern _Atomic uint64_t slow_storage_fail_nth;
extern _Atomic int slow_storage_fail_sticky;
/* Reads made (engine and synchronous), their bytes, and the most in
 * flight at once in the engines. */
extern _Atomic uint64_t slow_storage_reads, slow_storage_bytes;
/* Of which the engines' (the fetch stage's reads, the index pages read
 * together). */
extern _Atomic uint64_t slow_storage_engine_reads;
extern _Atomic uint32_t slow_storage_inflight_max;
/* Of the reads, those of an index (index.gfi), their bytes, and those of
 * them made outside an engine (one at a time, by the caller's thread). */
extern _Atomic uint64_t slow_storage_index_reads, slow_storage_index_bytes;
extern _Atomic uint64_t slow_storage_index_sync_reads;
/* Object opens and stats (HEAD requests). */
extern _Atomic uint64_t slow_storage_heads;

/* Registers the storage (test builds only). Returns 0. */
int slow_storage_register(void);
/* Zeroes the counters and the faults. */
void slow_storage_reset(void);

#endif
