# Helpers for the network tests written in bash; sourced, not a test of its
# own. Exit statuses: 0 pass, 1 fail, 77 skip.
#
#   . "$GPUFEED_SOURCE_DIR/tests/net/netlib.sh"
#   net_init                      # scratch folder $T; skips (77) without
#                                 # nginx or curl, fails instead under
#                                 # GPUFEED_REQUIRE_HTTP=1
#   net_nginx_start ROOT [--tls] [--h2c]   # sets GF_NGINX_* (tests/net/nginx.sh)
#   net_proxy_start [netproxy options]     # in front of that nginx; sets GF_PROXY_*
#   net_ctl COMMAND...            # a control command; its reply in $NET_REPLY
#   net_stat NAME                 # one counter of `stats`
#   net_requests TEXT             # access-log lines whose request line has TEXT
#   fail MESSAGE / skip MESSAGE / finish
#
# Everything started is stopped when the script exits, however it exits;
# the proxy must then exit 0 with no sanitizer report, or the test fails.
set -u
NET_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NETPROXY=${GPUFEED_NETPROXY:-${GPUFEED_BINARY_DIR:-}/tests/netproxy}
FAILS=0
NET_RUNS=()
NET_PROXY_PIDS=()
NET_PROXY_ERRS=()
NET_REPLY=""

fail() {
  echo "FAIL: $*" >&2
  FAILS=$((FAILS + 1))
}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# net_need WHY: skip, or fail when GPUFEED_REQUIRE_HTTP=1 (CI must run
# every network test).
net_need() {
  if [ "${GPUFEED_REQUIRE_HTTP:-0}" = 1 ]; then
    echo "FAIL: GPUFEED_REQUIRE_HTTP=1 but $*" >&2
    exit 1
  fi
  skip "$*"
}

net_cleanup() {
  local i
  for i in "${!NET_PROXY_PIDS[@]}"; do
    net_proxy_reap "${NET_PROXY_PIDS[$i]}" "${NET_PROXY_ERRS[$i]}"
  done
  NET_PROXY_PIDS=()
  for i in "${NET_RUNS[@]}"; do
    bash "$NET_DIR/nginx.sh" stop "$i" || fail "nginx in $i did not stop"
  done
  NET_RUNS=()
}

net_exit() {
  local rc=$?
  net_cleanup
  if [ "$rc" = 0 ] && [ "$FAILS" -ne 0 ]; then
    exit 1
  fi
  exit "$rc"
}

net_init() {
  T=${GPUFEED_TEST_TMP:-}
  if [ -z "$T" ]; then
    T=$(mktemp -d -t gfnet.XXXXXX)
  fi
  rm -rf "$T"
  mkdir -p "$T"
  local why
  why=$(bash "$NET_DIR/nginx.sh" check) || net_need "$why"
  command -v curl >/dev/null || net_need "curl not found (Debian: apt-get install curl)"
  trap net_exit EXIT
  trap 'exit 1' INT TERM
}

# net_nginx_start ROOT [nginx.sh options]: a fresh nginx in $T/nginx-N.
net_nginx_start() {
  local root=$1 run="$T/nginx-${#NET_RUNS[@]}" env
  shift
  NET_RUNS+=("$run")
  env=$(bash "$NET_DIR/nginx.sh" start "$root" "$run" --owner $$ "$@") ||
    { fail "nginx did not start"; exit 1; }
  eval "$env"
}

# net_proxy_start [options]: a netproxy in front of the last nginx started
# (its unix socket unless an --upstream is given).
net_proxy_start() {
  [ -x "$NETPROXY" ] || { fail "netproxy not found at $NETPROXY"; exit 1; }
  local n=${#NET_PROXY_PIDS[@]} up=()
  case " $* " in
    *" --upstream "*) ;;
    *) up=(--upstream "unix:$GF_NGINX_SOCK") ;;
  esac
  local pf="$T/proxy-$n.env" err="$T/proxy-$n.err"
  rm -f "$pf"
  "$NETPROXY" "${up[@]}" --port-file "$pf" --die-with-parent "$@" \
    >/dev/null 2>"$err" &
  local pid=$! i
  NET_PROXY_PIDS+=("$pid")
  NET_PROXY_ERRS+=("$err")
  for i in $(seq 1 200); do
    [ -s "$pf" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ ! -s "$pf" ]; then
    cat "$err" >&2
    fail "netproxy did not start"
    exit 1
  fi
  eval "$(cat "$pf")"
}

# Stops a proxy (quit on its control port, TERM if that fails) and checks
# how it ended.
net_proxy_reap() {
  local pid=$1 err=$2 i rc
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    fail "netproxy $pid did not exit on SIGTERM"
  fi
  wait "$pid" 2>/dev/null
  rc=$?
  [ "$rc" = 0 ] || fail "netproxy $pid exited with $rc"
  if grep -qE 'Sanitizer|runtime error|AddressSanitizer|LeakSanitizer' "$err"; then
    fail "netproxy $pid: sanitizer report"
    sed 's/^/  netproxy| /' "$err" >&2
  fi
}

# net_ctl COMMAND...: sends it to the last proxy started; fails the test on
# an error reply.
net_ctl() {
  NET_REPLY=$("$NETPROXY" ctl "$GF_PROXY_CONTROL_PORT" "$@") ||
    fail "netproxy ctl $*: $NET_REPLY"
}

net_stat() {
  local r
  r=$("$NETPROXY" ctl "$GF_PROXY_CONTROL_PORT" stats) || return 1
  tr ' ' '\n' <<<"$r" | sed -n "s/^$1=//p"
}

# Lines of the last nginx's access log whose request line (field 2)
# contains TEXT. nginx writes a line once the response is sent, so a
# client can be a moment ahead: it waits up to a second for `want`.
net_requests() {
  local text=$1 want=${2:-} n i
  for i in $(seq 1 20); do
    n=$(awk -F'\t' -v t="$text" 'index($2, t) { n++ } END { print n + 0 }' \
      "$GF_NGINX_ACCESS_LOG")
    if [ -z "$want" ] || [ "$n" -ge "$want" ]; then
      break
    fi
    sleep 0.05
  done
  echo "$n"
}

finish() {
  net_cleanup
  if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed" >&2
    exit 1
  fi
  echo "PASS"
  exit 0
}
