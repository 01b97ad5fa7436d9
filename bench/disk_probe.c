/* The disk's sequential O_DIRECT read bandwidth, measured with gpufeed's
 * own reader (lib/io: io_uring, O_DIRECT, registered buffers), and what the
 * loader reads from the same disk in one epoch: the yardstick and the
 * measure of bench/cold_read.sh (issue: cold reads).
 *
 * Probe (the default): reads FILE... in order, or a dataset folder's
 * shards, each from its start, RS bytes a read with QD reads in flight,
 * for at most --bytes or --seconds a setting, and reports GB/s (1e9
 * bytes a second). A setting goes on where the previous one stopped
 * (wrapping to the first file), so successive settings read other blocks
 * while the files last; the report counts the wraps (blocks read again
 * may come from a cache below the filesystem, a virtual disk's host page
 * cache for one). --sweep measures QD 1, 4, 16, 32, 64 x RS 128K, 512K,
 * 1M, 4M, prints the table and the best. --random reads at random places
 * instead (each read RS-aligned within a file, the files weighted by
 * size): the yardstick of a shuffled epoch, whose reads land anywhere.
 *
 * Loader (--loader DATASET): one epoch of gf_loader over DATASET with
 * O_DIRECT (gf_loader_config.io_direct; --buffered: through the page
 * cache) and io_queue_depth --qd (default: the loader's autotune, as
 * --threads), every sample read (the last partial
 * batch kept), in host mode unless --device says otherwise, and the stored
 * bytes read per second from create to the epoch's last batch: the figure
 * to hold against the probe's. `gpufeed bench` has no option for O_DIRECT
 * or the queue depth, so this is how the loader's O_DIRECT path is
 * measured from the command line.
 *
 * O_DIRECT must reach a disk: files on tmpfs or ramfs (memory: O_DIRECT
 * there, where the kernel accepts it, measures memory copies) and files on
 * a filesystem that refuses O_DIRECT are refused with the reason, exit
 * status 77.
 *
 *   disk_probe [--qd N] [--rs SIZE] [--sweep] [--random] [--bytes SIZE]
 *              [--seconds S] [--io uring|pread|auto] [--json]
 *              FILE...|DATASET
 *   disk_probe --loader DATASET [--qd N] [--threads N] [--batch N]
 *              [--order shuffle|sequential|block] [--device cpu|auto|N]
 *              [--io uring|pread|auto] [--buffered] [--json]
 *
 * Exit status: 0 measured, 1 failed, 2 usage error, 77 O_DIRECT is not
 * possible for these files.
 */
#include "io/io.h"

#include <gpufeed.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h> /* major, minor: the file's block device */
#include <sys/vfs.h>       /* fstatfs: the filesystem's type */
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2
#define EXIT_NO_DIRECT 77
#define ALIGN 4096u
#define MAX_QD 64u

static const unsigned sweep_qd[] = {1, 4, 16, 32, 64};
static const uint64_t sweep_rs[] = {128u << 10, 512u << 10, 1u << 20, 4u << 20};
#define NQD (sizeof sweep_qd / sizeof sweep_qd[0])
#define NRS (sizeof sweep_rs / sizeof sweep_rs[0])

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A JSON string body: quotes, backslashes and control characters
 * escaped; other bytes as they are. */
static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* "128K", "4M", "1G", "4096": powers of 1024. False on junk or 0. */
static bool parse_size(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || s[0] == '-')
    return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift)
    end++;
  if (*end || !v || v > (UINT64_MAX >> shift))
    return false;
  *out = (uint64_t)v << shift;
  return true;
}

static bool parse_uint(const char *s, unsigned max, unsigned *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v > max)
    return false;
  *out = (unsigned)v;
  return true;
}

static void fmt_size(uint64_t b, char *buf, size_t cap) {
  if (b >= (1u << 20) && b % (1u << 20) == 0)
    snprintf(buf, cap, "%lluM", (unsigned long long)(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, cap, "%lluK", (unsigned long long)(b >> 10));
  else
    snprintf(buf, cap, "%llu", (unsigned long long)b);
}

/* ---- where the files live ------------------------------------------------ */

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

/* The filesystem's name for the report (the common ones). */
static const char *fs_name(long type) {
  switch ((unsigned long)type) {
  case 0xEF53:
    return "ext4";
  case 0x58465342:
    return "xfs";
  case 0x9123683E:
    return "btrfs";
  case 0xF2F52010:
    return "f2fs";
  case 0x2FC12FC1:
    return "zfs";
  case 0x794C7630:
    return "overlay";
  case 0x6969:
    return "nfs";
  case 0xFF534D42:
    return "cifs";
  case 0x65735546:
    return "fuse";
  case TMPFS_MAGIC:
    return "tmpfs";
  case RAMFS_MAGIC:
    return "ramfs";
  default:
    return "other";
  }
}

/* The block device under fd ("nvme0n1p1"), or "" (no block device:
 * overlay, network and memory filesystems). */
static void block_device(int fd, char *buf, size_t cap) {
  struct stat st;
  buf[0] = '\0';
  if (fstat(fd, &st) || major(st.st_dev) == 0)
    return;
  char link[64], target[PATH_MAX];
  snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(st.st_dev),
           minor(st.st_dev));
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0)
    return;
  target[n] = '\0';
  const char *base = strrchr(target, '/');
  base = base ? base + 1 : target;
  size_t len = strlen(base) < cap - 1 ? strlen(base) : cap - 1;
  memcpy(buf, base, len);
  buf[len] = '\0';
}

typedef struct file_ent {
  char *path;
  gf_object *obj; /* opened with O_DIRECT (the reader's requests name it) */
  uint64_t size;
} file_ent;

typedef struct file_set {
  file_ent *f;
  unsigned n;
  uint64_t total;
  char fs[16];     /* the first file's filesystem */
  char device[64]; /* and block device, or "" */
} file_set;

static void files_close(file_set *fs) {
  for (unsigned i = 0; i < fs->n; i++) {
    gf_object_close(fs->f[i].obj);
    free(fs->f[i].path);
  }
  free(fs->f);
  memset(fs, 0, sizeof *fs);
}

/* Opens path with O_DIRECT after checking that a disk is under it, and
 * reads its first block to be sure the filesystem takes O_DIRECT reads (a
 * few accept the open and refuse the read). Returns 0, or EXIT_NO_DIRECT
 * or 1 with the reason printed. */
static int open_direct(const char *path, file_ent *e, file_set *set) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "disk_probe: %s: %s\n", path, strerror(errno));
    return 1;
  }
  struct statfs sf;
  struct stat st;
  if (fstatfs(fd, &sf) || fstat(fd, &st)) {
    fprintf(stderr, "disk_probe: %s: %s\n", path, strerror(errno));
    close(fd);
    return 1;
  }
  if (!S_ISREG(st.st_mode)) {
    fprintf(stderr, "disk_probe: %s: not a regular file\n", path);
    close(fd);
    return 1;
  }
  if ((unsigned long)sf.f_type == TMPFS_MAGIC ||
      (unsigned long)sf.f_type == RAMFS_MAGIC) {
    fprintf(stderr,
            "disk_probe: O_DIRECT is not possible: %s is on %s, which is "
            "memory: there is no disk under it to measure; put the "
            "dataset on a disk-backed filesystem (ext4, xfs, ...)\n",
            path, fs_name(sf.f_type));
    close(fd);
    return EXIT_NO_DIRECT;
  }
  if (set->n == 0) {
    snprintf(set->fs, sizeof set->fs, "%s", fs_name(sf.f_type));
    block_device(fd, set->device, sizeof set->device);
  }
  close(fd);
  gf_object *obj = NULL;
  fd = gf_object_open_path(path, GF_OBJ_DIRECT, &obj) == 0 ? obj->fd : -1;
  if (fd < 0) {
    int err = -gf_last_error()->code;
    fprintf(stderr,
            "disk_probe: O_DIRECT is not possible: open(%s, O_DIRECT): %s%s\n",
            path, strerror(err),
            err == EINVAL ? " (this filesystem does not support O_DIRECT)"
                          : "");
    return err == EINVAL ? EXIT_NO_DIRECT : 1;
  }
  void *blk = NULL;
  if (posix_memalign(&blk, ALIGN, ALIGN)) {
    gf_object_close(obj);
    return 1;
  }
  ssize_t n = pread(fd, blk, ALIGN, 0);
  int err = errno;
  free(blk);
  if (n < 0) {
    fprintf(stderr,
            "disk_probe: O_DIRECT is not possible: a %u-byte O_DIRECT read "
            "of %s: %s%s\n",
            ALIGN, path, strerror(err),
            err == EINVAL ? " (this filesystem refuses O_DIRECT reads)" : "");
    gf_object_close(obj);
    return err == EINVAL ? EXIT_NO_DIRECT : 1;
  }
  e->obj = obj;
  e->size = (uint64_t)st.st_size;
  return 0;
}

static int add_file(file_set *set, const char *path) {
  file_ent *f = realloc(set->f, (set->n + 1) * sizeof *f);
  if (!f)
    return 1;
  set->f = f;
  file_ent *e = &set->f[set->n];
  e->path = strdup(path);
  e->obj = NULL;
  if (!e->path)
    return 1;
  int rc = open_direct(path, e, set);
  if (rc) {
    free(e->path);
    return rc;
  }
  set->total += e->size;
  set->n++;
  return 0;
}

/* A dataset folder (holding index.gfi) stands for its shards. */
static bool is_dataset(const char *path) {
  char idx[PATH_MAX];
  struct stat st;
  snprintf(idx, sizeof idx, "%s/index.gfi", path);
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(idx, &st) == 0;
}

static int add_dataset(file_set *set, const char *dir) {
  gf_dataset *ds;
  if (gf_dataset_open(dir, &ds) < 0) {
    fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
    return 1;
  }
  int rc = 0;
  for (uint32_t i = 0; i < gf_dataset_num_shards(ds) && !rc; i++)
    rc = add_file(set, gf_dataset_shard_path(ds, i));
  gf_dataset_close(ds);
  return rc;
}

/* ---- the probe ----------------------------------------------------------- */

typedef struct cursor {
  unsigned file;
  uint64_t off;
  unsigned wraps;
  bool random;   /* reads at random places, not one after another */
  uint64_t rng;  /* splitmix64 state (--random) */
} cursor;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* The next read of at most rs bytes at the cursor, moved past it. A read
 * at a file's end asks for its tail rounded up to the alignment
 * (GF_READ_EOF_OK gives back what there is). */
static void next_read(const file_set *set, cursor *c, uint64_t rs,
                      gf_read_req *q) {
  if (c->random) {
    /* A byte of the files at random; its file and, within it, the start
     * of its RS-long piece. */
    uint64_t x = splitmix64(&c->rng) % set->total;
    c->file = 0;
    while (x >= set->f[c->file].size) {
      x -= set->f[c->file].size;
      c->file++;
    }
    c->off = x / rs * rs;
  }
  while (c->off >= set->f[c->file].size) {
    c->off = 0;
    if (++c->file == set->n) {
      c->file = 0;
      c->wraps++;
    }
  }
  uint64_t left = set->f[c->file].size - c->off;
  uint64_t len = left < rs ? (left + ALIGN - 1) / ALIGN * ALIGN : rs;
  q->obj = set->f[c->file].obj;
  q->flags = GF_READ_EOF_OK;
  q->offset = c->off;
  q->length = len;
  c->off += len;
}

typedef struct result {
  unsigned qd;
  uint64_t rs;
  uint64_t bytes, reads;
  double seconds, gbps;
  unsigned wraps;
  char backend[16];
} result;

/* One setting: qd reads of rs bytes in flight until `budget` bytes or
 * `seconds` have gone. Returns 0, or 1 / EXIT_NO_DIRECT with the reason
 * printed. */
static int measure(const file_set *set, cursor *c, unsigned qd, uint64_t rs,
                   uint64_t budget, double seconds, int backend, result *r) {
  memset(r, 0, sizeof *r);
  r->qd = qd;
  r->rs = rs;
  gf_reader_opts ro = GF_READER_OPTS_INIT;
  ro.backend = backend;
  ro.queue_depth = qd;
  ro.max_pending = qd;
  ro.pread_threads = qd;
  ro.direct = 1;
  ro.direct_align = ALIGN;
  gf_reader *rd;
  if (gf_reader_create(&ro, &rd) < 0) {
    fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
    return 1;
  }
  snprintf(r->backend, sizeof r->backend, "%s", gf_reader_backend(rd));
  size_t len = (size_t)qd * rs;
  uint8_t *buf = NULL;
  if (posix_memalign((void **)&buf, 2u << 20, len)) {
    fprintf(stderr, "disk_probe: cannot allocate %zu bytes of buffers\n", len);
    gf_reader_destroy(rd);
    return 1;
  }
  memset(buf, 0, len); /* the pages exist before the clock starts */
  /* Registered as the loader registers its read buffers; a refusal
   * (RLIMIT_MEMLOCK) only costs the saving, as in the loader. */
  struct iovec iov = {buf, len};
  if (len <= (1u << 30))
    (void)gf_reader_register(rd, &iov, 1);

  unsigned wraps0 = c->wraps;
  gf_read_req q[MAX_QD];
  gf_read_done d[MAX_QD];
  uint64_t issued = 0;
  unsigned n = 0, inflight = 0;
  int rc = 0;
  double t0 = now_s(), t_end = t0 + seconds;
  for (; n < qd && issued < budget; n++) {
    next_read(set, c, rs, &q[n]);
    q[n].buf = buf + (size_t)n * rs;
    q[n].user_data = n;
    issued += q[n].length;
  }
  if (gf_reader_submit(rd, q, n) < 0) {
    fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
    rc = 1;
  } else {
    inflight = n;
  }
  while (inflight && !rc) {
    int got = gf_reader_wait(rd, d, MAX_QD, 1);
    if (got < 0) {
      fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
      rc = 1;
      break;
    }
    inflight -= (unsigned)got;
    bool more = now_s() < t_end;
    n = 0;
    for (int i = 0; i < got; i++) {
      if (d[i].result < 0) {
        int e = (int)d[i].result;
        fprintf(stderr, "disk_probe: an O_DIRECT read at offset %llu: %s%s\n",
                (unsigned long long)d[i].stop_offset, gf_strerror(e),
                e == -EINVAL ? " (the filesystem refuses these O_DIRECT "
                               "reads)"
                             : "");
        rc = e == -EINVAL ? EXIT_NO_DIRECT : 1;
        continue;
      }
      r->bytes += (uint64_t)d[i].result;
      r->reads++;
      if (!more || rc || issued >= budget)
        continue;
      uint64_t slot = d[i].user_data;
      next_read(set, c, rs, &q[n]);
      q[n].buf = buf + slot * rs;
      q[n].user_data = slot;
      issued += q[n].length;
      n++;
    }
    if (n && !rc) {
      if (gf_reader_submit(rd, q, n) < 0) {
        fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
        rc = 1;
      } else {
        inflight += n;
      }
    }
  }
  r->seconds = now_s() - t0;
  r->gbps = r->seconds > 0 ? (double)r->bytes / r->seconds / 1e9 : 0;
  r->wraps = c->wraps - wraps0;
  gf_reader_destroy(rd); /* waits for what is still in the kernel */
  free(buf);
  return rc;
}

static void print_result_json(const result *r) {
  printf("{\"qd\":%u,\"rs\":%llu,\"bytes\":%llu,\"reads\":%llu,"
         "\"seconds\":%.4f,\"gb_per_s\":%.4f,\"wraps\":%u}",
         r->qd, (unsigned long long)r->rs, (unsigned long long)r->bytes,
         (unsigned long long)r->reads, r->seconds, r->gbps, r->wraps);
}

typedef struct probe_opts {
  unsigned qd;
  uint64_t rs;
  bool sweep, json, random;
  uint64_t budget; /* bytes a setting (0: the files' size, at most 2 GiB) */
  double seconds;
  int backend;
} probe_opts;

static int run_probe(const probe_opts *o, char **paths, int npaths) {
  file_set set = {0};
  int rc = 0;
  for (int i = 0; i < npaths && !rc; i++)
    rc = is_dataset(paths[i]) ? add_dataset(&set, paths[i])
                              : add_file(&set, paths[i]);
  if (!rc && set.total == 0) {
    fprintf(stderr, "disk_probe: the files hold no bytes\n");
    rc = 1;
  }
  if (rc) {
    files_close(&set);
    return rc;
  }
  /* By default a setting reads no block twice. */
  uint64_t budget = o->budget
                        ? o->budget
                        : (set.total < (2ull << 30) ? set.total : 2ull << 30);
  result res[NQD * NRS];
  unsigned nres = 0;
  cursor c = {0, 0, 0, o->random, 12345};
  if (!o->json)
    printf("disk_probe: %u files, %.3f GB on %s%s%s; %s O_DIRECT "
           "reads, at most %.2f GB or %.1f s a setting\n",
           set.n, (double)set.total / 1e9, set.fs,
           set.device[0] ? ", device " : "", set.device,
           o->random ? "random" : "sequential", (double)budget / 1e9,
           o->seconds);
  if (o->sweep) {
    for (size_t i = 0; i < NQD && !rc; i++)
      for (size_t j = 0; j < NRS && !rc; j++)
        rc = measure(&set, &c, sweep_qd[i], sweep_rs[j], budget, o->seconds,
                     o->backend, &res[nres++]);
  } else {
    rc = measure(&set, &c, o->qd, o->rs, budget, o->seconds, o->backend,
                 &res[nres++]);
  }
  if (rc) {
    files_close(&set);
    return rc;
  }
  unsigned best = 0, wraps = 0;
  for (unsigned i = 0; i < nres; i++) {
    if (res[i].gbps > res[best].gbps)
      best = i;
    wraps += res[i].wraps;
  }
  char rsb[32];
  if (o->json) {
    printf("{\"mode\":\"probe\",\"order\":\"%s\",\"files\":%u,"
           "\"bytes_total\":%llu,\"fs\":",
           o->random ? "random" : "sequential", set.n,
           (unsigned long long)set.total);
    json_str(set.fs);
    printf(",\"device\":");
    json_str(set.device);
    printf(",\"io_backend\":");
    json_str(res[0].backend);
    printf(",\"budget_bytes\":%llu,\"budget_seconds\":%.2f,\"wraps\":%u,"
           "\"results\":[",
           (unsigned long long)budget, o->seconds, wraps);
    for (unsigned i = 0; i < nres; i++) {
      if (i)
        putchar(',');
      print_result_json(&res[i]);
    }
    printf("],\"best\":");
    print_result_json(&res[best]);
    printf("}\n");
  } else if (o->sweep) {
    printf("GB/s       ");
    for (size_t j = 0; j < NRS; j++) {
      fmt_size(sweep_rs[j], rsb, sizeof rsb);
      printf(" %8s", rsb);
    }
    printf("\n");
    for (size_t i = 0; i < NQD; i++) {
      printf("QD %-7u", sweep_qd[i]);
      for (size_t j = 0; j < NRS; j++)
        printf(" %8.3f", res[i * NRS + j].gbps);
      printf("\n");
    }
  }
  if (!o->json) {
    fmt_size(res[best].rs, rsb, sizeof rsb);
    printf("%s: %.3f GB/s at QD %u, RS %s (%s, %.2f GB in %.2f s)\n",
           o->sweep ? "best" : "read", res[best].gbps, res[best].qd, rsb,
           res[best].backend, (double)res[best].bytes / 1e9, res[best].seconds);
    if (wraps)
      printf("note: the settings went round the files %u times: blocks "
             "read again may come from a cache under the filesystem (a "
             "virtual disk's host); a larger dataset avoids it\n",
             wraps);
  }
  files_close(&set);
  return 0;
}

/* ---- the loader ---------------------------------------------------------- */

typedef struct loader_opts {
  unsigned qd, threads, batch, order;
  int32_t device;
  int backend;
  bool buffered, json;
} loader_opts;

static int run_loader(const loader_opts *o, const char *dir) {
  gf_dataset *ds;
  if (gf_dataset_open(dir, &ds) < 0) {
    fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
    return 1;
  }
  uint32_t align = gf_dataset_alignment(ds);
  uint64_t count = gf_dataset_count(ds);
  int rc = 0;
  file_set set = {0};
  /* The epoch reads every sample once: its stored bytes, and the disk
   * blocks they span (an O_DIRECT read widens to the alignment). The
   * loader's own read counter would also count the next epoch's first
   * batches, read ahead while the last ones are taken. */
  uint64_t stored = 0, spanned = 0;
  uint64_t a = align >= 512 ? align : ALIGN;
  for (uint64_t i = 0; i < count && !rc; i++) {
    gf_sample_info si;
    if (gf_dataset_sample_info(ds, i, &si) < 0) {
      fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
      rc = 1;
      break;
    }
    stored += si.length;
    spanned += (si.offset + si.length + a - 1) / a * a - si.offset / a * a;
  }
  if (!rc && !o->buffered) {
    if (align < 512) {
      fprintf(stderr,
              "disk_probe: %s was built without --align 4096 (alignment "
              "%u): the loader reads it through the page cache whatever "
              "io_direct says; rebuild it with --align 4096, or pass "
              "--buffered\n",
              dir, align);
      rc = 1;
    }
    /* The loader keeps buffered reads, saying so only in its log, where
     * O_DIRECT is refused: refuse here first, with the reason. */
    for (uint32_t i = 0; i < gf_dataset_num_shards(ds) && !rc; i++)
      rc = add_file(&set, gf_dataset_shard_path(ds, i));
  }
  gf_dataset_close(ds);
  files_close(&set);
  if (rc)
    return rc;

  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = dir;
  cfg.batch_size = o->batch;
  cfg.threads = o->threads;
  cfg.order = o->order;
  cfg.device = o->device;
  cfg.io_backend = (uint32_t)o->backend;
  cfg.io_queue_depth = o->qd;
  cfg.io_direct = !o->buffered;
  cfg.drop_last = 0;
  double t0 = now_s();
  gf_loader *l;
  if (gf_loader_create(&cfg, &l) < 0) {
    fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
    return 1;
  }
  double t_created = now_s();
  uint64_t images = 0, batches = 0;
  for (;;) {
    gf_batch *b;
    int r = gf_loader_next(l, &b);
    if (r == GF_EEPOCHEND)
      break;
    if (r < 0) {
      fprintf(stderr, "disk_probe: %s\n", gf_last_error()->message);
      rc = 1;
      break;
    }
    images += b->count;
    batches++;
    gf_loader_release(l, b);
  }
  double t1 = now_s();
  gf_loader_stats st = {.struct_size = sizeof st};
  gf_loader_stats_get(l, &st);
  gf_loader_destroy(l);
  if (rc)
    return rc;
  double secs = t1 - t0;
  double gbps = secs > 0 ? (double)stored / secs / 1e9 : 0;
  double mean_read = count ? (double)stored / (double)count : 0;
  /* A worker's reads in flight: its chunk, min(io_queue_depth, batch / (2 x
   * threads)) (docs/BENCH.md), as the loader says; the queue depth asked
   * for (0: autotune's). */
  unsigned qd = o->qd ? (o->qd > 64 ? 64 : o->qd) : 0;
  unsigned chunk = st.io_in_flight;
  double thread_s = (t1 - t_created) * st.threads;
  double read_pct =
      thread_s > 0 ? 100.0 * (double)st.read.busy_ns * 1e-9 / thread_s : 0;
  double dec_pct =
      thread_s > 0 ? 100.0 * (double)st.decode.busy_ns * 1e-9 / thread_s : 0;
  static const char *const orders[] = {"shuffle", "sequential", "block"};
  if (o->json) {
    printf("{\"mode\":\"loader\",\"source\":");
    json_str(dir);
    printf(",\"direct\":%s,\"io_backend\":", o->buffered ? "false" : "true");
    json_str(st.io_backend);
    printf(",\"order\":\"%s\",\"device\":%d,\"threads\":%u,\"batch\":%u,"
           "\"io_queue_depth\":%u,\"reads_in_flight_per_thread\":%u,"
           "\"reads_in_flight_max\":%u,\"samples\":%llu,\"images\":%llu,"
           "\"stored_bytes\":%llu,\"disk_bytes\":%llu,\"mean_read_bytes\":%.0f,"
           "\"seconds\":%.4f,"
           "\"create_ms\":%.2f,\"gb_per_s\":%.4f,\"images_per_s\":%.1f,"
           "\"busy_pct\":{\"read\":%.1f,\"decode\":%.1f},\"autotune\":",
           orders[o->order], st.device, st.threads, o->batch, qd, chunk,
           chunk * st.threads, (unsigned long long)count,
           (unsigned long long)images, (unsigned long long)stored,
           (unsigned long long)(o->buffered ? stored : spanned), mean_read,
           secs, (t_created - t0) * 1e3, gbps,
           secs > 0 ? (double)images / secs : 0, read_pct, dec_pct);
    json_str(st.tuning);
    printf("}\n");
  } else {
    printf("disk_probe --loader: %s\n", dir);
    char qds[16];
    if (qd)
      snprintf(qds, sizeof qds, "%u", qd);
    else
      snprintf(qds, sizeof qds, "autotune");
    printf("  reads      %s, %s, %s order, %u threads x %u in flight (io "
           "queue depth %s, batch %u)\n",
           o->buffered ? "buffered" : "O_DIRECT", st.io_backend,
           orders[o->order], st.threads, chunk, qds, o->batch);
    printf("  epoch      %llu images, %.3f GB stored (%.0f bytes a sample), "
           "%.3f GB of disk blocks, in %.2f s (create %.1f ms)\n",
           (unsigned long long)images, (double)stored / 1e9, mean_read,
           (double)(o->buffered ? stored : spanned) / 1e9, secs,
           (t_created - t0) * 1e3);
    printf("  rate       %.3f GB/s of stored bytes, %.0f images/s\n", gbps,
           secs > 0 ? (double)images / secs : 0);
    printf("  busy       read %.0f%%, decode %.0f%% of the workers' time\n",
           read_pct, dec_pct);
    printf("  autotune   %s\n", st.tuning);
  }
  return 0;
}

/* ---- arguments ----------------------------------------------------------- */

static const char usage_text[] =
    "usage: disk_probe [--qd N] [--rs SIZE] [--sweep] [--random]\n"
    "                  [--bytes SIZE] [--seconds S] [--io uring|pread|auto]\n"
    "                  [--json] FILE...|DATASET\n"
    "       disk_probe --loader DATASET [--qd N] [--threads N] [--batch N]\n"
    "                  [--order shuffle|sequential|block]\n"
    "                  [--device cpu|auto|N] [--io uring|pread|auto]\n"
    "                  [--buffered] [--json]\n"
    "Probe: sequential O_DIRECT reads of the files (a dataset folder: its\n"
    "shards); defaults --qd 32 --rs 1M --seconds 3 --io uring, --bytes the\n"
    "files' size (at most 2G) a setting; --sweep takes QD 1,4,16,32,64 x\n"
    "RS 128K,512K,1M,4M and prints the best; --random reads at random\n"
    "RS-aligned places instead (a shuffled epoch's yardstick).\n"
    "Loader: one epoch of the loader over DATASET with O_DIRECT (--buffered:\n"
    "page cache), stored bytes read per second; defaults the loader's own\n"
    "(io queue depth 16, autotuned threads, batch 256), host mode.\n"
    "Exit status: 0 measured, 1 failed, 2 usage, 77 O_DIRECT not possible.\n";

/* A usage error naming the argument at fault. */
static int bad(const char *what, const char *v) {
  fprintf(stderr, "disk_probe: %s%s%s\n%s", what, v ? " " : "", v ? v : "",
          usage_text);
  return EXIT_USAGE;
}

static bool pick_backend(const char *v, int *out) {
  if (!strcmp(v, "uring"))
    *out = GF_IO_URING;
  else if (!strcmp(v, "pread"))
    *out = GF_IO_PREAD;
  else if (!strcmp(v, "auto"))
    *out = GF_IO_AUTO;
  else
    return false;
  return true;
}

static bool pick_order(const char *v, unsigned *out) {
  if (!strcmp(v, "shuffle"))
    *out = GF_ORDER_SHUFFLE;
  else if (!strcmp(v, "sequential"))
    *out = GF_ORDER_SEQUENTIAL;
  else if (!strcmp(v, "block"))
    *out = GF_ORDER_BLOCK;
  else
    return false;
  return true;
}

static bool pick_device(const char *v, int32_t *out) {
  unsigned u;
  if (!strcmp(v, "cpu"))
    *out = GF_DEVICE_CPU;
  else if (!strcmp(v, "auto"))
    *out = GF_DEVICE_AUTO;
  else if (parse_uint(v, 1023, &u))
    *out = (int32_t)u;
  else
    return false;
  return true;
}

/* One option and its value; false (with the usage error printed) when
 * the value is bad. */
static bool parse_opt(const char *a, const char *v, probe_opts *po,
                      loader_opts *lo, const char **loader) {
  unsigned u = 0;
  bool ok = true;
  if (!strcmp(a, "--loader")) {
    *loader = v;
  } else if (!strcmp(a, "--qd")) {
    ok = parse_uint(v, MAX_QD, &u) && u;
    po->qd = lo->qd = u;
  } else if (!strcmp(a, "--rs")) {
    ok =
        parse_size(v, &po->rs) && po->rs % ALIGN == 0 && po->rs <= (256u << 20);
  } else if (!strcmp(a, "--bytes")) {
    ok = parse_size(v, &po->budget);
  } else if (!strcmp(a, "--seconds")) {
    char *end;
    po->seconds = strtod(v, &end);
    ok = *v && !*end && po->seconds > 0 && po->seconds <= 3600;
  } else if (!strcmp(a, "--io")) {
    ok = pick_backend(v, &po->backend);
    lo->backend = po->backend;
  } else if (!strcmp(a, "--threads")) {
    ok = parse_uint(v, 1024, &lo->threads);
  } else if (!strcmp(a, "--batch")) {
    ok = parse_uint(v, 1u << 20, &lo->batch) && lo->batch;
  } else if (!strcmp(a, "--order")) {
    ok = pick_order(v, &lo->order);
  } else if (!strcmp(a, "--device")) {
    ok = pick_device(v, &lo->device);
  } else {
    bad("unknown option", a);
    return false;
  }
  if (!ok) {
    char what[64];
    snprintf(what, sizeof what, "bad value for %.40s:", a);
    bad(what, v);
  }
  return ok;
}

int main(int argc, char **argv) {
  probe_opts po = {32, 1u << 20, false, false, false, 0, 3.0, GF_IO_URING};
  loader_opts lo = {0,           0,     256,  GF_ORDER_SHUFFLE, GF_DEVICE_CPU,
                    GF_IO_URING, false, false};
  const char *loader = NULL;
  char **paths = calloc((size_t)argc, sizeof *paths);
  if (!paths)
    return 1;
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_text, stdout);
      free(paths);
      return 0;
    } else if (!strcmp(a, "--sweep")) {
      po.sweep = true;
    } else if (!strcmp(a, "--random")) {
      po.random = true;
    } else if (!strcmp(a, "--json")) {
      po.json = lo.json = true;
    } else if (!strcmp(a, "--buffered")) {
      lo.buffered = true;
    } else if (a[0] == '-' && a[1]) {
      if (i + 1 >= argc) {
        free(paths);
        return bad("missing value for", a);
      }
      if (!parse_opt(a, argv[++i], &po, &lo, &loader)) {
        free(paths);
        return EXIT_USAGE;
      }
    } else {
      paths[npaths++] = argv[i];
    }
  }
  int rc;
  if (loader && npaths)
    rc = bad("--loader takes no other files:", paths[0]);
  else if (!loader && !npaths)
    rc = bad("no files to read", NULL);
  else
    rc = loader ? run_loader(&lo, loader) : run_probe(&po, paths, npaths);
  free(paths);
  return rc;
}
