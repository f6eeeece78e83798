#!/usr/bin/env python3
"""A/B of profwatch builds side by side: does a change buy anything?

Runs the zlib inflate floor (stage_bench inflate) and `analyze --format json`
of each given profwatch binary on the same generated trace, interleaved
round by round (a slow spell of a shared machine hits all of them alike),
and prints each binary's median wall time as a ratio to the floor and to the
first binary, and its median CPU time (user + system) as a ratio to the first. It also checks that every binary prints the same report.

Used to decide which optimisations stay (docs/performance.md): build the
code with and without one, copy the two binaries aside, run

  python3 bench/ab.py --build build --events 1000000 --rounds 9 \\
      with=/tmp/pw_with without=/tmp/pw_without

`--input PATH` analyses that trace file or directory instead of the
generated trace (for example a real window with a feature the generated one
lacks); there is then no inflate floor (its column shows n/a).

`--common-keys` compares the reports on the JSON keys every binary prints
(recursively), for builds that add figures: the read path is unchanged when
everything both print is identical; the keys only some print are named.

It is a benchmark, not a test: nothing here asserts timings.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd):
    """(wall seconds, CPU seconds, stdout) of one run."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed ({status}): {' '.join(cmd)}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, out.read()


def keys_of(value, prefix=""):
    """Every key path of a JSON value ("a.b" for objects, "a[].b" in lists)."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            out |= keys_of(v, prefix + k + ".")
    elif isinstance(value, list):
        for v in value:
            out |= keys_of(v, prefix.rstrip(".") + "[].")
    return out


def project(value, keep, prefix=""):
    """`value` with only the key paths in `keep`."""
    if isinstance(value, dict):
        return {k: project(v, keep, prefix + k + ".") for k, v in value.items()
                if prefix + k in keep}
    if isinstance(value, list):
        return [project(v, keep, prefix.rstrip(".") + "[].") for v in value]
    return value


def common_reports(outputs):
    """The reports (one JSON document per line) on their common keys, and
    the key paths only some of them have."""
    docs = {name: [json.loads(line) for line in out.splitlines() if line.strip()]
            for name, out in outputs.items()}
    keys = {name: set().union(*(keys_of(d) for d in ds)) for name, ds in docs.items()}
    common = set.intersection(*keys.values())
    extra = set.union(*keys.values()) - common
    return ({name: [project(d, common) for d in ds] for name, ds in docs.items()},
            sorted(extra))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "profwatch-bench"))
    ap.add_argument("--extra", default="", help="more analyze flags, e.g. '--threads 1'")
    ap.add_argument("--input", default="", help="analyse this trace file or dir instead")
    ap.add_argument("--common-keys", action="store_true",
                    help="compare the reports on the JSON keys they all have")
    ap.add_argument("variants", nargs="+", help="NAME=PATH of a profwatch binary")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    path = args.input or os.path.join(args.work, f"amd_{args.events}.trace.json.gz")
    if not args.input and not os.path.exists(path):
        subprocess.run([os.path.join(args.build, "tools", "tracegen", "profwatch-tracegen"), "file",
                        "--out", path, "--events", str(args.events), "--gpus", "8", "--vendor",
                        "amd", "--seed", "7", "--streams", "3"], check=True)
    stage = os.path.join(args.build, "bench", "stage_bench")
    variants = [v.split("=", 1) for v in args.variants]
    walls = {name: [] for name, _ in variants}
    cpus = {name: [] for name, _ in variants}
    floors, outputs = [], {}
    rng = random.Random(1)
    for _ in range(args.rounds):
        if not args.input:
            floors.append(timed([stage, "inflate", path])[0])
        # A new order every round: no binary always runs right after the floor.
        for name, binary in rng.sample(variants, len(variants)):
            wall, cpu, out = timed([binary, "analyze", "--format", "json"] + args.extra.split() +
                                   [path])
            walls[name].append(wall)
            cpus[name].append(cpu)
            outputs[name] = out
    floor = statistics.median(floors) if floors else None
    first = statistics.median(walls[variants[0][0]])
    extra = []
    if args.common_keys:
        projected, extra = common_reports(outputs)
        same = all(projected[name] == projected[variants[0][0]] for name, _ in variants)
    else:
        same = len({outputs[name] for name, _ in variants}) == 1
    what = args.input or f"{args.events:,} events"
    floor_text = f"{floor:.4f} s" if floor else "n/a"
    on = " on their common keys" if args.common_keys else ""
    print(f"# {what}, {args.rounds} rounds interleaved, floor {floor_text},"
          f" reports identical{on}: {'yes' if same else 'NO'}")
    if extra:
        print(f"# keys not in every report: {', '.join(extra)}")
    first_cpu = statistics.median(cpus[variants[0][0]])
    print("| build | median wall s | wall / floor | wall / first | median CPU s | CPU / first |")
    print("|---|---|---|---|---|---|")
    for name, _ in variants:
        m = statistics.median(walls[name])
        c = statistics.median(cpus[name])
        ratio = f"{m / floor:.3f}" if floor else "n/a"
        print(f"| {name} | {m:.4f} | {ratio} | {m / first:.3f} | {c:.4f} |"
              f" {c / first_cpu:.3f} |")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
