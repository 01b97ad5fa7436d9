#!/usr/bin/env bash
# gpufeed bench --trace, host mode: the trace file is written with the
# Trace Event shape, the report names the autotune choice and the trace,
# and a bad trace path fails with exit 1.
set -euo pipefail
gf=${GPUFEED:?}
tmp=${GPUFEED_TEST_TMP:?}
rm -rf "$tmp"; mkdir -p "$tmp"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$gf" synth "$tmp/png" --count 64 --size 16x20 --classes 2 --quiet
"$gf" build "$tmp/png" "$tmp/ds" --quiet

out=$("$gf" bench "$tmp/ds" --device cpu --batch 16 --trace "$tmp/t.json" --epochs 1 --json --quiet)
[ -s "$tmp/t.json" ] || fail "no trace file written"
head -c 16 "$tmp/t.json" | grep -qF '{"traceEvents":[' || fail "trace does not start with traceEvents"
for key in '"name":"decode"' '"name":"read"' '"name":"next"' '"name":"finalize"' \
           '"args":{"name":"consumer"}' '"args":{"name":"worker 0"}' '"ph":"X"'; do
  grep -qF "$key" "$tmp/t.json" || fail "trace lacks $key"
done
tail -c 3 "$tmp/t.json" | grep -qF '}' || fail "trace not closed"
for key in '"autotune":"' '"trace":{"file":' '"dropped":0' '"prefetch":'; do
  grep -qF "$key" <<<"$out" || fail "bench --json lacks $key: $out"
done
# Autotune names the threads and the RAM budget; given values are kept.
grep -qE '"autotune":"[0-9]+ threads \([0-9]+ cores' <<<"$out" || fail "autotune reason: $out"
out=$("$gf" bench "$tmp/ds" --device cpu --batch 16 --threads 2 --prefetch 3 --epochs 1 --json --quiet)
grep -qF '"autotune":"2 threads, prefetch 3 (as configured)"' <<<"$out" || fail "configured: $out"
grep -qF '"trace":' <<<"$out" && fail "trace reported without --trace: $out"

# The table names it too; a tiny buffer reports drops.
table=$("$gf" bench "$tmp/ds" --device cpu --batch 16 --epochs 1 --trace "$tmp/t2.json" --trace-events 3 --quiet)
grep -qF "autotune" <<<"$table" || fail "table lacks autotune: $table"
grep -qE "trace .*: 3 events, [0-9]+ dropped" <<<"$table" || fail "table lacks trace drops: $table"

# A trace file that cannot be created: exit 1, the path named.
set +e
msg=$("$gf" bench "$tmp/ds" --device cpu --batch 16 --epochs 1 --trace "$tmp/nope/t.json" --quiet 2>&1); rc=$?
"$gf" bench "$tmp/ds" --trace >/dev/null 2>&1; rc2=$?
set -e
[ $rc -eq 1 ] || fail "bad trace path: want exit 1, got $rc"
grep -qF "$tmp/nope/t.json" <<<"$msg" || fail "bad trace path not named: $msg"
[ $rc2 -eq 2 ] || fail "--trace without a value: want exit 2, got $rc2"
echo ok
