#!/usr/bin/env bash
# The sanity anchors of docs/speed-model.md: public llama.cpp figures beside the
# simulated engine on a matching what-if machine (default constants: no profile).
# Writes sparse full-scale synth models (a few MB each) into OUT.
#
# usage: bench/speed/anchors.sh [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
moetune=${MOETUNE:-$root/build/moetune}
out=${1:-/tmp/moetune-anchors}
mkdir -p "$out"
export MOETUNE_PROFILE="$out/no-profile.json"  # absent: the default constants

model() {  # PRESET QUANT -> path
  local f="$out/$1-$2.gguf"
  [ -f "$f" ] || "$moetune" synth --preset "$1" --scale full --quant "$2" --sparse -o "$f" >&2 2>/dev/null
  echo "$f"
}
sim() {  # TITLE PUBLISHED MODEL ARGS...
  local title=$1 published=$2 m=$3
  shift 3
  echo "### $title (published: $published)"
  "$moetune" bench "$m" --engine sim --seed 1 -r 5 "$@" 2>/dev/null | sed -n '/^|/p'
  echo
}

q3=$(model qwen3moe q4_k_m)
q35=$(model qwen35moe q6_k)
oss120=$(model gpt-oss-120b mxfp4)
oss20=$(model gpt-oss-20b mxfp4)
q3q4=$(model qwen3moe q4_k)
glm=$(model glm4moe q4_k_m)

sim "Qwen3-30B-A3B Q4_K_M, RTX 2080 8 GB, quad DDR4 ~102 GB/s, -ncmoe 36" "tg 36.7" "$q3" \
  --machine rtx2080-8g,ddr4-3200-4ch --ram-bw 102GB/s --cpu 10C/smt2 -t 10 --ncmoe 36 -p 0 -n 128
sim "Qwen3.6-35B-A3B Q6, RTX 5070 Ti 16 GB, -ncmoe 27" "pp 380, tg 52" "$q35" \
  --machine rtx5070ti-16g,ddr5-6000-2ch,8c16t -t 8 --ncmoe 27 -p 512 -n 128
sim "gpt-oss-120b, 2x RTX 5090, -ngl 99 -ncmoe 3" "tg 108" "$oss120" \
  --machine 2xrtx5090-32g,ddr5-6000-2ch,16c32t -t 16 --ncmoe 3 -p 0 -n 128
sim "Qwen3-30B-A3B, Ryzen 9 7950X CPU only" "pp512 210, tg128 27.2" "$q3" \
  --machine no-gpu,16c32t,ddr5-6000-2ch -t 16 -p 512 -n 128
sim "gpt-oss-20b, Ryzen 9 7950X CPU only" "pp512 149, tg128 21.5" "$oss20" \
  --machine no-gpu,16c32t,ddr5-6000-2ch -t 16 -p 512 -n 128
sim "Qwen3-30B-A3B Q4_0-size, experts on CPU, mmap vs no mmap (pinned)" "pp512 227 -> 310" "$q3q4" \
  --machine rtx3090-24g,ddr5-6000-2ch,16c32t -t 16 --ncmoe 48 -p 512 -n 0 --lm mmap
sim "(same, pinned)" "pp512 310" "$q3q4" \
  --machine rtx3090-24g,ddr5-6000-2ch,16c32t -t 16 --ncmoe 48 -p 512 -n 0 --lm none
sim "GLM-4.5-Air, 32 GB VRAM, CPU experts, -ub 512 vs 2048" "pp ~175 -> ~535" "$glm" \
  --machine rtx5090-32g,ddr5-6000-2ch,16c32t -t 16 --ncmoe 38 -p 2048 -n 0 --ub 512,2048
