#!/usr/bin/env bash
# Runs every moetune check on a fresh Debian 12 machine: installs what is missing (Debian
# packages, the default llama.cpp engine), builds, lints (clang-format and the include
# directions on every file, clang-tidy on the sources not known clean, see .ci/tidy-clean),
# runs the unit and integration tests (real llama.cpp on generated models), the fast part of
# them against a second llama.cpp when its build is cached (scripts/compat.sh), then builds the
# fuzz targets and runs each briefly. Prints the time of each step.
# Compiles go through ccache with its cache outside the clone (cmake/compiler_cache.cmake), and
# the fuzz corpora are kept there too, so a second run on the same machine redoes little; a
# fresh machine does everything.
# Usage: scripts/test.sh
#   FUZZ_SECONDS=N   seconds per fuzz target (default 5, and 15 for a target this machine has
#                    no corpus for yet)
#   LINT=full        clang-tidy on every file (about an hour of CPU on two cores)
#   LINT=off         no lint step
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

timings=()
times_line() {
  local line="time:" t
  for t in "${timings[@]}"; do line+=" $t,"; done
  echo "$line total $SECONDS s"
}
current="" current_start=0
step() {  # step NAME COMMAND...: runs it and records its wall time
  current=$1 current_start=$SECONDS
  shift
  "$@"
  timings+=("$current $((SECONDS - current_start)) s")
  current=""
}
# A failed step ends the run (set -e); say which, and where the time went until then.
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$current" ]; then
    timings+=("$current (failed, exit $rc) $((SECONDS - current_start)) s")
    times_line
  fi
}
trap on_exit EXIT

lint() {
  case "${LINT:-unrecorded}" in
    off) echo "lint: skipped (LINT=off)" ;;
    full) scripts/lint.sh build ;;
    # clang-tidy costs 10-16 s of CPU per file: CI checks the sources whose content was not
    # checked clean before (.ci/tidy-clean, or an earlier run on this machine).
    *) scripts/lint.sh --unrecorded build ;;
  esac
}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/moetune
fuzz_build() {
  # libFuzzer targets need clang; built separately so the main build stays on GCC.
  if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMOETUNE_FUZZ=ON -DMOETUNE_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  fi
  cmake --build build-fuzz -j "$(nproc)" --target fuzzers
}
fuzz() {
  # The corpora grow from run to run on this machine: a short run continues the last one.
  FUZZ_CORPUS_DIR=$cache/fuzz-corpus scripts/fuzz.sh build-fuzz "${FUZZ_SECONDS:-5}" \
    "${FUZZ_SECONDS:-15}"
}

tests() {
  # ctest starts the longest tests first when it knows their cost (CTestCostData.txt, which
  # each run writes); a clean clone has none, so the last run's on this machine is used.
  local costs=build/Testing/Temporary/CTestCostData.txt status=0
  if [ ! -f "$costs" ] && [ -f "$cache/ctest-costs.txt" ]; then
    mkdir -p "$(dirname "$costs")"
    cp "$cache/ctest-costs.txt" "$costs"
  fi
  ctest --test-dir build --output-on-failure -j 2 --timeout 900 | tee build/ctest.log ||
    status=$?
  if [ -f "$costs" ]; then
    mkdir -p "$cache"
    cp "$costs" "$cache/ctest-costs.txt.tmp" && mv "$cache/ctest-costs.txt.tmp" "$cache/ctest-costs.txt"
  fi
  return $status
}

step install scripts/install-deps.sh
step engine scripts/setup-engine.sh
step build scripts/build.sh build
step lint lint
export MOETUNE_LLAMA_DIR="$repo/.engine/bin"
step tests tests
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
step fuzz-build fuzz_build
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
times_line
