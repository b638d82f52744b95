#!/usr/bin/env bash
# Wall time of the commands a user runs first: `moetune doctor` (machine
# examination, "about 2 s") and `moetune demo` (the whole job, "a few minutes
# on two cores"). These were asserts in the integration tests; they are
# figures, so they are measured and reported here instead.
# Usage: bench/wall_time.sh [BUILD_DIR] [DOCTOR_ROUNDS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
rounds=${2:-3}
moetune="$build/moetune"
work=$(mktemp -d "${TMPDIR:-/tmp}/moetune-walltime.XXXXXX")
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }

times=()
for i in $(seq "$rounds"); do
  t0=$(now)
  "$moetune" doctor --json --no-save >"$work/doctor.json" 2>/dev/null || true
  t1=$(now)
  times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
echo "doctor --json --no-save: ${rounds} rounds, wall s: $(echo $sorted | tr '\n' ' ')" \
  "(min $(echo "$sorted" | head -1), median $(echo "$sorted" | sed -n "$(((rounds + 1) / 2))p"))"
grep -o '"doctor_seconds": [0-9.]*' "$work/doctor.json" | sed 's/^/  last run: /' || true

t0=$(now)
"$moetune" demo --dir "$work/demo" >"$work/demo.txt" 2>/dev/null
t1=$(now)
echo "demo (fresh folder, default settings): $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s wall"
grep -E 'configurations measured|demo finished' "$work/demo.txt" | sed 's/^/  /'
