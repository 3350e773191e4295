#!/usr/bin/env bash
# Runs the training bundle that train_prepare.py made (README.md here,
# "Training"): bash tests/gpu/train_on_gpu.sh DATA_DIR [train_check.py flags]
# DATA_DIR holds train-cases.tar.xz. Each case's training executables run
# on the GPU and their saved weights are compared with torch.optim's,
# computed where the bundle was built. Prints
# `train-check: N passed, M failed`; exit 1 on any failure. Flags:
# --expect-no-driver (no GPU: every executable must say so), -k SUBSTRING.
set -euo pipefail
if [[ $# -lt 1 ]]; then
    echo "usage: bash tests/gpu/train_on_gpu.sh DATA_DIR [train_check.py flags]" >&2
    exit 2
fi
data=$1
shift
if [[ ! -f $data/train-cases.tar.xz ]]; then
    echo "train_on_gpu.sh: no $data/train-cases.tar.xz (run tests/gpu/train_prepare.py first)" >&2
    exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tgc-train-cases.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$data/train-cases.tar.xz" -C "$work"
bundle=$work/train-cases
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
export PYTHONUNBUFFERED=1
"$py" "$bundle/train_check.py" --dir "$bundle" "$@"
