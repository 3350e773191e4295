# Sourced by run_on_gpu.sh and train_on_gpu.sh with $bundle set (an
# unpacked bundle): sets py, a python3 with torch, and puts on
# LD_LIBRARY_PATH the bundle's lib/ (the shared libraries the executables
# need that a GPU machine lacks) and the cuBLAS and cuDNN the executables
# dlopen.
# A python3 with torch: the GPU machine's plain python3, else Debian's.
py=
for c in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [[ -n $c ]] && "$c" -c 'import torch' >/dev/null 2>&1; then py=$c; break; fi
done
if [[ -z $py ]]; then
    echo "${0##*/}: no python3 with torch found (set PYTHON=...)" >&2
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

