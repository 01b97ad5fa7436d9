#!/usr/bin/env bash
# WebDataset tar shards against the same JPEG images as a gpufeed dataset
# and against the webdataset recipe's loader, side by side in one run
# (issue 36's targets; docs/SHARDS.md):
#
#   1. a folder of COUNT JPEG images of varied sizes (gpufeed synth
#      --format jpeg, SIZES), its gpufeed dataset (--codec jpeg: the same
#      files stored as they are), and the same images as WebDataset shards
#      of PER_SHARD samples written by the peer's own writer (PEER --make:
#      ustar, KEY.jpg + KEY.cls), with DALI-format indexes beside them
#      (tests/wds/pack_shards.py's, or `gpufeed index` where BIN has it)
#      and, unless VERIFY=0, verification sums (`gpufeed index --verify`,
#      timed);
#   2. `gpufeed bench` of the dataset, of the shards with their indexes
#      (--shard-index require; on a GPU again without the sums:
#      shards_unverified), scanned at create (--shard-index scan) and
#      in streaming mode (--shard-index stream),
#      the same transform (RandomResizedCrop 224 + flip, DTYPE out) and
#      THREADS threads;
#   3. the peers on the same shards with THREADS DataLoader workers: the
#      webdataset library's loader (bench/wds_peer.py) where PYTHON has
#      webdataset, and PEER (../shared/peers/pytorch_wds.py, its recipe in
#      the standard library): shard shuffle, a shuffle buffer of 1,000,
#      torchvision decode and RandomResizedCrop 224 + flip; the ratio is
#      taken against the library's where it ran;
#   4. the create time over the shards with indexes, and over SMALL_SHARDS
#      (default 1000) shards of 8 samples each with indexes;
#   5. with REMOTE=1: nginx serving WORK on the loopback (tests/net/nginx.sh;
#      GF_NGINX names its binary), directly, through BIN's netproxy with
#      no delay (the proxy's own cost: it must pass 0.95x of nginx direct)
#      and with LATENCY_MS (default 25) of added round trip (PROXIES
#      proxy processes on one port each, default 3: with verified shards on the
#      JPEG engines two passed 0.89 of nginx direct): the indexed shards
#      and the streaming mode over HTTP, the same as s3:// objects (nginx
#      as a path-style S3 endpoint, requests signed), and create + first
#      batch over the SMALL_SHARDS;
# then the ratios against the targets: indexed shards >= 0.95x the
# dataset, >= 3x the peer, create <= 1 s over 1,000 indexed shards, over
# HTTP >= 0.90x local, first batch from 1,000 remote shards <= 2 s.
#
#   bash bench/wds_bench.sh BIN WORK [PEER]
#
# Environment: THREADS (default the online cores), DEVICE (gpufeed's
# --device, default auto), DTYPE (default bf16), COUNT (default 20000),
# SIZES (default 200-500), PER_SHARD (default 1000), EPOCHS (default 3),
# PEER_EPOCHS (default 2), PYTHON (the peer's python, default python3),
# PACK_PYTHON (python with tarfile for the indexes, default python3),
# SMALL_SHARDS (default 1000; 0 skips step 4's second part), ROUNDS (each
# gpufeed run made this many times, the ratios from their means; default
# 1: single runs move by 5-10% between runs), PEERS=0 (no
# peer runs: the data and gpufeed's runs alone), LOADER_CPUS and
# SERVER_CPUS (taskset lists, e.g. 0-11 and 12-15: every gpufeed run, local
# or remote, on LOADER_CPUS, and nginx and the proxy on SERVER_CPUS, as a
# server on another machine would be; unset, all share every core). JSON
# lines go to WORK/results.jsonl.
set -euo pipefail
BIN=$(cd "$1" && pwd)
WORK=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
PEER=${3:-$HERE/../shared/peers/pytorch_wds.py}
G=$BIN/gpufeed
THREADS=${THREADS:-$(nproc)}
DEVICE=${DEVICE:-auto}
DTYPE=${DTYPE:-bf16}
COUNT=${COUNT:-20000}
SIZES=${SIZES:-200-500}
PER_SHARD=${PER_SHARD:-1000}
EPOCHS=${EPOCHS:-3}
PEER_EPOCHS=${PEER_EPOCHS:-2}
PYTHON=${PYTHON:-python3}
PACK_PYTHON=${PACK_PYTHON:-python3}
SMALL_SHARDS=${SMALL_SHARDS:-1000}
LOADER=()
SERVER=()
[ -n "${LOADER_CPUS:-}" ] && LOADER=(taskset -c "$LOADER_CPUS")
[ -n "${SERVER_CPUS:-}" ] && SERVER=(taskset -c "$SERVER_CPUS")
mkdir -p "$WORK"
OUT=$WORK/results.jsonl
: > "$OUT"
say() { echo "== $*" >&2; }

# 1. The images, three ways.
if [ ! -d "$WORK/folder" ]; then
  say "folder: $COUNT JPEG images, sides $SIZES"
  "$G" synth "$WORK/folder.tmp" --count "$COUNT" --format jpeg --sizes "$SIZES" --classes 100 --quiet
  mv "$WORK/folder.tmp" "$WORK/folder"
fi
if [ ! -d "$WORK/ds" ]; then
  say "dataset (--codec jpeg)"
  "$G" build "$WORK/folder" "$WORK/ds" --codec jpeg --quiet
fi
NSH=$(( (COUNT + PER_SHARD - 1) / PER_SHARD ))
LAST=$(printf '%06d' $((NSH - 1)))
SHARDS="$WORK/shards/shard-{000000..$LAST}.tar"
index_shards() { # DIR PATTERN
  if "$G" index --help >/dev/null 2>&1; then
    "$G" index "$2" --quiet
    if [ "${VERIFY:-1}" = 1 ] && "$G" index --help | grep -q -- --verify; then
      local t0
      t0=$(date +%s%N)
      "$G" index "$2" --verify --quiet
      say "index --verify of $1: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    fi
  else
    "$PACK_PYTHON" "$HERE/tests/wds/index_shards.py" "$1"/*.tar
  fi
}
if [ ! -d "$WORK/shards" ]; then
  say "shards: $NSH of $PER_SHARD samples (the peer's writer), with indexes"
  "$PYTHON" "$PEER" --make "$WORK/folder" "$WORK/shards.tmp" --per-shard "$PER_SHARD" >&2
  mv "$WORK/shards.tmp" "$WORK/shards"
  index_shards "$WORK/shards" "$SHARDS"
fi

# 2. gpufeed on each.
run() { # NAME SOURCE ARGS...: ROUNDS times, one after the other
  local name=$1 src=$2 k
  shift 2
  for k in $(seq 1 "${ROUNDS:-1}"); do
    say "gpufeed bench $name (round $k)"
    "${LOADER[@]}" "$G" bench "$src" --device "$DEVICE" --threads "$THREADS" --rrc 224 \
      --dtype "$DTYPE" --epochs "$EPOCHS" --json --quiet "$@" |
      sed "s/^{/{\"run\":\"$name\",/" | tee -a "$OUT" >&2
  done
}
run dataset "$WORK/ds"
run shards_indexed "$SHARDS" --shard-index require
# The same shards and indexes without their verification sums (links to
# them in a folder of their own): JPEG on the CPU under gpu_decode auto.
if [ "$DEVICE" != cpu ] && ls "$WORK"/shards/*.sums >/dev/null 2>&1; then
  rm -rf "$WORK/shards_nv"
  mkdir -p "$WORK/shards_nv"
  ln "$WORK"/shards/*.tar "$WORK"/shards/*.idx "$WORK/shards_nv/"
  run shards_unverified "$WORK/shards_nv/shard-{000000..$LAST}.tar" --shard-index require
fi
run shards_scanned "$SHARDS" --shard-index scan
run shards_stream "$SHARDS" --shard-index stream
# On a GPU, gpu_decode auto gives a dataset's JPEGs (checksummed) and
# verified shards' to nvJPEG and keeps unverified shards' on the CPU: the
# same images through the same decoder too, both ways.
if [ "$DEVICE" != cpu ]; then
  run dataset_gpu_all "$WORK/ds" --gpu-decode all
  run shards_gpu_all "$SHARDS" --shard-index require --gpu-decode all
  run dataset_gpu_off "$WORK/ds" --gpu-decode off
fi

# 3. The peers: webdataset's own loader where PYTHON has it, and the
# recipe in the standard library.
if [ "${PEERS:-1}" = 0 ]; then
  say "peers skipped (PEERS=0)"
elif "$PYTHON" -c 'import torch, torchvision, webdataset' 2>/dev/null; then
  say "peer: webdataset (bench/wds_peer.py)"
  "${LOADER[@]}" "$PYTHON" "$HERE/bench/wds_peer.py" "$SHARDS" --workers "$THREADS" \
    --batch 256 --epochs "$PEER_EPOCHS" --size 224 | tail -1 |
    sed 's/^{/{"run":"peer_webdataset",/' | tee -a "$OUT" >&2
else
  say "webdataset peer skipped: $PYTHON lacks torch, torchvision or webdataset"
fi
if [ "${PEERS:-1}" = 0 ]; then
  :
elif [ -f "$PEER" ] && "$PYTHON" -c 'import torch, torchvision' 2>/dev/null; then
  say "peer: $PEER"
  "${LOADER[@]}" "$PYTHON" "$PEER" "$SHARDS" --workers "$THREADS" --batch 256 \
    --epochs "$PEER_EPOCHS" --size 224 --count "$COUNT" | tail -1 |
    sed 's/^{/{"run":"peer",/' | tee -a "$OUT" >&2
else
  say "peer skipped: no $PEER or no torch for $PYTHON"
fi

# 4. Create over many small indexed shards.
if [ "$SMALL_SHARDS" -gt 0 ]; then
  if [ ! -d "$WORK/small" ]; then
    say "small shards: $SMALL_SHARDS of 8 samples"
    mkdir -p "$WORK/small.src/c"
    for f in $(ls "$WORK/folder"/*/* | head -8); do cp "$f" "$WORK/small.src/c/"; done
    "$PYTHON" "$PEER" --make "$WORK/small.src" "$WORK/small.one" --per-shard 8 >&2
    mkdir -p "$WORK/small"
    for i in $(seq 0 $((SMALL_SHARDS - 1))); do
      cp "$WORK/small.one/shard-000000.tar" "$WORK/small/shard-$(printf '%06d' "$i").tar"
    done
    SLAST=$(printf '%06d' $((SMALL_SHARDS - 1)))
    index_shards "$WORK/small" "$WORK/small/shard-{000000..$SLAST}.tar"
  fi
  SLAST=$(printf '%06d' $((SMALL_SHARDS - 1)))
  say "create over $SMALL_SHARDS indexed shards"
  "${LOADER[@]}" "$G" bench "$WORK/small/shard-{000000..$SLAST}.tar" --device "$DEVICE" \
    --threads "$THREADS" --rrc 224 --batch 8 --batches 1 --epochs 1 --json --quiet \
    --shard-index require | sed 's/^{/{"run":"small_create",/' | tee -a "$OUT" >&2
fi

# 5. Over HTTP (REMOTE=1): nginx serving WORK on the loopback, directly and
# through netproxy with LATENCY_MS of added round trip; the indexed shards
# against the local ones, and create + first batch over the SMALL_SHARDS.
if [ "${REMOTE:-0}" = 1 ]; then
  run_dir=$WORK/run
  rm -rf "$run_dir"
  mkdir -p "$run_dir"
  proxy_pid=
  stop_servers() {
    # shellcheck disable=SC2086
    [ -z "$proxy_pid" ] || kill $proxy_pid 2>/dev/null || true
    proxy_pid=
    bash "$HERE/tests/net/nginx.sh" stop "$run_dir/nginx" >/dev/null 2>&1 || true
  }
  trap stop_servers EXIT
  eval "$("${SERVER[@]}" bash "$HERE/tests/net/nginx.sh" start "$WORK" "$run_dir/nginx" --owner $$ \
    --workers 4 --connections 8192)"
  # PROXIES netproxy processes on one port (--reuseport) for each of the
  # two proxies (no delay, +LATENCY_MS): one proxy is one thread, and must
  # not be what limits a figure; the no-delay runs show it does not.
  start_proxy() { # NAME [netproxy options]; sets PURL_NAME
    local name=$1 k i listen=()
    shift
    for k in $(seq 1 "${PROXIES:-3}"); do
      "${SERVER[@]}" "$BIN/tests/netproxy" --upstream "unix:$GF_NGINX_SOCK" \
        --port-file "$run_dir/$name.$k.env" --die-with-parent --reuseport "${listen[@]}" "$@" \
        >/dev/null 2>"$run_dir/$name.$k.err" &
      proxy_pid="$proxy_pid $!"
      for i in $(seq 1 200); do [ -s "$run_dir/$name.$k.env" ] && break; sleep 0.05; done
      [ -s "$run_dir/$name.$k.env" ] || { cat "$run_dir/$name.$k.err" >&2; exit 1; }
      [ "$k" = 1 ] && listen=(--listen "127.0.0.1:$(sed -n 's/^GF_PROXY_PORT=//p' "$run_dir/$name.1.env")")
    done
    eval "PURL_$name=$(sed -n 's/^GF_PROXY_URL=//p' "$run_dir/$name.1.env")"
  }
  start_proxy plain
  start_proxy delayed --latency "${LATENCY_MS:-25}"
  PURL=$PURL_delayed
  run shards_http "$GF_NGINX_URL/shards/shard-{000000..$LAST}.tar" --shard-index require
  run shards_proxy "$PURL_plain/shards/shard-{000000..$LAST}.tar" --shard-index require
  run shards_delayed "$PURL/shards/shard-{000000..$LAST}.tar" --shard-index require
  run stream_http "$GF_NGINX_URL/shards/shard-{000000..$LAST}.tar" --shard-index stream
  run stream_proxy "$PURL_plain/shards/shard-{000000..$LAST}.tar" --shard-index stream
  run stream_delayed "$PURL/shards/shard-{000000..$LAST}.tar" --shard-index stream
  # The same shards as S3 objects: nginx as the endpoint (path-style:
  # bucket "shards", its root WORK/shards), through the same proxy, each
  # request signed (SigV4 with a throwaway key; nginx does not check it).
  (
    export AWS_ACCESS_KEY_ID=AKIDBENCH AWS_SECRET_ACCESS_KEY=bench-secret \
      AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3="$PURL" AWS_EC2_METADATA_DISABLED=true
    unset AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_SESSION_TOKEN
    run s3_delayed "s3://shards/shard-{000000..$LAST}.tar" --shard-index require
    run s3_stream_delayed "s3://shards/shard-{000000..$LAST}.tar" --shard-index stream
  )
  if [ "$SMALL_SHARDS" -gt 0 ]; then
    SLAST=$(printf '%06d' $((SMALL_SHARDS - 1)))
    say "create over $SMALL_SHARDS indexed shards through +${LATENCY_MS:-25} ms"
    "${LOADER[@]}" "$G" bench "$PURL/small/shard-{000000..$SLAST}.tar" --device "$DEVICE" \
      --threads "$THREADS" --rrc 224 --batch 8 --batches 1 --epochs 1 --json --quiet \
      --shard-index require | sed 's/^{/{"run":"small_remote_create",/' | tee -a "$OUT" >&2
  fi
  stop_servers
fi

"$PACK_PYTHON" - "$OUT" <<'PY'
import json, sys
runs, rounds = {}, {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        d = json.loads(line)
        runs[d["run"]] = d
        v = d.get("images_per_s") or d.get("best_img_per_s")
        if v:
            rounds.setdefault(d["run"], []).append(v)
def ips(name):
    # The mean of a run's rounds (ROUNDS).
    v = rounds.get(name)
    return sum(v) / len(v) if v else None
ds, ix, sc = ips("dataset"), ips("shards_indexed"), ips("shards_scanned")
peer = ips("peer_webdataset") or ips("peer")
print("| run | images/s |")
print("|---|---:|")
for n in ("dataset", "shards_indexed", "shards_unverified", "shards_scanned",
          "shards_stream",
          "dataset_gpu_all", "shards_gpu_all", "dataset_gpu_off", "shards_http",
          "shards_proxy", "shards_delayed", "stream_http", "stream_proxy",
          "stream_delayed", "s3_delayed",
          "s3_stream_delayed", "peer_webdataset",
          "peer"):
    v = ips(n)
    r = rounds.get(n, [])
    each = " (%s)" % ", ".join("%.0f" % x for x in r) if len(r) > 1 else ""
    print("| %s | %s%s |" % (n, "%.0f" % v if v else "-", each))
def verdict(ok):
    return "met" if ok else "MISSED"
if ds and ix:
    print("indexed shards / dataset: %.3f (target 0.95: %s)" % (ix / ds, verdict(ix / ds >= 0.95)))
nv = ips("shards_unverified")
if ds and nv:
    print("unverified indexed shards / dataset: %.3f" % (nv / ds))
if ds and sc:
    print("scanned shards / dataset: %.3f" % (sc / ds))
da, sa, do = ips("dataset_gpu_all"), ips("shards_gpu_all"), ips("dataset_gpu_off")
if da and sa:
    print("both on nvJPEG (--gpu-decode all): shards / dataset: %.3f (target 0.95: %s)"
          % (sa / da, verdict(sa / da >= 0.95)))
if do and ix:
    print("both on the CPU (dataset --gpu-decode off): shards / dataset: %.3f (target 0.95: %s)"
          % (ix / do, verdict(ix / do >= 0.95)))
if ix and peer:
    print("indexed shards / peer: %.1fx (target 3x: %s)" % (ix / peer, verdict(ix / peer >= 3)))
ht, dl = ips("shards_http"), ips("shards_delayed")
if ix and ht:
    print("indexed shards over HTTP / local: %.3f (target 0.90: %s)" % (ht / ix, verdict(ht / ix >= 0.9)))
if ix and dl:
    print("indexed shards over HTTP +25 ms / local: %.3f (target 0.90: %s)" % (dl / ix, verdict(dl / ix >= 0.9)))
hp, sp, sh0 = ips("shards_proxy"), ips("stream_proxy"), ips("stream_http")
if ht and hp:
    print("the proxy, no delay / nginx direct, indexed: %.3f (the proxy must pass >= 0.95: %s)"
          % (hp / ht, verdict(hp / ht >= 0.95)))
if sh0 and sp:
    print("the proxy, no delay / nginx direct, streaming: %.3f (the proxy must pass >= 0.95: %s)"
          % (sp / sh0, verdict(sp / sh0 >= 0.95)))
st, sh, sd = ips("shards_stream"), ips("stream_http"), ips("stream_delayed")
if ix and st:
    print("streaming shards / indexed, both local: %.3f" % (st / ix))
if st and sd:
    print("streaming over HTTP +25 ms / streaming local: %.3f (target 0.90: %s)" % (sd / st, verdict(sd / st >= 0.9)))
if ix and sd:
    print("streaming over HTTP +25 ms / indexed local: %.3f (target 0.90: %s)" % (sd / ix, verdict(sd / ix >= 0.9)))
s3, s3s = ips("s3_delayed"), ips("s3_stream_delayed")
if ix and s3:
    print("indexed shards over S3 +25 ms / local: %.3f (target 0.90: %s)" % (s3 / ix, verdict(s3 / ix >= 0.9)))
if st and s3s:
    print("streaming over S3 +25 ms / streaming local: %.3f (target 0.90: %s)" % (s3s / st, verdict(s3s / st >= 0.9)))
if ix and s3s:
    print("streaming over S3 +25 ms / indexed local: %.3f (target 0.90: %s)" % (s3s / ix, verdict(s3s / ix >= 0.9)))
for n in ("shards_indexed", "small_create", "small_remote_create"):
    d = runs.get(n)
    if d:
        c, fb = d.get("create_ms"), d.get("first_batch_ms", 0)
        extra = ""
        if n == "small_create":
            extra = " (target: create <= 1 s: %s)" % verdict(c <= 1000)
        if n == "small_remote_create":
            extra = " (target: first batch <= 2 s from create: %s)" % verdict(fb <= 2000)
        print("%s: create %.0f ms, first batch %.0f ms from the start of create%s"
              % (n, c, fb, extra))
PY
