#!/usr/bin/env bash
# Installs gpufeed's build dependencies from Debian's archive when missing.
# Used by tests/run.sh, bench/quickstart.sh and CI; GPUFEED_WITH_PYTHON=1
# adds what the Python package and its tests need, GPUFEED_WITH_NET=1 what
# the network tests need (tests/net.cmake) and libcurl's headers. Root or
# sudo needed only when something is missing.
set -euo pipefail
pkgs=(build-essential cmake pkg-config liburing-dev libzstd-dev libpng-dev
      libjpeg62-turbo-dev libcurl4-openssl-dev libssl-dev libarchive-dev
      ca-certificates)
# The Python package and its tests (tests/run.sh sets this).
if [ "${GPUFEED_WITH_PYTHON:-0}" = 1 ]; then
  pkgs+=(python3-dev python3-numpy python3-pytest python3-torch python3-torchvision python3-pip
         python3-setuptools python3-wheel python3-venv)
fi
# The network tests (tests/run.sh sets this): nginx-light serves datasets
# on the loopback (Range, keep-alive; tests/net/nginx.sh), curl is their
# client, openssl makes the TLS test's CA; bc for bench/netproxy_bench.sh.
# (libcurl's headers are a build dependency above: the HTTP storage.)
if [ "${GPUFEED_WITH_NET:-0}" = 1 ]; then
  pkgs+=(nginx-light curl openssl bc)
fi
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
