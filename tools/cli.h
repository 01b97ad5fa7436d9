/* The gpufeed CLI: the option structs main.c fills, one entry point per
 * subcommand (synth.c, build.c, inspect.c, verify.c) and the helpers they
 * share (util.c). Every entry point returns the process exit status. */
#ifndef GF_CLI_H
#define GF_CLI_H

#include "gpufeed.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The commands' SIGINT flags are atomic ints, set in a handler and read
 * by threads: they must be lock-free to be async-signal-safe. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a lock-free atomic int");

/* Exit statuses of every command. */
enum {
  GFC_EXIT_OK = 0,
  GFC_EXIT_FAIL = 1,
  GFC_EXIT_USAGE = 2,
  GFC_EXIT_INTERRUPTED = 130 /* 128 + SIGINT, as shells report it */
};

enum { GFC_SYNTH_PNG = 0, GFC_SYNTH_JPEG = 1 };
typedef struct gfc_synth_opts {
  const char *out;
  const char *from; /* folder of PNG or JPEG photos to crop, or NULL */
  int format;       /* GFC_SYNTH_PNG or GFC_SYNTH_JPEG */
  int quality;      /* JPEG quality 1-100 */
  uint64_t count;
  uint32_t height;
  uint32_t width;
  uint32_t size_lo; /* --sizes LO-HI: each side uniform in [lo, hi]; 0: */
  uint32_t size_hi; /*   every image height x width */
  uint32_t classes; /* 0: default (10, or one class per photo) */
  uint64_t seed;
  unsigned threads; /* 0: online cores */
  bool force;
  bool quiet;
} gfc_synth_opts;

/* What `build` writes (--format). */
enum { GFC_BUILD_FORMAT_GPUFEED = 0, GFC_BUILD_FORMAT_WDS = 1 };
typedef struct gfc_build_opts {
  const char *src;
  const char *out;
  const char *labels; /* labels file or NULL (ImageFolder) */
  int codec;          /* gf_codec */
  int level;          /* 0: the codec's default; loco: rows per band */
  uint32_t channels;  /* 0: native */
  bool keep_16bit;
  unsigned threads; /* 0: online cores */
  uint64_t shard_size;
  uint32_t alignment;
  bool force;
  bool skip_bad;
  bool follow_symlinks; /* follow links to files leading out of SRC */
  bool quiet;
  int format; /* GFC_BUILD_FORMAT_*: a gpufeed dataset or WebDataset
                 shards (build_wds.c) */
  bool json;  /* --format wds: the summary as one JSON object */
  gf_remote_config remote; /* a source or output behind a server */
  gf_shards_config shards; /* a source of tar shards: how it is read */
} gfc_build_opts;

/* build_s3.c: a build's output in a bucket (s3://bucket/prefix), its
 * shards uploaded as the writer closes them. */
typedef struct gfc_s3_out gfc_s3_out;
bool gfc_is_s3(const char *location);
/* Opens the bucket's prefix for the build's output (its client and
 * uploader) and refuses a dataset already there unless o->force. Returns
 * 0 or a negative code, reported. */
int gfc_s3_out_open(const gfc_build_opts *o, gfc_s3_out **out);
/* Starts the uploads of the shards staged in dir (--force: the old index
 * is deleted first). Returns 0 or a negative code, reported. */
int gfc_s3_stream_start(gfc_s3_out *p, const char *dir,
                        const atomic_int *interrupted);
/* The writer's on_shard (format.h): queues shard i for upload, waiting
 * while too many wait. Returns 0, or the first upload's error (as this
 * thread's last error), or -ECANCELED once *interrupted. */
int gfc_s3_on_shard(void *ctx, uint32_t shard, const char *path, uint64_t size);
/* After the writer's finish: waits for the shards' uploads, then uploads
 * the index from the staging folder (and, --force, removes the replaced
 * dataset's extra shards). Returns 0 or a negative code, reported
 * (-ECANCELED: interrupted, not reported). */
int gfc_s3_publish(gfc_s3_out *p);
/* Frees it; unless published, first cancels the uploads (their multipart
 * uploads aborted) and deletes the shards uploaded, saying so. NULL
 * accepted. */
void gfc_s3_out_close(gfc_s3_out *p);

typedef struct gfc_inspect_opts {
  const char *dataset;     /* or tar shards (gf_wds_spec_claims) */
  gf_remote_config remote; /* --tls-no-verify, --ca-file, ... */
  gf_shards_config shards; /* tar shards: how they are read */
  bool json;
  uint64_t samples; /* list the first N records */
} gfc_inspect_opts;

typedef struct gfc_verify_opts {
  const char *dataset; /* or tar shards (gf_wds_spec_claims) */
  gf_remote_config remote;
  gf_shards_config shards; /* tar shards: how they are read */
  unsigned threads; /* 0: online cores */
  bool quiet;
} gfc_verify_opts;

typedef struct gfc_bench_opts {
  const char *source;
  gf_remote_config remote;
  gf_shards_config shards; /* a source of tar shards */
  const char *labels;
  uint32_t batch;       /* default 256 */
  uint32_t threads;     /* 0: the loader's autotune */
  uint32_t epochs;      /* default 3 */
  uint64_t max_batches; /* stop after this many batches (0: no limit) */
  int32_t device;       /* GF_DEVICE_AUTO, GF_DEVICE_CPU or an index */
  uint32_t dtype;       /* gf_out_dtype */
  uint32_t layout;      /* gf_layout */
  uint32_t out_h, out_w;
  uint32_t resize;      /* gf_resize_mode */
  uint32_t resize_size; /* GF_RESIZE_SHORTER_CENTER_CROP's shorter side */
  bool hflip;           /* random horizontal flip (--rrc) */
  float mean[4], std[4];/* normalisation, pixel units (0: none / 1) */
  uint32_t channels;
  uint32_t order;       /* gf_order */
  uint32_t io;          /* gf_io_backend */
  uint32_t prefetch;    /* 0: the loader's autotune */
  uint64_t cache_bytes;
  uint64_t max_sample_bytes;
  uint64_t seed;
  double step_ms;
  const char *trace;    /* Chrome trace file to write, or NULL */
  uint64_t trace_events;/* its buffer capacity in events */
  bool h2d_probe;
  bool no_cache_direct; /* GF_CACHE_DIRECT_OFF */
  bool jpeg_scale_off;  /* GF_JPEG_SCALE_OFF */
  uint32_t gpu_decode;  /* gf_gpu_decode */
  uint32_t gpu_decode_percent; /* 0: 100 */
  uint32_t gpu_decoders;       /* 0: the default */
  uint32_t worker_sched;       /* gf_worker_sched */
  bool plan;
  bool json;
  bool quiet;
} gfc_bench_opts;

typedef struct gfc_index_opts {
  const char *const *shards; /* the SHARD arguments: locations, brace
                                patterns, "::" lists, @FILE list files */
  size_t nshards;
  const char *out; /* --out DIR, or NULL: beside each shard */
  gf_remote_config remote;
  unsigned threads; /* 0: online cores (16 when a shard is remote) */
  bool force;
  bool verify; /* --verify: the images decoded, their sums written */
  bool json;
  bool quiet;
} gfc_index_opts;

/* index_write.c: one shard's index made and stored, with what the
 * indexing threads share (the storages, one a folder; the S3 uploaders,
 * one a bucket). */
typedef struct gfc_index_io gfc_index_io;
enum { GFC_INDEX_WRITTEN = 0, GFC_INDEX_EXISTS = 1 };
typedef struct gfc_index_counts {
  uint64_t members; /* regular members scanned */
  uint64_t samples; /* lines of the index written */
  uint64_t bytes;   /* the shard's size */
  uint64_t verified, unverified; /* --verify: images that decoded, and
                                    that did not (each named) */
} gfc_index_counts;
/* Whether location is read over http(s):// (nothing can be written
 * there). */
bool gfc_is_http(const char *location);
/* The name of location's index under --out DIR (its file name's
 * sidecar, without a URL's query) into buf. Returns 0 or GF_ELIMIT. */
int gfc_index_out_name(const char *location, char *buf, size_t cap);
/* Before any thread: reads the umask, makes --out DIR when missing.
 * *interrupted (SIGINT's flag) stops scans at their next member. Returns
 * 0 or a negative code, reported. Free with gfc_index_io_close. */
int gfc_index_io_open(const gfc_index_opts *o, const atomic_int *interrupted,
                      gfc_index_io **out);
/* Indexes shard `location`: GFC_INDEX_WRITTEN, GFC_INDEX_EXISTS (its index
 * is there, not --force: the shard is not read), or a negative code with
 * this thread's gf_last_error() naming the shard (-ECANCELED once
 * interrupted). *c is filled as far as it got. Any thread. */
int gfc_index_shard(gfc_index_io *io, const char *location,
                    gfc_index_counts *c);
/* index_verify.c: decodes each image member of the shard obj (its
 * members m[0 .. n), as scanned) with the CPU decoders and writes the
 * shard's verification sums (format/wds_sums.h) into a malloc'd *text of
 * *len bytes, listing those that decoded with their CRC32C; one that does
 * not is named in a warning and counted (c->unverified). Returns 0, or
 * the shard's read error, -ECANCELED once *interrupted, -ENOMEM. Any
 * thread. */
struct gf_object;     /* io/storage.h */
struct gf_tar_member; /* format/tar_scan.h */
int gfc_index_verify(struct gf_object *obj, const struct gf_tar_member *m,
                     uint64_t n, const atomic_int *interrupted,
                     gfc_index_counts *c, char **text, size_t *len);
/* Members scanned so far by every thread, for progress. Any thread. */
uint64_t gfc_index_io_members(gfc_index_io *io);
/* Cuts the uploads in flight (they fail with -ECANCELED). Any thread. */
void gfc_index_io_cancel(gfc_index_io *io);
/* After the threads: closes the storages and uploaders. NULL accepted. */
void gfc_index_io_close(gfc_index_io *io);

int gfc_synth(const gfc_synth_opts *o);
int gfc_build(const gfc_build_opts *o);
int gfc_inspect(const gfc_inspect_opts *o);
/* inspect over tar shards (inspect_shards.c). */
int gfc_inspect_shards(const gfc_inspect_opts *o);
int gfc_verify(const gfc_verify_opts *o);
int gfc_bench(const gfc_bench_opts *o);
int gfc_index(const gfc_index_opts *o);

/* ---- helpers (util.c) --------------------------------------------------- */

/* Prints "gpufeed CMD: " + message + newline on stderr. */
void gfc_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints "gpufeed CMD: " + the calling thread's gf_last_error() message (or
 * the code's description when none was recorded). */
void gfc_error_last(const char *cmd, int code);

/* Checks the environment variables every command reads (GPUFEED_LOG):
 * true when they are usable; else prints why ("gpufeed CMD: GPUFEED_LOG=x:
 * expected ...") and returns false, and the command exits with
 * GFC_EXIT_USAGE. */
bool gfc_env_ok(const char *cmd);

/* Number of online cores (at least 1). */
unsigned gfc_cores(void);
/* Monotonic clock in seconds. */
double gfc_now(void);

/* A source's location as the CLI prints it (gf_location_display: a URL
 * without its user:password and query) into buf. Returns buf. Every
 * message and report names a location this way, never as typed. */
const char *gfc_shown(const char *location, const gf_remote_config *remote,
                      char *buf, size_t cap);

/* "1.5 GiB", "320 KiB", "17 B" into buf. Returns buf. */
const char *gfc_fmt_bytes(uint64_t n, char *buf, size_t cap);

/* Joins dir and name with one '/' into a malloc'd string (NULL: -ENOMEM). */
char *gfc_path_join(const char *dir, const char *name);

/* Reads a whole regular file of at most max_len bytes into a malloc'd
 * buffer (*data, owned by the caller, freed with free()). One open and one
 * read per call unless a read comes back short or interrupted (continued;
 * EINTR retried a bounded number of times in a row), all through the fault
 * sites of common/fault.h. Returns 0, -errno, GF_EBADSOURCE or GF_ELIMIT,
 * with context naming the file. */
int gfc_read_file(const char *path, uint64_t max_len, void **data, size_t *len);
/* Writes a whole file through a hidden ".NAME.tmp" in the same folder and
 * renames it, so a reader never sees half a file (no fsync: not durable
 * across a crash). Opens, writes and the rename go through the fault sites
 * of common/fault.h. Returns 0 or -errno with context naming dir/name. */
int gfc_write_file_atomic(const char *dir, const char *name, const void *data,
                          size_t len);

/* 0 when path does not exist, 1 when it is an empty folder, 2 when it is a
 * non-empty folder, 3 when it is something else; -errno on error. */
int gfc_path_state(const char *path);

/* Progress on stderr, drawn only when stderr is a terminal and not quiet:
 * "\r<what> done/total pct rate/s ETA". Redrawn at most every 0.1 s. */
typedef struct gfc_progress {
  bool enabled;
  const char *what;
  const char *unit; /* "img" */
  uint64_t total;
  double start;
  double last;
  char note[112]; /* shown after the rate when not empty (e.g. the bytes a
                     remote source fetched); the caller fills it */
} gfc_progress;
void gfc_progress_start(gfc_progress *p, const char *what, const char *unit,
                        uint64_t total, bool quiet);
void gfc_progress_update(gfc_progress *p, uint64_t done);
/* Clears the line and stops drawing. */
void gfc_progress_end(gfc_progress *p);

/* Writes s (len bytes, any bytes: file names are bytes) as the body of a
 * JSON string onto f: valid UTF-8 passes through; '"', '\\' and control
 * characters are escaped as JSON requires; each byte of an invalid UTF-8
 * sequence becomes \udcXX (XX its value), the surrogateescape scheme of
 * Python's os.fsdecode, so os.fsencode(value) gives back the exact bytes.
 * Every JSON the CLI writes goes through here. */
void gfc_json_str(FILE *f, const char *s, size_t len);

#endif
