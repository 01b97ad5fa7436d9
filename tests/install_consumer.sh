#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds tests/consumer against
# it twice: through the exported CMake package and through gpufeed.pc.
set -euo pipefail
tmp=${GPUFEED_TEST_TMP:?}
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
LD_LIBRARY_PATH="$prefix/lib" "$tmp/build/consumer" | grep -q "consumer linked gpufeed"
"$tmp/build/consumer_static" | grep -q "consumer linked gpufeed"
# The shared consumer must really load the installed library.
LD_LIBRARY_PATH="$prefix/lib" ldd "$tmp/build/consumer" | grep -q "$prefix/lib/libgpufeed.so"

cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags gpufeed)
libs=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --libs gpufeed)
# shellcheck disable=SC2086 # word splitting of the flags is intended
cc $sanflags $cflags "$GPUFEED_SOURCE_DIR/tests/consumer/consumer.c" -o "$tmp/consumer_pc" $libs
LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer_pc" | grep -q "consumer linked gpufeed"
echo "install consumer: cmake package, static and pkg-config builds all run"
