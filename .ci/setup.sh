#!/usr/bin/env bash
# Installs what shardflow needs from Debian's archive (only packages that are missing, so a
# second run is quick), then configures and builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc libabsl-dev
  libdnnl-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  dataset-fashion-mnist python3-numpy pybind11-dev python3-dev python3-pytest
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
