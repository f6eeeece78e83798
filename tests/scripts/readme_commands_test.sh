#!/usr/bin/env bash
# The README's two commands, in order, in a fresh copy of the source tree:
# the demo command (scripts/run-demo.sh), which configures build/ with
# -DPROFWATCH_TESTS=OFF, then the test command (scripts/test.sh), which must
# still run tests in every stage (a cached OFF once left the g++ stage with
# "No tests were found!!!" and the suite passing on the ASan stage alone).
#
# Design: running the real test command here would recurse into this suite
# and double CI time, and the demo command would start the daemon for good.
# Both scripts honour PROFWATCH_CONFIGURE_ONLY=1: no apt step, no build, no
# daemon, no fuzzing; every stage runs its own configure line exactly as in
# a real run, and instead of running ctest it fails unless `ctest -N` lists
# tests in its directory.
# So the check is real (a stage configured without tests fails it) and
# cheap (four cmake configures). The real runs use `ctest --no-tests=error`.
# This test also checks the README still names these two commands, that the
# demo configure did leave TESTS=OFF in build/ (the case under test), and that
# .ci/run runs the README's test command.
#
# Usage: readme_commands_test.sh SOURCE_DIR. Exit 77 (skipped) when
# SOURCE_DIR is not a git checkout (the copy is made from its file list).
set -euo pipefail
src="$(cd "$1" && pwd)"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || {
  echo "not a git checkout: $src (skipped)"
  exit 77
}

# The commands, as the README gives them (first fenced block).
readme_cmds="$(awk '/^```sh$/ { on = 1; next } on && /^```$/ { exit } on' "$src/README.md" |
  grep '^bash scripts/')"
[[ "$readme_cmds" == $'bash scripts/run-demo.sh\nbash scripts/test.sh' ]] ||
  fail "README's commands changed: $readme_cmds"
grep -qx 'exec bash scripts/test.sh' "$src/.ci/run" || fail ".ci/run does not run scripts/test.sh"

# A fresh clone's files: tracked and not ignored (no build dirs).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done |
  xargs -0 cp --parents -t "$work")
cd "$work"
export PROFWATCH_CONFIGURE_ONLY=1

bash scripts/run-demo.sh >demo.log 2>&1 || { cat demo.log; fail "demo command failed"; }
grep -q '^PROFWATCH_TESTS:BOOL=OFF$' build/CMakeCache.txt ||
  fail "the demo command no longer leaves build/ with PROFWATCH_TESTS=OFF (update this test)"

bash scripts/test.sh >test.log 2>&1 || { cat test.log; fail "test command failed"; }
cat test.log
for dir in build build-asan build-tsan; do
  n="$(sed -n "s/^ctest in $dir lists \([0-9]*\) tests$/\1/p" test.log)"
  [[ -n "$n" && "$n" -gt 0 ]] || fail "stage $dir ran no tests"
done
grep -q '^== configure-only: every stage has its tests$' test.log || fail "test command cut short"
echo "PASS: every stage of the test command has tests after the demo command"
