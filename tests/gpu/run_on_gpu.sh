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

# A python3 with torch: the GPU machine's plain python3, else Debian's.
py=
for c in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [[ -n $c ]] && "$c" -c 'import torch' >/dev/null 2>&1; then py=$c; break; fi
done
if [[ -z $py ]]; then
    echo "run_on_gpu.sh: no python3 with torch found (set PYTHON=...)" >&2
    exit 2
fi

libpath=$bundle/lib
# cuBLAS for the executables (they dlopen it; without it they fall back to
# their own matrix kernel): PyTorch's wheel ships one, the toolkit another.
cublas=$("$py" -c 'import os, nvidia.cublas as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
for d in "$cublas" /usr/local/cuda/lib64; do
    if [[ -n $d ]] && compgen -G "$d/libcublas.so*" >/dev/null; then libpath=$libpath:$d; fi
done
# cuDNN 9 for the convolutions (dlopen("libcudnn.so.9")): PyTorch's wheel
# ships it as nvidia-cudnn (or in torch/lib), the toolkit may have one.
cudnn=$("$py" -c 'import os, nvidia.cudnn as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
torchlib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)
for d in "$cudnn" "$torchlib" /usr/local/cuda/lib64; do
    if [[ -n $d ]] && compgen -G "$d/libcudnn.so.9*" >/dev/null; then libpath=$libpath:$d; break; fi
done
export LD_LIBRARY_PATH=$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

save=()
if [[ -n ${OUT:-} && -d ${OUT:-} && -w ${OUT:-} ]]; then
    save=(--save-failures "$OUT/gpu-diff-failures.tar.xz")
fi
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
export PYTHONUNBUFFERED=1
"$py" "$bundle/harness/tests/gpu/gpu_diff.py" --dir "$bundle" "${save[@]}" "$@"
