#!/usr/bin/env bash
# Uploads to S3 (lib/io/s3_upload.c) against moto's server checking every
# SigV4 signature (tests/s3/s3_server.py): runs test_s3_upload (the C test:
# single PUTs, multipart uploads on 4 threads, two at once, from memory,
# deletes, a cancel mid-way, a wrong secret, a missing bucket), then checks
# with boto3 what it left: every object it names byte for byte, multipart
# ones in the parts it made (ETag "-N"), the deleted, cancelled and refused
# ones absent, and no multipart upload left open in the bucket. No output
# may hold the secret key. Skips (77) without moto and boto3, fails instead
# under GPUFEED_REQUIRE_S3=1.
set -u
T=$GPUFEED_TEST_TMP
PY=${GPUFEED_S3_PYTHON:-python3}
MOTO=$GPUFEED_SOURCE_DIR/tests/s3/s3_server.py
BIN=${GPUFEED_S3_UPLOAD_TEST:-$GPUFEED_BINARY_DIR/tests/test_s3_upload}
rm -rf "$T" && mkdir -p "$T/home"
if ! "$PY" "$MOTO" check; then
  [ "${GPUFEED_REQUIRE_S3:-0}" = 1 ] && { echo "FAIL: GPUFEED_REQUIRE_S3=1 but moto is missing" >&2; exit 1; }
  exit 77
fi
[ -x "$BIN" ] || { echo "FAIL: no test_s3_upload at $BIN" >&2; exit 1; }
cleanup() { "$PY" "$MOTO" stop "$T/moto"; }
trap cleanup EXIT
"$PY" "$MOTO" start "$T/moto" train --owner $$ >/dev/null || { echo "FAIL: moto did not start" >&2; exit 1; }
set -a
. "$T/moto/moto.env"
set +a
SECRET=$AWS_SECRET_ACCESS_KEY
# AWS's conventions only: nothing of this machine's own set-up.
unset AWS_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION AWS_ENDPOINT_URL
export HOME=$T/home AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$GF_S3_ENDPOINT AWS_EC2_METADATA_DISABLED=true

rc=0
GPUFEED_TEST_TMP=$T/c "$BIN" "$T/manifest" >"$T/test.out" 2>"$T/test.err" || rc=$?
cat "$T/test.out"
cat "$T/test.err" >&2
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
[ "$rc" = 0 ] || fail "test_s3_upload exited $rc"
if grep -qF -- "$SECRET" "$T/test.out" "$T/test.err"; then
  fail "an output holds the secret key"
fi

"$PY" - "$T/manifest" <<'PY' || fail "the bucket does not hold what was uploaded"
import os, sys
import boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=os.environ["GF_S3_ENDPOINT"], region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
bad = 0
def fail(msg):
    global bad
    print("FAIL: " + msg, file=sys.stderr)
    bad += 1
want = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
if len(want) < 10:
    fail("the manifest names %d objects: the C test stopped early?" % len(want))
parts = {"up/big.bin": 5, "up/two/c0.bin": 3, "up/two/c1.bin": 3}
for line in want:
    if line[0] == "+":
        key, path = line[1:].split("\t")
        try:
            got = s3.get_object(Bucket="train", Key=key)
        except Exception as e:
            fail("%s: %s" % (key, e))
            continue
        body = got["Body"].read()
        if body != open(path, "rb").read():
            fail("%s: %d bytes, not those of %s" % (key, len(body), path))
        etag = got["ETag"].strip('"')
        n = parts.get(key)
        if n and not etag.endswith("-%d" % n):
            fail("%s: ETag %s, not of a %d-part upload" % (key, etag, n))
        if not n and "-" in etag:
            fail("%s: ETag %s of a multipart upload, not a PUT" % (key, etag))
    else:
        key = line[1:]
        try:
            s3.head_object(Bucket="train", Key=key)
            fail("%s is there" % key)
        except s3.exceptions.ClientError as e:
            if e.response["Error"]["Code"] not in ("404", "NoSuchKey"):
                fail("%s: %s" % (key, e))
open_ = s3.list_multipart_uploads(Bucket="train").get("Uploads", [])
if open_:
    fail("multipart uploads left open: %s" % [(u["Key"], u["UploadId"]) for u in open_])
print("bucket: %d objects checked, no multipart upload open" % len(want))
sys.exit(1 if bad else 0)
PY

[ "$FAILS" = 0 ] || { echo "$FAILS failure(s)" >&2; exit 1; }
echo "S3 uploads: PUTs, multipart in parallel, deletes, cancel and refusals checked against the bucket"
