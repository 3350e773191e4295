#!/usr/bin/env bash
# Builds tgc and runs its main job on a shipped example: checks the
# transformer block and shows every value's layout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
build/tgc check examples/transformer_block.tg
build/tgc show examples/transformer_block.tg
