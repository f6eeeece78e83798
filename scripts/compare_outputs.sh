#!/usr/bin/env bash
# Byte-identity check for a restructuring: runs two profwatch binaries over
# the same inputs and diffs everything they print.
#
#   scripts/compare_outputs.sh OLD_PROFWATCH NEW_PROFWATCH TRACEGEN WORKDIR
#
# Inputs: the shared fixtures (../shared/fixtures: every real trace, the
# drill cases, the real H200 job dirs with their logs), tests/fixtures/xplane
# and windows generated with TRACEGEN into WORKDIR/inputs (once; kept for the
# next call): `file` traces of both vendors with blockers, host stalls and
# the writer cap, `job` trees (1node, 1gpu, split dirs, stale window, log),
# nsys exports of both schemas, Kineto collectives of every form and
# process-group spelling, JAX collectives with their xplane.
# Runs: `analyze` in --format json, table and drill with --threads 1 and 2 on
# every input, a few flag variants (--step-time, --expected-gpus, --source
# xplane, --peak-flops, --profile-steps), `compare` in text, markdown and
# json, and `serve` on the H200 jobs and a generated job tree: its /metrics
# sorted without the samples that vary from run to run (timestamps, the
# analysis duration and owners' worker seconds, process_*, workers), then
# again after a restart from its --state file, and the reports of its
# --history lines.
# Output of each binary under WORKDIR/{old,new}; prints the differing files
# and exits 1 when any differ. Needs curl.
set -uo pipefail
if [[ $# -ne 4 ]]; then
  sed -n '2,20p' "$0" >&2
  exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
GEN=$(realpath "$3")
WORK=$(realpath -m "$4")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$(realpath -m "$ROOT/../shared/fixtures")
IN="$WORK/inputs"

gen_inputs() {
  [[ -f "$IN/.done" ]] && return 0
  rm -rf "$IN"
  mkdir -p "$IN/files" "$IN/jobs" "$IN/kineto" "$IN/nsys" "$IN/jax"
  local g=(--gpus 2 --kernels-per-step 120)
  "$GEN" file --out "$IN/files/amd.trace.json.gz" "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/nvidia.trace.json.gz" --vendor nvidia --streams 3 "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/blocker_a2a.trace.json.gz" --blocker-us 20000 "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/blocker_scatter.trace.json.gz" --blocker-us 20000 \
    --blocker-kind scatter --vendor nvidia "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/stall.trace.json.gz" --host-stall-us 300000 "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/capped.trace.json.gz" --cap-events 2000 "${g[@]}" >/dev/null
  "$GEN" file --out "$IN/files/onestep.trace.json.gz" --steps 1 "${g[@]}" >/dev/null
  "$GEN" job --out "$IN/jobs" --job j1node --run r1 --mode 1node --hosts 2 --gpus-per-host 2 \
    --kernels-per-step 80 --log >/dev/null
  "$GEN" job --out "$IN/jobs" --job j1gpu --run r1 --mode 1gpu --hosts 1 --gpus-per-host 4 \
    --kernels-per-step 80 --split-dirs 2 >/dev/null
  "$GEN" job --out "$IN/jobs" --job jstale --run r1 --hosts 1 --gpus-per-host 2 \
    --kernels-per-step 80 --stale --windows 2 --blocker-us 15000 --host-stall-us 200000 >/dev/null
  "$GEN" nsys --out "$IN/nsys/e2020.sqlite" --schema 2020 --ranks 2 --kernels 300 >/dev/null
  "$GEN" nsys --out "$IN/nsys/e2024.sqlite" --schema 2024 --ranks 4 --kernels 600 --steps 3 >/dev/null
  local form pg
  for form in nccl rccl rccl-bare cpu-op; do
    for pg in named undefined absent; do
      "$GEN" kineto --out "$IN/kineto/${form}_${pg}.pt.trace.json.gz" --form "$form" \
        --pg-desc "$pg" --gpus 2 >/dev/null
    done
  done
  "$GEN" jax-collectives --out "$IN/jax/w" --gpus 2 >/dev/null
  touch "$IN/.done"
}

# Every input analysed in every format and thread count.
inputs() {
  local f
  for f in "$SHARED"/real/kineto/*.gz "$SHARED"/real/xplane/*.pb "$SHARED"/real/nsys/*.sqlite \
    "$SHARED"/converted/*.gz "$ROOT"/tests/fixtures/xplane/*.{pb,gz}; do
    [[ -e "$f" ]] && echo "$f"
  done
  for f in "$SHARED"/drill/*/ "$SHARED"/real/h200/jobs/*/ "$SHARED"/real/h200/jobs/*/*/; do
    [[ -d "$f" ]] && echo "${f%/}"
  done
  ls -d "$IN"/files/* "$IN"/kineto/* "$IN"/nsys/* "$IN"/jax/w/* "$IN"/jobs/*/ "$IN"/jobs/*/*/ |
    grep -v '\.log$' | sed 's,/$,,'
}

# name for an input path (relative to the fixture roots, / -> _)
key() {
  local p=${1#"$SHARED"/}
  p=${p#"$IN"/}
  p=${p#"$ROOT"/}
  echo "${p//\//_}"
}

run_analyze() {  # BIN OUTDIR
  local bin=$1 out=$2 p k fmt t
  mkdir -p "$out/analyze"
  while read -r p; do
    k=$(key "$p")
    for fmt in json table drill; do
      for t in 1 2; do
        "$bin" analyze --format "$fmt" --threads "$t" "$p" >"$out/analyze/$k.$fmt.t$t" 2>&1
        echo "rc=$?" >>"$out/analyze/$k.$fmt.t$t"
      done
    done
    for v in "--step-time 0.25" "--expected-gpus 4 --profile-steps 2" "--peak-flops 1e15"; do
      for fmt in json table; do
        "$bin" analyze --format "$fmt" $v "$p" >"$out/analyze/$k.$fmt.${v// /_}" 2>&1
        echo "rc=$?" >>"$out/analyze/$k.$fmt.${v// /_}"
      done
    done
  done < <(inputs)
  local h="$SHARED/real/h200/jobs/4242-llama-h200"
  for fmt in json table; do
    "$bin" analyze --format "$fmt" --source xplane "$h" >"$out/analyze/h200_xplane.$fmt" 2>&1
    echo "rc=$?" >>"$out/analyze/h200_xplane.$fmt"
  done
}

run_compare() {  # BIN OUTDIR
  local bin=$1 out=$2 fmt i=0 pair
  mkdir -p "$out/compare"
  local j="$SHARED/real/h200/jobs"
  local pairs=(
    "$j/4242-llama-h200/base $j/4242-llama-h200/nocb"
    "$j/4343-gpt-h200-torch/stall20 $j/4545-gpt-h200-flops/flops $j/4444-gpt-h200-cudagraphs/graphs"
    "$IN/files/amd.trace.json.gz $IN/files/blocker_a2a.trace.json.gz $IN/files/stall.trace.json.gz"
    "$IN/kineto/nccl_named.pt.trace.json.gz $IN/kineto/rccl-bare_absent.pt.trace.json.gz"
    "$IN/jobs/j1node/r1 $IN/jobs/jstale/r1"
    "$IN/nsys/e2020.sqlite $IN/jax/w/2025_01_15_10_00_00")
  for pair in "${pairs[@]}"; do
    i=$((i + 1))
    for fmt in text markdown json; do
      # shellcheck disable=SC2086
      "$bin" compare --format "$fmt" --force $pair >"$out/compare/$i.$fmt" 2>&1
      echo "rc=$?" >>"$out/compare/$i.$fmt"
      "$bin" compare --format "$fmt" --force --step-time 0.1 $pair >"$out/compare/$i.$fmt.step" 2>&1
      echo "rc=$?" >>"$out/compare/$i.$fmt.step"
    done
  done
}

# /metrics without what varies between two runs of the same input.
stable_metrics() {
  grep -v -E '^(# (HELP|TYPE) )?(process_|profwatch_analysis_duration_seconds|profwatch_owner_worker_seconds_total|profwatch_last_scan_timestamp_seconds|profwatch_window_analyzed_timestamp_seconds|profwatch_workers_busy|profwatch_scans_total|profwatch_build_info)' |
    sort
}

# Starts serve on ROOT until /metrics is stable (and shows WINDOWS windows
# analysed), writes the sorted stable metrics to OUT. Extra args to serve.
serve_until_stable() {  # BIN ROOT WINDOWS OUT [ARGS...]
  local bin=$1 root=$2 windows=$3 out=$4
  shift 4
  local port="$out.port" prev="" cur="" same=0 deadline=$((SECONDS + 120)) pid
  rm -f "$port"
  "$bin" serve --watch "$root" --listen 127.0.0.1:0 --listen-port-file "$port" --settle 1s \
    --poll-interval 1s --retention 100000h --log-level warn "$@" >"$out.log" 2>&1 &
  pid=$!
  while ((SECONDS < deadline)); do
    sleep 1
    [[ -s "$port" ]] || continue
    cur=$(curl -s "http://127.0.0.1:$(cat "$port")/metrics" | stable_metrics)
    local n
    n=$(grep -c '^profwatch_window_gpus{' <<<"$cur")
    if [[ "$n" -ge "$windows" && "$cur" == "$prev" ]] && ! grep -q '^profwatch_pending_windows{.*} [1-9]' <<<"$cur"; then
      same=$((same + 1))
      ((same >= 3)) && break
    else
      same=0
    fi
    prev=$cur
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  echo "$cur" >"$out"
  ((same >= 3)) || echo "NOT STABLE within the deadline" >>"$out"
  rm -f "$port"
}

run_serve() {  # BIN OUTDIR
  local bin=$1 out=$2
  mkdir -p "$out/serve"
  rm -f "$out/serve/"*.state "$out/serve/"*.history
  serve_until_stable "$bin" "$SHARED/real/h200/jobs" 5 "$out/serve/h200.metrics" \
    --state "$out/serve/h200.state" --history "$out/serve/h200.history"
  serve_until_stable "$bin" "$SHARED/real/h200/jobs" 5 "$out/serve/h200.restart.metrics" \
    --state "$out/serve/h200.state"
  serve_until_stable "$bin" "$IN/jobs" 3 "$out/serve/gen.metrics" --step-time 0.5 \
    --history "$out/serve/gen.history"
  # compare reads windows back from the history (the run state, not the report).
  local fmt
  for fmt in text json; do
    "$bin" compare --format "$fmt" --force --history "$out/serve/h200.history" \
      4242-llama-h200/base 4242-llama-h200/nocb 4343-gpt-h200-torch/stall20 \
      >"$out/serve/history_compare.$fmt" 2>&1
    echo "rc=$?" >>"$out/serve/history_compare.$fmt"
  done
  # The history lines without their write time, sorted (workers finish in any order).
  local h
  for h in "$out/serve/"*.history; do
    sed -E 's/"time":[0-9.e+]+,//; s/"analyzed_unix":[0-9.e+]+,//' "$h" | sort >"$h.stable"
  done
}

gen_inputs
for side in old new; do
  bin=$OLD
  [[ $side == new ]] && bin=$NEW
  rm -rf "${WORK:?}/$side"
  mkdir -p "$WORK/$side"
  run_analyze "$bin" "$WORK/$side"
  run_compare "$bin" "$WORK/$side"
  run_serve "$bin" "$WORK/$side"
done
runs=$(find "$WORK/new" -type f ! -name '*.log' ! -name '*.state' ! -name '*.history' | wc -l)
if diff -r -q -x '*.log' -x '*.state' -x '*.history' "$WORK/old" "$WORK/new"; then
  echo "identical: $runs outputs"
  exit 0
fi
echo "DIFFERENT (of $runs outputs)"
exit 1
