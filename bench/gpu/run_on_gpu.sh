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
py=
for c in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [[ -n $c ]] && "$c" -c 'import torch' >/dev/null 2>&1; then py=$c; break; fi
done
[[ -n $py ]] || { echo "run_on_gpu.sh: no python3 with torch (set PYTHON=...)" >&2; exit 2; }
libpath=$work/gpu-bench/lib
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
export PYTHONUNBUFFERED=1
"$py" "$work/gpu-bench/bench_gpu.py" run --dir "$work/gpu-bench" "$@"
