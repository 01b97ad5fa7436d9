/* The device pool's allocator (lib/gpu/pool.c) against a naive reference
 * over random operations (1,000,000 by default; argv[1] or
 * GPUFEED_POOL_STRESS_OPS sets another count, as the sanitizer builds do):
 *
 * - the reference keeps sorted free lists a region and scans them, so it
 *   is obviously best fit (smallest block, lowest address); the pool must
 *   return exactly the same address for every request, fail exactly when
 *   the reference cannot fit, and grow exactly when and by what the
 *   reference expects;
 * - after every operation: in use, live count, peak, free bytes and the
 *   largest free block equal the reference's; every ~1000 operations the
 *   pool's own invariant check (tiling, coalescing, trees, counters) and a
 *   scan of the live blocks (inside a region, aligned, no overlap);
 * - at the end of each phase everything is freed and each region must be
 *   one free block again.
 * Phases: one fixed region; an unaligned region with 4 KiB alignment;
 * growth in chunks up to a limit with adjacent and scattered regions;
 * alignment 1 with tiny blocks.
 *
 * Then the fragmentation of steady-state loader mixes is measured and
 * printed (see run_mix and main); for a loader with a fixed batch size its
 * mean over the run must stay below 5%. */
#include "testutil.h"

#include "gpu/pool.h"

#include <stdlib.h>
#include <string.h>

/* ---- the reference ------------------------------------------------------- */

typedef struct seg {
  uint64_t addr, size;
} seg;

typedef struct ref_region {
  uint64_t base, size; /* usable */
  seg *free;           /* sorted by address, never adjacent */
  size_t nfree, cap;
} ref_region;

typedef struct ref {
  uint64_t align;
  ref_region *r;
  size_t nr;
  seg *live;
  size_t nlive, live_cap;
  uint64_t in_use, peak, reserved;
} ref;

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return q;
}

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
static uint64_t down(uint64_t x, uint64_t a) { return x / a * a; }

static void seg_insert(ref_region *g, size_t at, seg s) {
  if (g->nfree == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 16;
    g->free = xrealloc(g->free, g->cap * sizeof *g->free);
  }
  memmove(&g->free[at + 1], &g->free[at], (g->nfree - at) * sizeof s);
  g->free[at] = s;
  g->nfree++;
}

static void seg_remove(ref_region *g, size_t at) {
  memmove(&g->free[at], &g->free[at + 1], (g->nfree - at - 1) * sizeof(seg));
  g->nfree--;
}

static void ref_add_region(ref *m, uint64_t base, uint64_t bytes) {
  m->r = xrealloc(m->r, (m->nr + 1) * sizeof *m->r);
  ref_region *g = &m->r[m->nr++];
  memset(g, 0, sizeof *g);
  g->base = up(base, m->align);
  g->size = down(base + bytes, m->align) - g->base;
  seg_insert(g, 0, (seg){g->base, g->size});
  m->reserved += bytes;
}

static uint64_t ref_free_bytes(const ref *m) {
  uint64_t t = 0;
  for (size_t r = 0; r < m->nr; r++)
    for (size_t i = 0; i < m->r[r].nfree; i++)
      t += m->r[r].free[i].size;
  return t;
}

static uint64_t ref_largest(const ref *m) {
  uint64_t l = 0;
  for (size_t r = 0; r < m->nr; r++)
    for (size_t i = 0; i < m->r[r].nfree; i++)
      if (m->r[r].free[i].size > l)
        l = m->r[r].free[i].size;
  return l;
}

/* Best fit by exhaustive scan; 0 and *addr set, or -1. */
static int ref_alloc(ref *m, uint64_t want, uint64_t *addr) {
  size_t br = 0, bi = 0;
  const seg *best = NULL;
  for (size_t r = 0; r < m->nr; r++)
    for (size_t i = 0; i < m->r[r].nfree; i++) {
      const seg *s = &m->r[r].free[i];
      if (s->size < want)
        continue;
      if (!best || s->size < best->size ||
          (s->size == best->size && s->addr < best->addr)) {
        best = s;
        br = r;
        bi = i;
      }
    }
  if (!best)
    return -1;
  ref_region *g = &m->r[br];
  *addr = g->free[bi].addr;
  g->free[bi].addr += want;
  g->free[bi].size -= want;
  if (!g->free[bi].size)
    seg_remove(g, bi);
  if (m->nlive == m->live_cap) {
    m->live_cap = m->live_cap ? m->live_cap * 2 : 64;
    m->live = xrealloc(m->live, m->live_cap * sizeof *m->live);
  }
  m->live[m->nlive++] = (seg){*addr, want};
  m->in_use += want;
  if (m->in_use > m->peak)
    m->peak = m->in_use;
  return 0;
}

/* Frees live block k (swap-removed from the live list). */
static seg ref_free(ref *m, size_t k) {
  seg s = m->live[k];
  m->live[k] = m->live[--m->nlive];
  m->in_use -= s.size;
  ref_region *g = NULL;
  for (size_t r = 0; r < m->nr; r++)
    if (s.addr >= m->r[r].base && s.addr < m->r[r].base + m->r[r].size)
      g = &m->r[r];
  if (!g) {
    fprintf(stderr, "reference: block %#llx in no region\n",
            (unsigned long long)s.addr);
    exit(1);
  }
  size_t at = 0;
  while (at < g->nfree && g->free[at].addr < s.addr)
    at++;
  seg_insert(g, at, s);
  if (at + 1 < g->nfree &&
      g->free[at].addr + g->free[at].size == g->free[at + 1].addr) {
    g->free[at].size += g->free[at + 1].size;
    seg_remove(g, at + 1);
  }
  if (at > 0 && g->free[at - 1].addr + g->free[at - 1].size == g->free[at].addr) {
    g->free[at - 1].size += g->free[at].size;
    seg_remove(g, at);
  }
  return s;
}

static void ref_fini(ref *m) {
  for (size_t r = 0; r < m->nr; r++)
    free(m->r[r].free);
  free(m->r);
  free(m->live);
  memset(m, 0, sizeof *m);
}

/* ---- growth: numbers, no memory ------------------------------------------ */

typedef struct grower {
  uint64_t next_base;
  uint64_t calls;
  uint64_t last_base, last_size;
  uint64_t rng;
  uint64_t released_bytes, released_regions;
} grower;

static int grow(void *ctx, uint64_t bytes, uint64_t *base) {
  grower *g = ctx;
  /* Half the regions start right where the last one ended (adjacent: no
   * block may span them), the others after a gap. */
  if (gf_test_rand(&g->rng) & 1)
    g->next_base += 4096 * (1 + gf_test_rand(&g->rng) % 64);
  *base = g->next_base;
  g->next_base += bytes;
  g->calls++;
  g->last_base = *base;
  g->last_size = bytes;
  return 0;
}

static void release(void *ctx, uint64_t base, uint64_t bytes) {
  (void)base;
  grower *g = ctx;
  g->released_bytes += bytes;
  g->released_regions++;
}

/* ---- sizes ---------------------------------------------------------------- */

typedef struct mix {
  uint64_t slot[8];
  int nslots;
  uint64_t small_max;
  int small_pct; /* share of small requests */
} mix;

/* Batch-like slot sizes between 150 KB and 20 MB. */
static void mix_init(mix *x, uint64_t *rng, int nslots, int small_pct) {
  x->nslots = nslots;
  for (int i = 0; i < nslots; i++)
    x->slot[i] = 150000 + gf_test_rand(rng) % (20000000 - 150000);
  x->small_max = 65536;
  x->small_pct = small_pct;
}

static uint64_t mix_size(const mix *x, uint64_t *rng) {
  uint64_t r = gf_test_rand(rng);
  if ((int)(r % 100) < x->small_pct)
    return 1 + (r >> 8) % x->small_max;
  uint64_t s = x->slot[(r >> 8) % (uint64_t)x->nslots];
  /* Jitter: most requests exact (fixed batch sizes), some a little off
   * (a last, shorter batch; a different crop). */
  if ((r >> 20) % 4 == 0)
    s -= (r >> 24) % (s / 8);
  return s;
}

/* ---- checks ---------------------------------------------------------------- */

static int cmp_seg(const void *a, const void *b) {
  const seg *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool deep_check(const gf_pool *p, const ref *m) {
  int rc = gf_pool_check(p);
  if (rc < 0) {
    fprintf(stderr, "pool check: %s\n", gf_last_error()->message);
    return false;
  }
  seg *v = malloc((m->nlive + 1) * sizeof *v);
  memcpy(v, m->live, m->nlive * sizeof *v);
  qsort(v, m->nlive, sizeof *v, cmp_seg);
  bool ok = true;
  for (size_t i = 0; i < m->nlive && ok; i++) {
    if (v[i].addr % m->align || v[i].size % m->align) {
      fprintf(stderr, "block %#llx+%llu not aligned to %llu\n",
              (unsigned long long)v[i].addr, (unsigned long long)v[i].size,
              (unsigned long long)m->align);
      ok = false;
    }
    if (i + 1 < m->nlive && v[i].addr + v[i].size > v[i + 1].addr) {
      fprintf(stderr, "blocks %#llx+%llu and %#llx overlap\n",
              (unsigned long long)v[i].addr, (unsigned long long)v[i].size,
              (unsigned long long)v[i + 1].addr);
      ok = false;
    }
    bool inside = false;
    for (size_t r = 0; r < m->nr; r++) {
      const ref_region *g = &m->r[r];
      if (v[i].addr >= g->base && v[i].addr + v[i].size <= g->base + g->size)
        inside = true;
    }
    if (!inside) {
      fprintf(stderr, "block %#llx+%llu is not inside one region\n",
              (unsigned long long)v[i].addr, (unsigned long long)v[i].size);
      ok = false;
    }
  }
  free(v);
  return ok;
}

static bool same_stats(const gf_pool *p, const ref *m, uint64_t op) {
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  uint64_t ffree = ref_free_bytes(m), largest = ref_largest(m);
  if (st.in_use == m->in_use && st.live == m->nlive &&
      st.peak_in_use == m->peak && st.free_bytes == ffree &&
      st.largest_free == largest && st.reserved == m->reserved &&
      st.regions == m->nr)
    return true;
  fprintf(stderr,
          "op %llu: stats differ: in_use %llu/%llu live %llu/%zu peak "
          "%llu/%llu free %llu/%llu largest %llu/%llu reserved %llu/%llu "
          "regions %llu/%zu (pool/reference)\n",
          (unsigned long long)op, (unsigned long long)st.in_use,
          (unsigned long long)m->in_use, (unsigned long long)st.live,
          m->nlive, (unsigned long long)st.peak_in_use,
          (unsigned long long)m->peak, (unsigned long long)st.free_bytes,
          (unsigned long long)ffree, (unsigned long long)st.largest_free,
          (unsigned long long)largest, (unsigned long long)st.reserved,
          (unsigned long long)m->reserved, (unsigned long long)st.regions,
          m->nr);
  return false;
}

/* ---- one phase ------------------------------------------------------------ */

typedef struct phase {
  const char *name;
  uint64_t align;
  uint64_t base, bytes; /* the first region (bytes 0: none) */
  uint64_t chunk, limit;
  int nslots, small_pct;
  uint64_t small_max; /* 0: the mix's default */
  double fill_hi;     /* alloc less eagerly above this share in use */
} phase;

static void run_phase(const phase *ph, uint64_t ops, uint64_t seed) {
  uint64_t rng = seed;
  grower gr = {.next_base = 1ull << 40, .rng = seed ^ 0x5555};
  gf_pool_config cfg = {.alignment = ph->align,
                        .growth_chunk = ph->chunk,
                        .limit = ph->limit,
                        .grow = ph->chunk ? grow : NULL,
                        .release = release,
                        .ctx = &gr,
                        .name = ph->name};
  gf_pool *p;
  CHECK_OK(gf_pool_create(&cfg, &p));
  if (gf_test_failures)
    return;
  ref m = {.align = ph->align ? ph->align : 256};
  if (ph->bytes) {
    CHECK_OK(gf_pool_add_region(p, ph->base, ph->bytes));
    ref_add_region(&m, ph->base, ph->bytes);
  }
  mix x;
  mix_init(&x, &rng, ph->nslots, ph->small_pct);
  if (ph->small_max)
    x.small_max = ph->small_max;
  uint64_t ooms = 0, frag_ooms = 0, grows = 0, allocs = 0, frees = 0;
  double frag_sum = 0;
  uint64_t frag_n = 0;
  for (uint64_t op = 0; op < ops && !gf_test_failures; op++) {
    gf_pool_stats st;
    gf_pool_get_stats(p, &st);
    uint64_t cap = ph->limit ? ph->limit : st.usable;
    double fill = cap ? (double)st.in_use / (double)cap : 1.0;
    /* Alloc-heavy below the fill mark, free-heavy above: the pool spends
     * its time near full, where splitting and coalescing matter. */
    int alloc_pct = fill < ph->fill_hi ? 65 : 35;
    bool do_alloc = m.nlive == 0 || (int)(gf_test_rand(&rng) % 100) < alloc_pct;
    if (op % 50000 == 49999) {
      gf_pool_reset_peak(p);
      m.peak = m.in_use;
    }
    if (do_alloc) {
      uint64_t bytes = mix_size(&x, &rng), want = up(bytes, m.align);
      uint64_t calls = gr.calls, addr = 0, raddr = 0;
      /* What growth the reference expects when nothing fits. */
      uint64_t expect_grow = 0;
      int rr = ref_alloc(&m, want, &raddr);
      if (rr < 0 && ph->chunk) {
        uint64_t room = ph->limit - m.reserved, size = up(want, cfg.growth_chunk);
        if (size > room)
          size = down(room, m.align);
        expect_grow = size >= want ? size : 0;
      }
      gf_error_clear();
      int rc = gf_pool_alloc(p, bytes, 0, &addr);
      if (gr.calls != calls) {
        grows++;
        CHECK(gr.calls == calls + 1);
        CHECK(rr < 0 && gr.last_size == expect_grow);
        ref_add_region(&m, gr.last_base, gr.last_size);
        rr = ref_alloc(&m, want, &raddr);
      } else {
        CHECK(expect_grow == 0);
      }
      if (rr == 0) {
        allocs++;
        if (rc != 0 || addr != raddr) {
          fprintf(stderr,
                  "%s op %llu: alloc %llu: pool rc %d addr %#llx, reference "
                  "%#llx (%s)\n",
                  ph->name, (unsigned long long)op, (unsigned long long)bytes,
                  rc, (unsigned long long)addr, (unsigned long long)raddr,
                  gf_last_error()->message);
          gf_test_failures++;
        }
      } else {
        ooms++;
        CHECK_ERR(rc, GF_EDEVOOM);
        bool frag = ref_free_bytes(&m) >= want;
        frag_ooms += frag;
        const char *msg = gf_last_error()->message;
        CHECK(strstr(msg, frag ? "fragmentation is to blame"
                               : "the limit is to blame") != NULL);
      }
    } else {
      size_t k = (size_t)(gf_test_rand(&rng) % m.nlive);
      seg s = ref_free(&m, k);
      frees++;
      int rc = gf_pool_free(p, s.addr);
      if (rc != 0) {
        fprintf(stderr, "%s op %llu: free %#llx: %s\n", ph->name,
                (unsigned long long)op, (unsigned long long)s.addr,
                gf_last_error()->message);
        gf_test_failures++;
      }
    }
    if (!same_stats(p, &m, op))
      gf_test_failures++;
    if (op % 997 == 0 && !deep_check(p, &m))
      gf_test_failures++;
    gf_pool_get_stats(p, &st);
    frag_sum += st.fragmentation;
    frag_n++;
  }
  CHECK(deep_check(p, &m));
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  printf("%-22s %8llu ops: %7llu allocs %7llu frees %6llu out of memory "
         "(%llu fragmentation) %4llu grows, %llu regions, %llu live at end, "
         "mean fragmentation %.1f%%\n",
         ph->name, (unsigned long long)ops, (unsigned long long)allocs,
         (unsigned long long)frees, (unsigned long long)ooms,
         (unsigned long long)frag_ooms, (unsigned long long)grows,
         (unsigned long long)st.regions, (unsigned long long)m.nlive,
         frag_n ? 100.0 * frag_sum / (double)frag_n : 0.0);
  /* Everything back: each region one free block of all its usable bytes. */
  while (m.nlive && !gf_test_failures) {
    seg s = ref_free(&m, (size_t)(gf_test_rand(&rng) % m.nlive));
    CHECK_OK(gf_pool_free(p, s.addr));
  }
  CHECK(same_stats(p, &m, ops));
  CHECK(deep_check(p, &m));
  gf_pool_get_stats(p, &st);
  CHECK(st.in_use == 0 && st.live == 0);
  CHECK(st.free_blocks == st.regions);
  CHECK(st.free_bytes == st.usable);
  CHECK(st.fragmentation == 0.0 || st.regions > 1);
  CHECK(st.total_allocs == st.total_frees);
  uint64_t largest = 0;
  for (size_t r = 0; r < m.nr; r++) {
    CHECK(m.r[r].nfree == 1 && m.r[r].free[0].addr == m.r[r].base &&
          m.r[r].free[0].size == m.r[r].size);
    uint64_t ub, us;
    CHECK_OK(gf_pool_region(p, r, NULL, NULL, &ub, &us));
    CHECK(ub == m.r[r].base && us == m.r[r].size);
    if (us > largest)
      largest = us;
  }
  CHECK(st.largest_free == largest);
  uint64_t reserved = st.reserved, regions = st.regions;
  gf_pool_destroy(p);
  CHECK(gr.released_bytes == reserved && gr.released_regions == regions);
  ref_fini(&m);
}

/* ---- steady-state loader mixes ------------------------------------------ */

/* One loader's device allocations, one pool a loader (as gpufeed gives each
 * loader its own pool). Each batch is an output tensor of samples x
 * sample_bytes and a label array of 8 bytes a sample, two blocks. The last
 * batch of an epoch is short, unless `pad` makes every batch's tensor the
 * full slot size. sample_bytes may change from epoch to epoch (progressive
 * resizing, cycled so the sizes keep changing). At most `depth` batches are
 * in flight (produced, not yet released). */
typedef struct feeder {
  uint64_t sample_bytes[3];
  int nphases;
  uint64_t batch, epoch_samples;
  int depth;
  int pad;
  uint64_t epoch, pos; /* state */
  uint64_t ring[8][2];
  int head, n;
} feeder;

typedef struct mix_result {
  double mean, end, max;
  uint64_t pool_bytes, batches, stalls;
} mix_result;

/* Runs loaders over one pool sized as the memory plan sizes it: depth x
 * (largest batch + its labels), no headroom. A step picks a loader at
 * random: it produces a batch while it has a free slot (half the time),
 * else its consumer releases the oldest batch, one release in eight the
 * second oldest first (a batch held a step longer). A batch that does not
 * fit although the loader has a free slot is a stall: the producer waits
 * for its consumer. Fragmentation is sampled after every step; after the
 * run every batch is released and the pool must be one free block. */
static void run_mix(feeder *f, int nf, uint64_t ops, uint64_t seed,
                    mix_result *res) {
  memset(res, 0, sizeof *res);
  for (int i = 0; i < nf; i++) {
    uint64_t big = 0;
    for (int k = 0; k < f[i].nphases; k++)
      if (f[i].sample_bytes[k] * f[i].batch > big)
        big = f[i].sample_bytes[k] * f[i].batch;
    res->pool_bytes +=
        (uint64_t)f[i].depth * (up(big, 256) + up(f[i].batch * 8, 256));
  }
  gf_pool_config cfg = {.name = "loader mix"};
  gf_pool *p;
  CHECK_OK(gf_pool_create(&cfg, &p));
  CHECK_OK(gf_pool_add_region(p, 0, res->pool_bytes));
  uint64_t rng = seed, n = 0;
  double sum = 0;
  int failures = gf_test_failures;
  for (uint64_t op = 0; op < ops && gf_test_failures == failures; op++) {
    feeder *d = &f[gf_test_rand(&rng) % (uint64_t)nf];
    bool produce = d->n < d->depth && (d->n == 0 || gf_test_rand(&rng) % 2);
    if (produce) {
      uint64_t left = d->epoch_samples - d->pos;
      uint64_t count = left < d->batch ? left : d->batch;
      uint64_t rows = d->pad ? d->batch : count;
      uint64_t out = rows * d->sample_bytes[d->epoch % (uint64_t)d->nphases];
      int slot = (d->head + d->n) % d->depth;
      int rc = gf_pool_alloc(p, out, 0, &d->ring[slot][0]);
      if (rc == 0 &&
          (rc = gf_pool_alloc(p, rows * 8, 0, &d->ring[slot][1])) < 0)
        CHECK_OK(gf_pool_free(p, d->ring[slot][0]));
      if (rc == 0) {
        d->n++;
        res->batches++;
        d->pos += count;
        if (d->pos == d->epoch_samples) {
          d->epoch++;
          d->pos = 0;
        }
      } else {
        CHECK_ERR(rc, GF_EDEVOOM);
        res->stalls++;
        produce = false; /* wait for the consumer */
      }
    }
    if (!produce && d->n) {
      int k = d->head;
      if (d->n > 1 && gf_test_rand(&rng) % 8 == 0) {
        int k2 = (d->head + 1) % d->depth;
        for (int j = 0; j < 2; j++) {
          uint64_t t = d->ring[k][j];
          d->ring[k][j] = d->ring[k2][j];
          d->ring[k2][j] = t;
        }
      }
      CHECK_OK(gf_pool_free(p, d->ring[k][0]));
      CHECK_OK(gf_pool_free(p, d->ring[k][1]));
      d->head = (d->head + 1) % d->depth;
      d->n--;
    }
    gf_pool_stats st;
    gf_pool_get_stats(p, &st);
    res->end = st.fragmentation;
    sum += st.fragmentation;
    if (st.fragmentation > res->max)
      res->max = st.fragmentation;
    n++;
  }
  res->mean = n ? sum / (double)n : 0;
  CHECK(gf_pool_check(p) == 0);
  for (int i = 0; i < nf; i++)
    for (; f[i].n; f[i].n--, f[i].head = (f[i].head + 1) % f[i].depth) {
      CHECK_OK(gf_pool_free(p, f[i].ring[f[i].head][0]));
      CHECK_OK(gf_pool_free(p, f[i].ring[f[i].head][1]));
    }
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  CHECK(st.live == 0 && st.free_blocks == 1 && st.fragmentation == 0.0);
  gf_pool_destroy(p);
}

static void print_mix(const char *name, uint64_t ops, const mix_result *r) {
  printf("%s: pool %.1f MiB, %llu steps, %llu batches, %llu stalls; "
         "fragmentation mean %.2f%%, at the end %.2f%%, max %.2f%%\n",
         name, (double)r->pool_bytes / (1 << 20), (unsigned long long)ops,
         (unsigned long long)r->batches, (unsigned long long)r->stalls,
         100 * r->mean, 100 * r->end, 100 * r->max);
}

int main(int argc, char **argv) {
  uint64_t ops = 1000000;
  const char *env = getenv("GPUFEED_POOL_STRESS_OPS");
  if (argc > 1)
    ops = strtoull(argv[1], NULL, 10);
  else if (env && env[0])
    ops = strtoull(env, NULL, 10);
  if (ops < 1000)
    ops = 1000;
  const uint64_t MiB = 1ull << 20;
  const phase phases[] = {
      {"fixed 256 MiB", 0, 0, 256 * MiB, 0, 0, 6, 20, 0, 0.85},
      {"unaligned, align 4096", 4096, 1000, 200 * MiB + 37, 0, 0, 3, 30, 0,
       0.9},
      {"growth 32 MiB to 320", 512, 0, 0, 32 * MiB, 320 * MiB, 8, 10, 0, 0.8},
      {"align 1, tiny blocks", 1, 12345, 1 * MiB, 0, 0, 1, 95, 3000, 0.9},
  };
  /* Shares of the operations: 40%, 20%, 30%, 10%. */
  const int share[] = {40, 20, 30, 10};
  for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
    run_phase(&phases[i], ops * (uint64_t)share[i] / 100,
              0x9e3779b97f4a7c15ull + i);

  /* The realistic mix: a training loader, batches of 256 fp16 3x224x224
   * samples (77 MB) and their labels, epochs of 10,000 samples (so a short
   * last batch of 16 every 40 batches), 3 batches in flight. The
   * time-averaged fragmentation must stay below 5%. The instantaneous
   * figure is 0% most of the time and near 50% whenever two separate slots
   * happen to be free (two equal holes: half the free bytes are not in the
   * largest block), so its mean over the run is the figure that says how
   * the pool behaves. */
  const uint64_t px224 = 3 * 224 * 224 * 2, px192 = 3 * 192 * 192 * 2,
                 px160 = 3 * 160 * 160 * 2;
  uint64_t mix_ops = ops / 5 > 20000 ? ops / 5 : 20000;
  mix_result r;
  feeder train = {{px224}, 1, 256, 10000, 3, 0, 0, 0, {{0}}, 0, 0};
  run_mix(&train, 1, mix_ops, 42, &r);
  print_mix("loader mix (fixed batch size, short last batch)", mix_ops, &r);
  CHECK(r.mean < 0.05);
  /* The same with every batch's tensor the full slot size: blocks stay
   * interchangeable, so a free slot always fits the next batch. */
  feeder padded = {{px224}, 1, 256, 10000, 3, 1, 0, 0, {{0}}, 0, 0};
  run_mix(&padded, 1, mix_ops, 42, &r);
  print_mix("loader mix (fixed batch size, short batch padded)", mix_ops, &r);
  CHECK(r.mean < 0.05);
  CHECK(r.stalls == 0);
  /* For the record: progressive resizing (160, 192, 224 pixels, the size
   * changing every epoch of 2,000 samples), and three loaders of unrelated
   * sizes sharing one pool. */
  feeder resize = {{px160, px192, px224}, 3, 256, 2000, 3, 0, 0, 0, {{0}},
                   0, 0};
  run_mix(&resize, 1, mix_ops, 43, &r);
  print_mix("loader mix (3 sizes cycled by epoch, for the record)", mix_ops,
            &r);
  feeder shared[3] = {
      {{px224}, 1, 256, 10000, 3, 0, 0, 0, {{0}}, 0, 0},
      {{px224}, 1, 64, 5000, 4, 0, 0, 0, {{0}}, 0, 0},
      {{3 * 256 * 256}, 1, 100, 5000, 2, 0, 0, 0, {{0}}, 0, 0},
  };
  run_mix(shared, 3, mix_ops, 44, &r);
  print_mix("3 loaders sharing one pool (for the record)", mix_ops, &r);
  return gf_test_finish();
}
