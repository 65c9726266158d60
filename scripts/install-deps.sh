#!/usr/bin/env bash
# Installs the Debian 12 packages frugal builds and tests with, when any is missing.
# Everything frugal needs comes from the distribution; nothing is downloaded at build time.
#   bash scripts/install-deps.sh [--bench]    (--bench: also the PyTorch side of bench/*.sh:
#   Debian's CPU PyTorch, torchvision and Pillow, and the jemalloc and OpenMP OpenBLAS that
#   make it fastest, see bench/torch/env.sh; --sanitize: clang with its sanitizer runtimes and
#   LLVM's OpenMP, for scripts/sanitize.sh and scripts/fuzz.sh)
set -euo pipefail

packages=(cmake ninja-build g++ catch2 libeigen3-dev libstb-dev zlib1g-dev dataset-fashion-mnist
          libopenmpi-dev openmpi-bin)
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3-torch python3-torchvision python3-pil python3-numpy libjemalloc2 libopenblas0-openmp)
elif [ "${1:-}" = "--sanitize" ]; then
  packages+=(clang libclang-rt-dev libomp-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
