#!/usr/bin/env bash
# gf_object_stream over S3 (tests/test_storage_stream.c's s3 mode) from
# moto's server checking every SigV4 signature, through the fault proxy:
# the whole object in one signed GET, a body cut inside resumed by a try
# signed anew, a sink that stops and a stream that goes on from there, a
# NoSuchKey named; no output holds the secret. Skips (77) without moto and
# boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
BIN=${GPUFEED_STREAM_TEST:-$GPUFEED_BINARY_DIR/tests/test_storage_stream}
s3_init
s3_start train
mkdir -p "$T/up"
# OBJ_SIZE of the C test.
head -c 3150049 /dev/urandom >"$T/up/obj.bin"
"$PY" "$MOTO" upload "$T/up" "s3://train/st" >/dev/null || fail "upload"
s3_proxy
run 0 stream env AWS_ENDPOINT_URL_S3="$PURL" GF_PROXY_CONTROL_PORT="$CTL" \
  GPUFEED_TEST_TMP="$T/c" "$BIN" s3 "$T/up/obj.bin" s3://train/st
s3_done
