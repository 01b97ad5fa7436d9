#!/usr/bin/env bash
# R6: epochs served from the disk cache tier, against the same epochs read
# from local disk: at least 0.95x.
#
#   bash bench/cache_tier.sh BIN PHOTOS WORK [COUNT] [SIZE] [ROUNDS]
#
# BIN is a build folder configured with the tests (they bring slow://, the
# test storage that serves a local folder as a remote one): it holds
# `gpufeed` and `bench/cache_tier`. PHOTOS is a folder of PNG photos to
# crop, WORK a scratch folder. COUNT crops (default 5000) of SIZE (default
# 128x128) are built into a dataset in the default codec (gradzstd) and in
# raw (the reads' own cost, nothing to decode); for each, bench/cache_tier
# runs one warming epoch through slow:// with the tier (2 ms a read), then
# ROUNDS (default 5) rounds of 2 epochs from the folder and through the
# tier, in alternating order, shuffle and block order, and prints the
# medians of images/s and of the CPU time an image takes, and their
# ratios; each round also reads slow:// without the tier at no latency
# (the fetch stage's own cost, which the tier cannot go below). `gpufeed
# bench` on the folder is printed beside it as a check of the local
# figure.
set -euo pipefail
bin=$1 photos=$2 work=$3
count=${4:-5000} size=${5:-128x128} rounds=${6:-5}
gf=$bin/gpufeed
tier=$bin/bench/cache_tier
mkdir -p "$work"
echo "# machine: $(nproc) cores, $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME"); $count crops of $size; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ! -f "$work/png/.done" ]; then
  "$gf" synth "$work/png" --from "$photos" --count "$count" --size "$size" --force --quiet
  touch "$work/png/.done"
fi
for c in gradzstd raw; do
  [ -f "$work/ds-$c/index.gfi" ] || "$gf" build "$work/png" "$work/ds-$c" --codec "$c" --force --quiet
done
run() { echo "## $*"; "$@"; }
for c in gradzstd raw; do
  ds=$work/ds-$c
  cat "$ds"/* >/dev/null # the page cache holds the folder, as it will the tier
  echo "# $c: $(du -sb "$ds" | cut -f1) bytes"
  run "$gf" bench "$ds" --device cpu --epochs 2 --json --quiet
  for order in shuffle block; do
    rm -rf "$work/cache"
    run "$tier" "$ds" "$work/cache" --rounds "$rounds" --epochs 2 --order "$order" --plain 1
    echo "# the tier's folder: $(du -sb "$work/cache" | cut -f1) bytes"
  done
done
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
