/* The two backends of the reader, between the files of lib/io only:
 * reader.c (the dispatcher) calls them; they call only the slot semantics
 * (io/slot.h), never the reader. uring.c is the only file that includes
 * liburing.h. */
#ifndef GF_IO_BACKEND_H
#define GF_IO_BACKEND_H

#include "io/slot.h"

/* uring.c */
typedef struct gf_io_uring gf_io_uring;
/* Creates a ring of `depth` entries. On failure returns -errno and writes
 * the reason (function, error name, likely cause) into why. */
int gf_io_uring_create(unsigned depth, gf_io_uring **out, char *why,
                       size_t why_len);
/* Waits for the operations in the kernel, then frees. NULL accepted. */
void gf_io_uring_destroy(gf_io_uring *u);
/* Operations that can still be queued before the ring is full. */
unsigned gf_io_uring_space(const gf_io_uring *u);
/* Queues the next operation of slot `id` (does not submit). Returns false
 * when the ring has no free entry. */
bool gf_io_uring_prep(gf_io_uring *u, uint32_t id, gf_io_slot *s);
/* Submits everything queued with one system call. Returns 0 or -errno;
 * -EAGAIN/-EBUSY/-EINTR are not errors (retried at the next call). */
int gf_io_uring_submit(gf_io_uring *u, uint64_t *submit_calls);
/* Collects up to max completions (ids[], res[]), waiting for one when
 * `wait` and none is ready. The uring_cqe fault site applies to each
 * result. Returns the count or -errno. */
int gf_io_uring_reap(gf_io_uring *u, bool wait, uint32_t *ids, int64_t *res,
                     unsigned max);
int gf_io_uring_register(gf_io_uring *u, const struct iovec *iov, unsigned n);
int gf_io_uring_unregister(gf_io_uring *u);

/* pread.c */
typedef struct gf_io_pool gf_io_pool;
/* Starts `threads` threads that run the slots pushed to them. Queues hold
 * up to nslots ids. Returns 0, -ENOMEM or -errno from pthread_create. */
int gf_io_pool_create(gf_io_slot *slots, uint32_t nslots, unsigned threads,
                      gf_io_pool **out);
/* Lets each thread finish the read it is running, drops the queued ones,
 * joins the threads and frees. NULL accepted. */
void gf_io_pool_destroy(gf_io_pool *p);
/* Queues slot ids for the threads (the caller keeps the count bounded). */
void gf_io_pool_push(gf_io_pool *p, const uint32_t *ids, unsigned n);
/* Takes up to max completed slot ids, blocking until at least min are
 * there (the caller never asks for more than are outstanding). */
unsigned gf_io_pool_reap(gf_io_pool *p, uint32_t *ids, unsigned max,
                         unsigned min);

/* A storage's engine (gf_storage_ops.engine): the reads of a storage
 * without descriptors (HTTP, S3), for one reader. The reader keeps the
 * slots and their ids; the engine runs their reads and hands the
 * completed ids back. */
struct gf_io_engine_ops {
  const char *name; /* the reader's backend name: "http", ... */
  /* An engine for one reader over storage st: its reads are slots[id]
   * (nslots of them at most outstanding), at most `depth` on the wire at
   * once, the rest queued inside it. On failure returns a negative code
   * and writes the reason into why. */
  int (*create)(gf_storage *st, gf_io_slot *slots, uint32_t nslots,
                unsigned depth, void **out, char *why, size_t why_len);
  /* Stops every transfer (no slot buffer is written after it returns) and
   * frees. NULL accepted. */
  void (*destroy)(void *e);
  /* Starts the reads of slots ids[0..n) (each slot's req set, done 0).
   * Returns 0, or a negative code (with context) for the engine as a
   * whole, which the reader then treats as a ring error. */
  int (*push)(void *e, const uint32_t *ids, unsigned n);
  /* Up to max completed slots' ids, blocking until at least min are there
   * (the reader never asks for more than are outstanding). Each completed
   * slot has its result set: bytes read (req.length; fewer only with
   * GF_READ_EOF_OK at the object's end) or a negative code with its why.
   * Returns the count, or a negative code for the engine as a whole. */
  int (*reap)(void *e, uint32_t *ids, unsigned max, unsigned min);
  /* Makes a reap blocked in another thread return now (with what it has,
   * perhaps nothing): the reader's gf_reader_wake. Any thread. NULL: the
   * engine cannot be woken (its reader's owner then polls). */
  void (*wake)(void *e);
};

#endif /* GF_IO_BACKEND_H */
