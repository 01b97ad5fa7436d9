#!/usr/bin/env bash
# S3 against plain HTTP and against the PyTorch peer, side by side in one
# run (issue 35's targets; docs/REMOTE.md, "S3"). moto's S3 server
# (tests/s3/s3_server.py, signatures not checked: what is measured is
# gpufeed's side) on the loopback, netproxy (tests/net) in front of it with
# LATENCY_MS of added round trip; every run below goes through that proxy.
#
#   1. a folder of COUNT JPEG crops of PHOTOS (sides 200-500 px, quality
#      90) uploaded to s3://imgs (the bucket's root), and its gpufeed
#      dataset (--codec jpeg) built straight into s3://dsb/ds by
#      `gpufeed build SRC s3://...` (timed; the upload's requests counted);
#   2. block order, S3 against plain HTTP from the same server: the
#      dataset's files served by nginx behind a netproxy with the same
#      LATENCY_MS, read once as `s3://dsb/ds` (nginx as the endpoint,
#      path-style: it answers GET, HEAD, Range and If-Match as S3 does and
#      ignores the signature: what differs is gpufeed's S3 side, signing
#      and all) and once as `http://.../dsb/ds`, same options: the target
#      is 0.90x; and `s3://dsb/ds` from moto (its cost included, shown);
#   3. the folder, from a store that answers as S3 does and serves objects
#      as fast as nginx (nginx.sh --s3-listing: /imgs?list-type=2 is a
#      listing page written here, /imgs/<key> the file): `gpufeed bench s3://imgs`
#      (RandomResizedCrop 224 + flip) against the peer (PEER,
#      pytorch_http.py --s3: the DataLoader with THREADS workers, boto3's
#      get_object a sample) on the same objects and transform, and against
#      the store's ceiling, measured by a load generator (curl --parallel,
#      CURLS processes of 64 transfers each) asking for the same objects:
#      the target is 5x the peer, or 0.90x the ceiling where the ceiling is
#      below 5x the peer; and one epoch from moto itself (shown);
#   4. requests, from moto's log: the folder's epoch (listing pages, GETs,
#      HEADs), the dataset's block-order epoch (GETs against the blocks);
# then a table with [met]/[MISSED] against each target.
#
#   bash bench/s3_bench.sh BIN WORK [PHOTOS] [PEER]
#
# BIN: a build folder holding gpufeed and tests/netproxy. nginx must be
# installed (or GF_NGINX naming its binary; tests/net/nginx.sh). PHOTOS: photos
# of at least 500x500 (default ../shared/data/photos; '-': synthetic).
# PEER: the peer script (default ../shared/peers/pytorch_http.py; '-':
# skipped). PYTHON (default python3) must have moto[server], waitress (moto
# served with keep-alive connections, as S3) and boto3, and
# torch and torchvision for the peer (PEER_PYTHON, default PYTHON).
#
# Environment: THREADS (default the online cores), DEVICE (default auto),
# COUNT (default 4000), EPOCHS (default 3), PEER_EPOCHS (default 2),
# LATENCY_MS (default 25), CURLS (default 4), BLOCK_EPOCHS (default
# EPOCHS), FOLDER_FETCH (default 128). Raw JSON lines go to
# WORK/results.jsonl.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: bench/s3_bench.sh BIN WORK [PHOTOS] [PEER]}" && pwd)
work=${2:?usage: bench/s3_bench.sh BIN WORK [PHOTOS] [PEER]}
photos=${3:-$here/../shared/data/photos}
peer=${4:-$here/../shared/peers/pytorch_http.py}
threads=${THREADS:-$(nproc)} device=${DEVICE:-auto}
count=${COUNT:-4000} epochs=${EPOCHS:-3} peer_epochs=${PEER_EPOCHS:-2}
lat=${LATENCY_MS:-25} py=${PYTHON:-python3} peer_py=${PEER_PYTHON:-${PYTHON:-python3}}
curls=${CURLS:-4}
gf=$bin/gpufeed
proxy_bin=$bin/tests/netproxy
moto="$py $here/tests/s3/s3_server.py"
for f in "$gf" "$proxy_bin"; do
  [ -x "$f" ] || { echo "no $f: build gpufeed and its tests" >&2; exit 1; }
done
$moto check || { echo "no moto or boto3 for $py" >&2; exit 1; }
mkdir -p "$work/root"
work=$(cd "$work" && pwd)
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

# The folder, on local disk first.
from=()
[ "$photos" != "-" ] && from=(--from "$photos")
stamp="$count jpeg 200-500 90 $photos"
if [ "$(cat "$work/jpeg/.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$work/jpeg"
  "$gf" synth "$work/jpeg" --format jpeg --quality 90 "${from[@]}" \
    --count "$count" --sizes 200-500 --seed 12 --quiet
  echo "$stamp" >"$work/jpeg/.done"
fi
(cd "$work/jpeg" && find . -name '*.jpg' | sed 's|^\./||' | sort |
  awk -F/ '{print $0, $1}') >"$work/jpeg.list"

# Servers: moto, and netproxy with LATENCY_MS in front of it.
run=$work/run
rm -rf "$run"
mkdir -p "$run"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  $moto stop "$run/moto" || true
  bash "$here/tests/net/nginx.sh" stop "$run/nginx" >/dev/null 2>&1 || true
}
trap cleanup EXIT
$moto start "$run/moto" imgs dsb --owner $$ --no-auth --waitress >"$run/moto.env"
set -a
. "$run/moto.env"
set +a
mlog=$run/moto/moto.log # read through nocolor: werkzeug may colour its lines
nocolor() { sed 's/\x1b\[[0-9;]*m//g'; }
upstream=${GF_S3_ENDPOINT#http://}
"$proxy_bin" --upstream "$upstream" --port-file "$run/proxy.env" --die-with-parent \
  --latency "$lat" >/dev/null 2>"$run/proxy.err" &
pids+=($!)
for i in $(seq 1 200); do [ -s "$run/proxy.env" ] && break; sleep 0.05; done
purl=$(sed -n 's/^GF_PROXY_URL=//p' "$run/proxy.env")
[ -n "$purl" ] || { cat "$run/proxy.err" >&2; exit 1; }
log "moto $GF_S3_ENDPOINT, proxy +${lat} ms $purl"
export AWS_ENDPOINT_URL_S3=$purl AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE

# 1. The objects: the folder uploaded (not measured), the dataset built
# into the bucket (measured: the upload through the proxy).
GF_S3_ENDPOINT=$GF_S3_ENDPOINT $moto upload "$work/jpeg" s3://imgs >&2
mark() { wc -l <"$mlog"; }
m0=$(mark)
t0=$(date +%s.%N)
if ! "$gf" build "$work/jpeg" s3://dsb/ds --codec jpeg --shard-size 64M --quiet; then
  log "build into s3:// failed: built locally and uploaded instead"
  "$gf" build "$work/jpeg" "$work/root/ds" --codec jpeg --shard-size 64M --force --quiet
  GF_S3_ENDPOINT=$GF_S3_ENDPOINT $moto upload "$work/root/ds" s3://dsb/ds >&2
fi
# The same dataset's files for nginx: downloaded back from the bucket
# (nginx's root holds dsb/ds: path-style s3://dsb/ds maps onto it).
rm -rf "$work/root/dsb"
if [ ! -f "$work/root/dsb/ds/index.gfi" ]; then
  mkdir -p "$work/root/dsb/ds"
  "$py" - "$work/root/dsb/ds" <<'PYEOF'
import boto3, os, sys
s3 = boto3.client("s3", endpoint_url=os.environ["GF_S3_ENDPOINT"], region_name="us-east-1")
for o in s3.list_objects_v2(Bucket="dsb", Prefix="ds/")["Contents"]:
    s3.download_file("dsb", o["Key"], os.path.join(sys.argv[1], o["Key"][3:]))
PYEOF
fi
why=$(bash "$here/tests/net/nginx.sh" check) || { echo "$why" >&2; exit 1; }
# nginx also answers as an S3 store for the folder: its objects from
# ROOT/imgs (the same files), its listing one ListObjectsV2 page with
# nginx's own ETags ("mtime-size" in hex), so that If-Match holds.
ln -sfn "$work/jpeg" "$work/root/imgs"
mkdir -p "$run/listing"
"$py" - "$work/jpeg" "$run/listing/imgs.xml" <<'PYEOF'
import os, sys
from xml.sax.saxutils import escape
root, out = sys.argv[1], sys.argv[2]
keys = sorted(os.path.relpath(os.path.join(d, f), root)
              for d, _, fs in os.walk(root) for f in fs)
with open(out, "w") as x:
    x.write('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
            'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>imgs</Name>'
            '<Prefix></Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>'
            '<IsTruncated>false</IsTruncated>' % (len(keys), len(keys)))
    for k in keys:
        st = os.stat(os.path.join(root, k))
        x.write('<Contents><Key>%s</Key><LastModified>2026-11-28T00:00:00.000Z'
                '</LastModified><ETag>&quot;%x-%x&quot;</ETag><Size>%d</Size>'
                '<StorageClass>STANDARD</StorageClass></Contents>'
                % (escape(k), int(st.st_mtime), st.st_size, st.st_size))
    x.write('</ListBucketResult>\n')
PYEOF
eval "$(bash "$here/tests/net/nginx.sh" start "$work/root" "$run/nginx" --owner $$ \
  --workers 2 --connections 4096 --s3-listing "$run/listing")"
"$proxy_bin" --upstream "unix:$GF_NGINX_SOCK" --port-file "$run/hproxy.env" --die-with-parent \
  --latency "$lat" >/dev/null 2>"$run/hproxy.err" &
pids+=($!)
for i in $(seq 1 200); do [ -s "$run/hproxy.env" ] && break; sleep 0.05; done
hurl=$(sed -n 's/^GF_PROXY_URL=//p' "$run/hproxy.env")
[ -n "$hurl" ] || { cat "$run/hproxy.err" >&2; exit 1; }
log "nginx behind a proxy +${lat} ms: $hurl"
t1=$(date +%s.%N)
tail -n +"$((m0 + 1))" "$mlog" | nocolor | awk -v name=build -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" '
  /"PUT / { put++ } /"POST / { post++ } /"HEAD / { head++ } /"DELETE / { del++ }
  END { printf "{\"name\":\"%s\",\"result\":{\"seconds\":%s,\"puts\":%d,\"posts\":%d,\"heads\":%d,\"deletes\":%d}}\n", name, s, put, post, head, del }' >>"$out"

B=256
norm=(--mean "123.675,116.28,103.53" --std "58.395,57.12,57.375")
opts=(--rrc 224 --dtype bf16 --layout nchw "${norm[@]}" --device "$device"
  --threads "$threads" --batch "$B" --json --quiet)

# 2. Block order: S3 against plain HTTP, the same objects and proxy.
m_block=$(mark)
bepochs=${BLOCK_EPOCHS:-$epochs}
record s3_block "$gf" bench s3://dsb/ds --order block "${opts[@]}" --epochs "$bepochs"
m_http=$(mark)
record http_block "$gf" bench "$hurl/dsb/ds" --order block "${opts[@]}" --epochs "$bepochs"
record s3_block_nginx env AWS_ENDPOINT_URL_S3="$hurl" "$gf" bench s3://dsb/ds --order block "${opts[@]}" --epochs "$bepochs"
tail -n +"$((m_block + 1))" "$mlog" | head -n "$((m_http - m_block))" | nocolor | awk '
  /"HEAD / { head++; next } /index\.gfi/ { idx++; next } /\.gfs/ { shard++; next } { other++ }
  END { printf "{\"name\":\"s3_block_requests\",\"result\":{\"head\":%d,\"index_gets\":%d,\"shard_gets\":%d,\"other\":%d}}\n", head, idx, shard, other }' >>"$out"

# 3. The folder: gpufeed, the peer, and the store's ceiling, from nginx as
# S3 (see above). Then one epoch from moto itself,
# FOLDER_FETCH reads in flight (default 128): at gpufeed's default 1,024,
# moto (one Python process) queues requests past the 15 s stall limit (seen
# on an H200, 2026-11-28); moto's throughput falls as requests in flight
# rise, which measures moto, not the loader.
m_folder=$(mark)
record s3_folder_moto "$gf" bench s3://imgs "${opts[@]}" --epochs 1 \
  --fetch-requests "${FOLDER_FETCH:-128}"
record s3_folder env AWS_ENDPOINT_URL_S3="$hurl" "$gf" bench s3://imgs "${opts[@]}" --epochs "$epochs"
tail -n +"$((m_folder + 1))" "$mlog" | nocolor | awk '
  /"HEAD / { head++; next } /list-type=2/ { pages++; next } /"GET / { gets++; next } { other++ }
  END { printf "{\"name\":\"s3_folder_requests\",\"result\":{\"head\":%d,\"list_pages\":%d,\"gets\":%d,\"other\":%d}}\n", head, pages, gets, other }' >>"$out"
if [ "$peer" != "-" ] && [ -f "$peer" ]; then
  record peer_s3 "$peer_py" "$peer" "" "$work/jpeg.list" --s3 imgs --endpoint "$hurl" \
    --workers "$threads" --batch "$B" --epochs "$peer_epochs" --size 224
else
  log "peer: skipped (no $peer)"
fi
# The ceiling: CURLS curl processes, 64 transfers in flight each, every
# image once, timed together.
# Signed as gpufeed's are (curl's SigV4, the payload unsigned); the
# images dealt to CURLS config files.
rm -f "$run"/urls.*.cfg
for k in $(seq 0 $((curls - 1))); do
  { echo "user = \"$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY\""
    echo 'aws-sigv4 = "aws:amz:us-east-1:s3"'
    echo 'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"'; } >"$run/urls.$k.cfg"
done
awk -v u="$hurl/imgs/" -v n="$curls" -v d="$run" '{
  f = d "/urls." (NR % n) ".cfg"
  print "url = \"" u $1 "\"" >> f; print "output = \"/dev/null\"" >> f }' "$work/jpeg.list"
t0=$(date +%s.%N)
cpids=()
for f in "$run"/urls.*.cfg; do
  curl -s --no-progress-meter --parallel --parallel-max 64 -K "$f" &
  cpids+=($!)
done
wait "${cpids[@]}" # not a bare wait: the proxies run in the background too
t1=$(date +%s.%N)
echo "{\"name\":\"ceiling\",\"result\":{\"images\":$count,\"seconds\":$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')}}" >>"$out"

"$py" - "$out" "$count" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[r["name"]] = r["result"]
n = int(sys.argv[2])
def ips(name):
    r = rows.get(name)
    if not r:
        return None
    for k in ("images_per_s", "best_img_per_s"):
        if k in r:
            return float(r[k])
    return None
s3b, htb, fold = ips("s3_block"), ips("http_block"), ips("s3_folder")
s3n = ips("s3_block_nginx")
peer = ips("peer_s3")
ceil = n / rows["ceiling"]["seconds"]
print("block order from nginx: S3 %.0f img/s, HTTP %.0f img/s: %.3fx (target 0.90x) [%s]"
      % (s3n, htb, s3n / htb, "met" if s3n >= 0.9 * htb else "MISSED"))
print("block order from moto: S3 %.0f img/s (%.3fx of HTTP from nginx: moto's cost in it)"
      % (s3b, s3b / htb))
print("the store's ceiling (curl, same objects from nginx as S3): %.0f img/s" % ceil)
print("S3 folder from moto: %.0f img/s (moto's own limit)" % (ips("s3_folder_moto") or 0))
if peer:
    bound = "5x the peer" if ceil >= 5 * peer else "0.90x the store's ceiling"
    want = 5 * peer if ceil >= 5 * peer else 0.9 * ceil
    print("S3 folder %.0f img/s, peer %.0f img/s (%.1fx), bound: %s = %.0f img/s [%s]"
          % (fold, peer, fold / peer, bound, want, "met" if fold >= want else "MISSED"))
else:
    print("S3 folder %.0f img/s; %.2fx the store's ceiling (no peer)" % (fold, fold / ceil))
fr = rows.get("s3_folder_requests", {})
print("folder requests, moto's epoch (+ read-ahead): %s" % fr)
print("block-order requests: %s" % rows.get("s3_block_requests"))
print("build into s3://: %s" % rows.get("build"))
EOF
