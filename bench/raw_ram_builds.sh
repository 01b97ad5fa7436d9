#!/usr/bin/env bash
# Cached raw samples in RAM to the GPU, against the pinned host-to-device
# probe of the same process, for several builds on one machine, their runs
# alternated (the head-to-head's raw_ram_4cores line: 20,000 raw 256x256
# crops of the photos in PHOTOS, 4 threads, a 16 GiB cache filled by the
# first of 12 epochs, batch 256, u8 output). Extra bench arguments after
# `--` go to every run (e.g. --prefetch 2).
#
#   bash bench/raw_ram_builds.sh PHOTOS WORK ROUNDS NAME=BIN... [-- ARGS...]
#
# BIN is a folder holding the gpufeed CLI. One JSON line a run goes to
# WORK/raw_ram.jsonl; the table at the end gives each build's GB/s, the
# probe's, their ratio and the cores busy.
set -euo pipefail
photos=$1 work=$2 rounds=$3
shift 3
builds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do builds+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
extra=("$@")
first=${builds[0]#*=}
mkdir -p "$work"
out=$work/raw_ram.jsonl
: >"$out"
if [ ! -f "$work/cache-raw/index.gfi" ]; then
  "$first/gpufeed" synth "$work/png" --from "$photos" --count 20000 --size 256x256 --force --quiet
  "$first/gpufeed" build "$work/png" "$work/cache-raw" --codec raw --force --quiet
fi
cat "$work"/cache-raw/*.gfs >/dev/null
echo "## $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" >&2
for r in $(seq 1 "$rounds"); do
  for b in "${builds[@]}"; do
    name=${b%%=*} bin=${b#*=}
    line=$("$bin/gpufeed" bench "$work/cache-raw" --device 0 --threads 4 --cache 16G \
           --epochs 12 --batch 256 --h2d-probe --json --quiet "${extra[@]}" | tail -n 1)
    echo "{\"name\":\"$name\",\"round\":$r,\"result\":$line}" >>"$out"
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); r=d['result']; \
print(f\"{d['name']:>8} round {d['round']}: {r['gb_per_s']:.2f} of {r['h2d_probe_gb_per_s']:.2f} GB/s = \
{r['gb_per_s']/r['h2d_probe_gb_per_s']:.3f}x, {r['cpu_cores_used']:.2f} cores\")" "$(tail -n 1 "$out")"
  done
done
