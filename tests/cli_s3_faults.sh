#!/usr/bin/env bash
# S3 through the fault proxy (tests/net/netproxy in front of moto's server
# checking every signature; tests/s3/s3_server.py), with the credentials
# from a container credentials endpoint (tests/s3/ecs_creds.py, on
# 127.0.0.1): the same list of faults as over HTTP, with the same outcome:
# nothing lost (verify checks every sample's CRC), nothing delivered twice
# (bench's count), errors named with the s3:// object and the store's code.
#   - container credentials: used (no key in the environment), fetched again
#     before they expire and when the store answers ExpiredToken (the request
#     then retried); the token and the secret in no output;
#   - SlowDown (503 with S3's XML body), 500 InternalError, resets,
#     truncated bodies, stalls, a store down and back: retried, nothing lost;
#   - a listing page refused once: retried, the folder whole;
#   - a store down for good: the shard named, with the code and the tries.
# Skips (77) without moto and boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start train imgs
unset AWS_ENDPOINT_URL_S3 # set below: the proxy
TOKEN="Bearer ecs-$RANDOM-token-$$"
NO_LEAK=("${TOKEN#Bearer }")

"$G" synth "$T/src" --count 60 --sizes 8-24 --quiet || fail "synth"
"$G" build "$T/src" "$T/ds" --shard-size 16K --quiet || fail "build"
"$PY" "$MOTO" upload "$T/ds" "s3://train/ds" >/dev/null || fail "upload"
"$PY" "$MOTO" upload "$T/src" "s3://imgs" >/dev/null || fail "upload folder"

# The container endpoint: moto's key, expiring in 120 s (inside the 300 s
# before expiry in which credentials are fetched again).
coproc CREDS { exec "$PY" "$GPUFEED_SOURCE_DIR/tests/s3/ecs_creds.py" "$T/creds.port" "$T/creds.count" "$TOKEN" 120; }
exec 7>&"${CREDS[1]}"
pids+=("$CREDS_PID")
for i in $(seq 1 100); do [ -s "$T/creds.port" ] && break; sleep 0.1; done
[ -s "$T/creds.port" ] || { echo "FAIL: the credentials endpoint did not start" >&2; exit 1; }
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
export AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$(cat "$T/creds.port")/creds"
export AWS_CONTAINER_AUTHORIZATION_TOKEN=$TOKEN

# The proxy in front of moto.
s3_proxy
export AWS_ENDPOINT_URL_S3=$PURL
count() { cat "$T/creds.count" 2>/dev/null || echo 0; }

URL=s3://train/ds
FAST=(--max-attempts 8 --retry-ms 30000)
# moto is one Python process: a few reads in flight, or its queue alone
# outlasts a short stall_ms.
FEW=(--fetch-requests 8 --stall-ms 3000)

# Container credentials, fetched again while they are about to expire.
c0=$(count)
run 0 creds env GPUFEED_LOG=info "$G" bench "$URL" --device cpu --batch 8 --epochs 30 --json --quiet
c1=$(count)
[ "$c1" -ge "$((c0 + 2))" ] || fail "credentials fetched $((c1 - c0)) time(s) in a run longer than a second with ones about to expire (wanted 2+)"
grep -q "credentials fetched again" "$T/creds.err" || fail "no log line says the credentials were fetched again"

# ExpiredToken: fresh credentials, then the request again.
ctl "add status 400 s3code=ExpiredToken method=GET path=/train/ds/shard- nth=1" >/dev/null
c0=$(count)
run 0 expired env GPUFEED_LOG=info "$G" verify "$URL" "${FAST[@]}"
[ "$(count)" -gt "$c0" ] || fail "ExpiredToken: no fresh credentials fetched"
grep -q "said the credentials expired" "$T/expired.err" || fail "ExpiredToken: not said: $(cat "$T/expired.err")"
ctl clear >/dev/null

# Faults retried: nothing lost (verify: every CRC), nothing twice (bench).
faults=(
  "status 503 s3code=SlowDown method=GET path=/train/ds/shard- prob=0.15 seed=1"
  "status 500 s3code=InternalError method=GET path=/train/ds/ prob=0.15 seed=2"
  "reset after=100 method=GET path=/train/ds/shard- prob=0.15 seed=3"
  "truncate after=50 method=GET path=/train/ds/shard- prob=0.15 seed=4"
  "stall ms=forever method=GET path=/train/ds/shard- nth=3"
  "status 503 path=/train/ds/ times=4"
)
k=0
for f in "${faults[@]}"; do
  k=$((k + 1))
  ctl clear >/dev/null
  ctl "add $f" >/dev/null
  run 0 "verify_$k" "$G" verify "$URL" "${FAST[@]}" --stall-ms 3000
  grep -q "60 samples" "$T/verify_$k.out" || fail "verify under '$f': $(tail -3 "$T/verify_$k.out")"
  ctl clear >/dev/null
  ctl "add $f" >/dev/null
  run 0 "bench_$k" "$G" bench "$URL" --device cpu --batch 8 --epochs 2 --json --quiet "${FAST[@]}" "${FEW[@]}"
  grep -q '"epochs":2,"images":56,' "$T/bench_$k.out" || fail "bench under '$f' did not deliver 56: $(cut -c1-160 "$T/bench_$k.out")"
done
ctl clear >/dev/null

# A listing page refused once: retried, the folder whole.
ctl "add status 503 s3code=SlowDown path=list-type=2 nth=1" >/dev/null
run 0 folder "$G" bench s3://imgs --device cpu --batch 6 --resize 8x8 --epochs 2 --json --quiet "${FAST[@]}" "${FEW[@]}"
grep -q '"epochs":2,"images":60,' "$T/folder.out" || fail "folder after a refused listing page: $(cut -c1-160 "$T/folder.out")"
ctl clear >/dev/null

# Down for good: the shard named, the store's code, the tries.
ctl "add status 503 s3code=SlowDown method=GET path=/train/ds/shard-" >/dev/null
run 1 down "$G" verify "$URL" --max-attempts 2 --retry-ms 3000
grep -q "60 of 60 samples bad" "$T/down.err" && grep -q "s3://train/ds/shard-000000.gfs: bytes 0-63: HTTP 503 SlowDown" "$T/down.out" &&
  grep -q "2 attempts" "$T/down.out" || fail "down for good: $(head -2 "$T/down.out") $(cat "$T/down.err")"
ctl clear >/dev/null

s3_done
echo "S3 through faults: container credentials refreshed, ExpiredToken retried, 6 faults survived, a dead store named"
