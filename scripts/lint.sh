#!/usr/bin/env bash
# Style and structure checks that CI runs (scripts/test.sh calls this):
#   1. clang-format: every C++ file matches .clang-format (prints the files that do not);
#   2. include directions between src/ folders (scripts/check-deps.sh);
#   3. clang-tidy with .clang-tidy on every source file of the build (warnings are errors).
# Usage: scripts/lint.sh [BUILD_DIR]   (needs BUILD_DIR/compile_commands.json; default build)
# Fix formatting with: clang-format -i $(git ls-files '*.cc' '*.h')
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
cd "$repo"
status=0

mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src tests bench -name '*.cc' -o -name '*.h')
unformatted=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
if ((${#unformatted[@]})); then
  echo "lint: clang-format: ${#unformatted[@]} file(s) need formatting: ${unformatted[*]}"
  echo "lint: fix with: clang-format -i ${unformatted[*]}"
  status=1
else
  echo "lint: clang-format ok (${#files[@]} files)"
fi

scripts/check-deps.sh || status=1

if [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: no $build/compile_commands.json; build first (scripts/build.sh)" >&2
  exit 1
fi
# The compile database holds GCC's flags; clang-tidy must not stop at the ones it lacks.
# Fuzz targets are built separately with clang and are not in this database.
mapfile -t sources < <(for f in "${files[@]}"; do case "$f" in *.cc) [ -f "$f" ] && echo "$repo/$f";; esac; done | grep -v '/tests/fuzz/')
log="$build/clang-tidy.log"
if run-clang-tidy -p "$build" -j "$(nproc)" -quiet -extra-arg=-Wno-unknown-warning-option \
     "${sources[@]}" >"$log" 2>&1; then
  echo "lint: clang-tidy ok (${#sources[@]} files)"
else
  grep -E '^/.*: (error|warning): ' "$log" | sort -u | head -50
  echo "lint: clang-tidy found problems (whole log: $log)"
  status=1
fi
exit $status
