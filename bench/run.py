#!/usr/bin/env python3
"""profwatch benchmark harness (issue #6). Python stdlib only.

Measures, in ONE run on the SAME generated files, side by side:
  floor      inflate-only time with the same zlib backend (stage_bench inflate)
  gzip -dc   the system gzip for reference
  parse      inflate + parse, no aggregation (stage_bench parse)
  analyze    `profwatch analyze --format json` wall time and peak RSS
  isal       the same with --inflate isal (when built with ISA-L)
  python     the reference approach users run today: gzip + json.load
and prints ratios (analyze / floor, python / analyze) and MB/s of decompressed
JSON; each timing is the median of --repeat runs. Also: a window of 8 files
with 1 vs 2 threads, an optional >4 GiB trace under a memory limit (--huge),
and the daemon's idle CPU while polling 1,000 job dirs (--idle-seconds).

Example:  python3 bench/run.py --build build --sizes 100000,1000000,10000000
It is a benchmark, not a test: nothing here asserts timings.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def run_measured(cmd, stdout=subprocess.DEVNULL, limit_as=None):
    """Runs cmd; returns (wall seconds, peak RSS bytes, exit code, stdout)."""
    def preexec():
        if limit_as:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    out_f = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=subprocess.PIPE, preexec_fn=preexec)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    out_f.seek(0)
    out = out_f.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        sys.stderr.write(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{err[-2000:]}\n")
    return wall, usage.ru_maxrss * 1024, proc.returncode, out


def median_of(cmd, repeat, **kw):
    walls, rss, out = [], 0, ""
    for _ in range(repeat):
        w, r, code, out = run_measured(cmd, **kw)
        if code not in (0, 1):
            return None, None, out
        walls.append(w)
        rss = max(rss, r)
    return statistics.median(walls), rss, out


def generate(tracegen, path, events, vendor="amd", gpus=8, seed=7, plain=False):
    if os.path.exists(path):
        return
    cmd = [tracegen, "file", "--out", path, "--events", str(events), "--gpus", str(gpus),
           "--vendor", vendor, "--seed", str(seed), "--streams", "3"]
    if plain:
        cmd.append("--plain")
    subprocess.run(cmd, check=True)


def mb(n):
    return n / 1e6


def single_file(args, bins, work, results):
    rows = []
    for size in args.sizes:
        path = os.path.join(work, f"amd_{size}.trace.json.gz")
        generate(bins["tracegen"], path, size)
        floor_s, _, out = median_of([bins["stage"], "inflate", path], args.repeat)
        json_bytes = json.loads(out)["json_bytes"]
        gzip_s, _, _ = median_of(["gzip", "-dc", path], args.repeat)
        parse_s, _, _ = median_of([bins["stage"], "parse", path], args.repeat)
        an_s, an_rss, _ = median_of([bins["profwatch"], "analyze", "--format", "json",
                                     "--threads", "1", path], args.repeat)
        row = {"events": size, "gz_bytes": os.path.getsize(path), "json_bytes": json_bytes,
               "floor_zlib_s": floor_s, "gzip_dc_s": gzip_s, "parse_s": parse_s,
               "analyze_s": an_s, "analyze_rss": an_rss}
        if bins["isal"]:
            row["floor_isal_s"], _, _ = median_of(
                [bins["stage"], "inflate", "--inflate", "isal", path], args.repeat)
            row["analyze_isal_s"], row["analyze_isal_rss"], _ = median_of(
                [bins["profwatch"], "analyze", "--format", "json", "--threads", "1",
                 "--inflate", "isal", path], args.repeat)
        if size <= args.python_max_events:
            py = [sys.executable, "-c",
                  "import gzip,json,sys; json.load(gzip.open(sys.argv[1]))", path]
            row["python_s"], row["python_rss"], _ = median_of(py, max(1, min(args.repeat, 3)))
        rows.append(row)
    results["single_file"] = rows
    print("\n## Single file (JAX GPU format, AMD mix, 8 GPUs, 3 streams)")
    print("| events | JSON MB | floor zlib s | analyze s | analyze/floor | MB/s | peak RSS MB"
          " | parse-only s | python s | python/analyze | python RSS MB | isal floor s | analyze isal s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        py = r.get("python_s")
        py_s = f"{py:.2f}" if py else "skipped"
        py_ratio = f"{py / r['analyze_s']:.1f}" if py else "-"
        py_rss = f"{mb(r['python_rss']):.0f}" if py else "-"
        print(f"| {r['events']:,} | {mb(r['json_bytes']):.0f} | {r['floor_zlib_s']:.3f} |"
              f" {r['analyze_s']:.3f} | {r['analyze_s'] / r['floor_zlib_s']:.2f} |"
              f" {mb(r['json_bytes']) / r['analyze_s']:.0f} | {mb(r['analyze_rss']):.0f} |"
              f" {r['parse_s']:.3f} | {py_s} | {py_ratio} | {py_rss} |"
              f" {r.get('floor_isal_s', float('nan')):.3f} | {r.get('analyze_isal_s', float('nan')):.3f} |")


def multi_file(args, bins, work, results):
    files = []
    for i in range(8):
        p = os.path.join(work, f"win8_{args.multi_events}.proc{i}.trace.json.gz")
        generate(bins["tracegen"], p, args.multi_events, gpus=1, seed=100 + i)
        files.append(p)
    t1, rss1, _ = median_of([bins["profwatch"], "analyze", "--format", "json", "--threads", "1"] + files,
                            args.repeat)
    t2, rss2, _ = median_of([bins["profwatch"], "analyze", "--format", "json", "--threads", "2"] + files,
                            args.repeat)
    results["multi_file"] = {"files": 8, "events_per_file": args.multi_events, "threads1_s": t1,
                             "threads2_s": t2, "speedup": t1 / t2, "rss1": rss1, "rss2": rss2}
    print("\n## Window of 8 files (1-GPU/proc)")
    print(f"1 thread {t1:.3f} s, 2 threads {t2:.3f} s: speed-up {t1 / t2:.2f}x "
          f"(peak RSS {mb(rss1):.0f} / {mb(rss2):.0f} MB)")


def huge(args, bins, work, results):
    path = os.path.join(work, f"huge_{args.huge_events}.trace.json.gz")
    generate(bins["tracegen"], path, args.huge_events)
    floor_s, _, out = median_of([bins["stage"], "inflate", path], 1)
    json_bytes = json.loads(out)["json_bytes"]
    wall, rss, code, out = run_measured([bins["profwatch"], "analyze", "--format", "json",
                                         "--threads", "1", path])
    ok = code == 0
    results["huge"] = {"events": args.huge_events, "json_bytes": json_bytes, "floor_s": floor_s,
                       "analyze_s": wall, "analyze_rss": rss, "exit": code}
    print("\n## > 4 GiB trace")
    print(f"{args.huge_events:,} events, {json_bytes / 2**30:.2f} GiB JSON: analyze {wall:.1f} s "
          f"({wall / floor_s:.2f}x the inflate floor), peak RSS {mb(rss):.0f} MB, exit {code}"
          f"{'' if ok else ' (FAILED)'}")


def idle(args, bins, work, results):
    root = os.path.join(work, "idle_jobs")
    if not os.path.exists(root):
        tiny = os.path.join(work, "tiny.trace.json.gz")
        generate(bins["tracegen"], tiny, 50, gpus=1)
        for j in range(args.idle_jobs):
            d = os.path.join(root, f"job{j:04d}", "run", "tensorboard", "plugins", "profile",
                             "2025_01_15_10_00_00")
            os.makedirs(d)
            shutil.copy(tiny, os.path.join(d, "host0.trace.json.gz"))
    port_file = os.path.join(work, "idle.port")
    proc = subprocess.Popen([bins["profwatch"], "serve", "--watch", root, "--no-inotify",
                             "--listen", "127.0.0.1:0", "--settle", "1s", "--log-level", "warn"],
                            stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + 60
        while time.time() < deadline and port is None:
            line = proc.stderr.readline()
            m = re.search(r"listening address=[\d.]+:(\d+)", line or "")
            if m:
                port = int(m.group(1))
        analysed = 0
        deadline = time.time() + 600
        while time.time() < deadline:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
                m = re.search(r"^profwatch_windows_analyzed_total (\S+)", text, re.M)
                analysed = float(m.group(1)) if m else 0
            except Exception:
                pass
            if analysed >= args.idle_jobs:
                break
            time.sleep(1)

        def cpu():
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        c0, t0 = cpu(), time.time()
        time.sleep(args.idle_seconds)
        c1, t1 = cpu(), time.time()
        share = (c1 - c0) / (t1 - t0)
        results["idle"] = {"jobs": args.idle_jobs, "windows_analysed": analysed,
                           "seconds": t1 - t0, "cpu_seconds": c1 - c0, "core_share": share}
        print(f"\n## Idle daemon, {args.idle_jobs} job dirs, polling every 15 s")
        print(f"{analysed:.0f} windows analysed at start; then {c1 - c0:.2f} CPU s over "
              f"{t1 - t0:.0f} s idle = {share * 100:.2f}% of one core")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "profwatch-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--python-max-events", type=int, default=1000000)
    ap.add_argument("--multi-events", type=int, default=1000000)
    ap.add_argument("--huge", action="store_true", help="also a > 4 GiB trace (minutes, disk)")
    ap.add_argument("--huge-events", type=int, default=20000000)
    ap.add_argument("--idle-seconds", type=float, default=0, help="0 skips the idle measurement")
    ap.add_argument("--idle-jobs", type=int, default=1000)
    ap.add_argument("--skip", default="", help="comma list of: single,multi")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    args.sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    os.makedirs(args.work, exist_ok=True)
    b = args.build
    bins = {"profwatch": os.path.join(b, "exporter", "profwatch"),
            "tracegen": os.path.join(b, "tools", "tracegen", "profwatch-tracegen"),
            "stage": os.path.join(b, "bench", "stage_bench")}
    for k, p in bins.items():
        if not os.access(p, os.X_OK):
            sys.exit(f"missing {k} binary at {p}: cmake --build {b} --target profwatch profwatch-tracegen stage_bench")
    bins["isal"] = subprocess.run([bins["stage"], "inflate", "--inflate", "isal", "/dev/null"],
                                  capture_output=True).returncode != 2
    results = {"machine": {"cpus": os.cpu_count()}, "repeat": args.repeat}
    skip = set(args.skip.split(","))
    print(f"# profwatch benchmark ({os.cpu_count()} CPUs, median of {args.repeat})")
    if "single" not in skip:
        single_file(args, bins, args.work, results)
    if "multi" not in skip:
        multi_file(args, bins, args.work, results)
    if args.huge:
        huge(args, bins, args.work, results)
    if args.idle_seconds > 0:
        idle(args, bins, args.work, results)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
