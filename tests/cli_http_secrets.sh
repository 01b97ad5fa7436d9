#!/usr/bin/env bash
# The CLI reading a dataset over HTTP with secrets in its URL (user:password
# and ?token=) and a bearer token in GPUFEED_HTTP_BEARER_TOKEN: inspect,
# verify and bench (text, --json, --trace, GPUFEED_LOG=debug) succeed and
# name the source without its secrets; then through netproxy, runs that
# fail (503 on every shard, 403 on the index, a refused connection) say
# which URL, range, status and attempts, and no output of any run, stdout
# or stderr or the trace, holds a secret.
. "$GPUFEED_SOURCE_DIR/tests/net/netlib.sh"
net_init
G=$GPUFEED

"$G" synth "$T/src" --count 40 --sizes 8-24 --quiet || fail "synth"
mkdir -p "$T/root"
"$G" build "$T/src" "$T/root/ds" --shard-size 8K --quiet || fail "build"
net_nginx_start "$T/root"
net_proxy_start

export GPUFEED_HTTP_BEARER_TOKEN=B3ARERSECRET
SECRETS=(agent007 PASSW0RD T0KEN B3ARERSECRET)
secret_url() { echo "http://agent007:PASSW0RD@127.0.0.1:$1/ds?token=T0KEN&x=1"; }
shown="http://127.0.0.1:$GF_PROXY_PORT/ds"
URL=$(secret_url "$GF_PROXY_PORT")

n=0
# run WANT_RC NAME CMD...: runs CMD, its stdout and stderr kept in $T/NAME.*;
# checks its exit status and that no output holds a secret.
run() {
  local want=$1 name=$2 rc=0
  shift 2
  "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, wanted $want"; cat "$T/$name.err" >&2; }
  local f s
  for f in "$T/$name.out" "$T/$name.err" "$T"/*.trace; do
    [ -f "$f" ] || continue
    for s in "${SECRETS[@]}"; do
      if grep -qF -- "$s" "$f"; then
        fail "$name: $(basename "$f") holds the secret $s:"
        sed 's/^/  | /' "$f" | head -20 >&2
      fi
    done
  done
  n=$((n + 1))
}

# Runs that succeed.
run 0 inspect "$G" inspect "$URL"
grep -qF "dataset    $shown" "$T/inspect.out" || fail "inspect names $(head -1 "$T/inspect.out")"
run 0 inspect_json "$G" inspect "$URL" --json
grep -qF "\"dataset\": \"$shown\"" "$T/inspect_json.out" || fail "inspect --json: $(head -3 "$T/inspect_json.out")"
run 0 verify "$G" verify "$URL"
run 0 bench env GPUFEED_LOG=debug "$G" bench "$URL" --device cpu --batch 8 --epochs 2 --trace "$T/bench.trace"
grep -qF "gpufeed bench: $shown" "$T/bench.out" || fail "bench names $(head -1 "$T/bench.out")"
grep -qF "io fetch (http)" "$T/bench.out" || fail "bench did not read with the http engine: $(grep mode "$T/bench.out")"
[ -s "$T/bench.trace" ] || fail "no trace written"
# The fetch stage's reads in the trace, each with its samples and epoch
# (2 epochs were asked: reads of epoch 0 and of epoch 1).
grep -q '"name":"fetch",.*"args":{"samples":[1-9][0-9]*,"epoch":0}' "$T/bench.trace" || fail "no fetch read of epoch 0 in the trace"
grep -q '"name":"fetch",.*"args":{"samples":[1-9][0-9]*,"epoch":1}' "$T/bench.trace" || fail "no fetch read of epoch 1 in the trace"
run 0 bench_json "$G" bench "$URL" --device cpu --batch 8 --epochs 1 --json
grep -qF "{\"source\":\"$shown\"" "$T/bench_json.out" || fail "bench --json: $(cut -c1-120 "$T/bench_json.out")"

# Runs that fail. Every GET of a shard: 503.
net_ctl add status 503 method=GET path=/ds/shard-
run 1 verify_503 env GPUFEED_LOG=debug "$G" verify "$URL"
# The shards are opened on first use: the samples are listed bad (stdout),
# each with why; the error line (stderr) counts them.
cat "$T/verify_503.out" "$T/verify_503.err" >"$T/verify_503.all"
grep -qF "$shown/shard-" "$T/verify_503.all" && grep -q "HTTP 503" "$T/verify_503.all" &&
  grep -q "5 attempts" "$T/verify_503.all" && grep -q "bytes [0-9]*-[0-9]*" "$T/verify_503.all" &&
  grep -q "samples bad" "$T/verify_503.err" ||
  fail "verify's error does not name the URL, range, status and attempts: $(cat "$T/verify_503.all")"
run 1 bench_503 env GPUFEED_LOG=debug "$G" bench "$URL" --device cpu --batch 8 --epochs 1 --json
grep -q "HTTP 503" "$T/bench_503.err" || fail "bench: $(cat "$T/bench_503.err")"
# The index: 403.
net_ctl clear
net_ctl add status 403 path=/ds/index.gfi
run 1 inspect_403 "$G" inspect "$URL"
grep -qF "$shown/index.gfi" "$T/inspect_403.err" && grep -q "HTTP 403" "$T/inspect_403.err" ||
  fail "inspect's error: $(cat "$T/inspect_403.err")"
run 1 bench_403 "$G" bench "$URL" --device cpu
# A refused connection (nothing listens there any more).
net_ctl clear
net_ctl kill
run 1 bench_refused "$G" bench "$URL" --device cpu
grep -q "cannot connect" "$T/bench_refused.err" || fail "bench, refused: $(cat "$T/bench_refused.err")"
net_ctl resume
# A URL the storage refuses: its error names it without the secrets.
run 1 bad_url "$G" inspect "http://agent007:PASSW0RD@127.0.0.1:0/ds?token=T0KEN"
grep -q "port" "$T/bad_url.err" || fail "bad URL: $(cat "$T/bad_url.err")"

echo "$n runs, no secret in any output"
finish
