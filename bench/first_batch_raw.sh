#!/usr/bin/env bash
# Time to the first batch on a 1M-sample index (GPU and host mode) and the
# cached raw dataset delivered to the GPU with 4 threads and 2/4/8 slots.
#   bash bench/first_batch_raw.sh   (needs build-dev; PHOTOS: a folder of PNG photos)
set -u; B=build-dev; W=/tmp/r2; mkdir -p $W
[ -f $W/index1m/index.gfi ] || $B/bench/make_index $W/index1m >/dev/null
for i in 1 2 3; do $B/gpufeed bench $W/index1m --device 0 --threads 16 --batches 5 --json --quiet; done
$B/gpufeed bench $W/index1m --device cpu --threads 16 --batches 5 --json --quiet
[ -f $W/png/.done ] || { $B/gpufeed synth $W/png --from "${PHOTOS:-.devdata/photos}" --count 20000 --size 256x256 --quiet && touch $W/png/.done; }
[ -f $W/raw/index.gfi ] || $B/gpufeed build $W/png $W/raw --codec raw --quiet
for p in 2 4 8; do $B/gpufeed bench $W/raw --device 0 --threads 4 --prefetch $p --cache 16G --epochs 4 --h2d-probe --json --quiet; done
