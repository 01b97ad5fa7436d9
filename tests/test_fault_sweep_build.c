/* Fault sweep over the real product path of writing and checking a
 * dataset: the `gpufeed` CLI ($GPUFEED) run with GPUFEED_FAULT=SITE:N:WHAT
 * for every fault site it reaches and every call number N it reaches it.
 *
 * The calls each site sees are counted in-process first, by making the
 * same calls the CLI makes (tools/build.c: folder scan, source reads as
 * tools/util.c makes them, writer, commit; tools/verify.c: open, check,
 * read), with the sites armed to count only. The sweep then checks that
 * count against the CLI: EIO at call N <= count must fail the command, and
 * at count + 1 must not fire.
 *
 * Each build run must end in one of two ways, never a crash (signal or
 * exit >= 128), a sanitizer report or a hang (killed after a timeout):
 * - exit 0: OUT is byte-identical to a build without faults (builds are
 *   deterministic), and `gpufeed verify` passes it;
 * - exit 1: a message on stderr naming the injected error and the path
 *   the user knows (OUT, or the source file being read; never the
 *   temporary folder), OUT absent (or untouched when it existed: the
 *   --force configuration), and no temporary folder left beside it;
 * - exit 1 after the rename that publishes the new dataset (the commit's
 *   fsync of the folder, or its open, failed): the message says "the new
 *   dataset is in place at OUT but making the rename durable failed", OUT
 *   is byte-identical to the clean build, and with --force the old dataset
 *   is kept whole at the backup path the message names (OUT.gf-old.PID).
 *   The commit's calls (renames, folder opens and fsyncs, the --force
 *   check's reads) are counted and swept like the writer's.
 * EIO and ENOSPC must always fail the build; EINTR, EAGAIN and short
 * writes may be absorbed.
 *
 * The verify sweep: every injected EIO makes `gpufeed verify` fail
 * (exit 1, with the error named), and EINTR, EAGAIN and short reads are
 * retried (exit 0). */
#include "testutil.h"

#include "common/fault.h"
#include "decode/decode.h"
#include "format/format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_N 200            /* call numbers swept a site, at most */
#define RUN_TIMEOUT_S 60     /* a run longer than this is a hang */

static const char *cli;
static const char *tmp;
static unsigned long runs, checked_ok, checked_fail, checked_published;

/* ---- running the CLI ------------------------------------------------------ */

typedef struct result {
  int status; /* exit status, or 128 + signal, or -1 for a hang */
  char err[8192];
} result;

/* Runs the CLI with argv (NULL-terminated, argv[0] ignored) and
 * GPUFEED_FAULT=fault (NULL: none); stdout and stderr kept together in
 * r->err (verify names bad samples on stdout). */
static void run_cli(const char *fault, char *const argv[], result *r) {
  char errpath[4200];
  snprintf(errpath, sizeof errpath, "%s/output", tmp);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (efd < 0)
      _exit(126);
    dup2(efd, 1);
    dup2(efd, 2);
    if (fault)
      setenv("GPUFEED_FAULT", fault, 1);
    else
      unsetenv("GPUFEED_FAULT");
    execv(cli, argv);
    _exit(127);
  }
  runs++;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid)
      break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec > RUN_TIMEOUT_S) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r->status = -1;
      goto out;
    }
    struct timespec nap = {0, 2000000};
    nanosleep(&nap, NULL);
  }
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
out:;
  size_t len = 0;
  char *e = gf_test_read_file(errpath, &len);
  if (len >= sizeof r->err)
    len = sizeof r->err - 1;
  if (e)
    memcpy(r->err, e, len);
  r->err[len] = '\0';
  free(e);
}

static bool exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

/* A ".NAME.gftmp-*" folder left in tmp by a build. */
static bool tmp_left(void) {
  DIR *d = opendir(tmp);
  bool found = false;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] == '.' && strstr(e->d_name, ".gftmp-"))
      found = true;
  if (d)
    closedir(d);
  return found;
}

/* A listing of a folder's files with their content, to compare folders. */
typedef struct snap {
  int n;
  char name[64][256];
  void *data[64];
  size_t len[64];
} snap;

static int cmp_name(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

static void snap_take(const char *dir, snap *s) {
  memset(s, 0, sizeof *s);
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (e->d_name[0] != '.' && s->n < 64)
      snprintf(s->name[s->n++], sizeof s->name[0], "%s", e->d_name);
  if (d)
    closedir(d);
  qsort(s->name, (size_t)s->n, sizeof s->name[0], cmp_name);
  for (int i = 0; i < s->n; i++) {
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, s->name[i]);
    s->data[i] = gf_test_read_file(p, &s->len[i]);
  }
}

static void snap_free(snap *s) {
  for (int i = 0; i < s->n; i++)
    free(s->data[i]);
}

static bool snap_equal(const snap *a, const snap *b) {
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->name[i], b->name[i]) != 0 || a->len[i] != b->len[i] ||
        !a->data[i] || !b->data[i] ||
        memcmp(a->data[i], b->data[i], a->len[i]) != 0)
      return false;
  return true;
}

/* ---- counting calls in-process -------------------------------------------- */

static const gf_fault_site sites[] = {
    GF_FAULT_OPEN,  GF_FAULT_READ,   GF_FAULT_PREAD,       GF_FAULT_WRITE,
    GF_FAULT_FSYNC, GF_FAULT_RENAME, GF_FAULT_URING_SETUP, GF_FAULT_URING_CQE};
#define NSITES (sizeof sites / sizeof sites[0])

static void count_start(void) {
  for (size_t i = 0; i < NSITES; i++)
    gf_fault_arm(sites[i], 0, -EIO, 0);
}

static void count_end(uint64_t *calls) {
  for (size_t i = 0; i < NSITES; i++)
    calls[i] = gf_fault_calls(sites[i]);
  gf_fault_disarm_all();
}

/* A build config: the CLI's arguments and the same work in-process. */
typedef struct build_cfg {
  const char *name;
  int codec;
  uint64_t shard_size;
  uint32_t align;
  bool force; /* OUT exists (an older dataset) and is replaced */
  char shard_arg[32], align_arg[32];
} build_cfg;

/* What gfc_read_file (tools/util.c) does to read a source image, with the
 * same calls at the fault sites: one open, then reads until the size fstat
 * gave is in (one read, unless one comes back short). */
static uint8_t *read_source(const char *path, size_t *len) {
  int fd = gf_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return NULL;
  struct stat st;
  uint8_t *buf = NULL;
  if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1))) {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t r = gf_sys_read(fd, buf + got, (size_t)st.st_size - got);
      if (r == -EINTR)
        continue;
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    *len = got;
  }
  close(fd);
  return buf;
}

/* What tools/build.c does for SRC -> OUT, single-threaded, with the
 * library calls and source reads that reach fault sites. The CLI's worker
 * threads read sources while its main thread writes, so the order differs;
 * the number of calls at each site is the same. */
static int build_in_process(const build_cfg *c, const char *src,
                            const char *out) {
  gf_folder *f;
  int rc = gf_folder_scan(src, NULL, &f);
  if (rc < 0)
    return rc;
  char wdir[4300];
  snprintf(wdir, sizeof wdir, "%s/.count.gftmp-inproc", tmp);
  mkdir(wdir, 0755);
  gf_writer_opts wo = {
      .shard_size = c->shard_size, .alignment = c->align, .index_version = 0};
  gf_writer *w = NULL;
  if ((rc = gf_writer_create(wdir, &wo, &w)) < 0)
    goto out;
  for (uint32_t k = 0; k < f->class_count && rc == 0; k++)
    rc = gf_writer_add_class(w, f->classes[k]);
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  for (uint64_t i = 0; i < f->count && rc == 0; i++) {
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", src, f->entries[i].path);
    size_t len;
    uint8_t *png = read_source(path, &len);
    gf_shape s;
    if (!png || (rc = gf_png_shape(png, len, &o, &s)) < 0) {
      free(png);
      rc = rc ? rc : -EIO;
      break;
    }
    uint8_t *px = malloc(gf_shape_bytes(&s));
    void *enc = NULL;
    size_t enc_len = 0;
    if ((rc = gf_png_decode(png, len, &o, px, gf_shape_bytes(&s), &s)) == 0) {
      if (c->codec == GF_CODEC_PNG)
        rc = gf_writer_add(w, png, len, c->codec, &s, f->entries[i].label,
                           f->entries[i].path);
      else if ((rc = gf_encode(c->codec, px, &s, 0, &enc, &enc_len)) == 0)
        rc = gf_writer_add(w, enc, enc_len, c->codec, &s, f->entries[i].label,
                           f->entries[i].path);
    }
    free(enc);
    free(px);
    free(png);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  w = NULL;
  if (rc == 0)
    rc = gf_dir_commit(wdir, out, c->force);
out:
  gf_writer_destroy(w);
  if (exists(wdir))
    gf_dir_remove(wdir);
  gf_folder_free(f);
  return rc;
}

/* ---- the sweeps ------------------------------------------------------------ */

typedef struct what {
  const char *spec; /* in GPUFEED_FAULT */
  int err;          /* 0 for short */
  bool must_fail;   /* the command may not absorb it */
} what;

static const what whats[] = {{"EIO", -EIO, true},
                             {"ENOSPC", -ENOSPC, true},
                             {"EINTR", -EINTR, false},
                             {"EAGAIN", -EAGAIN, false},
                             {"short", 0, false}};
#define NWHATS (sizeof whats / sizeof whats[0])

static bool moves_bytes(gf_fault_site s) {
  return s == GF_FAULT_READ || s == GF_FAULT_PREAD || s == GF_FAULT_WRITE ||
         s == GF_FAULT_URING_CQE;
}

static bool clean_run(const result *r) {
  return !strstr(r->err, "Sanitizer") && !strstr(r->err, "runtime error");
}

/* The backup "OUT.gf-old.*" beside OUT that a --force commit keeps the old
 * dataset in, into path; false when there is none. */
static bool find_backup(const char *out, char *path, size_t cap) {
  const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
  char prefix[4400];
  snprintf(prefix, sizeof prefix, "%s.gf-old.", base);
  DIR *d = opendir(tmp);
  bool found = false;
  struct dirent *e;
  while (d && !found && (e = readdir(d)))
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
      snprintf(path, cap, "%s/%s", tmp, e->d_name);
      found = true;
    }
  if (d)
    closedir(d);
  return found;
}

/* Checks a run that failed after the rename publishing the new dataset:
 * the new one is at OUT, complete; the old one (--force) is kept whole at
 * the backup the message names; the message says what happened. */
static void check_published(const build_cfg *c, const char *ctx,
                            const result *r, const char *out,
                            const snap *want, const snap *before) {
  checked_published++;
  if (!strstr(r->err, "gpufeed build: ") ||
      !strstr(r->err, "making the rename durable failed") ||
      !strstr(r->err, "a crash now may") || !strstr(r->err, out) ||
      strstr(r->err, ".gftmp-")) {
    fprintf(stderr, "%s: unclear message after the publishing rename: '%s'\n",
            ctx, r->err);
    gf_test_failures++;
  }
  snap got;
  snap_take(out, &got);
  if (!snap_equal(&got, want)) {
    fprintf(stderr, "%s: says the new dataset is in place, but OUT is not "
                    "the clean build\n", ctx);
    gf_test_failures++;
  }
  snap_free(&got);
  char backup[4400];
  bool has_backup = find_backup(out, backup, sizeof backup);
  if (c->force) {
    snap old;
    if (has_backup)
      snap_take(backup, &old);
    if (!has_backup || !snap_equal(&old, before) ||
        !strstr(r->err, backup)) {
      fprintf(stderr, "%s: the old dataset is not kept whole at a backup "
                      "the message names: '%s'\n", ctx, r->err);
      gf_test_failures++;
    }
    if (has_backup)
      snap_free(&old);
  } else if (has_backup) {
    fprintf(stderr, "%s: a backup %s appeared without --force\n", ctx,
            backup);
    gf_test_failures++;
  }
  if (has_backup) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", backup);
    CHECK(system(cmd) == 0);
  }
}

/* Checks one build run whose fault fired (its call number is within the
 * count). */
static void check_build(const build_cfg *c, const char *fault, const what *wh,
                        const result *r, const char *src, const char *out,
                        const snap *want, const snap *before) {
  char ctx[256];
  snprintf(ctx, sizeof ctx, "build %s, GPUFEED_FAULT=%s", c->name, fault);
  if (r->status == -1 || r->status >= 128 || !clean_run(r)) {
    fprintf(stderr, "%s: %s (exit %d)\n%s\n", ctx,
            r->status == -1 ? "HANG (killed)" : "crashed", r->status, r->err);
    gf_test_failures++;
    return;
  }
  if (tmp_left()) {
    fprintf(stderr, "%s: exit %d left a temporary folder beside OUT\n", ctx,
            r->status);
    gf_test_failures++;
  }
  if (r->status == 0) {
    if (wh->must_fail) {
      fprintf(stderr, "%s: exit 0, but an injected %s may not be absorbed\n",
              ctx, wh->spec);
      gf_test_failures++;
    }
    snap got;
    snap_take(out, &got);
    if (!snap_equal(&got, want)) {
      fprintf(stderr, "%s: exit 0 but OUT differs from the clean build\n", ctx);
      gf_test_failures++;
    }
    snap_free(&got);
    result v;
    char *vargv[] = {"gpufeed", "verify", (char *)out, "--quiet", NULL};
    run_cli(NULL, vargv, &v);
    if (v.status != 0) {
      fprintf(stderr, "%s: exit 0 but verify says (%d): %s\n", ctx, v.status,
              v.err);
      gf_test_failures++;
    }
    checked_ok++;
    return;
  }
  if (r->status != 1) {
    fprintf(stderr, "%s: exit %d, expected 0 or 1\n%s\n", ctx, r->status,
            r->err);
    gf_test_failures++;
    return;
  }
  checked_fail++;
  if (strstr(r->err, "is in place at")) {
    check_published(c, ctx, r, out, want, before);
    return;
  }
  const char *name = wh->err ? strerror(-wh->err) : "";
  if (!strstr(r->err, "gpufeed build: ") || (wh->err && !strstr(r->err, name))) {
    fprintf(stderr, "%s: exit 1 without a message naming '%s': '%s'\n", ctx,
            name, r->err);
    gf_test_failures++;
  }
  /* The message names what the user gave (OUT, or the source file being
   * read), never the temporary folder, which is gone by now. Only source
   * reads reach the read site (the library reads with pread). */
  bool source_read = strncmp(fault, "read:", 5) == 0;
  if (strstr(r->err, ".gftmp-") ||
      (!source_read && !strstr(r->err, out) && !strstr(r->err, src))) {
    fprintf(stderr,
            "%s: the message should name OUT (%s) or a source file under "
            "%s, not the temporary folder: '%s'\n",
            ctx, out, src, r->err);
    gf_test_failures++;
  }
  if (source_read && !strstr(r->err, src)) {
    fprintf(stderr, "%s: a failed source read should name the source: '%s'\n",
            ctx, r->err);
    gf_test_failures++;
  }
  if (c->force) {
    snap got;
    snap_take(out, &got);
    if (!snap_equal(&got, before)) {
      fprintf(stderr, "%s: a failed --force build changed OUT\n", ctx);
      gf_test_failures++;
    }
    snap_free(&got);
  } else if (exists(out)) {
    fprintf(stderr, "%s: a failed build left OUT\n", ctx);
    gf_test_failures++;
  }
}

static unsigned long swept_values, swept_sites;

static void sweep_build(build_cfg *c, const char *src) {
  char out[4300], ref[4300], old[4300];
  snprintf(out, sizeof out, "%s/out-%s", tmp, c->name);
  snprintf(ref, sizeof ref, "%s/ref-%s", tmp, c->name);
  snprintf(old, sizeof old, "%s/old-%s", tmp, c->name);
  snprintf(c->shard_arg, sizeof c->shard_arg, "%llu",
           (unsigned long long)c->shard_size);
  snprintf(c->align_arg, sizeof c->align_arg, "%u", c->align);
  char *argv[16] = {"gpufeed", "build", (char *)src, out, "--codec",
                    (char *)gf_codec_name(c->codec), "--shard-size",
                    c->shard_arg, "--align", c->align_arg, "--threads", "2",
                    "--quiet"};
  int argc = 13;
  if (c->force)
    argv[argc++] = "--force";
  argv[argc] = NULL;

  /* The reference (clean CLI build) and, with --force, the older dataset
   * OUT holds before each run (a raw build of the same images). */
  result r;
  char *rargv[16];
  memcpy(rargv, argv, sizeof rargv);
  rargv[3] = ref;
  run_cli(NULL, rargv, &r);
  CHECK(r.status == 0);
  snap want, before;
  snap_take(ref, &want);
  memset(&before, 0, sizeof before);
  if (c->force) {
    char *oargv[] = {"gpufeed", "build", (char *)src, old, "--codec", "raw",
                     "--quiet", NULL};
    run_cli(NULL, oargv, &r);
    CHECK(r.status == 0);
    snap_take(old, &before);
  }

  /* Calls per site, counted in-process (same work, same order). */
  uint64_t calls[NSITES];
  char cnt[4300];
  snprintf(cnt, sizeof cnt, "%s/count-%s", tmp, c->name);
  if (c->force) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", old, cnt);
    CHECK(system(cmd) == 0);
  }
  count_start();
  int rc = build_in_process(c, src, cnt);
  count_end(calls);
  CHECK_OK(rc);
  snap inproc;
  snap_take(cnt, &inproc);
  /* Same work: the in-process build is the CLI's, byte for byte. */
  CHECK(snap_equal(&inproc, &want));
  snap_free(&inproc);
  printf("build %s: calls per site:", c->name);
  for (size_t i = 0; i < NSITES; i++)
    printf(" %s %llu", gf_fault_site_name(sites[i]),
           (unsigned long long)calls[i]);
  printf("\n");

  char cmd[13000];
  for (size_t si = 0; si < NSITES; si++) {
    gf_fault_site site = sites[si];
    uint64_t top = calls[si] < MAX_N ? calls[si] : MAX_N;
    swept_sites += calls[si] > 0;
    /* One past the count: EIO must not fire (it checks the count). */
    for (uint64_t n = 1; n <= top + 1; n++) {
      for (size_t wi = 0; wi < NWHATS; wi++) {
        const what *wh = &whats[wi];
        if (!wh->err && !moves_bytes(site))
          continue;
        if (n == top + 1 && wi > 0)
          continue;
        char fault[128];
        snprintf(fault, sizeof fault, "%s:%llu:%s", gf_fault_site_name(site),
                 (unsigned long long)n, wh->spec);
        if (c->force)
          snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", out, old,
                   out);
        else
          snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
        CHECK(system(cmd) == 0);
        run_cli(fault, argv, &r);
        swept_values++;
        if (n == calls[si] + 1 && n <= MAX_N) {
          if (r.status != 0) {
            fprintf(stderr,
                    "build %s: %s failed, but the in-process count says %s "
                    "is reached only %llu times: the CLI's build and "
                    "build_in_process() have drifted apart:\n%s\n",
                    c->name, fault, gf_fault_site_name(site),
                    (unsigned long long)calls[si], r.err);
            gf_test_failures++;
          }
          continue;
        }
        check_build(c, fault, wh, &r, src, out, &want, &before);
      }
    }
  }
  snap_free(&want);
  snap_free(&before);
}

/* `gpufeed verify` under read faults. */
static void sweep_verify(const char *ds) {
  uint64_t calls[NSITES];
  count_start();
  gf_dataset *d;
  int rc = gf_dataset_open(ds, &d);
  CHECK_OK(rc);
  if (rc == 0) {
    CHECK_OK(gf_dataset_check_index(d));
    uint8_t *buf = malloc(1 << 20);
    for (uint64_t i = 0; i < gf_dataset_count(d); i++)
      CHECK(gf_dataset_read(d, i, buf, 1 << 20) > 0);
    free(buf);
    gf_dataset_close(d);
  }
  count_end(calls);
  printf("verify: calls per site:");
  for (size_t i = 0; i < NSITES; i++)
    printf(" %s %llu", gf_fault_site_name(sites[i]),
           (unsigned long long)calls[i]);
  printf("\n");
  char *argv[] = {"gpufeed", "verify", (char *)ds, "--threads", "2", "--quiet",
                  NULL};
  for (size_t si = 0; si < NSITES; si++) {
    gf_fault_site site = sites[si];
    uint64_t top = calls[si] < MAX_N ? calls[si] : MAX_N;
    swept_sites += calls[si] > 0;
    for (uint64_t n = 1; n <= top + 1; n++) {
      for (size_t wi = 0; wi < NWHATS; wi++) {
        const what *wh = &whats[wi];
        if ((!wh->err && !moves_bytes(site)) || wh->err == -ENOSPC)
          continue;
        if (n == top + 1 && wi > 0)
          continue;
        char fault[128];
        snprintf(fault, sizeof fault, "%s:%llu:%s", gf_fault_site_name(site),
                 (unsigned long long)n, wh->spec);
        result r;
        run_cli(fault, argv, &r);
        swept_values++;
        bool past = n > calls[si];
        if (r.status == -1 || r.status >= 128 || !clean_run(&r)) {
          fprintf(stderr, "verify, GPUFEED_FAULT=%s: %s (exit %d)\n%s\n", fault,
                  r.status == -1 ? "HANG (killed)" : "crashed", r.status,
                  r.err);
          gf_test_failures++;
        } else if (past || (site == GF_FAULT_PREAD && !wh->must_fail)) {
          /* Past the count nothing fires; a retried pread is invisible. */
          if (r.status != 0) {
            fprintf(stderr, "verify, GPUFEED_FAULT=%s: exit %d, wanted 0: %s\n",
                    fault, r.status, r.err);
            gf_test_failures++;
          }
        } else if (wh->must_fail &&
                   (r.status != 1 || !strstr(r.err, strerror(-wh->err)))) {
          fprintf(stderr,
                  "verify, GPUFEED_FAULT=%s: exit %d, wanted 1 with '%s' "
                  "named: %s\n",
                  fault, r.status, strerror(-wh->err), r.err);
          gf_test_failures++;
        } else if (r.status != 0 && r.status != 1) {
          fprintf(stderr, "verify, GPUFEED_FAULT=%s: exit %d\n", fault,
                  r.status);
          gf_test_failures++;
        }
      }
    }
  }
}

int main(void) {
  cli = getenv("GPUFEED");
  if (!cli || access(cli, X_OK) != 0) {
    fprintf(stderr, "$GPUFEED (the gpufeed CLI) is not set or not "
                    "executable\n");
    return 1;
  }
  tmp = gf_test_tmpdir();
  char src[4300];
  snprintf(src, sizeof src, "%s/src", tmp);
  result r;
  char *sargv[] = {"gpufeed", "synth", src, "--count", "10", "--size", "12x10",
                   "--classes", "3", "--quiet", NULL};
  run_cli(NULL, sargv, &r);
  CHECK(r.status == 0);
  if (gf_test_failures)
    return gf_test_finish();

  /* Raw pixels in 1 KiB shards (a shard every two images: many opens,
   * writes and fsyncs), and PNG files aligned to 4 KiB replacing an older
   * dataset with --force (the exchange path of the commit). */
  build_cfg cfgs[] = {{"raw-small-shards", GF_CODEC_RAW, 1024, 1, false, "", ""},
                      {"png-align-force", GF_CODEC_PNG, 1 << 20, 4096, true, "",
                       ""}};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
    sweep_build(&cfgs[i], src);
  char ds[4300];
  snprintf(ds, sizeof ds, "%s/ref-raw-small-shards", tmp);
  sweep_verify(ds);
  printf("fault sweep (CLI build + verify): %lu site sweeps with calls, %lu "
         "faulted runs (site x N x error), %lu CLI runs in all; %lu builds "
         "absorbed the fault, %lu failed cleanly (%lu of them after the "
         "publishing rename)\n",
         swept_sites, swept_values, runs, checked_ok, checked_fail,
         checked_published);
  /* The commit's fsync of the folder is swept in both configurations (the
   * NOREPLACE rename and the --force exchange): EIO, ENOSPC, EINTR and
   * EAGAIN at its open and at its fsync. */
  if (checked_published < 16) {
    fprintf(stderr, "only %lu runs failed after the publishing rename: the "
                    "commit's calls are not swept\n", checked_published);
    gf_test_failures++;
  }
  return gf_test_finish();
}
