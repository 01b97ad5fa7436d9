#!/usr/bin/env bash
# An image folder on S3 (moto's server on 127.0.0.1, checking every SigV4
# signature; tests/s3/s3_server.py): a local ImageFolder tree of 1,040
# files (more than one ListObjectsV2 page of 1,000 keys), with what a
# folder's rules leave out (hidden names, a file beside the classes, a
# text file, a class folder holding a built dataset) and a console's empty
# "folder/" marker, is uploaded to a bucket's root. (Under a prefix, the
# listing's query holds a '/', which moto 5.2 signs unencoded where AWS and
# botocore encode it: moto refuses boto3's own such listing when it checks
# signatures. So the same folder under a prefix with a space and a '~' is
# read from a second moto that checks none, at the end.)
#   - `gpufeed build s3://... OUT` and `gpufeed build LOCAL OUT` write the
#     same dataset: the same samples in the same order, labels, classes,
#     source names and bytes (the same rules, whatever the listing's order);
#   - the listing costs its pages (2), no HEAD per object, and the build one
#     GET per image (counted in moto's request log);
#   - `gpufeed bench s3://...` under a transform of fixed size reads no image
#     header first (the plan says so; one GET per image an epoch);
#   - a missing prefix is an error naming it; no output holds the secret.
# Skips (77) without moto and boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start imgs

# The folder: 1,035 images in 7 classes, one nested deeper, and what the
# rules leave out.
"$G" synth "$T/src" --count 1035 --size 8 --classes 7 --quiet || fail "synth"
cp "$T/src/class_000/img_000000.png" "$T/src/.hidden.png"
mkdir -p "$T/src/class_001/.git" "$T/src/class_001/sub"
cp "$T/src/class_000/img_000000.png" "$T/src/class_001/.git/x.png"
cp "$T/src/class_000/img_000007.png" "$T/src/class_001/.dot.png"
cp "$T/src/class_000/img_000014.png" "$T/src/class_001/sub/deep.png"
cp "$T/src/class_000/img_000021.png" "$T/src/beside.png"
echo "not an image" >"$T/src/class_002/readme.txt"
"$G" synth "$T/small" --count 3 --size 8 --classes 1 --quiet || fail "synth small"
"$G" build "$T/small" "$T/src/zz_built" --quiet || fail "build small"
URL="s3://imgs"
"$PY" "$MOTO" upload "$T/src" "$URL" >/dev/null || fail "upload"
"$PY" "$MOTO" put "$URL/class_003/" - || fail "put marker"
n_images=$(find "$T/src" -name '*.png' -not -path '*/.*' -not -path "$T/src/beside.png" | wc -l)

LOG=$T/moto/moto.log
mark() { wc -l <"$LOG"; }
# The log's lines after line $1, without the colours some werkzeug versions
# put around a request line (moto 5.2.5's does, around 206 and HEAD ones).
since() { tail -n +"$(($1 + 1))" "$LOG" | sed 's/\x1b\[[0-9;]*m//g'; }

m0=$(mark)
run 0 build_s3 "$G" build "$URL" "$T/ds_s3" --threads 4 --quiet
run 0 build_local "$G" build "$T/src" "$T/ds_local" --quiet
"$G" inspect "$T/ds_s3" --json --samples 5000 >"$T/s3.json" || fail "inspect s3-built"
"$G" inspect "$T/ds_local" --json --samples 5000 >"$T/local.json" || fail "inspect local-built"
"$PY" - "$T/local.json" "$T/s3.json" "$n_images" <<'PYEOF' || fail "the datasets differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
want = int(sys.argv[3])
for d in (a, b):
    del d["dataset"]
assert a["samples"] == want, ("local", a["samples"], want)
assert a == b, [k for k in a if a[k] != b.get(k)]
names = [r["source"] for r in b["records"]]
assert "class_001/sub/deep.png" in names and not any("/." in n or n.startswith(".") for n in names), names[:5]
assert b["classes"]["names"] == ["class_00%d" % i for i in range(7)], b["classes"]
PYEOF
since "$m0" >"$T/build.log"
pages=$(grep -c '"GET [^ ]*?[^ ]*list-type=2' "$T/build.log")
heads=$(grep -c '"HEAD ' "$T/build.log")
gets=$(grep '"GET ' "$T/build.log" | grep -vc 'list-type=2')
[ "$pages" = 2 ] || fail "the listing took $pages pages, wanted 2 (1,040+ keys)"
[ "$heads" = 0 ] || fail "$heads HEAD requests: the listing's sizes were not used"
[ "$gets" = "$n_images" ] || fail "$gets object GETs for $n_images images"

# The loader straight from the bucket, under a fixed-size transform: the
# headers are not read first; one GET per image an epoch.
m0=$(mark)
run 0 plan "$G" bench "$URL" --device cpu --batch 16 --resize 8x8 --plan
grep -q "no image header read: 1,0[0-9][0-9] samples of a remote folder" "$T/plan.out" ||
  fail "the plan does not say the headers were not read: $(grep sizing "$T/plan.out")"
m0=$(mark)
# The read-ahead at its least (--fetch-bytes rounds up to the batches in
# flight): at the default 256 MiB it may run two epochs ahead of a slow
# consumer before the bench stops (seen in .ci/run).
run 0 bench "$G" bench "$URL" --device cpu --batch 4 --resize 8x8 --epochs 1 --fetch-bytes 1 --json --quiet
since "$m0" >"$T/bench.log"
heads=$(grep -c '"HEAD ' "$T/bench.log")
[ "$heads" = 1 ] || fail "bench: $heads HEADs (wanted 1: the probe for a dataset's index)"
# The read-ahead runs into the next epoch before the bench stops: every
# image asked, none more than twice (its epoch and the next's read-ahead).
grep '"GET ' "$T/bench.log" | grep -v 'list-type=2' | sed 's/.*"GET \([^ ]*\) .*/\1/' |
  sort | uniq -c | awk -v n="$n_images" '$1 > 2 { over++ } END { if (NR != n || over) { print NR " images asked, " over+0 " more than twice"; exit 1 } }' >"$T/gets.txt" ||
  fail "bench: $(cat "$T/gets.txt") (of $n_images)"

# Nothing there: named.
run 1 missing "$G" bench "s3://imgs/nothere" --device cpu --batch 4 --epochs 1
grep -qF "s3://imgs/nothere" "$T/missing.err" || fail "missing: $(cat "$T/missing.err")"
run 1 nobucket "$G" bench "s3://nosuchbucket" --device cpu --batch 4 --epochs 1
grep -qF "NoSuchBucket" "$T/nobucket.err" || fail "no bucket: $(cat "$T/nobucket.err")"

# Under a prefix with a space and a '~' (moto checking no signature).
"$PY" "$MOTO" start "$T/moto2" train --owner $$ --no-auth >"$T/moto2.env" || fail "moto2"
E2=$(sed -n 's/^GF_S3_ENDPOINT=//p' "$T/moto2.env")
GF_S3_ENDPOINT=$E2 "$PY" "$MOTO" upload "$T/src" "s3://train/sets/img folder~1" >/dev/null || fail "upload 2"
run 0 build_prefix env AWS_ENDPOINT_URL_S3="$E2" "$G" build "s3://train/sets/img folder~1" "$T/ds_prefix" --quiet
"$G" inspect "$T/ds_prefix" --json --samples 5000 | sed 1,2d >"$T/prefix.json"
"$G" inspect "$T/ds_local" --json --samples 5000 | sed 1,2d >"$T/local2.json"
cmp -s "$T/prefix.json" "$T/local2.json" || fail "the folder under a prefix gives another dataset"

s3_done
echo "S3 folder: listed in 2 pages, built and read with one GET an image, as a local folder"
