#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs what is missing (Debian
# packages, the default llama.cpp engine), builds moetune, and runs the demo
# (synthesize a small MoE model, plan it, benchmark it with the real engine, and
# tune it on a simulated GPU machine and with the real engine on this CPU).
# Idempotent: a second run installs and rebuilds nothing.
# Usage: scripts/demo.sh [extra `moetune demo` options]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
scripts/install-deps.sh
scripts/setup-engine.sh
scripts/build.sh build moetune  # the tool only; scripts/test.sh builds the tests
exec build/moetune demo "$@"
