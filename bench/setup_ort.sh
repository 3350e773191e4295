#!/bin/sh
# Installs ONNX Runtime for Node (onnxruntime-node, CPU library included) into
# bench/.ort/ (git-ignored) for bench/onnx.py's ORT column, only when it is
# missing. The bench needs it; the build and the tests do not.
#
#   bench/setup_ort.sh          # prints the folder holding node_modules/
#
# --ignore-scripts: the package's install script fetches the CUDA/TensorRT
# builds from the network, which the bench machines cannot reach; the CPU
# binaries (bin/napi-v*/linux/x64/) are in the npm package itself.
set -eu
VERSION=1.30.0
DIR=$(cd "$(dirname "$0")" && pwd)/.ort
PKG="$DIR/node_modules/onnxruntime-node/package.json"

if [ -f "$PKG" ] && grep -q "\"version\": \"$VERSION\"" "$PKG"; then
    echo "$DIR"
    exit 0
fi
command -v npm >/dev/null 2>&1 || {
    echo "setup_ort.sh: npm not found; install Node.js (node and npm) first" >&2
    exit 1
}
mkdir -p "$DIR"
echo "setup_ort.sh: installing onnxruntime-node@$VERSION into $DIR ..." >&2
npm install --prefix "$DIR" --ignore-scripts --no-audit --no-fund \
    "onnxruntime-node@$VERSION" >&2
[ -f "$PKG" ] || {
    echo "setup_ort.sh: npm finished but $PKG is missing" >&2
    exit 1
}
echo "$DIR"
