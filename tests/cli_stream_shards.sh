#!/usr/bin/env bash
# The CLI reading WebDataset tar shards in streaming mode (--shard-index
# stream; lib/pipeline/stream.h) from nginx, directly and through the fault
# proxy (tests/net/netproxy). Shards packed by Python's tarfile from a
# synth ImageFolder; sample i carries a field "n" of i+1 bytes, so bench's
# byte total of that field (--fields n) is a checksum of which samples came,
# and a one-worker bench's trace (--threads 1 --trace: decode spans in
# position order, each naming its shard and ordinal) lists them in order:
#   - locally and over HTTP, an epoch holds every sample once, as the
#     indexed mode of the same shards does;
#   - over HTTP, each shard is one GET from its first byte each epoch (and
#     a HEAD), not one a sample (nginx's access log, bench's counters);
#   - a shard's GET cut (FIN), reset or stalled mid-body is resumed from
#     the first byte not yet taken (a ranged GET past 0), a 503 retried,
#     and the epoch still holds every sample once, in the same order;
#   - the order is the seed's: the same seed twice gives the same order,
#     another seed or the next epoch another;
#   - a user:password and a ?token= in the URL are in no output;
#   - a shard that is not there (404 at its HEAD or at its GET) is named,
#     redacted (bench runs under the fail policy: it has no skip option);
#   - streaming mode without a fixed output size is refused, said;
#   - a batch larger than the epoch ends each epoch empty, said;
#   - inspect, verify and build do not read in streaming mode: they refuse,
#     as the shuffle options without it are.
. "$GPUFEED_SOURCE_DIR/tests/cli_lib.sh"
. "$GPUFEED_SOURCE_DIR/tests/net/netlib.sh"
net_init
G=$GPUFEED
PY=${GPUFEED_PYTHON:-python3}
"$PY" -c 'import tarfile' 2>/dev/null || skip "no python3 with tarfile"

# 5 shards of 96 samples. At the end of a run the lanes have read ahead
# into the next epoch (the shuffle buffer's first 100 samples and two for
# each position prefetched, and 65 a lane parsed: fewer than an epoch's
# N), so they may have begun each of its shards, not more.
N=480 PER=96 NS=5
SUM=$((N * (N + 1) / 2)) # the "n" fields' bytes in an epoch
"$G" synth "$T/src" --count $N --sizes 8-20 --classes 3 --quiet || fail "synth"
mkdir -p "$T/root/s"
"$PY" - "$T/src" "$T/root/s" $PER <<'PY' || fail "pack"
import io, os, sys, tarfile
src, out, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
classes = sorted(os.listdir(src))
files = [(c, cls, f) for c, cls in enumerate(classes)
         for f in sorted(os.listdir(os.path.join(src, cls)))]
for s in range(0, len(files), per):
    with tarfile.open(os.path.join(out, "shard-%06d.tar" % (s // per)), "w",
                      format=tarfile.GNU_FORMAT) as t:
        for i, (c, cls, f) in enumerate(files[s:s + per], s):
            key = "%s/%s" % (cls, os.path.splitext(f)[0])
            png = open(os.path.join(src, cls, f), "rb").read()
            for field, payload in (("png", png), ("cls", b"%d" % c),
                                   ("n", b"n" * (i + 1))):
                ti = tarfile.TarInfo("%s.%s" % (key, field))
                ti.size = len(payload)
                t.addfile(ti, io.BytesIO(payload))
PY
LAST=$(printf '%06d' $((NS - 1)))
PAT="$T/root/s/shard-{000000..$LAST}.tar"

# bench SOURCE ARGS...: host mode, batch 4 (N is a multiple), JSON out,
# the "n" fields counted.
bench() {
  local src=$1
  shift
  gf 0 bench "$src" --device cpu --batch 4 --json --channels 3 --rrc 16 \
    --fields n "$@"
}
# The last bench's images (the epochs after the first, or the only one),
# its "n" fields' bytes (every epoch), and its storage requests.
images() { sed -n 's/.*"images":\([0-9]*\).*/\1/p' "$T/out"; }
fbytes() { sed -n 's/.*"fields":{[^}]*"bytes":\([0-9]*\).*/\1/p' "$T/out"; }
requests() { sed -n 's/.*"remote":{[^}]*"requests":\([0-9]*\).*/\1/p' "$T/out"; }
# order TRACE EPOCHS OUT: the samples of the first EPOCHS epochs of a
# one-worker bench's trace (its decode spans by time: the positions in
# order), one "shard ordinal" a line, into OUT; each epoch must hold every
# sample once.
order() {
  "$PY" - "$1" "$2" "$N" "$PER" "$3" <<'PY' || fail "order in $1"
import json, sys
trace, epochs, n, per, out = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5]
ev = json.load(open(trace))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
ids = [e["args"]["sample"] for e in sorted(ev, key=lambda e: e.get("ts", 0))
       if e.get("name") == "decode"]
assert len(ids) >= epochs * n, "%d decodes for %d epochs of %d" % (len(ids), epochs, n)
seq = [(i >> 40, i & ((1 << 40) - 1)) for i in ids[:epochs * n]]
want = {(k // per, k % per) for k in range(n)}
for e in range(epochs):
    got = seq[e * n:(e + 1) * n]
    assert set(got) == want, "epoch %d: %d distinct of %d, %d not in the shards" % (
        e, len(set(got)), n, len(set(got) - want))
open(out, "w").write("".join("%d %d\n" % x for x in seq))
PY
}

# Locally: indexed (gpufeed index writes the sidecars) and streamed, the
# same count and the same samples.
gf 0 index "$PAT" --quiet
bench "$PAT" --epochs 1 --shard-index require
[ "$(images)" = $N ] && [ "$(fbytes)" = $SUM ] || fail "indexed: $(images) images, $(fbytes) field bytes"
bench "$PAT" --epochs 2 --shard-index stream
[ "$(images)" = $N ] && [ "$(fbytes)" = $((2 * SUM)) ] ||
  fail "local stream: $(images) images, $(fbytes) field bytes (wanted $N, $((2 * SUM)))"
# A sample larger than its place: named, with the CLI's option for the
# bound (the library's message names its field).
gf 1 bench "$PAT" --device cpu --batch 4 --epochs 1 --shard-index stream --max-sample 64
has err "larger than the 64 bytes"
has err "--max-sample"
grep -qE "sample [0-9]{10,}" "$T/err" && fail "an internal sample id shown: $(cat "$T/err")"
hasnt err "scanned"

# Over HTTP: one GET a shard an epoch, from its first byte.
net_nginx_start "$T/root"
URL="$GF_NGINX_URL/s/shard-{000000..$LAST}.tar"
E=3
: > "$GF_NGINX_ACCESS_LOG"
bench "$URL" --epochs $E --shard-index stream
[ "$(images)" = $(((E - 1) * N)) ] && [ "$(fbytes)" = $((E * SUM)) ] ||
  fail "http stream: $(images) images, $(fbytes) field bytes (wanted $(((E - 1) * N)), $((E * SUM)))"
gets=$(net_requests "GET /s/shard-" $((NS * E)))
heads=$(net_requests "HEAD /s/shard-")
# Each shard read whole each epoch, and the next epoch's begun at most,
# and each of the 4 lanes' 2 pumps one shard ahead of its parser.
MAXG=$((NS * (E + 1) + 4 * 2))
[ "$gets" -ge $((NS * E)) ] && [ "$gets" -le $MAXG ] ||
  fail "http stream: $gets shard GETs in $E epochs of $NS shards of $PER samples (wanted $((NS * E))-$MAXG)"
for k in $(seq 0 $((NS - 1))); do
  g=$(net_requests "GET /s/shard-$(printf '%06d' "$k").tar")
  [ "$g" -ge $E ] || fail "http stream: shard $k read in $g GETs over $E epochs"
done
# No fault: every GET from the shard's first byte (a resumed one would not be).
mid=$(awk -F'\t' 'index($2, "GET /s/shard-") && $3 !~ /^bytes=0-/' "$GF_NGINX_ACCESS_LOG" | wc -l)
[ "$mid" = 0 ] || fail "http stream: $mid GETs not from a shard's first byte"
# bench's own count: the same requests (GETs and HEADs).
[ "$(requests)" -le $((gets + heads)) ] && [ "$(requests)" -ge $((NS * E)) ] ||
  fail "http stream: bench counted $(requests) requests, nginx $gets GETs and $heads HEADs"
echo "http stream: $gets GETs and $heads HEADs for $E epochs of $NS shards ($N samples)"

# The order: the seed's, whatever the timing (one worker, so its decodes
# are the positions in order).
one=(--epochs 2 --threads 1 --prefetch 1 --shard-index stream)
bench "$URL" "${one[@]}" --seed 7 --trace "$T/a.json"
order "$T/a.json" 2 "$T/a.txt"
bench "$URL" "${one[@]}" --seed 7 --trace "$T/b.json"
order "$T/b.json" 2 "$T/b.txt"
bench "$URL" "${one[@]}" --seed 8 --trace "$T/c.json"
order "$T/c.json" 2 "$T/c.txt"
cmp -s "$T/a.txt" "$T/b.txt" || fail "the same seed, two orders: $(diff "$T/a.txt" "$T/b.txt" | head -4)"
cmp -s "$T/a.txt" "$T/c.txt" && fail "seeds 7 and 8 gave the same order"
head -$N "$T/a.txt" > "$T/a1.txt"
tail -$N "$T/a.txt" > "$T/a2.txt"
cmp -s "$T/a1.txt" "$T/a2.txt" && fail "epochs 1 and 2 in the same order"

# Through the fault proxy: a shard's GET cut, reset or stalled mid-body
# (the shards are about 320K), resumed from the first byte not yet taken;
# every sample still comes once an epoch.
net_proxy_start
PURL="$GF_PROXY_URL/s/shard-{000000..$LAST}.tar"
faults=(
  "truncate after=40000 method=GET path=/s/shard-000002.tar nth=1"
  "reset after=70000 method=GET path=/s/shard-000004.tar nth=1"
  "stall ms=forever after=30000 method=GET path=/s/shard-000001.tar nth=1"
  "status 503 method=GET path=/s/shard-000003.tar nth=1"
)
k=0
for f in "${faults[@]}"; do
  k=$((k + 1))
  net_ctl clear
  net_ctl "add $f"
  : > "$GF_NGINX_ACCESS_LOG"
  bench "$PURL" "${one[@]}" --seed 7 --trace "$T/f$k.json" --stall-ms 1000 --retry-ms 20000
  [ "$(fbytes)" -ge $((2 * SUM)) ] || fail "under '$f': $(fbytes) field bytes"
  order "$T/f$k.json" 2 "$T/f$k.txt"
  # The order is the seed's, fault or not.
  cmp -s "$T/a.txt" "$T/f$k.txt" || fail "under '$f': another order than without it"
  grep -q '"retries":0,' "$T/out" && fail "under '$f': no retry counted"
  case $f in status*) continue ;; esac
  shard=$(sed 's/.*path=\([^ ]*\).*/\1/' <<<"$f")
  resumed=$(awk -F'\t' -v p="GET $shard" 'index($2, p) && $3 ~ /^bytes=[1-9]/' "$GF_NGINX_ACCESS_LOG" | wc -l)
  [ "$resumed" -ge 1 ] || {
    fail "under '$f': no GET of $shard resumed past its first byte"
    grep -F "$shard" "$GF_NGINX_ACCESS_LOG" | cut -f2-5 | sed 's/^/  log| /' >&2
  }
done
# A shard gone between its HEAD and its GET (404): the run fails, naming
# it (the fail policy: bench has no skip policy).
net_ctl clear
net_ctl "add status 404 method=GET path=/s/shard-000003.tar"
gf 1 bench "$PURL" --device cpu --batch 4 --epochs 1 --rrc 16 --shard-index stream
has err "/s/shard-000003.tar"
has err "404"
no_crash
net_ctl clear

# A secret in the URLs: in no output, the run whole.
SURL="http://agent007:PASSW0RD@127.0.0.1:$GF_NGINX_PORT/s/shard-{000000..$LAST}.tar?token=T0KEN"
"$G" bench "$SURL" --device cpu --batch 4 --epochs 1 --json --rrc 16 --shard-index stream >"$T/o" 2>"$T/e" ||
  fail "secret URL: exit $?: $(cat "$T/e")"
grep -q "\"images\":$N," "$T/o" || fail "secret URL: $(cut -c1-200 "$T/o")"
grep -qF "127.0.0.1:$GF_NGINX_PORT/s/shard-" "$T/o" || fail "secret URL: the source not shown: $(cut -c1-200 "$T/o")"
for s in agent007 PASSW0RD T0KEN; do
  grep -qF "$s" "$T/o" "$T/e" && fail "a secret ($s) shown in streaming mode"
done

# A shard not there (404), under the default (fail) policy: named, and
# redacted.
MURL="http://agent007:PASSW0RD@127.0.0.1:$GF_NGINX_PORT/s/shard-{000000..00000$NS}.tar?token=T0KEN"
gf 1 bench "$MURL" --device cpu --batch 4 --epochs 1 --rrc 16 --shard-index stream
has err "127.0.0.1:$GF_NGINX_PORT/s/shard-00000$NS.tar"
has err "404"
for s in agent007 PASSW0RD T0KEN; do
  grep -qF "$s" "$T/out" "$T/err" && fail "a secret ($s) shown in the 404's error"
done
no_crash

# Streaming mode needs a fixed output size: said, with the options.
gf 2 bench "$URL" --device cpu --batch 4 --epochs 1 --shard-index stream
has err "output size"
has err "--max-sample"

# A batch larger than the epoch (bench drops the last partial batch):
# each epoch ends with none, said, not a loop over empty epochs.
timeout 60 "$G" bench "$URL" --device cpu --batch $((N + 1)) --epochs 2 \
  --rrc 16 --shard-index stream >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 1 ] || fail "a batch over the epoch: exit $rc: $(cat "$T/err")"
has err "no batch in 2 epochs"
has err "fewer than the batch size $((N + 1))"

# inspect, verify and build open the shards' headers (an index or a
# scan); they refuse streaming mode, saying what they read instead.
for cmd in inspect verify; do
  gf 2 $cmd "$URL" --shard-index stream
  has err "is for loading"
  has err "scan"
  no_crash
done
gf 2 build "$URL" "$T/built" --shard-index stream --quiet
has err "is for loading"
[ -e "$T/built" ] && fail "build --shard-index stream: left $T/built"
# The stream's shuffle options without streaming mode: refused, named.
gf 2 inspect "$URL" --shuffle-buffer 10
has err "--shuffle-buffer"
no_crash
finish
