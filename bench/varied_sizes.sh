#!/usr/bin/env bash
# Varied-size images to fixed-size batches, in one run, on a machine with an
# NVIDIA GPU and PyTorch (torchvision with transforms.v2):
#   1. a folder of COUNT photo crops whose sides are each uniform in
#      200-500 px (`gpufeed synth --sizes 200-500 --from PHOTOS`), and its
#      png and gradzstd datasets;
#   2. the plain libpng decode ceiling on the folder (start and end);
#   3. `gpufeed bench --rrc 224 --dtype f16 --layout nchw` with ImageNet's
#      mean/std (the training transform) on the folder and both datasets,
#      and `--eval-crop 224` (the evaluation transform) on the folder;
#   4. the PyTorch DataLoader doing the same (bench/pytorch_rrc.py: decode_png
#      + v2.RandomResizedCrop(224, antialias=True) + flip, THREADS workers,
#      pin_memory, half + normalise on the GPU) on the folder;
#   5. the first batch on a 1M-sample varied-size index (bench/make_index
#      --varied 200-500) with --rrc 224;
# then a table and a [met]/[MISSED] line for each target.
#
#   bash bench/varied_sizes.sh BIN PHOTOS WORK [THREADS] [COUNT]
#
# BIN is a build folder holding gpufeed, bench/png_ceiling and
# bench/make_index; PHOTOS a folder of PNG photos of at least 500x500 ('-':
# synthetic images instead, for a smoke run); THREADS defaults to the online
# cores, COUNT to 20000. Environment: DEVICE (gpufeed's --device, default 0;
# 'auto' falls back to host mode without a GPU), EPOCHS (default 3),
# INDEX_COUNT (default 1000000), PYTHON (default python3), SECONDS_CEIL
# (default 5), SIZES (the side range, default 200-500: the targets' own). Raw JSON lines go to WORK/results.jsonl. About 4 minutes on
# 16 cores with the defaults.
set -euo pipefail
bin=$1 photos=$2 work=$3
threads=${4:-$(nproc)} count=${5:-20000}
device=${DEVICE:-0} epochs=${EPOCHS:-3} index_count=${INDEX_COUNT:-1000000}
sizes=${SIZES:-200-500}
py=${PYTHON:-python3} ceil_s=${SECONDS_CEIL:-5}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gf=$bin/gpufeed
mkdir -p "$work"
out=$work/results.jsonl
: >"$out"
log() { echo "## $*" >&2; }
record() { # NAME then a command printing one JSON line last
  local name=$1; shift
  log "$name: $*"
  local line
  line=$("$@" | tail -n 1)
  echo "{\"name\":\"$name\",\"result\":$line}" >>"$out"
}

gpu=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader | head -1 || echo "no GPU")
log "machine: $(nproc) cores, $gpu; threads $threads, count $count, device $device"
from=()
[ "$photos" != "-" ] && from=(--from "$photos")
stamp="$count $sizes ${photos}"
if [ "$(cat "$work/png/.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$work/png" "$work"/cache-*
  "$gf" synth "$work/png" "${from[@]}" --count "$count" --sizes "$sizes" --seed 12 --quiet
  echo "$stamp" >"$work/png/.done"
fi
for c in png gradzstd; do
  [ -f "$work/cache-$c/index.gfi" ] || "$gf" build "$work/png" "$work/cache-$c" --codec "$c" --force --quiet
done
[ "$(cat "$work/index1m/.count" 2>/dev/null)" = "$index_count $sizes" ] || {
  rm -rf "$work/index1m"
  "$bin/bench/make_index" "$work/index1m" --count "$index_count" --varied "$sizes" >/dev/null
  echo "$index_count $sizes" >"$work/index1m/.count"
}
"$gf" inspect "$work/cache-png" | sed -n '/^sizes/,/^labels/p' | sed '$d' >&2
cat "$work"/png/*/*.png "$work"/cache-*/*.gfs >/dev/null   # page cache warm

B=256
norm=(--dtype f16 --layout nchw --mean 123.675,116.28,103.53 --std 58.395,57.12,57.375)
run=(--device "$device" --threads "$threads" --epochs "$epochs" --batch $B --json --quiet)
record ceiling "$bin/bench/png_ceiling" "$work/png" --threads "$threads" --seconds "$ceil_s" --json
record rrc_folder "$gf" bench "$work/png" --rrc 224 "${norm[@]}" "${run[@]}"
record rrc_cache_png "$gf" bench "$work/cache-png" --rrc 224 "${norm[@]}" "${run[@]}"
record rrc_cache_gradzstd "$gf" bench "$work/cache-gradzstd" --rrc 224 "${norm[@]}" "${run[@]}"
record eval_folder "$gf" bench "$work/png" --eval-crop 224 "${norm[@]}" "${run[@]}"
record pytorch env PYTHONUNBUFFERED=1 "$py" "$here/pytorch_rrc.py" "$work/png" --workers "$threads" --batch $B --epochs "$epochs"
record first_batch_1m "$gf" bench "$work/index1m" --rrc 224 "${norm[@]}" --device "$device" --threads "$threads" --batches 5 --batch $B --json --quiet
record ceiling_end "$bin/bench/png_ceiling" "$work/png" --threads "$threads" --seconds "$ceil_s" --json

"$py" - "$out" "$threads" "$index_count" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows[d["name"]] = d["result"]
ceil = max(rows["ceiling"]["images_per_s"], rows["ceiling_end"]["images_per_s"])
torch = rows["pytorch"]["best_img_per_s"]
print(f"\nthreads: {sys.argv[2]}; libpng ceiling {rows['ceiling']['images_per_s']:.0f} (start) / "
      f"{rows['ceiling_end']['images_per_s']:.0f} (end) images/s; PyTorch DataLoader "
      f"(RandomResizedCrop 224 + flip, transforms {rows['pytorch'].get('transforms', '?')}) {torch} images/s")
print(f"{'source':22} {'transform':54} {'images/s':>9} {'x ceiling':>9} {'x pytorch':>9}  mode / bottleneck")
for name in ["rrc_folder", "rrc_cache_png", "rrc_cache_gradzstd", "eval_folder"]:
    r = rows[name]
    print(f"{name:22} {r.get('transform', '?')[:54]:54} {r['images_per_s']:9.0f} "
          f"{r['images_per_s']/ceil:9.2f} {r['images_per_s']/torch:9.2f}  {r['mode']} / {r['bottleneck']}")
fb = rows["first_batch_1m"]
print(f"first batch on a {int(sys.argv[3]):,}-sample varied-size index: "
      f"{fb['first_batch_ms']:.1f} ms (create {fb['create_ms']:.1f} ms), mode {fb['mode']}")
print("\ntargets:")
def t(ok, what): print(f"  [{'met' if ok else 'MISSED'}] {what}")
f = rows["rrc_folder"]["images_per_s"]
t(f >= 0.95 * ceil, f"varied-size PNG folder, RandomResizedCrop 224 + flip f16 NCHW normalised, "
  f">= 0.95x libpng ceiling: {f/ceil:.2f}x")
t(f >= 1.3 * torch, f"the same >= 1.3x PyTorch DataLoader: {f/torch:.2f}x")
g = rows["rrc_cache_gradzstd"]["images_per_s"]
t(g >= 5 * torch, f"gradzstd dataset, same transform, >= 5x PyTorch DataLoader: {g/torch:.1f}x")
t(fb["first_batch_ms"] < 100, f"first batch on a {int(sys.argv[3]):,}-sample varied-size index < 100 ms: {fb['first_batch_ms']:.1f} ms")
PY
