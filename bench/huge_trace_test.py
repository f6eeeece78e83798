#!/usr/bin/env python3
"""Opt-in test (issue #6): a trace of more than 4 GiB of decompressed JSON is
analysed exactly, in bounded memory.

Generates one JAX trace with profwatch-tracegen (gzip level 1, 2e7 events by
default, ~4.7 GB of JSON), runs `profwatch analyze` under an address-space
limit (RLIMIT_AS, as `prlimit --as=` would) and checks:
  - exit 0, json_bytes > 4 GiB, no file error;
  - every device equals the tracegen manifest exactly (launches; summed,
    busy and span time to the picosecond);
  - peak RSS (ru_maxrss of the child) < --max-rss-mb (128).
Skipped (exit 77) unless PROFWATCH_HUGE_TEST=1: it takes minutes and ~0.5 GB
of disk in $TMPDIR. Python stdlib only.

  PROFWATCH_HUGE_TEST=1 ctest --test-dir BUILD -L huge --output-on-failure
  PROFWATCH_HUGE_TEST=1 python3 bench/huge_trace_test.py --build BUILD
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SKIP = 77


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--events", type=int, default=20_000_000)
    ap.add_argument("--as-limit-mb", type=int, default=1024,
                    help="address-space limit for analyze (virtual, > RSS: thread stacks, arenas)")
    ap.add_argument("--max-rss-mb", type=int, default=128)
    ap.add_argument("--work", default=None, help="keep the generated file here (reused if present)")
    ap.add_argument("--inflate", default="zlib")
    args = ap.parse_args()
    if os.environ.get("PROFWATCH_HUGE_TEST") != "1":
        print("skipped: set PROFWATCH_HUGE_TEST=1 to run the >4 GiB trace test (minutes, ~0.5 GB disk)")
        return SKIP
    tracegen = os.path.join(args.build, "tools", "tracegen", "profwatch-tracegen")
    profwatch = os.path.join(args.build, "exporter", "profwatch")
    tmp = None
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        work = args.work
    else:
        tmp = tempfile.TemporaryDirectory(prefix="profwatch-huge-")
        work = tmp.name
    trace = os.path.join(work, f"huge_{args.events}.trace.json.gz")
    manifest_path = trace + ".manifest.json"
    if not (os.path.exists(trace) and os.path.exists(manifest_path)):
        t0 = time.perf_counter()
        subprocess.run([tracegen, "file", "--out", trace, "--events", str(args.events),
                        "--gpus", "8", "--streams", "3", "--vendor", "amd", "--seed", "11",
                        "--gzip-level", "1", "--manifest", manifest_path], check=True)
        print(f"generated in {time.perf_counter() - t0:.1f} s")
    with open(manifest_path) as f:
        manifest = json.load(f)

    limit = args.as_limit_mb * 2**20

    # bench/peak_rss measures the peak RSS (a child of Python would count
    # Python's own memory in ru_maxrss); prlimit(1) sets the limit after exec.
    peak_rss = os.path.join(args.build, "bench", "peak_rss")
    rss_file = tempfile.NamedTemporaryFile(delete=False)
    rss_file.close()
    out = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen([peak_rss, rss_file.name, "prlimit", f"--as={limit}", "--", profwatch,
                             "analyze", "--format", "json", "--inflate", args.inflate, trace],
                            stdout=out, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    code = proc.wait()
    wall = time.perf_counter() - start
    with open(rss_file.name) as f:
        rss_text = f.read().strip()
    os.unlink(rss_file.name)
    rss_mb = int(rss_text) / 1024 if rss_text else float("inf")
    out.seek(0)
    text = out.read().decode()
    failures = []
    if code != 0:
        failures.append(f"analyze exit {code}: {err[-2000:]}")
    report = json.loads(text.splitlines()[0]) if text.strip() else {}
    json_bytes = manifest["files"][0]["uncompressed_bytes"]
    print(f"{args.events:,} events, {json_bytes / 2**30:.2f} GiB JSON: analyze {wall:.1f} s "
          f"({json_bytes / 1e6 / wall:.0f} MB/s), peak RSS {rss_mb:.1f} MB, "
          f"RLIMIT_AS {args.as_limit_mb} MiB, exit {code}")
    if json_bytes <= 4 * 2**30:
        failures.append(f"trace only {json_bytes} bytes of JSON, not > 4 GiB")
    if rss_mb >= args.max_rss_mb:
        failures.append(f"peak RSS {rss_mb:.1f} MB >= {args.max_rss_mb} MB")
    if report:
        if report.get("errors"):
            failures.append(f"file errors: {report['errors']}")
        if report.get("truncated"):
            failures.append("reported truncated")
        devices = {d["device"]: d for d in report.get("devices", [])}
        mdevs = [d for d in manifest["files"][0]["devices"] if d["kernel_launches"] > 0]
        if len(devices) != len(mdevs):
            failures.append(f"{len(devices)} devices, manifest has {len(mdevs)}")
        for md in mdevs:
            d = devices.get(md["device"])
            if d is None:
                failures.append(f"missing {md['device']}")
                continue
            checks = [("kernels", d["kernels"], md["kernel_launches"])]
            for key, mkey in (("kernel_seconds", "kernel_ps"), ("busy_seconds", "busy_ps"),
                              ("span_seconds", "span_ps")):
                checks.append((key, round(d[key] * 1e12), md[mkey]))
            for name, got, want in checks:
                if got != want:
                    failures.append(f"{md['device']} {name}: {got} != manifest {want}")
    for f in failures:
        print("FAIL:", f)
    if tmp:
        tmp.cleanup()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
