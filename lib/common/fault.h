/* Fault injection, FOR TESTS ONLY: makes the Nth call of a chosen system
 * call site fail with a chosen error (or come back short), so tests can
 * drive every error path that real disks and kernels produce only rarely.
 *
 * It exists only in test builds: the sources compiled with GPUFEED_TESTING
 * defined (lib/CMakeLists.txt's gpufeed_testing library, which the tests and
 * their CLI link). What ships (libgpufeed.so and .a, the gpufeed CLI, the
 * Python extension) is compiled without it: there gf_fault_check() and
 * gf_fault_check_len() are the constant 0, the gf_sys_* wrappers call
 * straight through, and nothing below reads GPUFEED_FAULT, so no setting of
 * a user's environment can make the library fail on purpose.
 *
 * In a test build a disarmed check costs one relaxed atomic load and a
 * predictable branch. Nothing arms a site unless a test calls
 * gf_fault_arm()/gf_fault_parse() or the GPUFEED_FAULT environment
 * variable is set.
 *
 * GPUFEED_FAULT (test builds) is read once, at the first use of this layer,
 * and holds comma-separated entries SITE:N:WHAT[:sticky], e.g.
 *     GPUFEED_FAULT=write:3:ENOSPC,uring_setup:1:EPERM,pread:2:short
 * SITE is a name from gf_fault_site_name(), N the 1-based call to hit (0:
 * only count calls), WHAT an errno name (EIO, ENOSPC, EAGAIN, EINTR, EPERM,
 * ENOSYS, ENOMEM, ...), a gpufeed code name (GF_ECUDA, ...), a decimal errno
 * value, or `short`. `sticky` makes every call from the Nth on fail. A bad
 * entry is reported with gf_log() at error level and ignored.
 *
 * Threads: every function here may be called from any thread. Counting is
 * atomic: when several threads hit an armed site, exactly one of them gets
 * call N. Arming while other threads hit the same site is safe but they may
 * see the old or the new setting for a moment; arm before starting them. */
#ifndef GF_FAULT_H
#define GF_FAULT_H

#include "common/common.h"

#include <stdatomic.h>
#include <sys/types.h> /* ssize_t, off_t, mode_t */

typedef enum gf_fault_site {
  GF_FAULT_OPEN = 0,
  GF_FAULT_READ,
  GF_FAULT_PREAD,
  GF_FAULT_WRITE, /* write and pwrite */
  GF_FAULT_FSYNC, /* fsync and fdatasync */
  GF_FAULT_RENAME,
  GF_FAULT_URING_SETUP, /* io_uring ring creation */
  GF_FAULT_URING_CQE,   /* the result of one io_uring completion */
  GF_FAULT_CUDA_MALLOC,
  GF_FAULT_CUDA_HOST_ALLOC,
  GF_FAULT_CUDA_HOST_REGISTER,
  GF_FAULT_CUDA_MEMCPY,
  GF_FAULT_CUDA_STAGE_REGISTER, /* pinning a GPU staging slot (slot 0 at
                                   create, the others in the background) */
  GF_FAULT_URING_REGISTER,      /* registering a read buffer with io_uring
                                   (a worker, before its first read) */
  GF_FAULT_NVJPEG_BATCH,        /* one nvjpegDecodeBatched call over several
                                   images failing as a whole (the error is
                                   reported as nvJPEG's execution failure) */
  GF_FAULT_NVJPEG_IMAGE,        /* one image of a gf_nvjpeg_decode call
                                   refused after its header check, as an
                                   image nvJPEG does not take (status
                                   GF_EUNSUPPORTED: its caller decodes it
                                   on the CPU) */
  GF_FAULT_READER_WAIT,         /* one gf_reader_wait call failing as a
                                   whole, as when the io_uring ring itself
                                   errs (both backends): the reads still
                                   outstanding are left where they are */
  GF_FAULT_SITE_COUNT_
} gf_fault_site;

#ifdef GPUFEED_TESTING

/* Flags for gf_fault_arm(). */
#define GF_FAULT_STICKY 1u /* fail call N and every call after it */
#define GF_FAULT_SHORT                                                         \
  2u /* instead of an error, shorten the count: only for                       \
        sites that move bytes (read, pread, write,                             \
        uring_cqe); the count becomes len / 2, and a                           \
        length below 2 is left alone (not counted as                           \
        fired: a count of 0 would mean end of file) */

/* Arms `site`: resets its call and fired counters to 0, then the `nth` call
 * from now on (1-based) returns `err` (a negative errno or GF_E* code), or
 * is shortened with GF_FAULT_SHORT (err is then ignored). nth 0 arms the
 * site to count calls only (see gf_fault_calls()). Returns 0, or -EINVAL
 * (bad site, err not negative, unknown flag, SHORT on a site that moves no
 * bytes) with context. */
int gf_fault_arm(gf_fault_site site, uint64_t nth, int err, unsigned flags);
/* Stops injecting and counting at one site or at all of them (including the
 * sites armed from GPUFEED_FAULT). The counters keep their values. */
void gf_fault_disarm(gf_fault_site site);
void gf_fault_disarm_all(void);
/* Calls that reached `site` since it was last armed (counted only while it
 * is armed), and faults injected there since then. */
uint64_t gf_fault_calls(gf_fault_site site);
uint64_t gf_fault_fired(gf_fault_site site);

/* Arms the sites listed in `spec` (the GPUFEED_FAULT syntax above). All
 * entries are checked before any is armed. Returns 0 or -EINVAL with the
 * bad entry named in the context. */
int gf_fault_parse(const char *spec);
/* "open", "read", ..., "uring_cqe", "cuda_memcpy", ...; NULL when out of
 * range. */
const char *gf_fault_site_name(int site);
/* The site named `name`, or -EINVAL. */
int gf_fault_site_parse(const char *name);

/* Internals of the checks below. */
#define GF_FAULT_ENV_PENDING_ (1u << 31)
extern atomic_uint gf_fault_mask_;
int gf_fault_hit_(gf_fault_site site, size_t *len);

/* Call at a site that moves no bytes, just before the real call: returns 0
 * (go ahead) or the error to return instead of making the call. */
static inline int gf_fault_check(gf_fault_site site) {
  unsigned m = atomic_load_explicit(&gf_fault_mask_, memory_order_relaxed);
  if (GF_LIKELY(!(m & ((1u << site) | GF_FAULT_ENV_PENDING_))))
    return 0;
  return gf_fault_hit_(site, NULL);
}

/* Call at a site that moves *len bytes: returns 0 and maybe a smaller *len
 * (make the call with that count), or the error to return instead. For a
 * completion site, *len is the result that came back. */
static inline int gf_fault_check_len(gf_fault_site site, size_t *len) {
  unsigned m = atomic_load_explicit(&gf_fault_mask_, memory_order_relaxed);
  if (GF_LIKELY(!(m & ((1u << site) | GF_FAULT_ENV_PENDING_))))
    return 0;
  return gf_fault_hit_(site, len);
}

#else /* !GPUFEED_TESTING: what ships */

/* No site is ever armed: each check is the constant 0, and the compiler
 * drops the injected-error branch after it. always_inline: an unoptimised
 * (Debug) build keeps no local copy named gf_fault_*, so the symbol table
 * of what ships holds none (tests/check_shipped.sh looks). */
__attribute__((always_inline)) static inline int
gf_fault_check(gf_fault_site site) {
  (void)site;
  return 0;
}
__attribute__((always_inline)) static inline int
gf_fault_check_len(gf_fault_site site, size_t *len) {
  (void)site;
  (void)len;
  return 0;
}

#endif /* GPUFEED_TESTING */

/* System call wrappers that pass through the fault sites (in every build;
 * only a test build has faults to inject). Each makes ONE call (no loop, no
 * EINTR retry) and returns its result, or -errno on failure (errno is also
 * set), so callers can switch over them one by one. An injected fault
 * returns the injected error without making the call. */
int gf_sys_open(const char *path, int flags, mode_t mode);
ssize_t gf_sys_read(int fd, void *buf, size_t len);
ssize_t gf_sys_pread(int fd, void *buf, size_t len, off_t off);
ssize_t gf_sys_write(int fd, const void *buf, size_t len);
ssize_t gf_sys_pwrite(int fd, const void *buf, size_t len, off_t off);
int gf_sys_fsync(int fd);
int gf_sys_fdatasync(int fd);
int gf_sys_rename(const char *from, const char *to);
/* renameat2(2) (RENAME_NOREPLACE, RENAME_EXCHANGE, ...), counted under the
 * rename site. Where the kernel or file system lacks it, the result is
 * -EINVAL or -ENOSYS as from the real call, so callers keep their fallback
 * to rename(). */
int gf_sys_renameat2(int fromdir, const char *from, int todir, const char *to,
                     unsigned flags);

/* Loops over gf_sys_pread until `len` bytes are read, retrying EINTR and
 * EAGAIN a bounded number of times. Returns the bytes read (fewer than len
 * only at end of file) or -errno. */
ssize_t gf_sys_pread_full(int fd, void *buf, size_t len, off_t off);
/* Loops over gf_sys_write until all of `len` is written (EINTR retried,
 * bounded). Returns 0 or -errno (a write making no progress is -EIO). */
int gf_sys_write_full(int fd, const void *buf, size_t len);

#endif /* GF_FAULT_H */
