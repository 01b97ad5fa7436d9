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
# The CUDA kernels only where a GPU will run them (and then for that GPU
# alone, cmake/GpufeedCudaArch.cmake): without one the bench runs in host
# mode, and the build takes seconds instead of minutes.
cuda=OFF
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  cuda=ON
fi
echo "== 0. building gpufeed (CUDA: $cuda) in build-release/"
cmake -S "$root" -B "$root/build-release" -DCMAKE_BUILD_TYPE=Release -DGPUFEED_CUDA=$cuda >/dev/null
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
