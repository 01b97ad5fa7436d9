#!/usr/bin/env bash
# Runs pytest files of the Python package against a build tree (ctest runs
# one file a test, see tests/python.cmake): PYTHONPATH is the build's
# python/ folder (the extension and the package's files beside it).
# Exit 77 (skip) when pytest, numpy or torch is missing, or, for the GPU
# tests, when torch sees no CUDA device (a failure with
# GPUFEED_REQUIRE_GPU=1).
#   python/tests/run_pytest.sh BUILD_DIR test_file.py [pytest args]
set -u
build=$1
shift
py=${GPUFEED_PYTHON_EXE:-/usr/bin/python3}
if ! "$py" -c "import pytest, numpy, torch" 2>/dev/null; then
  echo "skip: $py lacks pytest, numpy or torch (Debian: python3-pytest python3-numpy python3-torch)"
  exit 77
fi
case "$1" in
  *test_gpu*.py)
    if ! "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
      if [ "${GPUFEED_REQUIRE_GPU:-0}" = 1 ]; then
        echo "FAIL: GPUFEED_REQUIRE_GPU=1 but torch sees no CUDA device"
        exit 1
      fi
      echo "skip: torch sees no CUDA device"
      exit 77
    fi ;;
esac
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
here=$(cd "$(dirname "$0")" && pwd)
file=$1
shift
base=()
if [ -n "${GPUFEED_TEST_TMP:-}" ]; then
  mkdir -p "$GPUFEED_TEST_TMP"
  base=(--basetemp "$GPUFEED_TEST_TMP/pytest")
fi
"$py" -m pytest -q -p no:cacheprovider "${base[@]}" "$here/$file" "$@"
rc=$?
# 5: nothing collected, the module skipped as a whole (a package it
# imports is missing): a skip for ctest, not a failure.
[ $rc = 5 ] && exit 77
exit $rc
