# `gpufeed build` on the PngSuite: every valid image (one class) builds and
# verifies; each of the 14 corrupt x*.png stops a build, named on stderr,
# and with --skip-bad is skipped (and reported) while the rest is built.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

suite=${GPUFEED_TEST_DATA:-}/pngsuite
if [ -z "${GPUFEED_TEST_DATA:-}" ] || [ ! -d "$suite" ]; then
  skip "no PngSuite at \$GPUFEED_TEST_DATA/pngsuite"
fi

mkdir -p "$T/valid/all"
n=0
for f in "$suite"/*.png; do
  case $(basename "$f") in x*) continue ;; esac
  cp "$f" "$T/valid/all/"
  n=$((n + 1))
done
[ $n -gt 100 ] || fail "only $n valid PngSuite images found"
for codec in gradzstd png; do
  if gf 0 build "$T/valid" "$T/ds-$codec" --codec $codec; then
    has out "wrote $n samples"
    has out "skipped       0"
    gf 0 verify "$T/ds-$codec" && has out "all $n samples OK"
  fi
done
# 16-bit images kept 16-bit, converted to RGB: still all valid.
gf 0 build "$T/valid" "$T/ds-16" --keep-16bit --channels 3 --codec zstd --quiet &&
  gf 0 verify "$T/ds-16" && has out "all $n samples OK"

bad=0
for f in "$suite"/x*.png; do
  name=$(basename "$f")
  bad=$((bad + 1))
  d="$T/bad-$name"
  mkdir -p "$d/c"
  cp "$f" "$d/c/"
  cp "$suite/basn2c08.png" "$d/c/"
  codec=gradzstd
  [ $((bad % 2)) = 0 ] && codec=png
  if gf 1 build "$d" "$T/out-$name" --codec $codec; then
    has err "gpufeed build: $d/c/$name: "
    [ "$(wc -l <"$T/err")" -le 2 ] || fail "$name: a long error"
  fi
  no_crash
  [ -e "$T/out-$name" ] && fail "$name: a failed build left OUT"
  if gf 0 build "$d" "$T/out-$name" --skip-bad --codec $codec; then
    has out "wrote 1 samples"
    has out "skipped       1"
    has out "    $d/c/$name: "
    gf 0 verify "$T/out-$name" --quiet
  fi
  rm -rf "$T/out-$name"
  # With --quiet there is no summary: the skipped file is named on stderr.
  gf 0 build "$d" "$T/out-$name" --skip-bad --quiet &&
    has err "gpufeed build: skipped $d/c/$name: "
  no_crash
done
[ $bad = 14 ] || fail "found $bad corrupt x*.png, wanted 14"
tmp_left "$T" && fail "a temporary folder was left"

finish
