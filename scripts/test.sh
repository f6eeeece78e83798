#!/usr/bin/env bash
# The whole test suite, from a fresh clone on Debian 12 (run as root or with
# sudo for the apt step):
#   1. installs the Debian packages (scripts/install-deps.sh --test),
#   2. builds with g++ (-O2, no debug information: the build of
#      scripts/run-demo.sh, so one command reuses the other's objects) and
#      runs every test under ctest (unit, drill byte-identity, integration
#      with real prometheus/promtool, fuzz-corpus replays),
#   3. builds again with clang + ASan + UBSan + libFuzzer instrumentation and
#      runs the same ctest suite under the sanitizers,
#   4. builds the threaded stages' tests and the daemon's end-to-end tests
#      (and the binaries they run) with clang + ThreadSanitizer, and without
#      ISA-L so the zlib-only build is compiled and tested too, and runs them
#      under ctest (that tree defines only these tests: tests/CMakeLists.txt),
#   5. runs every libFuzzer target for a bounded time (FUZZ_SECONDS, default
#      20), JOBS targets at a time.
# Every stage runs even when an earlier one failed: a stage whose build fails
# skips its own tests (and the fuzz stage needs the ASan build), the others
# go on. At the end it prints each stage's result and time, then the ten
# slowest tests of the ctest stages with their share of their timeout, each
# failed test with its assertions and the end of its output
# (scripts/slowest_tests.py), so the end of
# the log says what failed; it exits non-zero if any stage failed.
# Each stage's line in that table is its build or test time. Every
# build directory is configured with what its stage needs,
# -DPROFWATCH_TESTS=ON included (build/ may hold scripts/run-demo.sh's cached
# OFF), and every ctest call fails when it finds no test, so no stage can
# pass empty.
#
# PROFWATCH_CONFIGURE_ONLY=1 (for tests/scripts/readme_commands_test.sh):
# no apt step, no build, no fuzzing; each stage configures its directory as
# above and fails unless ctest lists tests there. The same configure lines
# run either way.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
# Tests run side by side at twice the cores: they wait on daemons, scrapes
# and deadlines more than they compute (the g++ stage at -j2 keeps two cores
# about a quarter busy; docs/performance.md "The test suite's time"), and
# every test is sized for a busy machine (a quarter of its timeout).
CTEST_JOBS="${CTEST_JOBS:-$((2 * JOBS))}"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
CONFIGURE_ONLY="${PROFWATCH_CONFIGURE_ONLY:-0}"

# ctest's --timeout per ctest stage: what a test without a TIMEOUT property
# gets (the table below needs it too).
GXX_TIMEOUT=900
ASAN_TIMEOUT=1800

# Results, in order: "name|PASS/FAIL/SKIP|seconds|note".
RESULTS=()
FAILED=()
# step NAME FUNCTION [ARGS]: runs FUNCTION in a subshell that stops at its
# first failing command, records the result and its time in STEP_RESULT.
# Never call it as a condition (`if step ...`): bash would ignore errexit
# inside it.
STEP_RESULT=""
step() {
  local name="$1"
  shift
  local t0=$SECONDS rc
  echo "== $name"
  (
    set -e
    "$@"
  )
  rc=$?
  if [[ $rc == 0 ]]; then STEP_RESULT=PASS; else STEP_RESULT=FAIL; fi
  RESULTS+=("$name|$STEP_RESULT|$((SECONDS - t0))|")
  if [[ $STEP_RESULT == FAIL ]]; then
    FAILED+=("$name")
    echo "== $name: FAIL (exit status $rc)"
  fi
}
# skip NAME WHY: a step that cannot run because one it needs failed.
skip() {
  echo "== $1: skipped ($2)"
  RESULTS+=("$1|SKIP|0|$2")
}

# Where a ctest stage leaves its junit results and its tests' properties.
junit_of() { echo "$PWD/$1/Testing/profwatch-junit.xml"; }
tests_json_of() { echo "$PWD/$1/Testing/profwatch-tests.json"; }

# ctest over build dir $1 with the remaining arguments; never passes empty.
run_ctest() {
  local dir="$1"
  shift
  if [[ "$CONFIGURE_ONLY" == 1 ]]; then
    local total
    total="$(ctest --test-dir "$dir" --no-tests=error -N | sed -n 's/^Total Tests: //p')"
    echo "ctest in $dir lists ${total:-0} tests"
    [[ "${total:-0}" -gt 0 ]] || { echo "no tests in $dir" >&2; return 1; }
    return 0
  fi
  mkdir -p "$dir/Testing"
  ctest --test-dir "$dir" --no-tests=error --show-only=json-v1 >"$(tests_json_of "$dir")"
  ctest --test-dir "$dir" --no-tests=error --output-junit "$(junit_of "$dir")" "$@"
}

build() {
  [[ "$CONFIGURE_ONLY" == 1 ]] || cmake --build "$@"
}

deps() { bash scripts/install-deps.sh --test; }

build_gxx() {
  # No results of an earlier run may stand for this one's.
  rm -f "$(junit_of build)" "$(tests_json_of build)"
  # The configure line of scripts/run-demo.sh, tests on.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFWATCH_DEBUG_INFO=none \
    -DPROFWATCH_TESTS=ON
  build build -j "$JOBS"
}
test_gxx() { run_ctest build --output-on-failure -j "$CTEST_JOBS" --timeout "$GXX_TIMEOUT"; }

build_asan() {
  rm -f "$(junit_of build-asan)" "$(tests_json_of build-asan)"
  # Line tables only: a sanitizer's report names file and line.
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DPROFWATCH_DEBUG_INFO=lines -DPROFWATCH_TESTS=ON -DPROFWATCH_SANITIZE=ON -DPROFWATCH_FUZZ=ON
  build build-asan -j "$JOBS"
}
test_asan() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build-asan --output-on-failure -j "$CTEST_JOBS" --timeout "$ASAN_TIMEOUT"
}

# The threaded stages' tests and the daemon end to end (the scan thread,
# analysis workers and scrape threads of a TSan-built `profwatch serve`; a
# race makes the daemon's exit code fail its test) under ThreadSanitizer:
# the TSan tree defines only these tests (tests/CMakeLists.txt), so it builds
# and runs exactly this stage. Their timed checks get the sanitizer trees'
# factor (PROFWATCH_TEST_TIMEOUT_FACTOR).
build_tsan() {
  rm -f "$(junit_of build-tsan)" "$(tests_json_of build-tsan)"
  # Without ISA-L: the threads are the same either way (only zlib hands its
  # CRC to the parsing thread), and this covers the build users get without it.
  CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPROFWATCH_DEBUG_INFO=lines -DPROFWATCH_TESTS=ON -DPROFWATCH_TSAN=ON -DPROFWATCH_WITH_ISAL=OFF
  build build-tsan -j "$JOBS"
}
test_tsan() {
  # halt_on_error: a race fails the binary (and a daemon or CLI run under test).
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest build-tsan --output-on-failure -j "$CTEST_JOBS" --timeout "$ASAN_TIMEOUT"
}

fuzz() { bash scripts/fuzz.sh build-asan "$FUZZ_SECONDS" "$JOBS"; }

print_results() {
  echo
  echo "== results"
  local r name result seconds note
  for r in "${RESULTS[@]}"; do
    IFS='|' read -r name result seconds note <<<"$r"
    if [[ $result == SKIP ]]; then
      printf '%-62s %s (%s)\n' "$name" "$result" "$note"
    else
      printf '%-62s %s %6d s\n' "$name" "$result" "$seconds"
    fi
  done
}

if [[ "$CONFIGURE_ONLY" != 1 ]]; then step "deps (install-deps.sh --test)" deps; fi

step "build (g++, -O2)" build_gxx
if [[ $STEP_RESULT == PASS ]]; then step "test (g++)" test_gxx; else skip "test (g++)" "its build failed"; fi

step "build (clang, ASan+UBSan, libFuzzer)" build_asan
asan_built=$STEP_RESULT
if [[ $asan_built == PASS ]]; then
  step "test (ASan+UBSan)" test_asan
else
  skip "test (ASan+UBSan)" "its build failed"
fi

step "build (clang, ThreadSanitizer: the threaded stages' tests)" build_tsan
if [[ $STEP_RESULT == PASS ]]; then
  step "test (ThreadSanitizer)" test_tsan
else
  skip "test (ThreadSanitizer)" "its build failed"
fi

if [[ "$CONFIGURE_ONLY" == 1 ]]; then
  print_results
  if [[ ${#FAILED[@]} == 0 ]]; then
    echo "== configure-only: every stage has its tests"
    exit 0
  fi
  failed_list="$(printf '%s; ' "${FAILED[@]}")"
  echo "== configure-only: failed: ${failed_list%; }"
  exit 1
fi

if [[ $asan_built == PASS ]]; then
  step "fuzz (${FUZZ_SECONDS}s per target)" fuzz
else
  skip "fuzz (${FUZZ_SECONDS}s per target)" "the ASan build failed"
fi

print_results
echo
python3 scripts/slowest_tests.py \
  --stage g++ "$(junit_of build)" "$(tests_json_of build)" "$GXX_TIMEOUT" \
  --stage asan "$(junit_of build-asan)" "$(tests_json_of build-asan)" "$ASAN_TIMEOUT" \
  --stage tsan "$(junit_of build-tsan)" "$(tests_json_of build-tsan)" "$ASAN_TIMEOUT" ||
  echo "(no table of the slowest tests: scripts/slowest_tests.py failed)"
echo
if [[ ${#FAILED[@]} == 0 ]]; then
  echo "== all tests passed"
  exit 0
fi
failed_list="$(printf '%s; ' "${FAILED[@]}")"
echo "== ${#FAILED[@]} stage(s) failed: ${failed_list%; }"
exit 1
