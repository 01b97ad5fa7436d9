/* The GPU's share of JPEG samples under gpu_decode auto, chosen from the
 * consumer's rate (lib/pipeline/jpeg_share.h), against consumers whose
 * rate at each share is modelled on what was measured on an H200
 * (bench/RESULTS.md, 2026-11-29), with the noise of a real step (up to
 * 0.4% a measurement):
 *   - a training loop on 16 cores: every JPEG on the CPU fastest (0.998
 *     of synthetic against 0.913 on the engines): the share must go to 0;
 *   - the same on 4 cores: the engines fastest (0.94 against 0.86 at 85%
 *     and 0.76 at 70%): the share must stay at 100, its probes costing
 *     little;
 *   - a bench with no model: engines and workers together fastest (60%
 *     on 16 threads gave 1.35x the engines alone): a share between;
 *   - a consumer whose best share moves (cores taken away half-way): the
 *     share follows.
 * And the mechanics: nothing moves before the warm-up measurement and one
 * more, a refused probe goes back at once, the share stays in 0-100. */
#include "pipeline/jpeg_share.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>

typedef double (*rate_fn)(uint32_t pct, uint64_t batch);

/* Training, 16 cores: images/s at each share, linear between the ends. */
static double train16(uint32_t pct, uint64_t b) {
  (void)b;
  return (13207.0 - (13207.0 - 12083.0) * pct / 100.0) / 256.0;
}
/* Training, 4 cores: the CPU workers cannot keep up below ~85%. */
static double train4(uint32_t pct, uint64_t b) {
  (void)b;
  double img = pct >= 100  ? 12416.0
               : pct >= 75 ? 10500.0
               : pct >= 50 ? 8000.0
                           : 5000.0 + 30.0 * pct;
  return img / 256.0;
}
/* A bench with no model: the fastest mix near 60%. */
static double bench16(uint32_t pct, uint64_t b) {
  (void)b;
  return (40800.0 - 250.0 * fabs((double)pct - 60.0)) / 256.0;
}
/* 16 cores, then 4 from batch 6000 on. */
static double shrink(uint32_t pct, uint64_t b) {
  return b < 6000 ? train16(pct, b) : train4(pct, b);
}

static uint64_t lcg = 88172645463325252ull;
static double noise(void) { /* uniform in [-0.002, 0.002] */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(lcg >> 11) / 9007199254740992.0 - 0.5) * 0.004;
}

/* Runs n batches; returns the share at the end and, in at[0..4], the
 * batches delivered at 0, 25, 50, 75, 100 (counted from `from`). The
 * share a batch was made with is the one in force `lag` batches before
 * (the batches in flight). */
static uint32_t run(rate_fn f, uint64_t n, uint64_t from, uint64_t at[5],
                    uint32_t *changes) {
  gf_jpeg_share s;
  const uint32_t lag = 4;
  gf_jpeg_share_init(&s, lag, 32);
  uint32_t hist[8] = {100, 100, 100, 100, 100, 100, 100, 100};
  uint64_t t = 1000000000ull;
  for (int k = 0; k < 5; k++)
    at[k] = 0;
  for (uint64_t b = 0; b < n; b++) {
    uint32_t made = hist[b % lag]; /* routed lag batches ago */
    double r = f(made, b) * (1.0 + noise());
    t += (uint64_t)(1e9 / r);
    bool changed;
    uint32_t p = gf_jpeg_share_batch(&s, t, &changed);
    CHECK(p <= 100 && p % GF_SHARE_STEP == 0);
    CHECK(changed == (p != hist[(b + lag - 1) % lag]) || b < lag);
    hist[b % lag] = p;
    if (b >= from)
      at[made / GF_SHARE_STEP]++;
  }
  *changes = s.changes;
  return s.pct;
}

static void report(const char *what, uint32_t end, const uint64_t at[5],
                   uint32_t changes) {
  printf("%-22s ends at %3u%%; batches at 0/25/50/75/100%%: %llu %llu %llu "
         "%llu %llu; %u probes\n",
         what, end, (unsigned long long)at[0], (unsigned long long)at[1],
         (unsigned long long)at[2], (unsigned long long)at[3],
         (unsigned long long)at[4], changes);
}

int main(void) {
  uint64_t at[5];
  uint32_t ch;
  /* Mechanics: (4 settled + 1 + 32 measured) twice, the warm-up let go,
   * at 100 before the first probe. */
  {
    gf_jpeg_share s;
    gf_jpeg_share_init(&s, 4, 32);
    uint64_t t = 0;
    uint32_t first = 0;
    for (uint32_t b = 1; b <= 200 && !first; b++) {
      t += 1000000;
      bool c;
      if (gf_jpeg_share_batch(&s, t, &c) != 100)
        first = b;
    }
    CHECK(first == 74);
    CHECK(s.pct == 75 && s.probing);
    /* The probe slower by 5%: back to 100 at its measurement's end. */
    for (uint32_t b = 0; b < 37; b++) {
      t += 1050000;
      gf_jpeg_share_batch(&s, t, NULL);
    }
    CHECK(s.pct == 100 && !s.probing);
  }

  uint32_t end = run(train16, 20000, 5000, at, &ch);
  report("training, 16 cores", end, at, ch);
  CHECK(end == 0);
  CHECK(at[0] > 14000); /* of the last 15,000 batches, on the CPU */

  end = run(train4, 20000, 0, at, &ch);
  report("training, 4 cores", end, at, ch);
  CHECK(end == 100);
  CHECK(at[4] > 19000); /* probes cost under 5% of the batches */

  end = run(bench16, 20000, 5000, at, &ch);
  report("bench, no model", end, at, ch);
  CHECK(end == 50 || end == 75);
  CHECK(at[2] + at[3] > 14000);

  end = run(shrink, 30000, 20000, at, &ch);
  report("16 cores, then 4", end, at, ch);
  CHECK(end == 100);
  CHECK(at[4] > 9000); /* back on the engines within the next 1,000 */
  return gf_test_finish();
}
