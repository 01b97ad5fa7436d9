#!/usr/bin/env bash
# The head-to-head, in one run, on a machine with an NVIDIA GPU and PyTorch:
#   1. a benchmark dataset: COUNT random SIZE crops of the photos in PHOTOS
#      (a PNG ImageFolder) and its cache in each codec (loco: decoded on
#      the GPU);
#   2. the project's own probes: the plain libpng decode ceiling and pinned
#      host-to-device bandwidth;
#   3. `gpufeed bench` on each source, on the GPU;
#   4. the PyTorch DataLoader peer (PEER, a copy of
#      peers/pytorch_dataloader.py) on the PNG folder with the same number of
#      CPU threads;
# then a table of absolute figures and ratios against the targets.
#
#   bash bench/head_to_head.sh BIN PHOTOS PEER WORK [THREADS] [COUNT] [SIZE]
#
# BIN is a build folder holding gpufeed and bench/png_ceiling, bench/
# make_index; THREADS defaults to the online cores, COUNT to 20000, SIZE to
# 256x256. Raw JSON lines go to WORK/results.jsonl.
set -euo pipefail
bin=$1 photos=$2 peer=$3 work=$4
threads=${5:-$(nproc)} count=${6:-20000} size=${7:-256x256}
gf=$bin/gpufeed
mkdir -p "$work"
out=$work/results.jsonl
: >"$out"
log() { echo "## $*" >&2; }
record() { # NAME then a command printing one JSON line
  local name=$1; shift
  log "$name: $*"
  local line
  line=$("$@" | tail -n 1)
  echo "{\"name\":\"$name\",\"result\":$line}" >>"$out"
}

log "machine: $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), threads $threads"
if [ ! -f "$work/png/.done" ]; then
  "$gf" synth "$work/png" --from "$photos" --count "$count" --size "$size" --force --quiet
  touch "$work/png/.done"
fi
for c in png raw zstd gradzstd loco; do
  [ -f "$work/cache-$c/index.gfi" ] || "$gf" build "$work/png" "$work/cache-$c" --codec "$c" --force --quiet
done
[ -f "$work/index1m/index.gfi" ] || "$bin/bench/make_index" "$work/index1m" >/dev/null
cat "$work"/png/*/*.png "$work"/cache-*/*.gfs >/dev/null   # page cache warm
# Bytes on disk of the PNG folder and of each cache (the size bound).
bytes_of() { du -sb "$1" | cut -f1; }
echo "{\"name\":\"sizes\",\"result\":{\"png\":$(bytes_of "$work/png"),\"gradzstd\":$(bytes_of "$work/cache-gradzstd"),\"loco\":$(bytes_of "$work/cache-loco")}}" >>"$out"

B=256
record ceiling "$bin/bench/png_ceiling" "$work/png" --threads "$threads" --seconds 5 --json
record png_folder "$gf" bench "$work/png" --device 0 --threads "$threads" --epochs 3 --batch $B --dtype f32 --layout nchw --json --quiet
record pytorch env PYTHONUNBUFFERED=1 python3 "$peer" "$work/png" --workers "$threads" --batch $B --epochs 3 --decoder torchvision
for c in png zstd gradzstd loco; do
  record "cache_$c" "$gf" bench "$work/cache-$c" --device 0 --threads "$threads" --epochs 3 --batch $B --dtype f32 --layout nchw --json --quiet
done
# 12 epochs: the first fills the cache, the 11 after it are the rate.
record raw_ram_4cores "$gf" bench "$work/cache-raw" --device 0 --threads 4 --cache 16G --epochs 12 --batch $B --h2d-probe --json --quiet
# The stall with a training step as long as a batch's load (from the
# gradzstd rate just measured), and a control with a step shorter than the
# load (0.8x), where the loop must wait: the stall measure has to show it.
steptime() { python3 -c "import json;d=[json.loads(l) for l in open('$out')];r=[x for x in d if x['name']=='cache_gradzstd'][0]['result'];print(round($1*$B/r['images_per_s']*1000,3))"; }
record stall_gradzstd "$gf" bench "$work/cache-gradzstd" --device 0 --threads "$threads" --epochs 6 --batch $B --step-ms "$(steptime 1.05)" --dtype f32 --layout nchw --json --quiet
record stall_control "$gf" bench "$work/cache-gradzstd" --device 0 --threads "$threads" --epochs 6 --batch $B --step-ms "$(steptime 0.8)" --dtype f32 --layout nchw --json --quiet
record first_batch_1m "$gf" bench "$work/index1m" --device 0 --threads "$threads" --batches 5 --batch $B --json --quiet
record ceiling_end "$bin/bench/png_ceiling" "$work/png" --threads "$threads" --seconds 5 --json

python3 - "$out" "$threads" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows[d["name"]] = d["result"]
ceil = max(rows["ceiling"]["images_per_s"], rows["ceiling_end"]["images_per_s"])
torch = rows["pytorch"]["best_img_per_s"]
print(f"\nthreads: {sys.argv[2]}; libpng ceiling {rows['ceiling']['images_per_s']:.0f} (start) / "
      f"{rows['ceiling_end']['images_per_s']:.0f} (end) images/s; PyTorch DataLoader {torch} images/s")
print(f"{'source':28} {'images/s':>10} {'GB/s':>7} {'x ceiling':>9} {'x pytorch':>9}  bottleneck")
for name in ["png_folder", "cache_png", "cache_zstd", "cache_gradzstd", "cache_loco", "raw_ram_4cores"]:
    r = rows[name]
    print(f"{name:28} {r['images_per_s']:10.0f} {r['gb_per_s']:7.2f} {r['images_per_s']/ceil:9.2f} "
          f"{r['images_per_s']/torch:9.2f}  {r['bottleneck']}")
raw = rows["raw_ram_4cores"]; st = rows["stall_gradzstd"]; fb = rows["first_batch_1m"]
ctl = rows["stall_control"]
print("\ntargets:")
def t(ok, what): print(f"  [{'met' if ok else 'MISSED'}] {what}")
png = rows["png_folder"]["images_per_s"]
t(png >= 0.95 * ceil, f"PNG folder to GPU >= 0.95x libpng ceiling: {png/ceil:.2f}x")
t(png >= 1.15 * torch, f"PNG folder to GPU >= 1.15x PyTorch DataLoader: {png/torch:.2f}x")
ratio = raw["gb_per_s"] / raw["h2d_probe_gb_per_s"] if raw["h2d_probe_gb_per_s"] else 0
t(ratio >= 0.90 and raw["cpu_cores_used"] <= 4.5,
  f"cached raw in RAM to GPU >= 0.90x pinned H2D ({raw['h2d_probe_gb_per_s']:.1f} GB/s): "
  f"{raw['gb_per_s']:.1f} GB/s = {ratio:.2f}x, {raw['cpu_cores_used']:.1f} cores busy")
g = rows["cache_gradzstd"]["images_per_s"]
t(g >= 15 * torch, f"gradzstd cache to GPU >= 15x PyTorch: {g/torch:.1f}x")
lo = rows["cache_loco"]["images_per_s"]
t(lo >= 15 * torch, f"the compressed cache decoded on the GPU (loco) >= 15x PyTorch: {lo/torch:.1f}x")
sz = rows["sizes"]
t(sz["png"] / sz["loco"] >= 0.95, f"loco's compression >= 0.95x PNG's: PNG folder / loco cache = {sz['png']/sz['loco']:.3f} "
  f"(gradzstd: {sz['png']/sz['gradzstd']:.3f})")
t(st["consumer_stall_pct"] < 1.0, f"stall < 1% with a {st['step_ms']:.2f} ms step: {st['consumer_stall_pct']:.2f}%")
t(ctl["consumer_stall_pct"] > 10.0, f"control: stall > 10% with a step 0.8x a batch's load ({ctl['step_ms']:.2f} ms): {ctl['consumer_stall_pct']:.2f}%")
t(st["next_release_us_p50"] < 10, f"next+release < 10 us a batch: {st['next_release_us_p50']:.1f} us median")
t(fb["first_batch_ms"] < 100, f"first batch within 100 ms on a 1M-sample index: {fb['first_batch_ms']:.1f} ms")
PY
