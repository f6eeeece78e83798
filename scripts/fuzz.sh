#!/usr/bin/env bash
# Runs every libFuzzer target of a PROFWATCH_FUZZ=ON build for a bounded time,
# starting from a copy of its seed corpus, JOBS targets side by side (each
# target is one process on one core). A crash fails the script; save the
# reproducer under tests/fuzz/corpus/<entry>/ and add a tests/regress test.
#   usage: scripts/fuzz.sh BUILD_DIR [SECONDS_PER_TARGET] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?build dir}"
seconds="${2:-20}"
jobs="${3:-1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# fuzz_one BIN: runs one target; its output goes to $work/<entry>.log and is
# printed (with the reproducers) only when it fails.
fuzz_one() {
  local bin="$1" name entry timeout rss
  name="$(basename "$bin")"
  entry="${name#fuzz_}"
  mkdir -p "$work/$entry"
  cp -r tests/fuzz/corpus/"$entry"/. "$work/$entry"/ 2>/dev/null || true
  # Per input: a time and memory limit (libFuzzer reports an input over
  # either as a failure). The xplane target also expands HLO modules: its
  # bounds (parse::HloLimits) keep any input far below these.
  timeout=25 rss=2048
  case "$entry" in xplane_parser) timeout=10 rss=1024 ;; esac
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" -timeout="$timeout" \
    -rss_limit_mb="$rss" \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/crash-$entry-" \
    "$work/$entry" 2>"$work/$entry.log" || {
      tail -n 40 "$work/$entry.log"
      echo "fuzz target $name failed; reproducer(s):"; ls "$work"/crash-"$entry"-* 2>/dev/null || true
      return 1
    }
  echo "-- $name: ${seconds}s (per input: ${timeout}s, ${rss} MB): $(grep -E \
    "stat::number_of_executed_units" "$work/$entry.log" | tail -n 1 | tr -s ' ')"
}

bins=()
for bin in "$build"/tests/fuzz/fuzz_*; do
  case "$bin" in *_replay) continue ;; esac
  [ -x "$bin" ] && bins+=("$bin")
done
[ "${#bins[@]}" -gt 0 ] || { echo "no libFuzzer targets in $build (configure with -DPROFWATCH_FUZZ=ON)"; exit 1; }

failed=0
running=0
for bin in "${bins[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  fuzz_one "$bin" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
[ "$failed" = 0 ] || { echo "a fuzz target failed (above)"; exit 1; }
echo "all ${#bins[@]} fuzz targets ran ${seconds}s each without a failure"
