#!/usr/bin/env bash
# Regenerates the report screenshots in docs/images/, taken with headless
# Chromium (scripts/install-deps.sh installs it) at desktop and phone widths:
#
#   tune-report-*.png  the HTML report of `moetune tune`: the tune that the
#                      report tests draw (the real Tuner on the handwritten GPU
#                      machine of src/report/tune_test_data.h, with a cliff and
#                      placements that fail to load), kept by the integration
#                      test through MOETUNE_REPORT_SHOTS; shown in the README;
#   report-*.png       the HTML report of `moetune analyze` on the handwritten
#                      cliff sweep (tests/fixtures/sweeps/cliff.jsonl).
#
# Usage: scripts/report-screenshots.sh [build folder, default build]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

MOETUNE_REPORT_SHOTS="$work" "$build/tests/moetune_integration_tests" \
  --gtest_filter='TuneReportHtml.SimulatedTuneWithACliffAndFailedPlacements' >"$work/test.log" ||
  { cat "$work/test.log" >&2; exit 1; }
"$build/moetune" analyze "$root/tests/fixtures/sweeps/cliff.jsonl" --ctx 32K \
  --report "$work/analyze.html" >/dev/null 2>&1

flags=(--headless --disable-gpu --hide-scrollbars --no-first-run --disable-background-networking
       --disable-component-update --disable-sync --proxy-server=127.0.0.1:9
       --user-data-dir="$work/profile")
if [ "$(id -u)" -eq 0 ]; then flags+=(--no-sandbox); fi
shot() {  # page width height output
  timeout 120 chromium "${flags[@]}" --window-size="$2,$3" --screenshot="$4" "file://$1" \
    2>/dev/null
}
mkdir -p "$root/docs/images"
shot "$work/tune-simulated.html" 1280 1700 "$root/docs/images/tune-report-desktop.png"
shot "$work/tune-simulated.html" 390 1500 "$root/docs/images/tune-report-phone.png"
shot "$work/analyze.html" 1280 1560 "$root/docs/images/report-desktop.png"
shot "$work/analyze.html" 390 1500 "$root/docs/images/report-phone.png"
echo "wrote docs/images/tune-report-{desktop,phone}.png and docs/images/report-{desktop,phone}.png"
