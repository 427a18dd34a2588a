#!/usr/bin/env bash
# Installs what shardflow needs from Debian's archive (only packages that are missing, so a
# second run is quick), then configures and builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc libabsl-dev
  libdnnl-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev libgoogle-glog-dev
  libcli11-dev nlohmann-json3-dev libre2-dev libfarmhash-dev libhighwayhash-dev bazel-bootstrap
  dataset-fashion-mnist python3-numpy pybind11-dev python3-dev python3-pytest python3-protobuf
  python3-torch python3-torchvision libopenblas0-openmp python3-pil
  openmpi-bin slurmctld slurmd slurm-client
  libucx-dev ucx-utils iperf3
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build

# The Python package, importable by Debian's /usr/bin/python3 from any folder: installed under
# /usr/local, whose lib/python3/dist-packages a .pth file in the site folder points at.
if [ -f build/python/shardflow/__init__.py ]; then
  $sudo cmake --install build --component python --prefix /usr/local >/dev/null
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  echo /usr/local/lib/python3/dist-packages | $sudo tee "$site/shardflow-local.pth" >/dev/null
fi

# The Kubernetes schemas for the offline manifest check (tests/deploy/validate_manifests.js):
# npm's kubernetes-models and js-yaml, into build/npm, when npm is there (the test skips without).
if command -v npm >/dev/null 2>&1 && [ ! -d build/npm/node_modules/kubernetes-models ]; then
  npm install --prefix build/npm --no-audit --no-fund --silent kubernetes-models@4 js-yaml@4 \
    >/dev/null 2>&1 || echo "setup: npm install kubernetes-models failed; the manifest test will skip"
fi
