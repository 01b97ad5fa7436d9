#!/usr/bin/env bash
# Host-mode loader throughput against the plain libpng decode ceiling, with
# the same thread count, in one run: a PNG folder of photo crops, then a
# cache of it in each codec.
#
#   bash bench/loader_host.sh BIN PHOTOS WORK [THREADS] [COUNT] [SIZE]
#
# BIN holds `gpufeed` and `bench/png_ceiling` (a build folder); PHOTOS a
# folder of PNG photos to crop; WORK a scratch folder. THREADS defaults to
# the online cores, COUNT to 20000, SIZE to 256x256.
set -euo pipefail
bin=$1 photos=$2 work=$3
threads=${4:-$(nproc)} count=${5:-20000} size=${6:-256x256}
gf=$bin/gpufeed
ceiling=$bin/bench/png_ceiling
mkdir -p "$work"
echo "# machine: $(nproc) cores, $(uname -r); threads $threads; $count crops of $size"
if [ ! -f "$work/png/.done" ]; then
  "$gf" synth "$work/png" --from "$photos" --count "$count" --size "$size" --force --quiet
  touch "$work/png/.done"
fi
for c in png raw zstd gradzstd; do
  t0=$(date +%s.%N)
  "$gf" build "$work/png" "$work/cache-$c" --codec "$c" --force --quiet
  t1=$(date +%s.%N)
  awk -v n="$count" -v a="$t0" -v b="$t1" -v c="$c" -v s="$(du -sb "$work/cache-$c" | cut -f1)" 'BEGIN { printf "build %s: %.0f images/s (%s bytes)\n", c, n / (b - a), s }'
done
# Warm the page cache so every source is measured from memory.
cat "$work"/png/*/*.png >/dev/null
run() { echo "## $*"; "$@"; }
run "$ceiling" "$work/png" --threads "$threads" --seconds 5 --json
run "$gf" bench "$work/png" --device cpu --threads "$threads" --epochs 3 --json --quiet
for c in png raw zstd gradzstd; do
  run "$gf" bench "$work/cache-$c" --device cpu --threads "$threads" --epochs 3 --json --quiet
done
run "$gf" bench "$work/cache-raw" --device cpu --threads "$threads" --epochs 3 --cache 8G --json --quiet
run "$ceiling" "$work/png" --threads "$threads" --seconds 5 --json
