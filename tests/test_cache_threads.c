/* The host sample cache under 8 threads: all racing to insert the same
 * samples (exactly one copy each is admitted), then random gets and puts
 * where every hit must return exactly the bytes put for that index; at the
 * end the counters match what the threads saw and the table's content,
 * and the budget holds. Meant to run under ThreadSanitizer as well. */
#include "pipeline/cache.h"
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define N 20000
#define HOT 1024
#define OPS 30000
#define MAXLEN 1500

static gf_cache *cache;
static pthread_barrier_t start;

static size_t sample_len(uint64_t idx) {
  uint64_t s = idx ^ 0xABCDEF;
  return (size_t)(gf_test_rand(&s) % MAXLEN) * (idx % 17 != 0);
}

static void sample_fill(uint8_t *p, size_t len, uint64_t idx) {
  uint64_t s = idx * 7919 + 3;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = gf_test_rand(&s);
    memcpy(p + i, &v, len - i < 8 ? len - i : 8);
  }
}

typedef struct worker {
  int id;
  uint64_t gets, hits, misses, puts, inserted, present, full;
  uint64_t hot_inserted;
  uint64_t bad; /* wrong bytes, wrong length, unexpected codes */
} worker;

static bool verify(const void *data, size_t len, uint64_t idx) {
  uint8_t want[MAXLEN];
  if (len != sample_len(idx))
    return false;
  sample_fill(want, len, idx);
  return memcmp(data, want, len) == 0;
}

static void *run(void *arg) {
  worker *w = arg;
  uint8_t buf[MAXLEN + 8];
  /* Everyone inserts the same hot samples at once: all threads meet
   * before each one, so their puts collide. */
  for (uint64_t idx = 0; idx < HOT; idx++) {
    size_t len = sample_len(idx);
    sample_fill(buf, len, idx);
    pthread_barrier_wait(&start);
    int rc = gf_cache_put(cache, idx, buf, len);
    if (rc == GF_CACHE_INSERTED)
      w->hot_inserted++;
    else if (rc != GF_CACHE_PRESENT)
      w->bad++;
  }
  pthread_barrier_wait(&start);
  uint64_t rng = 1000 + (uint64_t)w->id;
  for (int op = 0; op < OPS; op++) {
    uint64_t idx = gf_test_rand(&rng) % N;
    const void *data;
    size_t len;
    w->gets++;
    int rc = gf_cache_get(cache, idx, &data, &len);
    if (rc == 1) {
      w->hits++;
      if (!verify(data, len, idx))
        w->bad++;
      continue;
    }
    if (rc != 0) {
      w->bad++;
      continue;
    }
    w->misses++;
    len = sample_len(idx);
    sample_fill(buf, len, idx);
    w->puts++;
    rc = gf_cache_put(cache, idx, buf, len);
    if (rc == GF_CACHE_INSERTED) {
      w->inserted++;
      /* Published before put returned: this thread must see it. */
      w->gets++;
      if (gf_cache_get(cache, idx, &data, &len) == 1 && verify(data, len, idx))
        w->hits++;
      else
        w->bad++;
    } else if (rc == GF_CACHE_PRESENT) {
      w->present++;
    } else if (rc == GF_CACHE_FULL) {
      w->full++;
    } else {
      w->bad++;
    }
  }
  return NULL;
}

int main(void) {
  /* Budget: about 40% of all records, so admission stops mid-run. */
  uint64_t all = 0;
  for (uint64_t i = 0; i < N; i++)
    all += gf_cache_record_bytes(sample_len(i));
  const uint64_t budget = all * 2 / 5;
  CHECK_OK(gf_cache_create(budget, N, &cache));
  if (!cache)
    return gf_test_finish();
  pthread_barrier_init(&start, NULL, THREADS);
  worker w[THREADS];
  pthread_t th[THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < THREADS; i++) {
    w[i].id = i;
    CHECK(pthread_create(&th[i], NULL, run, &w[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);

  worker t;
  memset(&t, 0, sizeof t);
  for (int i = 0; i < THREADS; i++) {
    t.gets += w[i].gets;
    t.hits += w[i].hits;
    t.misses += w[i].misses;
    t.puts += w[i].puts;
    t.inserted += w[i].inserted;
    t.present += w[i].present;
    t.full += w[i].full;
    t.hot_inserted += w[i].hot_inserted;
    t.bad += w[i].bad;
  }
  CHECK(t.bad == 0);
  CHECK(t.hot_inserted == HOT); /* one copy of each, whoever won */
  CHECK(t.full > 0);            /* the budget was reached */

  /* The table's content: every cached sample exact, accounting exact. */
  uint64_t cached = 0, used = 0, payload = 0, wrong = 0;
  for (uint64_t i = 0; i < N; i++) {
    const void *data;
    size_t len;
    if (gf_cache_get(cache, i, &data, &len) == 1) {
      cached++;
      used += gf_cache_record_bytes(len);
      payload += len;
      wrong += !verify(data, len, i);
    }
  }
  CHECK(wrong == 0);
  gf_cache_counters st;
  gf_cache_stats(cache, &st);
  fprintf(stderr,
          "gets %llu hits %llu puts %llu inserted %llu present %llu "
          "full %llu; cached %llu, %llu of %llu budget bytes\n",
          (unsigned long long)t.gets, (unsigned long long)t.hits,
          (unsigned long long)t.puts, (unsigned long long)st.inserted,
          (unsigned long long)t.present, (unsigned long long)t.full,
          (unsigned long long)cached, (unsigned long long)st.bytes_used,
          (unsigned long long)budget);
  CHECK(st.inserted == cached);
  CHECK(st.inserted == t.inserted + HOT);
  CHECK(st.bytes_used == used);
  CHECK(st.bytes_used <= budget);
  CHECK(st.payload_bytes == payload);
  CHECK(st.hits == t.hits + cached);
  CHECK(st.misses == t.misses + (N - cached));
  CHECK(st.rejected == t.full);
  CHECK(st.present == t.present + (THREADS - 1) * HOT);
  /* Once full, what is left cannot hold even the smallest record. */
  CHECK(budget - st.bytes_used < gf_cache_record_bytes(MAXLEN));
  gf_cache_destroy(cache);
  return gf_test_finish();
}
