#!/usr/bin/env bash
# A cached raw dataset held in RAM delivered to the GPU, side by side with
# pinned host-to-device bandwidth, in one run (issue: GPU stage):
#   1. the gather micro-benchmark: one batch of 256 x 196,608 bytes
#      scattered in pinned memory, moved by one contiguous copy (the
#      yardstick), 256 copies, one batched copy, and the gather kernel;
#   2. `gpufeed bench` on 20,000 256x256 RGB photo crops stored raw, 4
#      worker threads, a 16 GiB cache, 30 epochs (the first fills the cache;
#      the rate is the steady epochs'), each with --h2d-probe: the cache
#      pinned and gathered by the copy engines (the default), by the gather
#      kernel, and not pinned (--no-cache-direct: the workers copy each
#      cached sample into the pinned staging slot, the old path).
#   bash bench/cache_direct.sh [BUILD]   PHOTOS: a folder of PNG photos
#   (default .devdata/photos); WORK: scratch folder (default /tmp/r2)
set -u
B=${1:-build-dev}; W=${WORK:-/tmp/r2}; mkdir -p "$W"
nvidia-smi -L
"$B"/tests/test_gpu_gather --bench || exit 1
if [ ! -f "$W/png/.done" ]; then
  "$B"/gpufeed synth "$W/png" --from "${PHOTOS:-.devdata/photos}" --count 20000 \
    --size 256x256 --quiet && touch "$W/png/.done" || exit 1
fi
[ -f "$W/raw/index.gfi" ] || "$B"/gpufeed build "$W/png" "$W/raw" --codec raw --quiet || exit 1
common="--device 0 --threads 4 --prefetch 4 --cache 16G --epochs 30 --h2d-probe --json --quiet"
for mode in engine kernel; do
  echo "== pinned cache, $mode gathers"
  GPUFEED_DIRECT_COPY=$mode "$B"/gpufeed bench "$W/raw" $common
done
echo "== cache not pinned (--no-cache-direct)"
"$B"/gpufeed bench "$W/raw" $common --no-cache-direct
