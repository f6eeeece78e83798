#!/usr/bin/env bash
# Runs every libFuzzer target of a PROFWATCH_FUZZ=ON build for a bounded time,
# starting from a copy of its seed corpus. A crash fails the script; save the
# reproducer under tests/fuzz/corpus/<entry>/ and add a tests/regress test.
#   usage: scripts/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?build dir}"
seconds="${2:-20}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
found=0
for bin in "$build"/tests/fuzz/fuzz_*; do
  case "$bin" in *_replay) continue ;; esac
  [ -x "$bin" ] || continue
  found=1
  name="$(basename "$bin")"
  entry="${name#fuzz_}"
  mkdir -p "$work/$entry"
  cp -r tests/fuzz/corpus/"$entry"/. "$work/$entry"/ 2>/dev/null || true
  # Per input: a time and memory limit (libFuzzer reports an input over
  # either as a failure). The xplane target also expands HLO modules: its
  # bounds (parse::HloLimits) keep any input far below these.
  timeout=25 rss=2048
  case "$entry" in xplane_parser) timeout=10 rss=1024 ;; esac
  echo "-- $name for ${seconds}s (per input: ${timeout}s, ${rss} MB)"
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" -timeout="$timeout" \
    -rss_limit_mb="$rss" \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/crash-$entry-" \
    "$work/$entry" 2>"$work/$entry.log" || {
      tail -n 40 "$work/$entry.log"
      echo "fuzz target $name failed; reproducer(s):"; ls "$work"/crash-"$entry"-* 2>/dev/null || true
      exit 1
    }
  grep -E "stat::number_of_executed_units|Done" "$work/$entry.log" | tail -n 2 || true
done
[ "$found" = 1 ] || { echo "no libFuzzer targets in $build (configure with -DPROFWATCH_FUZZ=ON)"; exit 1; }
