/* The pages of an index read on demand (pages.h). */
#include "format/pages.h"

#include "io/io.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* the image: reserved, filled page by page */

enum { PG_ABSENT, PG_READING, PG_READY };

struct gf_pages {
  gf_object *obj;
  char *path;
  uint8_t *image;
  uint64_t size, npages;
  _Atomic uint8_t *state; /* PG_*, a page */
  pthread_mutex_t mu;     /* state's changes */
  pthread_cond_t cv;      /* a read of pages ended */
  pthread_mutex_t rd_mu;  /* rd: a reader serves one thread at a time */
  gf_reader *rd;
  bool no_engine; /* no reader over the storage: reads one at a time */
  _Atomic uint64_t reads, bytes, ready;
};

/* Pages [p0, p1) read with one request, and how it went. */
typedef struct run {
  uint64_t p0, p1;
  int rc;
  char why[256];
} run;

int gf_pages_create(gf_object *o, uint64_t size, const char *path,
                    gf_pages **out) {
  *out = NULL;
  gf_pages *p = calloc(1, sizeof *p);
  if (!p || !(p->path = strdup(path))) {
    free(p);
    return gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  p->obj = o;
  p->size = size;
  p->npages = (size + GF_PAGE_SIZE - 1) / GF_PAGE_SIZE;
  p->state = calloc(p->npages ? (size_t)p->npages : 1, sizeof *p->state);
  /* Address space only: a page takes memory once it is read into. */
  void *img = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (!p->state || img == MAP_FAILED) {
    int e = img == MAP_FAILED ? errno : ENOMEM;
    if (img != MAP_FAILED)
      munmap(img, (size_t)size);
    free((void *)p->state);
    free(p->path);
    free(p);
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot reserve memory for the %llu-byte index: %s",
                   (unsigned long long)size, strerror(e));
  }
  p->image = img;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_mutex_init(&p->rd_mu, NULL);
  *out = p;
  return 0;
}

void gf_pages_destroy(gf_pages *p) {
  if (!p)
    return;
  gf_reader_destroy(p->rd);
  munmap(p->image, (size_t)p->size);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->rd_mu);
  free((void *)p->state);
  free(p->path);
  free(p);
}

const uint8_t *gf_pages_image(const gf_pages *p) { return p->image; }

void gf_pages_fill(gf_pages *p, const void *src, uint64_t len) {
  if (len > p->size)
    len = p->size;
  memcpy(p->image, src, (size_t)len);
  /* Whole pages, and the last one where the bytes reach the end. */
  uint64_t full = len == p->size ? p->npages : len / GF_PAGE_SIZE;
  for (uint64_t q = 0; q < full; q++)
    atomic_store_explicit(&p->state[q], PG_READY, memory_order_release);
  atomic_fetch_add(&p->ready, full);
}

bool gf_pages_ready(const gf_pages *p, uint64_t off, uint64_t len) {
  if (!len)
    return true;
  for (uint64_t q = off / GF_PAGE_SIZE; q <= (off + len - 1) / GF_PAGE_SIZE;
       q++)
    if (atomic_load_explicit(&p->state[q], memory_order_acquire) != PG_READY)
      return false;
  return true;
}

void gf_pages_counters(const gf_pages *p, uint64_t *reads, uint64_t *bytes,
                       uint64_t *pages) {
  *reads = atomic_load(&p->reads);
  *bytes = atomic_load(&p->bytes);
  *pages = atomic_load(&p->ready);
}

static void run_extent(const gf_pages *p, const run *r, uint64_t *off,
                       uint64_t *len) {
  uint64_t end = r->p1 * GF_PAGE_SIZE;
  *off = r->p0 * GF_PAGE_SIZE;
  *len = (end < p->size ? end : p->size) - *off;
}

static void run_done(gf_pages *p, run *r, int64_t got, uint64_t len,
                     const char *why) {
  if (got >= 0 && (uint64_t)got == len) {
    r->rc = 0;
    atomic_fetch_add(&p->reads, 1);
    atomic_fetch_add(&p->bytes, len);
    return;
  }
  r->rc = got < 0 ? (int)got : GF_ETRUNCATED;
  if (got >= 0)
    snprintf(r->why, sizeof r->why,
             "the object ended after %lld of the %llu bytes", (long long)got,
             (unsigned long long)len);
  else
    gf_strlcpy(r->why, why && why[0] ? why : gf_strerror(r->rc), sizeof r->why);
}

/* One read at a time, on the calling thread. */
static void read_each(gf_pages *p, run *runs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t off, len;
    run_extent(p, &runs[i], &off, &len);
    int64_t got = gf_object_read_upto(p->obj, p->image + off, off, len);
    run_done(p, &runs[i], got, len, got < 0 ? gf_last_error()->message : "");
  }
}

/* Many at once through a reader over the storage's engine (made on first
 * use and kept: its connections serve the next pages too). */
static void read_many(gf_pages *p, run *runs, size_t n) {
  pthread_mutex_lock(&p->rd_mu);
  if (!p->rd && !p->no_engine) {
    gf_reader_opts ro = GF_READER_OPTS_INIT;
    ro.storage = p->obj->st;
    ro.queue_depth = GF_PAGE_READS_IN_FLIGHT;
    ro.max_pending = GF_PAGE_READS_IN_FLIGHT;
    gf_error_info saved = *gf_last_error();
    if (!p->obj->st->ops->engine || gf_reader_create(&ro, &p->rd) < 0) {
      p->no_engine = true;
      p->rd = NULL;
    }
    gf_error_restore(&saved);
  }
  if (!p->rd) {
    pthread_mutex_unlock(&p->rd_mu);
    read_each(p, runs, n);
    return;
  }
  size_t next = 0, done = 0;
  unsigned out = 0;
  while (done < n) {
    gf_read_req reqs[GF_PAGE_READS_IN_FLIGHT];
    unsigned k = 0;
    while (next < n && out + k < GF_PAGE_READS_IN_FLIGHT) {
      uint64_t off, len;
      run_extent(p, &runs[next], &off, &len);
      reqs[k++] = (gf_read_req){.obj = p->obj,
                                .offset = off,
                                .length = len,
                                .buf = p->image + off,
                                .user_data = next};
      next++;
    }
    if (k) {
      int rc = gf_reader_submit(p->rd, reqs, k);
      if (rc < 0) {
        for (unsigned i = 0; i < k; i++)
          run_done(p, &runs[reqs[i].user_data], rc, 0,
                   gf_last_error()->message);
        done += k;
      } else {
        out += k;
      }
    }
    if (!out)
      continue;
    gf_read_done d[GF_PAGE_READS_IN_FLIGHT];
    int got = gf_reader_wait(p->rd, d, GF_PAGE_READS_IN_FLIGHT, 1);
    if (got < 0) {
      /* The reader failed as a whole: what it still held and what was not
       * sent fail with it, and the next call makes a fresh one. */
      char why[256];
      gf_strlcpy(why, gf_last_error()->message, sizeof why);
      gf_reader_destroy(p->rd);
      p->rd = NULL;
      for (size_t i = 0; i < n; i++)
        if (i >= next || runs[i].rc == 1)
          run_done(p, &runs[i], got, 0, why);
      break;
    }
    for (int i = 0; i < got; i++) {
      run *r = &runs[d[i].user_data];
      uint64_t off, len;
      run_extent(p, r, &off, &len);
      run_done(p, r, d[i].result, len, d[i].why);
      out--;
      done++;
    }
  }
  pthread_mutex_unlock(&p->rd_mu);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Marks the absent pages of the ranges as being read by the caller and
 * lists them (*mine, sorted). Under mu. */
static int claim(gf_pages *p, const gf_range *r, size_t n, uint64_t **mine,
                 size_t *nm) {
  size_t cap = 0;
  *mine = NULL;
  *nm = 0;
  for (size_t i = 0; i < n; i++) {
    if (!r[i].len)
      continue;
    uint64_t q1 = (r[i].off + r[i].len - 1) / GF_PAGE_SIZE;
    for (uint64_t q = r[i].off / GF_PAGE_SIZE; q <= q1; q++) {
      if (atomic_load_explicit(&p->state[q], memory_order_relaxed) != PG_ABSENT)
        continue;
      if (*nm == cap) {
        size_t nc = cap ? 2 * cap : 64;
        uint64_t *g = realloc(*mine, nc * sizeof *g);
        if (!g)
          return -ENOMEM; /* the pages claimed so far are listed */
        *mine = g;
        cap = nc;
      }
      atomic_store_explicit(&p->state[q], PG_READING, memory_order_relaxed);
      (*mine)[(*nm)++] = q;
    }
  }
  if (*nm > 1)
    qsort(*mine, *nm, sizeof **mine, cmp_u64);
  return 0;
}

/* Reads the claimed pages, publishes them (or gives back those whose
 * read failed) and returns the first failure, named. */
static int read_claimed(gf_pages *p, const uint64_t *mine, size_t nm,
                        uint64_t sample) {
  size_t nr = 0;
  run *runs = calloc(nm, sizeof *runs);
  if (runs) {
    for (size_t i = 0; i < nm;) {
      size_t j = i + 1;
      while (j < nm && mine[j] == mine[j - 1] + 1 &&
             (mine[j] - mine[i] + 1) * GF_PAGE_SIZE <= GF_PAGE_RUN_MAX)
        j++;
      runs[nr] = (run){.p0 = mine[i], .p1 = mine[j - 1] + 1, .rc = 1};
      nr++;
      i = j;
    }
    if (nr > 1)
      read_many(p, runs, nr);
    else
      read_each(p, runs, nr);
  }
  int rc = runs ? 0 : -ENOMEM;
  uint64_t at = mine[0] * GF_PAGE_SIZE, end = at;
  char why[256] = "out of memory";
  pthread_mutex_lock(&p->mu);
  for (size_t i = 0; i < nr; i++) {
    int ok = runs[i].rc == 0;
    for (uint64_t q = runs[i].p0; q < runs[i].p1; q++)
      atomic_store_explicit(&p->state[q], ok ? PG_READY : PG_ABSENT,
                            memory_order_release);
    if (ok) {
      atomic_fetch_add(&p->ready, runs[i].p1 - runs[i].p0);
    } else if (!rc) {
      rc = runs[i].rc;
      run_extent(p, &runs[i], &at, &end);
      end += at;
      gf_strlcpy(why, runs[i].why, sizeof why);
    }
  }
  if (!runs)
    for (size_t i = 0; i < nm; i++)
      atomic_store_explicit(&p->state[mine[i]], PG_ABSENT,
                            memory_order_release);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  free(runs);
  if (rc < 0)
    return gf_fail(rc, p->path, sample, at,
                   "reading bytes %llu to %llu of the index: %s",
                   (unsigned long long)at, (unsigned long long)end, why);
  return 0;
}

int gf_pages_load(gf_pages *p, const gf_range *r, size_t n, uint64_t sample) {
  bool all = true;
  for (size_t i = 0; i < n && all; i++)
    all = gf_pages_ready(p, r[i].off, r[i].len);
  if (all)
    return 0;
  /* A page another thread reads is waited for; one whose read failed
   * there is read here (a few times at most, if others keep failing it
   * first). */
  for (int round = 0; round < 4; round++) {
    uint64_t *mine;
    size_t nm;
    pthread_mutex_lock(&p->mu);
    int rc = claim(p, r, n, &mine, &nm);
    if (rc < 0) { /* give back what was claimed */
      for (size_t i = 0; i < nm; i++)
        atomic_store_explicit(&p->state[mine[i]], PG_ABSENT,
                              memory_order_relaxed);
      pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (rc < 0) {
      free(mine);
      return gf_fail(rc, p->path, sample, GF_NO_INDEX,
                     "out of memory for the list of index pages to read");
    }
    if (nm)
      rc = read_claimed(p, mine, nm, sample);
    free(mine);
    if (rc < 0)
      return rc;
    bool absent = false;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < n; i++) {
      if (!r[i].len)
        continue;
      uint64_t q1 = (r[i].off + r[i].len - 1) / GF_PAGE_SIZE;
      for (uint64_t q = r[i].off / GF_PAGE_SIZE; q <= q1; q++) {
        uint8_t s;
        while ((s = atomic_load_explicit(&p->state[q], memory_order_acquire)) ==
               PG_READING)
          pthread_cond_wait(&p->cv, &p->mu);
        absent |= s == PG_ABSENT;
      }
    }
    pthread_mutex_unlock(&p->mu);
    if (!absent)
      return 0;
  }
  return gf_fail(-EIO, p->path, sample, r[0].off,
                 "index pages at bytes %llu and after: every read of them "
                 "failed in other threads",
                 (unsigned long long)r[0].off);
}
