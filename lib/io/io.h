/* The loader's reader: many reads at once, each by (object, offset,
 * length) of a storage's object (io/storage.h), straight into the caller's
 * buffers. It uses io_uring when the kernel
 * allows it and otherwise a small pread thread pool, with the same
 * semantics for both:
 *
 * - A read completes with exactly `length` bytes, or with an error for that
 *   read alone: -errno from the kernel (-EBADF, -EIO, ...), or
 *   GF_ETRUNCATED when the file ends first (unless GF_READ_EOF_OK).
 * - Short counts are continued for the rest transparently; -EAGAIN and
 *   -EINTR are retried (GF_IO_MAX_RETRIES in a row, then that error is the
 *   result).
 * - Backend choice: opts->backend (gf_io_backend in gpufeed.h); when it is
 *   GF_IO_AUTO, the environment variable GPUFEED_IO=uring|pread|auto
 *   decides. A forced io_uring that the kernel refuses (seccomp,
 *   kernel.io_uring_disabled, ENOSYS, RLIMIT_MEMLOCK) fails create with the
 *   reason; auto falls back to pread, records the reason
 *   (gf_reader_fallback_reason) and logs it once per process at info level.
 *
 * Threads: a reader is NOT thread-safe; use one per thread (create it on
 * any thread, then call it from one thread at a time). Any number of
 * readers may exist. uring.c is the only file that includes liburing.h.
 *
 * Files: reader.c implements these calls and drives one of two backends
 * (io/backend.h: uring.c, pread.c); both step their reads with slot.c
 * (io/slot.h). Calls go down only: reader -> backend -> slot.
 *
 * Every read passes through the fault layer (common/fault.h): uring_setup
 * at ring creation, uring_cqe on each completion's result, pread on each
 * pread call of the fallback, and reader_wait on each gf_reader_wait call
 * of either backend (the call fails as a whole, as a ring error does). */
#ifndef GF_IO_H
#define GF_IO_H

#include "common/common.h"
#include "io/storage.h"

#include <sys/uio.h> /* struct iovec */

/* Consecutive -EAGAIN/-EINTR results retried for one read before that error
 * becomes its result. */
#define GF_IO_MAX_RETRIES 16

/* gf_read_req.flags: reaching end of file completes the read with the bytes
 * read so far (result < length) instead of GF_ETRUNCATED. For O_DIRECT
 * reads rounded up to the alignment past the end of a file. */
#define GF_READ_EOF_OK 1u

typedef struct gf_read_req {
  const gf_object *obj; /* a GF_STORAGE_FD storage's object (opened with
                           GF_OBJ_DIRECT when opts.direct); it must stay
                           open until the read is returned */
  uint32_t flags;     /* GF_READ_* */
  uint64_t offset;    /* file offset */
  uint64_t length;    /* bytes to read into buf (0 completes at once) */
  void *buf;          /* caller-owned; must stay valid until the read is
                         returned by gf_reader_wait() or the reader is
                         destroyed */
  uint64_t user_data; /* returned with the completion */
} gf_read_req;

typedef struct gf_read_done {
  uint64_t user_data;
  /* bytes read (== length; less only with GF_READ_EOF_OK at end of file),
   * or a negative code: -errno, GF_ETRUNCATED (end of file first) or
   * GF_EINTERNAL (the kernel reported more bytes than asked) */
  int64_t result;
  /* file offset where the read stopped: offset + bytes read before the
   * error or the end of file (offset + length on success) */
  uint64_t stop_offset;
  /* A failed read's own words where its storage has them (a remote
   * storage: the object, the range, the server's answer, the retries),
   * else "": valid until the next gf_reader_submit. Never a secret. */
  const char *why;
} gf_read_done;

#define GF_READER_OPTS_VERSION 1
typedef struct gf_reader_opts {
  uint32_t struct_size;
  int32_t backend;        /* gf_io_backend: GF_IO_AUTO (GPUFEED_IO may
                             choose), GF_IO_URING or GF_IO_PREAD */
  uint32_t queue_depth;   /* io_uring reads in the kernel at once (0: 64,
                             at most 4096) */
  uint32_t max_pending;   /* reads accepted by submit and not yet returned
                             by wait (0: 4 x queue_depth, at most 1 << 20);
                             all state is allocated for this many at create */
  uint32_t pread_threads; /* pread backend threads (0: 4, at most 64) */
  uint32_t direct;        /* nonzero: reads go to O_DIRECT fds; submit
                             checks buf, offset and length alignment */
  uint32_t direct_align;  /* alignment for direct (0: 4096; a power of two
                             from 512 to 1 MiB) */
  uint32_t reserved[5];   /* must be zero */
  gf_storage *storage;    /* where the objects read lie: NULL or a
                             GF_STORAGE_FD storage (io_uring or pread, as
                             backend says), else a storage with an engine
                             (gf_storage_ops.engine), which then runs the
                             reads (backend and direct must be left at
                             their defaults) */
} gf_reader_opts;
/* clang-format off */
#define GF_READER_OPTS_INIT \
  {sizeof(gf_reader_opts), GF_IO_AUTO, 0, 0, 0, 0, 0, {0}, NULL}
/* clang-format on */

/* Counters since create (for tests, benchmarks and logs). */
typedef struct gf_reader_stats {
  uint64_t accepted;     /* reads accepted by gf_reader_submit */
  uint64_t completed;    /* reads returned by gf_reader_wait */
  uint64_t failed;       /* of which with a negative result */
  uint64_t ops;          /* read operations issued to the kernel (SQEs or
                            pread calls; an engine's: requests sent to the
                            server), continuations and retries included */
  uint64_t fixed_ops;    /* of which IORING_OP_READ_FIXED */
  uint64_t submit_calls; /* io_uring_submit calls (0 for pread) */
  uint64_t continued;    /* short counts continued for the rest */
  uint64_t retried;      /* -EAGAIN/-EINTR results retried (an engine's:
                            failed requests tried again) */
} gf_reader_stats;

typedef struct gf_reader gf_reader;

/* Creates a reader (opts NULL: defaults) and returns it in *out; the caller
 * destroys it with gf_reader_destroy(). Allocates everything it will use
 * (max_pending request slots, the ring or the threads). Returns 0, -EINVAL
 * (bad options, or a GPUFEED_IO value other than uring, io_uring, pread,
 * auto or empty while backend is GF_IO_AUTO), -ENOMEM, or with a forced
 * io_uring the error that ring creation gave (-EPERM, -ENOSYS, -ENOMEM,
 * ...), with context. Any thread. */
int gf_reader_create(const gf_reader_opts *opts, gf_reader **out);

/* Waits for the reads still in the kernel or in a pread call to finish
 * (their buffers are no longer written after this returns), drops the rest
 * and frees the reader. NULL accepted. */
void gf_reader_destroy(gf_reader *r);

/* Accepts n reads, all or none: returns 0, or -EINVAL (a request with a
 * NULL buffer, an offset + length past INT64_MAX, or misaligned for
 * direct) or -EBUSY (more than max_pending would be outstanding), with
 * context, and then queues nothing. io_uring: fills as many SQEs as the
 * ring has room for and submits them with one system call; the rest wait
 * in the reader (bounded by max_pending) and go to the ring as earlier
 * reads complete, during gf_reader_wait(). pread: queues them for the
 * threads. A submit error of the ring itself (not of one read) is returned
 * as -errno; the reader should then be destroyed. */
int gf_reader_submit(gf_reader *r, const gf_read_req *reqs, unsigned n);

/* Returns up to `max` completed reads in out[], blocking until at least
 * `min` are there, or fewer when fewer are outstanding (so it never blocks
 * forever; min 0 polls). Returns the count (>= 0), or -EINVAL (out NULL,
 * max 0, min > max), or a ring error as -errno (io_uring; the pread pool
 * has none but the reader_wait fault site's). After a ring error every
 * read not yet returned has an unknown outcome and may still be writing
 * its buffer: destroy the reader (which waits for them) before reusing
 * those buffers or closing their fds, and use a new reader. Completions
 * come in any order; match them by user_data. */
int gf_reader_wait(gf_reader *r, gf_read_done *out, unsigned max, unsigned min);

/* Makes a gf_reader_wait blocked in another thread return at once (with
 * the completions it has, perhaps none), where the reader's backend can
 * be woken: returns true then, false when it cannot (io_uring, pread, an
 * engine without wake), and the caller must not block in gf_reader_wait
 * expecting to be woken. The one call that may be made from any thread
 * while another uses the reader. */
bool gf_reader_wake(gf_reader *r);
/* Whether gf_reader_wake can wake this reader. Any thread. */
bool gf_reader_wakeable(const gf_reader *r);

/* Reads accepted and not yet returned by gf_reader_wait(). */
unsigned gf_reader_inflight(const gf_reader *r);

/* "io_uring" or "pread". */
const char *gf_reader_backend(const gf_reader *r);
/* Why auto chose pread ("" when it did not fall back), e.g.
 * "io_uring_queue_init: Operation not permitted (EPERM): blocked by seccomp
 * or kernel.io_uring_disabled; using pread". Owned by the reader. */
const char *gf_reader_fallback_reason(const gf_reader *r);

/* Copies the counters into *out. */
void gf_reader_get_stats(const gf_reader *r, gf_reader_stats *out);

/* Registers buffer regions with the kernel (io_uring fixed buffers): reads
 * whose whole [buf, buf + length) lies inside one region then use
 * IORING_OP_READ_FIXED, which saves pinning the pages on every read. The
 * regions must stay valid until gf_reader_unregister() or destroy. At most
 * 1024 regions of at most 1 GiB each. With the pread backend it only checks
 * the arguments and returns 0, so callers need not care which backend runs.
 * Returns 0, -EINVAL, -EBUSY (already registered, or reads outstanding),
 * or the kernel's error (-ENOMEM when RLIMIT_MEMLOCK is too low, ...) with
 * context; on error the reader works on without fixed buffers. */
int gf_reader_register(gf_reader *r, const struct iovec *iov, unsigned n);
/* Forgets the registered regions. Returns 0 or -EBUSY (reads outstanding). */
int gf_reader_unregister(gf_reader *r);

#endif /* GF_IO_H */
