/*
 * gpufeed.h - the public API of gpufeed, an input pipeline that keeps GPUs
 * fed with training data.
 *
 * Conventions (they hold for every function below unless it says otherwise):
 *
 * - Status: functions return 0 on success or a negative error code. Codes in
 *   the GF_E* table below are gpufeed's own; any other negative value is a
 *   negated errno from the operating system (-ENOENT, -EIO, -ENOSPC, ...),
 *   passed through unchanged. gf_strerror() and gf_err_name() describe both.
 * - Context: when a call fails, the calling thread's gf_last_error() holds
 *   what went wrong in words and, where it applies, which file, which sample
 *   and which byte offset. It stays until the next failing call on the same
 *   thread (or gf_error_clear()).
 * - Handles are opaque, created by gf_*_open/create and released by the
 *   matching close/destroy, which accept NULL.
 * - Option structs are versioned: initialise them with their *_INIT macro
 *   (or pass NULL for defaults). Reserved fields must stay zero. A struct
 *   is accepted only with a struct_size some version of this header has
 *   published for it (each is at version 1, exactly its sizeof, but
 *   gf_loader_stats, at version 3, which also accepts the sizes of
 *   versions 1 and 2);
 *   any other size is refused with -EINVAL naming the struct and the
 *   sizes accepted, and no field past struct_size is ever read or
 *   written. A later version that grows a struct keeps accepting the older
 *   sizes.
 * - Threads: each function states who may call it. "Any thread" means the
 *   call is safe concurrently with other calls on the same handle.
 */
#ifndef GPUFEED_H
#define GPUFEED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GPUFEED_STATIC_DEFINE)
#define GF_API
#elif defined(__GNUC__)
#define GF_API __attribute__((visibility("default")))
#else
#define GF_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

#define GF_VERSION_MAJOR 0
#define GF_VERSION_MINOR 1
#define GF_VERSION_PATCH 0
#define GF_VERSION_NUMBER \
  (GF_VERSION_MAJOR * 10000 + GF_VERSION_MINOR * 100 + GF_VERSION_PATCH)

/* Returns GF_VERSION_NUMBER of the library actually linked. Any thread. */
GF_API unsigned gf_version(void);
/* Returns "MAJOR.MINOR.PATCH" of the linked library; static storage. Any
 * thread. */
GF_API const char *gf_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* The one table of gpufeed's own error codes: XX(NAME, value, message).
 * Values lie below -1000 so they never collide with a negated errno. */
#define GF_ERRNO_MAP(XX)                                                       \
  XX(FORMAT, -1001, "not a gpufeed dataset (bad magic)")                       \
  XX(VERSION, -1002, "unsupported dataset format version")                     \
  XX(TRUNCATED, -1003, "file is truncated")                                    \
  XX(CORRUPT, -1004, "data is corrupt (checksum or field check failed)")       \
  XX(DECODE, -1005, "sample could not be decoded")                             \
  XX(LIMIT, -1006, "sample exceeds the configured size limits")                \
  XX(UNSUPPORTED, -1007, "unsupported codec, type or feature")                 \
  XX(SHAPE, -1008, "sample shape does not match what was expected")            \
  XX(CUDA, -1009, "CUDA runtime error")                                        \
  XX(NODEVICE, -1010, "no usable CUDA device")                                 \
  XX(DEVOOM, -1011, "device memory pool exhausted")                            \
  XX(EPOCHEND, -1012, "end of epoch: no more batches")                         \
  XX(STATE, -1013, "resume state does not match this loader")                  \
  XX(BADSOURCE, -1014, "source file or folder is unusable")                    \
  XX(REMOTE, -1015, "the server refused or failed the request")                \
  XX(REPLY, -1016, "the server's reply does not match the request")            \
  XX(CHANGED, -1017, "the object changed while it was being read")             \
  XX(INTERNAL, -1099, "internal error (a bug in gpufeed)")

typedef enum gf_errcode {
#define GF_ERR_ENUM_(name, value, msg) GF_E##name = (value),
  GF_ERRNO_MAP(GF_ERR_ENUM_)
#undef GF_ERR_ENUM_
} gf_errcode;

/* A description of err (a GF_E* code or a negated errno). Returns static
 * storage, never NULL; "unknown error" for values it does not know. Any
 * thread. */
GF_API const char *gf_strerror(int err);
/* The symbolic name of err: "GF_ECORRUPT", "ENOENT", ... Static storage,
 * never NULL. Any thread. */
GF_API const char *gf_err_name(int err);

/* What the calling thread's last failing gpufeed call left behind. Fields
 * that do not apply are empty strings / GF_NO_INDEX. */
#define GF_NO_INDEX UINT64_MAX
typedef struct gf_error_info {
  int code;           /* the value the call returned (0: no error recorded) */
  uint64_t sample;    /* sample index in its dataset, or GF_NO_INDEX */
  uint64_t offset;    /* byte offset in `path`, or GF_NO_INDEX */
  char path[1024];    /* file concerned (source, shard or index), or "" */
  char message[1024]; /* full sentence: what failed, where, what was expected */
} gf_error_info;

/* Returns the calling thread's last error. The pointer is owned by gpufeed
 * and stays valid for the life of the thread; its content changes with the
 * next failing call on that thread. Any thread (each sees its own). */
GF_API const gf_error_info *gf_last_error(void);
/* Forgets the calling thread's last error. Any thread. */
GF_API void gf_error_clear(void);

/* ------------------------------------------------------------------------ */
/* Samples, codecs and decoding                                             */
/* ------------------------------------------------------------------------ */

typedef enum gf_codec {
  GF_CODEC_RAW = 0,      /* decoded pixels, stored as is */
  GF_CODEC_PNG = 1,      /* the source PNG file, stored as is */
  GF_CODEC_ZSTD = 2,     /* decoded pixels, zstd-compressed */
  GF_CODEC_GRADZSTD = 3, /* gradient filter (p - left - up + upleft) + zstd */
  GF_CODEC_JPEG = 4,     /* the source JPEG file, stored as is */
  /* Lossless coding of 8-bit images (1-4 channels) after LOCO-I, the
   * algorithm of JPEG-LS, cut into bands of rows coded independently
   * (docs/FORMAT.md). In GPU mode the GPU decodes it, a band a thread; in
   * host mode the CPU does, more slowly than gradzstd. */
  GF_CODEC_LOCO = 5,
  GF_CODEC_COUNT_
} gf_codec;

typedef enum gf_dtype {
  GF_DTYPE_U8 = 0,
  GF_DTYPE_U16 = 1, /* little-endian in memory (host order on x86/arm) */
} gf_dtype;

/* Name of a codec ("raw", "png", "zstd", "gradzstd", "jpeg", "loco") or
 * NULL. Any thread. */
GF_API const char *gf_codec_name(int codec);
/* Parses a codec name; returns the gf_codec value or -EINVAL. Any thread. */
GF_API int gf_codec_parse(const char *name);

/* Shape of a decoded image: height x width x channels, interleaved (HWC). */
typedef struct gf_shape {
  uint32_t height;
  uint32_t width;
  uint32_t channels; /* 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA */
  uint32_t dtype;    /* gf_dtype */
} gf_shape;

/* Bytes of a decoded image of that shape (0 when the shape is invalid). */
GF_API uint64_t gf_shape_bytes(const gf_shape *s);

/* Limits checked before any allocation or decode work. Zero fields take the
 * defaults (GF_LIMIT_DEFAULT_*). */
#define GF_LIMIT_DEFAULT_DIM 65535u
#define GF_LIMIT_DEFAULT_PIXELS (1ull << 28)         /* 268M pixels */
#define GF_LIMIT_DEFAULT_BYTES (1ull << 30)          /* 1 GiB a sample */
typedef struct gf_limits {
  uint32_t max_width;
  uint32_t max_height;
  uint64_t max_pixels;
  uint64_t max_bytes; /* decoded bytes and stored bytes, each */
} gf_limits;

/* How to decode. channels: 0 keeps the image's own channel count, or 1, 3,
 * 4 to convert (gray <-> RGB by ITU-R BT.601 luma / replication, alpha added
 * opaque or dropped). keep_16bit: 16-bit PNGs stay 16-bit (dtype U16)
 * instead of being reduced to 8 bits. */
#define GF_DECODE_OPTS_VERSION 1
typedef struct gf_decode_opts {
  uint32_t struct_size;
  uint32_t channels;
  uint32_t keep_16bit;
  uint32_t reserved0;
  gf_limits limits;
  uint64_t reserved[4];
} gf_decode_opts;
#define GF_DECODE_OPTS_INIT {sizeof(gf_decode_opts), 0, 0, 0, {0, 0, 0, 0}, {0}}

/* Reads the shape a sample of `codec` will decode to under `opts` (NULL:
 * defaults), without decoding. For raw/zstd/gradzstd/loco the stored shape
 * is passed in `stored` (from the dataset record; a loco sample's must be
 * u8, else GF_EUNSUPPORTED); for png and jpeg it may be NULL (when given,
 * its nonzero height and width must match the file's). With src, the
 * cheap checks of the stored bytes are made too (raw: the length; zstd,
 * gradzstd: the frame header; loco: the header, band table and length).
 * Returns 0, GF_EDECODE, GF_ELIMIT, GF_EUNSUPPORTED or -EINVAL. Any thread. */
GF_API int gf_decode_shape(int codec, const void *src, size_t src_len,
                           const gf_shape *stored, const gf_decode_opts *opts,
                           gf_shape *out);

/* Decodes one sample into dst (caller-owned, dst_cap bytes, at least
 * gf_shape_bytes(out)). Writes the decoded shape to *out. Never writes past
 * dst_cap; on failure dst's content is unspecified. Returns 0, GF_EDECODE,
 * GF_ELIMIT, GF_ESHAPE (dst too small or stored shape inconsistent),
 * GF_EUNSUPPORTED, -ENOMEM or -EINVAL. Any thread (no shared state). */
GF_API int gf_decode(int codec, const void *src, size_t src_len,
                     const gf_shape *stored, const gf_decode_opts *opts,
                     void *dst, size_t dst_cap, gf_shape *out);

/* Encodes decoded pixels of shape `shape` into a stored sample. *dst is
 * allocated by gpufeed and owned by the caller, who frees it with free().
 * level: the zstd level for zstd (0: default 3) and gradzstd (0: level 1);
 * for loco the rows of a band, 1 to 255 (0: 8; any other value is
 * -EINVAL); ignored by raw. loco codes 8-bit samples only: a u16 shape
 * is refused with GF_EUNSUPPORTED. png and jpeg are not produced by this
 * call (the builder stores source files as they are): it returns
 * GF_EUNSUPPORTED.
 * Returns 0, -ENOMEM, -EINVAL, GF_EUNSUPPORTED. Any thread. */
GF_API int gf_encode(int codec, const void *pixels, const gf_shape *shape,
                     int level, void **dst, size_t *dst_len);

/* ------------------------------------------------------------------------ */
/* Datasets (the output of `gpufeed build`)                                 */
/* ------------------------------------------------------------------------ */

typedef struct gf_dataset gf_dataset;

/* What the index says about one sample. */
typedef struct gf_sample_info {
  uint64_t index;
  uint32_t shard;
  uint32_t codec;      /* gf_codec */
  uint64_t offset;     /* byte offset of the stored bytes in the shard file */
  uint64_t length;     /* stored bytes */
  gf_shape shape;      /* decoded shape as stored (native channels) */
  int64_t label;
  uint32_t checksum;   /* CRC32C of the stored bytes */
  uint32_t reserved0;
  const char *source;  /* source path relative to the build root (not
                          NUL-terminated in the file: see source_len) */
  uint32_t source_len;
  uint32_t reserved1;
} gf_sample_info;

/* Opens a dataset directory, or a dataset's URL (http://, https://, s3://:
 * gf_dataset_open_with's defaults). Maps the index (O(1) in the sample
 * count; a remote index is read in pages as its records are used, see
 * docs/FORMAT.md), checks the header, the summary and the tables and
 * every shard's size and header (a remote dataset's shards when each is
 * first used), and returns a handle in *out that the caller closes with
 * gf_dataset_close(). Records are validated when they are read. Returns 0,
 * -ENOENT/-EACCES/..., GF_EFORMAT, GF_EVERSION, GF_ETRUNCATED or GF_ECORRUPT,
 * or a server's error (named, never with a secret). Any thread. */
GF_API int gf_dataset_open(const char *dir, gf_dataset **out);
/* The same with how a server is read (retries, timeouts, TLS, the disk
 * cache tier: gf_remote_config below; NULL: defaults). */
typedef struct gf_remote_config gf_remote_config;
GF_API int gf_dataset_open_with(const char *location,
                                const gf_remote_config *remote,
                                gf_dataset **out);
/* Closes the dataset; NULL is accepted. No other call on it may be running
 * or follow. */
GF_API void gf_dataset_close(gf_dataset *ds);

/* Counts and tables. Any thread. */
GF_API uint64_t gf_dataset_count(const gf_dataset *ds);
GF_API uint32_t gf_dataset_num_classes(const gf_dataset *ds);
/* Class name i, NUL-terminated, owned by the dataset; NULL if out of range. */
GF_API const char *gf_dataset_class_name(const gf_dataset *ds, uint32_t i);
GF_API uint32_t gf_dataset_num_shards(const gf_dataset *ds);
/* Path of shard i (owned by the dataset), NULL if out of range. */
GF_API const char *gf_dataset_shard_path(const gf_dataset *ds, uint32_t i);
/* Alignment of data extents in bytes (1: packed; 4096: O_DIRECT-ready). */
GF_API uint32_t gf_dataset_alignment(const gf_dataset *ds);

/* Fills *info for sample idx after checking the record against the shard
 * sizes and the limits of a valid record (a remote index: its record's
 * page and its source name's are read on first use). Returns 0, -ERANGE
 * (idx beyond the count), GF_ECORRUPT (with context) or, remote, the read's
 * error naming the index and the byte range. Any thread. */
GF_API int gf_dataset_sample_info(const gf_dataset *ds, uint64_t idx,
                                  gf_sample_info *info);

/* Reads sample idx's stored bytes into buf (cap bytes, at least
 * info.length) with pread and checks the checksum. Returns the number of
 * bytes read, or -EIO..., GF_ETRUNCATED, GF_ECORRUPT (checksum), -ENOBUFS
 * (cap too small). Any thread. */
GF_API int64_t gf_dataset_read(const gf_dataset *ds, uint64_t idx, void *buf,
                               size_t cap);

/* Checks every index record, the CRC32C over all of them and over the
 * source names, and that the summary table agrees with the records (O(n);
 * open does not). Returns 0 or GF_ECORRUPT (or, remote, a read's error).
 * Any thread. */
GF_API int gf_dataset_check_index(const gf_dataset *ds);

/* CRC32C (Castagnoli) of buf, continuing from crc (start with 0). */
GF_API uint32_t gf_crc32c(uint32_t crc, const void *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* The loader                                                               */
/* ------------------------------------------------------------------------ */
/*
 * A loader delivers batches of one rank's share of a source, epoch after
 * epoch: it reads (io_uring, or a pread pool where io_uring is refused),
 * decodes on a pool of worker threads straight into the batch's buffer, and
 * can keep decoded samples in a host cache so that later epochs skip reads
 * and decodes.
 *
 * Order. Each epoch has a seeded permutation of all samples (the same on
 * every rank); rank r of world w takes permutation positions r, r+w, ...
 * after the permutation is padded by repeating its head to a multiple of w
 * (GF_PARTITION_PAD, the default, as PyTorch's DistributedSampler) or
 * truncated (GF_PARTITION_DROP). The batch sequence depends only on (seed,
 * epoch, rank, world, batch size, order, partition, drop_last) and, under
 * the skip policy, on which samples are bad: never on thread count or
 * timing.
 *
 * Threading contract. One thread at a time (the consumer) calls next,
 * release, set_epoch, state export/import and destroy; gf_loader_stats may
 * be called from any thread at any time. A gf_batch stays valid until it is
 * released or the loader is destroyed; destroying with batches still out
 * is allowed and frees them (their pointers become invalid).
 */

typedef struct gf_loader gf_loader;

typedef enum gf_order {
  GF_ORDER_SHUFFLE = 0,    /* a full seeded permutation per epoch (default) */
  GF_ORDER_SEQUENTIAL = 1, /* storage order */
  GF_ORDER_BLOCK = 2,      /* quasi-random: blocks of consecutive samples in
                              shuffled order, shuffled within small windows:
                              reads stay mostly sequential (larger than RAM) */
} gf_order;

typedef enum gf_partition {
  GF_PARTITION_PAD = 0,  /* repeat the epoch's first samples (default) */
  GF_PARTITION_DROP = 1, /* drop the tail so every rank gets as many */
} gf_partition;

typedef enum gf_error_policy {
  GF_ON_ERROR_FAIL = 0, /* next() returns the error (default) */
  GF_ON_ERROR_SKIP = 1, /* the sample is skipped, the batch filled from the
                           following samples, and stats count it (a sample
                           whose read was lost with a failed reader, an
                           io_uring ring's own error, is not bad by itself:
                           it is read again in its place instead) */
} gf_error_policy;

typedef enum gf_io_backend {
  GF_IO_AUTO = 0,  /* io_uring, else the pread pool (reason in stats) */
  GF_IO_URING = 1, /* io_uring or fail */
  GF_IO_PREAD = 2, /* the pread thread pool */
} gf_io_backend;
/* The environment variable GPUFEED_IO=uring|pread|auto overrides GF_IO_AUTO;
 * GPUFEED_LOG=error|warn|info|debug sets what is logged to stderr (default
 * warn). An unknown value of either makes gf_loader_create fail with
 * -EINVAL naming the variable. Both are process-wide; docs/ENVIRONMENT.md
 * lists every variable gpufeed reads. */

/* What the GPU stage (or, in host mode, its CPU reference) makes of a
 * batch's uint8 HWC samples: an optional crop/pad to a fixed size (center,
 * or random with zero padding), an optional random horizontal flip, then a
 * conversion to the output type and layout with per-channel normalisation
 * out = (x - mean[c]) / std[c] (x in 0..255). Random choices are a pure
 * function of (seed, epoch, dataset sample index): the same sample gets
 * the same crop and flip in the same epoch on every run and machine. */
typedef enum gf_out_dtype {
  GF_OUT_U8 = 0,   /* no conversion: the pixels (crop/flip still apply) */
  GF_OUT_F32 = 1,
  GF_OUT_F16 = 2,  /* IEEE half, round to nearest even */
  GF_OUT_BF16 = 3, /* bfloat16, round to nearest even */
} gf_out_dtype;

typedef enum gf_layout {
  GF_LAYOUT_NHWC = 0,
  GF_LAYOUT_NCHW = 1,
} gf_layout;

/* Resizing (see docs/TRANSFORMS.md and lib/xform/transform.h for the exact
 * arithmetic): the window is cut from the source first, then resampled to
 * height x width with torchvision's antialiased bilinear filter
 * (antialias=True, the same as PIL's BILINEAR), rounded to uint8 and only
 * then converted and normalised, as torchvision's uint8 recipe does. With
 * a resize mode, height and width are both required, random_crop and pad
 * must be 0; hflip flips the resized window. */
typedef enum gf_resize_mode {
  GF_RESIZE_NONE = 0,                 /* crop/pad as before (height/width window, pad) */
  GF_RESIZE_RANDOM_RESIZED_CROP = 1,  /* torchvision RandomResizedCrop(height x width) */
  GF_RESIZE_SHORTER_CENTER_CROP = 2,  /* Resize(resize_size) (shorter side) + CenterCrop(h x w) */
  GF_RESIZE_EXACT = 3,                /* Resize((height, width)) */
} gf_resize_mode;

typedef struct gf_transform {
  uint32_t out_dtype;   /* gf_out_dtype */
  uint32_t layout;      /* gf_layout */
  uint32_t height;      /* output height and width; 0: the samples' own */
  uint32_t width;       /*   (uniform batches only) */
  uint32_t random_crop; /* 1: random crop window; 0: centered */
  uint32_t pad;         /* zero border added on each side before cropping */
  uint32_t hflip;       /* 1: flip horizontally with probability 1/2 */
  uint32_t resize;      /* gf_resize_mode */
  float mean[4];        /* per channel, in pixel units (0..255) */
  float std[4];         /* per channel; 0 means 1 */
  uint64_t seed;
  uint32_t resize_size; /* SHORTER_CENTER_CROP: the shorter side before the
                           crop (0: round(256/224 x height)); 0 otherwise */
  uint32_t no_antialias;/* 1: plain bilinear also when shrinking; 0
                           (default): antialiased as torchvision's
                           antialias=True. 0 without a resize mode */
  float scale[2];       /* RANDOM_RESIZED_CROP: area fraction range, 0 <
                           scale[0] <= scale[1] <= 1; {0,0}: {0.08, 1.0} */
  float ratio[2];       /* RANDOM_RESIZED_CROP: aspect range w/h, drawn
                           log-uniformly; {0,0}: {3/4, 4/3} */
  uint64_t reserved[1]; /* must be zero */
} gf_transform;

/* An S3 store's settings given by the caller (gf_remote_config.s3), for
 * callers that manage credentials themselves; each field left NULL or 0
 * is found as the AWS CLI finds it (the environment, AWS_PROFILE and the
 * shared files ~/.aws/credentials and ~/.aws/config, then the container
 * or EC2 instance metadata service; docs/REMOTE.md). Strings are read at
 * open and copied: the caller may free them after. */
typedef struct gf_s3_config {
  uint32_t struct_size;          /* sizeof(gf_s3_config) */
  uint32_t anonymous;            /* 1: requests go unsigned (public buckets;
                                    the AWS CLI's --no-sign-request) */
  const char *access_key_id;     /* with secret_access_key: these
                                    credentials, no other looked for */
  const char *secret_access_key; /* a secret: never shown */
  const char *session_token;     /* a secret (NULL: none) */
  const char *region;            /* NULL: AWS_REGION, ..., "us-east-1" */
  const char *endpoint_url;      /* NULL: AWS_ENDPOINT_URL_S3, ..., AWS */
  const char *profile;           /* NULL: AWS_PROFILE, ..., "default" */
  uint32_t addressing;           /* 0: auto (path-style with an endpoint,
                                    virtual-hosted on AWS); 1: path-style;
                                    2: virtual-hosted */
  uint32_t reserved32;           /* must be zero */
  uint64_t reserved[4];          /* must be zero */
} gf_s3_config;
#define GF_S3_CONFIG_INIT                                                      \
  {                                                                            \
    sizeof(gf_s3_config), 0, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, { 0 }   \
  }

/* Reading from a server (http://, https://; docs/REMOTE.md): how reads
 * are retried, how long a server may take, how much is read ahead of
 * decode, and the disk cache tier. Zero fields take the defaults; a NULL
 * gf_loader_config.remote means all defaults. Local sources ignore it. */
#define GF_REMOTE_CONFIG_VERSION 1
typedef struct gf_remote_config {
  uint32_t struct_size;        /* sizeof(gf_remote_config) */
  uint32_t tls_no_verify;      /* 1: servers' TLS certificates are not
                                  verified (every report and log says so);
                                  0 (default): verified against ca_file or
                                  the system's CA store */
  const char *ca_file;         /* PEM CA bundle (NULL: the system's) */
  uint32_t max_attempts;       /* tries of one request, the first included
                                  (0: 5); 5xx, 429, resets, refused
                                  connections, stalls and timeouts are
                                  retried, 4xx others are not */
  uint32_t retry_ms;           /* the most time one request may spend in
                                  tries and waits between them (0: 60000) */
  uint32_t connect_timeout_ms; /* (0: 10000) */
  uint32_t stall_ms;           /* a transfer that moves no byte for this
                                  long is abandoned and retried (0: 15000) */
  uint32_t max_connections;    /* connections to one server (0: as many as
                                  fetch_requests, HTTP/1.1 carrying one
                                  request at a time a connection, but at
                                  most half of ulimit -n) */
  uint32_t fetch_requests;     /* reads in flight ahead of decode (0: 1024:
                                  at 25 ms a round trip, 40,000 reads a
                                  second) */
  uint64_t fetch_bytes;        /* bytes read ahead of decode, at most (0:
                                  256 MiB, at least a batch's worth) */
  const char *cache_dir;       /* disk cache tier: fetched bytes are kept
                                  here and read locally later (NULL: off) */
  uint64_t cache_dir_bytes;    /* its limit (0 with cache_dir: 64 GiB) */
  uint32_t fetch_threads;      /* threads that move the bytes off the
                                  network, each with its own connections
                                  (0: one a two cores, 1 to 8; a thread
                                  moves 2-5 GB/s) */
  uint32_t reserved32;         /* must be zero */
  const struct gf_s3_config *s3; /* s3:// only: who asks and where (NULL:
                                  the AWS conventions alone); read at
                                  open, not kept */
  uint64_t reserved[2];          /* must be zero */
} gf_remote_config;
/* clang-format off */
#define GF_REMOTE_CONFIG_INIT \
  {sizeof(gf_remote_config), 0, NULL, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 0, 0, NULL, {0}}
/* clang-format on */

/* A source's location as every message and report of gpufeed shows it: a
 * URL without its user:password and its query (where credentials and
 * tokens travel), starting with "(TLS unverified) " when remote (NULL:
 * the defaults) turns TLS verification off for it; a local path as it
 * is. Into buf (cap bytes, cut to fit). Print this, never the location
 * itself, where a URL may hold a secret. Returns 0, or -EINVAL when buf
 * is NULL or cap 0. Any thread. */
GF_API int gf_location_display(const char *location,
                               const gf_remote_config *remote, char *buf,
                               size_t cap);

/* How a source of WebDataset tar shards is read (gf_loader_config.shards;
 * docs/SHARDS.md). A source names shards when it starts with '@' (a list
 * file: a shard location or brace pattern a line), holds "::" (a list, as
 * webdataset takes it) or ends in ".tar" (a shard, or a brace pattern:
 * "data/train-{000000..000999}.tar"), locally, over http(s):// or in
 * s3://. A sample is the run of adjacent members with one key (the path
 * up to the first '.' of the file name); its image is its one member of an
 * image field, its label the decimal integer of its label field. */
typedef enum gf_shards_index {
  /* A shard's sidecar index (DALI's wds2idx format, next to the shard:
   * "x.tar" -> "x.idx"; `gpufeed index` writes them) where there is one
   * and it matches the shard, else a scan of its tar headers at create
   * (in parallel, headers only: over a network this reads the shard
   * through; a warning says so). */
  GF_SHARDS_INDEX_AUTO = 0,
  GF_SHARDS_INDEX_REQUIRE = 1, /* every shard must have its index */
  GF_SHARDS_INDEX_SCAN = 2,    /* indexes are not looked for */
  /* Streaming mode, for remote shards without indexes: no index, no
   * scan; each shard read front to back in one request while its samples
   * are decoded, shards dealt to ranks whole in an order shuffled each
   * epoch, samples mixed in a shuffle buffer (shuffle, shuffle_bytes), as
   * the webdataset library reads. What it gives up against an index
   * (docs/SHARDS.md): the full permutation (the order is the buffer's), a
   * known epoch length (ranks may deliver different counts), the sample
   * cache, elastic resume (a resume replays the epoch's stream up to its
   * position), and cheap repairs (under the skip policy a sample that
   * fails to decode replays the epoch's stream up to its batch). */
  GF_SHARDS_INDEX_STREAM = 3,
} gf_shards_index;

typedef struct gf_shards_config {
  uint32_t struct_size;     /* sizeof(gf_shards_config) */
  uint32_t index;           /* gf_shards_index */
  const char *image_fields; /* the fields an image may come from,
                               ';'-separated, lower-case (NULL:
                               "jpg;jpeg;png"); a sample must hold exactly
                               one, else it fails under error_policy */
  const char *label;        /* the label's field: NULL or "auto": "cls"
                               where a sample has one, else -1; "none": -1;
                               a field name ("cls", "cls2", "index"...): its
                               decimal integer, which every sample must
                               hold (else it fails under error_policy);
                               "json:KEY": the integer at KEY of the json
                               field's object */
  uint32_t threads;         /* shards opened at once at create (0: 128 for
                               remote shards, else the online cores); in
                               streaming mode, shards read at once (0: 4;
                               each takes three threads beside the workers) */
  uint32_t shuffle;         /* streaming mode: the samples the shuffle
                               buffer holds (0: 1000; 1: none), under
                               GF_ORDER_SHUFFLE and _BLOCK */
  uint64_t index_bytes;     /* the largest index file read (0: 256 MiB) */
  /* Other fields handed with each batch (gf_batch_field): ';'-separated,
   * lower-case field names ("txt", "txt;json"), at most GF_FIELDS_MAX;
   * NULL or "": none. Each is a sample's member of that field, as its
   * bytes, or absent where a sample has no such member (webdataset's
   * behaviour: the key is missing; not an error). Create refuses
   * (-EINVAL, the option named) an empty name (";;", a trailing ';'), a
   * name given twice, an upper-case name (a shard's fields are
   * lower-cased) and a name with '/' or '.'; it accepts the label's field
   * ("cls") and an image field ("jpg": its bytes as stored, beside the
   * decoded image). Asking for fields makes each sample's one read cover
   * their members too (its extent), their tar headers checked as the
   * image's; a cached sample (cache_bytes) keeps its fields in its cache
   * record, so a cache hit delivers its own. */
  const char *fields;
  uint64_t field_bytes; /* the most bytes a field of a sample may hold
                           (0: GF_FIELD_BYTES_DEFAULT, 64 KiB); every
                           batch slot keeps batch_size x fields x
                           field_bytes for them, allocated at create
                           and shown in the memory plan. A sample with
                           a larger field is a bad sample (the shard,
                           key, field and sizes named; error_policy
                           decides), and its member is not read. */
  uint64_t shuffle_bytes; /* streaming mode: the shuffle buffer's bytes
                             at most (0: 256 MiB) */
  uint64_t reserved[1];   /* must be zero */
} gf_shards_config;
/* clang-format off */
#define GF_SHARDS_CONFIG_INIT \
  {sizeof(gf_shards_config), 0, NULL, NULL, 0, 0, 0, NULL, 0, 0, {0}}
/* clang-format on */
/* gf_shards_config.fields: the most fields, and the default bound. */
#define GF_FIELDS_MAX 16u
#define GF_FIELD_BYTES_DEFAULT (64ull << 10)

#define GF_LOADER_CONFIG_VERSION 1
typedef struct gf_loader_config {
  uint32_t struct_size;   /* sizeof(gf_loader_config) */
  uint32_t batch_size;    /* samples a batch (default 256) */
  const char *source;     /* a dataset folder (gpufeed build) or a folder of
                             PNG and JPEG files (.png, .jpg, .jpeg, mixed
                             freely) in the ImageFolder convention; or a
                             dataset's URL (http://, https://,
                             s3://bucket/prefix: see remote); or
                             WebDataset tar shards (see shards) */
  const char *labels_file;/* image folder source: flat folder + labels
                             file */
  uint64_t seed;          /* permutation seed (default 0) */
  uint32_t threads;       /* decode workers (0: autotune, see prefetch) */
  uint32_t order;         /* gf_order */
  uint32_t rank;          /* this process's rank (default 0) */
  uint32_t world;         /* number of ranks (0 or 1: single process) */
  uint32_t partition;     /* gf_partition */
  uint32_t drop_last;     /* drop the epoch's final incomplete batch */
  uint64_t cache_bytes;   /* host cache budget for decoded samples (0: off) */
  uint32_t prefetch;      /* batch slots in flight (the caller may hold
                             at most this many batches at once). 0 here
                             or in threads: autotune within a CPU budget
                             (online cores, one kept for the consumer
                             above 2 cores) and a RAM budget (staging,
                             read and output buffers at most 1/8 of
                             MemAvailable): threads as many as both
                             allow; prefetch 3 in GPU mode, 2 in host
                             mode (double buffering), up to 4 with 8
                             threads or more when RAM allows;
                             gf_loader_stats.tuning says what and why.
                             INIT gives 2. */
  uint32_t channels;      /* output channels: 0 native, 1, 3 or 4 */
  uint32_t keep_16bit;    /* 16-bit PNGs stay 16-bit */
  uint32_t error_policy;  /* gf_error_policy */
  uint32_t io_backend;    /* gf_io_backend */
  uint32_t io_queue_depth;/* reads in flight a worker, at most 64 (and at
                             most batch_size / (2 x threads)); 0: autotune,
                             16, or 64 for a raw dataset read with
                             io_direct whose samples the CPU neither
                             decodes nor transforms (GPU mode, or no
                             transform), which also gets 2 threads when
                             threads is 0 (gf_loader_stats.tuning) */
  uint32_t io_direct;     /* O_DIRECT reads (aligned datasets only) */
  uint32_t block_size;    /* GF_ORDER_BLOCK: samples a block (default 256) */
  uint64_t max_sample_bytes; /* decoded bytes a sample may take in a batch
                             (0: the largest decoded sample of the source,
                             so that no valid sample is refused for its
                             size: a dataset's index knows every shape; an
                             image folder's files are sized from their
                             headers (a PNG's IHDR, a JPEG's frame header),
                             read in parallel at create, a file whose header
                             is neither or is beyond `limits` not counted
                             (the fail policy fails create naming the first;
                             the skip policy skips it when loaded)). Set: at
                             least the largest sample, else create fails
                             naming it. Each sample's place in a staging
                             slot is this many bytes (batches of mixed sizes
                             are ragged: shapes and offsets), so a slot is
                             batch_size * max_sample_bytes; a fixed-size
                             transform's output follows from its height and
                             width alone; a worker's decode scratch is at
                             most the largest sample before conversion. A
                             folder file rewritten larger after create fails
                             naming the file (it changed since). */
  gf_limits limits;       /* size limits for every sample (0: defaults) */
  int32_t device;         /* GF_DEVICE_AUTO (the INIT default): CUDA device
                             0 when there is one, else host mode;
                             GF_DEVICE_CPU: host mode; 0..N-1: that GPU */
  uint32_t staging_slots; /* pinned staging slots (0: one a batch slot,
                             as prefetch) */
  uint64_t device_pool_bytes; /* device pool reservation (0: what the
                             memory plan needs, see gf_loader_plan) */
  gf_transform transform; /* what each delivered batch is made into */
  uint64_t trace_events;  /* 0 (default): no trace. Otherwise the capacity
                             of the in-memory trace, in events (32 bytes
                             each, allocated at create; at most 2^26): spans
                             of reads, decodes, cache copies, batches, the
                             consumer's calls and the GPU copy stream, for
                             gf_loader_trace_write. Once full, later events
                             are dropped and counted (gf_loader_stats). */
  uint32_t cache_direct;  /* gf_cache_direct: in GPU mode with a cache,
                             whether cached samples go to the device from
                             where they lie in the cache (default) */
  uint32_t jpeg_scale;    /* gf_jpeg_scale: JPEG samples under a resize
                             transform decoded at a reduced DCT scale
                             (GF_JPEG_SCALE_AUTO, the default) or at full
                             scale (GF_JPEG_SCALE_OFF); see below */
  uint32_t gpu_decode;    /* gf_gpu_decode: which JPEG samples nvJPEG
                             decodes on the GPU in GPU mode (default
                             GF_GPU_DECODE_AUTO); see below */
  uint32_t gpu_decode_percent; /* of the JPEG samples the GPU would take,
                             the share it gets, 1-100, by position in the
                             batch; 0: under GF_GPU_DECODE_AUTO, a share
                             moved at run time by the rate the consumer
                             takes batches at (docs/NVJPEG.md), under
                             GF_GPU_DECODE_ALL 100 */
  uint32_t worker_sched;  /* gf_worker_sched: the decode workers'
                             scheduling policy (default
                             GF_WORKER_SCHED_BATCH); see below */
  uint32_t gpu_decoders;  /* nvJPEG decoders working at once (1 to
                             GF_GPU_DECODERS_MAX; 0: the default,
                             GF_GPU_DECODERS_DEFAULT), each
                             with its own reservations; see below */
  const gf_remote_config *remote; /* a source behind a server: NULL for
                             the defaults (read at create only) */
  const gf_shards_config *shards; /* a source of tar shards: how it is
                             read (NULL: the defaults; read at create
                             only) */
  uint64_t reserved[3];           /* must be zero */
} gf_loader_config;
/* JPEG samples (a folder's .jpg/.jpeg files, a dataset's jpeg records)
 * under a transform with a fixed output size (height/width set) are
 * decoded as their window only: the window is chosen from (seed, epoch,
 * index) and the image's size before the decode (docs/TRANSFORMS.md), and
 * only the rows and columns covering it are decoded. Under a resize mode,
 * GF_JPEG_SCALE_AUTO also lets libjpeg's scaled IDCT decode the window at
 * 1/2, 1/4 or 1/8 scale: the largest scale step that keeps the window at
 * least the size it is resampled to (the output size; SHORTER_CENTER_CROP:
 * the resampled whole image). The output then differs slightly from a
 * full-scale decode's (docs/TRANSFORMS.md states the tolerance).
 * GF_JPEG_SCALE_OFF decodes the window at full scale: the output is then
 * byte-identical to a full decode followed by the same transform. The
 * sample cache (cache_bytes) never holds a window, which depends on the
 * epoch: with GF_JPEG_SCALE_AUTO such JPEG samples are not cached (every
 * epoch decodes their window); with GF_JPEG_SCALE_OFF and a cache, JPEG
 * samples are decoded whole and cached as PNG samples are, the transform
 * cutting each epoch's window (the output is the same either way). Without
 * a fixed output size JPEG samples are decoded whole and cached like any
 * other. gf_loader_stats counts the decodes by scale and the fraction of
 * the pixels decoded. */
typedef enum gf_jpeg_scale {
  GF_JPEG_SCALE_AUTO = 0,
  GF_JPEG_SCALE_OFF = 1,
} gf_jpeg_scale;
/* In GPU mode with cache_bytes set, the cache's memory is pinned
 * (cudaHostRegister) in 64 MiB chunks as samples are admitted, never more
 * than cache_bytes, and a cached sample is copied to the device by DMA
 * from where it lies: no CPU copy into the staging slot, so a cached
 * epoch costs the CPU almost nothing. Such a batch has data == NULL (its
 * host pixels were never assembled; gf_batch.direct_count says how many
 * samples came this way): use `output`. GF_CACHE_DIRECT_OFF keeps the
 * cache pageable and copies every cached sample into the staging slot, so
 * `data` always holds the batch's pixels. If pinning a chunk fails, its
 * samples take the copying path (gf_loader_stats.cache_pin_failures). */
typedef enum gf_cache_direct {
  GF_CACHE_DIRECT_AUTO = 0,
  GF_CACHE_DIRECT_OFF = 1,
} gf_cache_direct;
/* JPEG on the GPU (GPU mode only). Where nvJPEG is found at run time
 * (libnvjpeg.so, CUDA 11 or later; nothing is linked at build time), a JPEG
 * sample the GPU can take is not decoded by a worker: the worker checks
 * its headers (an 8-bit baseline, extended or progressive Huffman frame,
 * progressive only where the decoder takes it (asked at create), 1 or 3
 * components, its segments up to the first scan as libjpeg reads them,
 * ending in its EOI marker, within `limits`), puts the
 * file's bytes where its pixels would go in the pinned staging slot, and
 * nvJPEG decodes it on the loader's copy stream straight into the batch's
 * device input, before the transform. Such a sample is decoded whole, at
 * full scale (no window, no DCT scaling: the transform's window is then
 * exactly torchvision's); its pixels are within 3 of the CPU decoder's
 * (chroma interpolated as libjpeg does; docs/NVJPEG.md). What the GPU
 * cannot give stays on the CPU: channels 4, an identity transform (the
 * batch is then the host pixels), arithmetic coding, 12-bit, CMYK, a file
 * larger than its sample's place in the slot. A sample nvJPEG refuses or
 * fails on is decoded again by the CPU decoder, which has the last word:
 * a corrupt file fails or is skipped as it would be on the CPU, named.
 * Damage inside the entropy-coded data that nvJPEG does not report (the
 * JPEG engines decode what they are given) is not seen on the GPU path;
 * a truncated file (no EOI) always goes to the CPU. A batch with samples
 * decoded on the GPU has data == NULL (its host slot holds their files,
 * not their pixels): use `output`. The decoder's memory is its own, two
 * reservations the memory plan prints beside the device pool (which
 * keeps exactly its bytes). gf_loader_stats says which backend decodes,
 * or why none does, and counts the samples decoded on each side.
 * GF_GPU_DECODE_OFF keeps every JPEG sample on the CPU. */
typedef enum gf_gpu_decode {
  /* The JPEG engines only (A100, H100, H200 and later), and only for
   * bytes a checksum vouches for: a built dataset's (`gpufeed build
   * --codec jpeg`: every file decoded by libjpeg at build time, its CRC32C
   * checked on every read) and tar shards' verified by `gpufeed index
   * --verify` (each image decoded by libjpeg once, its CRC32C in the
   * shard's x.sums, checked on every read; an image that no longer
   * matches is decoded on the CPU): every such JPEG sample they take goes
   * to them. A folder's JPEG files (and unverified shards') have no
   * checksum, and nvJPEG does not detect damage inside the entropy-coded
   * data (a file cut short and closed with an end marker decodes to
   * garbage without an error), libjpeg does, and gpufeed never delivers a
   * damaged sample as good unless asked (GF_GPU_DECODE_ALL): each such
   * file is decoded on the CPU the first time it is met, read to its end
   * (a full decode's verdict), and from then on its CRC32C vouches for it
   * (up to 2^24 files, 8 bytes each in the memory plan; stats
   * jpeg_checked, jpeg_check_failed). Without engines nothing goes to
   * the GPU: the GPU hybrid backend decodes on the SMs, which the training
   * step needs more than the CPU workers' help. */
  GF_GPU_DECODE_AUTO = 0,
  GF_GPU_DECODE_OFF = 1, /* every JPEG sample decoded by the CPU workers */
  /* Every JPEG sample the GPU takes, a folder's too (its files trusted:
   * see AUTO): the JPEG engines where there are some, else the GPU hybrid
   * backend (its device budget, 64 MiB + 4 MiB a sample of a batch,
   * reserved whichever backend opens). */
  GF_GPU_DECODE_ALL = 2,
} gf_gpu_decode;
/* gpu_decoders: how many nvJPEG decoders the loader opens (at once, on
 * threads of their own, at create), each used by one finalising worker at
 * a time, so that several batches decode at once. nvJPEG's hardware
 * backend spends most of a batch's call on the calling thread (a copy, a
 * kernel and an event an image: 8-10 ms a batch of 256 on an H200), so
 * one decoder bounds the engines at about 26,000 images/s whatever the
 * cores; two gave 40,000 (4 cores, decode alone; bench/RESULTS.md,
 * 2026-11-29). Beside a training step, which keeps the GPU busy, one or
 * two made no difference, so the default is one: each decoder takes
 * about half a second to open (they open at once, yet their making does
 * not overlap), makes the reservations the plan prints (gpu_decode auto:
 * 16 MiB device and 16 MiB pinned), and nvJPEG keeps its own engine
 * buffers beside them (11-25 MiB a decoder measured, planned at 32 MiB
 * in the plan's device total). Ask for 2 where the decode
 * is the bound (an evaluation pass, a small model). */
#define GF_GPU_DECODERS_MAX 8
#define GF_GPU_DECODERS_DEFAULT 1
/* How the loader's decode workers are scheduled. Either way they deliver
 * the same samples with the same values; only who gets a core first
 * changes. */
typedef enum gf_worker_sched {
  /* SCHED_BATCH (the default): a thread of the caller that wakes (the
   * consumer taking its batch, a training loop launching kernels) preempts
   * a decoding worker at once instead of waiting for its time slice. A
   * system that refuses the policy (a seccomp profile) leaves the workers
   * as any thread. */
  GF_WORKER_SCHED_BATCH = 0,
  GF_WORKER_SCHED_NORMAL = 1, /* as any thread of the process */
} gf_worker_sched;
#define GF_DEVICE_AUTO (-2)
#define GF_DEVICE_CPU (-1)
#define GF_LOADER_CONFIG_INIT                                                  \
  {                                                                            \
    sizeof(gf_loader_config), 256, NULL, NULL, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0,   \
        0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, GF_DEVICE_AUTO, 0, 0, {0}, 0, 0, 0, \
        0, 0, 0, 0, NULL, NULL, {                                              \
      0                                                                        \
    }                                                                          \
  }

/* A batch lent to the caller. Sample i's pixels start at data + offsets[i]
 * and have shape shapes[i] (HWC); when `uniform` is set every sample has
 * `shape` and the data is one dense [count, H, W, C] array. */
typedef struct gf_batch {
  uint64_t epoch;
  uint64_t index;          /* batch number within the epoch */
  uint32_t count;          /* samples in this batch (<= batch_size) */
  uint32_t uniform;
  gf_shape shape;          /* when uniform */
  void *data;              /* host memory, owned by the loader; NULL when
                              direct_count > 0 (see gf_cache_direct) or
                              samples were decoded on the GPU (see
                              gf_gpu_decode) */
  uint64_t data_bytes;     /* bytes of data in use */
  uint64_t stride;         /* bytes between consecutive samples' starts */
  const gf_shape *shapes;  /* [count] */
  const uint64_t *offsets; /* [count] byte offsets into data */
  const int64_t *labels;   /* [count] */
  const uint64_t *indices; /* [count] dataset sample indices */
  const uint8_t *filtered; /* [count] 1: that sample's bytes in `data` are
                              still gradient-filtered (a gradzstd sample in
                              GPU mode: the GPU undoes the filter while it
                              makes `output`); 2: its bytes are a loco
                              record the GPU decodes (data is then NULL);
                              0 everywhere in host mode */
  uint32_t skipped;        /* bad samples skipped while making this batch */
  uint32_t on_device;      /* 1: `output` is device memory */
  /* The transformed batch (see gf_transform): [count, C, H, W] (NCHW) or
   * [count, H, W, C] (NHWC) of out_dtype, dense. Device memory from the
   * loader's pool on a GPU (valid on the stream passed to next until
   * release), host memory in host mode. */
  void *output;
  uint64_t output_bytes;
  uint32_t out_dtype;      /* gf_out_dtype */
  uint32_t out_layout;     /* gf_layout */
  uint32_t out_height, out_width, out_channels;
  uint32_t direct_count;   /* samples copied to the device straight from
                              the pinned cache (see gf_cache_direct): when
                              not 0, data is NULL */
  const int64_t *labels_device; /* GPU mode: the batch's labels in device
                                   memory ([count] int64, in the slot's
                                   device block, copied with the batch on
                                   the copy stream; valid on the stream
                                   given to next until release, like
                                   `output`); NULL in host mode */
  uint64_t reserved[3];
} gf_batch;

/* The fields of a source of tar shards asked for in
 * gf_shards_config.fields, in the order given: their count (0 for any
 * other source, or none asked) and field i's name (NUL-terminated, owned
 * by the loader until destroy; NULL when i >= the count). Any thread. */
GF_API uint32_t gf_loader_field_count(const gf_loader *l);
GF_API const char *gf_loader_field_name(const gf_loader *l, uint32_t i);
/* Field `field` (gf_loader_field_name's numbering) of sample `sample` of a
 * lent batch b: *data its bytes (owned by the loader, valid until b is
 * released, not NUL-terminated) and *len their count. Returns 1 (present;
 * a field may be present and empty: *len 0), 0 (the sample has no such
 * member: *data NULL, *len 0) or -EINVAL (b NULL, sample >= b->count,
 * field >= the count of fields; with context). b must be a batch this
 * process's loader lent and has not taken back. The thread holding b. */
GF_API int gf_batch_field(const gf_batch *b, uint32_t sample, uint32_t field,
                          const void **data, uint64_t *len);

/* Creates a loader from cfg (NULL fields and zeros take the defaults) and
 * starts its workers, which begin on epoch 0 at once. *out is owned by the
 * caller and freed with gf_loader_destroy(). Every buffer is allocated
 * here, sized from the configuration. Returns 0, -EINVAL (bad config, with
 * the field named, or an unknown GPUFEED_LOG or GPUFEED_IO value), -ENOENT,
 * GF_E* from opening the source, -ENOMEM. */
GF_API int gf_loader_create(const gf_loader_config *cfg, gf_loader **out);

/* Takes the next batch of the current epoch, waiting for it if needed, and
 * lends it in *out until gf_loader_release(). At the end of an epoch it
 * returns GF_EEPOCHEND once; the call after that starts the next epoch
 * (unless gf_loader_set_epoch chose one). Returns 0, GF_EEPOCHEND, -EBUSY
 * (the caller already holds `prefetch` batches), or, under the fail policy,
 * the error of a bad sample with its context in gf_last_error() (the loader
 * stays usable: the next call continues after the failed batch). In GPU
 * mode create pins the first staging slot and a background thread the
 * others, once the first batch is submitted; if one cannot be pinned, one call returns that error
 * (GF_EDEVOOM, GF_ECUDA or -ENOMEM, naming the slot and its bytes) and
 * takes nothing, and the loader goes on with the slots pinned before it
 * (fewer batches in flight; -EBUSY once the caller holds them all).
 * Consumer thread. */
GF_API int gf_loader_next(gf_loader *l, gf_batch **out);

/* Gives a batch back; its buffer is reused for a later batch. Returns 0 or
 * -EINVAL (not a batch lent by this loader). Consumer thread. */
GF_API int gf_loader_release(gf_loader *l, gf_batch *b);

/* GPU mode, stream-ordered: as gf_loader_next, but instead of waiting on
 * the host for the batch's device output, makes `cuda_stream` (a
 * cudaStream_t of the loader's device) wait for it: work queued on that
 * stream after this call sees the batch. When the batch's device work is
 * already over (the GPU says so in a word of pinned memory that the call
 * reads), there is nothing to wait for and the call makes no CUDA call at
 * all. gf_loader_next is this call with a NULL stream (the host waits for
 * the output). In host mode the stream is ignored. Consumer thread. */
GF_API int gf_loader_next_on(gf_loader *l, void *cuda_stream, gf_batch **out);
/* As gf_loader_release, stream-ordered: the batch's device blocks are
 * reused only after `cuda_stream` has reached this point (an event is
 * recorded; the host never waits). With NULL the caller promises no device
 * work still reads the batch. On cudaStreamLegacy (0x1, the legacy
 * default stream, which is PyTorch's default stream) the call makes no
 * CUDA call: the loader's worker about to reuse the blocks records the
 * event on that stream first, at a later point of it (after all that was
 * queued there before this call). Any other stream's event is recorded
 * here, by the caller (a stream may be destroyed after the call; the
 * per-thread default stream is the calling thread's). Consumer thread. */
GF_API int gf_loader_release_on(gf_loader *l, gf_batch *b, void *cuda_stream);
/* Stream-ordered release over several streams: the batch's device blocks
 * are reused only after every one of streams[0..n) has reached this point
 * (an event recorded on each, the legacy default stream's by the loader
 * as in gf_loader_release_on; the host never waits). n == 0 is
 * gf_loader_release_on(l, b, NULL), and a NULL entry promises, as there,
 * that nothing on it still reads the batch; gf_loader_release_on is this
 * call with n = 1. streams may be NULL only when n == 0. Returns 0,
 * -EINVAL (n > GF_RELEASE_STREAMS_MAX, streams NULL with n > 0, or not a
 * batch this loader has lent; the batch stays lent), GF_ECUDA (recording
 * an event failed; the batch is given back all the same, as with
 * gf_loader_release_on). Host mode: the streams are ignored. Consumer
 * thread. */
#define GF_RELEASE_STREAMS_MAX 4
GF_API int gf_loader_release_streams(gf_loader *l, gf_batch *b,
                                     void *const *streams, uint32_t n);

/* As gf_loader_next_on, waiting at most timeout_ns (< 0: no limit) for the
 * batch to be ready; returns -ETIMEDOUT when it is not (nothing taken, no
 * error context recorded, and the call not counted in next_calls: call
 * again). A timeout of 0 polls. A language binding waits in short slices
 * with it, so that it can react to signals between them. Consumer
 * thread. */
GF_API int gf_loader_next_timed(gf_loader *l, void *cuda_stream,
                                int64_t timeout_ns, gf_batch **out);
/* GPU mode: makes `cuda_stream` (a cudaStream_t of the loader's device;
 * NULL: the host waits) wait for lent batch b's device output, as next_on
 * does for the stream given to it (an event wait, never a host sync with a
 * stream): for a batch used on more streams than the one it was taken on.
 * Host mode: returns 0 at once. Returns 0, -EINVAL (b is not a batch this
 * loader has lent) or GF_ECUDA. Consumer thread. */
GF_API int gf_loader_batch_wait_on(gf_loader *l, gf_batch *b,
                                   void *cuda_stream);

/* The loader's device pool (GPU mode; NULL in host mode): its batches live
 * in it, and the caller may allocate its own buffers from what the
 * reservation has beyond them (gf_device_pool_alloc, below). Owned by the
 * loader: valid until gf_loader_destroy. Any thread. */
typedef struct gf_device_pool gf_device_pool;
GF_API gf_device_pool *gf_loader_device_pool(gf_loader *l);

/* The memory plan of a loader made from cfg, as a printable table: pinned
 * staging slots, host-mode batch outputs, the slots' per-sample tables,
 * tar shards' field places (gf_shards_config.fields), read buffers, the
 * cache budget, the device slots and the device pool reservation, each
 * with its bytes and the totals. The sizes come from the
 * same function gf_loader_create sizes its buffers with, so they are the
 * bytes create allocates on this machine (threads and prefetch autotuned
 * as create does: cores and MemAvailable). It describes GPU mode unless
 * cfg->device is GF_DEVICE_CPU (under GF_DEVICE_AUTO without a GPU, create
 * runs in host mode: no device memory, and host batch outputs when the
 * transform changes something). The device side depends only on cfg and
 * the source, so it is the same on every machine. It opens the source to
 * size a sample's slot (a dataset's index, or every PNG header of a
 * folder) and allocates nothing else; under the table, "sizing" lines say
 * what a sample's place, its output and a worker's decode scratch take and
 * why.
 * Returns the length written (the table is cut to cap and NUL-terminated),
 * -ENOBUFS when cap is too small (the message gives the size needed), or
 * the errors of gf_loader_create's checks. Any thread. */
GF_API int gf_loader_plan(const gf_loader_config *cfg, char *buf, size_t cap);

/* Dataset metadata a training script needs before its first epoch (a
 * scheduler's step count, a progress bar, PyTorch's `classes` and
 * `class_to_idx`, a sample's file for a report). Any thread; they read
 * only what create fixed.
 *
 * This rank's samples and batches in a full epoch, with world, rank,
 * partition, batch_size and drop_last applied: exactly what one epoch
 * delivers (an epoch resumed from a state may deliver fewer; under the
 * skip policy skipped samples are replaced by the following ones, so only
 * the end of the epoch comes short by them: its last batch is shorter or
 * missing).
 * With drop_last, samples = batches * batch_size. Either pointer may be
 * NULL. Tar shards in streaming mode (GF_SHARDS_INDEX_STREAM): 0 and 0,
 * an epoch's length being known only at its end. Returns 0 or -EINVAL (no
 * loader). */
GF_API int gf_loader_epoch_size(gf_loader *l, uint64_t *samples,
                                uint64_t *batches);
/* The number of named classes: an image folder in the ImageFolder convention
 * has one class a sub-folder (label = its index in name order, as
 * torchvision's ImageFolder; an empty class folder keeps its label); a
 * dataset built from one stores the same names. A labels-file folder, and
 * a dataset built from one, name no class: 0 (their labels are the labels
 * file's integers). 0 for a NULL loader. */
GF_API uint32_t gf_loader_class_count(gf_loader *l);
/* Writes the name of class `label` into buf, NUL-terminated: the class
 * folder's name; with no named classes (class_count 0), the label as a
 * decimal integer ("7"), which is what a labels file says it is. Returns
 * the name's length in bytes, -ERANGE (label >= class_count when there are
 * named classes), -ENOBUFS (cap too small: the message gives the size
 * needed; buf holds the cut name, NUL-terminated, when cap > 0) or -EINVAL
 * (no loader or no buf). */
GF_API int gf_loader_class_name(gf_loader *l, uint32_t label, char *buf,
                                size_t cap);
/* Writes sample `index`'s source path into buf, NUL-terminated: for a PNG
 * folder the file's path relative to the folder (as batches' `indices`
 * number them: the listing order); for a built dataset the source name
 * its index stores (the path relative to the build's source folder; empty
 * when the build stored none); for tar shards the sample's key (its
 * members' path up to the first '.' of the file name). Returns the path's
 * length in bytes,
 * -ERANGE (index >= the sample count), -ENOBUFS (as above), -EINVAL, or
 * GF_ECORRUPT (a damaged index record, with context). */
GF_API int gf_loader_sample_path(gf_loader *l, uint64_t index, char *buf,
                                 size_t cap);

/* Starts epoch `epoch` from its beginning (work under way is cancelled),
 * also the epoch a state import resumed: the resumed rest is dropped.
 * Batches still held stay valid until released. Returns 0 or -EBUSY when
 * held batches leave no slot. Consumer thread. */
GF_API int gf_loader_set_epoch(gf_loader *l, uint64_t epoch);

/* Resume state: a plain fixed-size struct to store with a checkpoint (no
 * pointers; every field an integer). It says where the job stands in the
 * epoch order and identifies that order: the dataset (its sample count and
 * a fingerprint of its content) and every config field the order depends
 * on, so a state is never applied to another dataset or order. The
 * semantics, elastic resume included, are in docs/RESUME.md.
 *
 * Export after any batch. Import into a loader over the same dataset with
 * the same order config (threads, prefetch, cache and device may differ):
 * - same world size: its next batch is the one the uninterrupted run would
 *   have delivered next (exact, skipped samples included);
 * - another world size (elastic): every rank of the new job imports the
 *   same state; the rest of the epoch delivers each sample the old job had
 *   not delivered exactly once across the new ranks (no padding; with
 *   GF_PARTITION_PAD rank batch counts may then differ by one; with
 *   GF_PARTITION_DROP the rest is truncated to a multiple of the world
 *   size), and later epochs are those a fresh job of the new size
 *   delivers. It needs all ranks of the old job to have exported after the
 *   same number of batches of the epoch (as DDP's lockstep gives).
 *
 * "Position" is global: the epoch order's positions [0, position) are
 * delivered. The fingerprint hashes, for a built dataset, every index
 * entry's stored length, CRC32C, label, codec and shape; for an image folder,
 * every listed file's path relative to the folder and its label (a file
 * rewritten in place under the same name is not noticed). */
#define GF_LOADER_STATE_VERSION 3
typedef struct gf_loader_state {
  uint32_t struct_size;   /* sizeof(gf_loader_state) (128; version 2's,
                             which import reads too, was 120: the same
                             fields up to rank, then check) */
  uint32_t version;       /* GF_LOADER_STATE_VERSION */
  /* Where the job stands. */
  uint64_t epoch;         /* the epoch under way */
  uint64_t position;      /* global: positions [0, position) of the epoch
                             order were delivered by every rank; samples
                             when the epoch is complete */
  uint64_t start;         /* global position the epoch's shares started at:
                             0, or the position an elastic import resumed
                             the epoch from */
  uint64_t batch;         /* batches the exporting rank delivered since the
                             epoch (re)started at `start` */
  uint64_t rank_position; /* positions of the exporting rank's share
                             consumed (skipped samples included) */
  /* What the order depends on. */
  uint64_t samples;       /* samples in the dataset */
  uint64_t fingerprint;   /* the dataset's content (above) */
  uint64_t seed;
  uint64_t batch_size;
  uint64_t block_size;    /* resolved; 0 unless order is GF_ORDER_BLOCK */
  uint32_t window_blocks; /* resolved; 0 unless order is GF_ORDER_BLOCK */
  uint32_t order;         /* gf_order */
  uint32_t partition;     /* gf_partition */
  uint32_t drop_last;     /* 0 or 1 */
  uint32_t world;         /* world size of the exporting job */
  uint32_t rank;          /* the exporting rank */
  uint32_t order_world;   /* the world the epoch's order deals windows to
                             (GF_ORDER_BLOCK): world, or the world of the
                             job that began an epoch resumed elastically */
  uint32_t reserved0;     /* zero */
  /* h = 0x9E3779B97F4A7C15; for each 8-byte word w of the struct's bytes
   * before this field, read little-endian: h = splitmix64_finalizer(h ^ w)
   * (sampler.h, section 1): catches a damaged or hand-edited state. */
  uint64_t check;
} gf_loader_state;
/* Fills *st (all of it). The dataset's fingerprint is computed at the
 * loader's first export or import, then kept (a pass over the index or
 * listing: about 0.1 s a million samples, so create stays as fast).
 * Returns 0. Consumer thread. */
GF_API int gf_loader_state_export(gf_loader *l, gf_loader_state *st);
/* Checks *st (untrusted: any bytes are refused or applied safely) and
 * moves the loader to it. Returns 0, GF_ESTATE naming the first field
 * that differs with the state's value and this loader's (the loader is
 * unchanged then), or -EBUSY (batches still held). Consumer thread. */
GF_API int gf_loader_state_import(gf_loader *l, const gf_loader_state *st);

/* Per-stage statistics since create. Any thread. */
typedef struct gf_stage_stats {
  uint64_t samples;
  uint64_t bytes;
  uint64_t busy_ns;  /* time the stage's threads spent working */
  uint64_t wait_ns;  /* time they waited for input */
} gf_stage_stats;
typedef struct gf_loader_stats {
  uint32_t struct_size;
  uint32_t threads;
  gf_stage_stats read;    /* bytes read from storage */
  gf_stage_stats decode;  /* bytes decoded */
  gf_stage_stats cache;   /* copies out of the cache */
  uint64_t cache_hits, cache_misses, cache_bytes, cache_budget;
  uint64_t batches;       /* delivered */
  uint64_t consumer_wait_ns; /* time next() waited for data */
  uint64_t next_calls;    /* calls of next() */
  uint64_t ready_sum;     /* batches ready at each next() call, summed:
                             ready_sum / next_calls is the mean queue
                             occupancy the consumer found */
  uint64_t slots;         /* batch slots (prefetch) */
  uint64_t skipped;       /* bad samples skipped (skip policy); tar
                             shards in streaming mode: those the stream
                             dropped are counted once their epoch is
                             over */
  char last_skip_reason[512];
  char io_backend[16];    /* "io_uring" or "pread" */
  char io_fallback_reason[256]; /* why io_uring was not used, or "" */
  int32_t device;         /* the GPU in use, or GF_DEVICE_CPU (host mode) */
  uint32_t io_in_flight;  /* reads a worker keeps in flight: min(the io
                             queue depth, batch_size / (2 x threads)) */
  char host_mode_reason[256]; /* why GF_DEVICE_AUTO chose host mode */
  uint64_t device_pool_in_use, device_pool_peak, device_pool_reserved;
  char tuning[256];       /* how threads and prefetch were chosen: the
                             autotune rule's result and reason when the
                             config left them 0, else "as configured" */
  uint64_t trace_recorded; /* trace events held (<= trace_events) */
  uint64_t trace_dropped;  /* trace events lost because the buffer was
                              full */
  uint64_t cache_direct;   /* cached samples copied to the device straight
                              from the pinned cache (no CPU copy) */
  uint64_t cache_pinned_bytes; /* cache memory pinned for that */
  uint64_t cache_pin_failures; /* 64 MiB chunks that could not be pinned */
  uint64_t reserved[5];
  /* Version 2 (version 1's struct_size is offsetof(gf_loader_stats,
   * jpeg_decoded)). JPEG samples the CPU workers decoded: */
  uint64_t jpeg_decoded[4];     /* by DCT scale: [0] full scale, [1] 1/2,
                                   [2] 1/4, [3] 1/8 (windows and whole
                                   images alike; see gf_jpeg_scale) */
  uint64_t jpeg_pixels_decoded; /* the pixels those decodes produced */
  uint64_t jpeg_pixels_full;    /* the pixels of the same images at full
                                   size: decoded / full is the fraction of
                                   the pixels that had to be decoded */
  uint64_t reserved2[6];
  /* Version 3 (version 2's struct_size is offsetof(gf_loader_stats,
   * jpeg_gpu_backend)): JPEG decoded on the GPU (gf_gpu_decode). */
  char jpeg_gpu_backend[16];    /* nvJPEG's backend, "hardware" or
                                   "gpu_hybrid"; "" when JPEG is not
                                   decoded on the GPU */
  char jpeg_gpu_why[256];       /* when jpeg_gpu_backend is "": why (host
                                   mode, gpu_decode off, nvJPEG not found,
                                   no JPEG engines under auto...) */
  uint64_t jpeg_gpu_decoded;    /* JPEG samples nvJPEG decoded */
  uint64_t jpeg_cpu_decoded;    /* JPEG samples the CPU decoded (the sum of
                                   jpeg_decoded) */
  uint64_t jpeg_gpu_refused;    /* of those, sent to the GPU and refused
                                   or failed there: decoded again on the
                                   CPU */
  uint64_t jpeg_gpu_device_budget, jpeg_gpu_device_peak; /* nvJPEG's own */
  uint64_t jpeg_gpu_pinned_budget, jpeg_gpu_pinned_peak; /* reservations */
  uint64_t reserved3[4];
  /* Version 4 (version 3's struct_size is offsetof(gf_loader_stats,
   * remote)): a source behind a server (gf_remote_config), read ahead by
   * the fetch stage; all 0 for a local source. */
  char remote[96];             /* the storage and its server ("http
                                  127.0.0.1:8080", never a secret), with
                                  ", TLS NOT VERIFIED" when
                                  tls_no_verify; "" for a local source */
  uint64_t fetch_requests;     /* ranged reads done (retries inside one
                                  not counted again) */
  uint64_t fetch_bytes;        /* their bytes */
  uint64_t fetch_failed;       /* reads that failed after their retries */
  uint64_t fetch_retries;      /* tries beyond the first, all requests */
  uint64_t fetch_block_reads;  /* reads that held several adjacent samples
                                  (block order) */
  uint64_t fetch_cached;       /* samples not read: the decoded-sample
                                  cache held them */
  uint64_t fetch_wait_ns;      /* workers' time waiting for reads */
  uint32_t fetch_inflight;     /* reads in flight now */
  uint32_t fetch_inflight_max; /* the most at once */
  uint64_t fetch_held_bytes;   /* read-ahead bytes held now */
  uint64_t fetch_held_max;     /* the most at once */
  uint64_t fetch_budget;       /* the read-ahead budget (the plan's) */
  uint64_t disk_cache_hits;    /* the disk cache tier (cache_dir): reads
                                  served from it */
  uint64_t disk_cache_misses;  /* reads it did not hold */
  uint64_t disk_cache_bytes_read, disk_cache_bytes_written;
  uint64_t disk_cache_evictions;
  /* A remote dataset's index, read in pages as its records are used
   * (docs/FORMAT.md): reads, their bytes, 4 KiB pages in memory. */
  uint64_t index_reads, index_bytes, index_pages;
  uint64_t fetch_unprepared; /* samples whose records could not be read
                                ahead or whose shards could not be opened
                                (a failed read): their workers read them
                                again, and report */
  /* gpu_decode auto, JPEG files without a checksum (a folder's): the
   * verdicts of CPU decodes that read such a file whole before the JPEG
   * engines may take it (then its CRC32C vouches): good, and bad (judged
   * again when met again; the decode reports them). */
  uint64_t jpeg_checked, jpeg_check_failed;
} gf_loader_stats;
/* Fills *st (set st->struct_size first). Returns 0 or -EINVAL. Any
 * thread. */
GF_API int gf_loader_stats_get(gf_loader *l, gf_loader_stats *st);

/* Writes the loader's trace (config trace_events) to `path` as a Chrome
 * trace, Trace Event JSON ({"traceEvents":[...]}, "X" spans with ts/dur in
 * microseconds since create), which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open: one track per worker, one for the consumer, one
 * for the GPU copy stream in GPU mode. It holds the events recorded so far
 * (spans still under way are left out); the loader keeps recording, and a
 * later call writes the file again with everything until then. Returns 0,
 * -EINVAL (tracing is off: nothing was recorded), or a negated errno from
 * creating or writing the file, with the path in gf_last_error().
 * Consumer thread. */
GF_API int gf_loader_trace_write(gf_loader *l, const char *path);

/* Stops the workers (work under way is abandoned, not waited for beyond the
 * sample in hand), frees every buffer, closes every file. Batches still
 * lent become invalid. NULL accepted. Consumer thread, once. */
GF_API void gf_loader_destroy(gf_loader *l);

/* ------------------------------------------------------------------------ */
/* Device memory pool                                                       */
/* ------------------------------------------------------------------------ */
/*
 * A pool of device memory reserved up front and sub-allocated best-fit with
 * coalescing: one cudaMalloc of exactly the configured bytes (or a fraction
 * of the device's free memory), or, in growth mode, chunks added on demand
 * up to a hard limit. It never reserves more than it was told, and destroy
 * gives every byte back.
 *
 * Stream-ordered reuse. A block freed with a stream S is not handed out
 * again until S has passed the free: the pool records an event on S. An
 * allocation takes free memory first, then blocks whose free the device
 * has passed; only when nothing else fits does it reuse a block whose
 * event is still pending, and then:
 *   - with a stream T, T is made to wait for that event
 *     (cudaStreamWaitEvent; the call itself does not block, as with
 *     cudaMallocAsync): the block is safe to use on T, and on other streams
 *     only after T's work;
 *   - with a NULL stream, the call blocks until the event has completed
 *     (cudaEventSynchronize): the block is safe everywhere.
 * In growth mode a new chunk is reserved only after that. Every stream
 * passed must belong to the pool's device; the NULL stream is never used
 * for device work.
 *
 * Without CUDA (or on a machine without a usable device) create returns
 * GF_ENODEVICE.
 *
 * Threading contract: every function may be called from any thread at any
 * time, except destroy, which must be the last call on the pool (a mutex
 * serialises the others; a NULL-stream alloc that must wait for the device
 * holds it meanwhile).
 */

typedef struct gf_device_pool gf_device_pool;

#define GF_DEVICE_POOL_CONFIG_VERSION 1
typedef struct gf_device_pool_config {
  uint32_t struct_size;   /* sizeof(gf_device_pool_config) */
  int32_t device;         /* CUDA device ordinal (>= 0) */
  uint64_t bytes;         /* the reservation made at create; 0: `fraction`
                             of the device's free memory at create */
  float fraction;         /* in (0, 1], used when bytes is 0 */
  uint32_t alignment;     /* every block's address and size are multiples
                             of it: a power of two; 0: 256 */
  uint32_t growth;        /* 0: the reservation made at create is all there
                             is; 1: grow in chunks, up to limit */
  uint32_t reserved0;     /* must be zero */
  uint64_t growth_chunk;  /* growth: reserve multiples of this (a request
                             larger than one chunk gets a chunk of its own,
                             rounded up); 0: 64 MiB */
  uint64_t limit;         /* hard cap on the bytes reserved, in both modes;
                             0: the reservation made at create. A fraction
                             that gives more is cut to it; explicit bytes
                             above it are refused. */
  uint64_t reserved[4];   /* must be zero */
} gf_device_pool_config;
#define GF_DEVICE_POOL_CONFIG_INIT \
  {sizeof(gf_device_pool_config), 0, 0, 0.0f, 0, 0, 0, 0, 0, {0, 0, 0, 0}}

/* Creates a pool on cfg->device and reserves its memory: *out is owned by
 * the caller and freed with gf_device_pool_destroy(). cfg may not be NULL
 * (a pool needs a size): set bytes, or fraction, or growth with a limit.
 * Returns 0; -EINVAL (a bad field, named); GF_ENODEVICE (built without
 * CUDA, no device, or no such device); GF_EDEVOOM (bytes beyond the
 * device's free memory, both named, or cudaMalloc out of memory); GF_ECUDA
 * (another CUDA error, its string in the message); -ENOMEM. Any thread. */
GF_API int gf_device_pool_create(const gf_device_pool_config *cfg,
                                 gf_device_pool **out);

/* Allocates `bytes` (> 0, rounded up to the alignment) and writes the
 * device pointer to *ptr; the block stays the caller's until
 * gf_device_pool_free. cuda_stream (a cudaStream_t, or NULL) is the stream
 * that will use the block; it only matters when the block must be a
 * recently freed one (see "Stream-ordered reuse" above). Returns 0;
 * GF_EDEVOOM when nothing fits, the message giving the bytes asked (after
 * alignment), the free bytes in total, the largest free block, the
 * reserved bytes and the limit, and whether fragmentation (enough free, but
 * no block fits) or the limit (not enough free, and no chunk can be added)
 * is to blame; GF_ECUDA; -EINVAL. Any thread. */
GF_API int gf_device_pool_alloc(gf_device_pool *pool, uint64_t bytes,
                                void *cuda_stream, void **ptr);

/* Gives back the block at ptr. With a stream (a cudaStream_t), the block
 * is reused only once that stream has passed this point: work queued on it
 * may still use the block. With NULL, the caller guarantees that no device
 * work still uses it, and it is free at once. Returns 0; -EINVAL (ptr is
 * not a block of this pool, or was already freed: the message says which);
 * GF_ECUDA (the event could not be recorded: the block stays allocated, so
 * the caller may synchronise and free it with NULL). Any thread. */
GF_API int gf_device_pool_free(gf_device_pool *pool, void *ptr,
                               void *cuda_stream);

typedef struct gf_device_pool_stats {
  uint32_t struct_size;   /* set by the caller: sizeof(gf_device_pool_stats) */
  int32_t device;
  uint64_t in_use;        /* bytes of live blocks (after alignment); a block
                             freed on a stream counts until the pool has
                             seen the stream pass the free */
  uint64_t peak_in_use;   /* most in_use since create or reset_peak */
  uint64_t reserved_bytes;/* device memory held (cudaMalloc'd) */
  uint64_t limit;         /* the cap on reserved_bytes */
  uint64_t free_bytes;    /* usable bytes not in use */
  uint64_t largest_free;  /* the largest block one request can get */
  double fragmentation;   /* 1 - largest_free / free_bytes (0 when nothing
                             is free): the share of free memory that one
                             request cannot use */
  uint64_t live_allocs;   /* live blocks (as in_use counts them) */
  uint64_t total_allocs;  /* successful allocs since create */
  uint64_t total_frees;   /* blocks returned to the free memory */
  uint64_t pending_frees; /* freed on a stream, not yet passed */
  uint64_t stream_waits;  /* allocs that reused a pending block (a
                             stream wait or a host wait) */
  uint64_t regions;       /* cudaMalloc'd chunks held */
  uint32_t alignment;
  uint32_t growth;
  uint64_t reserved[8];
} gf_device_pool_stats;

/* Fills *st (set st->struct_size first: a published size, see the
 * conventions above; only that many bytes are written). Also takes back blocks whose stream has passed
 * their free. Returns 0, -EINVAL, GF_ECUDA. Any thread. */
GF_API int gf_device_pool_stats_get(gf_device_pool *pool,
                                    gf_device_pool_stats *st);
/* Makes peak_in_use equal to in_use now. Returns 0 or -EINVAL. Any
 * thread. */
GF_API int gf_device_pool_reset_peak(gf_device_pool *pool);

/* Waits for the streams of pending frees, frees every chunk (cudaFree) and
 * the pool. Blocks still allocated become invalid. NULL accepted. The last
 * call on the pool. */
GF_API void gf_device_pool_destroy(gf_device_pool *pool);

#ifdef __cplusplus
}
#endif
#endif /* GPUFEED_H */
