#!/usr/bin/env bash
# Regenerates the memory matrix of docs/memory.md: every synth preset at its
# real (full) shape, header-only, against llama.cpp's own dry run
# (llama-fit-params) on the host for contexts 4K/32K/128K x micro-batch
# 512/2048 x flash attention on/off x 1 and 4 slots (plus quantized caches,
# odd slot counts and batch clamps), per device through a local
# ggml-rpc-server, and per device of the splits `plan --vram A,B[,C] --check`
# prints across two and three local ggml-rpc-servers (the second table).
# Takes ~16 minutes on two shared cores (the splits across devices ~1.5 of them).
# Usage: scripts/memory-matrix.sh [OUT.md]   (default: print the tables)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
"$repo/scripts/build.sh" "$build" moetune moetune_integration_tests >/dev/null
out=${1:-$(mktemp)}
export MOETUNE_LLAMA_DIR=${MOETUNE_LLAMA_DIR:-$repo/.engine/bin}
MOETUNE_MEMORY_MATRIX=full MOETUNE_MEMORY_MATRIX_OUT="$out" \
  "$build/tests/moetune_integration_tests" \
  --gtest_filter='Presets/MemoryMatrix.*:Presets/MemoryMatrixRpc.*:Presets/MemoryMatrixDevices.*' \
  --gtest_brief=1
if [ $# -eq 0 ]; then
  cat "$out"
  rm -f "$out"
fi
