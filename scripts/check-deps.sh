#!/usr/bin/env bash
# Checks that #include dependencies between src/ folders point one way
# (docs/architecture.md): a folder may include only itself and folders listed
# before it in LAYERS. Unit tests (*_test.cc) may also include test helpers of
# their own folder. Prints every violation; exits 1 if there is one.
# Usage: scripts/check-deps.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo/src"
LAYERS=(util stats gguf model config store hw plan speed engine doctor tune watch report cli)
declare -A rank
for i in "${!LAYERS[@]}"; do rank[${LAYERS[$i]}]=$i; done

bad=0
for dir in */; do
  dir=${dir%/}
  if [ -z "${rank[$dir]+x}" ]; then
    echo "check-deps: src/$dir is not in the layer list (scripts/check-deps.sh, docs/architecture.md)"
    bad=1
    continue
  fi
  while IFS=: read -r file _ inc; do
    target=$(sed -E 's/.*#include "([^/"]+)\/.*/\1/' <<<"$inc")
    [ "$target" = "$inc" ] && continue  # not a "folder/file.h" include
    if [ -z "${rank[$target]+x}" ]; then continue; fi
    if (( rank[$target] > rank[$dir] )); then
      echo "check-deps: $file includes $target/ (src/$dir may only use: ${LAYERS[*]:0:$((rank[$dir] + 1))})"
      bad=1
    fi
  done < <(grep -Hn '^#include "' -r "$dir" --include='*.h' --include='*.cc' || true)
done
if [ "$bad" = 0 ]; then echo "check-deps: ok (${LAYERS[*]})"; fi
exit $bad
