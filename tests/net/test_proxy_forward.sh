#!/usr/bin/env bash
# netproxy with no rules forwards byte for byte: whole objects, ranges,
# HEAD, errors, many requests on one kept-alive connection, many
# connections at once, to nginx's unix socket and to its TCP port; it
# counts what it carried; and clients that close early, send half a
# request or a head too large for it do not bring it down. Skips (77)
# without nginx or curl unless GPUFEED_REQUIRE_HTTP=1.
. "$(dirname "$0")/netlib.sh"
net_init

mkdir -p "$T/root"
head -c $((16 << 20)) /dev/urandom >"$T/root/big.bin"
head -c 100000 /dev/urandom >"$T/root/obj.bin"
net_nginx_start "$T/root"
net_proxy_start
P=$GF_PROXY_URL
echo "nginx at $GF_NGINX_URL, netproxy at $P (control $GF_PROXY_CONTROL_PORT)"

code=$(curl -sS -o "$T/got" -D "$T/h" -w '%{http_code}' "$P/big.bin")
[ "$code" = 200 ] || fail "GET: $code"
cmp -s "$T/got" "$T/root/big.bin" || fail "GET: the body differs"
direct_etag=$(curl -sS -I "$GF_NGINX_URL/big.bin" | grep -i '^etag')
grep -qiF "$direct_etag" "$T/h" || fail "GET: the ETag differs from nginx's"
code=$(curl -sS -r 5000000-5999999 -o "$T/got" -D "$T/h" -w '%{http_code}' "$P/big.bin")
[ "$code" = 206 ] || fail "range: $code"
grep -qi "^Content-Range: bytes 5000000-5999999/$((16 << 20))" "$T/h" || fail "range: Content-Range"
tail -c +5000001 "$T/root/big.bin" | head -c 1000000 | cmp -s - "$T/got" || fail "range: bytes differ"

# One connection, many requests: HEAD, a 404 page, a 416, ranges.
net_ctl zero
# (curl's -r and -o hold for one --next group each; the groups of one
# curl share its connections.)
w=(-sS -w '%{http_code}\n')
args=()
for i in $(seq 0 9); do
  args+=("${w[@]}" -r "$((i * 10000))-$((i * 10000 + 9999))" -o "$T/part.$i" "$P/obj.bin" --next)
done
curl "${args[@]}" "${w[@]}" -o /dev/null "$P/missing.bin" --next \
  "${w[@]}" -r 200000-200001 -o /dev/null "$P/obj.bin" --next \
  "${w[@]}" -r 0-99999 -o "$T/whole" "$P/obj.bin" >"$T/codes"
cat "$T/part."{0..9} | cmp -s - "$T/root/obj.bin" || fail "keep-alive ranges: bytes differ"
cmp -s "$T/whole" "$T/root/obj.bin" || fail "keep-alive: last range differs"
[ "$(tr '\n' ' ' <"$T/codes")" = "206 206 206 206 206 206 206 206 206 206 404 416 206 " ] ||
  fail "keep-alive: statuses $(tr '\n' ' ' <"$T/codes")"
[ "$(net_stat conns)" = 1 ] || fail "keep-alive: $(net_stat conns) connections, wanted 1"
[ "$(net_stat requests)" = 13 ] || fail "requests: $(net_stat requests), wanted 13"
[ "$(net_stat responses)" = 13 ] || fail "responses: $(net_stat responses), wanted 13"
curl -sS -I "$P/obj.bin" "$P/obj.bin" -o "$T/heads" -o "$T/heads2"
grep -qi '^Content-Length: 100000' "$T/heads2" || fail "HEAD twice on one connection"
[ "$(net_stat conns)" = 2 ] || fail "HEAD: $(net_stat conns) connections, wanted 2"

# Many connections at once: 16 MiB in 64 ranges, 32 at a time.
args=()
for i in $(seq 0 63); do
  [ "$i" = 0 ] || args+=(--next)
  args+=(-sS -r "$((i << 18))-$((((i + 1) << 18) - 1))" -o "$T/p.$i" "$P/big.bin")
done
curl -sS --parallel --parallel-max 32 "${args[@]}" || fail "parallel: curl failed"
for i in $(seq 0 63); do cat "$T/p.$i"; done | cmp -s - "$T/root/big.bin" ||
  fail "parallel ranges: bytes differ"

# Counted bytes: one more whole object, alone.
net_ctl zero
curl -sS -o /dev/null "$P/obj.bin"
down=$(net_stat bytes_down)
hdr=$(curl -sS -D - -o /dev/null "$GF_NGINX_URL/obj.bin" | wc -c)
[ "$down" -ge 100000 ] && [ "$down" -le $((100000 + hdr + 64)) ] ||
  fail "bytes_down $down for a 100000-byte body"

# Clients that go away: mid-body, mid-request, at once; a head too large.
curl -sS "$P/big.bin" 2>/dev/null | head -c 1000 >/dev/null
exec 3<>"/dev/tcp/127.0.0.1/$GF_PROXY_PORT"
printf 'GET /obj.bin HTTP/1.1\r\nHost: x\r\n' >&3
exec 3>&-
exec 3<>"/dev/tcp/127.0.0.1/$GF_PROXY_PORT"
exec 3>&-
curl -sS -o /dev/null -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)" "$P/obj.bin" 2>/dev/null &&
  fail "a 40 kB head was carried (the proxy's limit is 32 KiB)"
code=$(curl -sS -o "$T/got" -w '%{http_code}' "$P/obj.bin")
[ "$code" = 200 ] && cmp -s "$T/got" "$T/root/obj.bin" || fail "after the rude clients: $code"
for i in $(seq 1 40); do
  [ "$(net_stat active)" = 0 ] && break
  sleep 0.05
done
[ "$(net_stat active)" = 0 ] || fail "$(net_stat active) connections still open"

# nginx's TCP port as the upstream (the unix socket is the default).
net_proxy_start --upstream "127.0.0.1:$GF_NGINX_PORT"
code=$(curl -sS -r 1-16777214 -o "$T/got" -w '%{http_code}' "$GF_PROXY_URL/big.bin")
[ "$code" = 206 ] || fail "TCP upstream: $code"
tail -c +2 "$T/root/big.bin" | head -c 16777214 | cmp -s - "$T/got" || fail "TCP upstream: bytes differ"
# An upstream that is not there: the client sees its connection reset.
net_proxy_start --upstream 127.0.0.1:1
curl -sS -o /dev/null "$GF_PROXY_URL/obj.bin" 2>/dev/null && fail "no upstream, yet an answer"
[ "$(net_stat upstream_errors)" -ge 1 ] || fail "upstream_errors not counted"
finish
