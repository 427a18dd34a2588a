#!/usr/bin/env bash
# gpu_bundle.sh: packs what tools/gpu_check.sh runs on a GPU machine into .devbundle/ (git-ignored
# through .git/info/exclude), with ../shared/tools/device-bundle: the binaries of a CUDA build
# (build/bin/shardflow, build/bin/gpu_benchmark, the three tests/gpu tests as bin/gpu_*_test) with
# their libraries (libshardflow.so and the Debian ones; CUDA's come from the GPU machine),
# benchmarks/gpu_peer.py, tools/gpu_check.sh and Fashion-MNIST under datasets/fashion-mnist/.
#
#   tools/gpu_bundle.sh [BUILD_DIR]          (default build/)
#
# Then, on the GPU machine (the device tool's run, carrying .devbundle):
#   source .devbundle/unpack.sh && bash tools/gpu_check.sh
# which leaves everything it printed in $OUT/gpu_log.txt.
#
# Fashion-MNIST goes in uncompressed (the loader takes the idx files with or without .gz): xz packs
# the raw images into ~23 MB where the .gz files stay ~30 MB, and the bundle must stay below
# ~60 MiB (the device tool carries at most 64 MiB with the working tree). SF_BUNDLE_DATA=gz packs
# the .gz files as they are; SF_BUNDLE_DATA=none leaves the data out (gpu_check.sh then skips the
# epoch on real data).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
tool=${DEVICE_BUNDLE:-$repo/../shared/tools/device-bundle}
data_mode=${SF_BUNDLE_DATA:-raw}
mnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
out=$repo/.devbundle

[ -x "$tool" ] || { echo "gpu_bundle: no device-bundle at $tool (set DEVICE_BUNDLE)" >&2; exit 2; }
need=("$build/bin/shardflow" "$build/bin/gpu_benchmark" "$build/libshardflow.so"
      "$build/tests/gpu_gpu_conformance_test" "$build/tests/gpu_gpu_device_test"
      "$build/tests/gpu_gpu_gradient_test")
for f in "${need[@]}"; do
  if [ ! -e "$f" ]; then
    echo "gpu_bundle: $f is missing: build with CUDA first (cmake -DSHARDFLOW_CUDA=ON; ninja" \
         "shardflow_cli gpu_benchmark gpu_gpu_conformance_test gpu_gpu_device_test" \
         "gpu_gpu_gradient_test)" >&2
    exit 2
  fi
done

# Keep .devbundle/ out of git.
exclude=$(git -C "$repo" rev-parse --git-path info/exclude)
case $exclude in /*) ;; *) exclude=$repo/$exclude ;; esac
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.devbundle/' "$exclude" 2>/dev/null || echo '/.devbundle/' >>"$exclude"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/files" "$stage/data/benchmarks" "$stage/data/tools"
# The tests under the names gpu_check.sh runs (bin/gpu_conformance_test, ...).
for t in conformance device gradient; do
  ln -s "$build/tests/gpu_gpu_${t}_test" "$stage/files/gpu_${t}_test"
done
files=("$build/bin/shardflow" "$build/bin/gpu_benchmark" "$stage/files/gpu_conformance_test"
       "$stage/files/gpu_device_test" "$stage/files/gpu_gradient_test")
# libshardflow.so reaches lib/ as a library of the binaries; named as a file too it would travel
# twice (bin/ and lib/), so only when ldd does not find it.
if ! ldd "$build/bin/shardflow" | grep -q 'libshardflow\.so => /'; then
  files+=("$build/libshardflow.so")
fi
ln -s "$repo/benchmarks/gpu_peer.py" "$stage/data/benchmarks/gpu_peer.py"
ln -s "$repo/tools/gpu_check.sh" "$stage/data/tools/gpu_check.sh"
data=(benchmarks tools)
if [ "$data_mode" != none ]; then
  mkdir -p "$stage/data/datasets/fashion-mnist"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
           t10k-labels-idx1-ubyte; do
    [ -e "$mnist/$f.gz" ] || { echo "gpu_bundle: no $mnist/$f.gz (SF_BUNDLE_DATA=none skips it)" >&2; exit 2; }
    if [ "$data_mode" = gz ]; then
      ln -s "$mnist/$f.gz" "$stage/data/datasets/fashion-mnist/$f.gz"
    else
      gzip -dc "$mnist/$f.gz" >"$stage/data/datasets/fashion-mnist/$f"
    fi
  done
  data+=(datasets)
fi

rm -rf "$out"
(cd "$stage/data" && "$tool" "$out" "${files[@]}" -- "${data[@]}")
size=$(du -m "$out/bundle.tar.xz" | cut -f1)
echo "gpu_bundle: $out/bundle.tar.xz is ${size} MiB; contents:"
tar -tJvf "$out/bundle.tar.xz" | awk '{printf "  %10d  %s\n", $3, $6}' | sort -k2
if [ "$size" -ge 60 ]; then
  echo "gpu_bundle: WARNING: ${size} MiB is over 60 MiB; the device tool carries 64 MiB with the" \
       "working tree. SF_BUNDLE_DATA=none leaves Fashion-MNIST out." >&2
fi
echo "on the GPU machine: source .devbundle/unpack.sh && bash tools/gpu_check.sh  (carry .devbundle)"
