#!/usr/bin/env bash
# Configures and builds moetune (Release-with-debug-info, Ninja) into build/.
# Installs the Debian packages the build needs first (scripts/install-deps.sh, a
# no-op when they are there), so it works alone on a fresh machine.
# Usage: scripts/build.sh [BUILD_DIR] [TARGET...]   (default: everything)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/install-deps.sh"
build=${1:-$repo/build}
shift || true
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
