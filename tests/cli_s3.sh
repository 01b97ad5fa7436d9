#!/usr/bin/env bash
# The CLI reading a built dataset from S3 (moto's server on 127.0.0.1,
# checking every SigV4 signature; tests/s3/s3_server.py): a dataset uploaded
# under a prefix with a space and a '~' (S3's encoding, signed as sent;
# not a '+' nor a non-ASCII letter: moto 5.2 with signatures checked
# refuses boto3's own uploads of such keys, SignatureDoesNotMatch, so
# those are checked against botocore's signer in test_s3_sigv4) is
# inspected, verified (every sample's CRC, read with signed ranged GETs)
# and benched through s3://, found with AWS's conventions (credentials
# and endpoint from the environment, HOME's ~/.aws absent); a wrong secret
# is refused by the store (403 SignatureDoesNotMatch) and said so naming
# the s3:// object; a missing dataset names its index; no output holds the
# secret. Skips (77) without moto and boto3, fails instead under
# GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start train

"$G" synth "$T/src" --count 60 --sizes 8-24 --quiet || fail "synth"
"$G" build "$T/src" "$T/ds" --shard-size 16K --quiet || fail "build"
"$PY" "$MOTO" upload "$T/ds" "s3://train/sets/a b~c/ds" >/dev/null || fail "upload"
URL="s3://train/sets/a b~c/ds"


run 0 inspect "$G" inspect "$URL"
grep -qF "$URL" "$T/inspect.out" || fail "inspect does not name $URL: $(head -2 "$T/inspect.out")"
run 0 inspect_json "$G" inspect "$URL" --json
"$G" inspect "$T/ds" --json >"$T/local.json"
n_local=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$T/local.json")
n_s3=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$T/inspect_json.out")
[ "$n_local" = 60 ] && [ "$n_s3" = "$n_local" ] || fail "samples: local $n_local, s3 $n_s3"
run 0 verify "$G" verify "$URL"
# A web server's bearer token is not S3's business: not sent, not even
# read (one a web server would refuse, a line break in it, changes nothing).
run 0 bearer env GPUFEED_HTTP_BEARER_TOKEN=$'abc\ndef' "$G" inspect "$URL"
run 0 bench "$G" bench "$URL" --device cpu --batch 8 --epochs 2 --json --quiet
# images counts the epochs after the first: 60 samples in batches of 8, the
# last one dropped.
grep -q '"epochs":2,"images":56,' "$T/bench.out" || fail "bench did not deliver its second epoch of 56: $(cut -c1-200 "$T/bench.out")"
grep -q '"io_backend":"fetch' "$T/bench.out" || fail "bench did not read through the fetch stage"

# A wrong secret: the store refuses the signature, said with the object.
run 1 wrong_secret env AWS_SECRET_ACCESS_KEY=not-the-secret "$G" inspect "$URL"
grep -q "HTTP 403" "$T/wrong_secret.err" && grep -qF "$URL/index.gfi" "$T/wrong_secret.err" ||
  fail "wrong secret: $(cat "$T/wrong_secret.err")"
grep -qF "not-the-secret" "$T/wrong_secret.err" && fail "the wrong secret is printed"
# Nothing there: the index named, 404.
run 1 missing "$G" inspect "s3://train/nothere"
grep -qF "s3://train/nothere/index.gfi" "$T/missing.err" && grep -q "HTTP 404" "$T/missing.err" ||
  fail "missing: $(cat "$T/missing.err")"

s3_done
echo "S3: inspect, verify, bench through s3:// with signed requests; refusals named"
