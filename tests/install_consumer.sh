#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds tests/consumer against
# it twice: through the exported CMake package and through gpufeed.pc.
set -euo pipefail
tmp=${GPUFEED_TEST_TMP:?}
# On any failure, say which command failed and show the logs it left.
trap 'rc=$?; echo "install_consumer: line $LINENO failed (exit $rc): $BASH_COMMAND" >&2
      for f in "$tmp"/*.log; do [ -f "$f" ] && sed "s#^#  $(basename "$f"): #" "$f" >&2; done
      exit $rc' ERR
rm -rf "$tmp"; mkdir -p "$tmp"
prefix=$tmp/prefix
cmake --install "$GPUFEED_BINARY_DIR" --prefix "$prefix" >"$tmp/install.log"
test -f "$prefix/include/gpufeed.h"
test -f "$prefix/lib/cmake/gpufeed/gpufeedConfig.cmake"
test -f "$prefix/lib/pkgconfig/gpufeed.pc"
test -x "$prefix/bin/gpufeed"

# A sanitized gpufeed needs its consumer linked with the same runtime.
san=()
sanflags=""
if [ -n "${GPUFEED_SANITIZE:-}" ]; then
  sanflags="-fsanitize=$GPUFEED_SANITIZE"
  san=(-DCMAKE_C_FLAGS="$sanflags" -DCMAKE_EXE_LINKER_FLAGS="$sanflags")
fi
cmake -S "$GPUFEED_SOURCE_DIR/tests/consumer" -B "$tmp/build" \
  -DCMAKE_PREFIX_PATH="$prefix" "${san[@]}" >"$tmp/configure.log"
cmake --build "$tmp/build" >"$tmp/build.log"
# Outputs are captured before they are matched: "cmd | grep -q" under
# pipefail fails at random when grep exits early and cmd dies of SIGPIPE.
# runs WANT CMD...: CMD succeeds and its output holds the fixed string WANT.
runs() {
  local want=$1 out
  shift
  out=$("$@")
  grep -qF -- "$want" <<<"$out" || { echo "install_consumer: '$*' printed no '$want':" >&2; echo "$out" >&2; return 1; }
}
runs "consumer linked gpufeed" env LD_LIBRARY_PATH="$prefix/lib" "$tmp/build/consumer"
runs "consumer linked gpufeed" "$tmp/build/consumer_static"
# The shared consumer must really load the installed library.
runs "$prefix/lib/libgpufeed.so" env LD_LIBRARY_PATH="$prefix/lib" ldd "$tmp/build/consumer"

cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags gpufeed)
libs=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs gpufeed)
# shellcheck disable=SC2086 # word splitting of the flags is intended
cc $sanflags $cflags "$GPUFEED_SOURCE_DIR/tests/consumer/consumer.c" -o "$tmp/consumer_pc" $libs
runs "consumer linked gpufeed" env LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer_pc"
echo "install consumer: cmake package, static and pkg-config builds all run"
