#!/usr/bin/env bash
# netproxy's latency: --latency D (or `latency D` on the control port)
# holds every chunk D/2 in each direction, so one request costs D more; a
# `delay` rule does the same for the requests it matches; and a large
# download under latency still streams (bounded buffers, not one buffer
# a round trip). Times are the best of three, against the same request
# through the proxy without latency. Skips (77) without nginx or curl
# unless GPUFEED_REQUIRE_HTTP=1.
. "$(dirname "$0")/netlib.sh"
net_init

mkdir -p "$T/root"
head -c 1000 /dev/urandom >"$T/root/a.bin"
head -c 1000 /dev/urandom >"$T/root/slow.bin"
head -c $((16 << 20)) /dev/urandom >"$T/root/big.bin"
net_nginx_start "$T/root"
net_proxy_start
P=$GF_PROXY_URL

# best CURL-ARGS...: the shortest of 3 runs of curl, in ms.
best() {
  local i t0 t b=""
  for i in 1 2 3; do
    t0=$(date +%s%N)
    curl -sS -o /dev/null "$@" || fail "curl $*"
    t=$((($(date +%s%N) - t0) / 1000000))
    if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
  done
  echo "$b"
}

# within WHAT GOT WANT: GOT is within [0.9 WANT - 20, WANT + 150] ms (a
# difference of two times, each noisy by a few ms).
within() {
  if [ "$2" -lt $(($3 * 9 / 10 - 20)) ] || [ "$2" -gt $(($3 + 150)) ]; then
    fail "$1: ${2} ms, wanted about $3"
  else
    echo "$1: ${2} ms (wanted about $3)"
  fi
}

D=300
base=$(best "$P/a.bin")
net_ctl latency $D
slow=$(best "$P/a.bin")
within "one request, latency $D" $((slow - base)) $D
# Two requests on one connection: each pays the round trip.
base2=$(best "$P/a.bin" --next -sS -o /dev/null "$P/a.bin")
within "two requests on one connection, latency $D" $((base2 - base)) $((2 * D))
net_ctl latency 0
back=$(best "$P/a.bin")
within "latency back to 0" $((back - base)) 0

# A delay rule: only what it matches.
net_ctl add delay 200 path=/slow
s=$(best "$P/slow.bin")
a=$(best "$P/a.bin")
within "delay 200 on /slow" $((s - base)) 200
within "no delay on /a" $((a - base)) 0
[ "$(net_stat delay)" = 3 ] || fail "delay fired $(net_stat delay) times, wanted 3"
net_ctl clear

# A proxy started with --latency; 16 MiB under 20 ms still streams: one
# 64 KiB buffer a round trip would take 5 s.
net_proxy_start --latency 20
t=$(curl -sS -o "$T/got" -w '%{time_total}' "$GF_PROXY_URL/big.bin")
cmp -s "$T/got" "$T/root/big.bin" || fail "under latency: bytes differ"
ms=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
echo "16 MiB under 20 ms latency: $ms ms"
[ "$ms" -lt 2500 ] || fail "16 MiB under 20 ms latency took $ms ms"
finish
