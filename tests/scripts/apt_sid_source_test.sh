#!/usr/bin/env bash
# Tests scripts/apt-sid-source.sh on sample apt configurations (one-line and
# deb822 files, local mirrors, proxies in the URI, [signed-by=...], inline
# keys, disabled stanzas, third-party and security entries, no Debian entry at
# all), offline: each expected source is compared as text, and apt itself
# parses every result (`apt-get indextargets --no-release-info`, which reads
# the sources without downloading anything).
# Usage: tests/scripts/apt_sid_source_test.sh   (run by ctest)
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
script="$repo/scripts/apt-sid-source.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/apt-sid-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
n=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check NAME EXPECTED FILE...: the script's output on FILE... is EXPECTED, and
# apt reads it as the sid suite of the same URI with component main.
check() {
  local name=$1 expected=$2; shift 2
  n=$((n + 1))
  local got
  if ! got=$(env -u MOETUNE_DEBIAN_MIRROR "$script" "$@" 2>"$tmp/err"); then
    fail "$name: exit status $? ($(cat "$tmp/err"))"; return
  fi
  [ "$got" = "$expected" ] || { fail "$name: got"$'\n'"$got"$'\n'"expected"$'\n'"$expected"; return; }
  local parts="$tmp/parts.$n" ext=sources
  mkdir -p "$parts"
  case "$got" in deb\ *) ext=list ;; esac
  printf '%s\n' "$got" >"$parts/moetune-sid.$ext"
  local targets
  targets=$(apt-get indextargets --no-release-info -o Dir::Etc::SourceList=/dev/null \
    -o "Dir::Etc::SourceParts=$parts" --format '$(RELEASE) $(COMPONENT)' 2>&1 | sort -u)
  [ "$targets" = "sid main" ] || fail "$name: apt reads it as: $targets"
}

write() { mkdir -p "$(dirname "$1")"; cat >"$1"; }

write "$tmp/plain.list" <<'EOF'
# deb http://old.example/debian bookworm main
deb http://deb.debian.org/debian bookworm main contrib non-free-firmware
deb-src http://deb.debian.org/debian bookworm main
EOF
check "one-line" "deb http://deb.debian.org/debian sid main" "$tmp/plain.list"

write "$tmp/mirror.list" <<'EOF'
deb [ arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg ] http://mirror.lan:8080/debian/ bookworm main # local
EOF
check "local mirror, signed-by" \
  "deb [ arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg ] http://mirror.lan:8080/debian/ sid main" \
  "$tmp/mirror.list"

write "$tmp/order.list" <<'EOF'
deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main
deb http://security.debian.org/debian-security bookworm-security main
deb [trusted=yes] http://localhost:3142/deb.debian.org/debian stable-updates main
EOF
check "third-party and security skipped, caching proxy in the URI" \
  "deb [trusted=yes] http://localhost:3142/deb.debian.org/debian sid main" "$tmp/order.list"

write "$tmp/debian.sources" <<'EOF'
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
check "deb822 (Debian 12's default)" "Types: deb
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" "$tmp/debian.sources"

write "$tmp/inline.sources" <<'EOF'
Types: deb
URIs: http://disabled.example/debian
Suites: trixie
Components: main
Enabled: no

types: deb deb-src
uris: mirror+file:///etc/apt/mirrors/debian.list
suites: trixie trixie-updates
components: main contrib
architectures: amd64
signed-by:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mDMEZC2x3xYJKwYBBAHaRw8BAQdAfakekeyfakekeyfakekeyfakekeyfakekeyfake
 =abcd
 -----END PGP PUBLIC KEY BLOCK-----
EOF
check "deb822: disabled stanza skipped, mirror+file:, inline key kept" "Types: deb
URIs: mirror+file:///etc/apt/mirrors/debian.list
Suites: sid
Components: main
architectures: amd64
signed-by:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mDMEZC2x3xYJKwYBBAHaRw8BAQdAfakekeyfakekeyfakekeyfakekeyfakekeyfake
 =abcd
 -----END PGP PUBLIC KEY BLOCK-----" "$tmp/inline.sources"

write "$tmp/nodesource.sources" <<'EOF'
Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
EOF
check "files in order: the first without Debian, the next with it" \
  "deb http://deb.debian.org/debian sid main" "$tmp/nodesource.sources" "$tmp/plain.list"

# No Debian archive at all (an Ubuntu machine): exit 1, saying what to set.
write "$tmp/ubuntu.list" <<'EOF'
deb http://archive.ubuntu.com/ubuntu jammy main
EOF
n=$((n + 1))
if env -u MOETUNE_DEBIAN_MIRROR "$script" "$tmp/ubuntu.list" >"$tmp/out" 2>"$tmp/err"; then
  fail "ubuntu: expected a failure, got $(cat "$tmp/out")"
elif ! grep -q "MOETUNE_DEBIAN_MIRROR" "$tmp/err"; then
  fail "ubuntu: the message does not name MOETUNE_DEBIAN_MIRROR: $(cat "$tmp/err")"
fi

# The override: a mirror (and keyring) named by the user.
n=$((n + 1))
got=$(MOETUNE_DEBIAN_MIRROR=http://sid.mirror.lan/debian MOETUNE_DEBIAN_KEYRING=/k.gpg "$script" \
  "$tmp/ubuntu.list")
[ "$got" = "deb [signed-by=/k.gpg] http://sid.mirror.lan/debian sid main" ] ||
  fail "override: got $got"

# Without arguments: the machine's own files, as apt-config names them.
n=$((n + 1))
if env -u MOETUNE_DEBIAN_MIRROR "$script" >"$tmp/machine" 2>"$tmp/err"; then
  grep -q "sid" "$tmp/machine" || fail "machine: no sid in $(cat "$tmp/machine")"
else
  grep -q "no Debian archive among apt's sources" "$tmp/err" ||
    fail "machine: neither a source nor the reason: $(cat "$tmp/err")"
fi

echo "apt-sid-source: $n checks, $failures failure(s)"
[ "$failures" -eq 0 ]
