#!/usr/bin/env bash
# Cold reads (issue: cold reads): a first epoch whose data is not in the
# page cache, read with O_DIRECT from datasets built with --align 4096,
# against the disk's sequential O_DIRECT read bandwidth measured by
# bench/disk_probe in the same run. Target: the loader's stored bytes per
# second at least 0.9x the probe's best.
#
#   bash bench/cold_read.sh BIN WORK [THREADS]
#
# BIN: a folder holding `gpufeed` and `bench/disk_probe` (a build folder, or
# the two static binaries in that layout); nothing else is needed (no cmake,
# no Python). WORK: a scratch folder on the disk to measure (not tmpfs; the
# datasets are made there once and reused). THREADS: the loader's workers
# (default: autotune).
#
# For each dataset (raw, then gradzstd; both --align 4096):
#   1. caches dropped, `disk_probe --sweep` over the dataset's shards: QD
#      1..64 x RS 128K..4M of sequential O_DIRECT reads; the best is the
#      yardstick;
#   1b. random O_DIRECT reads of one sample's stored size at RANDOM_QD
#      (what a shuffled epoch's reads can get from the disk), and the
#      loader's best against it;
#   2. for each io queue depth of QD_LIST, caches dropped, `disk_probe
#      --loader` (one epoch of the loader, O_DIRECT, host mode) and its
#      stored GB/s against the yardstick: the ratio and [met] / [MISSED]
#      for >= 0.9x; `auto` leaves the queue depth (and, without THREADS,
#      the threads) to the loader's autotune: what a user gets;
#   2b. PAIRS times: caches dropped, the sweep's best setting alone; caches
#      dropped, the loader at its defaults; the two medians and their
#      ratio (the sweep's best is the highest of 20 noisy figures: the
#      paired medians hold both sides to the same drift);
#   3. caches dropped, `gpufeed bench DS --epochs 1 --io uring` (what the
#      CLI does: it has no O_DIRECT option, so it reads through the page
#      cache), stored GB/s from its JSON, against the same yardstick.
# Dropping the page cache needs root (`echo 3 > /proc/sys/vm/drop_caches`).
# Without it the run goes on warm and says so: the O_DIRECT figures (1, 2)
# bypass the page cache and still hold; the buffered one (3) is warm.
#
# Environment:
#   COUNT=40000        images in the PNG folder the datasets are built from
#   SIZE=256x256       their size
#   PHOTOS=DIR         crop them from the PNG photos in DIR (default: the
#                      synthetic images of `gpufeed synth`)
#   CODECS="raw gradzstd"
#   RANDOM_QD="16 64"  queue depths of the random-read probe (step 1b:
#                      random places, a sample's stored size a read: what a
#                      shuffled epoch's reads can get from this disk)
#   QD_LIST="auto 16 64"  the loader's io queue depths (reads in flight a
#                      worker; `auto`: autotune's, 16, or 64 with 2 threads
#                      for a raw dataset read with O_DIRECT; the cap 64)
#   BATCH=256          the loader's batch (a worker's reads in flight are
#                      also capped at batch / (2 x threads))
#   ORDER=shuffle      the loader's order (shuffle, sequential, block)
#   PROBE_SECONDS=3    at most this long a probe setting
#   PROBE_BYTES=       at most this many bytes a probe setting (default the
#                      dataset's size, at most 2G: no block read twice)
#   PAIRS=3            step 2b: the sweep's best setting and the loader at
#                      its defaults, alternated this many times (0: none);
#                      the medians' ratio
# Prints one JSON line a dataset (`cold_read {...}`) after its table.
# Exit status: 0 measured (whether or not the target was met), 1 a run
# failed, 2 usage, 77 O_DIRECT is not possible under WORK (no yardstick).
set -u
if [ $# -lt 2 ]; then
  sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d' >&2
  exit 2
fi
bin=$1 work=$2 threads=${3:-}
gf=$bin/gpufeed
probe=$bin/bench/disk_probe
for x in "$gf" "$probe"; do
  [ -x "$x" ] || { echo "cold_read: $x not found or not executable" >&2; exit 2; }
done
count=${COUNT:-40000} size=${SIZE:-256x256}
codecs=${CODECS:-raw gradzstd} qd_list=${QD_LIST:-auto 16 64}
batch=${BATCH:-256} order=${ORDER:-shuffle}
probe_args=(--sweep --json --seconds "${PROBE_SECONDS:-3}")
[ -n "${PROBE_BYTES:-}" ] && probe_args+=(--bytes "$PROBE_BYTES")
thr=()
[ -n "$threads" ] && thr=(--threads "$threads")
mkdir -p "$work" || exit 1

# The number after "KEY": in a JSON line (the first one; "" when absent).
jnum() { printf '%s' "$1" | grep -o "\"$2\": *[-0-9.eE+]*" | head -1 | sed 's/.*: *//'; }
# The string after "KEY": (no escapes inside: names and words only).
jstr() { printf '%s' "$1" | grep -o "\"$2\":\"[^\"]*\"" | head -1 | sed 's/^[^:]*:"//;s/"$//'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print 0 }'; }
kib() { awk -v b="$1" 'BEGIN { print (b % 1048576 ? b / 1024 "K" : b / 1048576 "M") }'; }
verdict() { awk -v r="$1" 'BEGIN { print (r >= 0.9 ? "[met]" : "[MISSED]") }'; }

# Dropping the page cache: root, and a /proc/sys that takes the write.
cold=0
if [ "$(id -u)" = 0 ] && sync && (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then
  cold=1
fi
drop() { sync; [ $cold = 1 ] && echo 3 >/proc/sys/vm/drop_caches; }

echo "# cold_read: $(nproc) cores, $(uname -r); $count images of $size" \
  "($([ -n "${PHOTOS:-}" ] && echo "crops of $PHOTOS" || echo synthetic)); threads ${threads:-autotune};" \
  "batch $batch, $order order; WORK $work"
if [ $cold = 1 ]; then
  echo "# page cache dropped before every measurement (root)"
else
  echo "# NOTE: not root (or /proc/sys/vm/drop_caches refused the write): the page"
  echo "# cache is NOT dropped, so this run is warm-only. The O_DIRECT figures (probe,"
  echo "# loader) bypass the page cache and still hold; the buffered gpufeed bench"
  echo "# figure is warm, not a cold first epoch. Run as root for the cold run."
fi

# The PNG folder and the datasets, made once for these parameters.
params="$count $size ${PHOTOS:-synthetic}"
if [ "$(cat "$work/.cold_params" 2>/dev/null)" != "$params" ]; then
  rm -f "$work/png/.done"
  synth=("$gf" synth "$work/png" --count "$count" --size "$size" --force --quiet)
  [ -n "${PHOTOS:-}" ] && synth+=(--from "$PHOTOS")
  echo "# making $count images of $size in $work/png"
  "${synth[@]}" || exit 1
  touch "$work/png/.done"
  for c in $codecs; do rm -rf "$work/cold-$c"; done
  echo "$params" >"$work/.cold_params"
fi
for c in $codecs; do
  if [ ! -f "$work/cold-$c/index.gfi" ]; then
    echo "# building $work/cold-$c (--codec $c --align 4096)"
    "$gf" build "$work/png" "$work/cold-$c" --codec "$c" --align 4096 --force --quiet || exit 1
  fi
done

status=0
for c in $codecs; do
  ds=$work/cold-$c
  info=$("$gf" inspect "$ds" --json | tr -d '\n')
  samples=$(jnum "$info" samples)
  stored=$(printf '%s' "$info" | grep -o '"stored": *[0-9]*' | head -1 | sed 's/.*: *//')
  echo
  echo "## $c: $ds, $samples samples, $(awk -v b="$stored" 'BEGIN { printf "%.3f", b / 1e9 }') GB stored" \
    "($(awk -v b="$stored" -v n="$samples" 'BEGIN { printf "%.0f", b / n }') bytes a sample)"

  # 1. The yardstick.
  drop
  pj=$("$probe" "${probe_args[@]}" "$ds")
  prc=$?
  if [ $prc = 77 ]; then
    [ $status = 0 ] && status=77
    echo "O_DIRECT is not possible under $work (disk_probe said why above): no yardstick"
    echo "and no O_DIRECT loader run; put WORK on a disk-backed filesystem."
  elif [ $prc != 0 ]; then
    echo "disk_probe failed (status $prc)"
    status=1
    continue
  fi
  best=0 best_qd=0 best_rs=0 rbest=0 rrs=0
  if [ $prc = 0 ]; then
    bestj=$(printf '%s' "$pj" | grep -o '"best":{[^}]*}')
    best=$(jnum "$bestj" gb_per_s) best_qd=$(jnum "$bestj" qd) best_rs=$(jnum "$bestj" rs)
    echo "disk probe ($(jstr "$pj" fs) $(jstr "$pj" device), sequential O_DIRECT, GB/s;" \
      "wraps $(jnum "$pj" wraps)):"
    printf '%s' "$pj" | grep -o '{"qd":[^}]*}' | sed '$d' |
      awk -v best="$best" -F'[:,]' '
        { qd = $2; rs = $4; g = $12; v[qd, rs] = g
          if (!(qd in seenq)) { seenq[qd] = 1; q[++nq] = qd }
          if (!(rs in seenr)) { seenr[rs] = 1; r[++nr] = rs }
          if (g >= 0.9 * best && (cheap == "" || qd * rs < cheap)) { cheap = qd * rs; cq = qd; cr = rs } }
        END {
          printf "  %-6s", "QD\\RS"
          for (j = 1; j <= nr; j++) printf " %8s", kib(r[j])
          printf "\n"
          for (i = 1; i <= nq; i++) {
            printf "  %-6s", q[i]
            for (j = 1; j <= nr; j++) printf " %8.3f", v[q[i], r[j]]
            printf "\n"
          }
          printf "  0.9x of the best with the fewest bytes in flight: QD %s x RS %s\n", cq, kib(cr)
        }
        function kib(b) { return b % 1048576 ? b / 1024 "K" : b / 1048576 "M" }'
    echo "  best: $best GB/s at QD $best_qd x RS $(kib "$best_rs")"
    # 1b. What a shuffled epoch's reads can get: random places, one
    # sample's stored size (rounded up to 4 KiB) a read.
    rrs=$(awk -v b="$stored" -v n="$samples" 'BEGIN { x = b / n; printf "%d", int((x + 4095) / 4096) * 4096 }')
    rbest=0
    for rq in ${RANDOM_QD:-16 64}; do
      drop
      rj=$("$probe" --random --qd "$rq" --rs "$rrs" --json --seconds "${PROBE_SECONDS:-3}" "$ds") || continue
      rg=$(jnum "$(printf '%s' "$rj" | grep -o '"best":{[^}]*}')" gb_per_s)
      echo "  random O_DIRECT reads, QD $rq x RS $(kib "$rrs"): $rg GB/s"
      if awk -v a="$rg" -v b="$rbest" 'BEGIN { exit !(a > b) }'; then rbest=$rg; fi
    done
  fi

  # 2. The loader, O_DIRECT, one cold epoch per io queue depth.
  best_loader=0 best_loader_qd=0 loaders="" default_ratio="" first_met=""
  best_busy="" best_decode_bound=0
  if [ $prc = 0 ]; then
    echo "loader, O_DIRECT, one epoch (disk_probe --loader; stored GB/s vs the probe's best):"
    printf '  %-4s %-9s %-10s %-9s %-7s %-8s %-8s %s\n' qd threads in-flight images/s GB/s ratio verdict "busy read/decode %"
    for qd in $qd_list; do
      drop
      qdarg=(--qd "$qd") qdj=$qd
      [ "$qd" = auto ] && qdarg=() qdj='"auto"'
      lj=$("$probe" --loader "$ds" "${qdarg[@]}" --batch "$batch" --order "$order" "${thr[@]}" --json)
      if [ $? != 0 ]; then
        echo "  qd $qd: the loader run failed"
        status=1
        continue
      fi
      g=$(jnum "$lj" gb_per_s) r=$(ratio "$g" "$best")
      printf '  %-4s %-9s %-10s %-9s %-7s %-8s %-8s %s/%s\n' "$qd" "$(jnum "$lj" threads)" \
        "$(jnum "$lj" reads_in_flight_max)" "$(jnum "$lj" images_per_s)" "$g" "${r}x" \
        "$(verdict "$r")" "$(jnum "$lj" read)" "$(jnum "$lj" decode)"
      loaders+="${loaders:+,}{\"qd\":$qdj,\"threads\":$(jnum "$lj" threads),\"in_flight\":$(jnum "$lj" reads_in_flight_max),\"gb_per_s\":$g,\"ratio\":$r}"
      if awk -v a="$g" -v b="$best_loader" 'BEGIN { exit !(a > b) }'; then
        best_loader=$g best_loader_qd=$qd
        best_busy="read $(jnum "$lj" read)%, decode $(jnum "$lj" decode)%"
        best_decode_bound=$(awk -v r="$(jnum "$lj" read)" -v d="$(jnum "$lj" decode)" 'BEGIN { print (d > r ? 1 : 0) }')
      fi
      [ "$qd" = auto ] && default_ratio=$r
      if [ -z "$first_met" ] && [ "$(verdict "$r")" = "[met]" ]; then first_met=$qd; fi
    done
    if [ -n "$default_ratio" ]; then
      echo "  the loader's defaults (autotune) give ${default_ratio}x $(verdict "$default_ratio")"
    fi
    if [ -n "$first_met" ]; then
      echo "  the smallest io queue depth of QD_LIST reaching 0.9x: $first_met"
    else
      echo "  no io queue depth of QD_LIST reaches 0.9x"
    fi
    echo "  the loader's best against random reads of a sample's size ($rbest GB/s):" \
      "$(ratio "$best_loader" "$rbest")x"
  fi

  # 2b. Paired: the sweep's best setting measured again, alternated with
  # the loader at its defaults, PAIRS times. The sweep's best is the
  # highest of 20 noisy figures (this kind of disk has given 1.3-2.6 GB/s
  # for one setting within the hour), so it overstates what the setting
  # reads on average; alternating the two measures each under the same
  # drift. Medians of each side, and their ratio.
  pairs=${PAIRS:-3} paired=""
  if [ $prc = 0 ] && [ "$pairs" -gt 0 ]; then
    ps=() ls=()
    for ((i = 1; i <= pairs; i++)); do
      drop
      sj=$("$probe" --qd "$best_qd" --rs "$best_rs" --seconds "${PROBE_SECONDS:-3}" --json "$ds") || { status=1; break; }
      ps+=("$(jnum "$(printf '%s' "$sj" | grep -o '"best":{[^}]*}')" gb_per_s)")
      drop
      lj=$("$probe" --loader "$ds" --batch "$batch" --order "$order" "${thr[@]}" --json) || { status=1; break; }
      ls+=("$(jnum "$lj" gb_per_s)")
    done
    if [ ${#ls[@]} = "$pairs" ]; then
      med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
      pm=$(med "${ps[@]}") lm=$(med "${ls[@]}") pr=$(ratio "$(med "${ls[@]}")" "$(med "${ps[@]}")")
      echo "paired, $pairs times: sequential QD $best_qd x RS $(kib "$best_rs") ${ps[*]} GB/s" \
        "(median $pm); the loader at its defaults ${ls[*]} (median $lm): ${pr}x $(verdict "$pr")"
      paired=$(printf '"paired":{"probe":[%s],"loader":[%s],"probe_median":%s,"loader_median":%s,"ratio":%s},' \
        "$(IFS=,; echo "${ps[*]}")" "$(IFS=,; echo "${ls[*]}")" "$pm" "$lm" "$pr")
    fi
  fi

  # 3. gpufeed bench, one epoch, as the CLI reads (buffered).
  drop
  bj=$("$gf" bench "$ds" --epochs 1 --io uring --batch "$batch" --order "$order" "${thr[@]}" --json --quiet)
  if [ $? != 0 ]; then
    echo "gpufeed bench failed"
    status=1
    continue
  fi
  images=$(jnum "$bj" images) secs=$(jnum "$bj" seconds) create=$(jnum "$bj" create_ms)
  bench_gbs=$(awk -v b="$stored" -v n="$samples" -v i="$images" -v s="$secs" -v c="$create" \
    'BEGIN { t = s + c / 1e3; printf "%.4f", (t > 0 ? b / n * i / t / 1e9 : 0) }')
  if [ $prc = 77 ]; then
    kind="page cache dropped, but O_DIRECT is refused under WORK (on tmpfs the data stays in memory: never cold)"
  elif [ $cold = 1 ]; then
    kind=cold
  else
    kind="WARM (page cache not dropped)"
  fi
  echo "gpufeed bench --epochs 1 --io uring (buffered: bench has no O_DIRECT option), $kind:"
  echo "  $(jnum "$bj" images_per_s) images/s, $bench_gbs GB/s of stored bytes," \
    "$(jstr "$bj" mode), $(jnum "$bj" threads) threads, $(jstr "$bj" io_backend)"
  bench_ratio=0
  if [ $prc = 0 ]; then
    bench_ratio=$(ratio "$bench_gbs" "$best")
    echo "  ${bench_ratio}x the probe's best $(verdict "$bench_ratio")"
  fi

  if [ $prc = 0 ]; then
    lr=$(ratio "$best_loader" "$best")
    echo "=> $c: the loader's best O_DIRECT epoch $best_loader GB/s at io queue depth" \
      "$best_loader_qd = ${lr}x the disk's $best GB/s (QD $best_qd x RS $(kib "$best_rs"))" \
      "$(verdict "$lr") (target 0.9x$([ $cold = 1 ] || echo ", caches not dropped"))"
    echo "   the workers there: $best_busy$([ "$best_decode_bound" = 1 ] &&
      echo " (decode-bound: more threads would help, not a deeper queue)")"
  fi
  printf 'cold_read {"codec":"%s","cold":%s,"samples":%s,"stored_bytes":%s,' \
    "$c" "$([ $cold = 1 ] && echo true || echo false)" "$samples" "$stored"
  printf '"probe":{"gb_per_s":%s,"qd":%s,"rs":%s},"probe_random":{"gb_per_s":%s,"rs":%s},' \
    "$best" "$best_qd" "$best_rs" "${rbest:-0}" "${rrs:-0}"
  printf '"loader_direct":[%s],%s' "$loaders" "$paired"
  printf '"bench_buffered":{"gb_per_s":%s,"images_per_s":%s,"ratio":%s}}\n' \
    "$bench_gbs" "$(jnum "$bj" images_per_s)" "$bench_ratio"
done
exit $status
