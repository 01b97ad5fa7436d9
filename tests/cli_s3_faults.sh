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
set -u
G=$GPUFEED
T=$GPUFEED_TEST_TMP
PY=${GPUFEED_S3_PYTHON:-python3}
MOTO=$GPUFEED_SOURCE_DIR/tests/s3/s3_server.py
PROXY=${GPUFEED_NETPROXY:-$GPUFEED_BINARY_DIR/tests/netproxy}
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
rm -rf "$T" && mkdir -p "$T/home"
if ! "$PY" "$MOTO" check; then
  [ "${GPUFEED_REQUIRE_S3:-0}" = 1 ] && { echo "FAIL: GPUFEED_REQUIRE_S3=1 but moto is missing" >&2; exit 1; }
  exit 77
fi
[ -x "$PROXY" ] || { echo "FAIL: no netproxy at $PROXY" >&2; exit 1; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  exec 7>&- 2>/dev/null
  "$PY" "$MOTO" stop "$T/moto"
}
trap cleanup EXIT
"$PY" "$MOTO" start "$T/moto" train imgs --owner $$ >/dev/null || { echo "FAIL: moto did not start" >&2; exit 1; }
set -a
. "$T/moto/moto.env"
set +a
SECRET=$AWS_SECRET_ACCESS_KEY
TOKEN="Bearer ecs-$RANDOM-token-$$"
unset AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_ENDPOINT_URL
export HOME=$T/home AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true

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
"$PROXY" --upstream "${GF_S3_ENDPOINT#http://}" --port-file "$T/proxy.env" --control-port 0 \
  --die-with-parent >/dev/null 2>"$T/proxy.err" &
pids+=($!)
for i in $(seq 1 100); do [ -s "$T/proxy.env" ] && break; sleep 0.05; done
PURL=$(sed -n 's/^GF_PROXY_URL=//p' "$T/proxy.env")
CTL=$(sed -n "s/^GF_PROXY_CONTROL_PORT=//p" "$T/proxy.env")
[ -n "$PURL" ] || { echo "FAIL: netproxy did not start: $(cat "$T/proxy.err")" >&2; exit 1; }
export AWS_ENDPOINT_URL_S3=$PURL
ctl() { "$PY" - "$CTL" "$*" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall((sys.argv[2] + "\n").encode())
s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.makefile().read())
PYEOF
}
count() { cat "$T/creds.count" 2>/dev/null || echo 0; }

run() { # WANT NAME CMD...: exit status checked; no secret in any output
  local want=$1 name=$2 rc=0
  shift 2
  "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, wanted $want"; sed 's/^/  | /' "$T/$name.err" | head -20 >&2; }
  if grep -qF -- "$SECRET" "$T/$name.out" "$T/$name.err" || grep -qF -- "${TOKEN#Bearer }" "$T/$name.out" "$T/$name.err"; then
    fail "$name: an output holds the secret key or the endpoint's token"
  fi
}
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

[ "$FAILS" = 0 ] || { echo "$FAILS failure(s)" >&2; exit 1; }
echo "S3 through faults: container credentials refreshed, ExpiredToken retried, 6 faults survived, a dead store named"
