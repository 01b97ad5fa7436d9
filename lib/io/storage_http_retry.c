/* The retry policy of the HTTP(S) storage: how many tries a request gets
 * and how long it waits between them. AWS's "standard" mode: exponential
 * backoff from 100 ms, capped at 20 s, with full jitter (a wait drawn
 * from zero to the exponential figure, so that clients failing together
 * do not come back together); bounded by gf_remote_config's max_attempts
 * and retry_ms; a server's Retry-After is honoured within that time.
 * Which failures are retried is the reply's judgement
 * (storage_http_reply.c) and the transfer's (storage_http_xfer.c). */
#include "io/storage_http.h"

#include <time.h>
#include <unistd.h>

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t gf_http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t gf_http_retry_seed(void) {
  static _Atomic uint64_t calls;
  uint64_t s = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  s ^= (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec ^
       (uint64_t)getpid() << 40;
  return splitmix64(&s);
}

uint64_t gf_http_backoff_ms(uint32_t k, uint64_t *rng) {
  uint64_t ceiling = GF_HTTP_BACKOFF_BASE_MS;
  for (uint32_t i = 1; i < k && ceiling < GF_HTTP_BACKOFF_CAP_MS; i++)
    ceiling *= 2;
  if (ceiling > GF_HTTP_BACKOFF_CAP_MS)
    ceiling = GF_HTTP_BACKOFF_CAP_MS;
  return splitmix64(rng) % (ceiling + 1);
}

void gf_http_retry_start(gf_http_retry *r, uint32_t max_attempts,
                         uint32_t budget_ms, uint64_t seed, uint64_t now_ms) {
  r->max_attempts = max_attempts ? max_attempts : 1;
  r->budget_ms = budget_ms;
  r->attempts = 1;
  r->first_ms = now_ms;
  r->rng = seed;
  r->last_status = 0;
}

int64_t gf_http_retry_next(gf_http_retry *r, uint64_t now_ms,
                           int64_t retry_after_ms, const char **stop) {
  *stop = "";
  if (r->attempts >= r->max_attempts) {
    *stop = "attempts";
    return -1;
  }
  uint64_t spent = now_ms > r->first_ms ? now_ms - r->first_ms : 0;
  if (spent >= r->budget_ms) {
    *stop = "time";
    return -1;
  }
  uint64_t left = r->budget_ms - spent;
  uint64_t wait = gf_http_backoff_ms(r->attempts, &r->rng);
  if (retry_after_ms > 0 && (uint64_t)retry_after_ms > wait)
    wait = (uint64_t)retry_after_ms;
  if (wait > left)
    wait = left;
  r->attempts++;
  return (int64_t)wait;
}
