#!/usr/bin/env bash
# Installs the default engine: a real llama.cpp (llama-bench, llama-server,
# llama-fit-params, CPU backends for every x86 level, RPC backend) from Debian
# unstable's binary packages into a private folder, without touching the system.
#
# The packages come from the Debian mirror the machine's apt already uses
# (scripts/apt-sid-source.sh), through its proxy settings.
#
# Debian 12's glibc is too old for those binaries, so sid's libc, libstdc++ and
# friends are unpacked beside them and every program is started through that
# folder's own dynamic loader (see shared/docs/llama-cpp.md). Wrapper scripts in
# ENGINE_DIR/bin do that, so callers just run ENGINE_DIR/bin/llama-bench.
#
# Usage: scripts/setup-engine.sh [ENGINE_DIR]   (default: <repo>/.engine)
# Re-running it is a no-op once the engine is installed and answers --version.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${MOETUNE_ENGINE_DIR:-$repo/.engine}}
tools=(llama-bench llama-server llama-fit-params llama-cli llama-gguf-split llama-quantize)
# ggml-rpc-server (llama.cpp-tools-extra) lives in libexec: the RPC backend's
# server, a second device with real per-device buffers on a machine without a GPU.
libexec_tools=(ggml-rpc-server)

installed=1
for t in "${tools[@]}" "${libexec_tools[@]}"; do [ -x "$dest/bin/$t" ] || installed=0; done
if [ "$installed" = 1 ] && [ -f "$dest/engine.json" ] && "$dest/bin/llama-bench" --version >/dev/null 2>&1; then
  exit 0
fi

echo "moetune: installing the default llama.cpp engine into $dest" >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/moetune-engine.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/root" "$work/sources"
# Debian sid from the machine's own mirror and keyring (scripts/apt-sid-source.sh);
# everything else (proxy, timeouts, authentication) is the machine's apt configuration.
sid_source=$("$repo/scripts/apt-sid-source.sh")
case "$sid_source" in
  deb\ *) printf '%s\n' "$sid_source" >"$work/sources/moetune-sid.list" ;;
  *) printf '%s\n' "$sid_source" >"$work/sources/moetune-sid.sources" ;;
esac
echo "moetune: Debian sid from: $(printf '%s\n' "$sid_source" | grep -m1 -E '^(deb |URIs:)')" >&2
: >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/sources"
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
          -o Dir::State::status=/dev/null -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update || {
  echo "moetune: apt-get update of Debian sid failed (above); if this mirror does not carry sid," \
    "set MOETUNE_DEBIAN_MIRROR to one that does" >&2
  exit 1
}
pkgs=(llama.cpp-tools llama.cpp-tools-extra libllama0 libggml0 libggml0-backend-rpc
      libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 zlib1g libzstd1)
(cd "$work/debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]}")
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/root"; done

lib=usr/lib/x86_64-linux-gnu
# llama.cpp looks for backends in its compiled-in folder (absent here), then in
# the executable's folder, which is the loader's folder when started through it.
for so in "$work/root/$lib/ggml/backends0/"*.so; do
  ln -sf "ggml/backends0/$(basename "$so")" "$work/root/$lib/$(basename "$so")"
done

mkdir -p "$work/bin"
wrap() {  # wrap TOOL PATH-INSIDE-ROOT
  [ -x "$work/root/$2" ] || { echo "moetune: package lacks $1 ($2)" >&2; exit 1; }
  cat >"$work/bin/$1" <<WRAP
#!/bin/sh
# Starts llama.cpp's $1 through the engine's private loader (scripts/setup-engine.sh).
root=\$(CDPATH= cd -- "\$(dirname -- "\$0")/../root" && pwd)
lib="\$root/$lib"
exec "\$lib/ld-linux-x86-64.so.2" --library-path "\$lib:\$lib/llama:\$lib/ggml/backends0" "\$root/$2" "\$@"
WRAP
  chmod +x "$work/bin/$1"
}
for t in "${tools[@]}"; do wrap "$t" "usr/bin/$t"; done
for t in "${libexec_tools[@]}"; do wrap "$t" "usr/libexec/x86_64-linux-gnu/llama/bin/$t"; done

versions=$(for deb in "$work"/debs/*.deb; do dpkg-deb -f "$deb" Package Version | paste -sd' '; done)
llama_version=$(dpkg-deb -f "$work"/debs/llama.cpp-tools_*.deb Version)
build_line=$("$work/bin/llama-bench" --version 2>&1 | grep -m1 '^version:' || true)

rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
mv "$work/root" "$work/bin" "$dest.tmp/"
{
  printf '{\n  "source": "debian-sid",\n  "llama_cpp_package_version": "%s",\n' "$llama_version"
  printf '  "version_line": "%s",\n  "installed_at": "%s",\n  "packages": [\n' "$build_line" "$(date -u +%FT%TZ)"
  echo "$versions" | awk '{printf "%s    {\"name\": \"%s\", \"version\": \"%s\"}", (NR>1?",\n":""), $2, $4} END {print ""}'
  printf '  ]\n}\n'
} >"$dest.tmp/engine.json"
# Same-directory renames: an interrupted install never looks complete.
rm -rf "$dest.old"; [ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$dest.tmp" "$dest"
rm -rf "$dest.old"
"$dest/bin/llama-bench" --version >/dev/null 2>&1 || { echo "moetune: engine does not start" >&2; exit 1; }
echo "moetune: engine ready: $llama_version ($build_line)" >&2
