#!/usr/bin/env bash
# Runs the bundle that prepare.sh made against PyTorch on the GPU:
#   bash tests/gpu/run_on_gpu.sh DATA_DIR [gpu_diff.py flags]
# DATA_DIR holds gpu-cases.tar.xz (or an unpacked gpu-cases/ folder). The
# bundle is unpacked into a temporary folder, LD_LIBRARY_PATH gets its lib/
# (and the cuBLAS and cuDNN that PyTorch ships, for the executables' matrix
# products and convolutions),
# and the bundle's own copy of gpu_diff.py runs every case. Prints
# `gpu-diff: N passed, M failed`; exit 1 on any failure. Where the device
# tool's $OUT folder exists, the failing cases' graphs and outputs go to
# $OUT/gpu-diff-failures.tar.xz. Flags: --device cpu (no GPU: reference on
# the CPU), --expect-no-driver (the executables must fail without a driver),
# -k SUBSTRING, --jobs N, -v, --upcast (see gpu_diff.py).
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: bash tests/gpu/run_on_gpu.sh DATA_DIR [gpu_diff.py flags]" >&2
    exit 2
fi
data=$1
shift
work=
cleanup() { [[ -n $work ]] && rm -rf "$work"; }
trap cleanup EXIT
if [[ -f $data/gpu-cases.tar.xz ]]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/tgc-gpu-cases.XXXXXX")
    tar -xJf "$data/gpu-cases.tar.xz" -C "$work"
    bundle=$work/gpu-cases
elif [[ -d $data/gpu-cases ]]; then
    bundle=$(cd "$data/gpu-cases" && pwd)
else
    echo "run_on_gpu.sh: no $data/gpu-cases.tar.xz (run tests/gpu/prepare.sh first)" >&2
    exit 2
fi

# py (a python3 with torch) and LD_LIBRARY_PATH (the bundle's lib/, cuBLAS, cuDNN).
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"

save=()
if [[ -n ${OUT:-} && -d ${OUT:-} && -w ${OUT:-} ]]; then
    save=(--save-failures "$OUT/gpu-diff-failures.tar.xz")
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
export PYTHONUNBUFFERED=1
"$py" "$bundle/harness/tests/gpu/gpu_diff.py" --dir "$bundle" "${save[@]}" "$@"
