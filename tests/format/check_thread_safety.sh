#!/usr/bin/env bash
# Self-test of the lock checking (core/thread_annotations.h, the clang
# builds' -Wthread-safety -Werror): compiles tests/fixtures/thread_safety/
# guarded.cc with clang++ twice. As written (every GUARDED_BY member touched
# with its mutex held) it must compile; with PROFWATCH_PLANT_UNGUARDED (a
# read without the lock, a REQUIRES function called without it) it must
# fail, naming both. Skips (77) without clang++.
# Usage: check_thread_safety.sh [CLANG++]
set -uo pipefail
cd "$(dirname "$0")/../.."
cxx="${1:-clang++}"
command -v "$cxx" >/dev/null || { echo "$cxx not installed"; exit 77; }
src=tests/fixtures/thread_safety/guarded.cc
flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Werror -Wthread-safety -Iexporter/src)
if ! out="$("$cxx" "${flags[@]}" "$src" 2>&1)"; then
  echo "FAIL: the guarded accesses do not compile:"
  echo "$out"
  exit 1
fi
echo "ok: every guarded access holds its mutex: compiles"
if out="$("$cxx" "${flags[@]}" -DPROFWATCH_PLANT_UNGUARDED "$src" 2>&1)"; then
  echo "FAIL: the planted unguarded accesses compile"
  exit 1
fi
for want in "reading variable 'value_' requires holding mutex 'mu_'" \
  "calling function 'AddLocked' requires holding mutex 'mu_'"; do
  if ! grep -qF "$want" <<<"$out"; then
    echo "FAIL: the build failed, but not with: $want"
    echo "$out"
    exit 1
  fi
done
echo "ok: the planted unguarded accesses fail the build"
