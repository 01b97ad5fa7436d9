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
 * that, one share at a time, and moves to a neighbouring share when it is
 * not slower.
 *
 * How: the share starts at 100 (every sample the engines take). The first
 * measurement is let go (the consumer warming up). After each measurement
 * (`window` batches, counted once `settle` batches have passed since the last
 * change, so that the batches in flight, routed by the old share, are not
 * counted) it probes a neighbour, STEP points away, towards the CPU first; the
 * neighbour is kept when its rate is at least (1 - TOL) of the share it came
 * from, and probing goes on in the same direction; otherwise the old share
 * comes back and the next probe waits `hold` measurements, doubling after each
 * refusal (up to GF_SHARE_HOLD_MAX), then tries the other direction. A consumer
 * that takes batches as fast as they come (a bench with no model) finds the
 * share at which the engines and the workers together decode fastest; a
 * training loop, the share that slows its step least.
 *
 * Pure arithmetic on the times given: no clock, no lock. One thread (the
 * consumer's) calls it; the share it returns is published by the caller. */
#ifndef GF_PIPELINE_JPEG_SHARE_H
#define GF_PIPELINE_JPEG_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#define GF_SHARE_STEP 25u     /* points a probe moves the share */
#define GF_SHARE_TOL 0.01     /* a probe may be 1% slower and be kept */
#define GF_SHARE_HOLD_MAX 32u /* measurements at most between probes */

typedef struct gf_jpeg_share {
  uint32_t pct;    /* the share now, 0-100 */
  uint32_t settle; /* batches skipped after a change */
  uint32_t window; /* batches a measurement */
  /* Internal. */
  uint32_t from_pct; /* a probe's share to return to */
  double from_rate;  /* its rate, batches a second; 0: not measured */
  bool probing;
  int dir; /* -1 towards the CPU, +1 towards the GPU */
  uint32_t hold, backoff;
  uint32_t seen;    /* batches since the last change or measurement */
  uint64_t t0;      /* when the measured batches began */
  uint32_t changes; /* probes kept or refused */
  bool warm;        /* the first measurement was let go */
} gf_jpeg_share;

/* settle: the batches in flight after a change (slots + 1); window: the
 * batches a measurement averages (at least 1). */
void gf_jpeg_share_init(gf_jpeg_share *s, uint32_t settle, uint32_t window);

/* One batch delivered to the consumer at now_ns (a monotonic clock).
 * Returns the share to route samples by from now on; *changed (may be
 * NULL) tells whether it moved. */
uint32_t gf_jpeg_share_batch(gf_jpeg_share *s, uint64_t now_ns, bool *changed);

#endif /* GF_PIPELINE_JPEG_SHARE_H */
