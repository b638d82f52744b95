#!/usr/bin/env bash
# Runs every moetune test on a fresh Debian 12 machine: installs what is missing
# (Debian packages, the default llama.cpp engine), builds, runs the unit and
# integration tests (real llama.cpp on generated models), then a short fuzz run.
# Usage: scripts/test.sh            (FUZZ_SECONDS=N seconds per fuzz target, default 15)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
scripts/install-deps.sh
scripts/setup-engine.sh
scripts/build.sh build
export MOETUNE_LLAMA_DIR="$repo/.engine/bin"
ctest --test-dir build --output-on-failure -j 2 --timeout 900 | tee build/ctest.log

# libFuzzer targets need clang; built separately so the main build stays on GCC.
if [ -d tests/fuzz ] && ls tests/fuzz/*_fuzz.cc >/dev/null 2>&1; then
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMOETUNE_FUZZ=ON -DMOETUNE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build build-fuzz -j "$(nproc)" --target fuzzers
  scripts/fuzz.sh build-fuzz "${FUZZ_SECONDS:-15}"
fi

# One closing line for the whole run (ctest's own summary is further up).
passed=$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests failed out of \([0-9]*\)$/\2 \1/p' build/ctest.log)
read -r total failed <<<"$passed"
echo "tests: $((total - failed)) passed, $failed failed"
