# What a user installs carries no fault injection and no test hooks (issue
# 33): libgpufeed.so, libgpufeed.a, the gpufeed CLI and, when built, the
# Python extension of this build. Neither nm (the full symbol table, and
# the dynamic one) finds a gf_fault_* symbol or the loader's test hooks,
# nor strings the GPUFEED_FAULT variable or the fault parser's messages;
# and GPUFEED_FAULT set to fail every site changes nothing they do. The
# tests' own library and CLI (gpufeed_testing, gpufeed-testing) must show
# all of it, so that a pattern gone stale cannot pass by finding nothing.
#
#   check_shipped.sh LIBGPUFEED.so LIBGPUFEED.a TESTING.a TESTING_CLI [EXT.so]
#
# $GPUFEED (the shipped CLI) and $GPUFEED_BINARY_DIR come from ctest.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
  echo "usage: check_shipped.sh SHARED STATIC TESTING_STATIC TESTING_CLI [PYTHON_EXT]" >&2
  exit 1
fi
command -v nm >/dev/null && command -v strings >/dev/null ||
  skip "needs nm and strings (binutils)"
shared=$1 static=$2 testing_static=$3 testing_cli=$4 ext=${5:-}
shipped=("$shared" "$static" "$GPUFEED")
[ -n "$ext" ] && shipped+=("$ext")

# Symbols of the fault layer (gf_fault_arm, gf_fault_hit_, gf_fault_mask_,
# a stray copy of gf_fault_check, ...) and of the loader's test hooks.
SYMS='gf_fault_|gf_loader__event_hook|gf_loader__test_hook'
# The variable, and messages only the fault parser prints.
TEXT='GPUFEED_FAULT|fault spec|fault injection armed'

for f in "${shipped[@]}" "$testing_static" "$testing_cli"; do
  [ -f "$f" ] || fail "$f: not built"
done
[ "$FAILS" = 0 ] || finish

# syms FILE: the full symbol table (-a: debugger-only symbols too) and, for
# a shared object or a program, the dynamic one.
syms() {
  nm -a "$1" 2>/dev/null
  case "$1" in *.a) ;; *) nm -D "$1" 2>/dev/null ;; esac
}

for f in "${shipped[@]}"; do
  s=$(syms "$f")
  # A table without the library's own names (a stripped file) would pass
  # by saying nothing.
  grep -q 'gf_loader_create' <<<"$s" ||
    fail "$f: nm lists no gf_loader_create: no symbol table to check"
  if grep -Eq "$SYMS" <<<"$s"; then
    fail "$f: fault injection or test hook symbols in what ships:"
    grep -E "$SYMS" <<<"$s" | sort -u | head -20 | sed 's/^/  nm| /' >&2
  fi
  if strings -a "$f" | grep -Eq "$TEXT"; then
    fail "$f: strings finds fault injection text in what ships:"
    strings -a "$f" | grep -E "$TEXT" | sort -u | head -5 | sed 's/^/  strings| /' >&2
  fi
done

# The test build has each of them: the patterns above still name them.
s=$(syms "$testing_static")
for want in gf_fault_arm gf_fault_hit_ gf_fault_mask_ gf_loader__event_hook \
  gf_loader__test_hook; do
  grep -q "$want" <<<"$s" || fail "$testing_static: nm finds no $want"
done
strings -a "$testing_cli" | grep -q GPUFEED_FAULT ||
  fail "$testing_cli: strings finds no GPUFEED_FAULT"

# Behaviour: every site the CLI reaches failing from its first call on.
# The shipped CLI does its work as if the variable were unset; the test
# build's CLI fails (the variable works there, so it tests something here).
ALL=open:1:EIO:sticky,read:1:EIO:sticky,pread:1:EIO:sticky
ALL=$ALL,write:1:ENOSPC:sticky,fsync:1:EIO:sticky,rename:1:EIO:sticky
ALL=$ALL,uring_setup:1:EPERM:sticky,uring_cqe:1:EIO:sticky
gf 0 synth "$T/png" --count 24 --size 12x10 --classes 3 --quiet || finish
gf 0 build "$T/png" "$T/ref" --quiet || finish
for spec in open:1:EIO:sticky write:1:ENOSPC:sticky pread:1:EIO:sticky "$ALL"; do
  d=$T/ds-${spec%%:*}
  rm -rf "$T/p2" "$d"
  export GPUFEED_FAULT=$spec
  if gf 0 synth "$T/p2" --count 24 --size 12x10 --classes 3 --quiet &&
    gf 0 build "$T/png" "$d" --quiet; then
    diff -r "$T/ref" "$d" >/dev/null ||
      fail "GPUFEED_FAULT=$spec: build made another dataset"
    gf 0 verify "$d" && hasnt err "GPUFEED_FAULT"
    gf 0 bench "$d" --device cpu --epochs 1 --batch 4 --quiet --json &&
      has out '"images":24'
    gf 0 bench "$T/png" --device cpu --epochs 1 --batch 4 --quiet --json &&
      has out '"images":24'
  fi
  unset GPUFEED_FAULT
done
rm -rf "$T/t"
GPUFEED_FAULT=open:1:EIO:sticky "$testing_cli" build "$T/png" "$T/t" --quiet \
  >"$T/out" 2>"$T/err" &&
  fail "gpufeed-testing build with GPUFEED_FAULT=open:1:EIO:sticky succeeded"

# The Python extension over the same dataset, with every site armed.
py=${GPUFEED_PYTHON_EXE:-/usr/bin/python3}
if [ -n "$ext" ] && [ -x "$py" ]; then
  if ! GPUFEED_FAULT=$ALL PYTHONPATH="$(dirname "$(dirname "$ext")")" \
    "$py" - "$T/ref" >"$T/out" 2>"$T/err" <<'EOF'; then
import sys
import gpufeed
loader = gpufeed.Loader(sys.argv[1], batch_size=4, device="cpu")
n = sum(b.count for b in loader.batches())
assert n == 24, n
print("python: 24 samples")
EOF
    fail "the Python extension with GPUFEED_FAULT=$ALL"
    sed 's/^/  err| /' "$T/err" >&2
  fi
fi
finish
