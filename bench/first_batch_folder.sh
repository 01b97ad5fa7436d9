#!/usr/bin/env bash
# Create + first batch on a PNG folder of N small files (default 1,000,000):
# create reads every file's PNG header in parallel (the loader's threads) to
# size the batch slots from the largest image. The folder is made cheaply:
# a few hundred small PNGs of varied sizes (gpufeed synth), hard-linked N
# times into 1000-file class folders.
#   bash bench/first_batch_folder.sh            (B: build dir, default build;
#   N=1000000 THREADS=16 W=/tmp/fbf             W: work dir, kept for reruns)
# Prints gpufeed bench's JSON line (create_ms, first_batch_ms), warm page
# cache, three runs; with COLD=1 (root) a cold-cache run first (it drops the
# machine's page cache). For a baseline without the header scan, run the
# same bench with --max-sample 12288 on a build from before it.
set -eu
B=${B:-build}; N=${N:-1000000}; THREADS=${THREADS:-$(nproc)}
W=${W:-/tmp/gpufeed_first_batch_folder}
G=$B/gpufeed
[ -x "$G" ] || { echo "no $G: build first (B=build dir)" >&2; exit 1; }
mkdir -p "$W"
SEEDS=$W/seeds; DIR=$W/folder$N
if [ ! -f "$SEEDS/.done" ]; then
  rm -rf "$SEEDS"; mkdir -p "$SEEDS/all"
  k=0
  for s in 16x16 24x32 32x32 40x24 48x48 20x60 64x64 33x17; do
    "$G" synth "$SEEDS/$s" --count 40 --size "$s" --classes 1 --seed $((k + 1)) --quiet
    for f in "$SEEDS/$s"/*/*.png; do
      ln "$f" "$SEEDS/all/$(printf '%04d' $k).png"; k=$((k + 1))
    done
  done
  touch "$SEEDS/.done"
fi
if [ ! -f "$DIR/.done" ]; then
  rm -rf "$DIR"; mkdir -p "$DIR/class_0000"
  # One class folder of 1000 links, cycling over the seeds, then copies of
  # it as links (cp -al) up to N files.
  per=1000; [ "$N" -lt $per ] && per=$N
  seeds=("$SEEDS"/all/*.png); ns=${#seeds[@]}
  for ((i = 0; i < per; i++)); do
    ln "${seeds[i % ns]}" "$DIR/class_0000/$(printf '%06d' $i).png"
  done
  classes=$(( (N + per - 1) / per ))
  for ((c = 1; c < classes; c++)); do
    cp -al "$DIR/class_0000" "$DIR/$(printf 'class_%04d' $c)"
  done
  touch "$DIR/.done"
fi
files=$(find "$DIR" -name '*.png' | wc -l)
echo "folder: $DIR, $files files, $THREADS threads" >&2
"$G" bench "$DIR" --device cpu --threads "$THREADS" --batch 256 --batches 1 \
  --epochs 1 --plan 2>/dev/null | grep '^sizing' >&2 || true
if [ "${COLD:-0}" = 1 ] && [ -w /proc/sys/vm/drop_caches ]; then
  sync; echo 3 > /proc/sys/vm/drop_caches
  echo "cold page cache:" >&2
  "$G" bench "$DIR" --device cpu --threads "$THREADS" --batch 256 --batches 1 --epochs 1 --json --quiet
fi
echo "warm page cache (3 runs):" >&2
for i in 1 2 3; do
  "$G" bench "$DIR" --device cpu --threads "$THREADS" --batch 256 --batches 1 --epochs 1 --json --quiet
done
