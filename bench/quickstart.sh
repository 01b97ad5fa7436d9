#!/usr/bin/env bash
# The main job on a built-in default, from a fresh checkout: installs what
# the build needs (Debian packages, if missing), builds gpufeed, makes a
# small synthetic PNG dataset, builds its cache and benchmarks the loader
# on it: on the GPU when there is one, in host mode when not.
#
#   bash bench/quickstart.sh [WORKDIR]      (default: ./quickstart)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/quickstart}
bash "$root/cmake/install-deps.sh"
cmake -S "$root" -B "$root/build-release" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-release" -j"$(nproc)" --target gpufeed_cli
gf=$root/build-release/gpufeed
mkdir -p "$work"
echo "== 1. a synthetic ImageFolder of 2000 photo-like 128x128 PNGs"
"$gf" synth "$work/png" --count 2000 --size 128x128 --classes 10 --force
echo "== 2. its cache (gradient filter + zstd)"
"$gf" build "$work/png" "$work/cache" --codec gradzstd --force
"$gf" inspect "$work/cache"
echo "== 3. the loader, 3 epochs of batches of 256 (device: auto)"
"$gf" bench "$work/cache" --epochs 3 --batch 256
"$gf" bench "$work/png" --epochs 2 --batch 256
