#!/usr/bin/env bash
# The CLI reading WebDataset tar shards from S3 (moto's server on
# 127.0.0.1, checking every SigV4 signature): shards packed by Python's
# tarfile, uploaded with their DALI-format indexes, benched by brace
# pattern over s3:// with the indexes required (one index GET a shard, the
# samples by signed ranged GETs of their extents), and
# scanned without them; a missing index is named by its s3:// location;
# no output holds the secret. Skips (77) without moto and boto3, fails
# instead under GPUFEED_REQUIRE_S3=1.
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
s3_done
