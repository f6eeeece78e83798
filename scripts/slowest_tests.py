#!/usr/bin/env python3
"""The slowest tests over several ctest runs, with their share of their timeout.

  slowest_tests.py [--top N] [--tail N] --stage NAME JUNIT JSON DEFAULT_TIMEOUT [--stage ...]

Per stage: JUNIT is ctest's --output-junit file of the run, JSON is
`ctest --show-only=json-v1` of the same build directory (each test's
properties, TIMEOUT among them) and DEFAULT_TIMEOUT the `ctest --timeout`
the run was given, which ctest applies to the tests without a TIMEOUT
property. Prints one table of the N slowest tests of all stages together:
stage, test, duration, timeout, duration / timeout. A test over a quarter
of its timeout is marked: on a busy machine it may reach its timeout.

A stage whose files are missing (its build failed, so its tests never ran)
is named below the table. Then each failed test, with its first gtest
assertions and the last --tail lines of its output: the end of a long log
(all that CI keeps of a failed run) names what failed and why. The report's exit status is 0 unless the
arguments are wrong.
"""
import argparse
import json
import os
import sys
import xml.etree.ElementTree as ET

# A test that needs more than this share of its timeout is marked.
SHARE_LIMIT = 0.25


def timeouts(json_path, default):
    """Test name -> its timeout in seconds, from `ctest --show-only=json-v1`."""
    with open(json_path) as f:
        info = json.load(f)
    out = {}
    for test in info.get("tests", []):
        value = default
        for prop in test.get("properties", []):
            # ctest ignores a TIMEOUT of 0 (or less): the default applies.
            if prop.get("name") == "TIMEOUT" and float(prop.get("value", 0)) > 0:
                value = float(prop["value"])
        out[test["name"]] = value
    return out


def durations(junit_path):
    """(test name, seconds, status, output) of each test case in ctest's junit file."""
    root = ET.parse(junit_path).getroot()
    return [(case.get("name"), float(case.get("time", "0")), case.get("status", ""),
             case.findtext("system-out") or "")
            for case in root.iter("testcase")]


def rows_of(stages):
    """Every test of every readable stage, and notes about the stages that are not."""
    rows, notes = [], []
    for name, junit, info, default in stages:
        missing = [p for p in (junit, info) if not os.path.isfile(p)]
        if missing:
            notes.append(f"{name}: no test times ({', '.join(missing)} missing: its tests did not run)")
            continue
        try:
            limits = timeouts(info, float(default))
            cases = durations(junit)
        except (OSError, ValueError, KeyError, ET.ParseError) as e:
            notes.append(f"{name}: unreadable test times ({e})")
            continue
        for test, seconds, status, output in cases:
            rows.append({"stage": name, "test": test, "seconds": seconds, "status": status,
                         "timeout": limits.get(test), "output": output})
    return rows, notes


def table(rows, top):
    rows = sorted(rows, key=lambda r: (-r["seconds"], r["stage"], r["test"]))[:top]
    width = max([len("test")] + [len(r["test"]) for r in rows])
    lines = [f"{'stage':<8} {'test':<{width}} {'duration':>9} {'timeout':>8} {'share':>6}"]
    for r in rows:
        if r["timeout"]:
            share = r["seconds"] / r["timeout"]
            limit, share_text = f"{r['timeout']:.0f} s", f"{share * 100:.0f}%"
            mark = "  over a quarter of its timeout" if share > SHARE_LIMIT else ""
        else:
            limit, share_text, mark = "n/a", "n/a", "  (timeout unknown)"
        if r["status"] == "fail":
            mark += "  (failed)"
        lines.append(f"{r['stage']:<8} {r['test']:<{width}} {r['seconds']:>7.1f} s {limit:>8} "
                     f"{share_text:>6}{mark}")
    return lines


# A gtest assertion's first line ends so; the lines after it say what failed.
GTEST_FAILURE = ": Failure"
FAILURE_CONTEXT = 6
MAX_FAILURES_SHOWN = 5


def failures(rows, tail):
    """Each failed test, stage by stage: its first gtest assertions (a serve
    test's message may end with a long daemon log) and the last `tail` lines
    of its output."""
    lines = []
    for r in rows:
        if r["status"] != "fail":
            continue
        out = r["output"].rstrip("\n").splitlines()
        lines.append(f"== failed: {r['stage']} {r['test']}")
        starts = [i for i, line in enumerate(out) if line.endswith(GTEST_FAILURE)]
        for i in starts[:MAX_FAILURES_SHOWN]:
            lines.extend(out[i:i + 1 + FAILURE_CONTEXT])
        if tail > 0:
            lines.append(f"-- its last {min(tail, len(out))} of {len(out)} output lines")
            lines.extend(out[-tail:])
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--tail", type=int, default=40)
    ap.add_argument("--stage", nargs=4, action="append", required=True,
                    metavar=("NAME", "JUNIT", "JSON", "DEFAULT_TIMEOUT"))
    args = ap.parse_args(argv)
    rows, notes = rows_of(args.stage)
    print(f"== the {args.top} slowest tests of {len(args.stage) - len(notes)} ctest stage(s)")
    if rows:
        print("\n".join(table(rows, args.top)))
    for note in notes:
        print(note)
    for line in failures(rows, args.tail):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
