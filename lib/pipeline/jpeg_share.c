/* The GPU's share of JPEG samples chosen from the consumer's rate (see
 * jpeg_share.h). */
#include "pipeline/jpeg_share.h"

#include <string.h>

void gf_jpeg_share_init(gf_jpeg_share *s, uint32_t settle, uint32_t window,
                        uint32_t batch, uint32_t cores) {
  memset(s, 0, sizeof *s);
  /* 99% sends no position to the CPU below 100 a batch but the first: a
   * fifth of a batch of 5. Small batches warm up at 100 (their first
   * probe then measures the CPU). */
  s->pct = batch >= 100 ? GF_SHARE_WARM : 100;
  s->settle = settle;
  s->window = window ? window : 1;
  s->batch = batch ? batch : 1;
  s->cores = cores ? cores : 1;
  s->dir = -1;
  s->backoff = 1;
}

/* The share a probe from pct in direction dir tries, or pct when there is
 * none that way: towards the GPU MIN_MOVE points, towards the CPU as far
 * as the idle cores could carry (s->cpu_room points). */
static uint32_t neighbour(const gf_jpeg_share *s, int dir) {
  uint32_t pct = s->pct;
  if (dir < 0)
    return pct > s->cpu_room ? pct - s->cpu_room : 0;
  return pct + GF_SHARE_MIN_MOVE < 100 ? pct + GF_SHARE_MIN_MOVE : 100;
}

/* The points of share the cores the process left idle over the
 * measurement from a to b could take from the engines, decoding twice the
 * images they move, at `rate` batches a second: in FINE steps, 0 below
 * MIN_MOVE; one STEP while no decode on the CPU was measured. */
static uint32_t cpu_points(const gf_jpeg_share *s, const gf_share_clock *a,
                           const gf_share_clock *b, double rate) {
  if (!b->decoded || !b->decode_ns)
    return GF_SHARE_STEP;
  double wall = (double)(b->now_ns - a->now_ns);
  double used = b->cpu_ns > a->cpu_ns ? (double)(b->cpu_ns - a->cpu_ns) : 0;
  double idle = (double)s->cores - used / wall;
  double per_core = (double)b->decoded * 1e9 / (double)b->decode_ns;
  if (idle <= 0)
    return 0;
  double pts = idle * per_core * 100.0 / (2.0 * rate * s->batch);
  if (pts >= 100)
    return 100;
  uint32_t p = (uint32_t)pts / GF_SHARE_FINE * GF_SHARE_FINE;
  return p >= GF_SHARE_MIN_MOVE ? p : 0;
}

/* Starts a probe from the share just measured at `rate`, or holds. */
static void next_move(gf_jpeg_share *s, double rate) {
  s->from_pct = s->pct;
  s->from_rate = rate;
  if (s->hold) {
    s->hold--;
    return;
  }
  for (int turn = 0; turn < 2; turn++) {
    uint32_t to = neighbour(s, s->dir);
    if (to != s->pct) {
      s->pct = to;
      s->probing = true;
      return;
    }
    s->dir = -s->dir; /* nothing this way: look the other */
  }
}

uint32_t gf_jpeg_share_batch(gf_jpeg_share *s, const gf_share_clock *c,
                             bool *changed) {
  uint32_t before = s->pct;
  s->seen++;
  if (s->seen == s->settle + 1)
    s->t0 = *c; /* measured from here: the window's batches follow */
  if (s->seen < s->settle + 1 + s->window) {
    if (changed)
      *changed = false;
    return s->pct;
  }
  uint64_t dt = c->now_ns > s->t0.now_ns ? c->now_ns - s->t0.now_ns : 1;
  double rate = (double)s->window * 1e9 / (double)dt;
  s->cpu_room = cpu_points(s, &s->t0, c, rate);
  s->seen = 0;
  if (!s->warm) {
    /* Measured at GF_SHARE_WARM, for the workers' decode rate: the first
     * measurement to compare is at 100. */
    s->warm = true;
    s->pct = 100;
  } else if (s->probing) {
    s->probing = false;
    s->changes++;
    /* Towards the CPU: kept when faster; towards the GPU: when not
     * slower. */
    double need =
        s->pct < s->from_pct ? 1.0 + GF_SHARE_TOL : 1.0 - GF_SHARE_TOL;
    if (rate >= s->from_rate * need) {
      s->backoff = 1;
      next_move(s, rate);
    } else {
      /* Slower: back, and wait longer each time before looking again,
       * the other way first. */
      s->pct = s->from_pct;
      s->hold = s->backoff;
      s->backoff = s->backoff * 4 < GF_SHARE_HOLD_MAX ? s->backoff * 4
                                                      : GF_SHARE_HOLD_MAX;
      s->dir = -s->dir;
    }
  } else {
    next_move(s, rate);
  }
  if (changed)
    *changed = s->pct != before;
  return s->pct;
}
