#!/usr/bin/env bash
# The CLI reading WebDataset tar shards from S3 (moto's server on
# 127.0.0.1, checking every SigV4 signature): shards packed by Python's
# tarfile, uploaded with their DALI-format indexes, benched by brace
# pattern over s3:// with the indexes required (one index GET a shard, the
# samples by signed ranged GETs of their extents), and
# scanned without them; a missing index is named by its s3:// location;
# in streaming mode (--shard-index stream; shards without indexes), each
# shard one signed GET from its first byte an epoch, a GET cut mid-body
# resumed where it stopped, every sample once an epoch in the seed's order
# (a one-worker bench's trace); no output holds the secret. Skips (77)
# without moto and boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start train

"$G" synth "$T/src" --count 30 --sizes 8-24 --classes 3 --quiet || fail "synth"
"$PY" "$GPUFEED_SOURCE_DIR/tests/wds/pack_shards.py" "$T/src" "$T/s" 8 >/dev/null || fail "pack"
"$PY" "$MOTO" upload "$T/s" "s3://train/wds" >/dev/null || fail "upload"
URL="s3://train/wds/shard-{000000..000003}.tar"
images() { sed -n 's/.*"images": *\([0-9]*\).*/\1/p' "$T/$1.out" | head -1; }

s3_proxy -v
run 0 indexed env AWS_ENDPOINT_URL_S3="$PURL" "$G" bench "$URL" --device cpu --batch 3 --epochs 1 --json --rrc 16 --shard-index require
[ "$(images indexed)" = 30 ] || fail "indexed: $(images indexed) images"
# Through the proxy: the indexes were read there.
grep -q 'shard-000003\.idx' "$T/proxy.err" || fail "indexed: no index read through the proxy: $(tail -5 "$T/proxy.err")"
run 0 scanned "$G" bench "$URL" --device cpu --batch 3 --epochs 1 --json --rrc 16 --shard-index scan
[ "$(images scanned)" = 30 ] || fail "scanned: $(images scanned) images"
grep -q "scanned over the network" "$T/scanned.err" || fail "scanned: no warning"
"$PY" -c '
import boto3
boto3.client("s3").delete_object(Bucket="train", Key="wds/shard-000002.idx")' || fail "rm index"
run 1 missing "$G" bench "$URL" --device cpu --shard-index require
grep -qF "s3://train/wds/shard-000002.idx" "$T/missing.err" || fail "missing: $(cat "$T/missing.err")"

# Streaming mode: 4 shards of 120 samples, no indexes. More samples than
# the lanes read ahead at the end of a run (the shuffle buffer's first
# 100, two a position prefetched, 65 a lane parsed), so at most the next
# epoch's shards are begun.
N=480
"$G" synth "$T/src2" --count $N --sizes 8-16 --classes 3 --quiet || fail "synth 2"
"$PY" "$GPUFEED_SOURCE_DIR/tests/wds/pack_shards.py" "$T/src2" "$T/st" 120 --no-index >/dev/null ||
  fail "pack 2"
"$PY" "$MOTO" upload "$T/st" "s3://train/st" >/dev/null || fail "upload 2"
SURL="s3://train/st/shard-{000000..000003}.tar"
# One worker: its decodes (the trace's spans by time) are the positions in
# order.
STREAM=(--device cpu --batch 4 --epochs 2 --json --rrc 16 --shard-index stream --threads 1 --prefetch 1 --seed 3)
# order NAME: the samples of the two epochs of run NAME's trace into
# $T/NAME.order, each epoch holding every sample once.
order() {
  "$PY" - "$T/$1.json" $N "$T/$1.order" <<'PY' || fail "$1: the samples"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
n = int(sys.argv[2])
ids = [e["args"]["sample"] for e in sorted(ev, key=lambda e: e.get("ts", 0))
       if e.get("name") == "decode"][:2 * n]
assert len(ids) == 2 * n, "%d decodes" % len(ids)
for e in (0, 1):
    assert len(set(ids[e * n:(e + 1) * n])) == n, "epoch %d: %d distinct" % (
        e, len(set(ids[e * n:(e + 1) * n])))
open(sys.argv[3], "w").write("".join("%d\n" % i for i in ids))
PY
}
# The proxy's log lines since line $1 of GETs of the streamed shards.
gets_since() { tail -n +"$(($1 + 1))" "$T/proxy.err" | grep 'GET /train/st/shard-[0-9]*\.tar'; }
from=$(wc -l < "$T/proxy.err")
run 0 stream env AWS_ENDPOINT_URL_S3="$PURL" "$G" bench "$SURL" "${STREAM[@]}" --trace "$T/stream.json"
[ "$(images stream)" = $N ] || fail "stream: $(images stream) images"
order stream
gets=$(gets_since "$from" | wc -l)
from0=$(gets_since "$from" | grep -c 'range=bytes=0-')
# 2 epochs of 4 shards, the next epoch's begun at most, and each of the 4
# lanes' 2 pumps one shard ahead of its parser.
[ "$gets" -ge 8 ] && [ "$gets" -le $((12 + 4 * 2)) ] && [ "$from0" = "$gets" ] ||
  fail "stream: $gets shard GETs ($from0 from byte 0) in 2 epochs of 4 shards: $(gets_since "$from" | head -3)"
# A GET cut (FIN) mid-body: resumed from the first byte not taken; the
# same samples in the same order.
ctl "add truncate after=30000 method=GET path=/train/st/shard-000001.tar nth=1" >/dev/null
from=$(wc -l < "$T/proxy.err")
run 0 cut env AWS_ENDPOINT_URL_S3="$PURL" "$G" bench "$SURL" "${STREAM[@]}" --trace "$T/cut.json" --retry-ms 20000
ctl clear >/dev/null
[ "$(images cut)" = $N ] || fail "cut: $(images cut) images"
order cut
cmp -s "$T/stream.order" "$T/cut.order" || fail "cut: another order than without the cut"
gets_since "$from" | grep -q 'shard-000001\.tar range=bytes=[1-9]' ||
  fail "cut: no GET resumed past byte 0: $(gets_since "$from" | grep shard-000001)"
s3_done
