#!/usr/bin/env bash
# Fails when a tracked C++ file differs from clang-format's output
# (.clang-format at the repository root). One clang-format process checks
# every file (xargs splits only an over-long command line): a process per
# file would pay clang-format's start-up once per file.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang-format >/dev/null || { echo "clang-format not installed"; exit 77; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find exporter tests tools bench -name '*.cc' -o -name '*.h')
fi
[[ ${#files[@]} -gt 0 ]] || { echo "no C++ files found"; exit 1; }
if out="$(printf '%s\0' "${files[@]}" | xargs -0 clang-format --dry-run --Werror 2>&1)"; then
  exit 0
fi
# clang-format names each file that differs: "<file>:<line>:<col>: error: ...".
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
  <<<"$out" | sort -u)
if [[ ${#bad[@]} == 0 ]]; then
  # Failed for another reason (an unreadable file, a bad .clang-format).
  echo "$out"
  exit 1
fi
for f in "${bad[@]}"; do
  echo "not clang-formatted: $f (run: clang-format -i $f)"
done
exit 1
