/* The disk cache tier's folder (io/dcache.h): the lock and the usage
 * counter, temporary files and their renames, eviction, claims, and the
 * leftovers of processes that died. */
#include "io/dcache.h"

#include "common/fault.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h> /* kill(pid, 0): whether a claim's owner lives */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h> /* flock */
#include <sys/stat.h>
#include <unistd.h>

#define USAGE_MAGIC "gfcusage"
#define USAGE_BYTES 32

struct gf_dcache_dir {
  char root[4096];
  int state_fd;
  pthread_mutex_t mu; /* this process's threads (a flock is per open file) */
  uint64_t limit;
  int pid;
  uint64_t start; /* this process's start time (/proc), 0 when unknown */
  atomic_uint seq;
  _Atomic uint64_t evictions, evicted_bytes;
};

/* A process's start time in clock ticks since boot (/proc/PID/stat field
 * 22), which tells a live owner from another process that took its pid;
 * 0 when it cannot be read. */
static uint64_t proc_start(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold spaces */
  if (!p)
    return 0;
  /* Fields 3 .. 22 follow: state, then 18 numbers, then starttime. */
  p++;
  for (int field = 2; field < 21 && p; field++)
    p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Whether process pid (started at start, 0: unknown) lives. Processes
 * sharing a cache folder must share a pid namespace (one node's training
 * processes do). */
static bool alive(int pid, uint64_t start) {
  if (pid <= 0)
    return false;
  if (kill(pid, 0) < 0 && errno == ESRCH)
    return false;
  if (start) {
    uint64_t now = proc_start(pid);
    if (now && now != start)
      return false;
  }
  return true;
}

static int mkdir_p(const char *path) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return -ENAMETOOLONG;
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || !*p) {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return -errno;
      *p = c;
      if (!c)
        break;
    }
  }
  struct stat sb;
  if (stat(path, &sb) < 0)
    return -errno;
  return S_ISDIR(sb.st_mode) ? 0 : -ENOTDIR;
}

/* ---- the lock and the counter ------------------------------------------- */

static void lock(gf_dcache_dir *d) {
  pthread_mutex_lock(&d->mu);
  while (flock(d->state_fd, LOCK_EX) < 0 && errno == EINTR)
    ;
}

static void unlock(gf_dcache_dir *d) {
  flock(d->state_fd, LOCK_UN);
  pthread_mutex_unlock(&d->mu);
}

/* The counter, or false when the state file holds none (new, or torn). */
static bool usage_read(gf_dcache_dir *d, uint64_t *bytes) {
  uint8_t b[USAGE_BYTES];
  if (gf_sys_pread_full(d->state_fd, b, sizeof b, 0) != (ssize_t)sizeof b ||
      memcmp(b, USAGE_MAGIC, 8) != 0 || gf_crc32c(0, b, 24) != gf_le32(b + 24))
    return false;
  *bytes = gf_le64(b + 8);
  return true;
}

static int usage_write(gf_dcache_dir *d, uint64_t bytes) {
  uint8_t b[USAGE_BYTES] = {0};
  memcpy(b, USAGE_MAGIC, 8);
  gf_put64(b + 8, bytes);
  gf_put32(b + 24, gf_crc32c(0, b, 24));
  ssize_t n = gf_sys_pwrite(d->state_fd, b, sizeof b, 0);
  return n < 0 ? (int)n : n == (ssize_t)sizeof b ? 0 : -EIO;
}

/* ---- the walk: eviction and leftovers ----------------------------------- */

typedef struct victim {
  uint64_t hash, off, len;
  int64_t mtime_ns;
} victim;

static int cmp_victim(const void *a, const void *b) {
  const victim *x = a, *y = b;
  return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

static bool hexname(const char *s, size_t n, uint64_t *v) {
  if (strlen(s) != n)
    return false;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9')
      x = x << 4 | (uint64_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      x = x << 4 | (uint64_t)(c - 'a' + 10);
    else
      return false;
  }
  *v = x;
  return true;
}

/* A claim's owner, from its content ("pid start\n"). */
static bool claim_owner(int dfd, const char *name, int *pid, uint64_t *start,
                        int64_t *mtime_ns) {
  *pid = 0;
  *start = 0;
  *mtime_ns = 0;
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  char buf[64];
  ssize_t n = gf_sys_pread(fd, buf, sizeof buf - 1, 0);
  struct stat sb;
  if (fstat(fd, &sb) == 0)
    *mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
  close(fd);
  if (n > 0) {
    buf[n] = '\0';
    unsigned long long st = 0;
    if (sscanf(buf, "%d %llu", pid, &st) >= 1)
      *start = st;
  }
  return true;
}

static int64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether claim `name` in dfd is stale: its owner dead, or unreadable for
 * longer than a process needs to write its pid. */
static bool claim_stale(int dfd, const char *name) {
  int pid;
  uint64_t start;
  int64_t mt;
  if (!claim_owner(dfd, name, &pid, &start, &mt))
    return false; /* gone: nothing to remove */
  if (pid > 0)
    return !alive(pid, start);
  return wall_ns() - mt > (int64_t)GF_DCACHE_UNREADABLE_STALE_NS;
}

/* Walks the folder: counts every entry and the temporary files of live
 * writers, removes leftovers of dead ones (temporary files, claims) and
 * empty object folders, then evicts the least recently used entries (by
 * mtime) until the count is at most target. Returns the count. Under the
 * lock. Files removed by others meanwhile are skipped. */
static uint64_t walk(gf_dcache_dir *d, uint64_t target) {
  uint64_t total = 0;
  victim *v = NULL;
  size_t nv = 0, cap = 0;
  DIR *top = opendir(d->root);
  if (!top)
    return 0;
  struct dirent *be;
  while ((be = readdir(top))) {
    uint64_t bucket;
    if (!hexname(be->d_name, 2, &bucket))
      continue;
    char bpath[4200];
    gf_dcache_fmt(bpath, sizeof bpath, "%s/%s", d->root, be->d_name);
    DIR *bd = opendir(bpath);
    if (!bd)
      continue;
    struct dirent *oe;
    while ((oe = readdir(bd))) {
      uint64_t hash;
      if (!hexname(oe->d_name, 16, &hash))
        continue;
      int dfd = openat(dirfd(bd), oe->d_name,
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (dfd < 0)
        continue;
      DIR *od = fdopendir(dfd);
      if (!od) {
        close(dfd);
        continue;
      }
      size_t kept = 0;
      struct dirent *fe;
      while ((fe = readdir(od))) {
        if (fe->d_name[0] == '.')
          continue;
        uint64_t off, len, start;
        int pid;
        int kind = gf_dcache_name_parse(fe->d_name, &off, &len, &pid, &start);
        struct stat sb;
        if (kind == GF_DCACHE_NAME_ENTRY) {
          if (fstatat(dfd, fe->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
          if (nv == cap) {
            size_t nc = cap ? 2 * cap : 1024;
            victim *nvv = realloc(v, nc * sizeof *v);
            if (!nvv) {
              total += gf_dcache_charge(len); /* counted, not evictable */
              kept++;
              continue;
            }
            v = nvv;
            cap = nc;
          }
          v[nv++] = (victim){hash, off, len,
                             (int64_t)sb.st_mtim.tv_sec * 1000000000 +
                                 sb.st_mtim.tv_nsec};
          total += gf_dcache_charge(len);
          kept++;
        } else if (kind == GF_DCACHE_NAME_TMP) {
          if (pid == d->pid || alive(pid, start)) {
            total += gf_dcache_charge(len); /* a write in flight */
            kept++;
          } else {
            unlinkat(dfd, fe->d_name, 0);
          }
        } else if (kind == GF_DCACHE_NAME_CLAIM) {
          if (claim_stale(dfd, fe->d_name))
            unlinkat(dfd, fe->d_name, 0);
          else
            kept++;
        } else {
          kept++; /* not ours: left alone */
        }
      }
      closedir(od);
      if (!kept) /* claims are made without the lock: it may refuse */
        unlinkat(dirfd(bd), oe->d_name, AT_REMOVEDIR);
    }
    closedir(bd);
  }
  closedir(top);
  if (total > target && nv) {
    qsort(v, nv, sizeof *v, cmp_victim);
    for (size_t i = 0; i < nv && total > target; i++) {
      char obj[4200], path[4300];
      gf_dcache_dir_object(d, v[i].hash, obj, sizeof obj);
      gf_dcache_entry_path(obj, v[i].off, v[i].len, "", path, sizeof path);
      /* Gone already (removed by hand): its bytes are free all the same. */
      bool removed = unlink(path) == 0;
      if (removed || errno == ENOENT)
        total -= gf_dcache_charge(v[i].len);
      if (removed) {
        d->evictions++;
        d->evicted_bytes += gf_dcache_charge(v[i].len);
      }
    }
  }
  free(v);
  return total;
}

/* The counter, walking the folder when the state file holds none. Under
 * the lock. */
static uint64_t usage_get(gf_dcache_dir *d) {
  uint64_t u;
  if (usage_read(d, &u))
    return u;
  u = walk(d, UINT64_MAX);
  usage_write(d, u);
  return u;
}

/* ---- open, close -------------------------------------------------------- */

int gf_dcache_dir_open(const char *cache_dir, uint64_t limit,
                       gf_dcache_dir **out, char *why, size_t why_cap) {
  *out = NULL;
  gf_dcache_dir *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(why, why_cap, "out of memory");
    return -ENOMEM;
  }
  d->state_fd = -1;
  d->limit = limit;
  d->pid = (int)getpid();
  d->start = proc_start(d->pid);
  if (strlen(cache_dir) > GF_DCACHE_ROOT_MAX) {
    free(d);
    snprintf(why, why_cap, "its path is longer than %u bytes",
             GF_DCACHE_ROOT_MAX);
    return -ENAMETOOLONG;
  }
  gf_dcache_fmt(d->root, sizeof d->root, "%s/%s", cache_dir, GF_DCACHE_FOLDER);
  int rc = mkdir_p(d->root);
  if (rc < 0) {
    snprintf(why, why_cap, "cannot make %s: %s", d->root, gf_strerror(rc));
    free(d);
    return rc;
  }
  char state[4200];
  gf_dcache_fmt(state, sizeof state, "%s/state", d->root);
  d->state_fd = gf_sys_open(state, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (d->state_fd < 0) {
    rc = d->state_fd;
    snprintf(why, why_cap, "cannot open %s: %s", state, gf_strerror(rc));
    free(d);
    return rc;
  }
  /* The folder must take a file: a read-only one is found now, once. */
  char probe[4300];
  gf_dcache_fmt(probe, sizeof probe, "%s/.probe.%d", d->root, d->pid);
  int fd = gf_sys_open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    rc = fd;
    snprintf(why, why_cap, "cannot write in %s: %s", d->root, gf_strerror(rc));
    close(d->state_fd);
    free(d);
    return rc;
  }
  close(fd);
  unlink(probe);
  pthread_mutex_init(&d->mu, NULL);
  lock(d);
  usage_get(d);
  unlock(d);
  *out = d;
  return 0;
}

void gf_dcache_dir_close(gf_dcache_dir *d) {
  if (!d)
    return;
  close(d->state_fd);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

const char *gf_dcache_dir_root(const gf_dcache_dir *d) { return d->root; }
uint64_t gf_dcache_dir_limit(const gf_dcache_dir *d) { return d->limit; }

void gf_dcache_dir_object(const gf_dcache_dir *d, uint64_t hash, char *buf,
                          size_t cap) {
  gf_dcache_fmt(buf, cap, "%s/%02x/%016llx", d->root, (unsigned)(hash >> 56),
                (unsigned long long)hash);
}

void gf_dcache_dir_evictions(const gf_dcache_dir *d, uint64_t *count,
                             uint64_t *bytes) {
  *count = d->evictions;
  *bytes = d->evicted_bytes;
}

/* ---- writing ------------------------------------------------------------ */

/* obj and its bucket, made where missing. */
static int make_object_dir(const char *obj) {
  if (mkdir(obj, 0700) == 0 || errno == EEXIST)
    return 0;
  if (errno != ENOENT)
    return -errno;
  char bucket[4200];
  gf_dcache_fmt(bucket, sizeof bucket, "%s", obj);
  char *slash = strrchr(bucket, '/');
  if (slash)
    *slash = '\0';
  if (mkdir(bucket, 0700) < 0 && errno != EEXIST)
    return -errno;
  if (mkdir(obj, 0700) < 0 && errno != EEXIST)
    return -errno;
  return 0;
}

int gf_dcache_dir_begin(gf_dcache_dir *d, const char *obj, uint64_t off,
                        uint64_t len, int *fd, char *tmp, size_t cap) {
  *fd = -1;
  uint64_t charge = gf_dcache_charge(len);
  if (charge > d->limit / 2)
    return 1;
  char suffix[96];
  snprintf(suffix, sizeof suffix, ".tmp.%d.%llu.%u", d->pid,
           (unsigned long long)d->start, atomic_fetch_add(&d->seq, 1));
  gf_dcache_entry_path(obj, off, len, suffix, tmp, cap);
  lock(d);
  uint64_t u = usage_get(d);
  if (u + charge > d->limit) {
    /* Down to 7/8 of the limit: a walk frees room for many writes. */
    uint64_t low = d->limit - d->limit / 8;
    u = walk(d, low > charge ? low - charge : 0);
    usage_write(d, u);
  }
  int rc = 1;
  if (u + charge <= d->limit && (rc = make_object_dir(obj)) == 0) {
    *fd = gf_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (*fd < 0) {
      rc = *fd;
    } else if ((rc = usage_write(d, u + charge)) < 0) {
      close(*fd);
      *fd = -1;
      unlink(tmp);
    }
  }
  unlock(d);
  return rc;
}

int gf_dcache_dir_commit(gf_dcache_dir *d, const char *obj, uint64_t off,
                         uint64_t len, const char *tmp) {
  char path[4300];
  gf_dcache_entry_path(obj, off, len, "", path, sizeof path);
  uint64_t charge = gf_dcache_charge(len);
  lock(d);
  struct stat sb;
  bool existed = lstat(path, &sb) == 0;
  int rc = gf_sys_rename(tmp, path);
  uint64_t u = usage_get(d);
  if (rc < 0) {
    unlink(tmp);
    usage_write(d, u >= charge ? u - charge : 0);
  } else if (existed) { /* replaced another's copy of the same range */
    usage_write(d, u >= charge ? u - charge : 0);
  }
  unlock(d);
  return rc;
}

void gf_dcache_dir_abort(gf_dcache_dir *d, const char *tmp, uint64_t len) {
  uint64_t charge = gf_dcache_charge(len);
  lock(d);
  if (unlink(tmp) == 0) {
    uint64_t u = usage_get(d);
    usage_write(d, u >= charge ? u - charge : 0);
  }
  unlock(d);
}

bool gf_dcache_dir_remove(gf_dcache_dir *d, const char *obj, uint64_t off,
                          uint64_t len) {
  char path[4300];
  gf_dcache_entry_path(obj, off, len, "", path, sizeof path);
  uint64_t charge = gf_dcache_charge(len);
  lock(d);
  bool removed = unlink(path) == 0;
  if (removed) {
    uint64_t u = usage_get(d);
    usage_write(d, u >= charge ? u - charge : 0);
  }
  unlock(d);
  return removed;
}

/* ---- claims ------------------------------------------------------------- */

/* Removes a stale claim under the lock, looking at its owner again there:
 * another waiter may have removed it and made its own meanwhile. */
static void remove_if_stale(gf_dcache_dir *d, const char *obj,
                            const char *name) {
  lock(d);
  int dfd = open(obj, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (claim_stale(dfd, name))
      unlinkat(dfd, name, 0);
    close(dfd);
  }
  unlock(d);
}

int gf_dcache_dir_claim(gf_dcache_dir *d, const char *obj, uint64_t off,
                        uint64_t len) {
  char path[4300];
  gf_dcache_entry_path(obj, off, len, ".claim", path, sizeof path);
  for (int tries = 0; tries < 4; tries++) {
    int fd = gf_sys_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      char buf[64];
      int n = snprintf(buf, sizeof buf, "%d %llu\n", d->pid,
                       (unsigned long long)d->start);
      int rc = gf_sys_write_full(fd, buf, (size_t)n);
      close(fd);
      if (rc < 0) { /* an empty claim would stall others for a while */
        unlink(path);
        return rc;
      }
      return GF_CLAIM_MINE;
    }
    if (fd == -ENOENT) { /* the object's folder: new, or just emptied */
      lock(d);
      int rc = make_object_dir(obj);
      unlock(d);
      if (rc < 0)
        return rc;
      continue;
    }
    if (fd != -EEXIST)
      return fd;
    if (gf_dcache_dir_claim_held(d, obj, off, len))
      return GF_CLAIM_HELD;
  }
  return GF_CLAIM_HELD;
}

bool gf_dcache_dir_claim_held(gf_dcache_dir *d, const char *obj, uint64_t off,
                              uint64_t len) {
  char name[64];
  snprintf(name, sizeof name, "%016llx-%016llx.claim", (unsigned long long)off,
           (unsigned long long)len);
  int dfd = open(obj, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return false;
  int pid;
  uint64_t start;
  int64_t mt;
  bool there = claim_owner(dfd, name, &pid, &start, &mt);
  bool stale = there && claim_stale(dfd, name);
  close(dfd);
  if (!there)
    return false;
  if (stale) {
    remove_if_stale(d, obj, name);
    return false;
  }
  return true;
}

void gf_dcache_dir_unclaim(gf_dcache_dir *d, const char *obj, uint64_t off,
                           uint64_t len) {
  (void)d;
  char path[4300];
  gf_dcache_entry_path(obj, off, len, ".claim", path, sizeof path);
  unlink(path);
}
