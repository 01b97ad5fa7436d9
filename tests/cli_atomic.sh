# `gpufeed build` is atomic: a build that fails partway (a file-size limit
# making a write fail with EFBIG) or is interrupted (SIGINT, SIGTERM)
# leaves OUT absent, or byte-identical when it existed, and no temporary
# folder behind; an existing OUT is replaced only with --force.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# snap DIR: a listing of every file with its checksum.
snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }

gf 0 synth "$T/src" --count 30 --size 32x32 --classes 3 --quiet || finish

# 1. EFBIG partway, no OUT before: 30 raw samples are 90 KiB, the limit
# 16 KiB, so the first shard write past it fails.
(ulimit -f 16; "$GPUFEED" build "$T/src" "$T/ds" --codec raw --quiet \
  >"$T/log" 2>"$T/err") && rc=0 || rc=$?
[ "$rc" = 1 ] || fail "build under ulimit -f: exit $rc, wanted 1"
grep -qi "too large" "$T/err" || fail "EFBIG not reported: $(cat "$T/err")"
[ -e "$T/ds" ] && fail "a failed build left OUT"
tmp_left "$T" && fail "a failed build left a temporary folder"
no_crash

# 2. The same over an existing OUT with --force: OUT stays as it was.
gf 0 build "$T/src" "$T/ds" --codec zstd --quiet || finish
before=$(snap "$T/ds")
(ulimit -f 16; "$GPUFEED" build "$T/src" "$T/ds" --codec raw --force \
  --quiet >"$T/log" 2>"$T/err") && rc=0 || rc=$?
[ "$rc" = 1 ] || fail "forced build under ulimit -f: exit $rc, wanted 1"
[ "$(snap "$T/ds")" = "$before" ] || fail "a failed --force build changed OUT"
tmp_left "$T" && fail "a failed --force build left a temporary folder"
no_crash

# 3. An existing OUT without --force is refused and untouched.
gf 1 build "$T/src" "$T/ds" --codec raw && has err "$T/ds" &&
  has err "use --force"
[ "$(snap "$T/ds")" = "$before" ] || fail "a refused build changed OUT"
tmp_left "$T" && fail "a refused build left a temporary folder"
# ... so is a non-empty folder that is not a dataset, even with --force.
mkdir -p "$T/notds" && echo keep >"$T/notds/precious.txt"
gf 1 build "$T/src" "$T/notds" --force && has err "not a gpufeed dataset"
[ "$(cat "$T/notds/precious.txt")" = keep ] || fail "--force touched a non-dataset"
# ... and a file.
echo keep >"$T/afile"
gf 1 build "$T/src" "$T/afile" --force && has err "not a folder"
# --force does replace a dataset.
gf 0 build "$T/src" "$T/ds" --codec raw --force --quiet
gf 0 inspect "$T/ds" && has out "raw 30"
tmp_left "$T" && fail "a successful build left a temporary folder"
# An empty folder is a fine target with --force.
mkdir -p "$T/empty"
gf 0 build "$T/src" "$T/empty" --force --quiet
gf 0 verify "$T/empty" --quiet

# 4. SIGINT and SIGTERM during a slow build (zstd level 19 of 256x256
# images on one thread): no OUT, no temporary folder.
gf 0 synth "$T/big" --count 60 --size 256x256 --classes 2 --quiet || finish
for sig in INT TERM; do
  want=1
  [ $sig = INT ] && want=130
  "$GPUFEED" build "$T/big" "$T/sig" --codec zstd --level 19 --threads 1 \
    >"$T/log" 2>"$T/err" &
  pid=$!
  # Wait for the build to start writing (its temporary folder appears).
  for _ in $(seq 200); do
    tmp_left "$T" && break
    sleep 0.05
  done
  tmp_left "$T" || fail "SIG$sig: the build's temporary folder never appeared"
  sleep 0.1
  kill -$sig $pid
  wait $pid && rc=0 || rc=$?
  [ "$rc" = $want ] || fail "SIG$sig: exit $rc, wanted $want (too fast to interrupt?)"
  grep -q "interrupted by SIG$sig" "$T/err" || fail "SIG$sig: not reported: $(cat "$T/err")"
  [ -e "$T/sig" ] && fail "SIG$sig left OUT"
  tmp_left "$T" && fail "SIG$sig left a temporary folder"
  no_crash
done

finish
