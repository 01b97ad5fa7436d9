/* The disk cache tier, between the files of lib/io that make it up (its
 * public face is gf_storage_cache_wrap and gf_storage_cache_info_get in
 * io/storage.h):
 *
 *   storage_cached.c  the storage that wraps a remote one (its calls, the
 *                     synchronous read) and the entry points below
 *   dcache_engine.c    its engine: the reader's reads, served from entries
 *                     or passed to the inner storage's engine
 *   dcache_read.c      what both share: serve a read from the entries,
 *                     claim what is missing, store what came back
 *   dcache_index.c     which ranges an object's folder holds (in memory,
 *                     refreshed from a listing)
 *   dcache_dir.c       the folder: its lock and usage counter, temporary
 *                     files, renames, eviction, claims of other processes
 *   dcache_entry.c     one entry file: its header, writing it, reading and
 *                     checking a range of it
 *
 * Calls go down that list only. docs/REMOTE.md ("Disk cache tier") is the
 * user's account of the same design.
 *
 * Layout under cache_dir (GF_DCACHE_FOLDER, made 0700: the bytes of a
 * private bucket are not for the machine's other users):
 *
 *   state                    flock'd by every change; holds the usage counter
 *   HH/HHHHHHHHHHHHHHHH/     one folder an object version: a 64-bit hash of
 *                            (display location, version tag, size); HH is
 *                            its first byte (256 buckets)
 *     OOOOOOOOOOOOOOOO-LLLLLLLLLLLLLLLL            an entry: bytes [O, O+L)
 *     OOOOOOOOOOOOOOOO-LLLLLLLLLLLLLLLL.claim      a process is fetching it
 *     OOOOOOOOOOOOOOOO-LLLLLLLLLLLLLLLL.tmp.P.S.N  being written by pid P
 *                                                   (started at S)
 *
 * The range is in the name, not hashed: a listing of the object's folder
 * tells which ranges it holds, so a read covered by one or several entries
 * that other processes wrote is found without opening each file. */
#ifndef GF_IO_DCACHE_H
#define GF_IO_DCACHE_H

#include "io/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* The folder under cache_dir that the tier owns (its format version in the
 * name: a new format takes a new folder, never reads the old). */
#define GF_DCACHE_FOLDER "gpufeed-cache-v1"
/* Every entry's header takes this many bytes before the payload, so the
 * payload is page-aligned and an entry of L bytes takes exactly
 * gf_dcache_charge(L) bytes of blocks. */
#define GF_DCACHE_HEADER_BYTES 4096u
/* The payload's CRC32Cs are kept a segment: a read of part of an entry
 * (a sample of a block read earlier) reads and checks only the segments it
 * touches, at most twice this more than it wants. */
#define GF_DCACHE_SEGMENT (256u << 10)
/* Longer reads pass through uncached (their CRC table, 2 KiB, fits the
 * header; the fetch stage's reads are at most 64 MiB). */
#define GF_DCACHE_ENTRY_MAX (128ull << 20)
/* Longer display locations are not cached (the key fits the header). */
#define GF_DCACHE_DISPLAY_MAX 1024u
/* An entry read on a hit is touched (its mtime, the eviction's clock) at
 * most this often. */
#define GF_DCACHE_TOUCH_NS (60ull * 1000000000ull)
/* After an error writing (a full disk, an unwritable folder), no entry is
 * written for this long. */
#define GF_DCACHE_WRITE_OFF_NS (60ull * 1000000000ull)
/* A claim or temporary file whose owner cannot be read is stale after this
 * long (its owner died between creating it and writing its pid). */
#define GF_DCACHE_UNREADABLE_STALE_NS (10ull * 1000000000ull)
/* How often a read waiting on another's claim looks again. */
#define GF_DCACHE_WAIT_POLL_NS 2000000ull

/* What ties an entry to one version of one object. */
typedef struct gf_dcache_key {
  const char *display; /* the object's location for messages: no secret */
  const char *version; /* its version tag (never "": such objects are not
                          cached) */
  uint64_t size;
  uint64_t hash; /* gf_dcache_key_hash of the three */
} gf_dcache_key;

static inline uint64_t gf_dcache_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- dcache_entry.c: one entry file --------------------------------------
 *
 * An entry holds bytes [off, off + len) of one object version:
 *
 *   0    8  magic "gfcache1"
 *   8    4  format version (1)
 *   12   4  header bytes used, h (the header's CRC is its last 4)
 *   16   8  object size
 *   24   8  off
 *   32   8  len
 *   40   4  segment size (GF_DCACHE_SEGMENT)
 *   44   4  segments, ns = ceil(len / segment size)
 *   48   2  display length dl
 *   50   2  version tag length vl
 *   52   4  zero
 *   56      display [dl], version tag [vl], ns CRC32Cs of the segments
 *   h-4  4  CRC32C of bytes [0, h - 4)
 *   ...     zero to GF_DCACHE_HEADER_BYTES, then the payload (len bytes)
 *
 * little-endian. A reader checks all of it against the key and range it
 * wants, the file's size against GF_DCACHE_HEADER_BYTES + len, and the CRC
 * of every segment it reads. */

/* 4096 + len rounded up to 4096: the blocks an entry of len bytes takes;
 * what the usage counter and the limit count. */
uint64_t gf_dcache_charge(uint64_t len);
/* A 64-bit hash of the key's three parts (FNV-1a, mixed). */
uint64_t gf_dcache_key_hash(const char *display, const char *version,
                            uint64_t size);
/* Whether an object's entries can be kept at all: a version tag, a display
 * location of at most GF_DCACHE_DISPLAY_MAX bytes. */
bool gf_dcache_key_ok(const gf_dcache_key *k);
/* Fills hdr (GF_DCACHE_HEADER_BYTES) for payload buf of len bytes at off
 * (len at most GF_DCACHE_ENTRY_MAX, the key gf_dcache_key_ok). */
void gf_dcache_entry_header(const gf_dcache_key *k, uint64_t off,
                            const void *buf, uint64_t len, uint8_t *hdr);
/* Writes hdr and the payload to fd. Returns 0 or -errno. */
int gf_dcache_entry_write(int fd, const uint8_t *hdr, const void *buf,
                          uint64_t len);
/* Reads bytes [a, b) of the object from the entry open at fd, which should
 * hold [off, off + len) of key k, into dst, checking the header, the
 * file's size and the CRC of each segment read; *mtime_s gets the file's
 * mtime (seconds). nowait: only what the page cache holds (-EAGAIN when
 * it would wait for the disk). Returns 0, GF_ECORRUPT (why says what did
 * not match), -EAGAIN, or -errno from a read. */
int gf_dcache_entry_read(int fd, const gf_dcache_key *k, uint64_t off,
                         uint64_t len, uint64_t a, uint64_t b, void *dst,
                         bool nowait, int64_t *mtime_s, char *why,
                         size_t why_cap);

/* snprintf for paths: whether it fit. (A function of its own: the
 * compiler's truncation warnings cannot know that the folder's length is
 * bounded, GF_DCACHE_ROOT_MAX, so every path fits its buffer.) */
bool gf_dcache_fmt(char *buf, size_t cap, const char *fmt, ...) GF_PRINTF(3, 4);
/* The longest cache_dir taken (longer: the tier is off, said why); the
 * paths inside it then fit GF_DCACHE_PATH bytes. */
#define GF_DCACHE_ROOT_MAX 3500u
#define GF_DCACHE_PATH 4096u

/* The names in an object's folder. */
enum {
  GF_DCACHE_NAME_OTHER,
  GF_DCACHE_NAME_ENTRY,
  GF_DCACHE_NAME_CLAIM,
  GF_DCACHE_NAME_TMP
};
/* The path of entry [off, off + len) of folder obj into buf (suffix: "",
 * ".claim", or a temporary file's ".tmp.P.S.N"). */
void gf_dcache_entry_path(const char *obj, uint64_t off, uint64_t len,
                          const char *suffix, char *buf, size_t cap);
/* What a name in an object's folder is, its range, and for a temporary
 * file its owner's pid and start time. */
int gf_dcache_name_parse(const char *name, uint64_t *off, uint64_t *len,
                         int *pid, uint64_t *start);

/* ---- dcache_dir.c: the folder --------------------------------------------
 *
 * One lock (flock on `state`, with a mutex for this process's threads)
 * serialises every change of what the folder holds: a temporary file
 * created with its bytes reserved in the usage counter, renamed into an
 * entry, or removed; an entry removed (evicted, or found damaged). So the
 * counter is exact while nothing crashes, and the eviction's walk, under
 * the same lock, sets it from what it finds (a crash's leftovers
 * included). Reading an entry takes no lock. Claims are created without
 * it (O_EXCL decides), and removed as stale only under it. */

typedef struct gf_dcache_dir gf_dcache_dir;

/* Opens (making them where missing) cache_dir and its GF_DCACHE_FOLDER,
 * with limit bytes. Returns 0, or a negative code with why filled. */
int gf_dcache_dir_open(const char *cache_dir, uint64_t limit,
                       gf_dcache_dir **out, char *why, size_t why_cap);
/* NULL accepted. */
void gf_dcache_dir_close(gf_dcache_dir *d);
/* cache_dir/GF_DCACHE_FOLDER. */
const char *gf_dcache_dir_root(const gf_dcache_dir *d);
uint64_t gf_dcache_dir_limit(const gf_dcache_dir *d);
/* The folder of an object version's entries (hash: gf_dcache_key_hash). */
void gf_dcache_dir_object(const gf_dcache_dir *d, uint64_t hash, char *buf,
                          size_t cap);
/* Entries evicted by this process, and their bytes (charges). */
void gf_dcache_dir_evictions(const gf_dcache_dir *d, uint64_t *count,
                             uint64_t *bytes);

/* Reserves room for an entry of len bytes at off in folder obj (evicting
 * the least recently used entries, down to 7/8 of the limit, when it does
 * not fit) and creates its temporary file: *fd open for writing, tmp its
 * path (cap at least PATH_MAX). Returns 0; 1 when the entry cannot be
 * kept now (larger than half the limit, or no room even after evicting:
 * others' writes in flight); or -errno (the folder cannot be written). */
int gf_dcache_dir_begin(gf_dcache_dir *d, const char *obj, uint64_t off,
                        uint64_t len, int *fd, char *tmp, size_t cap);
/* Renames tmp into the entry [off, off + len) of obj. Returns 0 or -errno
 * (tmp then removed and its reservation returned). */
int gf_dcache_dir_commit(gf_dcache_dir *d, const char *obj, uint64_t off,
                         uint64_t len, const char *tmp);
/* Removes tmp and returns its reservation. */
void gf_dcache_dir_abort(gf_dcache_dir *d, const char *tmp, uint64_t len);
/* Removes entry [off, off + len) of obj (found damaged). Returns whether
 * this call removed it. */
bool gf_dcache_dir_remove(gf_dcache_dir *d, const char *obj, uint64_t off,
                          uint64_t len);

/* Claims. */
enum {
  GF_CLAIM_MINE = 1, /* created: this caller fetches the range */
  GF_CLAIM_HELD = 0, /* a live process holds it: wait for its entry */
};
/* Tries to claim [off, off + len) of obj: GF_CLAIM_MINE, GF_CLAIM_HELD
 * (a stale claim of a dead process is removed and the claim tried again),
 * or -errno (the folder cannot be written). */
int gf_dcache_dir_claim(gf_dcache_dir *d, const char *obj, uint64_t off,
                        uint64_t len);
/* Whether a claim on [off, off + len) of obj is held by a live process
 * now (a stale one is removed). */
bool gf_dcache_dir_claim_held(gf_dcache_dir *d, const char *obj, uint64_t off,
                              uint64_t len);
/* Removes this caller's claim. */
void gf_dcache_dir_unclaim(gf_dcache_dir *d, const char *obj, uint64_t off,
                           uint64_t len);

/* ---- dcache_index.c: what an object's folder holds -----------------------
 *
 * Kept in memory for each object version a storage opened, from its own
 * writes and a listing of the folder (other processes' writes): refreshed
 * when a read is not covered, at most every GF_DCACHE_RELIST_NS and only
 * when the folder changed. A range it lists may be gone (evicted by
 * another process): opening it says so, and it is dropped. */

#define GF_DCACHE_RELIST_NS 50000000ull
/* The most entries a read is served from. */
#define GF_DCACHE_PIECES 64

typedef struct gf_dcache_range {
  uint64_t off, len;
} gf_dcache_range;

typedef struct gf_dcache_index {
  char dir[4096]; /* the object's folder */
  pthread_mutex_t mu;
  gf_dcache_range *r; /* sorted by off, then len; no duplicates */
  size_t n, cap;
  uint64_t max_len; /* no range is longer (bounds the lookups' scans) */
  bool listed;
  struct timespec listed_mtime; /* the folder's mtime when last listed */
  uint64_t listed_ns;           /* when (monotonic) */
  bool racy; /* listed within the mtime's granularity: list again */
} gf_dcache_index;

/* Under mu, each. */
void gf_dcache_index_add(gf_dcache_index *x, uint64_t off, uint64_t len);
void gf_dcache_index_drop(gf_dcache_index *x, uint64_t off, uint64_t len);
/* Entries covering a prefix of [a, b) one after the other: up to max of
 * them into out (each's own range), *end where the prefix stops (a when
 * none covers a). And the same from b backwards: *start where the
 * covered suffix starts. Return the count. */
size_t gf_dcache_index_prefix(const gf_dcache_index *x, uint64_t a, uint64_t b,
                              gf_dcache_range *out, size_t max, uint64_t *end);
size_t gf_dcache_index_suffix(const gf_dcache_index *x, uint64_t a, uint64_t b,
                              gf_dcache_range *out, size_t max,
                              uint64_t *start);
/* Looks at the folder: whether entry [off, off + len) is there (added when
 * it is), and with `listing` the listing, when the folder changed since
 * the last and the last is older than GF_DCACHE_RELIST_NS. Returns whether
 * it learned of a range. */
bool gf_dcache_index_refresh(gf_dcache_index *x, uint64_t off, uint64_t len,
                             bool listing);
void gf_dcache_index_free(gf_dcache_index *x);

/* ---- dcache_read.c: serving, claiming, storing ----------------------------
 */

/* The tier's counters (gf_storage_cache_info). */
typedef struct gf_dcache_counters {
  _Atomic uint64_t hits, misses, hit_bytes, fetched_bytes, writes,
      written_bytes, claim_waits, claim_timeouts, corrupt, write_errors,
      uncached;
} gf_dcache_counters;

/* What is known of one object version (shared by its opens). */
typedef struct gf_dcache_obj {
  gf_dcache_key key; /* display and version owned */
  gf_dcache_index index;
  struct gf_dcache_obj *next;
} gf_dcache_obj;

/* The wrapping storage. */
typedef struct gf_dcache_store {
  gf_storage base;
  gf_storage_ops ops; /* the inner's name, caps and engine-ness; our calls */
  gf_storage *inner;
  gf_dcache_dir *dir;
  uint64_t claim_wait_ns; /* how long a read waits on another's claim */
  _Atomic uint64_t write_off_until; /* monotonic ns; 0: writing */
  _Atomic int write_off_errno;
  pthread_mutex_t mu; /* objs */
  gf_dcache_obj *objs;
  gf_dcache_counters c;
} gf_dcache_store;

/* An object opened through it. */
typedef struct gf_cached_object {
  gf_object base;
  gf_object *inner;
  gf_dcache_obj *co; /* NULL: not cached (no version tag...) */
} gf_cached_object;

/* Serves what the entries hold of [off, off + len) of co into dst (the
 * read's first byte at dst[0]): *gap_off, *gap_len is what they did not
 * (len 0: the whole read was served). Counts the bytes served; the caller
 * counts the read (a hit, or a miss when it fetches the gap). */
void gf_dcache_serve(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                     uint64_t len, uint8_t *dst, uint64_t *gap_off,
                     uint64_t *gap_len);
/* Serves all of [off, off + len) of co into dst from entries the page
 * cache holds, without waiting for the disk: true when it did (a hit,
 * counted); false when any of it is not held or not cached (nothing
 * counted: the read goes the usual way). For the engine's caller's own
 * thread, which must not wait on a disk. */
bool gf_dcache_serve_now(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                         uint64_t len, uint8_t *dst);
/* Claims the gap (gf_dcache_dir_claim), first looking once more whether an
 * entry covers it (*covered then: serve again). GF_CLAIM_MINE,
 * GF_CLAIM_HELD, or a negative code: fetch it without a claim. */
int gf_dcache_claim(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                    uint64_t len, bool *covered);
/* A waiter's look: true when it should stop waiting (the entry is there,
 * or the claim is gone); *expired when the deadline passed first. */
bool gf_dcache_wait_over(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                         uint64_t len, uint64_t deadline, bool *expired);
/* Stores buf (bytes [off, off + len) of co, fetched) as an entry, unless
 * writing is off; then releases the claim when `claimed`. */
void gf_dcache_store_entry(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                           uint64_t len, const void *buf, bool claimed);
void gf_dcache_unclaim(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                       uint64_t len);
/* Whether a read of [off, off + len) of o goes through the tier (an object
 * with a key, inside its size, not too long). */
bool gf_dcache_cacheable(const gf_cached_object *o, uint64_t off, uint64_t len);

/* ---- dcache_engine.c ------------------------------------------------------
 */

/* The engine of a cached storage whose inner storage has one. */
extern const gf_io_engine_ops gf_dcache_engine;

#endif /* GF_IO_DCACHE_H */
