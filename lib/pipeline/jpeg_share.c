/* The GPU's share of JPEG samples chosen from the consumer's rate (see
 * jpeg_share.h). */
#include "pipeline/jpeg_share.h"

#include <string.h>

void gf_jpeg_share_init(gf_jpeg_share *s, uint32_t settle, uint32_t window) {
  memset(s, 0, sizeof *s);
  s->pct = 100;
  s->settle = settle;
  s->window = window ? window : 1;
  s->dir = -1;
  s->backoff = 1;
}

/* The share a probe from pct in direction dir tries, or pct when there is
 * none that way. */
static uint32_t neighbour(uint32_t pct, int dir) {
  if (dir < 0)
    return pct > GF_SHARE_STEP ? pct - GF_SHARE_STEP : 0;
  return pct + GF_SHARE_STEP < 100 ? pct + GF_SHARE_STEP : 100;
}

/* Starts a probe from the share just measured at `rate`, or holds. */
static void next_move(gf_jpeg_share *s, double rate) {
  s->from_pct = s->pct;
  s->from_rate = rate;
  if (s->hold) {
    s->hold--;
    return;
  }
  uint32_t to = neighbour(s->pct, s->dir);
  if (to == s->pct) { /* the end of this direction: look the other way */
    s->dir = -s->dir;
    to = neighbour(s->pct, s->dir);
  }
  if (to == s->pct)
    return;
  s->pct = to;
  s->probing = true;
}

uint32_t gf_jpeg_share_batch(gf_jpeg_share *s, uint64_t now_ns, bool *changed) {
  uint32_t before = s->pct;
  s->seen++;
  if (s->seen == s->settle + 1)
    s->t0 = now_ns; /* measured from here: the window's batches follow */
  if (s->seen < s->settle + 1 + s->window) {
    if (changed)
      *changed = false;
    return s->pct;
  }
  uint64_t dt = now_ns > s->t0 ? now_ns - s->t0 : 1;
  double rate = (double)s->window * 1e9 / (double)dt;
  s->seen = 0;
  if (!s->warm) {
    s->warm = true;
  } else if (s->probing) {
    s->probing = false;
    s->changes++;
    if (rate >= s->from_rate * (1.0 - GF_SHARE_TOL)) {
      /* Not slower: kept, and on the same way. */
      s->backoff = 1;
      next_move(s, rate);
    } else {
      /* Slower: back, and wait longer each time before looking again,
       * the other way first. */
      s->pct = s->from_pct;
      s->hold = s->backoff;
      s->backoff = s->backoff * 2 < GF_SHARE_HOLD_MAX ? s->backoff * 2
                                                      : GF_SHARE_HOLD_MAX;
      s->dir = -s->dir;
      s->from_rate = 0;
    }
  } else {
    next_move(s, rate);
  }
  if (changed)
    *changed = s->pct != before;
  return s->pct;
}
