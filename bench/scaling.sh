#!/usr/bin/env bash
# The scaling curve (issue: cold reads and scaling): images/s of the
# training transform against the loader's thread count, for the PNG
# folder, its gradzstd and loco datasets (loco: decoded on the GPU, so its
# curve says how few cores the CPU's part needs) and a JPEG folder when
# there is one, with
# the speed-up over 1 thread and the efficiency per thread, so a user can
# read how many cores a given GPU needs.
#
#   bash bench/scaling.sh BIN WORK
#
# BIN: a folder holding `gpufeed` (a build folder, or the static binary);
# nothing else is needed. WORK: a scratch folder (the PNG folder and the
# dataset are made there once and reused).
#
# Each point is `gpufeed bench SRC --threads T --rrc 224 --dtype f16
# --layout nchw` with ImageNet's mean and std (in pixel units, as bench
# takes them), on the GPU when there is one (host mode otherwise: the
# transform then runs on the workers too), for EPOCHS epochs; bench's rate
# is the epochs after the first (the first warms the page cache), so the
# curve is the CPU's, not the disk's. Efficiency = rate(T) / (T x rate(1)).
#
# Environment:
#   COUNT=20000        images in the PNG folder
#   SIZE=256x256       their size
#   PHOTOS=DIR         crop them from the PNG photos in DIR (default: the
#                      synthetic images of `gpufeed synth`)
#   JPEG=DIR           a JPEG folder (ImageFolder layout) to measure too;
#                      without it, one is made with `gpufeed synth --format
#                      jpeg` when this gpufeed has that option
#   THREADS_LIST="1 2 4 8 12 16"
#   EPOCHS=2           epochs a point (the rate counts the last EPOCHS - 1)
#   DEVICE=auto        bench --device (auto: GPU 0 when there is one)
#   BATCH=256
#   TARGET=N           also name the fewest threads reaching N images/s
#                      (a GPU's training rate)
# Prints a table a source and one JSON line a source (`scaling {...}`).
set -u
if [ $# -lt 2 ]; then
  sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d' >&2
  exit 2
fi
bin=$1 work=$2
gf=$bin/gpufeed
[ -x "$gf" ] || { echo "scaling: $gf not found or not executable" >&2; exit 2; }
count=${COUNT:-20000} size=${SIZE:-256x256}
threads_list=${THREADS_LIST:-1 2 4 8 12 16}
epochs=${EPOCHS:-2} device=${DEVICE:-auto} batch=${BATCH:-256}
target=${TARGET:-}
[ "$epochs" -ge 2 ] 2>/dev/null || { echo "scaling: EPOCHS must be 2 or more" >&2; exit 2; }
mkdir -p "$work" || exit 1

# The number after "KEY": in a JSON line (the first one; "" when absent).
jnum() { printf '%s' "$1" | grep -o "\"$2\": *[-0-9.eE+]*" | head -1 | sed 's/.*: *//'; }
# The string after "KEY": (no escapes inside: names and words only).
jstr() { printf '%s' "$1" | grep -o "\"$2\":\"[^\"]*\"" | head -1 | sed 's/^[^:]*:"//;s/"$//'; }

# The PNG folder and the gradzstd dataset, made once for these parameters.
params="$count $size ${PHOTOS:-synthetic}"
if [ "$(cat "$work/.scaling_params" 2>/dev/null)" != "$params" ]; then
  synth=("$gf" synth "$work/png" --count "$count" --size "$size" --force --quiet)
  [ -n "${PHOTOS:-}" ] && synth+=(--from "$PHOTOS")
  echo "# making $count images of $size in $work/png"
  "${synth[@]}" || exit 1
  rm -rf "$work/gradzstd" "$work/loco" "$work/jpeg"
  echo "$params" >"$work/.scaling_params"
fi
if [ ! -f "$work/gradzstd/index.gfi" ]; then
  echo "# building $work/gradzstd"
  "$gf" build "$work/png" "$work/gradzstd" --codec gradzstd --force --quiet || exit 1
fi
if [ ! -f "$work/loco/index.gfi" ]; then
  echo "# building $work/loco"
  "$gf" build "$work/png" "$work/loco" --codec loco --force --quiet || exit 1
fi
sources=("png=$work/png" "gradzstd=$work/gradzstd" "loco=$work/loco")
if [ -n "${JPEG:-}" ]; then
  sources+=("jpeg=$JPEG")
elif "$gf" synth --help 2>&1 | grep -q -- '--format'; then
  if [ ! -f "$work/jpeg/.done" ]; then
    synth=("$gf" synth "$work/jpeg" --format jpeg --count "$count" --size "$size" --force --quiet)
    [ -n "${PHOTOS:-}" ] && synth+=(--from "$PHOTOS")
    echo "# making $count JPEG images of $size in $work/jpeg"
    "${synth[@]}" && touch "$work/jpeg/.done"
  fi
  [ -f "$work/jpeg/.done" ] && sources+=("jpeg=$work/jpeg")
else
  echo "# no JPEG folder: set JPEG=DIR (this gpufeed's synth has no --format jpeg)"
fi

xform=(--rrc 224 --dtype f16 --layout nchw --mean 123.675,116.28,103.53
  --std 58.395,57.12,57.375)
echo "# scaling: $(nproc) cores, $(uname -r); $count images of $size" \
  "($([ -n "${PHOTOS:-}" ] && echo "crops of $PHOTOS" || echo synthetic)); device $device, batch $batch," \
  "$epochs epochs a point (rate: epochs 2-$epochs)"
echo "# each point: gpufeed bench SRC --threads T ${xform[*]} --device $device" \
  "--batch $batch --epochs $epochs --json --quiet"

status=0
for s in "${sources[@]}"; do
  name=${s%%=*} src=${s#*=}
  echo
  echo "## $name: $src"
  printf '  %-7s %-10s %-8s %-10s %-9s %-6s %s\n' threads images/s speed-up efficiency cores-used mode bottleneck
  rate1="" t1="" points="" mode="" reach=""
  for t in $threads_list; do
    j=$("$gf" bench "$src" --threads "$t" "${xform[@]}" --device "$device" --batch "$batch" \
      --epochs "$epochs" --json --quiet)
    if [ $? != 0 ]; then
      echo "  $t: gpufeed bench failed"
      status=1
      continue
    fi
    ips=$(jnum "$j" images_per_s) mode=$(jstr "$j" mode)
    # The speed-up is over the 1-thread point; without one (THREADS_LIST
    # not starting at 1), over the first point, per thread.
    if [ -z "$rate1" ]; then rate1=$ips t1=$t; fi
    read -r sp eff < <(awk -v r="$ips" -v r1="$rate1" -v t="$t" -v t1="$t1" \
      'BEGIN { s = r1 > 0 ? r / r1 : 0; printf "%.2f %.2f\n", s, (t > 0 ? s * t1 / t : 0) }')
    bn=$(jstr "$j" bottleneck)
    printf '  %-7s %-10s %-8s %-10s %-9s %-6s %s\n' "$t" "$ips" "${sp}x" "$eff" \
      "$(jnum "$j" cpu_cores_used)" "$mode" "${bn%%:*}"
    points+="${points:+,}{\"threads\":$t,\"images_per_s\":$ips,\"speedup\":$sp,\"efficiency\":$eff,\"cpu_cores_used\":$(jnum "$j" cpu_cores_used)}"
    if [ -n "$target" ] && [ -z "$reach" ] &&
      awk -v r="$ips" -v g="$target" 'BEGIN { exit !(r >= g) }'; then
      reach=$t
    fi
  done
  [ "${t1:-1}" = 1 ] || echo "  (no 1-thread point: speed-up and efficiency are over the $t1-thread point)"
  if [ -n "$target" ]; then
    echo "  $target images/s: ${reach:+reached with $reach threads}${reach:-not reached with THREADS_LIST}"
  fi
  printf 'scaling {"source":"%s","path":"%s","mode":"%s","batch":%s,"points":[%s]}\n' \
    "$name" "$src" "$mode" "$batch" "$points"
done
exit $status
