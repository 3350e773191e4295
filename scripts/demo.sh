#!/usr/bin/env bash
# Builds tgc and runs its main job on a shipped example: compiles the
# transformer block into a native executable and runs it on random inputs
# with a benchmark, after showing its memory-fit report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
build/tgc check examples/transformer_block.tg
build/tgc report examples/transformer_block.tg --device rtx4090 --fit batch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
build/tgc build examples/transformer_block.tg -o "$out/tb"
"$out/tb" --random-inputs 0 --output-dir "$out" --bench 100
echo "wrote $(ls "$out"/*.npy) (the output y, f32[1, 128, 256])"
