#!/usr/bin/env bash
# Prints the apt source of Debian unstable (sid) that scripts/setup-engine.sh
# downloads the engine from: the machine's own Debian mirror and keyring, taken
# from apt's source configuration, so that set-up works behind a local mirror,
# a caching proxy or a mirror+file: list and names no host itself. (Proxy
# settings need nothing here: they live in apt.conf, which setup-engine.sh
# leaves in force.)
#
# The first `deb` entry (in the order apt reads the files) whose suite is a
# Debian suite (a codename such as bookworm, or stable/testing/unstable...,
# maybe with -updates or -backports; never -security, which lives elsewhere)
# is copied with its suite replaced by sid and its components by main. Its
# options are kept as written: [signed-by=...] and trusted=yes in the one-line
# format, Signed-By (a path or an inline key), Trusted, Architectures... in a
# deb822 stanza. The output has the entry's format: a "deb ..." line for a
# .list file, a stanza for a .sources file (sources.list(5)).
#
# Usage: scripts/apt-sid-source.sh [SOURCE_FILE...]
#   Without files: the files apt reads (apt-config: Dir::Etc::sourcelist, then
#   *.list and *.sources in Dir::Etc::sourceparts, by name).
# MOETUNE_DEBIAN_MIRROR=URL uses that mirror instead (one-line output, with
# signed-by=$MOETUNE_DEBIAN_KEYRING when set): for a machine whose mirror does
# not carry sid.
# Exit 1, saying why, when no Debian archive is configured.
set -euo pipefail

if [ -n "${MOETUNE_DEBIAN_MIRROR:-}" ]; then
  opts=""
  [ -n "${MOETUNE_DEBIAN_KEYRING:-}" ] && opts="[signed-by=$MOETUNE_DEBIAN_KEYRING] "
  echo "deb ${opts}${MOETUNE_DEBIAN_MIRROR} sid main"
  exit 0
fi

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  eval "$(apt-config shell SL Dir::Etc::sourcelist/f SP Dir::Etc::sourceparts/d)"
  [ -f "${SL:-}" ] && files+=("$SL")
  if [ -d "${SP:-}" ]; then
    while IFS= read -r f; do files+=("$f"); done < <(
      find "$SP" -maxdepth 1 -type f \( -name '*.list' -o -name '*.sources' \) | LC_ALL=C sort)
  fi
fi

# One awk program per format; each prints the converted entry and exits 0 at
# the first Debian one, or exits 3 when the file has none.
suites='^(buzz|rex|bo|hamm|slink|potato|woody|sarge|etch|lenny|squeeze|wheezy|jessie|stretch|buster|bullseye|bookworm|trixie|forky|duke|sid|stable|oldstable|oldoldstable|testing|unstable|experimental)(-updates|-backports|-backports-sloppy|-proposed-updates)?$'

one_line() {
  awk -v suites="$suites" '
    { sub(/#.*/, "") }
    $1 != "deb" { next }
    {
      # deb [ options ] URI SUITE COMPONENT...: options kept verbatim.
      line = $0; opts = ""
      if (match(line, /\[[^]]*\]/)) { opts = substr(line, RSTART, RLENGTH) " "; line = substr(line, RSTART + RLENGTH) }
      else { sub(/^[ \t]*deb[ \t]+/, "", line) }
      n = split(line, f, /[ \t]+/); k = 0
      for (i = 1; i <= n; i++) if (f[i] != "" && f[i] != "deb") w[++k] = f[i]
      if (k < 2 || w[1] ~ /^cdrom:/ || w[2] !~ suites) next
      print "deb " opts w[1] " sid main"; found = 1; exit
    }
    END { exit found ? 0 : 3 }' "$1"
}

deb822() {
  awk -v suites="$suites" '
    function flush(   i, n, s, ok) {
      if (nf == 0) return
      n = split(val["suites"], s, /[ \t]+/); ok = 0
      for (i = 1; i <= n; i++) if (s[i] ~ suites) ok = 1
      if (ok && val["types"] ~ /(^|[ \t])deb([ \t]|$)/ && tolower(val["enabled"]) != "no" &&
          val["uris"] != "" && val["uris"] !~ /^cdrom:/) {
        print "Types: deb"; print "URIs: " val["uris"]; print "Suites: sid"; print "Components: main"
        for (i = 1; i <= nf; i++) if (!(name[i] in skip)) print raw[i]
        found = 1; exit
      }
      nf = 0; delete val
    }
    BEGIN { skip["types"]; skip["uris"]; skip["suites"]; skip["components"]; skip["enabled"] }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ { if (nf) raw[nf] = raw[nf] "\n" $0; next }   # a continuation line
    {
      i = index($0, ":"); if (i == 0) next
      key = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1)
      gsub(/^[ \t]+|[ \t]+$/, "", v)
      name[++nf] = key; raw[nf] = $0; val[key] = v
    }
    END { if (!found) flush(); exit found ? 0 : 3 }' "$1"
}

for f in "${files[@]}"; do
  [ -r "$f" ] || continue
  case "$f" in
    *.sources) deb822 "$f" && exit 0 || true ;;
    *) one_line "$f" && exit 0 || true ;;
  esac
done

echo "moetune: no Debian archive among apt's sources (${files[*]:-none}): the engine comes from" \
  "Debian unstable's packages; set MOETUNE_DEBIAN_MIRROR to a Debian mirror that carries sid" \
  "(and MOETUNE_DEBIAN_KEYRING to its keyring)" >&2
exit 1
