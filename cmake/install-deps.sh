#!/usr/bin/env bash
# Installs gpufeed's build dependencies from Debian's archive when missing.
# Used by tests/run.sh, bench/quickstart.sh and CI. Root or sudo needed only
# when something is missing.
set -euo pipefail
pkgs=(build-essential cmake pkg-config liburing-dev libzstd-dev libpng-dev)
if [ "${GPUFEED_WITH_CLANG:-0}" = 1 ]; then
  pkgs+=(clang libclang-rt-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
