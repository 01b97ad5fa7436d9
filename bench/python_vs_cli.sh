#!/usr/bin/env bash
# gpufeed from Python against the `gpufeed bench` CLI, in one run, on a
# machine with PyTorch (a GPU when there is one: DEVICE=auto):
#   1. a folder of COUNT images whose sides are each uniform in SIZES
#      (`gpufeed synth --sizes`, photo crops with PHOTOS), and its gradzstd
#      and raw datasets;
#   2. bench/python_bench.py: for the PNG folder, the gradzstd dataset and
#      the raw dataset read through a host cache that holds it (epochs after
#      the first from the cache), `gpufeed bench --rrc 224 --dtype f16
#      --layout nchw` with ImageNet's mean/std against gpufeed.Loader with the
#      same threads, batch, epochs and transform; the ratio, and Python's own
#      cost per ready batch (next + DLPack + torch.from_dlpack + release,
#      p50/p99); then a [met]/[MISSED] line for each target.
#
#   bash bench/python_vs_cli.sh BIN WORK [THREADS] [COUNT]
#
# BIN is a build folder holding gpufeed and the Python extension (BIN/python,
# put on PYTHONPATH; an installed package works too); WORK a scratch folder
# (datasets are kept between runs). THREADS defaults to the online cores,
# COUNT to 10000. Environment: PHOTOS (a folder of PNG photos of at least the
# largest side; default: synthetic images), DEVICE (auto, cpu or N; default
# auto), EPOCHS (default 3), SIZES (default 200-500), PYTHON (default
# python3), REPEAT (runs of each side, best kept; default 1), COST_BATCHES
# (ready batches timed for Python's cost, default 300). The JSON line
# goes to WORK/python_vs_cli.jsonl.
set -euo pipefail
bin=$(cd "$1" && pwd) work=$2
threads=${3:-$(nproc)} count=${4:-10000}
device=${DEVICE:-auto} epochs=${EPOCHS:-3} sizes=${SIZES:-200-500}
py=${PYTHON:-python3} repeat=${REPEAT:-1} photos=${PHOTOS:--} cost=${COST_BATCHES:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gf=$bin/gpufeed
mkdir -p "$work"
log() { echo "## $*" >&2; }

gpu=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo "no GPU")
log "machine: $(nproc) cores, $gpu; threads $threads, count $count, device $device"
from=()
[ "$photos" != "-" ] && from=(--from "$photos")
stamp="$count $sizes $photos"
if [ "$(cat "$work/png/.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$work/png" "$work"/cache-*
  "$gf" synth "$work/png" "${from[@]}" --count "$count" --sizes "$sizes" --seed 12 --quiet
  echo "$stamp" >"$work/png/.done"
fi
for c in gradzstd raw; do
  [ -f "$work/cache-$c/index.gfi" ] || "$gf" build "$work/png" "$work/cache-$c" --codec "$c" --force --quiet
done
cat "$work"/png/*/*.png "$work"/cache-*/*.gfs >/dev/null   # page cache warm

export PYTHONPATH="$bin/python${PYTHONPATH:+:$PYTHONPATH}"
"$py" "$here/python_bench.py" --bin "$bin" --png "$work/png" \
  --gradzstd "$work/cache-gradzstd" --raw "$work/cache-raw" \
  --threads "$threads" --epochs "$epochs" --device "$device" --repeat "$repeat" --cost-batches "$cost" --json |
  tee "$work/python_vs_cli.out"
tail -n 1 "$work/python_vs_cli.out" >"$work/python_vs_cli.jsonl"
