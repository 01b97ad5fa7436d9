#!/usr/bin/env bash
# The first batch on a 1M-sample varied-size index with the staging slots
# pinned in the background (create pins slot 0 only), and what pinning a
# slot costs each way (bench/pin_bench), in one run on a machine with an
# NVIDIA GPU:
#   1. bench/make_index --varied 200-500 (once: a slot is 256 x 750,000 B);
#   2. `gpufeed bench --rrc 224` f16 NCHW normalised, 5 batches, at
#      prefetch 2, 4 and 8, REPS times each: first_batch_ms and create_ms
#      (the CUDA context made before the clock) should no longer grow with
#      the prefetch (target: first_batch_ms < 100 at each); the log
#      (GPUFEED_LOG=debug) shows how long the background pins took, begun
#      once the first batch is submitted ("staging slots 1-N of M pinned
#      in the background in X ms"), create's phases ("create: source ..
#      ms, sizing .., stage .., slots .., workers .." as ms since create
#      began) and worker 0's read buffer made ready on its own thread;
#   3. pin_bench on one 192 MB slot: MAP_POPULATE + register (the old
#      create path), MADV_POPULATE_WRITE + register, register alone, huge
#      pages (the background pins now), huge pages made by 8 threads (slot
#      0 at create now), registration split over threads, cudaHostAlloc.
#
#   bash bench/first_batch_pin.sh BIN WORK [THREADS]
#
# BIN holds gpufeed, bench/make_index and bench/pin_bench. Environment:
# DEVICE (default 0), INDEX_COUNT (default 1000000), REPS (default 3).
set -euo pipefail
bin=$1 work=$2 threads=${3:-$(nproc)}
device=${DEVICE:-0} index_count=${INDEX_COUNT:-1000000} reps=${REPS:-3}
mkdir -p "$work"
[ "$(cat "$work/index1m/.count" 2>/dev/null)" = "$index_count 200-500" ] || {
  rm -rf "$work/index1m"
  "$bin/bench/make_index" "$work/index1m" --count "$index_count" --varied 200-500 >/dev/null
  echo "$index_count 200-500" >"$work/index1m/.count"
}
norm=(--dtype f16 --layout nchw --mean 123.675,116.28,103.53 --std 58.395,57.12,57.375)
for p in 2 4 8; do
  for r in $(seq "$reps"); do
    line=$(GPUFEED_LOG=debug "$bin/gpufeed" bench "$work/index1m" --rrc 224 "${norm[@]}" \
      --device "$device" --threads "$threads" --prefetch "$p" --batches 5 --batch 256 \
      --json --quiet 2> >(grep -E "pinned in the background|create: source|worker 0: read buffer" >&2) |
      tail -n 1)
    echo "{\"prefetch\":$p,\"rep\":$r,\"result\":$line}"
  done
done
"$bin/bench/pin_bench" --mb 192 --reps 5 --threads 8 --device "$device"
