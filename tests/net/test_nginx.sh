#!/usr/bin/env bash
# The nginx fixture (tests/net/nginx.sh): it serves a folder read-only over
# HTTP/1.1 and h2c, honours Range (206 with Content-Range, 416 past the
# end), keeps connections alive, logs each request with its Range header,
# status and bytes, and leaves nothing running when stopped or when its
# owner dies. Skips (77) without nginx or curl unless GPUFEED_REQUIRE_HTTP=1.
. "$(dirname "$0")/netlib.sh"
net_init

mkdir -p "$T/root/sub"
head -c 1048576 /dev/urandom >"$T/root/obj.bin"
echo hello >"$T/root/sub/a.txt"
net_nginx_start "$T/root" --h2c
U=$GF_NGINX_URL
echo "nginx at $U (h2c $GF_NGINX_H2C_URL)"

# The whole object.
code=$(curl -sS -o "$T/got" -D "$T/h" -w '%{http_code} %{http_version}' "$U/obj.bin")
[ "$code" = "200 1.1" ] || fail "GET: $code, wanted 200 over HTTP/1.1"
cmp -s "$T/got" "$T/root/obj.bin" || fail "GET: the body differs"
grep -qi '^ETag: "' "$T/h" || fail "GET: no ETag"
grep -qi '^Accept-Ranges: bytes' "$T/h" || fail "GET: no Accept-Ranges"
etag=$(sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' "$T/h" | tr -d '\r')

# Ranges: 206, Content-Range, exactly those bytes.
code=$(curl -sS -r 100-199 -o "$T/got" -D "$T/h" -w '%{http_code}' "$U/obj.bin")
[ "$code" = 206 ] || fail "range: $code, wanted 206"
grep -qi '^Content-Range: bytes 100-199/1048576' "$T/h" || fail "range: Content-Range"
tail -c +101 "$T/root/obj.bin" | head -c 100 | cmp -s - "$T/got" || fail "range: the bytes differ"
code=$(curl -sS -r 1048000- -o "$T/got" -w '%{http_code} %{size_download}' "$U/obj.bin")
[ "$code" = "206 576" ] || fail "open range: $code"
code=$(curl -sS -r -10 -o "$T/got" -w '%{http_code} %{size_download}' "$U/obj.bin")
[ "$code" = "206 10" ] || fail "suffix range: $code"
code=$(curl -sS -r 2000000-2000010 -o /dev/null -w '%{http_code}' "$U/obj.bin")
[ "$code" = 416 ] || fail "range past the end: $code, wanted 416"

# HEAD, a missing object, a subfolder, and no writes.
curl -sS -I -o "$T/h" "$U/obj.bin"
grep -qi '^Content-Length: 1048576' "$T/h" || fail "HEAD: Content-Length"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$U/nope.bin")
[ "$code" = 404 ] || fail "missing object: $code"
[ "$(curl -sS "$U/sub/a.txt")" = hello ] || fail "sub/a.txt"
code=$(curl -sS -X PUT --data x -o /dev/null -w '%{http_code}' "$U/obj.bin")
[ "$code" = 403 ] || fail "PUT: $code, wanted 403"
code=$(curl -sS -X DELETE -o /dev/null -w '%{http_code}' "$U/obj.bin")
[ "$code" = 403 ] || fail "DELETE: $code, wanted 403"
cmp -s "$T/got" "$T/got" && [ -s "$T/root/obj.bin" ] || fail "the object was changed"

# Keep-alive: three requests of one curl share a connection, numbered
# 1, 2, 3 on it in the access log.
curl -sS -r 0-0 -o /dev/null "$U/obj.bin?k=1" -r 0-0 -o /dev/null "$U/obj.bin?k=2" \
  -r 5-9 -o /dev/null "$U/obj.bin?k=3"
[ "$(net_requests 'obj.bin?k=' 3)" = 3 ] || fail "keep-alive: 3 log lines wanted"
awk -F'\t' 'index($2, "obj.bin?k=") { print $7, $8 }' "$GF_NGINX_ACCESS_LOG" >"$T/kc"
[ "$(cut -d' ' -f1 "$T/kc" | sort -u | wc -l)" = 1 ] || fail "keep-alive: more than one connection"
[ "$(cut -d' ' -f2 "$T/kc" | tr '\n' ' ')" = "1 2 3 " ] || fail "keep-alive: requests $(cat "$T/kc")"

# The access log: request line, Range header, status, body bytes.
line=$(awk -F'\t' 'index($2, "obj.bin?k=3")' "$GF_NGINX_ACCESS_LOG")
IFS=$'\t' read -r _ req range status body _ <<<"$line"
[ "$req" = "GET /obj.bin?k=3 HTTP/1.1" ] || fail "log: request line '$req'"
[ "$range" = "bytes=5-9" ] || fail "log: range '$range'"
[ "$status" = 206 ] || fail "log: status '$status'"
[ "$body" = 5 ] || fail "log: body bytes '$body'"
line=$(awk -F'\t' '$2 == "GET /sub/a.txt HTTP/1.1"' "$GF_NGINX_ACCESS_LOG")
IFS=$'\t' read -r _ _ range _ <<<"$line"
[ "$range" = "-" ] || fail "log: an absent Range header is '$range', wanted -"

# HTTP/2 cleartext (prior knowledge).
code=$(curl -sS --http2-prior-knowledge -r 10-19 -o "$T/got" -w '%{http_code} %{http_version}' \
  "$GF_NGINX_H2C_URL/obj.bin")
[ "$code" = "206 2" ] || fail "h2c: $code, wanted 206 over HTTP/2"
tail -c +11 "$T/root/obj.bin" | head -c 10 | cmp -s - "$T/got" || fail "h2c: bytes differ"

# A changed object gets a new ETag (what the proxy's etag rule imitates).
touch -d '2001-01-01' "$T/root/obj.bin"
etag2=$(curl -sS -I "$U/obj.bin" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p' | tr -d '\r')
[ -n "$etag2" ] && [ "$etag2" != "$etag" ] || fail "ETag after a change: '$etag2' (was $etag)"

# A second nginx at the same time gets other ports; stopping one leaves
# the other serving, and nothing of it running.
first=("$GF_NGINX_PORT" "$GF_NGINX_H2C_PORT" "$GF_NGINX_PID" "$GF_NGINX_RUNDIR")
net_nginx_start "$T/root"
[ "$GF_NGINX_PORT" != "${first[0]}" ] && [ "$GF_NGINX_PORT" != "${first[1]}" ] ||
  fail "two nginx on one port"
bash "$NET_DIR/nginx.sh" stop "${first[3]}" || fail "stop"
alive=$(ps -e -o pgid=,stat= | awk -v g="${first[2]}" '$1 == g && $2 !~ /^Z/' | wc -l)
[ "$alive" = 0 ] || fail "stop left $alive process(es) of nginx ${first[2]}"
curl -s -o /dev/null "http://127.0.0.1:${first[0]}/obj.bin" && fail "a stopped nginx answered"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$GF_NGINX_URL/sub/a.txt")
[ "$code" = 200 ] || fail "the other nginx: $code"

# The watchdog: an nginx whose owner exits is stopped within seconds.
mkdir -p "$T/wd"
bash -c 'bash "$1" start "$2" "$3" --owner $$ >"$3.env"' _ "$NET_DIR/nginx.sh" "$T/root" "$T/wd/run" ||
  fail "start with --owner"
wpid=$(sed -n 's/^GF_NGINX_PID=//p' "$T/wd/run.env")
for i in $(seq 1 100); do
  n=$(ps -e -o pgid=,stat= | awk -v g="$wpid" '$1 == g && $2 !~ /^Z/' | wc -l)
  [ "$n" = 0 ] && break
  sleep 0.1
done
[ "$n" = 0 ] || { fail "the watchdog did not stop nginx $wpid"; bash "$NET_DIR/nginx.sh" stop "$T/wd/run"; }
finish
