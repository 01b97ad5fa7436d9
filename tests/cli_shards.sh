#!/usr/bin/env bash
# The CLI reading WebDataset tar shards (docs/SHARDS.md): shards packed by
# Python's tarfile from a synth ImageFolder, with DALI-format indexes
# written beside them by that script; bench reads them by brace pattern,
# "::" list and list file, locally (indexed and scanned) and over HTTP from
# nginx (indexed: ranged reads only, no whole-shard GET; scanned: a warning
# says the shards were read through); inspect and verify over them; the
# builder both ways (folder -> shards -> dataset equals folder -> dataset);
# --shard-index require names a
# missing index; a compressed shard and a stale index are named; a secret
# in the shards' URLs appears in no output.
. "$GPUFEED_SOURCE_DIR/tests/cli_lib.sh"
. "$GPUFEED_SOURCE_DIR/tests/net/netlib.sh"
net_init
G=$GPUFEED
PY=${GPUFEED_PYTHON:-python3}
"$PY" -c 'import tarfile' 2>/dev/null || skip "no python3 with tarfile"

"$G" synth "$T/src" --count 48 --sizes 16-40 --classes 3 --quiet || fail "synth"
mkdir -p "$T/root"
"$PY" "$GPUFEED_SOURCE_DIR/tests/wds/pack_shards.py" "$T/src" "$T/root/s" 10 \
  > "$T/samples.txt" || fail "pack_shards"
[ "$(wc -l < "$T/samples.txt")" = 48 ] || fail "pack_shards: $(wc -l < "$T/samples.txt") samples"
ls "$T/root/s"/shard-00000[0-4].idx > /dev/null || fail "no indexes written"

PAT="$T/root/s/shard-{000000..000004}.tar"
# bench N SOURCE ARGS...: one epoch of batch 4, host mode, JSON out.
bench() {
  local src=$1
  shift
  gf 0 bench "$src" --device cpu --batch 4 --epochs 1 --json --channels 3 "$@"
}
images() { sed -n 's/.*"images": *\([0-9]*\).*/\1/p' "$T/out" | head -1; }

bench "$PAT" --shard-index require && [ "$(images)" = 48 ] || fail "indexed: $(images) images"
bench "$PAT" --shard-index scan --rrc 32 && [ "$(images)" = 48 ] || fail "scanned: $(images) images"
bench "$T/root/s/shard-000000.tar::$T/root/s/shard-00000{1..4}.tar" && [ "$(images)" = 48 ] ||
  fail ":: list: $(images) images"
printf '# five shards\ns/shard-00000{0..4}.tar\n' > "$T/root/list.txt"
bench "@$T/root/list.txt" && [ "$(images)" = 48 ] || fail "list file: $(images) images"
# inspect and verify over the shards.
gf 0 inspect "$PAT" --json
has out '"samples": 48'
has out '"indexed": 5'
has out '"cls": 48'
gf 0 verify "$PAT" --shard-index require
has out "all 48 samples OK"
# Both directions of the builder: the folder built as a dataset, and as
# shards (--format wds) then those shards built as a dataset, give the same
# samples in the same order: labels, shapes and stored bytes (CRC), the
# source path being the shard's key (the file's path less its extension).
gf 0 build "$T/src" "$T/d1" --quiet
gf 0 build "$T/src" "$T/w" --format wds --shard-size 64K
nw=$(ls "$T/w"/shard-*.tar | wc -l)
gf 0 build "$T/w/shard-{000000..$(printf '%06d' $((nw - 1)))}.tar" "$T/d2" --quiet
gf 0 inspect "$T/d1" --json --samples 1000
cp "$T/out" "$T/d1.json"
gf 0 inspect "$T/d2" --json --samples 1000
cp "$T/out" "$T/d2.json"
"$PY" - "$T/d1.json" "$T/d2.json" <<'PY' || fail "folder -> dataset and folder -> shards -> dataset differ"
import json, os, sys
a = json.load(open(sys.argv[1]))["records"]
b = json.load(open(sys.argv[2]))["records"]
assert len(a) == len(b) == 48, (len(a), len(b))
for x, y in zip(a, b):
    for k in ("label", "height", "width", "channels", "checksum", "length"):
        assert x[k] == y[k], (k, x, y)
    assert os.path.splitext(x["source"])[0] == y["source"], (x["source"], y["source"])
print("48 samples alike both ways")
PY
# A label field no sample holds: every sample fails, named.
gf 1 bench "$PAT" --device cpu --batch 4 --epochs 1 --label-field cls2
has err "no label field 'cls2'"
has err "shard-00000"

# Over HTTP, indexed: every shard read is a ranged GET of one sample.
net_nginx_start "$T/root"
URL="$GF_NGINX_URL/s/shard-{000000..000004}.tar"
: > "$GF_NGINX_ACCESS_LOG"
bench "$URL" --shard-index require --rrc 32 && [ "$(images)" = 48 ] || fail "http: $(images) images"
hasnt err "scanned over the network"
tar_gets=$(grep -c 'GET /s/shard-[0-9]*\.tar' "$GF_NGINX_ACCESS_LOG")
idx_gets=$(grep -c 'GET /s/shard-[0-9]*\.idx' "$GF_NGINX_ACCESS_LOG")
[ "$idx_gets" = 5 ] || fail "http: $idx_gets index GETs, wanted 5"
[ "$tar_gets" -ge 48 ] || fail "http: $tar_gets shard GETs for 48 samples"
# Scanned over HTTP: it works, and a warning says what it cost.
bench "$URL" --shard-index scan --rrc 32 && [ "$(images)" = 48 ] || fail "http scan: $(images) images"
has err "scanned over the network"
# A missing index, required: named.
rm "$T/root/s/shard-000003.idx"
gf 1 bench "$URL" --device cpu --shard-index require
has err "shard-000003.idx"
has err "gpufeed index"
# A secret in the URLs: in no output.
SURL="http://agent007:PASSW0RD@127.0.0.1:$GF_NGINX_PORT/s/shard-{000000..000004}.tar?token=T0KEN"
for mode in require scan; do
  "$G" bench "$SURL" --device cpu --batch 4 --epochs 1 --shard-index $mode >"$T/o" 2>"$T/e"
  for s in agent007 PASSW0RD T0KEN; do
    grep -qF "$s" "$T/o" "$T/e" && fail "a secret ($s) shown with --shard-index $mode"
  done
done
grep -qF "shard-000003.idx" "$T/e" || grep -qF "127.0.0.1:$GF_NGINX_PORT/s" "$T/o" ||
  fail "the secret URL's runs: $(cat "$T/e")"
# ... nor in the errors about the patterns themselves.
for bad in "$SURL{" "http://agent007:PASSW0RD@h1/a.tar?token=T0KEN::http://agent007:PASSW0RD@h2/b.tar" \
    "http://agent007:PASSW0RD@h/a.tar?token=T0KEN::http://agent007:PASSW0RD@h/b.tar?token=2" \
    "http://agent007:PASSW0RD@h/x.tar.gz?token=T0KEN"; do
  "$G" bench "$bad" --device cpu >"$T/o" 2>"$T/e" && fail "bench $bad: succeeded"
  for s in agent007 PASSW0RD T0KEN; do
    grep -qF "$s" "$T/o" "$T/e" && fail "a secret ($s) shown: $(cat "$T/e")"
  done
done

# A compressed shard: what to do, named.
gf 1 bench "$T/root/s/shard-{000000..000001}.tar.gz" --device cpu
has err "decompress"
# A stale index (its shard rewritten with other captions): the samples
# read through it fail, named, never decoded from the wrong bytes.
"$PY" "$GPUFEED_SOURCE_DIR/tests/wds/pack_shards.py" "$T/src" "$T/other" 10 > /dev/null || fail "pack_shards 2"
cp "$T/root/s/shard-000000.idx" "$T/other/shard-000001.idx"
gf 1 bench "$T/other/shard-000001.tar" --device cpu --batch 4 --epochs 1 --rrc 32 --shard-index require
has err "does not hold what its index says"
gf 1 verify "$T/other/shard-000001.tar" --shard-index require
has out "does not hold what its index says"
has err "samples bad"
no_crash
finish
