#!/usr/bin/env bash
# Packs the Debian headers and libraries frugal's build needs (Eigen, Catch2, zlib, stb_image), and the
# Fashion-MNIST files frugal-train reads, into one folder, for a GPU machine that has CUDA and CMake but no network and no apt:
#   bash scripts/pack-gpu-deps.sh [DIR]      (default: gpu-deps/, ignored by git)
# then there: bash scripts/gpu-check.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-gpu-deps}
bash scripts/install-deps.sh
rm -rf "$dir"
mkdir -p "$dir/include/stb" "$dir/lib/cmake" "$dir/share/eigen3"
cp -r /usr/include/eigen3 /usr/include/catch2 /usr/include/zlib.h /usr/include/zconf.h "$dir/include/"
cp /usr/include/stb/stb_image.h /usr/include/stb/stb_image_write.h "$dir/include/stb/"
# The CMake package files find their headers relative to themselves: same layout as /usr.
cp -r /usr/share/eigen3/cmake "$dir/share/eigen3/"
cp -r /usr/lib/cmake/Catch2 "$dir/lib/cmake/"
cp /usr/lib/x86_64-linux-gnu/libz.a "$dir/lib/"
# Catch2's package also names its prebuilt main, which the CMake files check is there.
cp /usr/lib/libCatch2WithMain.a "$dir/lib/"
mkdir -p "$dir/fashion-mnist"
cp /usr/share/datasets/fashion-mnist/*-ubyte* "$dir/fashion-mnist/"
du -sh "$dir"
