/* The share of JPEG samples sent to the GPU under gpu_decode auto, chosen
 * at run time from the rate the consumer takes batches at.
 *
 * Why the rate and not the decoders' own speeds: beside a training step
 * the two decoders cost the model differently. The CPU workers take
 * cores the training thread launches from; the JPEG engines' decode calls
 * slow the training thread's CUDA launches (bench/RESULTS.md,
 * 2026-11-29: ResNet-18 on 16 cores trained at 0.998 of its synthetic
 * speed with every JPEG on the CPU and 0.91 with every JPEG on the
 * engines; on 4 cores at 0.38 and 0.94). What each share costs shows only
 * in the batches the consumer takes a second, so the controller measures
 * that, one share at a time, and keeps another share when it pays (below).
 *
 * How: the first measurement is the consumer warming up, at GF_SHARE_WARM
 * (a few positions a batch to the CPU workers, so that their decode rate is
 * known before any probe; at 100 for batches below 100, where 99% would
 * send a whole position a batch), and is let go; then the share is 100 (every
 * sample to the engines). After each measurement (`window` batches, counted
 * once `settle` batches have passed since the last change, so that the
 * batches in flight, routed by the old share, are not counted) it probes
 * another share, towards the CPU first. A probe towards the CPU is kept only
 * when it is at least TOL faster than the share it came from, one towards
 * the GPU when it is not TOL slower: a tie goes to the engines, which leave
 * the cores to the rest of the process. A kept probe goes on the same way; a
 * refused one brings the old share back, and the next probe waits `hold`
 * measurements, four times as many after each refusal (up to
 * GF_SHARE_HOLD_MAX), then tries the other direction.
 *
 * How far: towards the GPU MIN_MOVE points; towards the CPU as far as the idle
 * cores could carry, in multiples of FINE points, and not at all where
 * they could not carry MIN_MOVE. The idle cores are the CPUs the process
 * may run on less the CPU time it used in the last measurement; what they
 * could carry, at the images a core decodes a second (the workers' own
 * decodes), must be twice the images the probe moves. Measured on an H200
 * (bench/RESULTS.md, 2026-11-29): probing 25 points at a time with no such
 * bound cost ResNet-18 on 4 cores 0.95 -> 0.88 of its synthetic speed and
 * a bench without a model a third of its images a second, where the CPU
 * could not take a quarter of the images at any share; on 16 cores a step
 * of 25 points changes the step's rate by about 2%, within a measurement's
 * noise, where all of it changes it by 9%: a move below MIN_MOVE changes
 * it by less than the TOL a probe is judged by. Moves in whole 25-point
 * steps left a bench on 16 threads at 75% (32k images/s) where 60% gave
 * 41k: the room at 75% was 15 to 20 points; with probes towards the GPU of
 * 25 points, doubling the wait after each refusal, the same bench over 10
 * epochs spent a tenth of its batches on refused probes (third session's
 * entry; test_jpeg_share's bench model is that bench's measured rates).
 *
 * A consumer that takes batches as fast as they come (a bench with no model)
 * finds the share at which the engines and the workers together decode
 * fastest; a training loop, the share that slows its step least.
 *
 * Pure arithmetic on the times given: no clock, no lock. One thread (the
 * consumer's) calls it; the share it returns is published by the caller. */
#ifndef GF_PIPELINE_JPEG_SHARE_H
#define GF_PIPELINE_JPEG_SHARE_H

#include <stdbool.h>
#include <stdint.h>

/* The first probe's points, while no decode on the CPU was measured. */
#define GF_SHARE_STEP 25u
#define GF_SHARE_FINE 5u      /* a probe moves a multiple of these points */
#define GF_SHARE_MIN_MOVE 15u /* ... and at least this many */
#define GF_SHARE_TOL 0.01     /* what a probe must gain (CPU) or may lose */
#define GF_SHARE_HOLD_MAX 32u /* measurements at most between probes */
#define GF_SHARE_WARM 99u     /* the share of the first measurement */

/* What the consumer's thread reads when it takes a batch. */
typedef struct gf_share_clock {
  uint64_t now_ns;    /* a monotonic clock */
  uint64_t cpu_ns;    /* the process's CPU time, all threads */
  uint64_t decode_ns; /* the workers' time decoding on the CPU, summed */
  uint64_t decoded;   /* the samples they decoded */
} gf_share_clock;

typedef struct gf_jpeg_share {
  uint32_t pct;    /* the share now, 0-100 */
  uint32_t settle; /* batches skipped after a change */
  uint32_t window; /* batches a measurement */
  uint32_t batch;  /* samples a batch */
  uint32_t cores;  /* CPUs the process may run on */
  /* Internal. */
  uint32_t from_pct; /* a probe's share to return to */
  double from_rate;  /* its rate, batches a second */
  bool probing;
  int dir; /* -1 towards the CPU, +1 towards the GPU */
  uint32_t hold, backoff;
  uint32_t seen;    /* batches since the last change or measurement */
  gf_share_clock t0; /* when the measured batches began */
  uint32_t cpu_room; /* points the idle cores could take (cpu_points):
                       0 or MIN_MOVE to 100 in FINE steps */
  uint32_t changes; /* probes kept or refused */
  bool warm;        /* the first measurement was let go */
} gf_jpeg_share;

/* settle: the batches in flight after a change (slots + 1); window: the
 * batches a measurement averages (at least 1); batch: samples a batch;
 * cores: the CPUs the process may run on (at least 1). */
void gf_jpeg_share_init(gf_jpeg_share *s, uint32_t settle, uint32_t window,
                        uint32_t batch, uint32_t cores);

/* One batch delivered to the consumer at c->now_ns. Returns the share to
 * route samples by from now on; *changed (may be NULL) tells whether it
 * moved. */
uint32_t gf_jpeg_share_batch(gf_jpeg_share *s, const gf_share_clock *c,
                             bool *changed);

#endif /* GF_PIPELINE_JPEG_SHARE_H */
