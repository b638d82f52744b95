#!/usr/bin/env bash
# Installs the Debian 12 packages moetune needs to build and test. Idempotent:
# packages already installed are not touched, and apt is only called when
# something is missing.
set -euo pipefail

PKGS=(build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
      libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
      libfmt-dev libhwloc-dev libcpp-httplib-dev sysbench ca-certificates
      binutils xz-utils
      # The linker (cmake/linker.cmake): about seven times faster than GNU ld here.
      lld
      # scripts/lint.sh (CI): format, clang-tidy and run-clang-tidy.
      clang-format clang-tidy
      # The report tests open the HTML reports in headless Chromium and read
      # its PNG screenshots with zlib; DejaVu gives the pages a font.
      chromium zlib1g-dev fonts-dejavu-core
      # The --emit tests read the YAML formats back with a real parser (PyYAML).
      python3 python3-yaml
      # The RPC link tests (tests/integration/emulated_link.h): ip and tc.
      iproute2)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "moetune: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
