#!/usr/bin/env bash
# Runs every moetune check on a fresh Debian 12 machine: installs what is missing
# (Debian packages, the default llama.cpp engine), builds, lints (clang-format and
# the include directions on every file, clang-tidy on the files changed since the
# last full clean run, see .ci/lint-base), runs the unit and integration tests (real
# llama.cpp on generated models), the fast part of them against a second llama.cpp
# when its build is cached (scripts/compat.sh), then a short fuzz run. Prints the
# time of each step.
# Usage: scripts/test.sh
#   FUZZ_SECONDS=N   seconds per fuzz target (default 15)
#   LINT=full        clang-tidy on every file (about an hour of CPU on two cores)
#   LINT=off         no lint step
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

timings=()
step() {  # step NAME COMMAND...: runs it and records its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  timings+=("$name $((SECONDS - start)) s")
}

lint() {
  case "${LINT:-changed}" in
    off) echo "lint: skipped (LINT=off)" ;;
    full) scripts/lint.sh build ;;
    *)
      scripts/lint.sh --no-tidy build
      # clang-tidy costs 10-16 s of CPU per file: CI checks what changed since
      # the last full clean run (.ci/lint-base); `LINT=full` checks everything.
      local base
      base=$(grep -v '^#' .ci/lint-base | head -n1)
      if git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
        scripts/lint.sh --changed-since "$base" build
      else
        echo "lint: .ci/lint-base ($base) is not in this clone's history: clang-tidy on every file"
        scripts/lint.sh build
      fi
      ;;
  esac
}

fuzz() {
  # libFuzzer targets need clang; built separately so the main build stays on GCC.
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMOETUNE_FUZZ=ON -DMOETUNE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build build-fuzz -j "$(nproc)" --target fuzzers
  scripts/fuzz.sh build-fuzz "${FUZZ_SECONDS:-15}"
}

step install scripts/install-deps.sh
step engine scripts/setup-engine.sh
step build scripts/build.sh build
step lint lint
export MOETUNE_LLAMA_DIR="$repo/.engine/bin"
step tests bash -o pipefail -c 'ctest --test-dir build --output-on-failure -j 2 --timeout 900 | tee build/ctest.log'
# The fast part of the engine-facing tests against a second llama.cpp (0.4.0,
# built from a registry package's bundled source) when its build is in the
# cache. Building it costs 11+ minutes, so CI never does: without the cache
# the step says so and counts nothing.
second_engine() {
  if scripts/build-engine-from-bundle.sh --locate >/dev/null 2>&1; then
    scripts/compat.sh --quick --only bundle --no-build build
  else
    echo "second engine: skipped, not counted: no build of the bundled llama.cpp in the cache" \
      "(scripts/build-engine-from-bundle.sh makes one, about 11 minutes on two cores)"
  fi
}
step engine2 second_engine
step fuzz fuzz

# One closing line for the whole run (ctest's own summary is further up).
passed=$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests failed out of \([0-9]*\)$/\2 \1/p' build/ctest.log)
read -r total failed <<<"$passed"
echo "tests: $((total - failed)) passed, $failed failed"
if [ -f build/compat/bundle.log ] && scripts/build-engine-from-bundle.sh --locate >/dev/null 2>&1; then
  second=$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests failed out of \([0-9]*\)$/\2 \1/p' build/compat/bundle.log)
  read -r total2 failed2 <<<"${second:-0 0}"
  echo "second engine (quick): $((total2 - failed2)) passed, $failed2 failed"
else
  echo "second engine: skipped (not counted)"
fi
line="time:"
for t in "${timings[@]}"; do line+=" $t,"; done
echo "$line total $SECONDS s"
