#!/usr/bin/env bash
# Builds the differential corpus with --target cuda into one tarball for a
# GPU machine: tests/gpu/prepare.sh [BUILD_DIR] [DATA_DIR] [prepare.py flags]
# BUILD_DIR (default build) holds a tgc with CUDA support; DATA_DIR (default
# gpu-work, git-ignored) receives gpu-cases.tar.xz and nothing else. Then, on
# the GPU machine: bash tests/gpu/run_on_gpu.sh DATA_DIR (README.md here).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
data=${2:-$root/gpu-work}
shift $(( $# < 2 ? $# : 2 ))
if [[ ! -x $build/tgc ]]; then
    echo "prepare.sh: no tgc in $build (build it first: cmake -S . -B $build -G Ninja && ninja -C $build)" >&2
    exit 2
fi
# Debian's python3 holds PyTorch 1.13 (the reference's inputs and pruning).
py=/usr/bin/python3
exec "$py" "$root/tests/gpu/prepare.py" --tgc "$build/tgc" --out "$data" "$@"
