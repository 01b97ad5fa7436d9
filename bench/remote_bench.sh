#!/usr/bin/env bash
# Datasets over HTTP against the same datasets on local disk, and against
# the PyTorch peer over HTTP, side by side in one run (issue 34's targets
# R1-R6; docs/REMOTE.md). nginx serves WORK/root on the loopback; netproxy
# (tests/net) sits in front of it twice: with no added delay (to show it is
# not what limits a figure) and with LATENCY_MS of added round trip.
#
#   1. datasets, made once and reused under WORK/root: a folder of COUNT
#      JPEG crops of PHOTOS (sides 200-500 px, quality 90), its gpufeed
#      dataset (--codec jpeg), a raw dataset of RAW_COUNT 256x256 crops
#      (no decode: the I/O-bound case) and a 1,000,000-sample index
#      (bench/make_index);
#   2. R1: `gpufeed bench` of each dataset from local disk, from nginx,
#      and through the proxy with no delay (the proxy's factor), same
#      options;
#   3. R2: the same through the proxy with LATENCY_MS, default remote
#      settings;
#   4. R3: the requests nginx logged for one block-order epoch and one
#      shuffled epoch of the JPEG dataset (HEADs, index GETs, shard GETs)
#      against the blocks and the samples read;
#   5. R4: create and first batch of the 1,000,000-sample dataset through
#      the delayed proxy;
#   6. R5: the peer (PEER, a copy of pytorch_http.py) on the JPEG folder
#      through the delayed proxy, the same transform (RandomResizedCrop
#      224 + flip) and THREADS workers, against gpufeed on the dataset
#      built from the same folder, through the same proxy;
#   7. R6: the JPEG and raw datasets through the delayed proxy with a disk
#      cache (--cache-dir): the first epoch fills it, the later ones are
#      its rate;
# then a table with [met]/[MISSED] against each target.
#
#   bash bench/remote_bench.sh BIN WORK [PHOTOS] [PEER]
#
# BIN: a build folder holding gpufeed, tests/netproxy and bench/make_index.
# PHOTOS: PNG or JPEG photos of at least 500x500 (default
# ../shared/data/photos; '-': synthetic images). PEER: the peer script
# (default ../shared/peers/pytorch_http.py; '-' or missing: its row is
# skipped with a message). nginx must be installed (or GF_NGINX naming its
# binary; tests/net/nginx.sh).
#
# Environment: THREADS (decode workers and peer workers, default the online
# cores), DEVICE (gpufeed's --device, default auto), COUNT (default 20000),
# RAW_COUNT (default 6000), EPOCHS (default 3), PEER_EPOCHS (default 2),
# PEER_COUNT (images the peer reads, an evenly spread subset; default
# COUNT), LATENCY_MS (default 25), PYTHON (the peer's python, default python3),
# BIG=0 (skip R4), ROUNDS (repeats of R1/R2's runs, default 1), PROXIES
# (netproxy processes sharing each proxy's port, default 1), NGINX_WORKERS
# (default one a four cores). Raw JSON
# lines go to WORK/results.jsonl, nginx's log to WORK/run/nginx/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: bench/remote_bench.sh BIN WORK [PHOTOS] [PEER]}" && pwd)
work=${2:?usage: bench/remote_bench.sh BIN WORK [PHOTOS] [PEER]}
photos=${3:-$here/../shared/data/photos}
peer=${4:-$here/../shared/peers/pytorch_http.py}
threads=${THREADS:-$(nproc)} device=${DEVICE:-auto}
count=${COUNT:-20000} raw_count=${RAW_COUNT:-6000}
epochs=${EPOCHS:-3} peer_epochs=${PEER_EPOCHS:-2}
lat=${LATENCY_MS:-25} py=${PYTHON:-python3} big=${BIG:-1}
rounds=${ROUNDS:-1} proxies=${PROXIES:-1}
ngx_workers=${NGINX_WORKERS:-$(( $(nproc) >= 8 ? $(nproc) / 4 : 1 ))}
gf=$bin/gpufeed
proxy_bin=$bin/tests/netproxy
for f in "$gf" "$proxy_bin" "$bin/bench/make_index"; do
  [ -x "$f" ] || { echo "no $f: build gpufeed, its tests and bench/" >&2; exit 1; }
done
why=$(bash "$here/tests/net/nginx.sh" check) || { echo "$why" >&2; exit 1; }
mkdir -p "$work/root"
work=$(cd "$work" && pwd)
root=$work/root
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

gpu=$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
log "machine: $(nproc) cores, ${gpu:-no GPU}; threads $threads, device $device, count $count, latency $lat ms"

# 1. Datasets.
from=()
[ "$photos" != "-" ] && from=(--from "$photos")
made() { [ "$(cat "$1/.done" 2>/dev/null)" = "$2" ]; }
stamp="$count jpeg 200-500 90 $photos"
if ! made "$root/jpeg" "$stamp"; then
  rm -rf "$root/jpeg" "$root/ds-jpeg"
  "$gf" synth "$root/jpeg" --format jpeg --quality 90 "${from[@]}" \
    --count "$count" --sizes 200-500 --seed 12 --quiet
  echo "$stamp" >"$root/jpeg/.done"
fi
if ! made "$root/ds-jpeg" "$stamp"; then
  "$gf" build "$root/jpeg" "$root/ds-jpeg" --codec jpeg --force --quiet
  echo "$stamp" >"$root/ds-jpeg/.done"
fi
rstamp="$raw_count raw 256x256 $photos"
if ! made "$root/ds-raw" "$rstamp"; then
  rm -rf "$work/png-raw" "$root/ds-raw"
  "$gf" synth "$work/png-raw" "${from[@]}" --count "$raw_count" --size 256x256 \
    --seed 13 --quiet
  "$gf" build "$work/png-raw" "$root/ds-raw" --codec raw --force --quiet
  rm -rf "$work/png-raw"
  echo "$rstamp" >"$root/ds-raw/.done"
fi
if [ "$big" = 1 ] && ! made "$root/index1m" "1m"; then
  rm -rf "$root/index1m"
  "$bin/bench/make_index" "$root/index1m" >/dev/null
  echo "1m" >"$root/index1m/.done"
fi
# The peer's list: 'relative/path class' for every image of the folder.
(cd "$root/jpeg" && find . -name '*.jpg' | sed 's|^\./||' | sort |
  awk -F/ '{print $0, $1}') >"$work/jpeg.all"
# PEER_COUNT: the peer reads an evenly spread subset (its rate is per image;
# at LATENCY_MS a request it is slow enough that all of COUNT takes long).
peer_count=${PEER_COUNT:-$count}
awk -v k="$(( (count + peer_count - 1) / peer_count ))" '(NR - 1) % k == 0' \
  "$work/jpeg.all" >"$work/jpeg.list"
du -sh "$root"/* >&2
cat "$root"/ds-*/* "$root"/jpeg/*/*.jpg >/dev/null # page cache warm

# 2. Servers: nginx, netproxy with no delay and with LATENCY_MS.
run=$work/run
rm -rf "$run"
mkdir -p "$run"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  bash "$here/tests/net/nginx.sh" stop "$run/nginx" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# A server with a worker a four cores and room for every connection: one
# nginx worker is one thread, and would be what limits the figures.
eval "$(bash "$here/tests/net/nginx.sh" start "$root" "$run/nginx" --owner $$ \
  --workers "$ngx_workers" --connections 8192)"
declare -A url
url[nginx]=$GF_NGINX_URL
start_proxy() { # NAME [netproxy options]; not in a subshell (the proxy
  # dies with its parent). PROXIES processes on one port (--reuseport):
  # one proxy is one thread, and must not be what limits a figure.
  local name=$1; shift
  local k i listen=()
  for k in $(seq 1 "$proxies"); do
    "$proxy_bin" --upstream "unix:$GF_NGINX_SOCK" --port-file "$run/$name.$k.env" \
      --die-with-parent --reuseport "${listen[@]}" "$@" \
      >/dev/null 2>"$run/$name.$k.err" &
    pids+=($!)
    for i in $(seq 1 200); do
      [ -s "$run/$name.$k.env" ] && break
      sleep 0.05
    done
    [ -s "$run/$name.$k.env" ] || { cat "$run/$name.$k.err" >&2; exit 1; }
    if [ "$k" = 1 ]; then
      url[$name]=$(sed -n 's/^GF_PROXY_URL=//p' "$run/$name.1.env")
      listen=(--listen "127.0.0.1:$(sed -n 's/^GF_PROXY_PORT=//p' "$run/$name.1.env")")
    fi
  done
  [ -n "${url[$name]}" ] || { cat "$run/$name.1.err" >&2; exit 1; }
}
start_proxy proxy0
start_proxy delayed --latency "$lat"
log "nginx ${url[nginx]}, proxy ${url[proxy0]}, proxy +${lat} ms ${url[delayed]}"

B=256
norm=(--mean "123.675,116.28,103.53" --std "58.395,57.12,57.375")
jpeg_opts=(--rrc 224 --dtype bf16 --layout nchw "${norm[@]}")
raw_opts=(--dtype u8)
base=(--device "$device" --threads "$threads" --batch "$B" --json --quiet)
where() { # SERVER DATASET: the dataset's location
  if [ "$1" = local ]; then echo "$root/$2"; else echo "${url[$1]}/$2"; fi
}

# 3. R1, the proxy's factor and R2.
for r in $(seq 1 "$rounds"); do
  for ds in jpeg raw; do
    eval "opts=(\"\${${ds}_opts[@]}\")"
    for s in local nginx proxy0 delayed; do
      record "r1_${ds}_${s}_$r" "$gf" bench "$(where $s ds-$ds)" "${opts[@]}" \
        "${base[@]}" --epochs "$epochs"
    done
  done
done

# 4. R3: requests one block-order epoch and one shuffled epoch make. The
# loader reads ahead into the next epoch (up to its read-ahead budget):
# its trace says which epoch each read served, and nginx's access log
# (request line in field 2) that the requests sent were those and no more.
count_requests() { # NAME FROM-LINE: a JSON object of the log's lines after FROM-LINE
  tail -n +"$(($2 + 1))" "$GF_NGINX_ACCESS_LOG" | awk -F'\t' -v name="$1" '
    { split($2, r, " ") }
    r[1] == "HEAD" { head++; next }
    r[2] ~ /index\.gfi/ { idx++; next }
    r[2] ~ /\.gfs/ { shard++; next }
    { other++ }
    END { printf "{\"name\":\"%s\",\"result\":{\"head\":%d,\"index_gets\":%d,\"shard_gets\":%d,\"other\":%d}}\n",
          name, head, idx, shard, other }' >>"$out"
}
trace_reads() { # NAME TRACE: reads and samples by epoch from the trace
  "${SUMMARY_PYTHON:-python3}" - "$1" "$2" >>"$out" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[2]))["traceEvents"]
reads, samples = collections.Counter(), collections.Counter()
for e in ev:
    if e.get("name") == "fetch" and e.get("ph") == "X":
        reads[e["args"]["epoch"]] += 1
        samples[e["args"]["epoch"]] += e["args"]["samples"]
print(json.dumps({"name": sys.argv[1], "result": {
    "reads": {str(k): v for k, v in sorted(reads.items())},
    "samples": {str(k): v for k, v in sorted(samples.items())}}}))
PY
}
read -r n shards < <("$gf" inspect "$root/ds-jpeg" --json | "${SUMMARY_PYTHON:-python3}" -c 'import json,sys; d = json.load(sys.stdin); print(d["samples"], d["shards"]["count"])')
echo "{\"name\":\"r3_dataset\",\"result\":{\"samples\":$n,\"shards\":$shards,\"block_size\":256,\"batch\":$B}}" >>"$out"
for order in block shuffle; do
  n0=$(wc -l <"$GF_NGINX_ACCESS_LOG")
  record "r3_${order}_run" "$gf" bench "$(where nginx ds-jpeg)" "${jpeg_opts[@]}" \
    "${base[@]}" --epochs 1 --order "$order" --trace "$work/r3_$order.trace"
  sleep 0.5 # nginx writes its log line after the response
  count_requests "r3_${order}_requests" "$n0"
  trace_reads "r3_${order}_trace" "$work/r3_$order.trace"
done

# 5. R4: a million samples through the delayed proxy: create and the first
# batch.
if [ "$big" = 1 ]; then
  record r4_index1m "$gf" bench "$(where delayed index1m)" --device "$device" \
    --threads "$threads" --batch "$B" --batches 1 --epochs 1 --json --quiet
fi

# 6. R5: the peer through the delayed proxy, and gpufeed beside it.
if [ "$peer" != "-" ] && [ -f "$peer" ] && "$py" -c 'import torch, torchvision' 2>/dev/null; then
  record r5_peer env PYTHONUNBUFFERED=1 "$py" "$peer" "$(where delayed jpeg)/" \
    "$work/jpeg.list" --workers "$threads" --batch "$B" --epochs "$peer_epochs" --size 224
else
  log "r5_peer skipped: no peer script at '$peer', or $py has no torch/torchvision"
fi
record r5_gpufeed "$gf" bench "$(where delayed ds-jpeg)" "${jpeg_opts[@]}" \
  "${base[@]}" --epochs "$epochs"

# 7. R6: the disk cache tier behind the delayed proxy (the first epoch
# fills it; the throughput counts the epochs after it).
for ds in jpeg raw; do
  eval "opts=(\"\${${ds}_opts[@]}\")"
  rm -rf "$work/dcache-$ds"
  record "r6_${ds}_cached" "$gf" bench "$(where delayed ds-$ds)" "${opts[@]}" \
    "${base[@]}" --epochs "$epochs" --cache-dir "$work/dcache-$ds"
  record "r6_${ds}_local" "$gf" bench "$(where local ds-$ds)" "${opts[@]}" \
    "${base[@]}" --epochs "$epochs"
done
rm -rf "$work"/dcache-*

"${SUMMARY_PYTHON:-python3}" "$here/bench/remote_summary.py" "$out" --latency "$lat"
