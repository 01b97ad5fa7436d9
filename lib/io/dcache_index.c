/* Which ranges an object version's folder holds (io/dcache.h): kept in
 * memory, learned from this process's writes and from listings of the
 * folder (other processes' writes). */
#include "io/dcache.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_range(const void *a, const void *b) {
  const gf_dcache_range *x = a, *y = b;
  if (x->off != y->off)
    return x->off < y->off ? -1 : 1;
  return (x->len > y->len) - (x->len < y->len);
}

/* The first range not before (off, len). */
static size_t lower(const gf_dcache_index *x, uint64_t off, uint64_t len) {
  size_t lo = 0, hi = x->n;
  gf_dcache_range k = {off, len};
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (cmp_range(&x->r[m], &k) < 0)
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

void gf_dcache_index_add(gf_dcache_index *x, uint64_t off, uint64_t len) {
  size_t i = lower(x, off, len);
  if (i < x->n && x->r[i].off == off && x->r[i].len == len)
    return;
  if (x->n == x->cap) {
    size_t nc = x->cap ? 2 * x->cap : 16;
    gf_dcache_range *r = realloc(x->r, nc * sizeof *r);
    if (!r)
      return; /* not known: found by a listing later, or fetched again */
    x->r = r;
    x->cap = nc;
  }
  memmove(&x->r[i + 1], &x->r[i], (x->n - i) * sizeof *x->r);
  x->r[i] = (gf_dcache_range){off, len};
  x->n++;
  if (len > x->max_len)
    x->max_len = len;
}

void gf_dcache_index_drop(gf_dcache_index *x, uint64_t off, uint64_t len) {
  size_t i = lower(x, off, len);
  if (i < x->n && x->r[i].off == off && x->r[i].len == len) {
    memmove(&x->r[i], &x->r[i + 1], (x->n - i - 1) * sizeof *x->r);
    x->n--;
  }
}

/* How many ranges start before v (at or before v with `at`). */
static size_t starting_before(const gf_dcache_index *x, uint64_t v, bool at) {
  size_t lo = 0, hi = x->n;
  while (lo < hi) {
    size_t m = (lo + hi) / 2;
    if (x->r[m].off < v || (at && x->r[m].off == v))
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

size_t gf_dcache_index_prefix(const gf_dcache_index *x, uint64_t a, uint64_t b,
                              gf_dcache_range *out, size_t max, uint64_t *end) {
  uint64_t cur = a;
  size_t n = 0;
  while (cur < b && n < max) {
    /* Of the ranges starting at or before cur, the one reaching furthest;
     * none starting max_len or more before cur reaches past it. */
    const gf_dcache_range *best = NULL;
    uint64_t reach = cur;
    for (size_t k = starting_before(x, cur, true);
         k-- > 0 && x->r[k].off + x->max_len > cur;)
      if (x->r[k].off + x->r[k].len > reach) {
        reach = x->r[k].off + x->r[k].len;
        best = &x->r[k];
      }
    if (!best)
      break;
    out[n++] = *best;
    cur = reach;
  }
  *end = cur < b ? cur : b;
  return n;
}

size_t gf_dcache_index_suffix(const gf_dcache_index *x, uint64_t a, uint64_t b,
                              gf_dcache_range *out, size_t max,
                              uint64_t *start) {
  uint64_t cur = b;
  size_t n = 0;
  while (cur > a && n < max) {
    /* Of the ranges starting before cur and reaching it, the one starting
     * first. */
    const gf_dcache_range *best = NULL;
    for (size_t k = starting_before(x, cur, false);
         k-- > 0 && x->r[k].off + x->max_len >= cur;)
      if (x->r[k].off + x->r[k].len >= cur &&
          (!best || x->r[k].off < best->off))
        best = &x->r[k];
    if (!best)
      break;
    out[n++] = *best;
    cur = best->off;
  }
  *start = cur > a ? cur : a;
  return n;
}

static bool same_time(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Replaces the ranges with what the folder holds. Returns whether a range
 * not known before was found. */
static bool list(gf_dcache_index *x) {
  DIR *d = opendir(x->dir);
  if (!d) {
    x->n = 0; /* no folder: nothing held */
    return false;
  }
  gf_dcache_range *old = x->r;
  size_t nold = x->n;
  x->r = NULL;
  x->n = x->cap = 0;
  x->max_len = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    uint64_t off, len, start;
    int pid;
    if (gf_dcache_name_parse(e->d_name, &off, &len, &pid, &start) ==
        GF_DCACHE_NAME_ENTRY)
      gf_dcache_index_add(x, off, len);
  }
  closedir(d);
  bool learned = false;
  for (size_t i = 0, j = 0; i < x->n && !learned; i++) {
    while (j < nold && cmp_range(&old[j], &x->r[i]) < 0)
      j++;
    learned = j == nold || cmp_range(&old[j], &x->r[i]) != 0;
  }
  free(old);
  return learned;
}

bool gf_dcache_index_refresh(gf_dcache_index *x, uint64_t off, uint64_t len,
                             bool listing) {
  bool learned = false;
  char path[4200];
  gf_dcache_entry_path(x->dir, off, len, "", path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) == 0) {
    size_t before = x->n;
    gf_dcache_index_add(x, off, len);
    learned = x->n != before;
  }
  uint64_t now = gf_dcache_now_ns();
  if (!listing || (x->listed && now - x->listed_ns < GF_DCACHE_RELIST_NS))
    return learned;
  if (stat(x->dir, &sb) < 0) {
    x->n = 0;
    x->listed = false;
    return learned;
  }
  if (x->listed && !x->racy && same_time(&sb.st_mtim, &x->listed_mtime))
    return learned;
  learned = list(x) || learned;
  x->listed = true;
  x->listed_mtime = sb.st_mtim;
  x->listed_ns = now;
  /* A change within the mtime's granularity (a timer tick) of the listing
   * may leave the mtime as it is: such a listing is not trusted. */
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  int64_t age = (int64_t)(wall.tv_sec - sb.st_mtim.tv_sec) * 1000000000 +
                (wall.tv_nsec - sb.st_mtim.tv_nsec);
  x->racy = age < 50000000;
  return learned;
}

void gf_dcache_index_free(gf_dcache_index *x) {
  free(x->r);
  x->r = NULL;
  x->n = x->cap = 0;
}
