#!/usr/bin/env bash
# Bug hunting with the libFuzzer targets: each target for SECONDS (default
# 600) from a fresh copy of its seed corpus, with a new random seed each run.
# CI's fuzz_*_short tests use a fixed seed (a gate must not be a lottery);
# this is where new inputs are looked for. A failure leaves the reproducer in
# the printed folder: add it to tests/fuzz/corpus*/ with the fix.
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]   (BUILD_DIR: the ASan build, default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
build=${2:-build-asan}
if [ ! -x "$build/tests/fuzz/fuzz_frontend" ]; then
  echo "scripts/fuzz.sh: $build/tests/fuzz/fuzz_frontend not found: build the sanitizer build first (scripts/test.sh makes build-asan)" >&2
  exit 1
fi
fz=tests/fuzz
status=0
run() { # FUZZER CORPUS PATTERN DICT
  cmake -DFUZZER="$build/tests/fuzz/$1" -DCORPUS="$2" -DPATTERN="$3" -DDICT="$4" \
        -DWORK="$build/tests/fuzz/hunt-$1" -DSECONDS="$seconds" -DSEED=0 -DTIMEOUT=5 \
        -P "$fz/run_fuzz.cmake" || status=1
}
run fuzz_frontend "$PWD/$fz/corpus" '*.tg' "$PWD/$fz/tg.dict"
run fuzz_glue "$PWD/$fz/corpus" '*.tg' "$PWD/$fz/tg.dict"
run fuzz_onnx "$PWD/$fz/corpus_onnx" '*.onnx' ''
exit $status
