#!/usr/bin/env bash
# netproxy's throughput against nginx's own (the network tests' fault and
# latency proxy must not be what limits a benchmark; docs/TESTING.md).
# Ranged GETs of one large file over the loopback, PARALLEL at a time, by
# one curl (libcurl's multi interface: one thread, kept-alive connections,
# as gpufeed's fetch stage will be), alternately straight to nginx and
# through netproxy with no rule and no latency, in the same run. Each
# round measures both (ABBA order across rounds), so every proxied figure
# has a direct one beside it; the summary gives the medians and the median
# of the rounds' ratios. Target: proxied >= 0.95x direct.
#
#   bash bench/netproxy_bench.sh BUILD [WORK]
#
# BUILD: a build folder holding tests/netproxy. WORK: a scratch folder for
# the file (made once and reused; default /tmp/gfnetbench). nginx, curl
# and bc must be installed (Debian: nginx-light curl bc).
#
# Environment:
#   SIZE_MB=1024   the file
#   RANGE_MB=8     one GET
#   PARALLEL=64    transfers (and connections) at once
#   PASSES=4       times the whole file is read in one measurement
#   ROUNDS=5       measurements of each target
#   TCP=1          also through netproxy to nginx's TCP port (it reaches
#                  nginx through a unix socket by default: the second
#                  loopback TCP hop costs about as much CPU as nginx
#                  itself, see docs/TESTING.md)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: bench/netproxy_bench.sh BUILD [WORK]}
work=${2:-/tmp/gfnetbench}
SIZE_MB=${SIZE_MB:-1024}
RANGE_MB=${RANGE_MB:-8}
PARALLEL=${PARALLEL:-64}
PASSES=${PASSES:-4}
ROUNDS=${ROUNDS:-5}
TCP=${TCP:-1}
WORKERS=${WORKERS:-1}
proxy_bin=$build/tests/netproxy
[ -x "$proxy_bin" ] || { echo "no $proxy_bin: build the tests first" >&2; exit 1; }
for c in curl bc; do
  command -v $c >/dev/null || { echo "$c not found" >&2; exit 1; }
done
why=$(bash "$here/tests/net/nginx.sh" check) || { echo "$why" >&2; exit 1; }

mkdir -p "$work/root"
file=$work/root/big.bin
bytes=$((SIZE_MB << 20))
if [ "$(stat -c %s "$file" 2>/dev/null || echo 0)" != "$bytes" ]; then
  echo "making $file ($SIZE_MB MiB)"
  head -c "$bytes" /dev/urandom >"$file.tmp"
  mv "$file.tmp" "$file"
fi
cat "$file" >/dev/null # into the page cache

run=$work/run
rm -rf "$run"
mkdir -p "$run"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  bash "$here/tests/net/nginx.sh" stop "$run/nginx" || true
}
trap cleanup EXIT
eval "$(bash "$here/tests/net/nginx.sh" start "$work/root" "$run/nginx" --owner $$)"

declare -A url
url[direct]=$GF_NGINX_URL
start_proxy() { # NAME UPSTREAM: url[NAME]; not in a subshell (it would
  # be the proxy's parent, and the proxy dies with its parent)
  "$proxy_bin" --upstream "$2" --port-file "$run/$1.env" --die-with-parent \
    >/dev/null 2>"$run/$1.err" &
  pids+=($!)
  local i
  for i in $(seq 1 100); do
    [ -s "$run/$1.env" ] && break
    sleep 0.05
  done
  url[$1]=$(sed -n 's/^GF_PROXY_URL=//p' "$run/$1.env")
}
targets=(direct proxy)
start_proxy proxy "unix:$GF_NGINX_SOCK"
if [ "$TCP" = 1 ]; then
  targets+=(proxy_tcp)
  start_proxy proxy_tcp "127.0.0.1:$GF_NGINX_PORT"
fi

# One curl config a target: PASSES x (SIZE_MB / RANGE_MB) ranged GETs.
n=$((SIZE_MB / RANGE_MB))
total=$((PASSES * n * (RANGE_MB << 20)))
for t in "${targets[@]}"; do
  for p in $(seq 1 "$PASSES"); do
    for i in $(seq 0 $((n - 1))); do
      s=$((i * (RANGE_MB << 20)))
      [ "$p$i" = 10 ] || echo next
      printf 'url = "%s/big.bin"\nrange = "%d-%d"\noutput = "/dev/null"\n' \
        "${url[$t]}" "$s" $((s + (RANGE_MB << 20) - 1))
      printf 'silent\nshow-error\nwrite-out = "%%{http_code} %%{size_download}\\n"\n'
    done
  done >"$run/$t.cfg"
done

# measure TARGET: MB/s (10^6 bytes) of one run; fails on a short read.
measure() {
  local t0 t1 got
  t0=$(date +%s.%N)
  # (curl 7.88 draws its --parallel meter despite -s: stderr to a file.)
  curl -s --parallel --parallel-max "$PARALLEL" -K "$run/$1.cfg" >"$run/$1.out" \
    2>"$run/$1.curl" || true
  t1=$(date +%s.%N)
  got=$(awk '$1 == 206 { s += $2 } END { printf "%.0f", s }' "$run/$1.out")
  if [ "$got" != "$total" ]; then
    grep -v '^DL%\|^--' "$run/$1.curl" | tr '\r' '\n' | grep . | tail -5 >&2
    echo "$1: got $got bytes of $total" >&2
    exit 1
  fi
  echo "$total / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.0f'
}

echo "netproxy_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r)"
echo "  $(. /etc/os-release && echo "$PRETTY_NAME"), $(nginx -v 2>&1 | cut -d' ' -f3), $(curl -V | head -1 | cut -d' ' -f1-2)"
echo "  $SIZE_MB MiB file, $RANGE_MB MiB ranges, $PARALLEL at once, $PASSES passes a run ($((total >> 20)) MiB), $ROUNDS rounds"
echo "  load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
measure direct >/dev/null # warm-up: connections, page cache
declare -A res
ratios=()
ratios_tcp=()
printf '%-6s %12s %12s %7s' round "direct MB/s" "proxy MB/s" ratio
[ "$TCP" = 1 ] && printf ' %16s %7s' "proxy->tcp MB/s" ratio
echo
for r in $(seq 1 "$ROUNDS"); do
  order=("${targets[@]}")
  if [ $((r % 2)) = 0 ]; then # ABBA: the later slot is not always the proxy's
    order=()
    for ((i = ${#targets[@]} - 1; i >= 0; i--)); do order+=("${targets[$i]}"); done
  fi
  for t in "${order[@]}"; do res[$t,$r]=$(measure "$t"); done
  ratio=$(echo "${res[proxy,$r]} / ${res[direct,$r]}" | bc -l)
  ratios+=("$ratio")
  printf '%-6s %12s %12s %7.3f' "$r" "${res[direct,$r]}" "${res[proxy,$r]}" "$ratio"
  if [ "$TCP" = 1 ]; then
    rt=$(echo "${res[proxy_tcp,$r]} / ${res[direct,$r]}" | bc -l)
    ratios_tcp+=("$rt")
    printf ' %16s %7.3f' "${res[proxy_tcp,$r]}" "$rt"
  fi
  echo
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { local t=$1 r; for r in $(seq 1 "$ROUNDS"); do echo "${res[$t,$r]}"; done; }
md=$(median $(col direct))
mp=$(median $(col proxy))
mr=$(median "${ratios[@]}")
printf '%-6s %12.0f %12.0f %7.3f' median "$md" "$mp" "$mr"
[ "$TCP" = 1 ] && printf ' %16.0f %7.3f' "$(median $(col proxy_tcp))" "$(median "${ratios_tcp[@]}")"
echo
if [ "$(echo "$mr >= 0.95" | bc -l)" = 1 ]; then
  echo "proxy / direct (median of the rounds' ratios): $(printf '%.3f' "$mr") [met >= 0.95]"
else
  echo "proxy / direct (median of the rounds' ratios): $(printf '%.3f' "$mr") [MISSED >= 0.95]"
fi
echo "  load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in proxy proxy_tcp; do
  if [ -s "$run/$t.err" ]; then
    echo "netproxy ($t) stderr:" >&2
    cat "$run/$t.err" >&2
  fi
done
