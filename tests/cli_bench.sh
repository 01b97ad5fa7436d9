#!/usr/bin/env bash
# gpufeed bench, host mode: a small smoke run over a dataset and a PNG
# folder; checks the report's fields (not speed) and usage errors.
set -euo pipefail
gf=${GPUFEED:?}
tmp=${GPUFEED_TEST_TMP:?}
rm -rf "$tmp"; mkdir -p "$tmp"
"$gf" synth "$tmp/png" --count 120 --size 32x40 --classes 3 --quiet
"$gf" build "$tmp/png" "$tmp/ds" --quiet
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$gf" bench "$tmp/ds" --device cpu --batch 16 --epochs 2 --threads 2 --json --quiet)
for key in '"mode":"host"' '"threads":2' '"batch":16' '"epochs":2' '"images":112' \
           '"images_per_s":' '"gb_per_s":' '"busy_pct":{"read":' '"decode":' \
           '"queue_occupancy":' '"consumer_stall_pct":' '"cpu_cores_used":' \
           '"rss_bytes":' '"device_pool_peak_bytes":' '"io_backend":"' '"bottleneck":"' \
           '"first_batch_ms":' '"epoch_images_per_s":['; do
  grep -qF "$key" <<<"$out" || fail "bench --json lacks $key: $out"
done
# 120 images, batch 16, drop_last: 7 batches (112 images) an epoch.
grep -qF '"images":112' <<<"$out" || fail "steady-state image count"

# The table names the bottleneck and the stall, and the cache when used.
table=$("$gf" bench "$tmp/png" --device cpu --batch 16 --epochs 2 --cache 16M --quiet)
for key in "throughput" "stage busy" "queue occupancy" "consumer stall" \
           "CPU cores used" "host memory" "cache " "bottleneck"; do
  grep -qF "$key" <<<"$table" || fail "bench table lacks '$key': $table"
done

# The memory plan: printed without running, device side included.
plan=$("$gf" bench "$tmp/ds" --plan --batch 16 --dtype f16 --size 8x8 --threads 2)
for key in "pinned staging slots" "read buffers" "device  batch slots" "device  total"; do
  grep -qF "$key" <<<"$plan" || fail "plan lacks '$key': $plan"
done

# pread backend forced: reported as such.
out=$("$gf" bench "$tmp/ds" --device cpu --io pread --batch 16 --epochs 1 --json --quiet)
grep -qF '"io_backend":"pread"' <<<"$out" || fail "io pread not reported: $out"

# Usage errors exit 2; a missing source exits 1 naming it.
set +e
"$gf" bench >/dev/null 2>&1; [ $? -eq 2 ] || fail "no source: want exit 2"
"$gf" bench "$tmp/ds" --dtype f64 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad dtype: want 2"
msg=$("$gf" bench "$tmp/nope" --device cpu 2>&1); rc=$?
set -e
[ $rc -eq 1 ] || fail "missing source: want exit 1, got $rc"
grep -qF "$tmp/nope" <<<"$msg" || fail "missing source not named: $msg"
echo "bench smoke: ok"
