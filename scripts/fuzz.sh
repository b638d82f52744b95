#!/usr/bin/env bash
# Runs every libFuzzer target (*_fuzz) built in BUILD_DIR for SECONDS each.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS [SECONDS_FIRST]]
# SECONDS defaults to $FUZZ_SECONDS, else 15 (the longer documented run, README "Fuzzing", is 60
# s or more per target). SECONDS_FIRST (default SECONDS) is for a target whose corpus is still
# empty: CI (scripts/test.sh) keeps the corpora between runs and gives 15 s to a target the
# machine has not fuzzed yet, 5 s to one whose corpus the earlier runs built.
# Seeds come from tests/fuzz/corpus/<name without _fuzz>/ (small valid files made
# by GgufWriter), tests/fuzz/<target>.dict is the dictionary if present; inputs
# the fuzzer finds interesting go to $FUZZ_CORPUS_DIR/<target> (default
# BUILD_DIR/fuzz/<target>/corpus) and crash reproducers to BUILD_DIR/fuzz/<target>/.
# Exits non-zero on any finding.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR [SECONDS [SECONDS_FIRST]]  (default \$FUZZ_SECONDS or 15 per target)" >&2
  exit 2
fi
build=$1
seconds=${2:-${FUZZ_SECONDS:-15}}
seconds_first=${3:-$seconds}
for s in "$seconds" "$seconds_first"; do
  case $s in
    '' | *[!0-9]*)
      echo "fuzz: SECONDS must be a whole number of seconds, not '$s'" >&2
      exit 2
      ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)

mapfile -t targets < <(find "$build" -type f -name '*_fuzz' -perm -u+x | sort)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no *_fuzz targets in $build; build with CC=clang CXX=clang++ -DMOETUNE_FUZZ=ON" >&2
  exit 1
fi

status=0
total_execs=0
start=$(date +%s)
for target in "${targets[@]}"; do
  name=$(basename "$target")
  work="$build/fuzz/$name"
  corpus="$work/corpus"
  [ -z "${FUZZ_CORPUS_DIR:-}" ] || corpus="$FUZZ_CORPUS_DIR/$name"
  mkdir -p "$work" "$corpus"
  t=$seconds
  [ -n "$(find "$corpus" -type f -print -quit)" ] || t=$seconds_first
  seeds="$repo/tests/fuzz/corpus/${name%_fuzz}"
  seed_args=()
  [ -d "$seeds" ] && seed_args=("$seeds")
  dict="$repo/tests/fuzz/$name.dict"
  dict_args=()
  [ -f "$dict" ] && dict_args=("-dict=$dict")
  log="$work/last-run.log"
  rc=0
  # One process (-jobs unset), crash reproducers under $work, 2 GiB RSS cap,
  # 10 s per input: a slow input is a finding too (hangs on crafted headers).
  "$target" -max_total_time="$t" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -artifact_prefix="$work/" "${dict_args[@]}" "$corpus" "${seed_args[@]}" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  inputs=$(find "$corpus" -type f | wc -l)
  if [ "$rc" -ne 0 ]; then
    status=1
    tail -n 40 "$log" >&2
    artifact=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    echo "fuzz: FAIL $name: finding after ${execs:-?} executions (exit $rc); reproducer: ${artifact:-see $log}; rerun: $target ${artifact:-}"
  else
    echo "fuzz: ok $name: ${execs:-0} executions in ${t} s, 0 findings, corpus ${inputs} inputs"
  fi
  total_execs=$((total_execs + ${execs:-0}))
done
echo "fuzz: ${#targets[@]} targets, ${total_execs} executions in $(($(date +%s) - start)) s," \
  "$([ "$status" = 0 ] && echo "no findings" || echo "FINDINGS (see above)")"
exit $status
