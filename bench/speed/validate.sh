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
# usage: bench/speed/validate.sh [OUT_DIR]   (about 10 minutes on two cores)
#   REPS=5            repetitions per llama-bench test (each test counts with its best)
#   NICE=-10          niceness of the measured processes: on a machine shared with
#                     other busy tenants they would otherwise measure the neighbours
#                     (a negative value needs root; falls back to 0)
#   MAX_LOAD=2.5      wait (up to 10 min) until the 1-minute load average is below this
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
moetune=${MOETUNE:-$root/build/moetune}
bin=${MOETUNE_LLAMA_DIR:-$root/.engine/bin}
out=${1:-/tmp/moetune-validate}
reps=${REPS:-5}
nice_n=${NICE:--10}
nice -n "$nice_n" true 2>/dev/null || nice_n=0
run() { nice -n "$nice_n" "$@"; }
mkdir -p "$out"
export MOETUNE_PROFILE="$out/machine.json"
export MOETUNE_LLAMA_DIR="$bin"

wait_quiet() {
  [ -n "${MAX_LOAD:-}" ] || return 0
  for _ in $(seq 60); do
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

echo "== 1. calibrate on A" >&2
wait_quiet
run "$moetune" calibrate "$out/A.gguf" -r "$reps" > "$out/calibration.txt"

echo "== 2. real runs of other configurations, A and B" >&2
for m in A B; do
  wait_quiet
  run "$bin/llama-bench" -m "$out/$m.gguf" -o jsonl -r "$reps" -ngl 0 -t 1,2 -ub 128,512 \
    -d 0,4096 -p 512 -n 32 > "$out/$m.jsonl" 2> "$out/$m.err"
done
cat "$out/A.jsonl" "$out/B.jsonl" > "$out/cpu.jsonl"
"$moetune" calibrate "$out/A.gguf" --validate "$out/cpu.jsonl" > "$out/validation-cpu.txt"

echo "== 3. RPC device as a second device" >&2
port=50700
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
nice -n "$nice_n" "$bin/ggml-rpc-server" -H 127.0.0.1 -p "$port" -t 1 > "$out/rpc-server.log" 2>&1 &
rpc_pid=$!
trap 'kill "$rpc_pid" 2>/dev/null || true' EXIT
sleep 2
rpc() {  # OUT_FILE NCMOE_LIST
  wait_quiet
  run "$bin/llama-bench" -m "$out/A.gguf" --rpc "127.0.0.1:$port" -o jsonl -r "$reps" -ngl 99 \
    -ncmoe "$2" -t 1 -ub 256 -p 256 -n 16 > "$1" 2>> "$out/rpc.err"
}
rpc "$out/rpc-calibrate.jsonl" 0,8
rpc "$out/rpc-validate.jsonl" 2,4,6
kill "$rpc_pid" 2>/dev/null || true
wait "$rpc_pid" 2>/dev/null || true
trap - EXIT
"$moetune" calibrate "$out/A.gguf" --machine rpc-cpu --measurements "$out/rpc-calibrate.jsonl" \
  --no-save > "$out/calibration-rpc.txt"
# Pin the link in the profile too, then predict the other placements.
"$moetune" calibrate "$out/A.gguf" --machine rpc-cpu --measurements "$out/rpc-calibrate.jsonl" \
  > /dev/null
"$moetune" calibrate "$out/A.gguf" --validate "$out/rpc-validate.jsonl" \
  > "$out/validation-rpc.txt"

for f in calibration.txt validation-cpu.txt calibration-rpc.txt validation-rpc.txt; do
  echo "### $f"
  cat "$out/$f"
  echo
done
