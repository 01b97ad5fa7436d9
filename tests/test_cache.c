/* The host sample cache on one thread: exact budget accounting, admission
 * until full (and smaller samples after a refusal), no eviction, exact
 * counters, bytes copied in, argument errors, the disabled cache. */
#include "pipeline/cache.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void fill(uint8_t *p, size_t len, uint64_t idx) {
  uint64_t s = idx * 1000003 + 1;
  for (size_t i = 0; i < len; i++)
    p[i] = (uint8_t)gf_test_rand(&s);
}

static bool holds(gf_cache *c, uint64_t idx, size_t len) {
  const void *data = NULL;
  size_t got = 12345;
  if (gf_cache_get(c, idx, &data, &got) != 1 || got != len)
    return false;
  if (((uintptr_t)data % GF_CACHE_ALIGN) != 0)
    return false;
  uint8_t want[4096];
  fill(want, len, idx);
  return memcmp(data, want, len) == 0;
}

static void semantics(void) {
  CHECK(gf_cache_record_bytes(0) == 16);
  CHECK(gf_cache_record_bytes(1) == 32);
  CHECK(gf_cache_record_bytes(16) == 32);
  CHECK(gf_cache_record_bytes(17) == 48);
  CHECK(gf_cache_record_bytes(UINT64_MAX - 8) == UINT64_MAX);

  const uint64_t budget = 1000;
  gf_cache *c = NULL;
  CHECK_OK(gf_cache_create(budget, 50, &c));
  if (!c)
    return;
  uint8_t buf[4096];
  const void *data;
  size_t len;
  /* Miss, insert, hit. */
  CHECK(gf_cache_get(c, 3, &data, &len) == 0);
  fill(buf, 100, 3);
  CHECK(gf_cache_put(c, 3, buf, 100) == GF_CACHE_INSERTED);
  memset(buf, 0, sizeof buf); /* the cache holds its own copy */
  CHECK(holds(c, 3, 100));
  /* Present: a second put neither replaces nor spends budget. */
  fill(buf, 50, 99);
  CHECK(gf_cache_put(c, 3, buf, 50) == GF_CACHE_PRESENT);
  CHECK(holds(c, 3, 100));
  /* An empty sample is cached too (a header only). */
  CHECK(gf_cache_put(c, 4, NULL, 0) == GF_CACHE_INSERTED);
  CHECK(holds(c, 4, 0));
  uint64_t used = gf_cache_record_bytes(100) + gf_cache_record_bytes(0);
  CHECK(used == 144);

  /* Admit until the next record does not fit: 200-byte samples take 224
   * bytes each (16 + 208); 144 + 3 * 224 = 816 leaves 184. */
  for (uint64_t i = 10; i < 13; i++) {
    fill(buf, 200, i);
    CHECK(gf_cache_put(c, i, buf, 200) == GF_CACHE_INSERTED);
    used += gf_cache_record_bytes(200);
  }
  fill(buf, 200, 13);
  CHECK(gf_cache_put(c, 13, buf, 200) == GF_CACHE_FULL);
  CHECK(gf_cache_get(c, 13, &data, &len) == 0);
  CHECK(gf_cache_record_bytes(200) == 224);
  /* 161 bytes round up to 176 + 16 = 192: still too big. A smaller
   * sample fits: 160 takes 176, leaving 8. */
  fill(buf, 161, 14);
  CHECK(gf_cache_put(c, 14, buf, 161) == GF_CACHE_FULL);
  fill(buf, 160, 14);
  CHECK(gf_cache_put(c, 14, buf, 160) == GF_CACHE_INSERTED);
  used += 176;
  CHECK(used == 992);
  /* Now nothing fits, not even an empty sample; nothing is evicted. */
  CHECK(gf_cache_put(c, 15, NULL, 0) == GF_CACHE_FULL);
  /* Larger than the whole budget: refused without claiming the index, so
   * the index can still be cached elsewhere... and here stays absent. */
  CHECK(gf_cache_put(c, 16, buf, 5000) == GF_CACHE_FULL);
  CHECK(gf_cache_get(c, 16, &data, &len) == 0);
  CHECK(holds(c, 3, 100) && holds(c, 4, 0) && holds(c, 10, 200) &&
        holds(c, 11, 200) && holds(c, 12, 200) && holds(c, 14, 160));

  gf_cache_counters st;
  gf_cache_stats(c, &st);
  /* Gets: 3 (miss), hits from holds(): 3, 3, 4, then 13 miss, 16 miss,
   * then six holds. */
  CHECK(st.hits == 9);
  CHECK(st.misses == 3);
  CHECK(st.inserted == 6);
  CHECK(st.rejected == 4);
  CHECK(st.present == 1);
  CHECK(st.payload_bytes == 100 + 0 + 600 + 160);
  CHECK(st.bytes_used == 992);
  CHECK(st.budget == budget);
  CHECK(st.table_bytes == 50 * 8);
  CHECK(st.n == 50);

  /* Argument errors name the sample. */
  CHECK_ERR(gf_cache_get(c, 50, &data, &len), -ERANGE);
  CHECK(gf_last_error()->sample == 50);
  CHECK(strstr(gf_last_error()->message, "not below the sample count 50"));
  CHECK_ERR(gf_cache_put(c, 50, buf, 1), -ERANGE);
  CHECK_ERR(gf_cache_put(c, 1, NULL, 10), -EINVAL);
  gf_cache_stats(c, &st);
  CHECK(st.hits == 9 && st.misses == 3 && st.rejected == 4);
  gf_cache_destroy(c);
  gf_cache_destroy(NULL);
}

/* A record that takes exactly the budget left is admitted. */
static void exact_fill(void) {
  gf_cache *c = NULL;
  CHECK_OK(gf_cache_create(256, 4, &c));
  if (!c)
    return;
  uint8_t b[256] = {0};
  CHECK(gf_cache_put(c, 0, b, 208) == GF_CACHE_INSERTED); /* 224 */
  CHECK(gf_cache_put(c, 1, b, 17) == GF_CACHE_FULL);      /* 48 > 32 */
  CHECK(gf_cache_put(c, 1, b, 16) == GF_CACHE_INSERTED);  /* 32: exact */
  CHECK(gf_cache_put(c, 2, NULL, 0) == GF_CACHE_FULL);
  gf_cache_counters st;
  gf_cache_stats(c, &st);
  CHECK(st.bytes_used == 256 && st.inserted == 2 && st.rejected == 2);
  gf_cache_destroy(c);
  /* A budget that holds one record exactly. */
  CHECK_OK(gf_cache_create(16, 4, &c));
  if (!c)
    return;
  CHECK(gf_cache_put(c, 3, b, 1) == GF_CACHE_FULL);
  CHECK(gf_cache_put(c, 3, NULL, 0) == GF_CACHE_INSERTED);
  gf_cache_destroy(c);
}

static void disabled(void) {
  gf_cache *c = NULL;
  CHECK_OK(gf_cache_create(0, 1000, &c));
  if (!c)
    return;
  uint8_t b[8] = {0};
  const void *data;
  size_t len;
  CHECK(gf_cache_put(c, 5, b, 8) == GF_CACHE_FULL);
  CHECK(gf_cache_get(c, 5, &data, &len) == 0);
  CHECK_ERR(gf_cache_get(c, 1000, &data, &len), -ERANGE);
  gf_cache_counters st;
  gf_cache_stats(c, &st);
  CHECK(st.table_bytes == 0 && st.bytes_used == 0 && st.misses == 1 &&
        st.rejected == 1);
  gf_cache_destroy(c);
}

static void sizes(void) {
  gf_cache *c = (gf_cache *)&c;
  /* The table size overflows: refused before any allocation. */
  CHECK_ERR(gf_cache_create(1, 1ull << 62, &c), -EOVERFLOW);
  CHECK(c == NULL);
  /* Address space that cannot exist: -ENOMEM with the size named. */
  CHECK_ERR(gf_cache_create(1ull << 62, 10, &c), -ENOMEM);
  CHECK(strstr(gf_last_error()->message, "budget") != NULL);
  CHECK_ERR(gf_cache_create(10, 1ull << 59, &c), -ENOMEM);
  CHECK(strstr(gf_last_error()->message, "table") != NULL);
  CHECK_ERR(gf_cache_create(10, 10, NULL), -EINVAL);
  /* A large budget is address space until used: creating it is cheap. */
  CHECK_OK(gf_cache_create(16ull << 30, 1000000, &c));
  if (c) {
    uint8_t b[64] = {1, 2, 3};
    CHECK(gf_cache_put(c, 999999, b, sizeof b) == GF_CACHE_INSERTED);
    const void *data;
    size_t len;
    CHECK(gf_cache_get(c, 999999, &data, &len) == 1 && len == 64 &&
          memcmp(data, b, 64) == 0);
    gf_cache_destroy(c);
  }
}

int main(void) {
  semantics();
  exact_fill();
  disabled();
  sizes();
  return gf_test_finish();
}
