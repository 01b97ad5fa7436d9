#!/usr/bin/env bash
# A JPEG folder to fixed-size training batches, side by side, in one run, on
# a machine with an NVIDIA GPU and PyTorch (torchvision with
# transforms.v2 and decode_jpeg):
#   1. a folder of COUNT JPEG crops of the photos, sides each uniform in
#      200-500 px, quality 90 (`gpufeed synth --format jpeg --quality 90
#      --sizes 200-500 --from PHOTOS`), made once and reused;
#   2. `gpufeed bench DIR --rrc 224 --dtype f16 --layout nchw` with
#      ImageNet's mean/std and THREADS threads, the JPEG windows decoded
#      with DCT scaling on (the default) and off;
#   3. the peer script PEER (a copy of the PyTorch peer pytorch_jpeg.py:
#      `PEER DIR --mode M --workers THREADS`) in its four modes: dataloader
#      (the DataLoader: decode_jpeg + v2.RandomResizedCrop(224) + flip on
#      the CPU workers, normalised on the GPU), nvjpeg (batched GPU decode,
#      then the same crop + flip), nvjpeg-decode-only (GPU decode alone)
#      and cpu-ceiling (decode_jpeg of files in RAM on THREADS threads, no
#      resize: the CPU's full-decode ceiling);
# then a table and a [met]/[MISSED] line for each CPU target: gpufeed
# (CPU decode, DCT scaling on) >= 2x the DataLoader, and above the CPU
# full-decode ceiling.
#
#   bash bench/jpeg_bench.sh BIN PHOTOS WORK PEER [THREADS] [COUNT]
#
# BIN is a build folder holding gpufeed; PHOTOS a folder of PNG or JPEG
# photos of at least 500x500 ('-': synthetic images instead, for a smoke
# run); PEER the peer script; THREADS defaults to 16, COUNT to 20000.
# Environment: DEVICE (gpufeed's --device, default 0; 'auto' falls back to
# host mode without a GPU), EPOCHS (default 3; the peer takes 2), PYTHON
# (default python3), SIZES (the side range, default 200-500), QUALITY
# (default 90), SKIP_PEER=1 (gpufeed's rows only). Raw JSON lines go to
# WORK/results.jsonl.
set -euo pipefail
bin=$1 photos=$2 work=$3 peer=$4
threads=${5:-16} count=${6:-20000}
device=${DEVICE:-0} epochs=${EPOCHS:-3} sizes=${SIZES:-200-500}
quality=${QUALITY:-90} py=${PYTHON:-python3} skip_peer=${SKIP_PEER:-0}
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
dir=$work/jpeg
stamp="$count $sizes $quality ${photos}"
if [ "$(cat "$dir/.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$dir"
  "$gf" synth "$dir" --format jpeg --quality "$quality" "${from[@]}" \
    --count "$count" --sizes "$sizes" --seed 12 --quiet
  echo "$stamp" >"$dir/.done"
fi
du -sh "$dir" >&2
cat "$dir"/*/*.jpg >/dev/null   # page cache warm

B=256
norm=(--dtype f16 --layout nchw --mean "123.675,116.28,103.53" --std "58.395,57.12,57.375")
run=(--device "$device" --threads "$threads" --epochs "$epochs" --batch "$B" --json --quiet)
record scale_on "$gf" bench "$dir" --rrc 224 "${norm[@]}" "${run[@]}" --jpeg-scale on
record scale_off "$gf" bench "$dir" --rrc 224 "${norm[@]}" "${run[@]}" --jpeg-scale off
if [ "$gpu" != "no GPU" ] && [ "$device" != cpu ]; then
  # nvJPEG: gpu_decode auto sends a built dataset's JPEGs (known good) to the
  # JPEG engines; a folder's only with gpu_decode all. PCT of each batch's
  # positions to the engines, the rest to the workers, PREFETCH slots.
  ds=$work/jpeg-ds
  [ -f "$ds/index.gfi" ] || "$gf" build "$dir" "$ds" --codec jpeg --force --quiet
  cat "$ds"/*.gfs >/dev/null
  gp=(--prefetch "${PREFETCH:-4}")
  record gpu_ds_engines "$gf" bench "$ds" --rrc 224 "${norm[@]}" "${run[@]}" "${gp[@]}" --gpu-decode auto
  record gpu_ds_split "$gf" bench "$ds" --rrc 224 "${norm[@]}" "${run[@]}" "${gp[@]}" --gpu-decode auto --gpu-decode-percent "${PCT:-60}"
  record gpu_folder_split "$gf" bench "$dir" --rrc 224 "${norm[@]}" "${run[@]}" "${gp[@]}" --gpu-decode all --gpu-decode-percent "${PCT:-60}"
  record cpu_ds "$gf" bench "$ds" --rrc 224 "${norm[@]}" "${run[@]}" "${gp[@]}" --gpu-decode off
fi
if [ "$skip_peer" != 1 ]; then
  for m in dataloader nvjpeg nvjpeg-decode-only cpu-ceiling; do
    record "peer_$m" env PYTHONUNBUFFERED=1 "$py" "$peer" "$dir" --mode "$m" \
      --workers "$threads" --batch "$B"
  done
fi

"$py" - "$out" "$threads" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows[d["name"]] = d["result"]
print(f"\nthreads {sys.argv[2]}; RandomResizedCrop 224 + flip, f16 NCHW, "
      "ImageNet mean/std")
print(f"{'run':28} {'images/s':>9} {'x dataloader':>12} {'x cpu ceil':>10}  notes")
peer = {m: rows.get("peer_" + m, {}).get("best_img_per_s")
        for m in ["dataloader", "nvjpeg", "nvjpeg-decode-only", "cpu-ceiling"]}
def ratio(v, base):
    return f"{v / base:.2f}" if base else "-"
for name in ["scale_on", "scale_off", "cpu_ds", "gpu_ds_engines", "gpu_ds_split",
             "gpu_folder_split"]:
    if name not in rows:
        continue
    r = rows[name]
    j = r.get("jpeg", {})
    dec = j.get("decoded", [0, 0, 0, 0])
    note = (f"{r['mode']}; DCT scaling {j.get('scale', '?')}: decodes at "
            f"1/1 {dec[0]}, 1/2 {dec[1]}, 1/4 {dec[2]}, 1/8 {dec[3]}; "
            f"{100 * j.get('pixel_fraction', 0):.1f}% of the pixels decoded; "
            f"{r['bottleneck']}")
    jd = r.get("jpeg_decode")
    if jd:
        note += f"; jpeg_decode {json.dumps(jd, separators=(',', ':'))}"
    print(f"gpufeed {name:20} {r['images_per_s']:9.0f} "
          f"{ratio(r['images_per_s'], peer['dataloader']):>12} "
          f"{ratio(r['images_per_s'], peer['cpu-ceiling']):>10}  {note}")
for m, v in peer.items():
    if v is not None:
        print(f"pytorch {m:20} {v:9.0f} {ratio(v, peer['dataloader']):>12} "
              f"{ratio(v, peer['cpu-ceiling']):>10}")
print("\ntargets (CPU decode):")
def t(ok, what): print(f"  [{'met' if ok else 'MISSED'}] {what}")
g = rows["scale_on"]["images_per_s"]
if peer["dataloader"]:
    t(g >= 2 * peer["dataloader"],
      f"gpufeed >= 2x the PyTorch DataLoader: {g / peer['dataloader']:.2f}x")
if peer["cpu-ceiling"]:
    t(g > peer["cpu-ceiling"],
      f"gpufeed above the CPU full-decode ceiling: {g / peer['cpu-ceiling']:.2f}x")
gpu_rows = [n for n in ("gpu_ds_engines", "gpu_ds_split", "gpu_folder_split") if n in rows]
if gpu_rows:
    best = max(gpu_rows, key=lambda n: rows[n]["images_per_s"])
    g = rows[best]["images_per_s"]
    print(f"targets (with nvJPEG, best row {best}):")
    if peer["dataloader"]:
        t(g >= 4 * peer["dataloader"],
          f"gpufeed >= 4x the PyTorch DataLoader: {g / peer['dataloader']:.2f}x")
    if peer["nvjpeg-decode-only"]:
        t(g > peer["nvjpeg-decode-only"],
          f"gpufeed above torchvision's nvJPEG decode alone: "
          f"{g / peer['nvjpeg-decode-only']:.2f}x")
PY
