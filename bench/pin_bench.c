/* What pinning a staging slot costs, by way of making its pages and
 * registering them: the loader's GPU stage pins a slot of batch_size x the
 * largest decoded sample (192 MB for 256 samples of 500x500x3), and create
 * pays for the first one. Each way below works on a fresh anonymous
 * mapping of --mb MB, --reps times, and reports the median of the steps in
 * ms (one JSON line each with --json):
 *
 *   populate+register   mmap(MAP_POPULATE), then cudaHostRegister (mapped):
 *                       what create did for every slot before
 *   madvise+register    mmap, madvise(MADV_POPULATE_WRITE), register (the
 *                       pages made outside the driver, small pages)
 *   register            mmap, register alone (the driver faults the pages)
 *   hugepage+register   mmap, madvise(MADV_HUGEPAGE), MADV_POPULATE_WRITE,
 *                       register: transparent huge pages, if the kernel
 *                       gives them (what gf_stage_pin does in the
 *                       background, one thread)
 *   hugepage xT+register the same with the pages made by T threads on
 *                       parts of whole 2 MiB pages: what create does for
 *                       slot 0 (T = the loader's threads, at most 8)
 *   chunks xT+register  MADV_POPULATE_WRITE, then T registrations of 1/T
 *                       of the slot from T threads at once (a slot made of
 *                       several registrations: only to see whether the
 *                       driver's work spreads over threads)
 *   cudaHostAlloc       the driver's own pinned allocation, for reference
 *
 * Every way frees its memory before the next. The CUDA context is made
 * first and not counted.
 *
 *   pin_bench [--mb 192] [--reps 5] [--threads 4] [--device 0] [--json]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifdef GPUFEED_HAVE_CUDA
#include <cuda_runtime.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum way {
  POPULATE_REGISTER,
  MADVISE_REGISTER,
  REGISTER,
  HUGEPAGE_REGISTER,
  HUGEPAGE_THREADS_REGISTER,
  CHUNKS_REGISTER,
  HOST_ALLOC,
  NWAYS
};
static const char *const way_name[NWAYS] = {
    "populate+register", "madvise+register", "register",
    "hugepage+register", "hugepage x", "chunks+register", "cudaHostAlloc"};

typedef struct chunk_arg {
  void *p;
  size_t len;
  cudaError_t e;
} chunk_arg;

static void *register_chunk(void *arg) {
  chunk_arg *c = arg;
  c->e = cudaHostRegister(c->p, c->len, cudaHostRegisterMapped);
  return NULL;
}

static int populate(void *p, size_t len) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
    return 0;
#endif
  for (size_t o = 0; o < len; o += 4096)
    ((volatile char *)p)[o] = 0;
  return 0;
}

typedef struct pages_arg {
  void *p;
  size_t len;
} pages_arg;

static void *populate_part(void *arg) {
  pages_arg *a = arg;
  populate(a->p, a->len);
  return NULL;
}

/* Populates with T threads on parts of whole 2 MiB pages. */
static void populate_threads(void *p, size_t len, int threads) {
  pthread_t th[64];
  pages_arg args[64];
  size_t per = (len / (size_t)threads + (2u << 20) - 1) &
               ~(size_t)((2u << 20) - 1);
  int n = 0;
  for (size_t off = 0; off < len && n < threads; off += per, n++) {
    args[n] = (pages_arg){(char *)p + off, off + per > len ? len - off : per};
    pthread_create(&th[n], NULL, populate_part, &args[n]);
  }
  for (int k = 0; k < n; k++)
    pthread_join(th[k], NULL);
}

/* One run of way w: *make_ms (the pages), *reg_ms (the registration).
 * Returns 0 or -1 with the reason printed. */
static int run(enum way w, size_t len, int threads, double *make_ms,
               double *reg_ms) {
  *make_ms = *reg_ms = 0;
  double t0 = now_ms();
  if (w == HOST_ALLOC) {
    void *p;
    cudaError_t e = cudaHostAlloc(&p, len, cudaHostAllocMapped);
    *reg_ms = now_ms() - t0;
    if (e != cudaSuccess) {
      fprintf(stderr, "cudaHostAlloc: %s\n", cudaGetErrorString(e));
      return -1;
    }
    cudaFreeHost(p);
    return 0;
  }
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (w == POPULATE_REGISTER)
    flags |= MAP_POPULATE;
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "mmap %zu bytes: %s\n", len, strerror(errno));
    return -1;
  }
  if (w == HUGEPAGE_REGISTER || w == HUGEPAGE_THREADS_REGISTER)
    madvise(p, len, MADV_HUGEPAGE);
  if (w == MADVISE_REGISTER || w == HUGEPAGE_REGISTER || w == CHUNKS_REGISTER)
    populate(p, len);
  if (w == HUGEPAGE_THREADS_REGISTER)
    populate_threads(p, len, threads);
  double t1 = now_ms();
  *make_ms = t1 - t0;
  int rc = 0;
  if (w == CHUNKS_REGISTER) {
    pthread_t th[64];
    chunk_arg args[64];
    size_t per = (len / (size_t)threads + 4095) / 4096 * 4096;
    int n = 0;
    for (size_t off = 0; off < len && n < threads; off += per, n++) {
      args[n] = (chunk_arg){(char *)p + off, off + per > len ? len - off : per,
                            cudaSuccess};
      pthread_create(&th[n], NULL, register_chunk, &args[n]);
    }
    for (int k = 0; k < n; k++)
      pthread_join(th[k], NULL);
    *reg_ms = now_ms() - t1;
    for (int k = 0; k < n; k++) {
      if (args[k].e != cudaSuccess) {
        fprintf(stderr, "cudaHostRegister (chunk %d): %s\n", k,
                cudaGetErrorString(args[k].e));
        rc = -1;
      } else {
        cudaHostUnregister(args[k].p);
      }
    }
  } else {
    cudaError_t e = cudaHostRegister(p, len, cudaHostRegisterMapped);
    *reg_ms = now_ms() - t1;
    if (e != cudaSuccess) {
      fprintf(stderr, "cudaHostRegister: %s\n", cudaGetErrorString(e));
      rc = -1;
    } else {
      cudaHostUnregister(p);
    }
  }
  munmap(p, len);
  return rc;
}

int main(int argc, char **argv) {
  double mb = 192;
  int reps = 5, threads = 4, device = 0, json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mb") && i + 1 < argc)
      mb = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device") && i + 1 < argc)
      device = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else {
      fprintf(stderr, "usage: pin_bench [--mb 192] [--reps 5] [--threads 4] "
                      "[--device 0] [--json]\n");
      return 2;
    }
  }
  if (mb <= 0 || reps < 1 || reps > 1000 || threads < 1 || threads > 64) {
    fprintf(stderr, "pin_bench: --mb > 0, --reps 1..1000, --threads 1..64\n");
    return 2;
  }
  size_t len = ((size_t)(mb * 1e6) + 4095) / 4096 * 4096;
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    fprintf(stderr, "pin_bench: no usable CUDA device %d\n", device);
    return 77;
  }
  double *make = calloc((size_t)reps, sizeof *make);
  double *reg = calloc((size_t)reps, sizeof *reg);
  double *total = calloc((size_t)reps, sizeof *total);
  int failed = 0;
  if (!json)
    printf("%-22s %10s %12s %10s  (median of %d, %zu bytes)\n", "way",
           "pages ms", "register ms", "total ms", reps, len);
  for (int w = 0; w < NWAYS; w++) {
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
      ok = run((enum way)w, len, threads, &make[r], &reg[r]) == 0;
      total[r] = make[r] + reg[r];
    }
    if (!ok) {
      failed = 1;
      continue;
    }
    double m = median(make, reps), g = median(reg, reps),
           t = median(total, reps);
    char name[64];
    if (w == CHUNKS_REGISTER)
      snprintf(name, sizeof name, "chunks x%d+register", threads);
    else if (w == HUGEPAGE_THREADS_REGISTER)
      snprintf(name, sizeof name, "hugepage x%d+register", threads);
    else
      snprintf(name, sizeof name, "%s", way_name[w]);
    if (json)
      printf("{\"way\":\"%s\",\"bytes\":%zu,\"reps\":%d,\"pages_ms\":%.2f,"
             "\"register_ms\":%.2f,\"total_ms\":%.2f,\"gb_per_s\":%.2f}\n",
             name, len, reps, m, g, t, (double)len / (t * 1e6));
    else
      printf("%-22s %10.2f %12.2f %10.2f  (%.2f GB/s)\n", name, m, g, t,
             (double)len / (t * 1e6));
  }
  free(make);
  free(reg);
  free(total);
  return failed;
}
#else
int main(void) {
  fprintf(stderr, "pin_bench: built without CUDA\n");
  return 77;
}
#endif
