# The CLI's usage surface: help and version text, usage errors (exit 2 with
# a one-line hint), and option values (sizes with suffixes) that parse.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# The version the header declares is what --version prints.
hdr=${GPUFEED_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/..}/include/gpufeed.h
ver=$(awk '/#define GF_VERSION_(MAJOR|MINOR|PATCH) /{printf "%s%s", sep, $3; sep="."}' "$hdr")
gf 0 --version && has out "gpufeed $ver"
[ -n "$ver" ] || fail "could not read the version from $hdr"

for h in --help -h help; do
  gf 0 $h && has out "Usage: gpufeed COMMAND"
  for c in synth build inspect verify; do has out "  $c "; done
done
has out "130"

for c in synth build inspect verify; do
  gf 0 $c --help && has out "Usage: gpufeed $c"
  gf 0 $c -h && has out "Usage: gpufeed $c"
  # Help wins over missing arguments and is printed alone.
  gf 0 $c foo --help && has out "Usage: gpufeed $c"
  [ -s "$T/err" ] && fail "$c --help wrote to stderr"
done
gf 0 build --help
for o in --labels --codec --level --channels --keep-16bit --threads \
         --shard-size --align --force --skip-bad --quiet png raw zstd \
         gradzstd loco "rows per band 1-255 for loco" 130; do
  has out "$o"
done
gf 0 synth --help
for o in --count --size --classes --seed --from --force; do has out "$o"; done
gf 0 inspect --help && has out "--json"
gf 0 verify --help && has out "--threads"

# Usage errors: exit 2, one line on stderr naming the problem and the help.
usage() { # usage "TEXT" ARGS...
  local text=$1
  shift
  if gf 2 "$@"; then
    has err "$text"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "gpufeed $*: not one line on stderr"
    [ -s "$T/out" ] && fail "gpufeed $*: wrote to stdout"
  fi
}
usage "gpufeed: missing command; see 'gpufeed --help'"
usage "gpufeed: unknown command 'frobnicate'; see 'gpufeed --help'" frobnicate
usage "gpufeed: unknown option '--bogus'; see 'gpufeed --help'" --bogus
usage "gpufeed: unknown option '--x' for build; see 'gpufeed build --help'" \
  build a b --x
usage "unknown option '-q' for verify; see 'gpufeed verify --help'" verify d -q
usage "unknown option '--jsn' for inspect" inspect d --jsn
usage "unknown option '--size' for build" build a b --size 3x3
usage "build needs SRC and OUT; see 'gpufeed build --help'" build
usage "build needs SRC and OUT" build onlysrc
usage "synth needs the output folder OUT; see 'gpufeed synth --help'" synth
usage "synth needs --count N" synth out
usage "inspect needs the DATASET folder" inspect
usage "verify needs the DATASET folder" verify
usage "unexpected argument 'c' for build" build a b c
usage "unexpected argument 'e' for inspect" inspect d e
usage "option '--threads' needs a value" build a b --threads
usage "option '--force' takes no value" build a b --force=yes
usage "invalid value 'webp' for --codec (expected png, jpeg, raw, zstd, gradzstd or loco)" \
  build a b --codec webp
usage "invalid value '0' for --threads" build a b --threads 0
usage "invalid value 'x' for --threads" verify d --threads x
usage "invalid value '-1' for --threads" verify d --threads -1
usage "invalid value '2' for --channels" build a b --channels 2
usage "invalid value '3000' for --align" build a b --align 3000
usage "invalid value '2M' for --align" build a b --align 2M
usage "invalid value '1Q' for --shard-size" build a b --shard-size 1Q
usage "invalid value '0' for --shard-size" build a b --shard-size 0
usage "invalid value '99999999999999999999' for --count" \
  synth o --count 99999999999999999999
usage "invalid value '0x3' for --size" synth o --count 5 --size 0x3
usage "invalid value '70000' for --size" synth o --count 5 --size 70000
usage "invalid value '12x' for --size" synth o --count 5 --size 12x
usage "invalid value '23' for --level" build a b --level 23
usage "invalid value '23' for --level (expected an integer from 1 to 22)" \
  build a b --codec zstd --level 23
# loco's level is the rows of a band, whichever option comes first.
usage "invalid value '256' for --level (expected an integer from 1 to 255)" \
  build a b --codec loco --level 256
usage "invalid value '0' for --level" build a b --level 0 --codec loco
usage "--level applies to the zstd, gradzstd and loco codecs only" \
  build a b --level 3 --codec raw
usage "--level applies to the zstd, gradzstd and loco codecs only" \
  build a b --codec png --level 3
usage "--channels cannot convert png or jpeg samples" build a b --codec png --channels 3
usage "--channels cannot convert png or jpeg samples" build a b --codec jpeg --channels 3
usage "--level applies to the zstd, gradzstd and loco codecs only" \
  build a b --codec jpeg --level 3
usage "invalid value 'maybe' for --jpeg-scale (expected on or off)" \
  bench d --jpeg-scale maybe

# Values that parse: the command then fails on the missing source (exit 1),
# not on its arguments.
for args in "--shard-size 64K --align 4K" "--shard-size=1G --align=4096" \
            "--shard-size 3MiB" "--shard-size 2GB --codec=raw" \
            "--channels 0 --codec png" "--codec loco --level 255" \
            "--level 200 --codec=loco" "--codec loco --channels 3"; do
  # shellcheck disable=SC2086
  if gf 1 build "$T/nosrc" "$T/out-ds" $args; then
    has err "gpufeed build: "
    has err "$T/nosrc"
  fi
done
gf 1 build -- "$T/nosrc" "$T/out-ds" && has err "$T/nosrc"
[ -e "$T/out-ds" ] && fail "a failed build left $T/out-ds"
# synth refuses a non-empty OUT unless --force.
mkdir -p "$T/full" && echo keep >"$T/full/file.txt"
gf 1 synth "$T/full" --count 2 && has err "use --force"
[ -e "$T/full/class_000" ] && fail "a refused synth wrote files"
gf 0 synth "$T/full" --count 2 --force && has out "wrote 2 "
[ -e "$T/full/class_001/img_000001.png" ] || fail "synth --force wrote nothing"
# ... and creates the folders OUT names.
gf 0 synth "$T/new/deeper/out" --count 1 --quiet
[ -e "$T/new/deeper/out/class_000/img_000000.png" ] || fail "synth made no tree"
gf 1 inspect "$T/missing" && has err "gpufeed inspect: " && has err "$T/missing"
gf 1 verify -- "$T/missing" && has err "gpufeed verify: " && has err "$T/missing"

finish
