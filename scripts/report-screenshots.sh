#!/usr/bin/env bash
# Regenerates the report screenshots shown in the README (docs/images/): the
# HTML report of `moetune analyze` on the handwritten cliff sweep, at desktop
# and phone widths, taken with headless Chromium (scripts/install-deps.sh
# installs it). Usage: scripts/report-screenshots.sh [build/moetune]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
moetune="${1:-$root/build/moetune}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$moetune" analyze "$root/tests/fixtures/sweeps/cliff.jsonl" --ctx 32K \
  --report "$work/report.html" >/dev/null
flags=(--headless --disable-gpu --hide-scrollbars --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --proxy-server=127.0.0.1:9
       --user-data-dir="$work/profile")
if [ "$(id -u)" -eq 0 ]; then flags+=(--no-sandbox); fi
shot() {  # width height output
  timeout 120 chromium "${flags[@]}" --window-size="$1,$2" --screenshot="$3" \
    "file://$work/report.html" 2>/dev/null
}
mkdir -p "$root/docs/images"
shot 1280 1560 "$root/docs/images/report-desktop.png"
shot 390 1500 "$root/docs/images/report-phone.png"
echo "wrote docs/images/report-desktop.png and docs/images/report-phone.png"
