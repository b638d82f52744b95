#!/usr/bin/env bash
# GPU validation kit: measures a few placements of a full-size MoE model on an emulated 12 GiB
# card with the real llama.cpp (CUDA), strict and with unified memory, next to what moetune
# plans, predicts and simulates for the same machine, and writes one results folder and a table.
#
# On a machine with an NVIDIA GPU, the CUDA toolkit (nvcc) and no network:
#   1. builds llama-bench, llama-server and llama-fit-params with the CUDA backend for the GPU's
#      architecture from the llama.cpp source a registry package ships
#      (scripts/build-engine-from-bundle.sh --flavor cuda: node-llama-cpp's gitRelease.bundle,
#      into a cache folder outside the clone; --tarball gives the package when offline);
#   2. builds moetune (scripts/build.sh) unless MOETUNE names a working binary;
#   3. starts a ballast process (bench/gpu/ballast.cu, built with nvcc) that holds the card's
#      memory beyond the emulated size, so llama.cpp sees a 12 GiB card (--vram);
#   4. synthesizes a full-size model as a sparse file (moetune synth --sparse: the weights are
#      a hole of zeros, no disk space, the same shapes and sizes as the real model);
#   5. runs moetune doctor (the machine profile), plan (the placement for the emulated card at
#      the deep context) and, around the planned N, the real llama-bench at depth 0 and at the
#      deep context: once strict (an allocation that does not fit fails) and once with
#      GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 (llama.cpp allocates managed memory that silently
#      spills to host RAM: the overflow cliff Windows users get by default);
#   6. simulates the same grid with moetune's speed model (bench --engine sim, strict and
#      silent spill, on the doctor's profile of this machine) and writes RESULTS/table.md.
# Sized to finish, build included, in about 12 minutes on a 16-core machine.
#
# --cpu runs every step but CUDA on a machine without a GPU (the engine's CPU build, no ballast,
# a smaller model and a shorter deep context so that two cores finish in minutes): the kit's
# own test. Its table says which mode made it.
#
# Usage: bench/gpu/run.sh [--cpu] [--out DIR] [--vram SIZE] [--preset NAME] [--scale SCALE]
#                         [--quant TYPE] [--depth TOKENS] [--tarball FILE] [--cuda-arch LIST]
#                         [--jobs N]
#   --out DIR        results folder (default bench/gpu/results-<mode>-<date>, ignored by git)
#   --vram SIZE      the emulated card's free memory, e.g. 12GiB (default; --cpu: 1400MiB)
#   --preset NAME    model shape for moetune synth (default qwen3moe: Qwen3-30B-A3B)
#   --scale SCALE    synth scale (default full; --cpu: small)
#   --quant TYPE     synth file type (default q4_k_m)
#   --depth TOKENS   the deep context (default 32768; --cpu: 1024)
#   --tarball FILE   node-llama-cpp package, when the machine has no registry access
#   --cuda-arch LIST CMAKE_CUDA_ARCHITECTURES (default: the GPU's, from nvidia-smi)
#   --jobs N         compile jobs (default: every core)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kit=$repo/bench/gpu

mode=gpu out="" vram="" preset=qwen3moe scale="" quant=q4_k_m depth="" tarball=""
cuda_arch="" jobs=$(nproc)
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu; shift ;;
    --out) out=${2:?}; shift 2 ;;
    --vram) vram=${2:?}; shift 2 ;;
    --preset) preset=${2:?}; shift 2 ;;
    --scale) scale=${2:?}; shift 2 ;;
    --quant) quant=${2:?}; shift 2 ;;
    --depth) depth=${2:?}; shift 2 ;;
    --tarball) tarball=$(realpath "${2:?}"); shift 2 ;;
    --cuda-arch) cuda_arch=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "bench/gpu/run.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
for v in "$jobs" ${depth:+"$depth"}; do
  case $v in
    '' | *[!0-9]*) echo "bench/gpu/run.sh: '$v' is not a whole number (--jobs N, --depth TOKENS)" >&2; exit 2 ;;
  esac
done
if [ "$mode" = cpu ]; then
  # The small shape (16 layers, 585 MiB on a GPU at Q4_K_M) and 1400 MiB, less moetune's
  # 1 GiB safety margin: the edge falls mid-way. Short tests, so two shared cores finish in
  # minutes.
  scale=${scale:-small} depth=${depth:-1024} vram=${vram:-1400MiB} tests=(-p 128 -n 16)
else
  scale=${scale:-full} depth=${depth:-32768} vram=${vram:-12GiB} tests=(-p 512 -n 32)
fi
out=${out:-$kit/results-$mode-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(realpath "$out")
log() { printf '[%4d s] %s\n' "$SECONDS" "$*" | tee -a "$out/run.log" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { echo "bench/gpu/run.sh: needs $1 ($2)" >&2; exit 1; }; }
need python3 "writes the table"

work=$(mktemp -d "${TMPDIR:-/tmp}/moetune-gpu-kit.XXXXXX")
ballast_pid=""
cleanup() {
  if [ -n "$ballast_pid" ]; then kill "$ballast_pid" 2>/dev/null || true; wait "$ballast_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The engine.
engine_args=(--jobs "$jobs" --tools "llama-bench llama-server llama-fit-params")
[ -z "$tarball" ] || engine_args+=(--tarball "$tarball")
if [ "$mode" = gpu ]; then
  need nvidia-smi "the NVIDIA driver"
  need nvcc "the CUDA toolkit"
  engine_args+=(--flavor cuda)
  [ -z "$cuda_arch" ] || engine_args+=(--cuda-arch "$cuda_arch")
else
  engine_args+=(--flavor cpu)
fi
log "engine: building llama.cpp ($mode) from the bundled source, or reusing the cached build"
engine=$("$repo/scripts/build-engine-from-bundle.sh" "${engine_args[@]}" 2>>"$out/engine-build.log" | tail -1)
[ -x "$engine/llama-bench" ] || { echo "bench/gpu/run.sh: no llama-bench in '$engine' (see $out/engine-build.log)" >&2; exit 1; }
log "engine: $engine"
export MOETUNE_LLAMA_DIR=$engine

# 2. moetune.
moetune=${MOETUNE:-$repo/build/moetune}
if ! "$moetune" --version >/dev/null 2>&1; then
  log "moetune: building"
  "$repo/scripts/build.sh" "$repo/build" moetune >>"$out/moetune-build.log" 2>&1
  moetune=$repo/build/moetune
fi
"$moetune" --version >"$out/moetune-version.txt"

# 3. The emulated card.
case $vram in
  *[0-9]GiB) vram_mib=$((${vram%GiB} * 1024)) ;;
  *[0-9]MiB) vram_mib=${vram%MiB} ;;
  *) vram_mib=x ;;
esac
case $vram_mib in
  '' | *[!0-9]*) echo "bench/gpu/run.sh: --vram '$vram': give whole GiB or MiB, e.g. 12GiB or 1400MiB" >&2; exit 2 ;;
esac
if [ "$mode" = gpu ]; then
  nvidia-smi --query-gpu=name,memory.total,memory.used,memory.free,driver_version \
    --format=csv >"$out/gpu-before.csv"
  log "ballast: building, then holding all but $vram of the card"
  nvcc -O2 -o "$work/ballast" "$kit/ballast.cu"
  "$work/ballast" "$vram_mib" </dev/null >"$work/ballast.out" 2>&1 &
  ballast_pid=$!
  for _ in $(seq 120); do
    grep -q '^ballast: holding' "$work/ballast.out" && break
    kill -0 "$ballast_pid" 2>/dev/null || { cat "$work/ballast.out" >&2; exit 1; }
    sleep 0.5
  done
  grep '^ballast: holding' "$work/ballast.out" | tee -a "$out/run.log" >&2 ||
    { echo "bench/gpu/run.sh: the ballast did not settle in 60 s" >&2; exit 1; }
  nvidia-smi --query-gpu=name,memory.total,memory.used,memory.free --format=csv >"$out/gpu-ballast.csv"
fi

# 4. The model: full-size shapes, sparse weights.
model=$work/$preset-$scale-$quant.gguf
log "model: synth --preset $preset --scale $scale --quant $quant --sparse"
"$moetune" synth --preset "$preset" --scale "$scale" --quant "$quant" --sparse -o "$model" \
  >"$out/synth.txt" 2>&1

# 5. doctor, plan, and the real runs.
profile=$out/machine.json
log "doctor: the machine profile"
"$moetune" doctor --profile "$profile" --json >"$out/doctor.json" 2>"$out/doctor.err" || true
[ -s "$profile" ] || { echo "bench/gpu/run.sh: doctor wrote no profile (see $out/doctor.err)" >&2; exit 1; }
log "plan: $vram free, context $depth"
"$moetune" plan "$model" --vram "$vram" --ctx "$depth" --profile "$profile" --predict \
  --json >"$out/plan.json" 2>"$out/plan.err"
planned=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); n=j.get("n_cpu_moe"); print(-1 if n is None else n)' "$out/plan.json")
n_layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_layer"])' "$out/plan.json")
[ "$planned" -ge 0 ] || planned=0
# Around the plan: two layers past its edge (should overflow), the plan, two layers safer.
grid=$(python3 -c 'import sys; p,n=int(sys.argv[1]),int(sys.argv[2]); print(",".join(str(x) for x in sorted({max(0,p-2),p,min(n,p+2)})))' "$planned" "$n_layer")
log "plan: --n-cpu-moe $planned of $n_layer layers; measuring $grid at depth 0 and $depth"
bench_args=("$model" --ncmoe "$grid" -d "0,$depth" "${tests[@]}" -r 2 --timeout 600 --json --no-progress)
log "bench: strict"
"$moetune" bench "${bench_args[@]}" -o "$out/measured-strict.json" 2>"$out/measured-strict.err" ||
  log "bench strict: exit $? (failures are recorded in the JSON)"
if [ "$mode" = gpu ]; then
  log "bench: GGML_CUDA_ENABLE_UNIFIED_MEMORY=1"
  GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 "$moetune" bench "${bench_args[@]}" -o "$out/measured-unified.json" \
    2>"$out/measured-unified.err" || log "bench unified: exit $? (failures are recorded in the JSON)"
fi

# 6. The speed model on this machine's profile, the same grid: the emulated card strict and
# silent; in CPU mode the machine as it is (no GPU: what the runs above measured).
if [ "$mode" = gpu ]; then
  for spill in strict silent; do
    log "simulate: --spill $spill"
    "$moetune" bench "${bench_args[@]}" --engine sim --profile "$profile" --vram "$vram" \
      --spill "$spill" -o "$out/simulated-$spill.json" 2>"$out/simulated-$spill.err"
  done
else
  log "simulate: this machine, CPU only"
  "$moetune" bench "${bench_args[@]}" --engine sim --profile "$profile" \
    -o "$out/simulated-strict.json" 2>"$out/simulated-strict.err"
fi

python3 "$kit/table.py" "$out" "$mode" "$planned" "$depth" >"$out/table.md"
log "done: $out/table.md"
cat "$out/table.md"
