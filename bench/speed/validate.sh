#!/usr/bin/env bash
# Validates the speed model against the real llama.cpp on this machine
# (docs/speed-model.md, "Validation"):
#   1. calibrate on model A (qwen3moe shape, bench/speed/calib_qwen3moe.json),
#   2. predict real llama-bench runs of OTHER configurations of A and of another
#      shape B (gpt-oss, bench/speed/valid_gptoss.json): threads {1,2} x ubatch
#      {128,512} x depth {0,4096}, prefill pp512 and decode tg32,
#   3. with llama.cpp's RPC device as a second device (ggml-rpc-server on this
#      CPU): pin the link from two placements, predict three others.
# Prints the tables and the median absolute errors; everything lands in OUT.
#
# usage: bench/speed/validate.sh [OUT_DIR]   (10-20 minutes on two shared cores)
#   ROUNDS=3 REPS=2   rounds of interleaved runs, repetitions per test and round (each
#                     test counts with its best repetition over all rounds)
#   NICE=-10          niceness of the measured processes: on a machine shared with
#                     other busy tenants they would otherwise measure the neighbours
#                     (a negative value needs root; falls back to 0)
#   MAX_LOAD=2.5      before each round, wait until the 1-minute load average is below
#   WAIT_MINUTES=10   this (at most WAIT_MINUTES), so that the neighbours are quiet
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
moetune=${MOETUNE:-$root/build/moetune}
bin=${MOETUNE_LLAMA_DIR:-$root/.engine/bin}
out=${1:-/tmp/moetune-validate}
reps=${REPS:-2}
nice_n=${NICE:--10}
nice -n "$nice_n" true 2>/dev/null || nice_n=0
run() { nice -n "$nice_n" "$@"; }
mkdir -p "$out"
export MOETUNE_PROFILE="$out/machine.json"
export MOETUNE_LLAMA_DIR="$bin"

wait_quiet() {
  [ -n "${MAX_LOAD:-}" ] || return 0
  for _ in $(seq $((${WAIT_MINUTES:-10} * 6))); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l < m) }' && return 0
    echo "validate: load average $load >= $MAX_LOAD, waiting" >&2
    sleep 10
  done
}

echo "== machine profile and models" >&2
"$moetune" doctor > "$out/doctor.txt"
[ -f "$out/A.gguf" ] || "$moetune" synth --config "$here/calib_qwen3moe.json" --scale full \
  --quant q4_k_m -o "$out/A.gguf"
[ -f "$out/B.gguf" ] || "$moetune" synth --config "$here/valid_gptoss.json" --scale full \
  --quant q4_k_m -o "$out/B.gguf"

# The machine is shared: tests measured minutes apart see different loads. So the
# calibration runs (exactly those of `moetune calibrate`, from its --dry-run) and
# the validation runs are interleaved in ROUNDS rounds, and each test counts with
# its best repetition over all rounds (calibrate pools repeated tests).
rounds=${ROUNDS:-3}
mapfile -t cal_lines < <("$moetune" calibrate "$out/A.gguf" -r "$reps" --dry-run)
grid() {  # MODEL OUT
  run "$bin/llama-bench" -m "$out/$1.gguf" -o jsonl -r "$reps" -ngl 0 -t 1,2 -ub 128,512 \
    -d 0,4096 -p 512 -n 32 > "$2" 2>> "$out/bench.err"
}
for r in $(seq "$rounds"); do
  echo "== round $r/$rounds: calibration runs, then A and B" >&2
  wait_quiet
  : > "$out/cal-$r.jsonl"
  for line in "${cal_lines[@]}"; do
    read -ra argv <<< "$line"
    run "${argv[@]}" >> "$out/cal-$r.jsonl" 2>> "$out/bench.err"
  done
  grid A "$out/A-$r.jsonl"
  grid B "$out/B-$r.jsonl"
done
echo "== 1. calibrate on A (from its runs), 2. predict the other configurations" >&2
"$moetune" calibrate "$out/A.gguf" --measurements "$out"/cal-*.jsonl > "$out/calibration.txt"
"$moetune" calibrate "$out/A.gguf" --validate "$out"/A-*.jsonl "$out"/B-*.jsonl \
  > "$out/validation-cpu.txt"

echo "== 3. RPC device as a second device" >&2
port=50700
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
nice -n "$nice_n" "$bin/ggml-rpc-server" -H 127.0.0.1 -p "$port" -t 1 > "$out/rpc-server.log" 2>&1 &
rpc_pid=$!
trap 'kill "$rpc_pid" 2>/dev/null || true' EXIT
sleep 2
rpc() {  # OUT_FILE NCMOE_LIST
  run "$bin/llama-bench" -m "$out/A.gguf" --rpc "127.0.0.1:$port" -o jsonl -r "$reps" -ngl 99 \
    -ncmoe "$2" -t 1 -ub 256 -p 256 -n 16 > "$1" 2>> "$out/rpc.err"
}
for r in $(seq "$rounds"); do
  echo "== RPC round $r/$rounds" >&2
  wait_quiet
  rpc "$out/rpc-cal-$r.jsonl" 0,8
  rpc "$out/rpc-val-$r.jsonl" 2,4,6
done
kill "$rpc_pid" 2>/dev/null || true
wait "$rpc_pid" 2>/dev/null || true
trap - EXIT
# Pin the RPC link and round trip (the CPU constants stay), then predict the
# other placements.
"$moetune" calibrate "$out/A.gguf" --machine rpc-cpu --measurements "$out"/rpc-cal-*.jsonl \
  > "$out/calibration-rpc.txt"
"$moetune" calibrate "$out/A.gguf" --validate "$out"/rpc-val-*.jsonl > "$out/validation-rpc.txt"

for f in calibration.txt validation-cpu.txt calibration-rpc.txt validation-rpc.txt; do
  echo "### $f"
  cat "$out/$f"
  echo
done
