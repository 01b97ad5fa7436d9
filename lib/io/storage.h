/* Storage: where a source's bytes live, behind one table of operations
 * (SQLite's sqlite3_vfs and sqlite3_io_methods, FFmpeg's URLProtocol).
 * The local file system is one storage (storage_local.c); HTTP(S) and S3
 * are others. The format layer and the loader open, stat, list and read
 * through this interface and never ask which storage they hold: what
 * differs is told by capabilities (GF_STORAGE_*).
 *
 * A storage is opened at a location (a path, or a URL whose scheme one
 * storage claims) that is its root; objects are named relative to it
 * ("index.gfi", "cat/0001.jpg"; "" is the root itself). Every name and
 * location that reaches a message goes through the storage's display
 * form, which never holds a secret (a URL's user:password, its query).
 *
 * Adding a storage: one file filling one const gf_storage_ops, and one
 * line in storage.c's table.
 *
 * Threads: a storage and its objects may be used from any number of
 * threads at once (each call is independent); an object must not be
 * closed while another thread uses it. */
#ifndef GF_IO_STORAGE_H
#define GF_IO_STORAGE_H

#include "common/common.h"

/* What a storage can do. */
enum {
  /* Objects are local files with descriptors (gf_object.fd): the reader
   * reads them with io_uring or pread, indexes are mapped, O_DIRECT is
   * possible (GF_OBJ_DIRECT). */
  GF_STORAGE_FD = 1u << 0,
  /* Every read is a round trip to a server: the loader reads ahead of
   * decode, many reads in flight, and whole blocks in one request. */
  GF_STORAGE_REMOTE = 1u << 1,
  /* Folders can be listed (gf_storage_list). */
  GF_STORAGE_LIST = 1u << 2,
  /* Entries can be symbolic links (GF_ENTRY_LINK, gf_storage_resolve). */
  GF_STORAGE_LINKS = 1u << 3,
};

/* The longest version tag kept (an ETag, or a local file's identity). */
#define GF_VERSION_TAG_MAX 128

typedef enum gf_entry_type {
  GF_ENTRY_NONE = 0, /* unknown */
  GF_ENTRY_FILE,     /* a regular file (an object) */
  GF_ENTRY_DIR,
  GF_ENTRY_LINK, /* a symbolic link (GF_STORAGE_LINKS only) */
  GF_ENTRY_OTHER /* a device, FIFO, socket... */
} gf_entry_type;

typedef struct gf_stat {
  gf_entry_type type;
  uint64_t size;                    /* GF_ENTRY_FILE: bytes */
  char version[GF_VERSION_TAG_MAX]; /* the store's version tag of the
                                       object ("" when it has none) */
} gf_stat;

/* One entry of a listing. */
typedef struct gf_dirent {
  const char *name;   /* the entry's own name (no '/'), valid during the call */
  gf_entry_type type; /* a link is GF_ENTRY_LINK, not followed */
  uint64_t size;      /* GF_ENTRY_FILE, when the listing tells it; else
                         UINT64_MAX */
  const char *version; /* its version tag when the listing tells it (an
                          object store's ETag), else NULL */
} gf_dirent;
/* Called once an entry, in the storage's order (not sorted). A nonzero
 * return stops the listing and is what gf_storage_list returns. */
typedef int (*gf_list_fn)(void *ctx, const gf_dirent *e);

/* Takes the next len bytes of a streamed range (gf_object_stream), in
 * order; len > 0 and data valid during the call only. Returns 0 to go on,
 * 1 to stop there (the bytes given so far, these included, are taken; the
 * stream returns their count), or a negative code (with its error
 * recorded: gf_fail) that ends the stream with it. Called on the thread
 * that called gf_object_stream. */
typedef int (*gf_stream_sink)(void *ctx, const uint8_t *data, size_t len);
/* The most gf_object_stream reads at a time from a storage that cannot
 * stream (no obj_stream): the memory a stream holds there. */
#define GF_STREAM_CHUNK (1u << 20)

typedef struct gf_storage gf_storage;
typedef struct gf_object gf_object;

/* What a storage did since it was opened (gf_storage_counters): the
 * requests to its server and, where a disk cache tier stands in front of
 * it, what that served. Zero where it does not apply. */
typedef struct gf_storage_counters {
  uint64_t requests, retries, failures, bytes;
  uint64_t cache_hits, cache_misses, cache_bytes_read, cache_bytes_written;
  uint64_t cache_evictions;
} gf_storage_counters;
typedef struct gf_io_engine_ops gf_io_engine_ops; /* io/backend.h */

/* gf_object_open flags. */
#define GF_OBJ_DIRECT 1u /* O_DIRECT (GF_STORAGE_FD storages only) */

typedef struct gf_storage_ops {
  const char *name; /* "file", "http", ... */
  uint32_t caps;    /* GF_STORAGE_* */
  /* Whether this storage serves `location` (its scheme). */
  bool (*claims)(const char *location);
  /* remote: resolved (gf_remote_resolve), never NULL; the storage copies
   * what it keeps. */
  int (*open)(const char *location, const gf_remote_config *remote,
              gf_storage **out);
  void (*close)(gf_storage *s);
  /* name's entry, links followed when `follow`. -ENOENT when none. */
  int (*stat)(gf_storage *s, const char *name, bool follow, gf_stat *out);
  /* The entries of folder `dir` (GF_STORAGE_LIST); a `dir` other than the
   * root that is a link is not followed (-ELOOP). */
  int (*list)(gf_storage *s, const char *dir, gf_list_fn fn, void *ctx);
  /* GF_STORAGE_LINKS: what name leads to with every link followed (*out,
   * -ENOENT for a dangling link), whether that lies inside the root, and
   * where it is (target, for messages). */
  int (*resolve)(gf_storage *s, const char *name, gf_stat *out, bool *inside,
                 char *target, size_t cap);
  int (*obj_open)(gf_storage *s, const char *name, uint32_t flags,
                  gf_object **out);
  /* Optional: opens name whose size and version a listing told (known),
   * without asking the server again (gf_object_open_known). */
  int (*obj_open_known)(gf_storage *s, const char *name, const gf_stat *known,
                        uint32_t flags, gf_object **out);
  /* Optional: a whole small object of at most max bytes in one request
   * (gf_object_slurp), where opening it would cost one more (a HEAD): 0
   * with *buf (malloc'd, NUL-terminated) and *len; 1 when it holds more
   * than the storage reads so (the caller opens and reads it); or a
   * negative code with context (-ENOENT: there is none). */
  int (*slurp)(gf_storage *s, const char *name, uint64_t max, char **buf,
               uint64_t *len);
  /* Optional: the caller is done listing (gf_storage_list_done). */
  void (*list_done)(gf_storage *s);
  void (*obj_close)(gf_object *o);
  /* Up to len bytes at off into buf: the count read (fewer than len only
   * where the object ends) or a negative code, with context. */
  int64_t (*obj_read)(gf_object *o, void *buf, uint64_t off, uint64_t len);
  /* Optional: bytes [off, off + len) (len > 0, inside the object) handed
   * to sink as they come, in one request (gf_object_stream). NULL:
   * gf_object_stream reads them by obj_read, GF_STREAM_CHUNK at a time. */
  int64_t (*obj_stream)(gf_object *o, uint64_t off, uint64_t len,
                        gf_stream_sink sink, void *ctx);
  /* Asynchronous reads for the reader (io.h): NULL for GF_STORAGE_FD
   * storages, whose objects the reader reads by descriptor. */
  const gf_io_engine_ops *engine;
  /* Its counters so far (NULL: none). Any thread. */
  void (*counters)(gf_storage *s, gf_storage_counters *out);
  /* A short description for reports: the scheme and server, and a warning
   * such as "TLS NOT VERIFIED" (NULL: the name). Never a secret. */
  void (*describe)(gf_storage *s, char *buf, size_t cap);
  /* The display form a storage opened at `location` with `remote` would
   * have (gf_location_display), into buf; NULL: gf_location_redact's. */
  void (*display)(const char *location, const gf_remote_config *remote,
                  char *buf, size_t cap);
} gf_storage_ops;

/* The part every storage shares; an implementation's own state follows it
 * (a storage embeds it as its first member). */
struct gf_storage {
  const gf_storage_ops *ops;
  char *display; /* the root's location for messages, without secrets;
                    it starts with GF_TLS_UNVERIFIED_MARK when insecure */
  bool insecure; /* TLS certificates are not verified
                    (gf_remote_config.tls_no_verify on an https root) */
};

/* What starts every display form of a storage whose TLS certificates are
 * not verified, so that every message and report naming one of its
 * locations says so. */
#define GF_TLS_UNVERIFIED_MARK "(TLS unverified) "

/* An open object; implementations embed it as their first member. */
struct gf_object {
  gf_storage *st;
  int fd;        /* GF_STORAGE_FD: the open file, owned by the object;
                    else -1 */
  uint64_t size; /* at open */
  char version[GF_VERSION_TAG_MAX]; /* at open ("" when the store has
                                       none) */
  char *display;     /* its location for messages, without secrets */
  bool owns_storage; /* gf_object_open_path's: closing it closes st */
};

/* Opens the storage that serves `location` (a folder path, or a URL a
 * registered storage claims) with `location` as its root; remote (NULL:
 * the defaults) says how a server is read. Returns 0, or -EINVAL (empty
 * location, a scheme no storage serves: named; a bad remote field: named),
 * -ENOMEM, or the storage's error, with context. The caller closes it. */
int gf_storage_open(const char *location, const gf_remote_config *remote,
                    gf_storage **out);
/* *in (NULL: defaults) checked (struct_size, reserved zero, ranges) and
 * its zero fields given their defaults into *out. Returns 0 or -EINVAL
 * naming the field. */
int gf_remote_resolve(const gf_remote_config *in, gf_remote_config *out);
/* NULL accepted. Objects must be closed first. */
void gf_storage_close(gf_storage *s);

static inline uint32_t gf_storage_caps(const gf_storage *s) {
  return s->ops->caps;
}
/* The root's location for messages (no secret in it). */
static inline const char *gf_storage_display(const gf_storage *s) {
  return s->display;
}
/* Whether the storage reads over TLS without verifying the server's
 * certificate and name (its display form then says so too). */
static inline bool gf_storage_insecure(const gf_storage *s) {
  return s->insecure;
}
/* root/name's display form into buf (cut to fit). Returns buf. */
char *gf_storage_name_display(const gf_storage *s, const char *name, char *buf,
                              size_t cap);

int gf_storage_stat(gf_storage *s, const char *name, bool follow, gf_stat *out);
/* The storage's counters (zeros where it keeps none). Any thread. */
void gf_storage_counters_get(gf_storage *s, gf_storage_counters *out);
/* Its description for reports (gf_storage_ops.describe). */
void gf_storage_describe(gf_storage *s, char *buf, size_t cap);

/* -ENOTSUP with context where the storage cannot list. An object store
 * (no folders of its own: names with '/') lists its whole root once, at
 * the first call, and answers this call and later ones, and gf_storage_stat,
 * from that listing until gf_storage_list_done: a walk of the folders costs
 * the listing's pages, not a request a folder. */
int gf_storage_list(gf_storage *s, const char *dir, gf_list_fn fn, void *ctx);
/* Drops what listing kept (the listing of an object store). */
void gf_storage_list_done(gf_storage *s);
/* -ENOTSUP with context where the storage has no links. target gets the
 * location name leads to (cap bytes, for messages). */
int gf_storage_resolve(gf_storage *s, const char *name, gf_stat *out,
                       bool *inside, char *target, size_t cap);

/* Opens object `name` (a regular file, or what the store serves as one):
 * its size and version tag are taken at open. Returns 0, -ENOENT,
 * -EISDIR, -EINVAL (not a regular file), -EACCES ... with the object
 * named, or the store's error. The caller closes it. */
int gf_object_open(gf_storage *s, const char *name, uint32_t flags,
                   gf_object **out);
/* As gf_object_open, for an object whose size and version tag a listing
 * told (known->size, known->version: gf_dirent's): a storage that would ask
 * its server for them (HEAD) takes them instead; reads then carry the
 * version's condition as after an open. Others open as usual. */
int gf_object_open_known(gf_storage *s, const char *name, const gf_stat *known,
                         uint32_t flags, gf_object **out);
/* Opens the object at `location` (a path or URL: the storage serving the
 * folder that holds it, and the object in it), which then owns that
 * storage: closing the object closes it. For single files given by path
 * (a labels file, a benchmark's file). Returns what gf_storage_open and
 * gf_object_open return. */
int gf_object_open_path(const char *location, uint32_t flags, gf_object **out);
/* NULL accepted. */
void gf_object_close(gf_object *o);
/* Up to len bytes at off: the count (fewer only at the object's end) or a
 * negative code with context. */
static inline int64_t gf_object_read_upto(gf_object *o, void *buf, uint64_t off,
                                          uint64_t len) {
  return o->st->ops->obj_read(o, buf, off, len);
}
/* Exactly len bytes at off: 0, GF_ETRUNCATED (the object ends first) or
 * the read's error, with the object named in the context. */
int gf_object_read(gf_object *o, void *buf, uint64_t off, uint64_t len);
/* Reads bytes [off, off + len) of o front to back, handing them to sink as
 * they come (a tar shard parsed as it arrives, in bounded memory): where
 * the storage can, in one request (HTTP and S3: one GET whose body goes to
 * sink as it arrives; a try that breaks is retried from the first byte not
 * yet handed, with the object's version condition, so sink never sees a
 * byte twice nor a byte of another version), else in reads of
 * GF_STREAM_CHUNK bytes (local files, and a remote storage behind the disk
 * cache tier, whose reads the tier serves). len is cut at the object's end
 * (o->size). Returns the bytes handed to sink (len, or fewer when sink
 * stopped), or a negative code with context: the read's error (naming the
 * object, the range and the cause, as reads' errors do; GF_ETRUNCATED
 * where a local file ends before its size at open) or sink's own (its
 * context kept). A sink that blocks long holds the connection idle: the
 * stall rule (gf_remote_config.stall_ms) can take that for a stalled
 * server, and a server closes an idle connection after its own timeout;
 * either costs a try (made again from where the sink is). A sink bounds
 * how long it blocks and returns 1 instead, and the caller streams again
 * from where it stopped. Any thread, as reads. */
int64_t gf_object_stream(gf_object *o, uint64_t off, uint64_t len,
                         gf_stream_sink sink, void *ctx);

/* Reads a whole object of at most max bytes into a malloc'd buffer
 * (*buf owned by the caller, NUL-terminated after *len bytes). Returns 0,
 * GF_ELIMIT (larger than max), or the open's or read's error. */
int gf_object_slurp(gf_storage *s, const char *name, uint64_t max, char **buf,
                    uint64_t *len);

/* Splits `path` into the location of the folder holding it and its last
 * component: "a/b/c.txt" gives "a/b" and "c.txt", "c.txt" gives "." and
 * "c.txt", a URL "http://h/x/y" gives "http://h/x" and "y". Both are
 * malloc'd (the caller frees them). Returns 0, -EINVAL (nothing after the
 * last '/') or -ENOMEM. */
int gf_location_split(const char *path, char **dir, char **base);

/* ---- the disk cache tier (io/dcache.h; docs/REMOTE.md) ---------------- */

/* Wraps *st, a GF_STORAGE_REMOTE storage, in the disk cache tier when
 * remote->cache_dir is set (gf_storage_open does it): the wrapper has the
 * same name, caps and display and owns the inner storage; reads whose
 * bytes its entries hold are served from them, the others go to the inner
 * storage (its obj_read, or its engine on the reader's slots) and what
 * comes back is kept. *st is left as it is when cache_dir is NULL, the
 * storage is not remote, or the folder cannot be made or written (logged
 * once a process, with why: reads then go to the server alone). Returns 0,
 * or -ENOMEM (*st unchanged, still the caller's). */
int gf_storage_cache_wrap(gf_storage **st, const gf_remote_config *remote);

/* What the tier did since the storage was opened: for the loader's stats,
 * `gpufeed bench --json` and the trace. */
typedef struct gf_storage_cache_info {
  char dir[1024];         /* cache_dir/gpufeed-cache-v1 */
  uint64_t limit;         /* bytes (the usage counter counts 4 KiB blocks) */
  bool writing;           /* false while writing is off after an error */
  char why_not[128];      /* then why: the error ("" when writing) */
  uint64_t hits;          /* reads served wholly from entries */
  uint64_t misses;        /* reads that went (wholly or partly) to the
                             inner storage */
  uint64_t hit_bytes;     /* bytes served from entries */
  uint64_t fetched_bytes; /* bytes the inner storage gave through the tier */
  uint64_t writes, written_bytes;    /* entries written, their payload */
  uint64_t evictions, evicted_bytes; /* entries this process evicted, and
                                        their blocks */
  uint64_t claim_waits;    /* reads that waited for another reader's claim
                              (another process's, or this one's other
                              reader's) */
  uint64_t claim_timeouts; /* of which read the inner storage themselves
                              after the wait's bound */
  uint64_t corrupt;        /* entries found damaged and removed */
  uint64_t write_errors;   /* writes that failed (and turned writing off) */
  uint64_t uncached;       /* reads passed through (no version tag, past
                              the object's end, longer than 128 MiB) */
} gf_storage_cache_info;
/* Whether s is a storage in the tier (the tier is on): then *out is
 * filled; else *out is zeroed. Any thread. */
bool gf_storage_cache_info_get(const gf_storage *s, gf_storage_cache_info *out);

#ifdef GPUFEED_TESTING
/* Test builds only (common/fault.h says which those are): makes `ops`
 * serve the locations it claims, before every registered storage. At
 * most 4. Returns 0 or -ENOSPC. Not thread-safe: before any open. */
int gf_storage_register_test(const gf_storage_ops *ops);
#endif
/* A location with what may be a secret taken out, for messages: a URL
 * ("scheme://[user:password@]host/path[?query][#fragment]") keeps its
 * scheme, host and path, control characters as '?'; anything else is
 * copied as it is. Cut to fit cap (> 0). Returns buf. Any thread
 * (location.c). */
char *gf_location_redact(const char *location, char *buf, size_t cap);

/* The storages (storage.c's table). */
extern const gf_storage_ops gf_storage_http;
extern const gf_storage_ops gf_storage_s3;
extern const gf_storage_ops gf_storage_local;

#endif /* GF_IO_STORAGE_H */
