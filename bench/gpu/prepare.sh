#!/usr/bin/env bash
# Builds the GPU benchmarks here: bench/gpu/prepare.sh [BUILD_DIR] [DATA_DIR]
# BUILD_DIR (default build) holds a tgc with CUDA support; DATA_DIR (default
# gpu-work, git-ignored) receives gpu-bench.tar.xz. Then, on the GPU machine:
# bash bench/gpu/run_on_gpu.sh DATA_DIR (bench/README.md, "GPU (CUDA)").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build}
data=${2:-$root/gpu-work}
shift $(( $# < 2 ? $# : 2 ))
if [[ ! -x $build/tgc ]]; then
    echo "prepare.sh: no tgc in $build (build it first: cmake -S . -B $build -G Ninja && ninja -C $build)" >&2
    exit 2
fi
exec /usr/bin/python3 "$root/bench/gpu/bench_gpu.py" prepare --tgc "$build/tgc" --out "$data" "$@"
