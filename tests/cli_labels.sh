# `gpufeed build --labels`: a flat folder plus a labels file builds with the
# file's order and labels; lines escaping the folder ('../', absolute
# paths) are refused naming the labels file and line; a listed file that
# does not exist stops the build naming it.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

gf 0 synth "$T/gen" --count 4 --size 16x12 --classes 1 --quiet || finish
mkdir -p "$T/flat/sub"
cp "$T/gen/class_000/img_000000.png" "$T/flat/b.png"
cp "$T/gen/class_000/img_000001.png" "$T/flat/a.png"
cp "$T/gen/class_000/img_000002.png" "$T/flat/sub/c.png"
cp "$T/gen/class_000/img_000003.png" "$T/outside.png"

printf '# file label\nb.png 5\n\nsub/c.png 0\na.png   -3\n' >"$T/good.txt"
if gf 0 build "$T/flat" "$T/ds" --labels "$T/good.txt"; then
  has out "wrote 3 samples"
  has out "labels from $T/good.txt"
  gf 0 inspect "$T/ds" --json --samples 3
  has out '"index": 0, '
  grep -q '"index": 0, .*"label": 5, .*"source": "b.png"' "$T/out" ||
    fail "record 0 is not b.png with label 5"
  grep -q '"index": 1, .*"label": 0, .*"source": "sub/c.png"' "$T/out" ||
    fail "record 1 is not sub/c.png with label 0"
  grep -q '"index": 2, .*"label": -3, .*"source": "a.png"' "$T/out" ||
    fail "record 2 is not a.png with label -3"
  has out '"classes": {"count": 0'
  gf 0 verify "$T/ds" && has out "all 3 samples OK"
fi

# Escaping paths: refused, naming the labels file and the line.
printf 'a.png 1\n../outside.png 2\n' >"$T/dotdot.txt"
gf 1 build "$T/flat" "$T/ds2" --labels "$T/dotdot.txt" &&
  has err "$T/dotdot.txt" && has err "2"
grep -q "line 2\|:2:" "$T/err" || fail "the bad line is not named: $(cat "$T/err")"
printf 'a.png 1\nb.png 1\nsub/../../outside.png 2\n' >"$T/dotdot2.txt"
gf 1 build "$T/flat" "$T/ds2" --labels "$T/dotdot2.txt" &&
  has err "$T/dotdot2.txt"
grep -q "line 3\|:3:" "$T/err" || fail "the bad line is not named: $(cat "$T/err")"
printf '%s 1\n' "$T/outside.png" >"$T/abs.txt"
gf 1 build "$T/flat" "$T/ds2" --labels "$T/abs.txt" && has err "$T/abs.txt"
grep -q "line 1\|:1:" "$T/err" || fail "the bad line is not named: $(cat "$T/err")"
[ -e "$T/ds2" ] && fail "a refused build left OUT"

# A listed file that is missing stops the build, named.
printf 'a.png 1\nmissing.png 2\n' >"$T/missing.txt"
gf 1 build "$T/flat" "$T/ds3" --labels "$T/missing.txt" &&
  has err "missing.png"
[ -e "$T/ds3" ] && fail "a failed build left OUT"
# A labels file that does not exist.
gf 1 build "$T/flat" "$T/ds3" --labels "$T/nope.txt" && has err "$T/nope.txt"
# A line without a label.
printf 'a.png\n' >"$T/nolabel.txt"
gf 1 build "$T/flat" "$T/ds3" --labels "$T/nolabel.txt" &&
  has err "$T/nolabel.txt"
tmp_left "$T" && fail "a temporary folder was left"
no_crash

finish
