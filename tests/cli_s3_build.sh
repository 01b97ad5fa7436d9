#!/usr/bin/env bash
# `gpufeed build SRC s3://bucket/prefix` against moto's server checking
# every signature, through the fault proxy (its -v log: every request):
#   - a dataset of many shards: each object PUT once (no byte sent twice),
#     the index last, after every shard; verify reads it back whole; the
#     staging folder (TMPDIR) held a few shards at a time, not the dataset,
#     and is gone after;
#   - large shards: multipart uploads (their ETags "-N"), verified;
#   - a dataset there already: refused without --force, untouched; --force
#     with fewer shards: the old index removed first, the extra shards last;
#   - a store that refuses a shard (403 AccessDenied), or one part of a
#     multipart upload: the build fails naming the s3:// object and the
#     code; no index, no shard left, no multipart upload open;
#   - SIGINT mid-upload: exit 130, the same clean bucket;
#   - no output holds the secret key.
# Skips (77) without moto and boto3, fails instead under GPUFEED_REQUIRE_S3=1.
. "$GPUFEED_SOURCE_DIR/tests/s3/lib.sh"
s3_init
s3_start train out
s3_proxy -v
export AWS_ENDPOINT_URL_S3=$PURL TMPDIR=$T/tmp
mkdir -p "$TMPDIR"
LOG=$T/proxy.err
lines() { wc -l <"$LOG"; }
since() { tail -n "+$(($1 + 1))" "$LOG"; }
objects() { "$PY" "$MOTO" ls "$1"; }
open_uploads() { "$PY" "$MOTO" uploads "$1" | wc -l; }

"$G" synth "$T/src" --count 300 --size 32 --classes 3 --quiet || fail "synth"
"$G" synth "$T/small" --count 40 --size 32 --classes 2 --quiet || fail "synth small"
"$G" synth "$T/big" --count 30 --size 512 --classes 2 --quiet || fail "synth big"

# Many shards, the staging folder watched while they go.
m0=$(lines)
ctl "add delay 40 method=PUT" >/dev/null
( while :; do n=$(find "$TMPDIR" -name 'shard-*.gfs' 2>/dev/null | wc -l); echo "$n"; sleep 0.02; done ) >"$T/staged.txt" &
watch=$!
run 0 build "$G" build "$T/src" s3://train/ds --shard-size 20K
kill "$watch"
ctl clear >/dev/null
since "$m0" >"$T/build.log"
n=$(sed -n 's/.* in \([0-9]*\) shards and the index.*/\1/p' "$T/build.out")
[ "${n:-0}" -ge 20 ] || fail "build: $n shards (wanted 20+): $(cat "$T/build.out")"
most=$(sort -n "$T/staged.txt" | tail -1)
[ "${most:-99}" -le 10 ] || fail "the staging folder held $most shards at once (wanted at most 10 of $n)"
[ "$(find "$TMPDIR" -mindepth 1 | wc -l)" = 0 ] || fail "the staging folder is left: $(ls -R "$TMPDIR")"
puts=$(grep -c ': PUT /train/ds/' "$T/build.log")
[ "$puts" = $((n + 1)) ] || fail "build: $puts PUTs for $n shards and the index (each once)"
dup=$(grep -o ': PUT /train/ds/[^ ]*' "$T/build.log" | sort | uniq -d)
[ -z "$dup" ] || fail "build: objects sent twice: $dup"
last=$(grep ': PUT /train/ds/' "$T/build.log" | tail -1)
case $last in *index.gfi*) ;; *) fail "the index was not the last object: $last" ;; esac
[ "$(objects s3://train/ds/ | wc -l)" = $((n + 1)) ] || fail "the bucket holds $(objects s3://train/ds/ | wc -l) objects under ds/"
run 0 verify "$G" verify s3://train/ds
grep -q "all 300 samples OK" "$T/verify.out" || fail "verify: $(cat "$T/verify.out" "$T/verify.err")"

# Large shards: multipart uploads (16 MiB parts), each part sent once.
m0=$(lines)
run 0 big "$G" build "$T/big" s3://train/big --codec raw --shard-size 20M
objects s3://train/big/ | grep -q 'shard-000000.gfs [0-9]* "[0-9a-f]*-2"' ||
  fail "big: shard 0 is not a 2-part multipart upload: $(objects s3://train/big/)"
since "$m0" | grep -o ': PUT /train/big/shard-000000.gfs?[^ ]*' | sed 's/uploadId=[^&]*//' | sort >"$T/parts.txt"
[ "$(grep -c partNumber "$T/parts.txt")" = 2 ] && [ -z "$(uniq -d "$T/parts.txt")" ] ||
  fail "big: shard 0's parts not sent once each: $(cat "$T/parts.txt")"
run 0 verify_big "$G" verify s3://train/big
grep -q "all 30 samples OK" "$T/verify_big.out" || fail "verify big: $(cat "$T/verify_big.out")"

# A dataset there already.
before=$(objects s3://train/ds/index.gfi)
run 1 again "$G" build "$T/small" s3://train/ds --shard-size 20K
grep -q "already holds a dataset.*--force" "$T/again.err" || fail "no --force hint: $(cat "$T/again.err")"
[ "$(objects s3://train/ds/index.gfi)" = "$before" ] || fail "the refused build changed the index"
# --force with fewer shards (at a bucket's root: moto lists a prefix with
# a '/' under signatures wrongly, tests/s3/s3_server.py says).
run 0 root "$G" build "$T/src" s3://out --shard-size 20K --quiet
m0=$(lines)
run 0 force "$G" build "$T/small" s3://out --shard-size 20K --force --quiet
since "$m0" >"$T/force.log"
first=$(grep -m1 -E ': (PUT|DELETE) /out/' "$T/force.log")
case $first in *"DELETE /out/index.gfi"*) ;; *) fail "--force: the old index was not removed first: $first" ;; esac
k=$(objects s3://out | grep -c 'shard-')
[ "$(objects s3://out | wc -l)" = $((k + 1)) ] && [ "$k" -ge 2 ] && [ "$k" -lt "$n" ] ||
  fail "--force: the bucket holds $(objects s3://out | wc -l) objects: $(objects s3://out | cut -d' ' -f1 | tr '\n' ' ')"
run 0 verify_force "$G" verify s3://out
grep -q "all 40 samples OK" "$T/verify_force.out" || fail "verify --force: $(cat "$T/verify_force.out")"

# Refusals: a shard, then one part of a multipart upload.
check_clean() { # NAME PREFIX
  [ "$(objects "s3://train/$2/" | wc -l)" = 0 ] || fail "$1: left in the bucket: $(objects "s3://train/$2/" | cut -d' ' -f1 | tr '\n' ' ')"
  [ "$(open_uploads s3://train)" = 0 ] || fail "$1: multipart uploads left open: $("$PY" "$MOTO" uploads s3://train)"
}
ctl "add status 403 s3code=AccessDenied method=PUT path=/train/deny/shard-000005.gfs" >/dev/null
run 1 deny "$G" build "$T/src" s3://train/deny --shard-size 20K
ctl clear >/dev/null
grep -q "s3://train/deny/shard-000005.gfs" "$T/deny.err" && grep -q "AccessDenied" "$T/deny.err" ||
  fail "deny: the shard and the code not named: $(cat "$T/deny.err")"
grep -q "removed the [0-9]* shards this build had uploaded" "$T/deny.err" || fail "deny: the roll-back not said: $(cat "$T/deny.err")"
check_clean deny deny
ctl "add status 403 s3code=AccessDenied method=PUT path=partNumber=2" >/dev/null
run 1 deny_part "$G" build "$T/big" s3://train/denypart --codec raw --shard-size 20M
ctl clear >/dev/null
grep -q "s3://train/denypart/shard-000000.gfs" "$T/deny_part.err" && grep -q "part 2 of 2" "$T/deny_part.err" ||
  fail "deny part: not named: $(cat "$T/deny_part.err")"
grep -q "DELETE /train/denypart/shard-000000.gfs?uploadId=" "$LOG" || fail "deny part: no AbortMultipartUpload sent"
check_clean "deny part" denypart

# Interrupted: SIGINT once a shard is in. The replies are held back (the
# PUTs reach the store at once): uploads cut after the store took them
# are removed too.
ctl "add stall ms=300 method=PUT" >/dev/null
"$G" build "$T/src" s3://train/int --shard-size 20K >"$T/int.out" 2>"$T/int.err" &
b=$!
for i in $(seq 1 200); do objects s3://train/int/ | grep -q shard- && break; sleep 0.1; done
kill -INT "$b"
rc=0
wait "$b" || rc=$?
ctl clear >/dev/null
[ "$rc" = 130 ] || fail "SIGINT: exit $rc, wanted 130: $(cat "$T/int.err")"
grep -q "interrupted by SIGINT; no index was written to s3://train/int" "$T/int.err" || fail "SIGINT: not said: $(cat "$T/int.err")"
check_clean SIGINT int
grep -qF -- "$SECRET" "$T/int.out" "$T/int.err" && fail "SIGINT: an output holds the secret"
[ "$(find "$TMPDIR" -mindepth 1 | wc -l)" = 0 ] || fail "SIGINT: the staging folder is left"
s3_done
