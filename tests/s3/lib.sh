# Sourced by the CLI's S3 tests (tests/cli_s3*.sh): moto's server on
# 127.0.0.1 (tests/s3/s3_server.py, checking every SigV4 signature), the
# fault proxy in front of it, and the checks every such test makes.
#
#   s3_init                 G T PY MOTO FAILS, fail(); a fresh $T; exits 77
#                           without moto and boto3 (1 under
#                           GPUFEED_REQUIRE_S3=1)
#   s3_start BUCKET...      moto at $T/moto with those buckets; its key in
#                           the environment (SECRET: the secret, which no
#                           output may hold) and AWS's conventions only:
#                           HOME=$T/home, AWS_REGION, AWS_ENDPOINT_URL_S3
#   s3_proxy [ARGS...]      netproxy in front of it (PURL, CTL; -v logs to
#                           $T/proxy.err); AWS_ENDPOINT_URL_S3 is left alone
#   ctl COMMAND...          a command to the proxy's control port
#   run WANT NAME CMD...    CMD's exit status must be WANT; its outputs in
#                           $T/NAME.out and .err, none holding SECRET (nor
#                           any word of NO_LEAK)
#   s3_done                 the verdict: exit 1 after any fail
# Processes started go into pids (killed on exit), moto is stopped.
set -u
G=$GPUFEED
T=$GPUFEED_TEST_TMP
PY=${GPUFEED_S3_PYTHON:-python3}
MOTO=$GPUFEED_SOURCE_DIR/tests/s3/s3_server.py
PROXY=${GPUFEED_NETPROXY:-$GPUFEED_BINARY_DIR/tests/netproxy}
FAILS=0
NO_LEAK=()
pids=()
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

s3_init() {
  rm -rf "$T" && mkdir -p "$T/home"
  if ! "$PY" "$MOTO" check; then
    [ "${GPUFEED_REQUIRE_S3:-0}" = 1 ] && { echo "FAIL: GPUFEED_REQUIRE_S3=1 but moto is missing" >&2; exit 1; }
    exit 77
  fi
  trap s3_cleanup EXIT
}

s3_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for d in "$T"/moto*; do [ -d "$d" ] && "$PY" "$MOTO" stop "$d"; done
  return 0
}

s3_start() {
  "$PY" "$MOTO" start "$T/moto" "$@" --owner $$ >/dev/null || { echo "FAIL: moto did not start" >&2; exit 1; }
  set -a
  . "$T/moto/moto.env"
  set +a
  SECRET=$AWS_SECRET_ACCESS_KEY
  # AWS's conventions only: nothing of this machine's own set-up.
  unset AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_ENDPOINT_URL
  export HOME=$T/home AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$GF_S3_ENDPOINT AWS_EC2_METADATA_DISABLED=true
}

s3_proxy() {
  [ -x "$PROXY" ] || { echo "FAIL: no netproxy at $PROXY" >&2; exit 1; }
  rm -f "$T/proxy.env"
  "$PROXY" --upstream "${GF_S3_ENDPOINT#http://}" --port-file "$T/proxy.env" --control-port 0 \
    --die-with-parent "$@" >/dev/null 2>"$T/proxy.err" &
  pids+=($!)
  for i in $(seq 1 100); do [ -s "$T/proxy.env" ] && break; sleep 0.05; done
  PURL=$(sed -n 's/^GF_PROXY_URL=//p' "$T/proxy.env")
  CTL=$(sed -n "s/^GF_PROXY_CONTROL_PORT=//p" "$T/proxy.env")
  [ -n "$PURL" ] || { echo "FAIL: netproxy did not start: $(cat "$T/proxy.err")" >&2; exit 1; }
}

ctl() { "$PY" - "$CTL" "$*" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall((sys.argv[2] + "\n").encode())
s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.makefile().read())
PYEOF
}

run() {
  local want=$1 name=$2 rc=0
  shift 2
  "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ "$rc" = "$want" ] || { fail "$name: exit $rc, wanted $want"; sed 's/^/  | /' "$T/$name.err" | head -20 >&2; }
  local s
  for s in "$SECRET" "${NO_LEAK[@]}"; do
    if grep -qF -- "$s" "$T/$name.out" "$T/$name.err"; then
      fail "$name: an output holds a secret"
    fi
  done
}

s3_done() {
  [ "$FAILS" = 0 ] || { echo "$FAILS failure(s)" >&2; exit 1; }
  exit 0
}
