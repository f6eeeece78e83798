#!/usr/bin/env bash
# Fails when a tracked C++ file differs from clang-format's output
# (.clang-format at the repository root).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find exporter tests tools bench -name '*.cc' -o -name '*.h')
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not clang-formatted: $f (run: clang-format -i $f)"
    bad=1
  fi
done
exit "$bad"
