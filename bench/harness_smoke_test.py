#!/usr/bin/env python3
"""Runs bench/run.py end to end on tiny generated files and checks that every
section it reports was measured: the harness is documented in the README, so
it must keep working. It checks what was measured and that the analysis is
right (device count), never how fast anything was.

  python3 bench/harness_smoke_test.py --build BUILD
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "bench.json")
        run = subprocess.run(
            [sys.executable, os.path.join(here, "run.py"), "--build", args.build, "--work", work,
             "--sizes", "3000", "--short-repeat", "2", "--repeat", "1", "--multi-events", "2000",
             "--nsys-kernels", "2000", "--roofline-kernels", "200",
             "--flood-files", "20", "--flood-rounds", "1",
             "--sharded-jobs", "4", "--sharded-runs", "2", "--shards", "2", "--sharded-poll", "2s",
             "--sharded-seconds", "4", "--idle-warmup", "1",
             "--json-out", out], capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        with open(out) as f:
            res = json.load(f)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    rows = res.get("single_file", [])
    check(len(rows) == 1 and rows[0]["events"] == 3000, "one single-file row of 3,000 events")
    if rows:
        r = rows[0]
        for key in ("floor_zlib_s", "floor_pair_s", "gzip_dc_s", "parse_s", "analyze_s",
                    "analyze_1thread_s", "analyze_cpu_s",
                    "analyze_1thread_cpu_s", "python_s"):
            check(isinstance(r.get(key), float) and r[key] > 0, f"{key} measured (> 0)")
        check(r.get("json_bytes", 0) > r.get("gz_bytes", 0) > 0, "JSON larger than its gzip")
        check(r.get("analyze_rss", 0) > 1 << 20, "analyze peak RSS read from the wrapper")
    ns = res.get("nsys", {})
    check(ns.get("kernel_rows") == 2008 and ns.get("gpus") == 8,
          "nsys export of 2,000 rows (+8 init rows) read with its 8 GPUs")
    check(ns.get("sqlite3_s", 0) > 0 and ns.get("analyze_s", 0) > 0, "nsys timings measured")
    multi = res.get("multi_file", {})
    check(multi.get("files") == 8 and multi.get("threads1_s", 0) > 0 and multi.get("threads2_s", 0) > 0,
          "8-file window timed with 1 and 2 threads")
    roof = res.get("roofline", {})
    check(roof.get("kernels_per_step") == 200 and roof.get("json_bytes", 0) > 0
          and all(isinstance(roof.get(k), float) and roof[k] > 0
                  for k in ("floor_zlib_cpu_s", "bare_ondemand_cpu_s", "parse_only_cpu_s",
                            "analyze_1thread_cpu_s")),
          "roofline: CPU of the zlib floor, a bare On-Demand pass, the parser alone and"
          " analyze --threads 1 measured")
    check(roof.get("parse_only_events", 0) > 0
          and roof.get("parse_only_events") <= roof.get("bare_ondemand_events", 0)
          <= roof.get("parse_only_events") + 1,
          "roofline: the bare On-Demand pass walked every entry the parser read (and the last {})")
    flood = res.get("flood", {}).get("setups", {})
    check(len(flood) == 3, "the flood's three daemons (default, raised, tracked) measured")
    for label, setup in flood.items():
        rows = setup.get("rounds", [])
        check(setup.get("before_mb", 0) > 0 and len(rows) == 1
              and rows[0].get("with_files_mb", 0) > 0 and rows[0].get("after_mb", 0) > 0,
              f"flood '{label}': RSS before, with the files and after their removal read")
    sharded = res.get("sharded", {}).get("setups", {})
    check(len(sharded) == 2, "the sharded run's two setups (one daemon, 2 shards) measured")
    for label, rows in sharded.items():
        check(sum(r.get("windows", 0) for r in rows) == 8, f"sharded '{label}': 4 jobs x 2 runs exported")
        for r in (r for r in rows if r.get("windows", 0) > 0):
            check(r.get("exported_after_s", 0) > 0 and r.get("export_cpu_s", 0) > 0
                  and r.get("scans", 0) >= 1 and r.get("scan_thread_cpu_per_scan_s") is not None,
                  f"sharded '{label}' {r.get('name')}: export time, its CPU and the scans read")
    for f in failures:
        print("FAILED:", f)
    if not failures:
        print("bench harness: every section measured")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
