#!/usr/bin/env bash
# The whole test suite, from a fresh clone on Debian 12 (run as root or with
# sudo for the apt step):
#   1. installs the Debian packages (scripts/install-deps.sh --test),
#   2. builds with g++ (RelWithDebInfo) and runs every test under ctest
#      (unit, drill byte-identity, integration with real prometheus/promtool,
#      fuzz-corpus replays),
#   3. builds again with clang + ASan + UBSan + libFuzzer instrumentation and
#      runs the same ctest suite under the sanitizers,
#   4. builds the threaded stages' tests and the daemon's end-to-end tests
#      (and the binaries they run) with clang + ThreadSanitizer, and without
#      ISA-L so the zlib-only build is compiled and tested too, and runs them,
#   5. runs every libFuzzer target for a bounded time (FUZZ_SECONDS, default 20).
# Exit status is non-zero if any step fails. Every build directory is
# configured with what its stage needs, -DPROFWATCH_TESTS=ON included (build/
# may hold scripts/run-demo.sh's cached OFF), and every ctest call fails when
# it finds no test, so no stage can pass empty.
#
# PROFWATCH_CONFIGURE_ONLY=1 (for tests/scripts/readme_commands_test.sh):
# no apt step, no build, no fuzzing; each stage configures its directory as
# above and fails unless ctest lists tests there (the TSan stage: unless its
# test targets exist). The same configure lines run either way.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
CONFIGURE_ONLY="${PROFWATCH_CONFIGURE_ONLY:-0}"

# ctest over build dir $1 with the remaining arguments; never passes empty.
run_ctest() {
  local dir="$1"
  shift
  if [[ "$CONFIGURE_ONLY" == 1 ]]; then
    local total
    total="$(ctest --test-dir "$dir" -N | sed -n 's/^Total Tests: //p')"
    echo "ctest in $dir lists ${total:-0} tests"
    [[ "${total:-0}" -gt 0 ]] || { echo "no tests in $dir" >&2; return 1; }
    return 0
  fi
  ctest --test-dir "$dir" --no-tests=error "$@"
}

build() {
  [[ "$CONFIGURE_ONLY" == 1 ]] || cmake --build "$@"
}

[[ "$CONFIGURE_ONLY" == 1 ]] || bash scripts/install-deps.sh --test

echo "== build (g++, RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFWATCH_TESTS=ON
build build -j "$JOBS"
echo "== test (g++)"
run_ctest build --output-on-failure -j "$JOBS" --timeout 900

echo "== build (clang, ASan+UBSan, libFuzzer)"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DPROFWATCH_TESTS=ON -DPROFWATCH_SANITIZE=ON -DPROFWATCH_FUZZ=ON
build build-asan -j "$JOBS"
echo "== test (ASan+UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_ctest build-asan --output-on-failure -j "$JOBS" --timeout 1800

echo "== build (clang, ThreadSanitizer: the threaded stages' tests)"
TSAN_TESTS=(core_test read_test parse_test aggregate_test web_test cli_test)
# The daemon end to end: scan thread, analysis workers and scrape threads, in
# the real `profwatch serve` (TSan-built; TSAN_OPTIONS reaches it, and a race
# makes its exit code fail the test).
TSAN_SERVE_TESTS=(serve_test serve_steps_test)
# Without ISA-L: the threads are the same either way (only zlib hands its
# CRC to the parsing thread), and this covers the build users get without it.
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPROFWATCH_TESTS=ON -DPROFWATCH_TSAN=ON -DPROFWATCH_WITH_ISAL=OFF
build build-tsan -j "$JOBS" --target profwatch profwatch-tracegen "${TSAN_TESTS[@]}" \
  "${TSAN_SERVE_TESTS[@]}"
echo "== test (ThreadSanitizer)"
if [[ "$CONFIGURE_ONLY" == 1 ]]; then
  targets="$(cmake --build build-tsan --target help)"
  for t in "${TSAN_TESTS[@]}" "${TSAN_SERVE_TESTS[@]}"; do
    grep -q "^$t:" <<<"$targets" || { echo "no target $t in build-tsan" >&2; exit 1; }
  done
  echo "build-tsan has the ${#TSAN_TESTS[@]}+${#TSAN_SERVE_TESTS[@]} TSan test targets"
  echo "== configure-only: every stage has its tests"
  exit 0
fi
for t in "${TSAN_TESTS[@]}"; do
  stage="${t%_test}"
  # halt_on_error: a race fails the binary (and a daemon or CLI run under test).
  (cd "build-tsan/tests/unit/$stage" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    "./$t" --gtest_brief=1)
done
for t in "${TSAN_SERVE_TESTS[@]}"; do
  (cd build-tsan/tests/integration && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    "./$t" --gtest_brief=1)
done
# The front door under TSan: HTTP workers reading the web config while it is
# swapped (a daemon that exits non-zero fails the test).
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  python3 tests/integration/web_door_test.py --profwatch build-tsan/exporter/profwatch

echo "== fuzz (${FUZZ_SECONDS}s per target)"
bash scripts/fuzz.sh build-asan "$FUZZ_SECONDS"
echo "== all tests passed"
