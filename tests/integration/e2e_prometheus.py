#!/usr/bin/env python3
"""End-to-end test: a real Prometheus scrapes a real `profwatch serve`, with
the project's rules, and the answers are read back through Prometheus' HTTP API.

  e2e_prometheus.py --profwatch BIN [--prometheus BIN] [--repo DIR] [--keep]

Steps (each wait bounded by a deadline; everything on 127.0.0.1):
  1. start `profwatch serve` on an ephemeral port watching a temp jobs dir
     (the port is read from its `listening address=HOST:PORT` log line);
  2. start `prometheus` on a free loopback port: scrape and evaluation
     interval 1 s, rule_files = a copy of rules/*.yml with every `for:`
     shortened to a few seconds (nothing else changed);
  3. write a training log and land window 1, whose step - kernel gap is
     positive (kernels 0.6 s per GPU per step, steady step 1.0 s): the
     recording rules must give the exact per-GPU-per-step figures, and
     ProfwatchStepKernelGapHigh must go pending, then firing (warning and
     critical), as must ProfwatchFamilyDominatesWithGap (the collective
     dominates) and ProfwatchMainStreamBlocker (it runs alone, 0.4 s a call);
  4. run every dashboard query (tests/dashboards/promql_extract.py) against
     this Prometheus and demand data, except the few listed in
     MAY_BE_EMPTY with the reason;
  5. land window 2 with overlapping streams (kernels 1.2 s per GPU per step,
     gap negative): the recording rules follow and the gap alerts resolve;
  6. land a corrupt trace in another run: ProfwatchWindowErrors fires and
     run1's figures stay as they were.
`--scenario multihost`: two sidecars combined by the recording rules.
`--scenario shards`: three `--shard I/3` daemons and one daemon over the
whole root, each group scraped by its own Prometheus with the project's
rules: every recording-rule series and every per-job ALERTS series is the
same in both, and each job is exported by exactly one shard.
`--scenario restart`: firing alerts stay firing across a restart on --state.
`--scenario h200`: the real H200 runs of ../shared/fixtures (a healthy JAX
run and a PyTorch run with a 20 ms host stall per step): nothing alerts on
the first, only the gap alert (pointing at a host stall) on the second.
Processes are stopped and the temp dir removed in `finally`, also on
failure; on failure the tails of both processes' logs are printed.

Exit status: 0 pass, 1 fail, 77 skipped (prometheus missing, or the binary
has no `serve` command yet).
"""
import argparse
import calendar
import datetime
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
JOB = "e2ejob"
RUN = "run1"
HOST = "e2ehost"
GPUS = 2
PROFILE_STEPS = 3
STEP_SECONDS = 1.0   # steady step time in the training log
FOR_SECONDS = 4      # every alert's `for:` in the generated rules copy
KEEP_SECONDS = 20    # every alert's `keep_firing_for:` there
TOL = 1e-6
# runbook_url of the gap alert: by default the runbook the daemon serves
# (http://<target>/runbook#<alert>), and under the base an operator sets as
# the external label profwatch_runbook_base_url (h200).
RUNBOOK_GAP_ANCHOR = "profwatchstepkernelgaphigh"
RUNBOOK_OPERATOR = "https://runbooks.example.com/profwatch/docs"
RUNBOOK_GAP_PAGE = "/alerts-and-dashboards.md#" + RUNBOOK_GAP_ANCHOR

# Dashboard queries that may legitimately return nothing in this scenario,
# keyed by (dashboard uid, panel title, refId), with the reason.
MAY_BE_EMPTY = {
    # Bytes need operator shapes too (#51); ServeFlopsTest checks the bytes
    # series of a record_shapes trace against analyze.
    **{("profwatch-job-overview", panel, ref):
       "the generated traces record no operator shapes (no bytes modeled)"
       for panel, refs in (("Achieved bandwidth by family against its roof", "ABC"),
                           ("Arithmetic intensity by family against the ridge", "AB"))
       for ref in refs},
    ("profwatch-exporter-health", "Window errors by reason", "A"):
        "no window error happens in this scenario (counters per reason appear with the first error)",
    **{("profwatch-exporter-health", panel, ref):
       "no owner is over a cap and nothing is refused in this scenario (series per owner "
       "appear with the first refusal)"
       for panel, refs in (("Owners over a per-owner cap", "A"),
                           ("Inputs refused in the last hour", "AB"),
                           ("Training logs refused in the last hour", "A"))
       for ref in refs},
    ("profwatch-job-overview", "MFU and TFLOP/s per device", "A"):
        "the synthetic MaxText log prints no MFU field",
    # The generated traces record no operator shapes; the FLOP metrics of a
    # record_shapes trace are checked against analyze in ServeFlopsTest.
    ("profwatch-job-overview", "MFU from the trace", "A"):
        "the generated traces record no operator shapes (no FLOPs counted)",
    ("profwatch-job-overview", "Achieved and model TFLOP/s per GPU", "A"):
        "the generated traces record no operator shapes (no FLOPs counted)",
    ("profwatch-job-overview", "Achieved and model TFLOP/s per GPU", "B"):
        "the generated traces record no operator shapes (no FLOPs counted)",
    # The generated JAX traces name their collectives by hlo_op but come
    # without the .xplane.pb whose HLO modules give their sizes: no
    # bandwidth. Sizes and bandwidth are checked in ServeCollectivesTest and
    # JaxCollectivesAnalysisTest.
    ("profwatch-job-overview", "Bus bandwidth by collective", "A"):
        "the generated JAX traces carry no collective sizes (no bandwidth)",
}


class Failure(Exception):
    pass


def log(msg):
    print(f"[e2e {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_until(what, fn, timeout, interval=0.2):
    """Calls fn until it returns a truthy value; that value, or Failure."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except (Failure, urllib.error.URLError, ConnectionError, ValueError, KeyError) as e:
            last_exc = e
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout}s waiting for {what}"
                          + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A child process whose output is collected by a thread."""

    def __init__(self, name, argv, cwd=None):
        self.name = name
        self.lines = []
        self.lock = threading.Lock()
        log(f"starting {name}: {' '.join(argv)}")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd,
                                  stdin=subprocess.DEVNULL, text=True, errors="replace",
                                  start_new_session=True)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def output(self):
        with self.lock:
            return list(self.lines)

    def check_alive(self):
        if self.p.poll() is not None:
            raise Failure(f"{self.name} exited with status {self.p.returncode}")

    def stop(self, timeout=15):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} ignored SIGTERM for {timeout}s; killing")
                self.p.kill()
                self.p.wait(timeout=5)
        self.t.join(timeout=5)

    def tail(self, n=40):
        out = self.output()
        return "\n".join(f"  {self.name}| {l}" for l in out[-n:])


# ------------------------------------------------------------ fixtures
def write_trace(path, kernels_per_step, gpus=GPUS):
    """A JAX/XLA-style <host>.trace.json.gz: `gpus` device pids, PROFILE_STEPS
    steps of STEP_SECONDS, `kernels_per_step` = [(name, stream, start_s,
    dur_s)] relative to each step's start. Durations are exact in µs."""
    events = []
    for g in range(gpus):
        pid = 1 + g
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"/device:GPU:{g}"}})
        events.append({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}})
        for stream in sorted({k[1] for k in kernels_per_step}):
            events.append({"ph": "M", "pid": pid, "tid": stream, "name": "thread_name",
                           "args": {"name": f"Stream #{stream}(Kernel)"}})
    events.append({"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}})
    corr = 0
    for g in range(gpus):
        for step in range(PROFILE_STEPS):
            for name, stream, start, dur in kernels_per_step:
                corr += 1
                events.append({"ph": "X", "pid": 1 + g, "tid": stream, "name": name,
                               "ts": round((step * STEP_SECONDS + start) * 1e6, 3),
                               "dur": round(dur * 1e6, 3),
                               "args": {"correlation_id": str(corr), "hlo_module": "jit_train_step",
                                        # a JAX scope: region decoder/layers/mlp
                                        "name": "jit(train_step)/jit(main)/transpose(jvp(decoder))/layers/mlp/op"}})
    events.append({})
    doc = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".partial"
    with gzip.open(tmp, "wt") as f:
        json.dump(doc, f)
    # The real writer writes in place; a rename keeps this test about the
    # rules, not about half-written files (the daemon's own tests do those).
    os.rename(tmp, path)


GEMM = "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0"
NCCL = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"

# Window 1: gemm 0.2 s then nccl 0.4 s on one stream, per GPU per step:
# total 0.6, busy 0.6, overlap 0, exposed comm 0.4; span per GPU over the
# window 2 * 1.0 + 0.6 = 2.6 s -> idle (2.6 - 1.8) / 3 per GPU-step. The
# collective dominates (67%) and runs alone in one 0.4 s call per step: a
# main-stream blocker (40% of the step).
WINDOW1 = [(GEMM, 16, 0.0, 0.2), (NCCL, 16, 0.2, 0.4)]
# Window 2: gemm 0.7 s on stream 16 while nccl 0.5 s runs on stream 17:
# total 1.2 > step 1.0 (negative gap), busy 0.7, overlap 0.5, exposed comm 0.
WINDOW2 = [(GEMM, 16, 0.0, 0.7), (NCCL, 17, 0.1, 0.5)]


def host_raw(gpus, kernels):
    """The raw window sums one sidecar exports for a host of `gpus` GPUs that
    each run `kernels` in every profiled step."""
    gs = gpus * PROFILE_STEPS
    ivs = sorted((k[2], k[2] + k[3]) for k in kernels)
    busy, cur_s, cur_e = 0.0, None, None
    for st, en in ivs:
        if cur_e is None or st > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = st, en
        else:
            cur_e = max(cur_e, en)
    busy += cur_e - cur_s
    span_per_gpu = (PROFILE_STEPS - 1) * STEP_SECONDS + max(e for _, e in ivs) - min(st for st, _ in ivs)
    comm = [(k[2], k[2] + k[3]) for k in kernels if k[0] == NCCL]
    comp = [(k[2], k[2] + k[3]) for k in kernels if k[0] != NCCL]
    exposed = 0.0
    for cs, ce in comm:
        exposed += (ce - cs) - sum(max(0.0, min(ce, e) - max(cs, st)) for st, e in comp)
    fam = {}
    for k in kernels:
        fam[k[0]] = fam.get(k[0], 0.0) + k[3] * gs
    return {"gpus": gpus, "gpu_steps": gs, "family": fam, "kernel": sum(fam.values()),
            "busy": busy * gs, "span": span_per_gpu * gpus, "exposed": exposed * gs}


def combine(raws):
    """What the recording rules must give for these sidecars' raw sums."""
    gs = sum(r["gpu_steps"] for r in raws)
    fam = {}
    for r in raws:
        for name, v in r["family"].items():
            fam[name] = fam.get(name, 0.0) + v
    total = sum(r["kernel"] for r in raws) / gs
    busy = sum(r["busy"] for r in raws) / gs
    return {
        "gpu_steps": gs,
        "gpus": sum(r["gpus"] for r in raws),
        "families": sorted(v / gs for v in fam.values()),
        "total": total,
        "busy": busy,
        "idle": sum(r["span"] for r in raws) / gs - busy,
        "overlap": total - busy,
        "exposed_comm": sum(r["exposed"] for r in raws) / gs,
        "step": STEP_SECONDS,
        "gap": STEP_SECONDS - total,
        "ratio": (STEP_SECONDS - total) / STEP_SECONDS,
        "share_max": max(fam.values()) / gs / total,
    }


def expected(kernels):
    return combine([host_raw(GPUS, kernels)])


def write_training_log(path, last_step):
    """MaxText-style log: config dump, then one `completed step:` line per
    step. Warm-up steps are slow, the profiled steps 5-7 and the write-back
    step 8 too; every steady step takes STEP_SECONDS."""
    lines = ["Config param profiler: xplane",
             "Config param skip_first_n_steps_for_profiler: 5",
             f"Config param profiler_steps: {PROFILE_STEPS}",
             "Config param run_name: " + RUN]
    for step in range(last_step + 1):
        secs = STEP_SECONDS
        if step < 3:
            secs = 30.0 if step == 0 else 2.5
        elif 5 <= step <= 7:
            secs = 1.3
        elif step == 8:
            secs = 1.6
        lines.append(f"completed step: {step}, seconds: {secs:.3f}, TFLOP/s/device: 215.125, "
                     f"Tokens/s/device: 5660.5, total_weights: 1048576, loss: {12.5 - step * 0.01:.3f}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def ts_dir_name(t):
    return time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(t))


# ------------------------------------------------------------ prometheus
class PromAPI:
    def __init__(self, base):
        self.base = base

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise Failure(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr):
        data = self.get("/api/v1/query", query=expr)
        if data["resultType"] == "vector":
            return data["result"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        raise Failure(f"unexpected result type {data['resultType']} for {expr}")

    def values(self, expr):
        """{frozenset(labels without __name__): float}"""
        out = {}
        for s in self.query(expr):
            labels = {k: v for k, v in s["metric"].items() if k != "__name__"}
            out[frozenset(labels.items())] = float(s["value"][1])
        return out

    def alerts(self, name, job=JOB):
        return [a for a in self.get("/api/v1/alerts")["alerts"]
                if a["labels"].get("alertname") == name and a["labels"].get("training_job") == job]


def shorten_for(rules_text, seconds):
    # Only the `for:` and `keep_firing_for:` durations change (the latter to
    # KEEP_SECONDS: long enough for a restart at a 1 s scrape interval); the
    # expressions are the shipped ones.
    text = re.sub(r"(?m)^(\s+for:\s*)(\d+[smh])\s*$",
                  lambda m: m.group(1) + (m.group(2) if m.group(2) in ("0m", "0s") else f"{seconds}s"),
                  rules_text)
    return re.sub(r"(?m)^(\s+keep_firing_for:\s*)(\d+[smh])\s*$",
                  lambda m: m.group(1) + f"{KEEP_SECONDS}s", text)


def prometheus_config(targets, rule_files, metric_relabel=None, external_labels=None):
    # JSON is YAML.
    scrape = {"job_name": "profwatch-e2e", "static_configs": [{"targets": targets}]}
    if metric_relabel:
        scrape["metric_relabel_configs"] = metric_relabel
    glob = {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"}
    if external_labels:
        glob["external_labels"] = external_labels
    return json.dumps({
        "global": glob,
        "rule_files": rule_files,
        "scrape_configs": [scrape],
    }, indent=2)


# ------------------------------------------------------------ checks
def one_value(api, expr):
    vals = api.values(expr)
    if len(vals) != 1:
        raise Failure(f"{expr}: want exactly one series, got {len(vals)}: {vals}")
    return next(iter(vals.values()))


def assert_close(what, got, want):
    if abs(got - want) > TOL * max(1.0, abs(want)):
        raise Failure(f"{what}: got {got!r}, want {want!r}")
    log(f"ok  {what} = {got:.6g}")


def sel(metric):
    return f'{metric}{{training_job="{JOB}",run="{RUN}"}}'


def check_recording_rules(api, exp, single_host=True):
    rec = "training_job_run:%s"
    assert_close("raw gpu steps", one_value(api, sel(rec % "profwatch_window_raw_gpu_steps:sum")), exp["gpu_steps"])
    assert_close("GPUs", one_value(api, sel(rec % "profwatch_window_gpus:sum")), exp["gpus"])
    assert_close("expected GPUs", one_value(api, sel(rec % "profwatch_window_expected_gpus:sum")), exp["gpus"])
    # The daemon exports the families that ran a kernel (issue #49: no zero series).
    fams = sorted(v for v in api.values(sel(rec % "profwatch_family_kernel_seconds:per_gpu_step")).values() if v)
    if len(fams) != len(exp["families"]) or any(abs(a - b) > TOL for a, b in zip(fams, exp["families"])):
        raise Failure(f"family seconds per GPU per step: got {fams}, want {exp['families']}")
    log(f"ok  family seconds per GPU per step = {fams}")
    launches = sorted(v for v in api.values(sel(rec % "profwatch_family_kernel_launches:per_gpu_step")).values() if v)
    if launches != [1.0] * len(exp["families"]):
        raise Failure(f"family launches per GPU per step: got {launches}, want one each")
    assert_close("total kernel", one_value(api, sel(rec % "profwatch_total_kernel_seconds:per_gpu_step")), exp["total"])
    assert_close("busy", one_value(api, sel(rec % "profwatch_gpu_busy_seconds:per_gpu_step")), exp["busy"])
    assert_close("idle", one_value(api, sel(rec % "profwatch_gpu_idle_seconds:per_gpu_step")), exp["idle"])
    assert_close("overlap", one_value(api, sel(rec % "profwatch_kernel_overlap_seconds:per_gpu_step")), exp["overlap"])
    assert_close("exposed comm", one_value(api, sel(rec % "profwatch_exposed_comm_seconds:per_gpu_step")), exp["exposed_comm"])
    assert_close("step", one_value(api, sel(rec % "profwatch_step_seconds:max")), exp["step"])
    assert_close("step - kernel", one_value(api, sel(rec % "profwatch_step_minus_kernel_seconds:per_gpu_step")), exp["gap"])
    assert_close("gap ratio", one_value(api, sel(rec % "profwatch_step_minus_kernel_ratio:per_gpu_step")), exp["ratio"])
    shares = api.values(sel(rec % "profwatch_family_kernel_seconds:share_of_total"))
    assert_close("largest family share", max(shares.values()), exp["share_max"])
    # The daemon's own gauge agrees with the rule (one host: same number).
    if single_host:
        assert_close("profwatch_step_minus_kernel_ratio (daemon)",
                     one_value(api, sel("profwatch_step_minus_kernel_ratio")), exp["ratio"])


def watch_alert_states(api, wanted, timeout, job=JOB):
    """Polls /api/v1/alerts until every (alertname, severity) in `wanted` has
    been seen pending and then firing. All alerts are watched together (they
    start pending at the same evaluation). Returns {alertname: [alerts]}."""
    seen = {key: [] for key in wanted}

    def step():
        current = {}
        for name in {n for n, _ in wanted}:
            current[name] = api.alerts(name, job)
            for a in current[name]:
                key = (name, a["labels"].get("severity"))
                if key in seen and (not seen[key] or seen[key][-1] != a["state"]):
                    seen[key].append(a["state"])
                    log(f"    {name}{{severity={key[1]}}} -> {a['state']}")
        done = all(states and states[-1] == "firing" for states in seen.values())
        return current if done else None

    alerts = wait_until(f"{sorted(seen)} to fire", step, timeout, interval=0.1)
    for key, states in seen.items():
        if "pending" in states:
            continue
        # Polling can miss a short pending phase on a loaded machine;
        # Prometheus' own ALERTS series records it.
        history = api.query(f'count_over_time(ALERTS{{alertname="{key[0]}",severity="{key[1]}",'
                            f'alertstate="pending",training_job="{job}"}}[5m])')
        if not history:
            raise Failure(f"{key[0]}{{severity={key[1]}}} never pending before firing: {states}")
        log(f"    {key[0]}{{severity={key[1]}}} was pending per the ALERTS series")
    return alerts


def check_dashboard_queries(api, repo, values, with_log):
    sys.path.insert(0, os.path.join(repo, "tests", "dashboards"))
    import promql_extract  # noqa: E402
    dashboards = promql_extract.load(sorted(
        os.path.join(repo, "dashboards", n) for n in os.listdir(os.path.join(repo, "dashboards"))
        if n.endswith(".json")))
    # The daemons run on the default flags: panels over a detail metric
    # (serve --metrics-detail) are empty, and say so (lint_dashboards.py).
    import lint_dashboards  # noqa: E402
    with open(os.path.join(repo, "exporter", "src", "expose", "metric_names.h"), encoding="utf-8") as f:
        details = lint_dashboards.detail_metrics(f.read())
    problems, n, empty = [], 0, 0
    for dash in dashboards:
        for q in promql_extract.extract(dash, values):
            n += 1
            key = (q.dashboard, q.panel_title, q.ref_id)
            try:
                result = api.query(q.expr)
            except (Failure, urllib.error.HTTPError) as e:
                problems.append(f"{q.where()}: query failed: {e}\n      {q.expr}")
                continue
            if not result and not with_log and re.search(r"profwatch_(training_|log_parse_errors)", q.expr):
                empty += 1
                log(f"    empty (allowed: no training log with --step-source config): {q.where()}")
            elif not result and any(re.search(re.escape(d) + r"\b", q.expr) for d in details):
                empty += 1
                log(f"    empty (allowed: needs serve --metrics-detail): {q.where()}")
            elif not result and key not in MAY_BE_EMPTY:
                problems.append(f"{q.where()}: no data\n      {q.expr}")
            elif not result:
                empty += 1
                log(f"    empty (allowed: {MAY_BE_EMPTY[key]}): {q.where()}")
    if problems:
        raise Failure(f"{len(problems)} of {n} dashboard queries failed:\n  " + "\n  ".join(problems))
    log(f"ok  {n - empty} of {n} dashboard queries returned data, {empty} allowed to be empty")


# ------------------------------------------------------------ main
def serve_supported(profwatch):
    try:
        proc = subprocess.run([profwatch, "serve", "--help"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return False, f"cannot run {profwatch}: {e}"
    text = proc.stdout + proc.stderr
    return proc.returncode == 0 and "--watch" in text, text


LISTEN_RE = re.compile(r"listen\w*\b.*?(?:address=)?(?:127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|localhost):(\d+)")


def start_daemon(args, helptext, tmp, procs, name, watch, extra):
    """Starts `profwatch serve` on 127.0.0.1:0; returns (Proc, "host:port")."""
    port_file = os.path.join(tmp, f"{name}.port")
    argv = [args.profwatch, "serve", "--watch", watch, "--listen", "127.0.0.1:0",
            "--state", os.path.join(tmp, f"{name}.state.json"),
            "--settle", "1s", "--poll-interval", "1s"] + extra
    if "--profile-steps" in helptext:
        argv += ["--profile-steps", str(PROFILE_STEPS)]
    if "--listen-port-file" in helptext:
        argv += ["--listen-port-file", port_file]
    daemon = Proc(name, argv)
    procs.append(daemon)

    def listening_port():
        daemon.check_alive()
        try:
            with open(port_file) as f:
                text = f.read().strip()
            if text.isdigit() and int(text) != 0:
                return int(text)
        except OSError:
            pass
        for line in daemon.output():
            m = LISTEN_RE.search(line)
            if m and int(m.group(1)) != 0:
                return int(m.group(1))
        return None
    port = wait_until(f"{name} to report its listening port", listening_port, 20)
    target = f"127.0.0.1:{port}"
    wait_until(f"{name} /metrics", lambda: urllib.request.urlopen(
        f"http://{target}/metrics", timeout=2).status == 200, 10)
    log(f"{name} serves {target}")
    return daemon, target


def start_prometheus(prometheus, repo, tmp, procs, targets, metric_relabel=None, external_labels=None):
    """Starts prometheus on a free loopback port scraping `targets` with the
    project's rules (`for:` shortened) and `external_labels` in its global
    configuration; returns (Proc, PromAPI)."""
    rules_dir = os.path.join(tmp, "rules")
    os.makedirs(rules_dir)
    rule_files = []
    for name in sorted(os.listdir(os.path.join(repo, "rules"))):
        if name.endswith((".yml", ".yaml")):
            with open(os.path.join(repo, "rules", name)) as f:
                text = shorten_for(f.read(), FOR_SECONDS)
            out = os.path.join(rules_dir, name)
            with open(out, "w") as f:
                f.write(text)
            rule_files.append(out)
    if not rule_files:
        raise Failure("no rule files in rules/")
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write(prometheus_config(targets, rule_files, metric_relabel, external_labels))
    prom_port = free_port()
    prom = Proc("prometheus", [prometheus, f"--config.file={cfg}",
                               f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                               f"--web.listen-address=127.0.0.1:{prom_port}",
                               "--log.level=warn"])
    procs.append(prom)
    api = PromAPI(f"http://127.0.0.1:{prom_port}")

    def ready():
        prom.check_alive()
        with urllib.request.urlopen(f"{api.base}/-/ready", timeout=2) as r:
            return r.status == 200
    wait_until("prometheus to be ready", ready, 30)
    want_up = {frozenset({("job", "profwatch-e2e"), ("instance", t)}): 1.0 for t in targets}
    wait_until("the profwatch targets to be up",
               lambda: api.values('up{job="profwatch-e2e"}') == want_up, 20)
    loaded = {r["name"] for g in api.get("/api/v1/rules")["groups"] for r in g["rules"]}
    for name in ("ProfwatchStepKernelGapHigh", "training_job_run:profwatch_step_minus_kernel_ratio:per_gpu_step"):
        if name not in loaded:
            raise Failure(f"Prometheus did not load rule {name}")
    log(f"prometheus on 127.0.0.1:{prom_port} scrapes {len(targets)} target(s), {len(loaded)} rules loaded")
    return prom, api


def preflight(args):
    """(helptext, prometheus path) or None after logging why the test skips."""
    ok, helptext = serve_supported(args.profwatch)
    if not ok:
        log(f"SKIP: `{args.profwatch} serve --help` does not work yet:\n{helptext.strip()[:400]}")
        return None
    prometheus = shutil.which(args.prometheus) or (args.prometheus if os.access(args.prometheus, os.X_OK) else None)
    if not prometheus:
        log(f"SKIP: prometheus not found ({args.prometheus}); apt-get install prometheus")
        return None
    return helptext, prometheus


def run(args):
    repo = os.path.abspath(args.repo)
    pre = preflight(args)
    if pre is None:
        return SKIP
    helptext, prometheus = pre

    tmp = tempfile.mkdtemp(prefix="profwatch-e2e-")
    procs = []
    try:
        jobs = os.path.join(tmp, "jobs")
        profile = os.path.join(jobs, JOB, RUN, "tensorboard", "plugins", "profile")
        os.makedirs(profile)
        log_path = os.path.join(jobs, f"{JOB}.log")
        # With --step-time the run must have no log at all: the daemon finds
        # <jobs root>/<job>.log by itself and a log outranks configuration.
        if args.step_source == "log":
            write_training_log(log_path, last_step=20)

        extra = ["--expected-gpus", str(GPUS)]
        if args.step_source == "log":
            # The daemon also finds <jobs root>/<job>.log by itself (issue 4);
            # naming it keeps this test about rules, not log discovery.
            if "JOB/RUN=FILE" in helptext:
                extra += ["--log", f"{JOB}/{RUN}={log_path}"]
            elif re.search(r"--log\b(?!-)", helptext):
                extra += ["--log", log_path]
        else:
            extra += ["--step-time", str(STEP_SECONDS)]
        daemon, target = start_daemon(args, helptext, tmp, procs, "profwatch", jobs, extra)
        prom, api = start_prometheus(prometheus, repo, tmp, procs, [target])

        # ---- window 1: positive gap
        t0 = int(time.time()) - 3600
        write_trace(os.path.join(profile, ts_dir_name(t0), f"{HOST}.trace.json.gz"), WINDOW1)
        exp1 = expected(WINDOW1)
        log(f"landed window 1 (expect gap ratio {exp1['ratio']:.4g})")
        try:
            wait_until("the recording rules to see window 1", lambda: (daemon.check_alive(), abs(one_value(
                api, sel("training_job_run:profwatch_step_minus_kernel_ratio:per_gpu_step")) - exp1["ratio"]) < TOL)[1], 60)
        except Failure as e:
            # Say which half is missing: the window, or the step time.
            hints = []
            if not api.query(sel("profwatch_window_gpus")):
                hints.append("profwatch exports no window for the run")
            if api.values(sel("profwatch_step_source_missing")).get(frozenset(
                    {("job", "profwatch-e2e"), ("instance", target), ("training_job", JOB), ("run", RUN)})) == 1.0:
                hints.append(f"profwatch reports no step-time source for the run (profwatch_step_source_missing=1; "
                             f"step source under test: {args.step_source})")
            if not api.query(sel("profwatch_step_seconds")):
                hints.append("profwatch_step_seconds is absent")
            raise Failure(f"{e}; " + ("; ".join(hints) or "no hint"))
        check_recording_rules(api, exp1)
        # The step time came from the source under test (log outranks config).
        if not api.query(f'profwatch_step_seconds{{training_job="{JOB}",run="{RUN}",source="{args.step_source}"}}'):
            raise Failure(f"profwatch_step_seconds has no source=\"{args.step_source}\" series")
        log(f"ok  step time source is {args.step_source}")
        alerts = watch_alert_states(api, [("ProfwatchStepKernelGapHigh", "warning"),
                                          ("ProfwatchStepKernelGapHigh", "critical"),
                                          ("ProfwatchFamilyDominatesWithGap", "warning"),
                                          ("ProfwatchMainStreamBlocker", "warning")], 30)
        for a in alerts["ProfwatchStepKernelGapHigh"] + alerts["ProfwatchFamilyDominatesWithGap"]:
            if a["labels"].get("run") != RUN or not a["annotations"].get("summary"):
                raise Failure(f"unexpected alert {a}")
        log(f"ok  ProfwatchStepKernelGapHigh pending -> firing: "
            f"{alerts['ProfwatchStepKernelGapHigh'][0]['annotations']['summary']}")
        # No profwatch_runbook_base_url external label here: the rules'
        # default, this daemon's /runbook (the one profwatch target that is
        # up), and the link opens there on the alert's entry.
        want_url = f"http://{target}/runbook#{RUNBOOK_GAP_ANCHOR}"
        for a in alerts["ProfwatchStepKernelGapHigh"]:
            if a["annotations"].get("runbook_url") != want_url:
                raise Failure(f"runbook_url without an operator's base: want {want_url}, "
                              f"got {a['annotations']}")
        page = urllib.request.urlopen(want_url.split("#")[0], timeout=10).read().decode()
        if f'<h3 id="{RUNBOOK_GAP_ANCHOR}">' not in page:
            raise Failure(f"{want_url}: the page has no entry with that anchor")
        log(f"ok  runbook_url {want_url} opens on the alert's entry")
        dom = alerts["ProfwatchFamilyDominatesWithGap"]
        if len(dom) != 1:
            raise Failure(f"want one dominating family, got {[a['labels'] for a in dom]}")
        log(f"ok  ProfwatchFamilyDominatesWithGap pending -> firing: {dom[0]['annotations']['summary']}")

        # ---- every dashboard query against this Prometheus
        check_dashboard_queries(api, repo, {"training_job": JOB, "run": RUN, "instance": target,
                                            "datasource": "prometheus"},
                                with_log=args.step_source == "log")

        # ---- window 2: healthy (negative gap)
        write_trace(os.path.join(profile, ts_dir_name(t0 + 600), f"{HOST}.trace.json.gz"), WINDOW2)
        exp2 = expected(WINDOW2)
        log(f"landed window 2 (expect gap ratio {exp2['ratio']:.4g})")
        wait_until("the recording rules to see window 2", lambda: (daemon.check_alive(), abs(one_value(
            api, sel("training_job_run:profwatch_step_minus_kernel_ratio:per_gpu_step")) - exp2["ratio"]) < TOL)[1], 60)
        check_recording_rules(api, exp2)
        # The exported window is a value, not a label (issue #49): one series.
        starts = api.values(sel("profwatch_window_start_timestamp_seconds"))
        want_start = calendar.timegm(time.strptime(ts_dir_name(t0 + 600), "%Y_%m_%d_%H_%M_%S"))
        if sorted(starts.values()) != [want_start]:
            raise Failure(f"profwatch_window_start_timestamp_seconds is {starts}, "
                          f"want only window 2 ({want_start})")
        wait_until("the gap alerts to resolve", lambda: not api.alerts("ProfwatchStepKernelGapHigh")
                   and not api.alerts("ProfwatchFamilyDominatesWithGap")
                   and not api.alerts("ProfwatchMainStreamBlocker"), 20)
        log("ok  gap alerts resolved after the healthy window")

        # ---- a corrupt trace in another run: the error counter and its alert
        bad = os.path.join(jobs, JOB, "run2", "tensorboard", "plugins", "profile",
                           ts_dir_name(t0 + 1200), f"{HOST}.trace.json.gz")
        os.makedirs(os.path.dirname(bad))
        with open(bad, "wb") as f:
            f.write(b"\x1f\x8b\x08\x00 this is not a gzip stream " * 64)
        log("landed a corrupt trace in run2")

        def errors_alert():
            daemon.check_alive()
            return [a for a in api.get("/api/v1/alerts")["alerts"]
                    if a["labels"].get("alertname") == "ProfwatchWindowErrors"
                    and a["labels"].get("instance") == target and a["state"] == "firing"]
        err_alerts = wait_until("ProfwatchWindowErrors to fire", errors_alert, 60)
        log(f"ok  ProfwatchWindowErrors firing: {err_alerts[0]['annotations']['summary']}")
        # run1's numbers are untouched by run2's failure
        assert_close("gap ratio of run1 after run2's error", one_value(
            api, sel("training_job_run:profwatch_step_minus_kernel_ratio:per_gpu_step")), exp2["ratio"])

        daemon.check_alive()
        prom.check_alive()
        log("PASS")
        return 0
    except Failure as e:
        return report_failure(e, procs)
    finally:
        clean_up(procs, tmp, args.keep)


# Multi-host: two sidecars on one shared job dir, each analysing only its
# host's file (--host-filter), hosts with different GPU counts.
HOSTS = {"hosta": (2, WINDOW1),
         # 1 GPU: gemm 0.7 s then nccl 0.1 s per step
         "hostb": (1, [(GEMM, 16, 0.0, 0.7), (NCCL, 16, 0.7, 0.1)])}


def run_multihost(args):
    """The recording rules combine two real sidecars into one per-GPU-per-step
    figure per run, different from the mean of the hosts' own figures."""
    repo = os.path.abspath(args.repo)
    pre = preflight(args)
    if pre is None:
        return SKIP
    helptext, prometheus = pre
    if "--host-filter" not in helptext:
        log("SKIP: `profwatch serve` has no --host-filter")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="profwatch-e2e-mh-")
    procs = []
    try:
        jobs = os.path.join(tmp, "jobs")
        profile = os.path.join(jobs, JOB, RUN, "tensorboard", "plugins", "profile")
        os.makedirs(profile)
        targets = []
        for host, (gpus, _) in HOSTS.items():
            _, target = start_daemon(args, helptext, tmp, procs, f"profwatch-{host}", jobs,
                                     ["--host-filter", host, "--expected-gpus", str(gpus),
                                      "--step-time", str(STEP_SECONDS)])
            targets.append(target)
        _, api = start_prometheus(prometheus, repo, tmp, procs, targets)

        ts = ts_dir_name(int(time.time()) - 3600)
        for host, (gpus, kernels) in HOSTS.items():
            write_trace(os.path.join(profile, ts, f"{host}.trace.json.gz"), kernels, gpus=gpus)
        exp = combine([host_raw(g, k) for g, k in HOSTS.values()])
        log(f"landed one window on {len(HOSTS)} hosts (expect total kernel {exp['total']:.6g} s per GPU per step)")
        wait_until("the recording rules to combine both sidecars", lambda: (
            one_value(api, sel("training_job_run:profwatch_window_gpus:sum")) == exp["gpus"]
            and abs(one_value(api, sel("training_job_run:profwatch_total_kernel_seconds:per_gpu_step"))
                    - exp["total"]) < TOL), 60)
        per_host = api.values(sel("profwatch_total_kernel_seconds"))
        if len(per_host) != len(HOSTS):
            raise Failure(f"want one profwatch_total_kernel_seconds per sidecar, got {per_host}")
        naive = sum(per_host.values()) / len(per_host)
        log(f"    per-host totals {sorted(per_host.values())}, their mean {naive:.6g}")
        if abs(naive - exp["total"]) < 1e-3:
            raise Failure("scenario does not tell the raw-sum combination from a mean")
        check_recording_rules(api, exp, single_host=False)
        log("PASS")
        return 0
    except Failure as e:
        return report_failure(e, procs)
    finally:
        clean_up(procs, tmp, args.keep)


# The real H200 runs (../shared/fixtures/real/h200, see its README): a
# healthy JAX window (GPU ~94% busy) and a PyTorch window whose host sleeps
# 20 ms before every step. Copied (fresh modification times: the runs are
# live) with their training logs.
H200_RUNS = {
    "healthy": ("4242-llama-h200", "base", "tensorboard/plugins/profile/2026_11_26_00_29_00",
                ["vm.trace.json.gz", "vm.xplane.pb"]),
    "stalled": ("4343-gpt-h200-torch", "stall20", "profiler",
                ["vm_1481.1795652969892807939.pt.trace.json.gz"]),
}


def run_h200(args):
    """Nothing alerts on the healthy real run; the host-stalled one gets the
    gap alert, pointing at a host stall, and no blocker or family alert."""
    repo = os.path.abspath(args.repo)
    pre = preflight(args)
    if pre is None:
        return SKIP
    helptext, prometheus = pre
    shared = os.path.join(repo, "..", "shared", "fixtures", "real", "h200", "jobs")
    if not os.path.isdir(shared):
        log(f"SKIP: shared fixtures absent ({shared})")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="profwatch-e2e-h200-")
    procs = []
    try:
        jobs = os.path.join(tmp, "jobs")
        for job, run, sub, files in H200_RUNS.values():
            os.makedirs(os.path.join(jobs, job, run, sub))
            for name in files:
                shutil.copy(os.path.join(shared, job, run, sub, name), os.path.join(jobs, job, run, sub))
            shutil.copy(os.path.join(shared, job, run, "log.txt"), os.path.join(jobs, job, run))
        daemon, target = start_daemon(args, helptext, tmp, procs, "profwatch", jobs, [])
        # The operator's runbook base (with a trailing slash, which the
        # template drops) as prometheus.yml documents it.
        prom, api = start_prometheus(prometheus, repo, tmp, procs, [target],
                                     external_labels={"profwatch_runbook_base_url": RUNBOOK_OPERATOR + "/"})
        healthy, stalled = H200_RUNS["healthy"][0], H200_RUNS["stalled"][0]

        def ratio(job):
            v = api.values(f'training_job_run:profwatch_step_minus_kernel_ratio:per_gpu_step{{training_job="{job}"}}')
            return next(iter(v.values())) if v else None
        wait_until("both runs' gap ratios in Prometheus",
                   lambda: (daemon.check_alive(), ratio(healthy) is not None and ratio(stalled) is not None)[1], 90)
        log(f"    gap ratio: healthy {ratio(healthy):.4f}, stalled {ratio(stalled):.4f}")
        stall = api.values(f'profwatch_host_stall_seconds{{training_job="{stalled}"}}')
        # Two ~21 ms boundary gaps over the window's 3 steps.
        if not stall or not 0.013 < next(iter(stall.values())) < 0.015:
            raise Failure(f"host stall of the stalled run: want ~0.014 s per step, got {stall}")
        alerts = watch_alert_states(api, [("ProfwatchStepKernelGapHigh", "warning")], 60, job=stalled)
        gap = alerts["ProfwatchStepKernelGapHigh"]
        if [a["labels"]["training_job"] for a in gap] != [stalled]:
            raise Failure(f"want the gap alert for {stalled} only, got {[a['labels'] for a in gap]}")
        if "host or input stall" not in gap[0]["annotations"]["description"]:
            raise Failure(f"the gap alert does not point at a host stall: {gap[0]['annotations']}")
        # The figures the annotation queries at alert time, as `analyze`
        # prints them for this window (0.013976 s, 17.3% of the 0.081 s step
        # from the training log), and the runbook as a link.
        for want in ("Host stall before each step's first kernel: 13.98ms per step, 17.25% of the step",
                     "Step time 81ms (step-time source log)", "(warning above 15%; worst host "):
            if want not in gap[0]["annotations"]["description"]:
                raise Failure(f"the gap alert's description lacks {want!r}: {gap[0]['annotations']}")
        if gap[0]["annotations"]["runbook_url"] != RUNBOOK_OPERATOR + RUNBOOK_GAP_PAGE:
            raise Failure(f"runbook_url is not under the operator's base {RUNBOOK_OPERATOR}: "
                          f"{gap[0]['annotations']['runbook_url']}")
        log(f"ok  {stalled}: {gap[0]['annotations']['summary']}")
        # A false alarm on a real run would be pending or firing by the time
        # the gap alert has been active for 3 * `for:` (every rule is
        # evaluated each second over both runs' series).
        def others():
            return [a["labels"] for a in api.get("/api/v1/alerts")["alerts"]
                    if a["labels"].get("alertname") != "ProfwatchStepKernelGapHigh"
                    or a["labels"].get("training_job") != stalled]

        def gap_active_for():
            daemon.check_alive()
            for a in api.get("/api/v1/alerts")["alerts"]:
                if a["labels"].get("alertname") == "ProfwatchStepKernelGapHigh":
                    # RFC 3339 with up to 9 fraction digits: keep whole seconds.
                    active = re.sub(r"\.\d+", "", a["activeAt"]).replace("Z", "+00:00")
                    return time.time() - datetime.datetime.fromisoformat(active).timestamp()
            return 0
        wait_until(f"the gap alert to be active for {3 * FOR_SECONDS} s",
                   lambda: gap_active_for() >= 3 * FOR_SECONDS or others(), 60)
        if others():
            raise Failure(f"alerts on real runs beyond the stalled run's gap alert: {others()}")
        log(f"ok  nothing else fires or is pending (healthy {healthy}: no alert at all)")
        daemon.check_alive()
        prom.check_alive()
        log("PASS")
        return 0
    except Failure as e:
        return report_failure(e, procs)
    finally:
        clean_up(procs, tmp, args.keep)


# Sharding (issue 31): jobs of 1 or 2 GPUs with WINDOW1 or WINDOW2 kernels.
SHARD_JOBS = {f"shardjob-{i:02d}": (1 + i % 2, WINDOW1 if i % 3 else WINDOW2) for i in range(9)}
SHARDS = 3
# docs/sharding.md's check of which shard owns a job: Prometheus' own hashmod
# of training_job, next to the shard label of profwatch_shard_info.
OWNER_RELABEL = [{"source_labels": ["training_job"], "regex": "(.+)", "modulus": SHARDS,
                  "target_label": "owner_shard", "action": "hashmod"}]
# Series exported by a shard other than their job's hashmod owner.
WRONG_SHARD = ('profwatch_window_gpus unless on (instance, owner_shard) '
               'label_replace(profwatch_shard_info, "owner_shard", "$1", "shard", "(.*)")')


def recorded_series(api):
    """{(record name, labels): value} of every recording rule's series."""
    names = sorted({r["name"] for g in api.get("/api/v1/rules")["groups"] for r in g["rules"]
                    if r.get("type") == "recording"})
    out = {}
    for name in names:
        for labels, value in api.values(name).items():
            out[(name, labels)] = value
    return names, out


def run_shards(args):
    """Three shards scraped by one Prometheus give the same recording-rule
    series as one daemon over the whole root scraped by another."""
    repo = os.path.abspath(args.repo)
    pre = preflight(args)
    if pre is None:
        return SKIP
    helptext, prometheus = pre
    if "--shard" not in helptext:
        log("SKIP: `profwatch serve` has no --shard")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="profwatch-e2e-shards-")
    procs = []
    try:
        jobs = os.path.join(tmp, "jobs")
        ts = ts_dir_name(int(time.time()) - 3600)
        for job, (gpus, kernels) in SHARD_JOBS.items():
            profile = os.path.join(jobs, job, RUN, "tensorboard", "plugins", "profile")
            write_trace(os.path.join(profile, ts, f"{HOST}.trace.json.gz"), kernels, gpus=gpus)
        common = ["--expected-gpus", "0", "--step-time", str(STEP_SECONDS)]
        shard_targets = []
        for i in range(SHARDS):
            _, target = start_daemon(args, helptext, tmp, procs, f"profwatch-{i}", jobs,
                                     common + ["--shard", f"profwatch-{i}/{SHARDS}"])
            shard_targets.append(target)
        _, whole_target = start_daemon(args, helptext, tmp, procs, "profwatch-all", jobs, common)
        os.makedirs(os.path.join(tmp, "prom-shards"))
        os.makedirs(os.path.join(tmp, "prom-all"))
        _, sharded = start_prometheus(prometheus, repo, os.path.join(tmp, "prom-shards"), procs,
                                      shard_targets, OWNER_RELABEL)
        _, whole = start_prometheus(prometheus, repo, os.path.join(tmp, "prom-all"), procs,
                                    [whole_target])
        want_jobs = set(SHARD_JOBS)

        def exported_once(api):
            per_job = api.values("count by (training_job) (profwatch_window_gpus)")
            return {dict(k)["training_job"]: v for k, v in per_job.items()}
        wait_until("every job in both Prometheus servers", lambda: (
            exported_once(sharded) == {j: 1.0 for j in want_jobs}
            and exported_once(whole) == {j: 1.0 for j in want_jobs}), 90)
        info = sharded.values("profwatch_shard_info")
        shards = sorted((dict(k)["shard"], dict(k)["shards"]) for k in info)
        if shards != [(str(i), str(SHARDS)) for i in range(SHARDS)]:
            raise Failure(f"profwatch_shard_info of the shards: {shards}")
        # Each job on one shard only: the instance that exports it is the one
        # whose profwatch_shard_info says so (hashmod checked by the unit
        # tests); every shard exports at least one job here.
        by_instance = sharded.values("count by (instance) (profwatch_window_gpus)")
        if len(by_instance) != SHARDS or sum(by_instance.values()) != len(want_jobs):
            raise Failure(f"jobs per shard: {by_instance}")
        log(f"ok  {len(want_jobs)} jobs, each exported once, over {SHARDS} shards: "
            f"{sorted(by_instance.values())}")
        owners = sharded.values('count by (owner_shard) (profwatch_window_gpus)')
        if sum(owners.values()) != len(want_jobs) or sharded.query(WRONG_SHARD):
            raise Failure(f"a job on another shard than Prometheus' hashmod says: "
                          f"{sharded.query(WRONG_SHARD)}")
        log("ok  every job is on the shard Prometheus' hashmod relabel names")

        def tol(key):
            # Ages (time() - a timestamp) are as of each server's own rule
            # evaluation, which the two servers run at different moments
            # (1 s interval): equal within a few evaluations.
            return 5.0 if "age_seconds" in key[0] else TOL * max(1.0, abs(whole_series[key]))

        whole_series = {}

        def same():
            names, a = recorded_series(sharded)
            _, b = recorded_series(whole)
            whole_series.clear()
            whole_series.update(b)
            if set(a) != set(b) or not a:
                return None
            if any(abs(a[k] - b[k]) > tol(k) for k in a):
                return None
            return names, a
        try:
            names, series = wait_until("the recording rules to agree", same, 60)
        except Failure:
            names, a = recorded_series(sharded)
            _, b = recorded_series(whole)
            diff = sorted(set(a) ^ set(b))[:10]
            whole_series.clear()
            whole_series.update(b)
            unequal = [(k, a[k], b[k]) for k in set(a) & set(b) if abs(a[k] - b[k]) > tol(k)][:10]
            raise Failure(f"recording rules differ: only on one side {diff}; unequal {unequal}")
        jobs_seen = {dict(k[1]).get("training_job") for k in series}
        if not want_jobs <= jobs_seen:
            raise Failure(f"recorded series miss jobs: {sorted(want_jobs - jobs_seen)}")
        log(f"ok  {len(series)} series of {len(names)} recording rules identical, sharded or not")

        def job_alerts(api):
            """The per-job ALERTS series (those with a training_job), without
            the labels of where they were scraped (instance, the shards'
            owner_shard): one daemon's alerts about the daemon itself differ
            from three shards' by design."""
            out = set()
            for labels in api.values("ALERTS"):
                d = dict(labels)
                if "training_job" not in d:
                    continue
                for k in ("instance", "owner_shard"):
                    d.pop(k, None)
                out.add(frozenset(d.items()))
            return out

        def alerts_agree():
            a, b = job_alerts(sharded), job_alerts(whole)
            return (a,) if a == b else None
        try:
            (alerts,) = wait_until("the per-job alerts to agree", alerts_agree, 60)
        except Failure:
            a, b = job_alerts(sharded), job_alerts(whole)
            raise Failure(f"per-job ALERTS differ: only sharded {sorted(map(sorted, a - b))[:5]}; "
                          f"only whole {sorted(map(sorted, b - a))[:5]}")
        kinds = sorted({(dict(k)["alertname"], dict(k)["alertstate"]) for k in alerts})
        log(f"ok  {len(alerts)} per-job ALERTS series identical, sharded or not: {kinds}")
        log("PASS")
        return 0
    except Failure as e:
        return report_failure(e, procs)
    finally:
        clean_up(procs, tmp, args.keep)


def report_failure(e, procs):
    """Logs a scenario failure with each process's output tail; exit code 1."""
    log(f"FAIL: {e}")
    for p in procs:
        print(p.tail(), flush=True)
    return 1


def run_restart(args):
    """--runs runs whose gap alerts fire; the daemon is stopped and started
    again on its --state and the same port while Prometheus scrapes it every
    second: no alert that fired before leaves the firing state, and each
    keeps its activeAt (the daemon holds /metrics until its runs are
    restored; the rules' keep_firing_for rides over the scrapes lost while
    it is down)."""
    repo = os.path.abspath(args.repo)
    pre = preflight(args)
    if pre is None:
        return SKIP
    helptext, prometheus = pre
    tmp = tempfile.mkdtemp(prefix="profwatch-e2e-restart-")
    procs = []
    try:
        jobs = os.path.join(tmp, "jobs")
        ts = ts_dir_name(int(time.time()) - 3600)
        first = None
        for i in range(args.runs):
            path = os.path.join(jobs, f"{JOB}{i:04d}", RUN, "tensorboard", "plugins", "profile", ts,
                                f"{HOST}.trace.json.gz")
            if first is None:
                write_trace(path, WINDOW1)
                first = path
            else:
                os.makedirs(os.path.dirname(path))
                os.link(first, path)
        port = free_port()
        argv = [args.profwatch, "serve", "--watch", jobs, "--listen", f"127.0.0.1:{port}",
                "--state", os.path.join(tmp, "state.json"), "--settle", "1s", "--poll-interval", "1s",
                "--step-time", str(STEP_SECONDS), "--expected-gpus", str(GPUS),
                "--profile-steps", str(PROFILE_STEPS)]
        target = f"127.0.0.1:{port}"
        daemon = Proc("profwatch", argv)
        procs.append(daemon)
        wait_until("profwatch /metrics", lambda: (daemon.check_alive(), urllib.request.urlopen(
            f"http://{target}/metrics", timeout=5).status == 200)[1], 30)
        prom, api = start_prometheus(prometheus, repo, tmp, procs, [target])

        def firing():
            return {(a["labels"]["training_job"], a["labels"]["severity"]): a["activeAt"]
                    for a in api.get("/api/v1/alerts")["alerts"]
                    if a["labels"].get("alertname") == "ProfwatchStepKernelGapHigh"
                    and a["state"] == "firing"}
        want = 2 * args.runs  # warning and critical per run
        before = wait_until(f"{want} gap alerts to fire", lambda: (
            daemon.check_alive(), (lambda f: f if len(f) == want else None)(firing()))[1],
            120 + args.runs)
        log(f"{len(before)} gap alerts firing; restarting profwatch")

        restarted_at = time.time()
        daemon.stop()
        daemon = Proc("profwatch-again", argv)
        procs.append(daemon)
        polls = 0

        def settled():
            # Firing throughout: every poll holds every alert of before,
            # firing, active since the same instant.
            nonlocal polls
            daemon.check_alive()
            now = firing()
            polls += 1
            lost = {k: v for k, v in before.items() if now.get(k) != v}
            if lost:
                raise Failure(f"{len(lost)} alert(s) left firing or changed activeAt across the restart, "
                              f"e.g. {sorted(lost.items())[:3]}; firing now: {len(now)}")
            # Until Prometheus has scraped the new daemon 3 times and
            # evaluated the rules on it.
            up = api.query(f'up{{instance="{target}"}}')
            last = api.query(f'timestamp(up{{instance="{target}"}})')
            return bool(up) and up[0]["value"][1] == "1" and bool(last) and \
                float(last[0]["value"][1]) > restarted_at + 3
        wait_until("three scrapes of the restarted daemon with every alert firing", settled, 120,
                   interval=0.2)
        # Two more evaluations of every rule group after the scrapes, still
        # firing (counted by the groups' lastEvaluation, not by the clock).
        def evaluations():
            return {g["name"]: g.get("lastEvaluation", "")
                    for g in api.get("/api/v1/rules")["groups"]}
        last_seen, evaluated = evaluations(), {}

        def two_more_evaluations():
            settled()
            for group, at in evaluations().items():
                if at != last_seen.get(group):
                    last_seen[group] = at
                    evaluated[group] = evaluated.get(group, 0) + 1
            return len(evaluated) == len(last_seen) and min(evaluated.values()) >= 2
        wait_until("two more evaluations of every rule group, every alert still firing",
                   two_more_evaluations, 60, interval=0.2)
        missed = api.query(f'count_over_time((up{{instance="{target}"}} == 0)[5m:1s])')
        log(f"PASS restart: {len(before)} alerts of {args.runs} runs stayed firing over the restart "
            f"({polls} polls; scrapes failed while down: {missed[0]['value'][1] if missed else 0})")
        return 0
    except Failure as e:
        return report_failure(e, procs)
    finally:
        clean_up(procs, tmp, args.keep)


def clean_up(procs, tmp, keep):
    """Stops every process (last started first) and removes the temp dir."""
    for p in reversed(procs):
        p.stop()
    if keep:
        log(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profwatch", required=True)
    ap.add_argument("--prometheus", default="prometheus")
    ap.add_argument("--repo", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    ap.add_argument("--keep", action="store_true", help="keep the temp dir for debugging")
    ap.add_argument("--scenario", choices=("single", "multihost", "h200", "shards", "restart"),
                    default="single",
                    help="single: one sidecar, alerts, dashboards (default); "
                         "multihost: two sidecars combined by the recording rules; "
                         "h200: the real H200 runs, healthy and host-stalled; "
                         "shards: three --shard daemons against one over the whole root; "
                         "restart: firing alerts stay firing across a restart on --state")
    ap.add_argument("--runs", type=int, default=30, help="restart: runs whose alerts fire")
    ap.add_argument("--step-source", choices=("log", "config"), default="log",
                    help="step time from the training log (default) or --step-time")
    ap.add_argument("--deadline", type=int, default=240, help="seconds for the whole test")
    args = ap.parse_args()
    # A hard stop for the whole test, whatever hangs.
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(
        Failure(f"overall deadline ({args.deadline} s) hit")))
    signal.alarm(args.deadline)
    try:
        return {"multihost": run_multihost, "h200": run_h200, "shards": run_shards,
                "restart": run_restart}.get(args.scenario, run)(args)
    finally:
        signal.alarm(0)


if __name__ == "__main__":
    sys.exit(main())
