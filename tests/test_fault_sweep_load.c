/* Fault sweep over loading: a two-epoch load of a small dataset through
 * the loader API, with one fault injected (lib/common/fault.h) at every
 * call N of every fault site the load reaches, for each kind of fault.
 *
 * Loads: io_uring (when the kernel allows it), the pread pool, and
 * io_uring with a host cache (the second epoch then reads only what the
 * first could not deliver). Calls per site are counted in a clean run
 * first (sites armed to count only); the sweep then covers N = 1 .. count
 * (at most MAX_N) and count + 1 (where nothing may fail, except at read
 * sites, whose count varies with prefetching past the last epoch).
 *
 * Every run must give, for each epoch, either exactly-once correct data
 * (every sample once, pixels and labels equal to references decoded
 * independently), or next() errors, each with its code and message in
 * gf_last_error(), and otherwise correct batches with no sample twice.
 * create may fail only with a recorded error. Never a crash, a hang (an
 * alarm ends the test naming the case) or a leak (ASan's leak check at
 * exit). Stricter, per kind: EIO on a read fails exactly the batches it
 * hit; EINTR, EAGAIN and short reads are retried and invisible; io_uring
 * refused at setup falls back to the pread pool. Read sites also get a
 * sticky EIO (every read from call N on fails: a dying disk).
 *
 * With --gpu (ctest's test_fault_sweep_gpu; skips without a device, fails
 * without one under GPUFEED_REQUIRE_GPU=1) the same loads run in GPU mode
 * on device 0: no cache, a pinned cache gathered straight to the device,
 * and a pageable cache; the CUDA sites are swept as well, each failing as
 * cudaErrorMemoryAllocation (GF_EDEVOOM) and as another CUDA error
 * (GF_ECUDA). Per CUDA site: cudaMalloc (the device pool at create) may
 * only fail create; the staging slots' registration (cuda_stage_register)
 * fails create for slot 0 and, for a slot pinned in the background after
 * create, gives at most one next() error and loses no sample; a failed pin
 * of a cache chunk is absorbed (its samples are copied instead), and a
 * failed host-to-device copy fails exactly the batch it carried. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "gpu/stage.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_N 200
#define EPOCHS 2
#define RUN_ALARM_S 120

static const gf_fault_site sites[] = {
    GF_FAULT_OPEN,        GF_FAULT_READ,         GF_FAULT_PREAD,
    GF_FAULT_WRITE,       GF_FAULT_FSYNC,        GF_FAULT_RENAME,
    GF_FAULT_URING_SETUP, GF_FAULT_URING_CQE,    GF_FAULT_CUDA_MALLOC,
    GF_FAULT_CUDA_HOST_ALLOC, GF_FAULT_CUDA_HOST_REGISTER,
    GF_FAULT_CUDA_MEMCPY, GF_FAULT_CUDA_STAGE_REGISTER};
#define NSITES (sizeof sites / sizeof sites[0])

typedef struct what {
  const char *name;
  int err;        /* 0: short count */
  bool reads_only;
  unsigned flags; /* GF_FAULT_STICKY: every call from N on fails */
  bool cuda;      /* a CUDA call's failure (CUDA sites get only these) */
} what;
static const what whats[] = {{"EIO", -EIO, false, 0, false},
                             {"ENOSPC", -ENOSPC, false, 0, false},
                             {"EAGAIN", -EAGAIN, false, 0, false},
                             {"EINTR", -EINTR, false, 0, false},
                             {"EPERM", -EPERM, false, 0, false},
                             {"short", 0, true, 0, false},
                             {"EIO:sticky", -EIO, false, GF_FAULT_STICKY, false},
                             {"cudaErrorMemoryAllocation", GF_EDEVOOM, false,
                              0, true},
                             {"cuda error", GF_ECUDA, false, 0, true}};
#define NWHATS (sizeof whats / sizeof whats[0])

static bool is_read_site(gf_fault_site s) {
  return s == GF_FAULT_READ || s == GF_FAULT_PREAD || s == GF_FAULT_URING_CQE;
}

static bool is_cuda_site(gf_fault_site s) {
  return s == GF_FAULT_CUDA_MALLOC || s == GF_FAULT_CUDA_HOST_ALLOC ||
         s == GF_FAULT_CUDA_HOST_REGISTER || s == GF_FAULT_CUDA_MEMCPY ||
         s == GF_FAULT_CUDA_STAGE_REGISTER;
}

/* A site called once a batch, by workers that run on into an epoch nobody
 * takes: its count in a clean run varies by a few batches. */
static bool is_batch_site(gf_fault_site s) {
  return is_read_site(s) || s == GF_FAULT_CUDA_MEMCPY;
}

/* Which kinds each site gets: ENOSPC only where something is written,
 * EPERM where a kernel really answers it (ring setup under seccomp), CUDA
 * errors at the CUDA sites and nowhere else. */
static bool applies(gf_fault_site s, const what *w) {
  if (is_cuda_site(s) != w->cuda)
    return false;
  if (w->cuda)
    return true;
  if (w->flags & GF_FAULT_STICKY)
    return is_read_site(s) || s == GF_FAULT_OPEN;
  if (w->reads_only)
    return is_read_site(s) || s == GF_FAULT_WRITE;
  if (w->err == -ENOSPC)
    return s == GF_FAULT_WRITE || s == GF_FAULT_FSYNC;
  if (w->err == -EPERM)
    return s == GF_FAULT_URING_SETUP || s == GF_FAULT_OPEN;
  return true;
}

static char current[256];

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "HANG: a faulted load ran past the alarm: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  w = write(2, current, strlen(current));
  w = write(2, "\n", 1);
  (void)w;
  _exit(1);
}

static uint64_t calls_of(const uint64_t *calls, gf_fault_site site) {
  for (size_t i = 0; i < NSITES; i++)
    if (sites[i] == site)
      return calls[i];
  return 0;
}

typedef struct outcome {
  int create_rc;
  int errors[EPOCHS];
  uint64_t lost[EPOCHS]; /* samples of the epoch never delivered */
  int bad; /* broken promises found (each printed) */
} outcome;

/* Creates a loader from cfg, runs EPOCHS epochs and checks every batch. */
static void run(const fixture *f, const gf_loader_config *cfg, outcome *o) {
  memset(o, 0, sizeof *o);
  gf_loader *l = NULL;
  o->create_rc = gf_loader_create(cfg, &l);
  if (o->create_rc < 0) {
    const gf_error_info *e = gf_last_error();
    if (e->code != o->create_rc || !e->message[0] || l) {
      fprintf(stderr, "%s: create returned %s without its context\n", current,
              gf_err_name(o->create_rc));
      o->bad++;
    }
    return;
  }
  uint32_t *seen = calloc(f->n, sizeof *seen);
  for (int e = 0; e < EPOCHS; e++) {
    memset(seen, 0, f->n * sizeof *seen);
    uint64_t delivered = 0;
    int rc;
    gf_batch *b;
    while ((rc = gf_loader_next(l, &b)) != GF_EEPOCHEND) {
      if (rc < 0) {
        const gf_error_info *ei = gf_last_error();
        if (ei->code != rc || !ei->message[0]) {
          fprintf(stderr, "%s: epoch %d: next returned %s without context\n",
                  current, e, gf_err_name(rc));
          o->bad++;
        }
        if (++o->errors[e] > 100) {
          fprintf(stderr, "%s: epoch %d: more than 100 errors\n", current, e);
          o->bad++;
          break;
        }
        continue;
      }
      if (b->epoch != (uint64_t)e) {
        fprintf(stderr, "%s: batch of epoch %llu in epoch %d\n", current,
                (unsigned long long)b->epoch, e);
        o->bad++;
      }
      int mism = fixture_check_batch(f, b);
      if (mism) {
        fprintf(stderr, "%s: epoch %d: %d sample(s) differ from the "
                "references\n", current, e, mism);
        o->bad++;
      }
      for (uint32_t j = 0; j < b->count; j++)
        if (b->indices[j] < f->n && seen[b->indices[j]]++) {
          fprintf(stderr, "%s: epoch %d: sample %llu delivered twice\n",
                  current, e, (unsigned long long)b->indices[j]);
          o->bad++;
        }
      delivered += b->count;
      gf_loader_release(l, b);
    }
    uint64_t lost = f->n - delivered;
    o->lost[e] = lost;
    if (o->errors[e] == 0 && lost) {
      fprintf(stderr, "%s: epoch %d: %llu sample(s) missing without an "
              "error\n", current, e, (unsigned long long)lost);
      o->bad++;
    }
    if (lost > (uint64_t)o->errors[e] * cfg->batch_size) {
      fprintf(stderr, "%s: epoch %d: %llu sample(s) missing for %d failed "
              "batch(es)\n", current, e, (unsigned long long)lost,
              o->errors[e]);
      o->bad++;
    }
  }
  free(seen);
  gf_loader_destroy(l);
}

typedef struct load_cfg {
  const char *name;
  uint32_t backend;
  uint64_t cache;
  uint32_t cache_direct;
} load_cfg;

static const load_cfg host_loads[] = {
    {"io_uring", GF_IO_AUTO, 0, GF_CACHE_DIRECT_AUTO},
    {"pread", GF_IO_PREAD, 0, GF_CACHE_DIRECT_AUTO},
    {"io_uring+cache", GF_IO_AUTO, 1 << 20, GF_CACHE_DIRECT_AUTO}};
static const load_cfg gpu_loads[] = {
    {"gpu", GF_IO_AUTO, 0, GF_CACHE_DIRECT_AUTO},
    {"gpu+pinned cache", GF_IO_AUTO, 1 << 20, GF_CACHE_DIRECT_AUTO},
    {"gpu+pageable cache", GF_IO_PREAD, 1 << 20, GF_CACHE_DIRECT_OFF}};

int main(int argc, char **argv) {
  bool gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  if (argc > 1 && !gpu) {
    fprintf(stderr, "usage: test_fault_sweep_load [--gpu]\n");
    return 2;
  }
  char why[256];
  if (gpu && !gf_stage_probe(0, why, sizeof why))
    gf_test_skip(true, "no GPU for the GPU-mode sweep: %s", why);
  signal(SIGALRM, on_alarm);
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 24, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();

  const load_cfg *loads = gpu ? gpu_loads : host_loads;
  size_t nloads = gpu ? sizeof gpu_loads / sizeof gpu_loads[0]
                      : sizeof host_loads / sizeof host_loads[0];
  unsigned long values = 0, site_sweeps = 0, absorbed = 0, failed = 0,
                create_failed = 0, eio_seen = 0, cuda_runs = 0,
                cuda_create_failed = 0, cuda_batch_failed = 0;
  uint64_t staging_regs = 0; /* cudaHostRegister calls of an uncached load */
  for (size_t li = 0; li < nloads; li++) {
    const load_cfg *lc = &loads[li];
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.device = gpu ? 0 : GF_DEVICE_CPU;
    cfg.cache_direct = lc->cache_direct;
    cfg.channels = 3;
    cfg.batch_size = 5;
    cfg.threads = 2;
    cfg.seed = 3;
    cfg.prefetch = 2;
    cfg.io_backend = lc->backend;
    cfg.cache_bytes = lc->cache;

    /* The clean run: correct, and the calls each site sees. */
    for (size_t i = 0; i < NSITES; i++)
      gf_fault_arm(sites[i], 0, -EIO, 0);
    snprintf(current, sizeof current, "%s clean", lc->name);
    outcome o;
    alarm(RUN_ALARM_S);
    run(&f, &cfg, &o);
    alarm(0);
    uint64_t calls[NSITES];
    for (size_t i = 0; i < NSITES; i++)
      calls[i] = gf_fault_calls(sites[i]);
    gf_fault_disarm_all();
    CHECK(o.create_rc == 0 && o.bad == 0 && o.errors[0] == 0 &&
          o.errors[1] == 0);
    printf("%s: calls per site:", lc->name);
    for (size_t i = 0; i < NSITES; i++)
      printf(" %s %llu", gf_fault_site_name(sites[i]),
             (unsigned long long)calls[i]);
    printf("\n");
    if (gpu) {
      /* Every GPU load reaches the pool's cudaMalloc, the staging slots'
       * registration and a copy a batch; a pinned cache pins its chunk
       * besides (gpu_loads[0] has no cache, so it counts the slots'). */
      uint64_t reg = calls_of(calls, GF_FAULT_CUDA_HOST_REGISTER);
      CHECK(calls_of(calls, GF_FAULT_CUDA_MALLOC) > 0 &&
            calls_of(calls, GF_FAULT_CUDA_STAGE_REGISTER) > 0 &&
            calls_of(calls, GF_FAULT_CUDA_MEMCPY) > 0);
      if (!lc->cache)
        staging_regs = reg; /* one a staging slot */
      else if (lc->cache_direct == GF_CACHE_DIRECT_AUTO)
        CHECK(reg > staging_regs);
      else
        CHECK(reg == staging_regs);
    }
    if (lc->backend == GF_IO_AUTO && calls_of(calls, GF_FAULT_URING_CQE) == 0)
      printf("%s: io_uring is not available here; the load used pread\n",
             lc->name);

    /* Reads (copies) of the clean run that may not belong to the epochs
     * run: a batch a slot prefetched into the next epoch, plus one batch
     * whose reads may interleave with those. */
    uint64_t margin = ((uint64_t)cfg.prefetch + 1) * cfg.batch_size;
    uint64_t copy_margin = (uint64_t)cfg.prefetch + 1;
    for (size_t si = 0; si < NSITES; si++) {
      gf_fault_site site = sites[si];
      if (!calls[si])
        continue;
      site_sweeps++;
      uint64_t top = calls[si] < MAX_N ? calls[si] : MAX_N;
      for (uint64_t n = 1; n <= top + 1; n++) {
        for (size_t wi = 0; wi < NWHATS; wi++) {
          const what *w = &whats[wi];
          if (!applies(site, w))
            continue;
          snprintf(current, sizeof current, "%s, %s call %llu: %s", lc->name,
                   gf_fault_site_name(site), (unsigned long long)n, w->name);
          CHECK_OK(gf_fault_arm(site, n, w->err,
                                w->flags | (w->err ? 0 : GF_FAULT_SHORT)));
          alarm(RUN_ALARM_S);
          run(&f, &cfg, &o);
          alarm(0);
          uint64_t fired = gf_fault_fired(site);
          gf_fault_disarm_all();
          values++;
          gf_test_failures += o.bad;
          int errs = o.errors[0] + o.errors[1];
          if (o.create_rc < 0)
            create_failed++;
          else if (errs)
            failed++;
          else
            absorbed++;
          /* Past the count nothing may fail. Not checked for reads: after
           * the last epoch the workers go on into the next one until
           * destroy, and their reads interleave with the last batch's, so
           * the number of reads varies by up to a few batches from run to
           * run and read count + 1 may be one of the epochs run. */
          if (n > calls[si] && !is_batch_site(site) &&
              (o.create_rc < 0 || errs)) {
            fprintf(stderr, "%s: past the clean run's %llu calls, yet the "
                    "load failed\n", current, (unsigned long long)calls[si]);
            gf_test_failures++;
          }
          if (is_cuda_site(site) && o.create_rc == 0) {
            cuda_runs++;
            /* A staging slot pinned after create: its failure is said
             * once by next(), and the loader goes on without the slot. */
            if (site == GF_FAULT_CUDA_STAGE_REGISTER &&
                ((uint64_t)errs > fired || o.lost[0] || o.lost[1])) {
              fprintf(stderr, "%s: a failed background pin gave %d "
                      "error(s) and lost %llu + %llu sample(s)\n",
                      current, errs, (unsigned long long)o.lost[0],
                      (unsigned long long)o.lost[1]);
              gf_test_failures++;
            }
            /* After create, only a copy may fail a batch: a chunk of the
             * cache that cannot be pinned stays pageable and is copied. */
            if (site != GF_FAULT_CUDA_MEMCPY &&
                site != GF_FAULT_CUDA_STAGE_REGISTER && errs) {
              fprintf(stderr, "%s: a fault after create that must be "
                      "absorbed gave %d error(s)\n", current, errs);
              gf_test_failures++;
            }
            if (site == GF_FAULT_CUDA_MEMCPY && (uint64_t)errs > fired) {
              fprintf(stderr, "%s: one failed copy gave %d errors\n",
                      current, errs);
              gf_test_failures++;
            }
            if (site == GF_FAULT_CUDA_MEMCPY && n + copy_margin <= calls[si] &&
                errs != 1) {
              fprintf(stderr, "%s: a failed copy in the epochs run gave %d "
                      "errors, wanted 1\n", current, errs);
              gf_test_failures++;
            }
            cuda_batch_failed += site == GF_FAULT_CUDA_MEMCPY && errs == 1;
          } else if (is_cuda_site(site)) {
            cuda_create_failed++;
          }
          if (!is_read_site(site) || o.create_rc < 0)
            continue;
          /* Reads: retried kinds are invisible; an EIO fails the batch it
           * hit and nothing more (a read serves one batch). */
          if ((w->err == -EINTR || w->err == -EAGAIN || w->err == 0) && errs) {
            fprintf(stderr, "%s: a retried fault surfaced as %d error(s)\n",
                    current, errs);
            gf_test_failures++;
          }
          if (w->flags & GF_FAULT_STICKY)
            continue; /* a dead disk: the checks in run() are all */
          if (w->err == -EIO && (uint64_t)errs > fired) {
            fprintf(stderr, "%s: one EIO gave %d errors\n", current, errs);
            gf_test_failures++;
          }
          if (w->err == -EIO && n + margin <= calls[si] && errs != 1) {
            fprintf(stderr, "%s: an EIO read in the epochs run gave %d "
                    "errors, wanted 1\n", current, errs);
            gf_test_failures++;
          }
          if (w->err == -EIO)
            eio_seen += errs == 1;
        }
      }
    }
  }
  printf("fault sweep (loader, %s mode, %d epochs of %llu samples): %lu site "
         "sweeps, %lu faulted runs (site x N x error): %lu loads absorbed the "
         "fault, %lu delivered errors (%lu read EIOs failed exactly their "
         "batch), %lu creates failed cleanly\n",
         gpu ? "GPU" : "host", EPOCHS, (unsigned long long)f.n, site_sweeps,
         values, absorbed, failed, eio_seen, create_failed);
  if (gpu)
    printf("CUDA sites: %lu faults failed create cleanly, %lu hit a running "
           "loader (%lu failed copies failed exactly their batch, the rest "
           "absorbed)\n",
           cuda_create_failed, cuda_runs, cuda_batch_failed);
  fixture_free(&f);
  return gf_test_finish();
}
