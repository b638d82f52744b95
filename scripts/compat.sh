#!/usr/bin/env bash
# Runs moetune's engine-facing integration tests against two llama.cpp engines
# in one go and prints a compatibility table (docs/engine.md keeps its figures):
#   default  Debian's llama.cpp (scripts/setup-engine.sh; MOETUNE_LLAMA_DIR if set)
#   bundle   llama.cpp built from node-llama-cpp's bundled source
#            (scripts/build-engine-from-bundle.sh: ~11 minutes on two cores the
#            first time, then reused from its cache folder)
#
# Usage: scripts/compat.sh [--quick] [--no-build] [--only default|bundle] [BUILD_DIR]
#   --quick      the fast part only (what CI runs against the second engine)
#   --no-build   do not build the bundle engine when its cache is missing: skip it
#                (said so, and not counted as passing)
#   --only NAME  one engine
#   BUILD_DIR    moetune's build folder (default build/), built if needed
# Exit status: 0 when every engine that ran passed every test, 1 otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
quick=0
build_bundle=1
only=
build=
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --no-build) build_bundle=0; shift ;;
    --only) only=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "compat: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
build=${build:-$repo/build}
case "$only" in ''|default|bundle) ;; *) echo "compat: --only takes default or bundle" >&2; exit 2 ;; esac

# The integration suites that run the engine: discovery and llama-bench
# (engine, bench), the memory dry run (plan --check, fit-params, the memory
# matrix), llama-server (server, serve, watch), tune and calibrate with the real
# engine (tune, tune reports, speed), synth models loaded by the engine, doctor,
# hostile engine output, signals and cleanup. The quick part is the subset that
# covers every tool in a few minutes.
full_suites='EngineTest|BenchCliTest|PlanCliTest|ServerTest|ServeTest|ServerMemoryTest|WatchTest'
full_suites+='|TuneCli|TuneEmitCli|TuneReportHtml|SpeedTest|SynthEngineTest|SynthServerTest'
full_suites+='|SynthLoadTest|MemoryMatrix|MemoryMatrixRpc|MemoryMatrixDevices|Doctor|HostileEngineTest'
full_suites+='|SignalCleanupTest'
full_suites+='|EmitTest|DemoTest'
quick_suites='EngineTest|PlanCliTest|ServerTest|SynthEngineTest|SynthServerTest|MemoryMatrixRpc'
suites=$full_suites
[ "$quick" = 1 ] && suites=$quick_suites
# Parameterized suites carry their instantiation's prefix ("Presets/").
regex="^([A-Za-z]+/)?($suites)\\."

if [ ! -x "$build/moetune" ] || [ ! -x "$build/tests/moetune_integration_tests" ]; then
  "$repo/scripts/build.sh" "$build" moetune moetune_integration_tests
fi

names=()
dirs=()
if [ -z "$only" ] || [ "$only" = default ]; then
  if [ -n "${MOETUNE_LLAMA_DIR:-}" ]; then
    names+=(default); dirs+=("$MOETUNE_LLAMA_DIR")
  else
    "$repo/scripts/setup-engine.sh"
    names+=(default); dirs+=("$repo/.engine/bin")
  fi
fi
skipped=()
if [ -z "$only" ] || [ "$only" = bundle ]; then
  if bundle=$("$repo/scripts/build-engine-from-bundle.sh" --locate 2>/dev/null); then
    names+=(bundle); dirs+=("$bundle")
  elif [ "$build_bundle" = 1 ]; then
    bundle=$("$repo/scripts/build-engine-from-bundle.sh")
    names+=(bundle); dirs+=("$bundle")
  else
    skipped+=("bundle: skipped, no build in the cache (scripts/build-engine-from-bundle.sh makes one)")
  fi
fi

out=$build/compat
mkdir -p "$out"
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
rows=()
status=0
for i in "${!names[@]}"; do
  name=${names[$i]}
  dir=${dirs[$i]}
  version=$("$build/moetune" engine --llama-dir "$dir" --json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["version_line"] or "unknown", "|", j["version_tool"] or "-", "|", ", ".join(j["backends"]) or "unknown", "(" + j["backend_source"] + ")")' ||
    echo "unknown | - | unknown")
  echo "compat: $name engine ($dir): running $([ "$quick" = 1 ] && echo quick || echo full) suites" >&2
  start=$SECONDS
  rc=0
  MOETUNE_LLAMA_DIR=$dir nice -n 5 ctest --test-dir "$build" -L integration -R "$regex" -j 2 \
    --timeout 900 --output-on-failure >"$out/$name.log" 2>&1 || rc=$?
  took=$((SECONDS - start))
  summary=$(sed -n 's/^[0-9]*% tests passed, \([0-9]*\) tests failed out of \([0-9]*\)$/\2 \1/p' "$out/$name.log")
  read -r total failed <<<"${summary:-0 0}"
  if [ "$total" = 0 ] || [ "$rc" != 0 ]; then status=1; fi
  failing=$(sed -n 's/^[[:space:]]*[0-9]\{1,\} - \([A-Za-z0-9_.\/]*\) .*/\1/p' "$out/$name.log" | paste -sd' ' -)
  rows+=("| $name | $version | $((total - failed))/$total passed | $took s | ${failing:-none} |")
  # Per suite: "N/M Test #K: Suite.Name .... Passed|***Failed|***Timeout ...".
  sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([A-Za-z0-9_/]*\)\..*[ *]\([A-Za-z]\{1,\}\) \{1,\}[0-9.]\{1,\} sec$/\1 \2/p' \
    "$out/$name.log" >"$out/$name.suites"
done

echo
echo "| engine | version line | version from | backends | tests | wall time | failed |"
echo "|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "$r"; done
for s in "${skipped[@]}"; do echo "$s"; done
if [ "${#names[@]}" -gt 0 ]; then
  echo
  # Passed/failed per suite and engine (engines in the order they ran).
  python3 - "$out" "${names[@]}" <<'PY'
import collections, sys
out, names = sys.argv[1], sys.argv[2:]
counts = {}
suites = []
for n in names:
    c = collections.defaultdict(lambda: [0, 0])
    for line in open(f"{out}/{n}.suites"):
        suite, result = line.split()
        c[suite][0 if result == "Passed" else 1] += 1
        if suite not in suites:
            suites.append(suite)
    counts[n] = c
print("| suite | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for s in suites:
    cells = [f"{counts[n][s][0]} passed, {counts[n][s][1]} failed" if s in counts[n] else "-" for n in names]
    print(f"| {s} | " + " | ".join(cells) + " |")
PY
fi
echo
echo "compat: logs in $out; load average (1, 5, 15 min): $load_before before, $(load) after"
exit "$status"
