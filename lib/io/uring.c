/* The io_uring backend: one ring per reader. The only file of the project
 * that includes liburing.h. */
#include "io/backend.h"

#include "common/fault.h"

#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_io_uring {
  struct io_uring ring;
  unsigned depth;
  unsigned inflight; /* operations queued or in the kernel, not yet reaped */
  struct iovec *regions;
  unsigned nregions;
};

/* The likely cause behind a failed ring setup, for the fallback reason. */
static const char *setup_hint(int err) {
  switch (-err) {
  case EPERM:
    return "blocked by seccomp or kernel.io_uring_disabled";
  case ENOSYS:
    return "this kernel has no io_uring (older than 5.1, or built without "
           "it, or a seccomp filter hides it)";
  case ENOMEM:
    return "not enough lockable memory for the ring (kernels before 5.12 "
           "count it against RLIMIT_MEMLOCK: raise ulimit -l)";
  case EINVAL:
    return "the kernel refused the ring parameters";
  case EMFILE:
  case ENFILE:
    return "out of file descriptors";
  default:
    return "";
  }
}

int gf_io_uring_create(unsigned depth, gf_io_uring **out, char *why,
                       size_t why_len) {
  *out = NULL;
  gf_io_uring *u = calloc(1, sizeof *u);
  if (!u) {
    snprintf(why, why_len, "cannot allocate the io_uring state");
    return -ENOMEM;
  }
  u->depth = depth;
  int rc = gf_fault_check(GF_FAULT_URING_SETUP);
  if (!rc)
    rc = io_uring_queue_init(depth, &u->ring, 0);
  if (rc < 0) {
    const char *hint = setup_hint(rc);
    snprintf(why, why_len, "io_uring_queue_init: %s (%s)%s%s", gf_strerror(rc),
             gf_err_name(rc), hint[0] ? ": " : "", hint);
    free(u);
    return rc;
  }
  /* IORING_OP_READ (plain buffer, no iovec) arrived in 5.6 with the probe
   * itself, so a missing probe means the opcode is missing too. */
  struct io_uring_probe *probe = io_uring_get_probe_ring(&u->ring);
  bool can_read = probe && io_uring_opcode_supported(probe, IORING_OP_READ) &&
                  io_uring_opcode_supported(probe, IORING_OP_READ_FIXED);
  io_uring_free_probe(probe);
  if (!can_read) {
    snprintf(why, why_len,
             "io_uring: this kernel lacks IORING_OP_READ (Linux 5.6 or later "
             "needed)");
    io_uring_queue_exit(&u->ring);
    free(u);
    return -ENOSYS;
  }
  *out = u;
  return 0;
}

/* Discards the completions of the operations still in the kernel; their
 * buffers are written until then. */
static void drain(gf_io_uring *u) {
  while (u->inflight) {
    int rc = 0;
    if (!io_uring_cq_ready(&u->ring))
      rc = io_uring_submit_and_wait(&u->ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      gf_log(GF_LOG_ERROR, "io_uring: %u reads left in flight at destroy: %s",
             u->inflight, gf_strerror(rc));
      return;
    }
    struct io_uring_cqe *cqes[64];
    unsigned got = io_uring_peek_batch_cqe(&u->ring, cqes, 64);
    io_uring_cq_advance(&u->ring, got);
    u->inflight -= got < u->inflight ? got : u->inflight;
  }
}

void gf_io_uring_destroy(gf_io_uring *u) {
  if (!u)
    return;
  drain(u);
  io_uring_queue_exit(&u->ring); /* also drops registered buffers */
  free(u->regions);
  free(u);
}

unsigned gf_io_uring_space(const gf_io_uring *u) {
  return u->depth - u->inflight;
}

/* The registered region holding all of [buf, buf + len), or -1. */
static int region_of(const gf_io_uring *u, const void *buf, uint32_t len) {
  uintptr_t b = (uintptr_t)buf;
  for (unsigned i = 0; i < u->nregions; i++) {
    uintptr_t base = (uintptr_t)u->regions[i].iov_base;
    if (b >= base && b - base <= u->regions[i].iov_len &&
        len <= u->regions[i].iov_len - (b - base))
      return (int)i;
  }
  return -1;
}

bool gf_io_uring_prep(gf_io_uring *u, uint32_t id, gf_io_slot *s) {
  if (u->inflight >= u->depth)
    return false;
  struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
  if (!sqe)
    return false;
  uint64_t off;
  void *buf;
  uint32_t len;
  gf_io_slot_next(s, &off, &buf, &len);
  int region = region_of(u, buf, len);
  if (region >= 0) {
    io_uring_prep_read_fixed(sqe, s->req.obj->fd, buf, len, off, region);
    s->fixed_ops++;
  } else {
    io_uring_prep_read(sqe, s->req.obj->fd, buf, len, off);
  }
  io_uring_sqe_set_data64(sqe, id);
  s->ops++;
  u->inflight++;
  return true;
}

int gf_io_uring_submit(gf_io_uring *u, uint64_t *submit_calls) {
  int rc = io_uring_submit(&u->ring);
  (*submit_calls)++;
  /* Entries the kernel did not take stay in the ring and go with the next
   * io_uring_enter (gf_io_uring_reap waits with submit_and_wait). */
  if (rc >= 0 || rc == -EAGAIN || rc == -EBUSY || rc == -EINTR)
    return 0;
  return rc;
}

int gf_io_uring_reap(gf_io_uring *u, bool wait, uint32_t *ids, int64_t *res,
                     unsigned max) {
  if (!u->inflight)
    return 0;
  if (wait && !io_uring_cq_ready(&u->ring)) {
    int rc = io_uring_submit_and_wait(&u->ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME)
      return rc;
  }
  unsigned n = 0;
  while (n < max) {
    struct io_uring_cqe *cqes[64];
    unsigned want = max - n < 64 ? max - n : 64;
    unsigned got = io_uring_peek_batch_cqe(&u->ring, cqes, want);
    if (!got)
      break;
    for (unsigned i = 0; i < got; i++) {
      int64_t r = cqes[i]->res;
      size_t len = r > 0 ? (size_t)r : 0;
      int err = gf_fault_check_len(GF_FAULT_URING_CQE, &len);
      if (err)
        r = err;
      else if (r > 0)
        r = (int64_t)len;
      ids[n] = (uint32_t)io_uring_cqe_get_data64(cqes[i]);
      res[n] = r;
      n++;
    }
    io_uring_cq_advance(&u->ring, got);
    u->inflight -= got;
  }
  return (int)n;
}

int gf_io_uring_register(gf_io_uring *u, const struct iovec *iov, unsigned n) {
  struct iovec *copy = malloc(n * sizeof *copy);
  if (!copy)
    return -ENOMEM;
  memcpy(copy, iov, n * sizeof *copy);
  int rc = gf_fault_check(GF_FAULT_URING_REGISTER);
  if (!rc)
    rc = io_uring_register_buffers(&u->ring, iov, n);
  if (rc < 0) {
    free(copy);
    return rc;
  }
  free(u->regions);
  u->regions = copy;
  u->nregions = n;
  return 0;
}

int gf_io_uring_unregister(gf_io_uring *u) {
  if (!u->nregions)
    return 0;
  int rc = io_uring_unregister_buffers(&u->ring);
  /* Whatever the kernel says, stop using READ_FIXED. */
  free(u->regions);
  u->regions = NULL;
  u->nregions = 0;
  return rc < 0 ? rc : 0;
}
