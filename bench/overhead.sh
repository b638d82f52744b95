#!/usr/bin/env bash
# moetune's overhead over calling llama-bench directly for the same sweep.
# Runs the identical argument vector (taken from `moetune bench --dry-run`)
# once directly and once through `moetune bench`, alternating, and prints the
# wall-time ratio. Usage: bench/overhead.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
rounds=${2:-3}
moetune="$build/moetune"
work=$(mktemp -d "${TMPDIR:-/tmp}/moetune-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$moetune" synth --preset qwen3moe --scale tiny -o "$work/m.gguf" 2>/dev/null
# One thread: on a shared machine multi-threaded runs vary far more than any overhead.
sweep=(-t 1 -p 512 -n 64 -r 5 --ub 128,256,512)
mapfile -t direct < <("$moetune" bench "$work/m.gguf" "${sweep[@]}" --dry-run | head -1 | tr ' ' '\n')
now() { date +%s.%N; }
direct_total=0; moetune_total=0
for i in $(seq "$rounds"); do
  t0=$(now); "${direct[@]}" >/dev/null 2>&1; t1=$(now)
  "$moetune" bench "$work/m.gguf" "${sweep[@]}" --json --no-progress >/dev/null; t2=$(now)
  direct_total=$(awk -v a="$direct_total" -v b="$t0" -v c="$t1" 'BEGIN { print a + c - b }')
  moetune_total=$(awk -v a="$moetune_total" -v b="$t1" -v c="$t2" 'BEGIN { print a + c - b }')
done
printf 'sweep: %s (%d rounds, alternating)\n' "${sweep[*]}" "$rounds"
awk -v d="$direct_total" -v m="$moetune_total" 'BEGIN {
  printf "llama-bench directly: %.2f s\nmoetune bench:        %.2f s\nratio moetune/direct: %.4f (overhead %.2f%%)\n",
         d, m, m / d, (m / d - 1) * 100 }'
