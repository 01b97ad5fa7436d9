# Helpers shared by the cli_*.sh tests; sourced, not a test of its own.
# Exit statuses of a test: 0 pass, 1 fail, 77 skip.
set -u
if [ -z "${GPUFEED:-}" ] || [ ! -x "$GPUFEED" ]; then
  echo "FAIL: \$GPUFEED (the gpufeed binary) is not set or not executable" >&2
  exit 1
fi
T=${GPUFEED_TEST_TMP:-}
if [ -z "$T" ]; then
  T=$(mktemp -d -t gfcli.XXXXXX)
fi
rm -rf "$T"
mkdir -p "$T"
FAILS=0

fail() {
  echo "FAIL: $*" >&2
  FAILS=$((FAILS + 1))
}

# gf WANT ARGS...: runs the CLI with stdout in $T/out and stderr in $T/err,
# and checks its exit status is WANT. Returns 0 when it is.
gf() {
  local want=$1
  shift
  "$GPUFEED" "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    fail "gpufeed $*: exit $rc, wanted $want"
    sed 's/^/  out| /' "$T/out" >&2
    sed 's/^/  err| /' "$T/err" >&2
    return 1
  fi
  return 0
}

# has out|err TEXT: the last run's stdout or stderr holds TEXT (fixed
# string).
has() {
  if ! grep -qF -- "$2" "$T/$1"; then
    fail "'$2' not in the std$1 of the last run"
    sed "s/^/  $1| /" "$T/$1" >&2
  fi
}

# hasnt out|err TEXT
hasnt() {
  if grep -qF -- "$2" "$T/$1"; then
    fail "'$2' unexpectedly in the std$1 of the last run"
    sed "s/^/  $1| /" "$T/$1" >&2
  fi
}

# no_crash: the last run's stderr shows no sanitizer report or abort.
no_crash() {
  if grep -qE 'Sanitizer|runtime error|Aborted|Segmentation' "$T/err"; then
    fail "the last run crashed or hit a sanitizer"
    sed 's/^/  err| /' "$T/err" >&2
  fi
}

# Files left in a folder whose names start with a dot and hold ".gftmp-":
# the builder's temporary folders.
tmp_left() {
  [ -n "$(find "$1" -maxdepth 1 -name '.*.gftmp-*')" ]
}

skip() {
  echo "SKIP: $*" >&2
  exit 77
}

finish() {
  if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed" >&2
    exit 1
  fi
  echo "PASS"
  exit 0
}
