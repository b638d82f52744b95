#!/usr/bin/env bash
# Builds a second llama.cpp engine from the source that a registry package ships:
# node-llama-cpp's npm package carries llama/gitRelease.bundle, a git bundle of
# llama.cpp's source at the release its llama/llama.cpp.info.json names. The
# bundle is cloned and built in a cache folder outside the clone (never committed):
#
#   ${MOETUNE_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moetune/engines}/<package>-<version>/
#     node-llama-cpp-<version>.tgz   the package, kept so a rebuild needs no network
#     src/                           the bundle's checkout
#     build-<flavor>/bin/            the tools (point --llama-dir / MOETUNE_LLAMA_DIR here)
#     build-<flavor>/moetune-engine.json   written last: the build is complete
#
# The bundle (tag v0.4.0 for node-llama-cpp 3.21.1) is llama.cpp's tree squashed
# into one commit, so its build info reads "0.4.0-dev (build 1, commit 80fb11a)":
# the build number is git's commit count. node-llama-cpp's own patches
# (llama/patches) are not applied: this is llama.cpp as released.
#
# Flavors: `cpu` (default: CPU backend for a portable x86 level, RPC backend) and
# `cuda` (adds -DGGML_CUDA=ON for this machine's GPU architecture; the GPU kit uses
# it). Backends are linked in (no GGML_BACKEND_DL), as in most users' own builds.
# Re-running is a no-op once the build answers; the build folder is kept so an
# interrupted build resumes where it stopped. Offline once the package is cached
# (or given with --tarball); no CURL/OpenSSL, no web UI download.
#
# Usage: scripts/build-engine-from-bundle.sh [options]
#   --flavor cpu|cuda     backend set (default cpu)
#   --cpu-level LEVEL     x86-64-v2 | x86-64-v3 (default) | native: the CPU code's ISA level
#   --cuda-arch LIST      CMAKE_CUDA_ARCHITECTURES (default: the GPU's compute capability
#                         from nvidia-smi; required when no GPU answers)
#   --jobs N              parallel compile jobs (default 2: machines here are shared)
#   --tools "A B ..."     the tools to build (default: llama-bench llama-server
#                         llama-fit-params llama-quantize llama-cli llama-gguf-split
#                         ggml-rpc-server); a later run with more tools adds them
#   --package SPEC        npm package (default node-llama-cpp@3.21.1)
#   --tarball FILE        use this already downloaded package instead of `npm pack`
#   --cache DIR           cache root (default above)
#   --locate              print the bin folder if the build is complete, else exit 1;
#                         builds nothing
# Prints the bin folder on stdout when done; progress goes to stderr.
set -euo pipefail

flavor=cpu
cpu_level=x86-64-v3
cuda_arch=
jobs=2
package=node-llama-cpp@3.21.1
tarball=
cache_root=${MOETUNE_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/moetune/engines}
locate=0
tools=(llama-bench llama-server llama-fit-params llama-quantize llama-cli llama-gguf-split ggml-rpc-server)
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --flavor) flavor=${2:?}; shift 2 ;;
    --cpu-level) cpu_level=${2:?}; shift 2 ;;
    --cuda-arch) cuda_arch=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --tools) read -r -a tools <<<"${2:?}"; shift 2 ;;
    --package) package=${2:?}; shift 2 ;;
    --tarball) tarball=$(realpath "${2:?}"); shift 2 ;;
    --cache) cache_root=${2:?}; shift 2 ;;
    --locate) locate=1; shift ;;
    -h|--help) usage ;;
    *) echo "build-engine: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$flavor" in cpu|cuda) ;; *) echo "build-engine: --flavor is cpu or cuda, not $flavor" >&2; exit 2 ;; esac
case "$cpu_level" in x86-64-v2|x86-64-v3|native) ;; *)
  echo "build-engine: --cpu-level is x86-64-v2, x86-64-v3 or native, not $cpu_level" >&2; exit 2 ;;
esac
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "build-engine: --jobs takes a positive integer" >&2; exit 2; }
[[ "$package" =~ ^[a-z0-9@/._-]+@[0-9][0-9A-Za-z.+-]*$ ]] || {
  echo "build-engine: --package takes NAME@VERSION, not $package" >&2; exit 2; }

pkg_name=${package%@*}
pkg_version=${package##*@}
pkg_file=${pkg_name//\//-}-$pkg_version
pkg_file=${pkg_file#@}
root=$cache_root/$pkg_file
build=$root/build-$flavor
bin=$build/bin
stamp=$build/moetune-engine.json
log() { echo "build-engine: $*" >&2; }

complete() {
  [ -f "$stamp" ] || return 1
  local t
  for t in "${tools[@]}"; do [ -x "$bin/$t" ] || return 1; done
  "$bin/${tools[0]}" --help >/dev/null 2>&1
}
if complete; then echo "$bin"; exit 0; fi
if [ "$locate" = 1 ]; then
  log "no complete build in $build (run scripts/build-engine-from-bundle.sh to make one)"
  exit 1
fi

for need in git cmake ninja; do
  command -v "$need" >/dev/null || { log "needs $need (scripts/install-deps.sh installs it)"; exit 1; }
done
mkdir -p "$root"
start=$SECONDS

# 1. The package: kept in the cache so later runs (and other flavors) are offline.
if [ -z "$tarball" ]; then
  tarball=$root/$pkg_file.tgz
  if [ ! -s "$tarball" ]; then
    command -v npm >/dev/null || { log "needs npm to fetch $package (or give --tarball FILE)"; exit 1; }
    log "fetching $package with npm pack"
    tmp=$(mktemp -d "$root/pack.XXXXXX")
    (cd "$tmp" && npm pack --silent "$package" >/dev/null)
    mv "$tmp"/*.tgz "$tarball.tmp" && rmdir "$tmp"
    mv "$tarball.tmp" "$tarball"
  fi
fi

# 2. The source: the bundle's single commit, checked out once (build info reads git).
src=$root/src
if [ ! -f "$src/.moetune-complete" ]; then
  log "unpacking llama/gitRelease.bundle from $(basename "$tarball")"
  rm -rf "$src" "$root/unpack"
  mkdir -p "$root/unpack"
  tar -xzf "$tarball" -C "$root/unpack" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  rm -rf "$src.tmp"
  git -c advice.detachedHead=false clone --quiet "$root/unpack/package/llama/gitRelease.bundle" "$src.tmp"
  git -C "$src.tmp" rev-parse --verify -q HEAD >/dev/null || { log "the bundle has no commit"; exit 1; }
  cp "$root/unpack/package/llama/llama.cpp.info.json" "$src.tmp/.moetune-llama.cpp.info.json"
  rm -rf "$root/unpack"
  touch "$src.tmp/.moetune-complete"
  mv "$src.tmp" "$src"
fi

# 3. Configure: linked-in backends, a portable CPU level, RPC, nothing that downloads.
args=(-S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
      -DGGML_RPC=ON -DGGML_BACKEND_DL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF
      -DLLAMA_USE_PREBUILT_UI=OFF)
case "$cpu_level" in
  native) args+=(-DGGML_NATIVE=ON) ;;
  # x86-64-v3 is AVX2+FMA+F16C+BMI2 (Haswell, Zen 1 and later); v2 is SSE4.2 only.
  x86-64-v3) args+=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON) ;;
  x86-64-v2) args+=(-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF
                    -DGGML_F16C=OFF -DGGML_BMI2=OFF) ;;
esac
if [ "$flavor" = cuda ]; then
  if ! command -v nvcc >/dev/null; then
    [ -x /usr/local/cuda/bin/nvcc ] || { log "--flavor cuda needs the CUDA toolkit (nvcc)"; exit 1; }
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  if [ -z "$cuda_arch" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
    [ -n "$cap" ] || { log "no GPU answers nvidia-smi: give --cuda-arch (89 for an RTX 40xx, 90 for an H100/H200)"; exit 1; }
    cuda_arch=$cap
  fi
  args+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$cuda_arch")
fi
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  log "configuring $flavor build in $build"
  # A failed configure leaves nothing behind that a rerun would trust.
  cmake "${args[@]}" >"$root/configure-$flavor.log" 2>&1 || {
    rm -rf "$build"; log "configure failed, see $root/configure-$flavor.log"; exit 1; }
fi

# 4. Build only the tools moetune drives (the rest of the tree is not needed).
log "building ${tools[*]} with -j$jobs (about 17 CPU-minutes for the CPU flavor)"
cmake --build "$build" -j "$jobs" --target "${tools[@]}" >"$root/build-$flavor.log" 2>&1 || {
  tail -n 30 "$root/build-$flavor.log" >&2; log "build failed, see $root/build-$flavor.log"; exit 1; }
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || { log "the build made no $t"; exit 1; }; done
"$bin/${tools[0]}" --help >/dev/null 2>&1 || { log "the built ${tools[0]} does not start"; exit 1; }

# 5. The record, written last (its presence means complete).
# llama-bench 0.4.0 has no --version; the tools on the common argument parser do.
version_line=
for t in llama-server llama-cli llama-fit-params llama-bench; do
  [ -x "$bin/$t" ] || continue
  version_line=$("$bin/$t" --version 2>&1 | grep -m1 '^version:' || true)
  [ -n "$version_line" ] && break
done
commit=$(git -C "$src" rev-parse HEAD)
tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$src/.moetune-llama.cpp.info.json")
cat >"$stamp.tmp" <<JSON
{
  "source": "$package llama/gitRelease.bundle",
  "llama_cpp_tag": "$tag",
  "bundle_commit": "$commit",
  "version_line": "$version_line",
  "flavor": "$flavor",
  "cpu_level": "$cpu_level",
  "cuda_architectures": "$cuda_arch",
  "build_seconds": $((SECONDS - start)),
  "jobs": $jobs,
  "tools": "${tools[*]}",
  "built_at": "$(date -u +%FT%TZ)"
}
JSON
mv "$stamp.tmp" "$stamp"
log "engine ready in $bin: $version_line (llama.cpp $tag), $((SECONDS - start)) s"
echo "$bin"
