#!/usr/bin/env bash
# The nginx fixture's https (nginx.sh start --tls): a CA and a server
# certificate for 127.0.0.1 and localhost made at start; a client that
# trusts the CA (GF_NGINX_CA) gets the bytes, one that does not fails
# verification. Skips (77) without nginx, curl or openssl unless
# GPUFEED_REQUIRE_HTTP=1.
. "$(dirname "$0")/netlib.sh"
net_init
command -v openssl >/dev/null || net_need "openssl not found (Debian: apt-get install openssl)"

mkdir -p "$T/root"
head -c 300000 /dev/urandom >"$T/root/obj.bin"
net_nginx_start "$T/root" --tls
echo "nginx at $GF_NGINX_URL and $GF_NGINX_TLS_URL (CA $GF_NGINX_CA)"
[ -s "$GF_NGINX_CA" ] || fail "no CA file"
openssl verify -CAfile "$GF_NGINX_CA" "$GF_NGINX_RUNDIR/tls/server.pem" >/dev/null ||
  fail "the server certificate does not verify against the CA"

code=$(curl -sS --cacert "$GF_NGINX_CA" -r 1000-1999 -o "$T/got" -w '%{http_code} %{scheme}' \
  "$GF_NGINX_TLS_URL/obj.bin")
[ "$code" = "206 HTTPS" ] || fail "https with the CA: $code"
tail -c +1001 "$T/root/obj.bin" | head -c 1000 | cmp -s - "$T/got" || fail "https: bytes differ"
code=$(curl -sS --cacert "$GF_NGINX_CA" -o /dev/null -w '%{http_code}' \
  "https://localhost:$GF_NGINX_TLS_PORT/obj.bin")
[ "$code" = 200 ] || fail "https://localhost with the CA: $code"

# Without the CA (only the system's), verification fails: curl's 60.
curl -sS -o /dev/null "$GF_NGINX_TLS_URL/obj.bin" 2>"$T/err"
rc=$?
[ "$rc" = 60 ] || fail "https without the CA: curl exit $rc, wanted 60 ($(cat "$T/err"))"
# A name the certificate does not hold fails too.
curl -sS --cacert "$GF_NGINX_CA" --resolve "other.test:$GF_NGINX_TLS_PORT:127.0.0.1" \
  -o /dev/null "https://other.test:$GF_NGINX_TLS_PORT/obj.bin" 2>"$T/err"
rc=$?
[ "$rc" = 60 ] || fail "https to a name not in the certificate: curl exit $rc, wanted 60"
# Plain http on the same nginx still works.
code=$(curl -sS -o /dev/null -w '%{http_code}' "$GF_NGINX_URL/obj.bin")
[ "$code" = 200 ] || fail "http beside https: $code"
finish
