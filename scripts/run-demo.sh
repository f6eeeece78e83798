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
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGURE_ONLY="${PROFWATCH_CONFIGURE_ONLY:-0}"
[[ "$CONFIGURE_ONLY" == 1 ]] || bash scripts/install-deps.sh
# Tests off: their packages (GoogleTest, Prometheus, ...) are not installed here.
# scripts/test.sh turns them on again in the same build/.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROFWATCH_TESTS=OFF
[[ "$CONFIGURE_ONLY" == 1 ]] && exit 0
cmake --build build -j "$(nproc)" --target profwatch profwatch_demo
exec ./build/exporter/profwatch serve "$@"
