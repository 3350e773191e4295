#!/usr/bin/env bash
# Runs the GPU benchmarks that bench/gpu/prepare.sh packed, on the GPU
# machine, from the repository's root:
#   bash bench/gpu/run_on_gpu.sh DATA_DIR [--only NAMES] [--rounds R] [--budget S]
#        [--no-ncu] [--no-compile] [--json FILE]
# DATA_DIR holds gpu-bench.tar.xz. Prints one line per benchmark as it goes,
# then the table (bench_gpu.py's header says what each column measures).
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: bash bench/gpu/run_on_gpu.sh DATA_DIR [bench_gpu.py run flags]" >&2
    exit 2
fi
data=$1
shift
if [[ ! -f $data/gpu-bench.tar.xz ]]; then
    echo "run_on_gpu.sh: no $data/gpu-bench.tar.xz (run bench/gpu/prepare.sh first)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tgc-gpu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$data/gpu-bench.tar.xz" -C "$work"
# py (a python3 with torch) and LD_LIBRARY_PATH (the bundle's lib/, cuBLAS,
# cuDNN), as tests/gpu/run_on_gpu.sh sets them.
bundle=$work/gpu-bench
source "$(dirname "${BASH_SOURCE[0]}")/../../tests/gpu/gpu_env.sh"
export PYTHONUNBUFFERED=1
"$py" "$work/gpu-bench/bench_gpu.py" run --dir "$work/gpu-bench" "$@"
