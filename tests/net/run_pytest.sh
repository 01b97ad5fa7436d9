#!/usr/bin/env bash
# Runs one pytest file of tests/net (ctest runs one a test, tests/net.cmake)
# with /usr/bin/python3 (or $GPUFEED_PYTHON_EXE). Exit 77 (skip) without
# pytest or nginx, 1 instead when GPUFEED_REQUIRE_HTTP=1.
#   tests/net/run_pytest.sh FILE.py [pytest args]
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${GPUFEED_PYTHON_EXE:-/usr/bin/python3}
need() {
  if [ "${GPUFEED_REQUIRE_HTTP:-0}" = 1 ]; then
    echo "FAIL: GPUFEED_REQUIRE_HTTP=1 but $*"
    exit 1
  fi
  echo "skip: $*"
  exit 77
}
"$py" -c "import pytest" 2>/dev/null || need "$py lacks pytest (Debian: python3-pytest)"
why=$(bash "$here/nginx.sh" check) || need "$why"
file=$1
shift
base=()
if [ -n "${GPUFEED_TEST_TMP:-}" ]; then
  rm -rf "$GPUFEED_TEST_TMP"
  mkdir -p "$GPUFEED_TEST_TMP"
  base=(--basetemp "$GPUFEED_TEST_TMP/pytest")
fi
export PYTHONDONTWRITEBYTECODE=1
"$py" -m pytest -q -p no:cacheprovider "${base[@]}" "$file" "$@"
rc=$?
[ $rc = 5 ] && exit 77
exit $rc
