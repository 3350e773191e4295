#!/usr/bin/env bash
# Runs every test: installs what is missing, builds a normal and an
# ASan+UBSan build (with the libFuzzer target), and runs ctest in both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer,
# built with clang so the parser's libFuzzer target is part of it. Its CUDA
# suite takes NVRTC's images and ptxas's results from the normal build's
# cache (keyed on the whole source: the same kernels, not compiled twice).
CC=clang-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DTGC_SANITIZE=ON -DTGC_FUZZ=ON -DTGC_TEST_NVRTC_CACHE="$PWD/build/nvrtc-cache" >/dev/null
cmake --build build-asan -j "$jobs"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$jobs")
