/* The device pool's allocator when it says no, and at its edges:
 * - out of memory blamed on fragmentation and on the limit, the message
 *   naming the bytes asked (after alignment), the free bytes, the largest
 *   free block, the reserved bytes and the limit; the pool unchanged after;
 * - growth chunk by chunk up to the limit, then the limit blamed; a request
 *   larger than a chunk; the last chunk cut to the limit; a failing grow
 *   callback;
 * - alignment 1, 4096 and 1 MiB, a region trimmed to its alignment, bad
 *   alignments and regions refused;
 * - free of an address that is not a block start (-EINVAL with context),
 *   double frees (plain and after coalescing);
 * - the fragmentation figure and the peak. */
#include "testutil.h"

#include "gpu/pool.h"

#include <string.h>

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static bool has(const char *what) {
  const char *msg = gf_last_error()->message;
  if (strstr(msg, what))
    return true;
  fprintf(stderr, "message lacks \"%s\": %s\n", what, msg);
  return false;
}

static gf_pool *fixed(uint64_t align, uint64_t base, uint64_t bytes) {
  gf_pool_config cfg = {.alignment = align, .limit = bytes, .name = "test"};
  gf_pool *p = NULL;
  CHECK_OK(gf_pool_create(&cfg, &p));
  if (p)
    CHECK_OK(gf_pool_add_region(p, base, bytes));
  return p;
}

static void same(const gf_pool_stats *a, const gf_pool_stats *b) {
  CHECK(a->in_use == b->in_use && a->free_bytes == b->free_bytes &&
        a->largest_free == b->largest_free && a->live == b->live &&
        a->total_allocs == b->total_allocs && a->regions == b->regions);
}

static void oom_messages(void) {
  gf_pool *p = fixed(256, 0, 4 * MiB);
  uint64_t a[4];
  for (int i = 0; i < 4; i++)
    CHECK_OK(gf_pool_alloc(p, MiB, 0, &a[i]));
  CHECK_OK(gf_pool_free(p, a[0]));
  CHECK_OK(gf_pool_free(p, a[2]));
  gf_pool_stats before, after;
  gf_pool_get_stats(p, &before);
  CHECK(before.free_bytes == 2 * MiB && before.largest_free == MiB);
  CHECK(before.fragmentation == 0.5);

  /* 1.5 MiB minus 100: 2 MiB free in two 1 MiB blocks. */
  uint64_t addr = 7;
  CHECK_ERR(gf_pool_alloc(p, 3 * MiB / 2 - 100, 0, &addr), GF_EDEVOOM);
  CHECK(addr == 7);
  CHECK(gf_last_error()->code == GF_EDEVOOM);
  CHECK(has("1572864 bytes (1572764 asked, aligned to 256)"));
  CHECK(has("2097152 bytes free in total"));
  CHECK(has("largest free block 1048576 bytes"));
  CHECK(has("reserved 4194304 bytes"));
  CHECK(has("limit 4194304"));
  CHECK(has("fragmentation is to blame"));
  CHECK(has("test: "));
  gf_pool_get_stats(p, &after);
  same(&before, &after);
  CHECK(gf_pool_check(p) == 0);

  /* 3 MiB: not enough free in total. */
  CHECK_ERR(gf_pool_alloc(p, 3 * MiB, 0, &addr), GF_EDEVOOM);
  CHECK(has("3145728 bytes (3145728 asked, aligned to 256)"));
  CHECK(has("2097152 bytes free in total"));
  CHECK(has("largest free block 1048576 bytes"));
  CHECK(has("the limit is to blame"));
  CHECK(has("does not grow past its reservation"));
  CHECK(!strstr(gf_last_error()->message, "fragmentation is"));
  gf_pool_get_stats(p, &after);
  same(&before, &after);

  /* A size that cannot even be aligned. */
  CHECK_ERR(gf_pool_alloc(p, UINT64_MAX, 0, &addr), GF_EDEVOOM);
  CHECK(has("too large to align"));
  CHECK(has("the limit is to blame"));
  CHECK_ERR(gf_pool_alloc(p, 0, 0, &addr), -EINVAL);
  CHECK(has("0 bytes"));

  /* What fits still fits, best fit, lowest address among equals. */
  CHECK_OK(gf_pool_alloc(p, MiB, 0, &addr));
  CHECK(addr == a[0]);
  CHECK(gf_pool_fits(p, MiB) && !gf_pool_fits(p, MiB + 1) &&
        !gf_pool_fits(p, 0));
  CHECK_OK(gf_pool_alloc(p, MiB, 0, &addr));
  CHECK(addr == a[2]);
  gf_pool_get_stats(p, &after);
  CHECK(after.free_bytes == 0 && after.largest_free == 0 &&
        after.fragmentation == 0.0);
  CHECK_ERR(gf_pool_alloc(p, 1, 0, &addr), GF_EDEVOOM);
  CHECK(has("256 bytes (1 asked, aligned to 256)"));
  CHECK(has("0 bytes free in total"));
  CHECK(has("the limit is to blame"));
  gf_pool_destroy(p);
}

typedef struct grower {
  uint64_t next, calls, fail_at;
} grower;

static int grow(void *ctx, uint64_t bytes, uint64_t *base) {
  grower *g = ctx;
  g->calls++;
  if (g->fail_at && g->calls == g->fail_at)
    return gf_fail(GF_EDEVOOM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cudaMalloc of %llu bytes failed: out of memory (fake)",
                   (unsigned long long)bytes);
  *base = g->next;
  g->next += bytes; /* adjacent regions: blocks must still not span them */
  return 0;
}

static void growth(void) {
  grower g = {.next = 1 << 20};
  gf_pool_config cfg = {.growth_chunk = MiB, .limit = 4 * MiB, .grow = grow,
                        .ctx = &g, .name = "grow"};
  gf_pool *p;
  CHECK_OK(gf_pool_create(&cfg, &p));
  uint64_t addr;
  gf_pool_stats st;
  for (int i = 0; i < 8; i++) {
    CHECK_OK(gf_pool_alloc(p, 512 * KiB, 0, &addr));
    gf_pool_get_stats(p, &st);
    /* A chunk per two blocks, added only when needed. */
    CHECK(g.calls == (uint64_t)i / 2 + 1);
    CHECK(st.reserved == (uint64_t)(i / 2 + 1) * MiB);
    CHECK(st.regions == (uint64_t)i / 2 + 1);
  }
  /* NO_GROW refuses to grow even below the limit (checked on a new pool
   * below); here the limit is reached. */
  CHECK_ERR(gf_pool_alloc(p, 512 * KiB, 0, &addr), GF_EDEVOOM);
  CHECK(g.calls == 4);
  CHECK(has("524288 bytes (524288 asked"));
  CHECK(has("0 bytes free in total"));
  CHECK(has("reserved 4194304 bytes, limit 4194304"));
  CHECK(has("the limit is to blame"));
  CHECK(has("growth cannot add a chunk"));
  /* Free two blocks in different (adjacent) regions: 1 MiB free in total
   * but no block spans the boundary. */
  uint64_t r1b, r2b;
  CHECK_OK(gf_pool_region(p, 1, NULL, NULL, &r1b, NULL));
  CHECK_OK(gf_pool_region(p, 2, NULL, NULL, &r2b, NULL));
  CHECK(r2b == r1b + MiB);
  CHECK_OK(gf_pool_free(p, r1b + 512 * KiB));
  CHECK_OK(gf_pool_free(p, r2b));
  gf_pool_get_stats(p, &st);
  CHECK(st.free_bytes == MiB && st.largest_free == 512 * KiB);
  CHECK_ERR(gf_pool_alloc(p, MiB, 0, &addr), GF_EDEVOOM);
  CHECK(has("fragmentation is to blame"));
  CHECK(gf_pool_check(p) == 0);
  gf_pool_destroy(p);

  /* A request larger than a chunk gets a chunk of its own, rounded up to
   * chunks; the last chunk is cut to what the limit leaves. */
  g = (grower){.next = 0};
  cfg.growth_chunk = 3 * MiB;
  cfg.limit = 10 * MiB;
  CHECK_OK(gf_pool_create(&cfg, &p));
  CHECK_ERR(gf_pool_alloc(p, MiB, GF_POOL_NO_GROW, &addr), GF_EDEVOOM);
  CHECK(g.calls == 0);
  CHECK_OK(gf_pool_alloc(p, 4 * MiB, 0, &addr)); /* a 6 MiB region */
  gf_pool_get_stats(p, &st);
  CHECK(st.reserved == 6 * MiB && g.calls == 1);
  CHECK_OK(gf_pool_alloc(p, 2 * MiB, 0, &addr)); /* fits the first */
  CHECK(g.calls == 1);
  CHECK_OK(gf_pool_alloc(p, 4 * MiB, 0, &addr)); /* 4 MiB left: cut */
  gf_pool_get_stats(p, &st);
  CHECK(st.reserved == 10 * MiB && g.calls == 2 && st.regions == 2);
  CHECK_ERR(gf_pool_alloc(p, 1, 0, &addr), GF_EDEVOOM);
  CHECK(has("the limit is to blame"));
  CHECK(g.calls == 2);
  gf_pool_destroy(p);

  /* The grow callback fails: its error with the request as context, and
   * the pool as it was. */
  g = (grower){.next = 0, .fail_at = 2};
  cfg.growth_chunk = MiB;
  cfg.limit = 4 * MiB;
  CHECK_OK(gf_pool_create(&cfg, &p));
  CHECK_OK(gf_pool_alloc(p, MiB, 0, &addr));
  CHECK_ERR(gf_pool_alloc(p, MiB, 0, &addr), GF_EDEVOOM);
  CHECK(has("grow: growing by 1048576 bytes for a request of 1048576"));
  CHECK(has("out of memory (fake)"));
  gf_pool_get_stats(p, &st);
  CHECK(st.reserved == MiB && st.regions == 1 && st.live == 1);
  CHECK_OK(gf_pool_alloc(p, MiB, 0, &addr)); /* the next try grows */
  CHECK(g.calls == 3);
  CHECK(gf_pool_check(p) == 0);
  gf_pool_destroy(p);

  /* Growth without a callback, a chunk above the limit. */
  cfg.grow = NULL;
  CHECK_ERR(gf_pool_create(&cfg, &p), -EINVAL);
  CHECK(has("grow callback"));
  cfg.grow = grow;
  cfg.growth_chunk = 8 * MiB;
  CHECK_ERR(gf_pool_create(&cfg, &p), -EINVAL);
  CHECK(has("larger than the limit"));
}

static void alignment(void) {
  gf_pool_config cfg = {.alignment = 3};
  gf_pool *p;
  CHECK_ERR(gf_pool_create(&cfg, &p), -EINVAL);
  CHECK(has("alignment 3 is not a power of two"));

  /* Alignment 1: sizes exactly as asked, blocks packed. */
  p = fixed(1, 5, 1000);
  uint64_t a, b, c, size;
  CHECK_OK(gf_pool_alloc(p, 3, 0, &a));
  CHECK_OK(gf_pool_alloc(p, 7, 0, &b));
  CHECK(a == 5 && b == 8);
  CHECK_OK(gf_pool_lookup(p, b, &size, NULL));
  CHECK(size == 7);
  CHECK_OK(gf_pool_alloc(p, 990, 0, &c));
  CHECK_ERR(gf_pool_alloc(p, 1, 0, &c), GF_EDEVOOM);
  CHECK(has("1 bytes (1 asked, aligned to 1)"));
  gf_pool_destroy(p);

  /* 4096: a region at 100 of 10000 bytes is trimmed to [4096, 8192). */
  p = fixed(4096, 100, 10000);
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  CHECK(st.reserved == 10000 && st.usable == 4096 && st.free_bytes == 4096);
  uint64_t ub, us;
  CHECK_OK(gf_pool_region(p, 0, &a, &b, &ub, &us));
  CHECK(a == 100 && b == 10000 && ub == 4096 && us == 4096);
  CHECK_ERR(gf_pool_region(p, 1, &a, &b, &ub, &us), -ERANGE);
  CHECK_OK(gf_pool_alloc(p, 1, 0, &a));
  CHECK(a == 4096);
  CHECK_OK(gf_pool_lookup(p, a, &size, NULL));
  CHECK(size == 4096);
  CHECK_ERR(gf_pool_alloc(p, 1, 0, &a), GF_EDEVOOM);
  CHECK(has("4096 bytes (1 asked, aligned to 4096)"));
  gf_pool_destroy(p);

  /* 1 MiB alignment: every address and size a multiple of it. */
  p = fixed(MiB, 3 * MiB + 1, 10 * MiB);
  for (int i = 0; i < 9; i++) {
    CHECK_OK(gf_pool_alloc(p, 1 + (uint64_t)i * 1000, 0, &a));
    CHECK(a % MiB == 0);
    CHECK_OK(gf_pool_lookup(p, a, &size, NULL));
    CHECK(size == MiB);
  }
  CHECK_ERR(gf_pool_alloc(p, 1, 0, &a), GF_EDEVOOM);
  CHECK(gf_pool_check(p) == 0);
  gf_pool_destroy(p);

  /* Regions refused: nothing aligned inside, overflow, overlap, limit. */
  cfg = (gf_pool_config){.alignment = 4096, .limit = 64 * KiB};
  CHECK_OK(gf_pool_create(&cfg, &p));
  CHECK_ERR(gf_pool_add_region(p, 1, 5000), -EINVAL);
  CHECK(has("holds no 4096-byte aligned block"));
  CHECK_ERR(gf_pool_add_region(p, UINT64_MAX - 10, 4096), -EINVAL);
  CHECK(has("overflows"));
  CHECK_OK(gf_pool_add_region(p, 8192, 16 * KiB));
  CHECK_ERR(gf_pool_add_region(p, 4096, 8 * KiB), -EINVAL);
  CHECK(has("overlaps region 0"));
  CHECK_OK(gf_pool_add_region(p, 8192 + 16 * KiB, 16 * KiB)); /* adjacent */
  CHECK_ERR(gf_pool_add_region(p, MiB, 40 * KiB), -EINVAL);
  CHECK(has("limit 65536"));
  gf_pool_get_stats(p, &st);
  CHECK(st.regions == 2 && st.free_blocks == 2 && st.largest_free == 16 * KiB);
  CHECK(st.fragmentation == 0.5);
  CHECK(gf_pool_check(p) == 0);
  gf_pool_destroy(p);
}

static void bad_frees(void) {
  gf_pool *p = fixed(256, 4096, MiB);
  uint64_t a, b, c;
  CHECK_OK(gf_pool_alloc(p, 1000, 0, &a));
  CHECK_OK(gf_pool_alloc(p, 1000, 0, &b));
  CHECK_OK(gf_pool_alloc(p, 1000, 0, &c));

  gf_error_clear();
  CHECK_ERR(gf_pool_free(p, 12), -EINVAL);
  CHECK(gf_last_error()->code == -EINVAL);
  CHECK(has("free of 0xc: not an address of this pool"));
  CHECK_ERR(gf_pool_free(p, b + 256), -EINVAL);
  CHECK(has("not the start of an allocation"));
  CHECK(has("inside the live block"));
  CHECK_ERR(gf_pool_free(p, 4096 + MiB - 256), -EINVAL); /* free tail */
  CHECK(has("double free"));

  /* b's neighbours are live: b stays a free block of its own. */
  CHECK_OK(gf_pool_free(p, b));
  CHECK_ERR(gf_pool_free(p, b), -EINVAL);
  CHECK(has("double free"));
  /* a merges with b: a second free of b now lands inside a's block. */
  CHECK_OK(gf_pool_free(p, a));
  CHECK_ERR(gf_pool_free(p, b), -EINVAL);
  CHECK(has("double free"));
  CHECK_ERR(gf_pool_free(p, a), -EINVAL);
  CHECK(has("double free"));
  CHECK_ERR(gf_pool_lookup(p, a, NULL, NULL), -EINVAL);
  CHECK_ERR(gf_pool_set_tag(p, a, 1), -EINVAL);
  uint32_t tag = 9;
  CHECK_OK(gf_pool_set_tag(p, c, 42));
  CHECK_OK(gf_pool_lookup(p, c, NULL, &tag));
  CHECK(tag == 42);
  /* Nothing above changed the counts. */
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  CHECK(st.live == 1 && st.total_frees == 2 && st.in_use == 1024);
  CHECK_OK(gf_pool_free(p, c));
  gf_pool_get_stats(p, &st);
  CHECK(st.free_blocks == 1 && st.free_bytes == MiB);
  /* A fresh block at the same place starts with tag 0. */
  CHECK_OK(gf_pool_alloc(p, 1, 0, &a));
  CHECK_OK(gf_pool_set_tag(p, a, 7));
  CHECK_OK(gf_pool_free(p, a));
  CHECK_OK(gf_pool_alloc(p, 1, 0, &b));
  CHECK(b == a);
  CHECK_OK(gf_pool_lookup(p, b, NULL, &tag));
  CHECK(tag == 0);
  CHECK(gf_pool_check(p) == 0);
  gf_pool_destroy(p);
  gf_pool_destroy(NULL);
}

static void peak(void) {
  gf_pool *p = fixed(256, 0, MiB);
  uint64_t a, b;
  CHECK_OK(gf_pool_alloc(p, 1000, 0, &a));
  CHECK_OK(gf_pool_alloc(p, 3000, 0, &b));
  CHECK_OK(gf_pool_free(p, b));
  gf_pool_stats st;
  gf_pool_get_stats(p, &st);
  CHECK(st.in_use == 1024 && st.peak_in_use == 1024 + 3072);
  CHECK(st.total_allocs == 2 && st.total_frees == 1 && st.live == 1);
  gf_pool_reset_peak(p);
  gf_pool_get_stats(p, &st);
  CHECK(st.peak_in_use == 1024);
  gf_pool_destroy(p);
}

int main(void) {
  oom_messages();
  growth();
  alignment();
  bad_frees();
  peak();
  return gf_test_finish();
}
