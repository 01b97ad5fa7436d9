# `gpufeed verify` (and inspect) on damaged datasets: a flipped byte in a
# sample's data, truncated shard and index, wrong magic, a future version,
# a damaged index record. Each gives exit 1 and names the problem
# precisely; nothing crashes.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# flip FILE OFFSET: inverts one byte in place.
flip() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  [ -n "$b" ] || { fail "cannot read byte $2 of $1"; return; }
  # shellcheck disable=SC2059
  printf "$(printf '\\%03o' $((b ^ 0xff)))" |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# put32 FILE OFFSET VALUE: a little-endian u32 written in place.
put32() {
  local v=$3 s="" i
  for i in 0 1 2 3; do
    s="$s$(printf '\\%03o' $(((v >> (8 * i)) & 255)))"
  done
  # shellcheck disable=SC2059
  printf "$s" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# get64 FILE OFFSET: a little-endian u64 read (below 2^63).
get64() {
  local v=0 i b
  for i in 7 6 5 4 3 2 1 0; do
    b=$(od -An -tu1 -j $(($2 + i)) -N1 "$1" | tr -d ' ')
    v=$((v * 256 + b))
  done
  echo "$v"
}
fresh() { # fresh NAME: a copy of the good dataset
  rm -rf "${T:?}/$1"
  cp -r "$T/good" "$T/$1"
}

gf 0 synth "$T/src" --count 12 --size 24x20 --classes 2 --quiet || finish
gf 0 build "$T/src" "$T/good" --quiet || finish
gf 0 verify "$T/good" && has out "all 12 samples OK"
gf 0 verify "$T/good" --threads 1 --quiet && [ -s "$T/out" ] &&
  fail "verify --quiet printed on success"
gf 0 inspect "$T/good" && has out "samples    12" && has out "gradzstd 12"
has out "classes    2 (class_000, class_001)"
grep -qE '^  24x20x3 u8 +12$' "$T/out" || fail "shape line missing"

# A flipped byte in the middle of sample 5's stored bytes.
gf 0 inspect "$T/good" --json --samples 12 || finish
if command -v python3 >/dev/null; then
  python3 -m json.tool "$T/out" >/dev/null || fail "inspect --json is not JSON"
fi
rec=$(grep '"index": 5,' "$T/out")
off=$(sed -n 's/.*"offset": \([0-9]*\),.*/\1/p' <<<"$rec")
len=$(sed -n 's/.*"length": \([0-9]*\),.*/\1/p' <<<"$rec")
src=$(sed -n 's/.*"source": "\([^"]*\)".*/\1/p' <<<"$rec")
shard=$(sed -n 's/.*"shard_file": "\([^"]*\)".*/\1/p' <<<"$rec")
if [ -z "$off" ] || [ -z "$len" ] || [ -z "$src" ] || [ -z "$shard" ]; then
  fail "inspect --json gave no offset/length/source/shard for sample 5"
  finish
fi
fresh flip
flip "$T/flip/$shard" $((off + len / 2))
if gf 1 verify "$T/flip"; then
  has out "sample 5: $shard offset $off (source $src): "
  grep -qiE 'checksum|crc' "$T/out" || fail "the flip is not named a checksum error"
  has out "1 of 12 samples bad"
  has err "1 of 12 samples bad"
  [ "$(grep -c '^sample ' "$T/out")" -eq 1 ] || fail "other samples reported bad"
fi
no_crash
gf 0 inspect "$T/flip" # the index is intact

# A truncated shard: refused at open, naming the shard.
fresh tshard
truncate -s -100 "$T/tshard/shard-000000.gfs"
if gf 1 verify "$T/tshard"; then
  has err "shard-000000.gfs"
  grep -qi truncated "$T/err" || fail "truncated shard not called truncated"
fi
no_crash
if gf 1 inspect "$T/tshard"; then
  grep -qi truncated "$T/err" || fail "inspect: truncated shard not so called"
fi

# A truncated index, in the tables and inside the header.
for cut in half 100; do
  fresh tindex
  size=$(stat -c %s "$T/tindex/index.gfi")
  [ "$cut" = half ] && cut=$((size / 2))
  truncate -s "$cut" "$T/tindex/index.gfi"
  if gf 1 verify "$T/tindex"; then
    has err "index.gfi"
    grep -qi truncated "$T/err" || fail "index cut to $cut: not called truncated"
  fi
  no_crash
done
fresh tindex0
: >"$T/tindex0/index.gfi"
gf 1 verify "$T/tindex0" && has err "index.gfi"
no_crash

# Wrong magic, in the index and in a shard.
fresh magic
printf 'X' | dd of="$T/magic/index.gfi" bs=1 seek=0 conv=notrunc status=none
gf 1 verify "$T/magic" && has err "index.gfi" && has err "magic"
no_crash
fresh smagic
printf 'X' | dd of="$T/smagic/shard-000000.gfs" bs=1 seek=3 conv=notrunc status=none
gf 1 verify "$T/smagic" && has err "shard-000000.gfs" && has err "magic"
no_crash

# A future version (the u32 at offset 8 of both headers, docs/FORMAT.md).
fresh version
put32 "$T/version/index.gfi" 8 3
gf 1 verify "$T/version" && has err "index.gfi" && has err "version 3"
no_crash
gf 1 inspect "$T/version" && has err "version 3"
fresh sversion
put32 "$T/sversion/shard-000000.gfs" 8 7
gf 1 verify "$T/sversion" && has err "shard-000000.gfs" && has err "version 7"
no_crash

# A damaged index record (sample 3's data checksum field, at records_offset
# (the header's u64 at 40) + 3 * 64 + 44): the index checksum fails, and
# sample 3 is reported at its record's place in the index, the other
# samples are fine.
recs=$(get64 "$T/good/index.gfi" 40)
fresh record
flip "$T/record/index.gfi" $((recs + 3 * 64 + 44))
if gf 1 verify "$T/record"; then
  has err "index.gfi"
  has err "and the index checksum is wrong"
  has out "sample 3: index.gfi offset $((recs + 3 * 64)): "
  has out "1 of 12 samples bad"
fi
no_crash
# A record pointing far outside its shard (high bits of sample 7's offset
# field): refused by the record's checks, never read.
fresh record2
put32 "$T/record2/index.gfi" $((recs + 7 * 64 + 4)) 4096
if gf 1 verify "$T/record2"; then
  has out "sample 7: index.gfi offset $((recs + 7 * 64)): "
  has out "1 of 12 samples bad"
fi
no_crash
gf 1 inspect "$T/record2" && has err "sample 7"
no_crash

finish
