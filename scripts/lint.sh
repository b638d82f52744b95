#!/usr/bin/env bash
# Style and structure checks for CI:
#   1. clang-format: every C++ file matches .clang-format (prints the files that do not);
#   2. include directions between src/ folders (scripts/check-deps.sh, always the whole tree);
#   3. clang-tidy with .clang-tidy on the selected source files (warnings are errors).
# Usage: scripts/lint.sh [--changed-since REF] [--no-tidy] [BUILD_DIR [PATH|GLOB ...]]
#   BUILD_DIR        build folder with compile_commands.json (default: build)
#   PATH|GLOB ...    limit steps 1 and 3 to these git pathspecs (e.g. src/engine 'src/*/*_test.cc');
#                    default: every C++ file in git
#   --changed-since REF  limit steps 1 and 3 to C++ files changed since REF (git diff REF, plus
#                    uncommitted changes); a changed foo.h also lints foo.cc and foo_test.cc beside
#                    it (headers are checked through the sources that include them). Other sources
#                    that include a changed header are not re-checked: the full run is the authority.
#   --no-tidy        skip step 3 (no build folder needed)
# Fix formatting with: clang-format -i $(git ls-files '*.cc' '*.h')
# Cost: steps 1-2 take ~20 s of CPU; clang-tidy ~10-16 s of CPU per source file (275 files in
# all, 156 in src/ without tests), so the full run is about an hour of CPU (docs/architecture.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

since=""
tidy=1
positional=()
while (($#)); do
  case "$1" in
    --changed-since) [ $# -ge 2 ] || { echo "lint: --changed-since needs a git ref" >&2; exit 2; }
                     since=$2; shift 2 ;;
    --changed-since=*) since=${1#*=}; shift ;;
    --no-tidy) tidy=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; positional+=("$@"); break ;;
    -*) echo "lint: unknown option $1 (see scripts/lint.sh --help)" >&2; exit 2 ;;
    *) positional+=("$1"); shift ;;
  esac
done
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

unformatted=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
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
  case "$f" in tests/fuzz/*) ;; *.cc) [ -f "$f" ] && echo "$repo/$f" ;; esac
done)
if ((${#sources[@]} == 0)); then
  echo "lint: clang-tidy: no source file selected"
  exit $status
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: no $build/compile_commands.json; configure first (scripts/build.sh)" >&2
  exit 1
fi
# The compile database holds GCC's flags; clang-tidy must not stop at the ones it lacks.
# run-clang-tidy colours its output even into a file: strip the escapes for the log.
log="$build/clang-tidy.log"
jobs=${LINT_JOBS:-$(nproc)}
if run-clang-tidy -p "$build" -j "$jobs" -quiet -extra-arg=-Wno-unknown-warning-option \
     "${sources[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log"; then
  echo "lint: clang-tidy ok (${#sources[@]} files)"
else
  grep -E '^/.*: (error|warning): ' "$log" | sort -u | head -50 || true
  echo "lint: clang-tidy found problems in ${#sources[@]} files (whole log: $log)"
  status=1
fi
exit $status
