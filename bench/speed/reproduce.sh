#!/usr/bin/env bash
# How far calibrations reproduce on this machine (docs/speed-model.md, "How far a
# calibration reproduces"):
#   1. measures another shape B (gpt-oss, bench/speed/valid_gptoss.json) once with the real
#      llama-bench (moetune bench --wait-quiet): pp512 and tg32 at threads {1,2} x depth
#      {0,4096}, every layer on the CPU;
#   2. calibrates N times in a row on model A (qwen3moe shape, bench/speed/calib_qwen3moe.json),
#      each from the defaults (a fresh copy of the machine profile), with --wait-quiet;
#   3. predicts B's runs with each calibration (`calibrate B --validate`) and prints, per
#      calibration, its held-out check, the machine's load and the error against B's runs,
#      then the largest pairwise difference of the N predictions of each run of B.
# Everything lands in OUT; the last lines are the summary.
#
# usage: bench/speed/reproduce.sh [OUT_DIR]   (about 3 minutes per calibration on two cores)
#   N=5            calibrations in a row
#   REPS=3         repetitions of each calibration test (moetune calibrate -r)
#   WAIT_QUIET=120 seconds B's runs and each calibration wait for a quiet machine (--wait-quiet)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
moetune=${MOETUNE:-$root/build/moetune}
bin=${MOETUNE_LLAMA_DIR:-$root/.engine/bin}
out=${1:-/tmp/moetune-reproduce}
n=${N:-5}
reps=${REPS:-3}
wait_quiet=${WAIT_QUIET:-120}
command -v jq > /dev/null || { echo "reproduce: needs jq (apt install jq)" >&2; exit 2; }
mkdir -p "$out"
export MOETUNE_LLAMA_DIR="$bin"

echo "== machine profile and models" >&2
MOETUNE_PROFILE="$out/machine.json" "$moetune" doctor > "$out/doctor.txt"
[ -f "$out/A.gguf" ] || "$moetune" synth --config "$here/calib_qwen3moe.json" --scale full \
  --quant q4_k_m -o "$out/A.gguf"
[ -f "$out/B.gguf" ] || "$moetune" synth --config "$here/valid_gptoss.json" --scale full \
  --quant q4_k_m -o "$out/B.gguf"

echo "== real runs of B" >&2
MOETUNE_PROFILE="$out/machine.json" "$moetune" bench "$out/B.gguf" --ngl 0 -t 1,2 --ub 512 \
  -d 0,4096 -p 512 -n 32 -r "$reps" --wait-quiet="$wait_quiet" --no-progress --json \
  -o "$out/B.json" 2> "$out/bench.err"

for i in $(seq "$n"); do
  echo "== calibration $i/$n" >&2
  cp "$out/machine.json" "$out/profile-$i.json"
  export MOETUNE_PROFILE="$out/profile-$i.json"
  "$moetune" calibrate "$out/A.gguf" -r "$reps" --wait-quiet="$wait_quiet" --json \
    -o "$out/calibration-$i.json" 2> "$out/calibration-$i.err"
  "$moetune" calibrate "$out/B.gguf" --validate "$out/B.json" --json \
    -o "$out/prediction-$i.json"
done
unset MOETUNE_PROFILE

echo "## B's runs: other processes used up to $(jq '[.results[].other_cpu_cores // empty] | max' \
  "$out/B.json") cores"
grep -h "WARNING" "$out/bench.err" || true
echo "## each calibration: held-out median |error|, spread, load; error against B's runs"
for i in $(seq "$n"); do
  jq -r --slurpfile p "$out/prediction-$i.json" --arg i "$i" '
    .uncertainty as $u
    | "calibration \($i): held-out prefill \($u.held_out_prefill * 1000 | round / 10)%, decode "
      + "\($u.held_out_decode * 1000 | round / 10)%; spread median "
      + "\($u.spread_median * 1000 | round / 10)%, max \($u.spread_max * 1000 | round / 10)%; "
      + "unstable \([.points[] | select(.unstable)] | length), measured again "
      + "\([.points[] | select(.rounds > 1)] | length); other processes up to "
      + "\($u.other_cores_max // "?") cores; B: prefill "
      + "\($p[0].median_abs_error_prefill * 1000 | round / 10)%, decode "
      + "\($p[0].median_abs_error_decode * 1000 | round / 10)%"' "$out/calibration-$i.json"
  grep -h "WARNING" "$out/calibration-$i.err" || true
done
echo "## largest pairwise difference of the $n predictions of each run of B (max/min - 1)"
jq -rs '
  [.[] | .points] | transpose
  | map({test: .[0].test, prefill: .[0].prefill,
         spread: ((map(.predicted_tps) | max) / (map(.predicted_tps) | min) - 1)})
  | (.[] | "\(.test): \(.spread * 1000 | round / 10)%"),
    "max prefill: \(map(select(.prefill)) | map(.spread) | max * 1000 | round / 10)%",
    "max decode: \(map(select(.prefill | not)) | map(.spread) | max * 1000 | round / 10)%"' \
  "$out"/prediction-*.json
