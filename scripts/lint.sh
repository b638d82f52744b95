#!/usr/bin/env bash
# Style and structure checks for CI:
#   1. clang-format: every C++ file matches .clang-format (prints the files that do not);
#   2. include directions between src/ folders (scripts/check-deps.sh, always the whole tree);
#   3. clang-tidy with .clang-tidy on the selected source files (warnings are errors).
# Usage: scripts/lint.sh [--changed-since REF] [--unrecorded] [--record] [--no-tidy]
#                        [BUILD_DIR [PATH|GLOB ...]]
#   BUILD_DIR        build folder with compile_commands.json (default: build)
#   PATH|GLOB ...    limit the checks to these git pathspecs (e.g. src/engine 'src/*/*_test.cc');
#                    default: every C++ file in git
#   --changed-since REF  limit steps 1 and 3 to C++ files changed since REF (git diff REF, plus
#                    uncommitted changes); a changed foo.h also lints foo.cc and foo_test.cc beside
#                    it (headers are checked through the sources that include them). Other sources
#                    that include a changed header are not re-checked: the full run is the authority.
#   --unrecorded     clang-tidy only the sources whose content (or that of the foo.h beside them)
#                    is not known clean: recorded in .ci/tidy-clean, or checked clean on this
#                    machine before (CI uses this; steps 1-2 still check every file)
#   --record         after a clean run, rewrite .ci/tidy-clean: every C++ file whose content is
#                    known clean (the maintainer commits it)
#   --no-tidy        skip step 3 (no build folder needed)
# Fix formatting with: clang-format -i $(git ls-files '*.cc' '*.h')
# Cost: steps 1-2 take ~20 s of CPU; clang-tidy ~10-16 s of CPU per source file (275 files in
# all, 156 in src/ without tests), so the full run is about an hour of CPU (docs/architecture.md).
#
# Known clean, by content: clang-tidy's verdict on a file depends on its text, not on its path,
# so the record holds git blob hashes (git hash-object) and survives renames and merges. It is
# tied to .clang-tidy and the clang-tidy version (the "config" line): when either changes,
# nothing is known clean. Files checked clean on this machine are remembered the same way in
# ${XDG_CACHE_HOME:-~/.cache}/moetune/tidy/CONFIG (MOETUNE_TIDY_CACHE=off: not read nor written).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

since=""
tidy=1
unrecorded=0
record=0
positional=()
while (($#)); do
  case "$1" in
    --changed-since) [ $# -ge 2 ] || { echo "lint: --changed-since needs a git ref" >&2; exit 2; }
                     since=$2; shift 2 ;;
    --changed-since=*) since=${1#*=}; shift ;;
    --unrecorded) unrecorded=1; shift ;;
    --record) record=1; shift ;;
    --no-tidy) tidy=0; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; positional+=("$@"); break ;;
    -*) echo "lint: unknown option $1 (see scripts/lint.sh --help)" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
if ((record && !tidy)); then
  echo "lint: --record needs the clang-tidy step (drop --no-tidy)" >&2
  exit 2
fi
build=${positional[0]:-$repo/build}
specs=("${positional[@]:1}")
((${#specs[@]})) || specs=(.)
status=0

if [ -n "$since" ]; then
  if ! git rev-parse --verify --quiet "$since^{commit}" >/dev/null; then
    echo "lint: --changed-since $since: not a git commit (try origin/main or HEAD~1)" >&2
    exit 2
  fi
  mapfile -t changed < <(git diff --name-only --diff-filter=d "$since" -- "${specs[@]}" |
                         grep -E '\.(cc|h)$' || true)
  files=()
  for f in "${changed[@]}"; do
    files+=("$f")
    if [[ "$f" == *.h ]]; then
      for s in "${f%.h}.cc" "${f%.h}_test.cc"; do [ -f "$s" ] && files+=("$s"); done
    fi
  done
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep . | sort -u || true)
  if ((${#files[@]} == 0)); then
    echo "lint: no C++ file changed since $since"
  fi
else
  mapfile -t files < <(git ls-files -- "${specs[@]}" | grep -E '\.(cc|h)$' || true)
  if ((${#files[@]} == 0)); then
    echo "lint: no C++ file in git matches: ${specs[*]}" >&2
    exit 2
  fi
fi

# clang-format is cheap but one process per file: two at a time per core.
unformatted=()
mapfile -t unformatted < <(for f in "${files[@]}"; do [ -f "$f" ] && printf '%s\0' "$f"; done |
  xargs -0 -r -P "$(($(nproc) * 2))" -n 8 sh -c \
    'for f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh |
  sort)
if ((${#unformatted[@]})); then
  echo "lint: clang-format: ${#unformatted[@]} file(s) need formatting: ${unformatted[*]}"
  echo "lint: fix with: clang-format -i ${unformatted[*]}"
  status=1
else
  echo "lint: clang-format ok (${#files[@]} files)"
fi

scripts/check-deps.sh || status=1

((tidy)) || exit $status
# Fuzz targets are built separately with clang and are not in the compile database.
mapfile -t sources < <(for f in "${files[@]}"; do
  case "$f" in tests/fuzz/*) ;; *.cc) [ -f "$f" ] && echo "$f" ;; esac
done)

# --- what is known clean (by content) -------------------------------------------------------
record_file=.ci/tidy-clean
config=$({ cat .clang-tidy; clang-tidy --version | grep -o 'version [0-9.]*' | head -n1; } |
         sha1sum | cut -c1-40)
cache_dir=${XDG_CACHE_HOME:-$HOME/.cache}/moetune/tidy
cache_file=""
[ "${MOETUNE_TIDY_CACHE:-on}" = off ] || cache_file=$cache_dir/$config
declare -A clean=()
if ((unrecorded || record)); then
  if [ -f "$record_file" ]; then
    if grep -qx "# config $config" "$record_file"; then
      while read -r sha _; do clean[$sha]=1; done < <(grep -v '^#' "$record_file")
    else
      echo "lint: $record_file was written for another .clang-tidy or clang-tidy version:" \
        "nothing is known clean"
    fi
  fi
  if [ -n "$cache_file" ] && [ -f "$cache_file" ]; then
    while read -r sha; do clean[$sha]=1; done <"$cache_file"
  fi
fi
# The header beside a source (foo.h for foo.cc and foo_test.cc): clang-tidy checks it through
# that source.
header_of() {
  local h=${1%.cc}
  h=${h%_test}.h
  [ -f "$h" ] && echo "$h"
  return 0
}
declare -A hash=()
hash_files() {  # hash_files FILE...: fills hash[FILE] with git's blob hash of its content
  local -a fs=("$@")
  ((${#fs[@]})) || return 0
  local i=0 sha
  while read -r sha; do hash[${fs[$i]}]=$sha; i=$((i + 1)); done < <(printf '%s\n' "${fs[@]}" |
    git hash-object --stdin-paths)
}
known_clean() {  # known_clean SOURCE: its content and its header's are known clean
  local h
  [ -n "${clean[${hash[$1]}]+x}" ] || return 1
  h=$(header_of "$1")
  [ -z "$h" ] || [ -n "${clean[${hash[$h]}]+x}" ]
}
if ((unrecorded || record)); then
  mapfile -t candidates < <(for s in "${sources[@]}"; do echo "$s"; header_of "$s"; done | sort -u)
  hash_files "${candidates[@]}"
fi
if ((unrecorded)); then
  todo=()
  for s in "${sources[@]}"; do known_clean "$s" || todo+=("$s"); done
  echo "lint: clang-tidy: ${#todo[@]} of ${#sources[@]} sources are not known clean" \
    "($record_file${cache_file:+ and $cache_file})"
  sources=("${todo[@]}")
fi

passed=()
tidy_status=0
if ((${#sources[@]} == 0)); then
  echo "lint: clang-tidy: no source file selected"
else
  if [ ! -f "$build/compile_commands.json" ]; then
    echo "lint: no $build/compile_commands.json; configure first (scripts/build.sh)" >&2
    exit 1
  fi
  # One clang-tidy per file (not run-clang-tidy), so each file's verdict is known. The compile
  # database holds GCC's flags; clang-tidy must not stop at the ones it lacks. clang-tidy
  # colours nothing into a file; the findings of the failed files go to the log.
  log="$build/clang-tidy.log"
  work=$(mktemp -d "${TMPDIR:-/tmp}/moetune-tidy.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  jobs=${LINT_JOBS:-$(nproc)}
  printf '%s\0' "${sources[@]}" | xargs -0 -r -P "$jobs" -n 1 sh -c '
    out="$2/$(printf %s "$3" | tr / _).log"
    if clang-tidy -p "$1" --quiet --extra-arg=-Wno-unknown-warning-option "$3" >"$out" 2>&1; then
      echo "$3" >>"$2/passed"
    fi' sh "$build" "$work" || true
  [ -f "$work/passed" ] && mapfile -t passed < <(sort "$work/passed")
  if ((${#passed[@]} == ${#sources[@]})); then
    : >"$log"
    echo "lint: clang-tidy ok (${#sources[@]} files)"
  else
    cat "$work"/*.log >"$log"
    grep -E '^/.*: (error|warning): ' "$log" | sort -u | head -50 || true
    echo "lint: clang-tidy found problems in $((${#sources[@]} - ${#passed[@]})) of" \
      "${#sources[@]} files (whole log: $log)"
    tidy_status=1
    status=1
  fi
fi

# --- remember what passed -----------------------------------------------------------------
if ((${#passed[@]})) && { [ -n "$cache_file" ] || ((record)); }; then
  ((unrecorded || record)) || hash_files "${passed[@]}" \
    $(for s in "${passed[@]}"; do header_of "$s"; done | sort -u)
  new=()
  for s in "${passed[@]}"; do
    clean[${hash[$s]}]=1
    new+=("${hash[$s]}")
  done
  # A header is clean when every source beside it is.
  for s in "${passed[@]}"; do
    h=$(header_of "$s")
    [ -n "$h" ] || continue
    all=1
    for t in "${h%.h}.cc" "${h%.h}_test.cc"; do
      if [ -f "$t" ]; then
        [ -n "${hash[$t]+x}" ] || hash_files "$t"
        [ -n "${clean[${hash[$t]}]+x}" ] || all=0
      fi
    done
    if ((all)); then
      clean[${hash[$h]}]=1
      new+=("${hash[$h]}")
    fi
  done
  if [ -n "$cache_file" ]; then
    mkdir -p "$cache_dir"
    printf '%s\n' "${new[@]}" >>"$cache_file"
  fi
fi
if ((record)); then
  if ((tidy_status)); then
    echo "lint: --record: $record_file not written, clang-tidy found problems" >&2
    exit $status
  fi
  mapfile -t all_files < <(git ls-files -- '*.cc' '*.h' | grep -v '^tests/fuzz/' || true)
  hash_files "${all_files[@]}"
  {
    echo "# The C++ files clang-tidy (.clang-tidy) last passed clean on, by content: git blob"
    echo "# hash, then the path it had. CI (scripts/lint.sh --unrecorded) tidies only the sources"
    echo "# whose content, or that of the header beside them, is not listed here. Written by"
    echo "# scripts/lint.sh --record BUILD_DIR after a clean run (docs/architecture.md \"Lint\")."
    echo "# config $config"
    for f in "${all_files[@]}"; do
      [ -n "${clean[${hash[$f]}]+x}" ] && echo "${hash[$f]} $f"
    done
  } >"$record_file.tmp"
  mv "$record_file.tmp" "$record_file"
  echo "lint: $record_file: $(grep -vc '^#' "$record_file") of ${#all_files[@]} files known clean"
fi
exit $status
