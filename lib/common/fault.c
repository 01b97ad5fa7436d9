/* Test-only fault injection (see fault.h; compiled only with GPUFEED_TESTING)
 * and the system call wrappers that pass through it (in every build). */
#include "common/fault.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GPUFEED_TESTING

/* Bit s set: site s is armed. GF_FAULT_ENV_PENDING_ set: GPUFEED_FAULT has
 * not been read yet, so the first check of any site takes the slow path. */
atomic_uint gf_fault_mask_ = GF_FAULT_ENV_PENDING_;
/* One mask bit a site, below the pending bit. */
_Static_assert(GF_FAULT_SITE_COUNT_ < 31,
               "gf_fault_mask_ has no bit left for another site");

typedef struct fault_state {
  atomic_ullong calls;
  atomic_ullong fired;
  atomic_ullong nth;
  atomic_int err;
  atomic_uint flags;
} fault_state;

static fault_state sites[GF_FAULT_SITE_COUNT_];
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* Indexed by site, so a new site without a name shows up as NULL in
 * test_fault's round trip. */
static const char *const site_names[GF_FAULT_SITE_COUNT_] = {
    [GF_FAULT_OPEN] = "open",
    [GF_FAULT_READ] = "read",
    [GF_FAULT_PREAD] = "pread",
    [GF_FAULT_WRITE] = "write",
    [GF_FAULT_FSYNC] = "fsync",
    [GF_FAULT_RENAME] = "rename",
    [GF_FAULT_URING_SETUP] = "uring_setup",
    [GF_FAULT_URING_CQE] = "uring_cqe",
    [GF_FAULT_CUDA_MALLOC] = "cuda_malloc",
    [GF_FAULT_CUDA_HOST_ALLOC] = "cuda_host_alloc",
    [GF_FAULT_CUDA_HOST_REGISTER] = "cuda_host_register",
    [GF_FAULT_CUDA_MEMCPY] = "cuda_memcpy",
    [GF_FAULT_CUDA_STAGE_REGISTER] = "cuda_stage_register",
    [GF_FAULT_URING_REGISTER] = "uring_register",
    [GF_FAULT_NVJPEG_BATCH] = "nvjpeg_batch",
    [GF_FAULT_NVJPEG_IMAGE] = "nvjpeg_image",
    [GF_FAULT_READER_WAIT] = "reader_wait",
};

/* Sites whose calls move a byte count, where GF_FAULT_SHORT makes sense. */
static bool site_moves_bytes(int site) {
  return site == GF_FAULT_READ || site == GF_FAULT_PREAD ||
         site == GF_FAULT_WRITE || site == GF_FAULT_URING_CQE;
}

const char *gf_fault_site_name(int site) {
  if (site < 0 || site >= GF_FAULT_SITE_COUNT_)
    return NULL;
  return site_names[site];
}

int gf_fault_site_parse(const char *name) {
  for (int s = 0; name && s < GF_FAULT_SITE_COUNT_; s++)
    if (site_names[s] && strcmp(name, site_names[s]) == 0)
      return s;
  return -EINVAL;
}

typedef struct fault_entry {
  int site;
  uint64_t nth;
  int err;
  unsigned flags;
} fault_entry;

static int check_entry(const fault_entry *e) {
  if (e->site < 0 || e->site >= GF_FAULT_SITE_COUNT_)
    return -EINVAL;
  if (e->flags & ~(GF_FAULT_STICKY | GF_FAULT_SHORT))
    return -EINVAL;
  if ((e->flags & GF_FAULT_SHORT) && !site_moves_bytes(e->site))
    return -EINVAL;
  if (!(e->flags & GF_FAULT_SHORT) && e->nth && e->err >= 0)
    return -EINVAL;
  return 0;
}

static void arm_entry(const fault_entry *e) {
  fault_state *st = &sites[e->site];
  /* Settings first, then the counters, then the mask bit that lets checks
   * reach them (seq_cst stores keep that order for other threads). */
  atomic_store(&st->nth, e->nth);
  atomic_store(&st->err, e->err);
  atomic_store(&st->flags, e->flags);
  atomic_store(&st->calls, 0);
  atomic_store(&st->fired, 0);
  atomic_fetch_or(&gf_fault_mask_, 1u << e->site);
}

/* Parses an error name: an errno name, a GF_E* name or a decimal errno. */
static bool parse_err(const char *s, int *out) {
  if (!*s)
    return false;
  char *end;
  long v = strtol(s, &end, 10);
  if (*end == '\0') {
    if (v <= 0 || v >= 4096)
      return false;
    *out = (int)-v;
    return true;
  }
  for (int e = 1; e < 4096; e++) {
    const char *n = strerrorname_np(e);
    if (n && strcmp(n, s) == 0) {
      *out = -e;
      return true;
    }
  }
#define GF_FAULT_ERRNAME_(name, value, msg)                                    \
  if (strcmp(s, "GF_E" #name) == 0) {                                          \
    *out = (value);                                                            \
    return true;                                                               \
  }
  GF_ERRNO_MAP(GF_FAULT_ERRNAME_)
#undef GF_FAULT_ERRNAME_
  return false;
}

/* Parses one "site:N:what[:sticky]" entry of `len` characters. */
static int parse_entry(const char *s, size_t len, fault_entry *e) {
  char buf[128];
  if (len == 0 || len >= sizeof buf)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%.*s' is empty or too long (expected "
                   "SITE:N:ERROR[:sticky])",
                   (int)(len < 200 ? len : 200), s);
  memcpy(buf, s, len);
  buf[len] = '\0';
  char *field[5] = {0};
  int nf = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ":", &save); t && nf < 5;
       t = strtok_r(NULL, ":", &save))
    field[nf++] = t;
  char copy[128];
  memcpy(copy, s, len);
  copy[len] = '\0';
  if (nf < 3 || nf > 4)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%s' has %d fields (expected "
                   "SITE:N:ERROR[:sticky])",
                   copy, nf);
  *e = (fault_entry){0, 0, 0, 0};
  e->site = gf_fault_site_parse(field[0]);
  if (e->site < 0)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%s': unknown site '%s' (expected open, "
                   "read, pread, write, fsync, rename, uring_setup, uring_cqe, "
                   "cuda_malloc, cuda_host_alloc, cuda_host_register, "
                   "cuda_memcpy, cuda_stage_register or uring_register)",
                   copy, field[0]);
  char *end;
  errno = 0;
  unsigned long long n = strtoull(field[1], &end, 10);
  if (*end || end == field[1] || errno || field[1][0] == '-')
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%s': call number '%s' is not a "
                   "non-negative integer",
                   copy, field[1]);
  e->nth = n;
  if (strcmp(field[2], "short") == 0) {
    e->flags |= GF_FAULT_SHORT;
  } else if (!parse_err(field[2], &e->err)) {
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%s': '%s' is not an errno name (EIO, "
                   "ENOSPC, ...), a GF_E* name, an errno number or 'short'",
                   copy, field[2]);
  }
  if (nf == 4) {
    if (strcmp(field[3], "sticky") != 0)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "fault spec entry '%s': unknown option '%s' (expected "
                     "'sticky')",
                     copy, field[3]);
    e->flags |= GF_FAULT_STICKY;
  }
  if ((e->flags & GF_FAULT_SHORT) && !site_moves_bytes(e->site))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec entry '%s': site '%s' moves no bytes, so it "
                   "cannot be made short",
                   copy, field[0]);
  return 0;
}

/* Checks and arms every entry of `spec`, all or nothing. */
static int parse_spec(const char *spec) {
  if (!spec)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "fault spec is NULL");
  fault_entry entries[GF_FAULT_SITE_COUNT_ * 2];
  size_t n = 0;
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len) {
      if (n == sizeof entries / sizeof entries[0])
        return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "fault spec '%.200s' has more than %zu entries", spec,
                       sizeof entries / sizeof entries[0]);
      int rc = parse_entry(p, len, &entries[n]);
      if (rc < 0)
        return rc;
      n++;
    }
    p += len;
    if (*p == ',')
      p++;
  }
  for (size_t i = 0; i < n; i++)
    arm_entry(&entries[i]);
  return 0;
}

static void env_init(void) {
  const char *spec = getenv("GPUFEED_FAULT");
  if (spec && spec[0]) {
    int rc = parse_spec(spec);
    if (rc < 0)
      gf_log(GF_LOG_ERROR, "GPUFEED_FAULT ignored: %s",
             gf_last_error()->message);
    else
      gf_log(GF_LOG_INFO, "fault injection armed from GPUFEED_FAULT=%s", spec);
  }
  atomic_fetch_and(&gf_fault_mask_, ~GF_FAULT_ENV_PENDING_);
}

static void ensure_env(void) { pthread_once(&env_once, env_init); }

int gf_fault_hit_(gf_fault_site site, size_t *len) {
  ensure_env();
  if ((unsigned)site >= GF_FAULT_SITE_COUNT_ ||
      !(atomic_load(&gf_fault_mask_) & (1u << site)))
    return 0;
  fault_state *st = &sites[site];
  uint64_t call = atomic_fetch_add(&st->calls, 1) + 1;
  uint64_t nth = atomic_load(&st->nth);
  if (nth == 0)
    return 0;
  unsigned flags = atomic_load(&st->flags);
  bool fire = (flags & GF_FAULT_STICKY) ? call >= nth : call == nth;
  if (!fire)
    return 0;
  if (flags & GF_FAULT_SHORT) {
    if (!len || *len < 2)
      return 0;
    *len /= 2;
    atomic_fetch_add(&st->fired, 1);
    return 0;
  }
  atomic_fetch_add(&st->fired, 1);
  return atomic_load(&st->err);
}

int gf_fault_arm(gf_fault_site site, uint64_t nth, int err, unsigned flags) {
  ensure_env();
  fault_entry e = {(int)site, nth, err, flags};
  if (check_entry(&e) < 0)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_fault_arm(site %d, nth %llu, err %d, flags 0x%x): "
                   "expected a known site, a negative error unless "
                   "GF_FAULT_SHORT, known flags, and SHORT only on read, "
                   "pread, write or uring_cqe",
                   (int)site, (unsigned long long)nth, err, flags);
  arm_entry(&e);
  return 0;
}

void gf_fault_disarm(gf_fault_site site) {
  ensure_env();
  if ((unsigned)site < GF_FAULT_SITE_COUNT_)
    atomic_fetch_and(&gf_fault_mask_, ~(1u << site));
}

void gf_fault_disarm_all(void) {
  ensure_env();
  atomic_fetch_and(&gf_fault_mask_, GF_FAULT_ENV_PENDING_);
}

uint64_t gf_fault_calls(gf_fault_site site) {
  ensure_env();
  if ((unsigned)site >= GF_FAULT_SITE_COUNT_)
    return 0;
  return atomic_load(&sites[site].calls);
}

uint64_t gf_fault_fired(gf_fault_site site) {
  ensure_env();
  if ((unsigned)site >= GF_FAULT_SITE_COUNT_)
    return 0;
  return atomic_load(&sites[site].fired);
}

int gf_fault_parse(const char *spec) {
  ensure_env();
  return parse_spec(spec);
}

#endif /* GPUFEED_TESTING */

/* ---- system call wrappers ------------------------------------------------ */

/* Returns `err` through errno as well, for callers used to -1/errno. */
static int fail_errno(int err) {
  errno = -err;
  return err;
}

int gf_sys_open(const char *path, int flags, mode_t mode) {
  int err = gf_fault_check(GF_FAULT_OPEN);
  if (err)
    return fail_errno(err);
  int fd = open(path, flags, mode);
  return fd < 0 ? -errno : fd;
}

ssize_t gf_sys_read(int fd, void *buf, size_t len) {
  int err = gf_fault_check_len(GF_FAULT_READ, &len);
  if (err)
    return fail_errno(err);
  ssize_t n = read(fd, buf, len);
  return n < 0 ? -errno : n;
}

ssize_t gf_sys_pread(int fd, void *buf, size_t len, off_t off) {
  int err = gf_fault_check_len(GF_FAULT_PREAD, &len);
  if (err)
    return fail_errno(err);
  ssize_t n = pread(fd, buf, len, off);
  return n < 0 ? -errno : n;
}

ssize_t gf_sys_write(int fd, const void *buf, size_t len) {
  int err = gf_fault_check_len(GF_FAULT_WRITE, &len);
  if (err)
    return fail_errno(err);
  ssize_t n = write(fd, buf, len);
  return n < 0 ? -errno : n;
}

ssize_t gf_sys_pwrite(int fd, const void *buf, size_t len, off_t off) {
  int err = gf_fault_check_len(GF_FAULT_WRITE, &len);
  if (err)
    return fail_errno(err);
  ssize_t n = pwrite(fd, buf, len, off);
  return n < 0 ? -errno : n;
}

int gf_sys_fsync(int fd) {
  int err = gf_fault_check(GF_FAULT_FSYNC);
  if (err)
    return fail_errno(err);
  return fsync(fd) < 0 ? -errno : 0;
}

int gf_sys_fdatasync(int fd) {
  int err = gf_fault_check(GF_FAULT_FSYNC);
  if (err)
    return fail_errno(err);
  return fdatasync(fd) < 0 ? -errno : 0;
}

int gf_sys_rename(const char *from, const char *to) {
  int err = gf_fault_check(GF_FAULT_RENAME);
  if (err)
    return fail_errno(err);
  return rename(from, to) < 0 ? -errno : 0;
}

int gf_sys_renameat2(int fromdir, const char *from, int todir, const char *to,
                     unsigned flags) {
  int err = gf_fault_check(GF_FAULT_RENAME);
  if (err)
    return fail_errno(err);
  return renameat2(fromdir, from, todir, to, flags) < 0 ? -errno : 0;
}

/* Consecutive EINTR/EAGAIN results tolerated before giving up: a signal
 * storm or a file that keeps saying "try again" must not hang the caller. */
#define GF_SYS_MAX_RETRIES 16

ssize_t gf_sys_pread_full(int fd, void *buf, size_t len, off_t off) {
  size_t done = 0;
  int retries = 0;
  while (done < len) {
    ssize_t n =
        gf_sys_pread(fd, (char *)buf + done, len - done, off + (off_t)done);
    if (n == -EINTR || n == -EAGAIN) {
      if (++retries > GF_SYS_MAX_RETRIES)
        return n;
      if (n == -EAGAIN)
        sched_yield();
      continue;
    }
    if (n < 0)
      return n;
    if (n == 0)
      break;
    retries = 0;
    done += (size_t)n;
  }
  return (ssize_t)done;
}

int gf_sys_write_full(int fd, const void *buf, size_t len) {
  size_t done = 0;
  int retries = 0;
  while (done < len) {
    ssize_t n = gf_sys_write(fd, (const char *)buf + done, len - done);
    if (n == -EINTR || n == -EAGAIN) {
      if (++retries > GF_SYS_MAX_RETRIES)
        return (int)n;
      if (n == -EAGAIN)
        sched_yield();
      continue;
    }
    if (n < 0)
      return (int)n;
    if (n == 0)
      return -EIO;
    retries = 0;
    done += (size_t)n;
  }
  return 0;
}
