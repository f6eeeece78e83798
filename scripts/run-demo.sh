#!/usr/bin/env bash
# Newcomer's first command (Debian 12, as root): installs the Debian packages
# that building and running need (not the test toolchain; no service is
# started, stopped or reconfigured), builds profwatch, and runs `profwatch serve` on its embedded default (a demo
# job directory generated at build time), so
#   curl -s http://127.0.0.1:19474/metrics | grep profwatch_
# shows real family, gap and window metrics at once. Extra arguments are
# passed to `profwatch serve`.
# PROFWATCH_CONFIGURE_ONLY=1 (for tests/scripts/readme_commands_test.sh):
# configures build/ as below and stops (no apt step, no build, no daemon).
# PROFWATCH_BUILD_ONLY=1 (for measuring what this command builds): configures
# and builds exactly as below, then stops (no apt step, no daemon).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGURE_ONLY="${PROFWATCH_CONFIGURE_ONLY:-0}"
BUILD_ONLY="${PROFWATCH_BUILD_ONLY:-0}"
[[ "$CONFIGURE_ONLY" == 1 || "$BUILD_ONLY" == 1 ]] || bash scripts/install-deps.sh
# Tests off: their packages (GoogleTest, Prometheus, ...) are not installed here.
# scripts/test.sh turns them on again in the same build/, with the same
# flags, so it reuses these objects. -O2 without debug information: the
# same code as RelWithDebInfo's, built in less time.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFWATCH_DEBUG_INFO=none \
  -DPROFWATCH_TESTS=OFF
[[ "$CONFIGURE_ONLY" == 1 ]] && exit 0
cmake --build build -j "$(nproc)" --target profwatch profwatch_demo
[[ "$BUILD_ONLY" == 1 ]] && exit 0
exec ./build/exporter/profwatch serve "$@"
