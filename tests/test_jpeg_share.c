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
 *   - a bench with no model on 16 threads: engines and workers together
 *     fastest (60% gave 1.48x the engines alone): a share between, at
 *     95% of the best fixed share's rate;
 *   - the same on 4 threads: the idle cores cannot take a quarter of the
 *     images, so no probe after the first (which measures the CPU);
 *   - a consumer whose best share moves (cores taken away half-way): the
 *     share follows.
 * And the mechanics: nothing moves before the warm-up measurement and one
 * more, a probe towards the CPU that does not gain goes back at once, no
 * probe towards the CPU where the idle cores could not carry it, the share
 * stays in 0-100. */
#include "pipeline/jpeg_share.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>

/* A consumer: images/s at each share (at batch b), and the process's
 * CPU: the cores it may use, the cores it uses with every JPEG on the
 * engines, and the images a core decodes a second. */
typedef struct model {
  double (*rate)(uint32_t pct, uint64_t b);
  double cores, base, per_core;
} model;

/* Training, 16 cores: images/s at each share, linear between the ends. */
static double train16(uint32_t pct, uint64_t b) {
  (void)b;
  return 13207.0 - (13207.0 - 12083.0) * pct / 100.0;
}
/* Training, 4 cores: the CPU workers cannot keep up below ~85%. */
static double train4(uint32_t pct, uint64_t b) {
  (void)b;
  return pct >= 100  ? 12416.0
         : pct >= 75 ? 10500.0
         : pct >= 50 ? 8000.0
                     : 5000.0 + 30.0 * pct;
}
/* A bench with no model, 16 threads: images/s at the fixed shares
 * measured on an H200 (bench/RESULTS.md, 2026-11-29, third session: 100%
 * 27,962, 75% 32,331, 60% 41,300, 50% 40,885, every JPEG on the CPU
 * 20,779), linear between them. The fastest mix is near 60%, 15 points
 * from 75, where a controller moving by 25 points stalled. */
static double bench16(uint32_t pct, uint64_t b) {
  (void)b;
  static const double p[5] = {0, 50, 60, 75, 100},
                      r[5] = {20779, 40885, 41300, 32331, 27962};
  for (int k = 1; k < 5; k++)
    if (pct <= p[k])
      return r[k - 1] +
             (r[k] - r[k - 1]) * (pct - p[k - 1]) / (p[k] - p[k - 1]);
  return r[4];
}
/* The same on 4 cores: one decoder at 29.4k images/s, the 2.4 cores left
 * at 2,500 images/s each (bench/RESULTS.md, 2026-11-29: the share probed
 * without a bound on the idle cores ended near 50% at 21k). */
static double bench4(uint32_t pct, uint64_t b) {
  (void)b;
  double gpu = pct ? 29400.0 * 100.0 / pct : 1e12;
  double cpu = pct < 100 ? 6000.0 * 100.0 / (100 - pct) : 1e12;
  return gpu < cpu ? gpu : cpu;
}
/* 16 cores, then 4 from batch 6000 on (other processes took them: the
 * affinity mask still says 16). */
static double shrink(uint32_t pct, uint64_t b) {
  return b < 6000 ? train16(pct, b) : train4(pct, b);
}

static uint64_t lcg = 88172645463325252ull;
static double noise(void) { /* uniform in [-0.002, 0.002] */
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(lcg >> 11) / 9007199254740992.0 - 0.5) * 0.004;
}

/* Runs n batches of 256; returns the share at the end and, in at[0..4],
 * the batches delivered at 0, 25, 50, 75, 100 (counted from `from`). The
 * share a batch was made with is the one in force `lag` batches before
 * (the batches in flight). */
static double mean_rate; /* images/s over run's batches from `from` */

static uint32_t run(const model *m, uint64_t n, uint64_t from, uint64_t at[5],
                    uint32_t *changes) {
  double span = 0, images = 0;
  gf_jpeg_share s;
  const uint32_t lag = 4, batch = 256;
  gf_jpeg_share_init(&s, lag, 32, batch, (uint32_t)m->cores);
  uint32_t hist[8] = {100, 100, 100, 100, 100, 100, 100, 100};
  gf_share_clock c = {.now_ns = 1000000000ull};
  for (int k = 0; k < 5; k++)
    at[k] = 0;
  for (uint64_t b = 0; b < n; b++) {
    uint32_t made = hist[b % lag]; /* routed lag batches ago */
    double img = m->rate(made, b) * (1.0 + noise());
    double dt = batch * 1e9 / img;
    double on_cpu = batch * (100 - made) / 100.0; /* this batch's */
    double cores = m->base + img * (100 - made) / 100.0 / m->per_core;
    c.now_ns += (uint64_t)dt;
    c.cpu_ns += (uint64_t)(dt * (cores < m->cores ? cores : m->cores));
    c.decoded += (uint64_t)on_cpu;
    c.decode_ns += (uint64_t)(on_cpu * 1e9 / m->per_core);
    bool changed;
    uint32_t p = gf_jpeg_share_batch(&s, &c, &changed);
    CHECK(p <= 100 && (p % GF_SHARE_FINE == 0 || p == GF_SHARE_WARM));
    CHECK(changed == (p != hist[(b + lag - 1) % lag]) || b < lag);
    hist[b % lag] = p;
    if (b >= from) {
      at[made >= GF_SHARE_WARM ? 4 : made / GF_SHARE_STEP]++;
      span += dt;
      images += batch;
    }
  }
  mean_rate = span > 0 ? images * 1e9 / span : 0;
  *changes = s.changes;
  return s.pct;
}

static void report(const char *what, uint32_t end, const uint64_t at[5],
                   uint32_t changes) {
  printf("%-22s ends at %3u%%; batches at 0-24/25-49/50-74/75-99/100%%: "
         "%llu %llu %llu %llu %llu; %u probes; %.0f images/s\n",
         what, end, (unsigned long long)at[0], (unsigned long long)at[1],
         (unsigned long long)at[2], (unsigned long long)at[3],
         (unsigned long long)at[4], changes, mean_rate);
}

/* Feeds batches 1 ms apart (dt_ns each) to s, the process using `used`
 * cores and its workers decoding `on_cpu` samples a batch at 1 ms each;
 * stops at the batch the share leaves `from` at and returns it (0: it did
 * not). */
static uint32_t feed(gf_jpeg_share *s, gf_share_clock *c, uint32_t n,
                     uint64_t dt_ns, double used, uint64_t on_cpu,
                     uint32_t from) {
  for (uint32_t b = 1; b <= n; b++) {
    c->now_ns += dt_ns;
    c->cpu_ns += (uint64_t)(used * (double)dt_ns);
    c->decoded += on_cpu;
    c->decode_ns += on_cpu * 1000000;
    if (gf_jpeg_share_batch(s, c, NULL) != from)
      return b;
  }
  return 0;
}

int main(void) {
  uint64_t at[5];
  uint32_t ch;
  /* Mechanics: (4 settled + 1 + 32 measured) at GF_SHARE_WARM, then
   * the same at 100, then the first probe, one step while no decode on
   * the CPU was measured. */
  {
    gf_jpeg_share s;
    gf_share_clock c = {0};
    gf_jpeg_share_init(&s, 4, 32, 256, 16);
    CHECK(s.pct == GF_SHARE_WARM);
    CHECK(feed(&s, &c, 200, 1000000, 2.0, 0, GF_SHARE_WARM) == 37);
    CHECK(s.pct == 100 && !s.probing);
    CHECK(feed(&s, &c, 200, 1000000, 2.0, 0, 100) == 37);
    CHECK(s.pct == 75 && s.probing);
    /* The probe as fast as 100 (towards the CPU a tie is not kept): back
     * to 100 at its measurement's end. */
    CHECK(feed(&s, &c, 37, 1000000, 2.0, 64, 75) == 37);
    CHECK(s.pct == 100 && !s.probing);
    /* A batch of 64: warmed up at 100 (99% would send 1 in 64). */
    gf_jpeg_share_init(&s, 4, 32, 64, 16);
    CHECK(s.pct == 100);
  }
  /* How far the idle cores let a probe go: 256 images a ms is 256k a
   * second; the workers decode 1k a second a core; the process uses 2
   * cores. A point moves 2,560 images a second, which needs 5.12 idle
   * cores: 58 idle cores carry 11.3 points, below MIN_MOVE (no probe),
   * 98 carry 19.1 (a probe of 15), 198 38.7 (35), 398 77.3 (75), 998 all. */
  {
    static const struct {
      uint32_t cores, to;
    } cases[] = {{60, 100}, {100, 85}, {200, 65}, {400, 25}, {1000, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      gf_jpeg_share s;
      gf_share_clock c = {.decoded = 1, .decode_ns = 1000000};
      gf_jpeg_share_init(&s, 4, 32, 256, cases[k].cores);
      CHECK(feed(&s, &c, 200, 1000000, 2.0, 0, GF_SHARE_WARM) == 37);
      uint32_t left = feed(&s, &c, 2000, 1000000, 2.0, 0, 100);
      CHECK(cases[k].to == 100 ? left == 0 : left == 37);
      CHECK(s.pct == cases[k].to);
    }
  }

  const model m_train16 = {train16, 16, 3.0, 1500};
  uint32_t end = run(&m_train16, 20000, 5000, at, &ch);
  report("training, 16 cores", end, at, ch);
  CHECK(end == 0);
  CHECK(at[0] > 14000); /* of the last 15,000 batches, on the CPU */
  CHECK(at[1] + at[2] + at[3] < 1000); /* the probes back cost little */

  const model m_train4 = {train4, 4, 3.0, 1200};
  end = run(&m_train4, 20000, 0, at, &ch);
  report("training, 4 cores", end, at, ch);
  CHECK(end == 100);
  CHECK(at[4] > 19900 && ch == 0); /* no probe: no room on the cores */

  /* The workers' decode rate a core as the controller stalled at 75%
   * measured it: the process used 5.9 cores there. */
  const model m_bench16 = {bench16, 16, 1.5, 1400};
  end = run(&m_bench16, 20000, 5000, at, &ch);
  report("bench, 16 threads", end, at, ch);
  CHECK(end >= 50 && end <= 70);
  CHECK(at[2] > 14000);
  CHECK(mean_rate > 0.95 * 41300); /* the best fixed share's */

  const model m_bench4 = {bench4, 4, 1.6, 2500};
  end = run(&m_bench4, 20000, 0, at, &ch);
  report("bench, 4 threads", end, at, ch);
  CHECK(end == 100);
  CHECK(at[4] > 19900 && ch == 0);

  const model m_shrink = {shrink, 16, 3.0, 1500};
  end = run(&m_shrink, 30000, 20000, at, &ch);
  report("16 cores, then 4", end, at, ch);
  CHECK(end == 100);
  CHECK(at[4] > 9000); /* back on the engines within the next 1,000 */
  return gf_test_finish();
}
