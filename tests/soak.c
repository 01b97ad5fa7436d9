/* gpufeed_soak: runs loaders over randomly changing configurations for a
 * given time and checks, all along, what gpufeed promises:
 *
 * - every epoch delivers exactly the sample sequence the sampler defines
 *   for (seed, epoch, rank, world, batch, order, partition, drop_last),
 *   with pixels and labels equal to references decoded independently
 *   (tests/loader_fixture.c); a corrupt sample gives one error (fail
 *   policy) or is skipped with the batch refilled (skip policy);
 * - a state exported mid-epoch and imported into a new loader continues
 *   the same sequence; destroying a loader with batches still held is
 *   fine;
 * - resources are bounded: after every destroy the process holds exactly
 *   the file descriptors it held before the first loader, and the
 *   resident memory measured between loaders stops growing after a
 *   warm-up (the bound is printed and checked at the end).
 *
 *   gpufeed_soak [--seconds S] [--device cpu|N] [--seed X] [--verbose]
 *
 * --device N runs the same loaders on GPU N (they check the host side of
 * each batch); without a usable device it exits 77 (skip). Exit status: 0
 * pass, 1 a promise was broken (each printed), 2 usage. The last line is
 * a summary: duration, loaders, epochs, batches, samples checked,
 * resumes, early destroys, errors seen, RSS and fd figures. */
#include "loader_fixture.h"

#include "gpu/cudautil.h"
#include "pipeline/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ASan keeps freed memory in a quarantine (256 MiB by default) that would
 * read as growth here; a small one keeps RSS meaningful. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GF_SOAK_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GF_SOAK_SANITIZER 1
#endif
#endif
#if defined(GF_SOAK_SANITIZER) && !defined(__SANITIZE_THREAD__)
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=8"; }
#endif

#define LOADER_ALARM_S 120
#define SEQ_CAP 256 /* samples an epoch of a fixture can hold */
/* RSS growth allowed between the end of the warm-up and the end of the
 * run, measured with no loader alive. Allocator caches (glibc arenas,
 * per-thread decode scratch) settle during the warm-up: a plain build
 * stays flat (5.7 MiB through a 60 s run of 37000 loaders), so a leak of a
 * few hundred bytes a loader exceeds this within a minute. Sanitizer
 * runtimes keep bookkeeping for every thread ever started (about 2 KiB a
 * loader under ASan), so there the bound grows by PER_LOADER_SANITIZER
 * for each loader made after the warm-up; their own leak checkers cover
 * what this cannot. */
#define RSS_GROWTH_BOUND (16ull << 20)
#ifdef GF_SOAK_SANITIZER
#define PER_LOADER_SANITIZER (8ull << 10)
#else
#define PER_LOADER_SANITIZER 0ull
#endif

static bool verbose;
static char current[512];

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "soak: HANG: a loader made no progress for "
                            "120 s: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  w = write(2, current, strlen(current));
  w = write(2, "\n", 1);
  (void)w;
  _exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1; /* the listing's own descriptor */
}

static void flip_byte(const char *path, uint64_t off) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  uint8_t c = 0;
  if (fd < 0 || pread(fd, &c, 1, (off_t)off) != 1) {
    perror(path);
    exit(1);
  }
  c ^= 0x40;
  if (pwrite(fd, &c, 1, (off_t)off) != 1) {
    perror(path);
    exit(1);
  }
  close(fd);
}

typedef struct stats {
  uint64_t loaders, epochs, batches, samples, resumes, early, errors, skips,
      refused, direct;
} stats;

static stats tot;
static int broken;

#define PROMISE(cond, ...)                                                   \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "soak: %s: ", current);                                \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
      broken++;                                                              \
    }                                                                        \
  } while (0)

/* One loader configuration and what it must deliver. */
typedef struct plan {
  const fixture *f;
  gf_loader_config cfg;
  uint64_t bad;     /* the corrupt sample, or GF_NO_INDEX */
  gf_sampler smp;   /* the reference order */
  uint64_t share, per_rank;
} plan;

/* The sequence an epoch must deliver (sample indices, in order) given the
 * corrupt sample, and how many next() errors go with it. */
static uint64_t expected(plan *p, uint64_t epoch, uint64_t *seq,
                         int *errors) {
  gf_sampler_set_epoch(&p->smp, epoch);
  uint64_t B = p->cfg.batch_size, share = p->share, n = 0;
  *errors = 0;
  uint64_t at = GF_NO_INDEX; /* the bad sample's position */
  for (uint64_t i = 0; i < share; i++)
    if (gf_sampler_get(&p->smp, i) == p->bad && at == GF_NO_INDEX)
      at = i;
  if (at == GF_NO_INDEX || at >= p->per_rank) {
    for (uint64_t i = 0; i < p->per_rank; i++)
      seq[n++] = gf_sampler_get(&p->smp, i);
    return n;
  }
  if (p->cfg.error_policy == GF_ON_ERROR_FAIL) {
    /* The batch holding it fails as a whole; the rest come. */
    uint64_t k = at / B;
    for (uint64_t i = 0; i < p->per_rank; i++)
      if (i / B != k)
        seq[n++] = gf_sampler_get(&p->smp, i);
    *errors = 1;
    return n;
  }
  /* Skip: the sample's place in its batch goes to the first sample after
   * the batch (which then leaves its own place), or, when no sample
   * follows, the batch shrinks; with drop_last only full batches remain. */
  uint64_t end = (at / B + 1) * B;
  uint64_t left = share - 1;
  uint64_t len = p->cfg.drop_last ? left / B * B : left;
  for (uint64_t i = 0; i < share && n < len; i++) {
    if (i == end && end < share)
      continue;
    if (i == at) {
      if (end < share)
        seq[n++] = gf_sampler_get(&p->smp, end);
      continue;
    }
    seq[n++] = gf_sampler_get(&p->smp, i);
  }
  return n;
}

static int make_loader(plan *p, gf_loader **l) {
  alarm(LOADER_ALARM_S);
  int rc = gf_loader_create(&p->cfg, l);
  alarm(0);
  if (rc == 0)
    tot.loaders++;
  return rc;
}

/* Runs one configuration: 1-3 epochs, maybe a resume, maybe an early
 * destroy. Returns -1 if no device could be used (--device N). */
static int run_plan(plan *p, uint64_t *rs, int base_fds, uint64_t *seq,
                    uint64_t *got) {
  gf_loader *l = NULL;
  int rc = make_loader(p, &l);
  if (rc == GF_ENODEVICE || rc == GF_ECUDA)
    return -1;
  if (p->per_rank == 0) {
    /* No batch for anyone: create must say so rather than hang. */
    PROMISE(rc == -EINVAL && l == NULL, "create gave %s for an empty share",
            gf_err_name(rc));
    gf_loader_destroy(l);
    tot.refused++;
    return 0;
  }
  PROMISE(rc == 0, "create: %s: %s", gf_err_name(rc), gf_last_error()->message);
  if (rc != 0)
    return 0;
  int epochs = 1 + (int)(gf_test_rand(rs) % 3);
  uint64_t B = p->cfg.batch_size;
  bool done = false;
  for (int e = 0; e < epochs && !done; e++) {
    int want_err;
    uint64_t nseq = expected(p, (uint64_t)e, seq, &want_err);
    uint64_t ngot = 0;
    int errs = 0;
    /* What happens in this epoch: 0 plain, 1 resume after k batches in a
     * new loader, 2 destroy after k batches (holding some). */
    int mode = (int)(gf_test_rand(rs) % 6);
    mode = mode < 4 ? 0 : mode - 3;
    uint64_t k_at = gf_test_rand(rs) % (p->per_rank / B + 1);
    gf_batch *held[8];
    uint32_t nheld = 0;
    uint64_t k = 0;
    for (;;) {
      gf_batch *b;
      alarm(LOADER_ALARM_S);
      rc = gf_loader_next(l, &b);
      alarm(0);
      if (rc == GF_EEPOCHEND)
        break;
      if (rc < 0) {
        const gf_error_info *ei = gf_last_error();
        PROMISE(rc == GF_ECORRUPT && ei->code == rc && ei->sample == p->bad,
                "epoch %d: next: %s (sample %llu): %s", e, gf_err_name(rc),
                (unsigned long long)ei->sample, ei->message);
        errs++;
        tot.errors++;
        if (errs > 10)
          break;
        continue;
      }
      tot.batches++;
      PROMISE(b->epoch == (uint64_t)e, "batch of epoch %llu in epoch %d",
              (unsigned long long)b->epoch, e);
      PROMISE(b->count >= 1 && b->count <= B, "batch of %u samples", b->count);
      PROMISE(fixture_check_batch(p->f, b) == 0,
              "epoch %d batch %llu: pixels or labels differ", e,
              (unsigned long long)b->index);
      for (uint32_t j = 0; j < b->count; j++, ngot++)
        if (ngot < SEQ_CAP)
          got[ngot] = b->indices[j];
      tot.samples += b->count;
      tot.skips += b->skipped;
      k++;
      if (mode == 2 && k >= k_at) {
        /* Destroy with this batch (and maybe an earlier one) held. */
        held[nheld++] = b;
        tot.early++;
        done = true;
        break;
      }
      if (nheld + 1 < p->cfg.prefetch && gf_test_rand(rs) % 4 == 0) {
        held[nheld++] = b; /* hold it a while */
      } else {
        PROMISE(gf_loader_release(l, b) == 0, "release refused");
      }
      if (nheld && gf_test_rand(rs) % 2 == 0)
        PROMISE(gf_loader_release(l, held[--nheld]) == 0, "release refused");
      if (mode == 1 && k == k_at) {
        mode = 0;
        gf_loader_state st;
        PROMISE(gf_loader_state_export(l, &st) == 0, "export failed");
        /* The old loader goes with whatever it still lends. */
        gf_loader_destroy(l);
        nheld = 0;
        l = NULL;
        rc = make_loader(p, &l);
        PROMISE(rc == 0, "re-create: %s", gf_last_error()->message);
        if (rc != 0)
          return 0;
        rc = gf_loader_state_import(l, &st);
        PROMISE(rc == 0, "import: %s: %s", gf_err_name(rc),
                gf_last_error()->message);
        tot.resumes++;
      }
    }
    while (nheld && !done)
      PROMISE(gf_loader_release(l, held[--nheld]) == 0, "release refused");
    if (done) {
      /* Early destroy: what came so far is a prefix of the sequence. */
      PROMISE(ngot <= nseq && memcmp(got, seq, ngot * sizeof *got) == 0,
              "epoch %d: the first %llu samples differ from the sampler's "
              "order", e, (unsigned long long)ngot);
      break;
    }
    tot.epochs++;
    PROMISE(errs == want_err, "epoch %d: %d errors, expected %d", e, errs,
            want_err);
    bool same = ngot == nseq && memcmp(got, seq, ngot * sizeof *got) == 0;
    PROMISE(same,
            "epoch %d: delivered %llu samples that differ from the %llu the "
            "sampler defines",
            e, (unsigned long long)ngot, (unsigned long long)nseq);
    if (!same && verbose)
      for (uint64_t i = 0; i < ngot || i < nseq; i++)
        fprintf(stderr, "  %llu: got %lld want %lld\n", (unsigned long long)i,
                i < ngot ? (long long)got[i] : -1LL,
                i < nseq ? (long long)seq[i] : -1LL);
  }
  gf_loader_stats lst = {.struct_size = sizeof lst};
  if (gf_loader_stats_get(l, &lst) == 0)
    tot.direct += lst.cache_direct;
  gf_loader_destroy(l);
  int fds = fd_count();
  PROMISE(fds == base_fds, "%d file descriptors open after destroy, %d "
          "before the first loader", fds, base_fds);
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: gpufeed_soak [--seconds S] [--device cpu|N] "
                  "[--seed X] [--verbose]\n");
  exit(2);
}

int main(int argc, char **argv) {
  double seconds = 60;
  int32_t device = GF_DEVICE_CPU;
  uint64_t seed = (uint64_t)time(NULL);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
      if (!(seconds > 0))
        usage();
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      const char *d = argv[++i];
      char *end;
      if (strcmp(d, "cpu") == 0)
        device = GF_DEVICE_CPU;
      else if ((device = (int32_t)strtol(d, &end, 10)) < 0 || *end || end == d)
        usage();
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoull(argv[++i], NULL, 0);
    } else if (strcmp(argv[i], "--verbose") == 0) {
      verbose = true;
    } else {
      usage();
    }
  }
  signal(SIGALRM, on_alarm);
  char devname[16] = "cpu";
  if (device != GF_DEVICE_CPU)
    snprintf(devname, sizeof devname, "%d", (int)device);
  printf("soak: %.0f s, seed %llu, device %s\n", seconds,
         (unsigned long long)seed, devname);
  fflush(stdout);

  const char *dir = gf_test_tmpdir();
  fixture fx[3];
  char sub[4400];
  snprintf(sub, sizeof sub, "%s/uniform", dir);
  CHECK_OK(fixture_make(&fx[0], sub, 97, 5, false, 1, 3));
  snprintf(sub, sizeof sub, "%s/ragged", dir);
  CHECK_OK(fixture_make(&fx[1], sub, 61, 3, true, 4096, 0));
  snprintf(sub, sizeof sub, "%s/bad", dir);
  CHECK_OK(fixture_make(&fx[2], sub, 50, 4, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  /* fx[2]'s sample 29 (a zstd sample) gets a flipped bit. */
  const uint64_t bad = 29;
  {
    gf_dataset *ds;
    gf_sample_info info;
    CHECK_OK(gf_dataset_open(fx[2].ds_dir, &ds));
    CHECK_OK(gf_dataset_sample_info(ds, bad, &info));
    char shard[4200];
    snprintf(shard, sizeof shard, "%s", gf_dataset_shard_path(ds, info.shard));
    gf_dataset_close(ds);
    flip_byte(shard, info.offset + info.length / 2);
  }
  uint64_t *seq = malloc(SEQ_CAP * sizeof *seq);
  uint64_t *got = malloc(SEQ_CAP * sizeof *got);

  /* The CUDA runtime opens its device files once per process, at the first
   * loader on a GPU: make that happen before the baseline, so the check
   * sees what loaders leave open, not the driver's own. */
  if (device != GF_DEVICE_CPU) {
    if (gf_gpu_init(device) < 0) {
      fprintf(stderr, "soak: %s\n", gf_last_error()->message);
      return 77;
    }
  }
  int base_fds = fd_count();
  int fd_min = base_fds, fd_max = base_fds;
  uint64_t rss0 = gf_proc_rss_bytes(), rss_peak = rss0, rss_warm = 0, loaders_warm = 0;
  double t0 = now_s(), warm_at = t0 + seconds * 0.25, next_report = t0 + 10;
  uint64_t rs = seed;
  while (now_s() - t0 < seconds) {
    plan p;
    memset(&p, 0, sizeof p);
    int which = (int)(gf_test_rand(&rs) % 3);
    p.f = &fx[which];
    p.bad = which == 2 ? bad : GF_NO_INDEX;
    gf_loader_config *c = &p.cfg;
    *c = (gf_loader_config)GF_LOADER_CONFIG_INIT;
    bool folder = which != 2 && gf_test_rand(&rs) % 3 == 0;
    c->source = folder ? p.f->png_dir : p.f->ds_dir;
    c->channels = p.f->channels;
    c->max_sample_bytes = folder ? 16 * 16 * 3 : 0;
    c->batch_size = 1 + (uint32_t)(gf_test_rand(&rs) % 24);
    c->threads = 1 + (uint32_t)(gf_test_rand(&rs) % 6);
    c->world = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    c->rank = (uint32_t)(gf_test_rand(&rs) % c->world);
    c->partition = (uint32_t)(gf_test_rand(&rs) % 2);
    c->drop_last = gf_test_rand(&rs) % 4 == 0;
    c->order = (uint32_t)(gf_test_rand(&rs) % 3);
    c->block_size = 1 + (uint32_t)(gf_test_rand(&rs) % 9);
    c->seed = gf_test_rand(&rs);
    c->prefetch = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    uint64_t cache = gf_test_rand(&rs) % 3;
    c->cache_bytes = cache == 0 ? 0 : cache == 1 ? 3000 : 16 << 20;
    /* GPU mode: the cache pinned and gathered from, or kept pageable. */
    c->cache_direct = gf_test_rand(&rs) % 4 == 0 ? GF_CACHE_DIRECT_OFF
                                                 : GF_CACHE_DIRECT_AUTO;
    c->io_backend = gf_test_rand(&rs) % 2 ? GF_IO_PREAD : GF_IO_AUTO;
    c->error_policy = (uint32_t)(gf_test_rand(&rs) % 2);
    c->device = device;

    gf_sampler_config sc = GF_SAMPLER_CONFIG_INIT;
    sc.n = p.f->n;
    sc.seed = c->seed;
    sc.order = c->order;
    sc.partition = c->partition;
    sc.rank = c->rank;
    sc.world = c->world;
    sc.batch_size = c->batch_size;
    sc.drop_last = c->drop_last;
    sc.block_size = c->block_size;
    if (gf_sampler_init(&p.smp, &sc) < 0) {
      fprintf(stderr, "soak: sampler: %s\n", gf_last_error()->message);
      return 1;
    }
    p.share = gf_sampler_samples_per_epoch(&p.smp);
    p.per_rank =
        c->drop_last ? p.share / c->batch_size * c->batch_size : p.share;
    snprintf(current, sizeof current,
             "loader %llu (%s %s, n %llu, batch %u, threads %u, rank %u/%u, "
             "%s, drop_last %u, order %u, prefetch %u, cache %llu, io %u, "
             "policy %s, seed %llu)",
             (unsigned long long)tot.loaders + 1, folder ? "png folder" : "dataset",
             which == 0 ? "uniform" : which == 1 ? "ragged" : "with a bad sample",
             (unsigned long long)p.f->n, c->batch_size, c->threads, c->rank,
             c->world, c->partition ? "drop" : "pad", c->drop_last, c->order,
             c->prefetch, (unsigned long long)c->cache_bytes, c->io_backend,
             c->error_policy ? "skip" : "fail", (unsigned long long)c->seed);
    if (verbose)
      fprintf(stderr, "%s\n", current);
    if (run_plan(&p, &rs, base_fds, seq, got) < 0) {
      printf("SKIP: device %d is not usable: %s\n", device,
             gf_last_error()->message);
      return 77;
    }
    int fds = fd_count();
    fd_min = fds < fd_min ? fds : fd_min;
    fd_max = fds > fd_max ? fds : fd_max;
    uint64_t rss = gf_proc_rss_bytes();
    rss_peak = rss > rss_peak ? rss : rss_peak;
    if (!rss_warm && now_s() >= warm_at) {
      rss_warm = rss;
      loaders_warm = tot.loaders;
    }
    if (now_s() >= next_report) {
      next_report += 10;
      printf("soak: %5.0f s: %llu loaders, %llu samples, RSS %.1f MiB, %d "
             "fds\n",
             now_s() - t0, (unsigned long long)tot.loaders,
             (unsigned long long)tot.samples, (double)rss / 1048576, fds);
      fflush(stdout);
    }
    if (broken > 20) {
      fprintf(stderr, "soak: stopping after %d broken promises\n", broken);
      break;
    }
  }
  double el = now_s() - t0;
  uint64_t rss_end = gf_proc_rss_bytes();
  if (!rss_warm) {
    rss_warm = rss_end;
    loaders_warm = tot.loaders;
  }
  /* The peak inside a loader's life is not seen between loaders: sample it
   * from the kernel's high-water mark too. */
  FILE *st = fopen("/proc/self/status", "r");
  char line[256];
  uint64_t hwm = 0;
  while (st && fgets(line, sizeof line, st))
    if (sscanf(line, "VmHWM: %llu kB", (unsigned long long *)&hwm) == 1)
      hwm <<= 10;
  if (st)
    fclose(st);
  uint64_t bound =
      RSS_GROWTH_BOUND + (tot.loaders - loaders_warm) * PER_LOADER_SANITIZER;
  PROMISE(rss_end <= rss_warm + bound,
          "resident memory grew from %.1f MiB after warm-up to %.1f MiB at "
          "the end (bound +%.1f MiB)",
          (double)rss_warm / 1048576, (double)rss_end / 1048576,
          (double)bound / 1048576);
  PROMISE(tot.epochs > 0, "no epoch completed");
  fixture_free(&fx[0]);
  fixture_free(&fx[1]);
  fixture_free(&fx[2]);
  free(seq);
  free(got);
  printf("soak: %.1f s, seed %llu: %llu loaders (%llu refused an empty "
         "share), %llu epochs, %llu batches, %llu samples checked, %llu "
         "resumes, %llu early destroys, %llu expected errors, %llu skips, "
         "%llu samples sent to the GPU straight from the pinned cache; "
         "RSS start %.1f MiB, after warm-up %.1f MiB, end %.1f MiB, peak "
         "%.1f MiB (bound: +%.1f MiB after warm-up); fds baseline %d, min "
         "%d, max %d%s\n",
         el, (unsigned long long)seed, (unsigned long long)tot.loaders,
         (unsigned long long)tot.refused, (unsigned long long)tot.epochs,
         (unsigned long long)tot.batches, (unsigned long long)tot.samples,
         (unsigned long long)tot.resumes, (unsigned long long)tot.early,
         (unsigned long long)tot.errors, (unsigned long long)tot.skips,
         (unsigned long long)tot.direct, (double)rss0 / 1048576, (double)rss_warm / 1048576,
         (double)rss_end / 1048576,
         (double)(hwm > rss_peak ? hwm : rss_peak) / 1048576,
         (double)bound / 1048576, base_fds, fd_min, fd_max,
         broken ? " - FAILED" : "");
  return broken || gf_test_failures ? 1 : 0;
}
