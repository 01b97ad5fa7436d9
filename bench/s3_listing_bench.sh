#!/usr/bin/env bash
# An image folder of a million keys in a bucket: how long gpufeed takes to
# list it and make the loader, and the memory it holds, against a store
# made for it (tests/s3/listing_server.py: ListObjectsV2 pages of 1,000
# keys generated on the fly, continuation tokens, every object the same
# 256x256 JPEG; anonymous requests), on the loopback.
#
#   bash bench/s3_listing_bench.sh BIN [KEYS] [CLASSES]
#
# BIN: a build folder holding gpufeed. KEYS (default 1000000) files in
# CLASSES (default 1000) class folders. Prints the bench's JSON line (its
# create_ms holds the listing), the process's peak RSS (GNU time) and the
# server's count of listing pages.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: bench/s3_listing_bench.sh BIN [KEYS] [CLASSES]}" && pwd)
keys=${2:-1000000} classes=${3:-1000}
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'kill $srv 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin/gpufeed" synth "$work/img" --format jpeg --count 1 --size 256 --quiet
"$py" "$here/tests/s3/listing_server.py" "$work/port" "$keys" "$classes" \
  "$(find "$work/img" -name '*.jpg' | head -1)" 2>"$work/server.log" &
srv=$!
for i in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$work/port")
echo "## $(nproc) cores; $keys keys in $classes classes at $url" >&2
/usr/bin/time -v "$bin/gpufeed" bench s3://big --endpoint-url "$url" --no-sign-request \
  --rrc 224 --device cpu --batch 256 --batches 2 --fetch-requests 64 --epochs 1 --json --quiet \
  2>"$work/time.txt" | tail -1
grep -E "Maximum resident|Elapsed" "$work/time.txt" >&2
grep -c "list-type=2" "$work/server.log" | sed 's/^/listing pages served: /' >&2
