#!/usr/bin/env bash
# profwatch sidecar for Slurm jobs: one `profwatch serve` per allocated node,
# started as an overlapping job step before the training step and stopped
# after it, plus a Prometheus file_sd target file so the job's nodes are
# scraped while (and only while) it runs.
#
# Usage, inside an sbatch script (see train.sbatch):
#   profwatch-sidecar.sh start          # before `srun ... train`
#   profwatch-sidecar.sh stop           # after it (or from an EXIT trap)
#   profwatch-sidecar.sh file-sd OUT NODE...   # only write a target file
#
# Settings (environment):
#   PROFWATCH_WATCH        directory to watch (default: $SLURM_SUBMIT_DIR/outputs):
#                          a directory of jobs (each child a job), unless
#   PROFWATCH_JOB          is set: then PROFWATCH_WATCH is that one job's
#                          directory, its training_job label (--watch JOB=DIR)
#   PROFWATCH_FILE_SD_DIR  directory Prometheus reads file_sd targets from
#                          (shared file system; required for start/stop)
#   PROFWATCH_PORT         /metrics port on every node (default: derived from
#                          the job id, 20000 + SLURM_JOB_ID % 10000, so two
#                          jobs sharing a node do not collide)
#   PROFWATCH_BIN          profwatch binary (default: profwatch in PATH)
#   PROFWATCH_SLURM_JOB_NAME  value of the slurm_job_name target label
#                          (default: $SLURM_JOB_NAME). The target labels never
#                          include training_job: the exporter sets that label
#                          on every series from the job directory's name, and
#                          a target label of the same name would rename the
#                          exporter's to exported_training_job.
#   PROFWATCH_STATE_DIR    node-local state dir (default ${TMPDIR:-/tmp}/profwatch-$SLURM_JOB_ID)
#   PROFWATCH_EXTRA_ARGS   more `serve` flags, e.g. "--expected-gpus 8", or
#                          "--web.config.file /shared/profwatch/web.yml" for
#                          TLS and basic auth (then the Prometheus job reading
#                          the file_sd targets needs scheme: https, tls_config
#                          and basic_auth: docs/security.md)
#
# The watched directory is usually on a shared file system that every node
# sees; --host-filter auto makes each node's daemon analyse only the trace
# files its own host wrote, and the recording rules in rules/ add the nodes
# back together per (training_job, run).
set -euo pipefail

die() { echo "profwatch-sidecar: $*" >&2; exit 1; }

json_escape() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/\\r}
  printf '%s' "$s"
}

# write_file_sd OUT NODE... : one target group, all nodes, job labels.
# Written to a temp name and renamed, so Prometheus never reads half a file.
write_file_sd() {
  local out=$1
  shift
  [ "$#" -gt 0 ] || die "file-sd: no nodes given"
  local port
  port=$(job_port)
  local job_name=${PROFWATCH_SLURM_JOB_NAME:-${SLURM_JOB_NAME:-}}
  local targets="" node
  for node in "$@"; do
    [ -n "$targets" ] && targets+=", "
    targets+="\"$(json_escape "$node"):${port}\""
  done
  local tmp
  tmp=$(mktemp "$(dirname "$out")/.profwatch-file-sd.XXXXXX")
  {
    printf '[\n  {\n    "targets": [%s],\n    "labels": {\n' "$targets"
    printf '      "slurm_job_name": "%s",\n' "$(json_escape "$job_name")"
    printf '      "slurm_job_id": "%s",\n' "$(json_escape "${SLURM_JOB_ID:-}")"
    printf '      "slurm_cluster": "%s"\n' "$(json_escape "${SLURM_CLUSTER_NAME:-}")"
    printf '    }\n  }\n]\n'
  } >"$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$out"
}

# The port of this job's daemons: PROFWATCH_PORT, else one derived from the
# job id (outside Linux's default ephemeral range 32768-60999).
job_port() {
  if [ -n "${PROFWATCH_PORT:-}" ]; then
    echo "$PROFWATCH_PORT"
  else
    echo $((20000 + ${SLURM_JOB_ID:?not inside a Slurm job} % 10000))
  fi
}

run_dir() { echo "${TMPDIR:-/tmp}/profwatch-sidecar-${SLURM_JOB_ID:?not inside a Slurm job}"; }
file_sd_path() { echo "${PROFWATCH_FILE_SD_DIR:?set PROFWATCH_FILE_SD_DIR}/slurm-${SLURM_JOB_ID}.json"; }

start() {
  : "${SLURM_JOB_ID:?not inside a Slurm job}"
  : "${SLURM_JOB_NODELIST:?not inside a Slurm allocation}"
  local watch=${PROFWATCH_WATCH:-${SLURM_SUBMIT_DIR:-$PWD}/outputs}
  [[ -n "${PROFWATCH_JOB:-}" ]] && watch="$PROFWATCH_JOB=$watch"
  local port
  port=$(job_port)
  local bin=${PROFWATCH_BIN:-profwatch}
  local state_dir=${PROFWATCH_STATE_DIR:-${TMPDIR:-/tmp}/profwatch-${SLURM_JOB_ID}}
  local rd
  rd=$(run_dir)
  mkdir -p "$rd"
  [ -e "$rd/srun.pid" ] && kill -0 "$(cat "$rd/srun.pid")" 2>/dev/null &&
    die "already running (pid $(cat "$rd/srun.pid"))"

  local nodes=()
  mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  [ "${#nodes[@]}" -gt 0 ] || die "no nodes in SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST"

  local extra=()
  # Word splitting of the extra flags is intended.
  read -r -a extra <<<"${PROFWATCH_EXTRA_ARGS:-}"

  # --overlap: share the allocation's CPUs with the training step instead of
  # waiting for them; one task per node; a failing sidecar must never take
  # the job down (--kill-on-bad-exit=0). nice keeps analysis below training.
  # The inner script is meant for the node's shell, hence single quotes.
  # shellcheck disable=SC2016
  srun --overlap --ntasks-per-node=1 --nodes="${#nodes[@]}" --ntasks="${#nodes[@]}" \
    --kill-on-bad-exit=0 --job-name=profwatch \
    --output="$rd/profwatch-%N.log" \
    bash -c 'mkdir -p "$1" && shift && exec nice -n 10 "$@"' profwatch-sidecar "$state_dir" \
    "$bin" serve --watch "$watch" --listen "0.0.0.0:${port}" --host-filter auto \
    --state "$state_dir/state.json" "${extra[@]}" \
    </dev/null >"$rd/srun.log" 2>&1 &
  echo $! >"$rd/srun.pid"

  write_file_sd "$(file_sd_path)" "${nodes[@]}"
  echo "profwatch-sidecar: started on ${#nodes[@]} node(s), port ${port}, targets in $(file_sd_path)"
}

stop() {
  local rd
  rd=$(run_dir)
  # Drop the targets first, so the end of the job is not an "exporter down".
  rm -f "$(file_sd_path)"
  [ -e "$rd/srun.pid" ] || { echo "profwatch-sidecar: not running"; return 0; }
  local pid
  pid=$(cat "$rd/srun.pid")
  if kill -0 "$pid" 2>/dev/null; then
    # srun forwards SIGTERM to every task: profwatch persists state and exits.
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 300 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "profwatch-sidecar: step did not stop in 30 s, killing" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$rd/srun.pid"
  echo "profwatch-sidecar: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  file-sd)
    shift
    [ "$#" -ge 2 ] || die "usage: $0 file-sd OUT NODE..."
    write_file_sd "$@"
    ;;
  *) die "usage: $0 start|stop|file-sd OUT NODE..." ;;
esac
