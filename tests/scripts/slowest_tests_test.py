#!/usr/bin/env python3
"""scripts/slowest_tests.py on a small ctest junit + show-only json pair per
stage with known values: the table lists the ten slowest tests of both stages
in order, each with its timeout (its TIMEOUT property, else the stage's
--timeout) and its share, marks those over a quarter, names a stage whose
files are missing, then shows each failed test's gtest assertions and the
end of its output.

  slowest_tests_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def junit(cases, outputs=None):
    """ctest's --output-junit layout (CMake 3.25) for (name, seconds, status),
    with the (XML-escaped) output of the tests named in `outputs`."""
    outputs = outputs or {}
    body = "".join(
        f'\t<testcase name="{n}" classname="{n}" time="{t}" status="{s}">\n'
        + ('\t\t<failure message=""/>\n' if s == "fail" else "")
        + f"\t\t<system-out>{outputs.get(n, '')}</system-out>\n\t</testcase>\n"
        for n, t, s in cases)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="(empty)"\n'
            f'\ttests="{len(cases)}"\n\tfailures="0"\n\ttime="1"\n\t>\n{body}</testsuite>\n')


def show_only(tests):
    """`ctest --show-only=json-v1` for (name, TIMEOUT property or None)."""
    out = []
    for name, timeout in tests:
        props = [{"name": "WORKING_DIRECTORY", "value": "/b"}]
        if timeout is not None:
            props.insert(0, {"name": "TIMEOUT", "value": float(timeout)})
        out.append({"name": name, "command": ["/bin/true"], "properties": props})
    return json.dumps({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": out})


def main():
    src = sys.argv[1]
    script = os.path.join(src, "scripts", "slowest_tests.py")
    with tempfile.TemporaryDirectory() as work:
        def write(name, text):
            path = os.path.join(work, name)
            with open(path, "w") as f:
                f.write(text)
            return path

        # Stage a: gtest cases with TIMEOUT 120 and 300, one without a
        # TIMEOUT property (the stage's --timeout 900 applies), one with
        # TIMEOUT 0 (ignored by ctest: 900 too), a name XML-escaped.
        a_cases = [("Serve.Big", 90.0, "run"), ("Serve.Small", 29.0, "run"),
                   ("Unit.A", 75.0, "run"), ("readme_commands", 225.0, "run"),
                   ("no_property", 300.0, "run"), ("zero_timeout", 50.0, "run"),
                   ("Param/X.Y&lt;int&gt;/0", 12.0, "run"), ("Unit.Tiny", 0.01, "run")]
        a_json = [("Serve.Big", 120), ("Serve.Small", 120), ("Unit.A", 300),
                  ("readme_commands", 900), ("no_property", None), ("zero_timeout", 0),
                  ("Param/X.Y<int>/0", 300), ("Unit.Tiny", 300)]
        # Stage b: the same Serve.Big slower (a sanitizer build), a failed
        # test at its timeout, a skipped one; stage default 1800. Of the 13
        # tests the three fastest (Unit.A here, Unit.Tiny, Skipped) are left out.
        b_cases = [("Serve.Big", 118.8, "run"), ("Hang.Test", 120.0, "fail"),
                   ("Skipped", 0.02, "notrun"), ("Unit.A", 10.0, "run"), ("e2e", 30.0, "run")]
        b_json = [("Serve.Big", 120), ("Hang.Test", 120), ("Skipped", None), ("Unit.A", 300),
                  ("e2e", None)]
        # Hang.Test's output: a gtest assertion early, then a long log.
        log = [f"log line {i}" for i in range(1, 51)]
        hang_out = "\n".join(["[ RUN      ] Hang.Test", "a.cc:7: Failure",
                              "Expected equality of these values:", "  port()", "    -1",
                              "  0", "  Which is: 0", "  daemon log:", "  x &amp; y"] + log) + "\n"
        args = [sys.executable, script, "--tail", "3",
                "--stage", "g++", write("a.xml", junit(a_cases)), write("a.json", show_only(a_json)), "900",
                "--stage", "asan", write("b.xml", junit(b_cases, {"Hang.Test": hang_out})), write("b.json", show_only(b_json)), "1800",
                "--stage", "tsan", os.path.join(work, "none.xml"), os.path.join(work, "none.json"), "900"]
        run = subprocess.run(args, capture_output=True, text=True)
    got = run.stdout.splitlines()
    w = len("Param/X.Y<int>/0")
    want = [
        "== the 10 slowest tests of 2 ctest stage(s)",
        f"{'stage':<8} {'test':<{w}}  duration  timeout  share",
        f"{'g++':<8} {'no_property':<{w}}   300.0 s    900 s    33%  over a quarter of its timeout",
        f"{'g++':<8} {'readme_commands':<{w}}   225.0 s    900 s    25%",
        f"{'asan':<8} {'Hang.Test':<{w}}   120.0 s    120 s   100%  over a quarter of its timeout  (failed)",
        f"{'asan':<8} {'Serve.Big':<{w}}   118.8 s    120 s    99%  over a quarter of its timeout",
        f"{'g++':<8} {'Serve.Big':<{w}}    90.0 s    120 s    75%  over a quarter of its timeout",
        f"{'g++':<8} {'Unit.A':<{w}}    75.0 s    300 s    25%",
        f"{'g++':<8} {'zero_timeout':<{w}}    50.0 s    900 s     6%",
        f"{'asan':<8} {'e2e':<{w}}    30.0 s   1800 s     2%",
        f"{'g++':<8} {'Serve.Small':<{w}}    29.0 s    120 s    24%",
        f"{'g++':<8} {'Param/X.Y<int>/0':<{w}}    12.0 s    300 s     4%",
        f"tsan: no test times ({os.path.join(work, 'none.xml')}, {os.path.join(work, 'none.json')} "
        "missing: its tests did not run)",
        "== failed: asan Hang.Test",
        "a.cc:7: Failure", "Expected equality of these values:", "  port()", "    -1", "  0",
        "  Which is: 0", "  daemon log:",
        "-- its last 3 of 59 output lines",
        "log line 48", "log line 49", "log line 50",
    ]
    failures = []
    if run.returncode != 0:
        failures.append(f"exit status {run.returncode}: {run.stderr}")
    for i, (g, x) in enumerate(zip(got, want)):
        if g != x:
            failures.append(f"line {i}:\n  got  {g!r}\n  want {x!r}")
    if len(got) != len(want):
        failures.append(f"{len(got)} lines, want {len(want)}:\n" + run.stdout)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("PASS: the slowest-ten table of two stages, a missing stage named, a failure shown")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
