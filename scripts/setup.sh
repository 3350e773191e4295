#!/usr/bin/env bash
# Installs what tgc needs from Debian's packages, only when something is missing,
# so it is cheap to call before every build.
set -euo pipefail
pkgs=(gcc libc6-dev pkg-config cmake ninja-build clang-14 libclang-rt-14-dev llvm-14-dev libopenblas-dev
      libcjson-dev libdnnl-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev
      python3-torch python3-numpy python3-torchvision python3-onnx libonnx-testdata chromium
      qemu-user  # qemu-x86_64: tests/cpu runs programs on emulated older CPUs
      lld)  # ld.lld: tgc build links programs 3-4x faster than with GNU ld
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
