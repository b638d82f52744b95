#!/usr/bin/env bash
# Regenerates the report screenshots in docs/images/, taken with headless
# Chromium (scripts/install-deps.sh installs it) at desktop and phone widths:
#
#   tune-report-*.png  the HTML report of a recorded `moetune tune`: the
#                      simulated engine tuning a full-scale Qwen3-30B-A3B shape
#                      on a what-if RTX 4070 with silent spill (a cliff, and
#                      splits that collapse at depth), rendered by
#                      `moetune report` from tests/fixtures/tune/; in the README;
#   report-*.png       the HTML report of `moetune analyze` on the handwritten
#                      cliff sweep (tests/fixtures/sweeps/cliff.jsonl).
#
# Usage: scripts/report-screenshots.sh [build/moetune]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
moetune="${1:-$root/build/moetune}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$moetune" report "$root/tests/fixtures/tune/sim-rtx4070-silent-spill.json" \
  --report "$work/tune.html" >/dev/null
"$moetune" analyze "$root/tests/fixtures/sweeps/cliff.jsonl" --ctx 32K \
  --report "$work/analyze.html" >/dev/null
flags=(--headless --disable-gpu --hide-scrollbars --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --proxy-server=127.0.0.1:9
       --user-data-dir="$work/profile")
if [ "$(id -u)" -eq 0 ]; then flags+=(--no-sandbox); fi
shot() {  # page width height output
  timeout 120 chromium "${flags[@]}" --window-size="$2,$3" --screenshot="$4" "file://$1" \
    2>/dev/null
}
mkdir -p "$root/docs/images"
shot "$work/tune.html" 1280 1700 "$root/docs/images/tune-report-desktop.png"
shot "$work/tune.html" 390 1500 "$root/docs/images/tune-report-phone.png"
shot "$work/analyze.html" 1280 1560 "$root/docs/images/report-desktop.png"
shot "$work/analyze.html" 390 1500 "$root/docs/images/report-phone.png"
echo "wrote docs/images/tune-report-{desktop,phone}.png and docs/images/report-{desktop,phone}.png"
