#!/usr/bin/env bash
# Runs the whole test suite from a fresh checkout: installs the Debian
# packages gpufeed needs (if missing), configures with warnings as errors,
# builds and runs ctest.
#
#   bash tests/run.sh                         # the suite (build/)
#   bash tests/run.sh --sanitize=address,undefined   # again under ASan+UBSan
#   bash tests/run.sh --sanitize=thread       # the threaded tests under TSan
#
# Extra arguments after -- go to ctest (e.g. -- -R format). On a machine
# with a GPU, GPUFEED_REQUIRE_GPU=1 makes every GPU test's skip a failure;
# GPUFEED_REQUIRE_HTTP=1 does the same for the network tests and
# GPUFEED_REQUIRE_S3=1 for the S3 tests (CI sets both).
set -euo pipefail
cd "$(dirname "$0")/.."
san=""
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize=*) san=${1#--sanitize=} ;;
    --) shift; ctest_args+=("$@"); break ;;
    *) echo "usage: tests/run.sh [--sanitize=address,undefined|thread] [-- ctest args]" >&2; exit 2 ;;
  esac
  shift
done
# The Python package's tests run in the suite too (tests/python.cmake), and
# the network tests (tests/net.cmake: nginx, curl, openssl).
GPUFEED_WITH_PYTHON=1 GPUFEED_WITH_NET=1 bash cmake/install-deps.sh
# The S3 tests talk to moto's S3 server (PyPI's moto[server] and boto3), and
# the WebDataset interop test reads shards with PyPI's webdataset, all in a
# venv of their own, build-s3venv/: installed when GPUFEED_REQUIRE_S3=1 or
# GPUFEED_REQUIRE_WDS=1 (CI sets them) or GPUFEED_WITH_S3=1; without them
# those tests skip.
if [ "${GPUFEED_REQUIRE_S3:-0}" = 1 ] || [ "${GPUFEED_WITH_S3:-0}" = 1 ] ||
   [ "${GPUFEED_REQUIRE_WDS:-0}" = 1 ]; then
  if ! build-s3venv/bin/python -c 'import moto.server, boto3, webdataset' 2>/dev/null; then
    python3 -m venv build-s3venv
    build-s3venv/bin/pip install -q 'moto[server]' boto3 webdataset
  fi
  export GPUFEED_S3_PYTHON=$PWD/build-s3venv/bin/python
  export GPUFEED_WDS_PYTHON=$PWD/build-s3venv/bin/python
fi
jobs=$(nproc)
dir=build
opts=(-DGPUFEED_WERROR=ON)
case "$san" in
  "") ;;
  address,undefined)
    dir=build-asan
    # Host mode: the CUDA runtime and ASan's shadow memory do not mix.
    opts+=(-DGPUFEED_SANITIZE=address,undefined -DGPUFEED_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug) ;;
  thread)
    dir=build-tsan
    opts+=(-DGPUFEED_SANITIZE=thread -DGPUFEED_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug)
    ctest_args=(-L threaded "${ctest_args[@]}") ;;
  *) echo "tests/run.sh: unknown sanitizer '$san'" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${opts[@]}" >/dev/null
cmake --build "$dir" -j"$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${ctest_args[@]}"
