/* The HTTP storage's retry schedule (lib/io/storage_http_retry.c):
 * exponential backoff with full jitter from 100 ms, capped at 20 s,
 * deterministic for a seed; bounded by max_attempts and by retry_ms; a
 * server's Retry-After honoured within the time left. No server, no
 * clock: every time is passed in. */
#include "testutil.h"

#include "io/storage_http.h"

#include <stdlib.h>
#include <string.h>

int main(void) {
  /* The ceiling of retry k is min(20000, 100 * 2^(k-1)); draws stay under
   * it and spread over it (full jitter: some near 0, some near the top). */
  for (uint32_t k = 1; k <= 12; k++) {
    uint64_t ceiling = 100;
    for (uint32_t i = 1; i < k; i++)
      ceiling = ceiling * 2 > 20000 ? 20000 : ceiling * 2;
    uint64_t rng = 7 + k, lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 4000; i++) {
      uint64_t w = gf_http_backoff_ms(k, &rng);
      lo = w < lo ? w : lo;
      hi = w > hi ? w : hi;
    }
    CHECK(hi <= ceiling);
    CHECK(lo <= ceiling / 10 && hi >= ceiling - ceiling / 10);
    if (hi > ceiling || lo > ceiling / 10 || hi < ceiling - ceiling / 10)
      fprintf(stderr, "  retry %u: draws %llu-%llu, ceiling %llu\n", k,
              (unsigned long long)lo, (unsigned long long)hi,
              (unsigned long long)ceiling);
  }
  /* Far past the cap, no overflow. */
  uint64_t rng = 1;
  CHECK(gf_http_backoff_ms(4000000000u, &rng) <= 20000);

  /* The same seed gives the same schedule; another seed another one. */
  int64_t w1[5], w2[5], w3[5];
  const char *stop;
  for (int run = 0; run < 3; run++) {
    gf_http_retry r;
    gf_http_retry_start(&r, 6, 600000, run == 2 ? 43 : 42, 1000);
    int64_t *w = run == 0 ? w1 : run == 1 ? w2 : w3;
    for (int i = 0; i < 5; i++)
      w[i] = gf_http_retry_next(&r, 1000, -1, &stop);
    CHECK(r.attempts == 6);
    CHECK(gf_http_retry_next(&r, 1000, -1, &stop) == -1);
    CHECK(strcmp(stop, "attempts") == 0);
  }
  CHECK(memcmp(w1, w2, sizeof w1) == 0);
  CHECK(memcmp(w1, w3, sizeof w1) != 0);
  for (int i = 0; i < 5; i++)
    CHECK(w1[i] >= 0 && w1[i] <= 100 << i);
  /* The recorded schedule of seed 42 (a change of the generator or of
   * the formula shows here). */
  printf("seed 42: %lld %lld %lld %lld %lld ms\n", (long long)w1[0],
         (long long)w1[1], (long long)w1[2], (long long)w1[3],
         (long long)w1[4]);

  /* One attempt: no retry at all. */
  gf_http_retry r;
  gf_http_retry_start(&r, 1, 60000, 1, 0);
  CHECK(gf_http_retry_next(&r, 0, -1, &stop) == -1 &&
        strcmp(stop, "attempts") == 0);
  /* max_attempts 0 is taken as 1 (the resolved config never has 0). */
  gf_http_retry_start(&r, 0, 60000, 1, 0);
  CHECK(r.max_attempts == 1);

  /* The time bound: no try starts past retry_ms, and a wait never goes
   * past it. */
  gf_http_retry_start(&r, 100, 1000, 5, 10000);
  uint64_t now = 10000;
  int tries = 1;
  for (;;) {
    int64_t w = gf_http_retry_next(&r, now, -1, &stop);
    if (w < 0)
      break;
    CHECK(now + (uint64_t)w <= 11000);
    now += (uint64_t)w + 50; /* a try takes 50 ms */
    tries++;
  }
  CHECK(strcmp(stop, "time") == 0);
  CHECK(now >= 11000 && tries > 2 && tries < 100);

  /* Retry-After: honoured over the backoff, cut to the time left. */
  gf_http_retry_start(&r, 10, 5000, 9, 0);
  CHECK(gf_http_retry_next(&r, 0, 3000, &stop) == 3000);
  CHECK(gf_http_retry_next(&r, 3000, 3000, &stop) == 2000); /* 2 s left */
  CHECK(gf_http_retry_next(&r, 5000, 3000, &stop) == -1 &&
        strcmp(stop, "time") == 0);
  /* A Retry-After of 0 leaves the backoff as it is. */
  gf_http_retry_start(&r, 10, 5000, 9, 0);
  int64_t plain = gf_http_retry_next(&r, 0, -1, &stop);
  gf_http_retry_start(&r, 10, 5000, 9, 0);
  CHECK(gf_http_retry_next(&r, 0, 0, &stop) == plain);

  /* Seeds differ call to call (requests do not retry in step). */
  uint64_t s1 = gf_http_retry_seed(), s2 = gf_http_retry_seed();
  CHECK(s1 != s2);
  return gf_test_finish();
}
