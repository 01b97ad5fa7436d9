#!/usr/bin/env bash
# The CLI under valgrind's memcheck: synth, build, inspect and verify of a
# tiny dataset, each with --error-exitcode=1 --leak-check=full, so an
# invalid read or write, a use of uninitialised memory or a leak fails it.
#
# Not run by default (a few minutes on 2 cores): ctest registers it with
# the label `valgrind` and it skips (exit 77) unless GPUFEED_VALGRIND=1:
#
#   GPUFEED_VALGRIND=1 ctest --test-dir build -L valgrind --output-on-failure
#
# Use a build without sanitizers (valgrind and ASan do not mix; an ASan
# binary is detected and skipped). Each tool's valgrind log is kept in
# $GPUFEED_TEST_TMP/*.vg.
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

[ "${GPUFEED_VALGRIND:-0}" = 1 ] || skip "set GPUFEED_VALGRIND=1 to run the CLI under valgrind"
command -v valgrind >/dev/null || skip "valgrind is not installed (apt-get install valgrind)"
syms=$(nm "$GPUFEED" 2>/dev/null || true)
if grep -q '__asan_init\|__tsan_init' <<<"$syms"; then
  skip "$GPUFEED is built with a sanitizer; use a plain build for valgrind"
fi

# vg NAME WANT ARGS...: runs the CLI under memcheck and checks its exit
# status is WANT (valgrind's own errors make it 99).
vg() {
  local name=$1 want=$2
  shift 2
  valgrind --quiet --error-exitcode=99 --leak-check=full \
    --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible \
    --track-origins=yes --log-file="$T/$name.vg" \
    "$GPUFEED" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "valgrind gpufeed $* ($name): exit $rc, wanted $want"
    sed 's/^/  vg| /' "$T/$name.vg" >&2
    sed 's/^/  err| /' "$T/err" >&2
  elif [ -s "$T/$name.vg" ]; then
    fail "valgrind gpufeed $* ($name) reported:"
    sed 's/^/  vg| /' "$T/$name.vg" >&2
  else
    echo "ok: gpufeed $*"
  fi
}

vg synth 0 synth "$T/src" --count 12 --size 24x20 --classes 3 --threads 2 --quiet
for codec in gradzstd png raw zstd loco; do
  vg "build-$codec" 0 build "$T/src" "$T/ds-$codec" --codec "$codec" \
    --threads 2 --shard-size 4K --quiet
  vg "verify-$codec" 0 verify "$T/ds-$codec" --threads 2
done
vg inspect 0 inspect "$T/ds-gradzstd" --samples 3
vg inspect-json 0 inspect "$T/ds-png" --json
# Failure paths free what they allocated too.
vg build-exists 1 build "$T/src" "$T/ds-png" --quiet
printf 'garbage' >"$T/ds-raw/index.gfi"
vg verify-corrupt 1 verify "$T/ds-raw"
finish
