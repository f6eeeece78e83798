#!/usr/bin/env python3
"""check_docs.py finds what it is for: in a small tree, a link to a missing
file, a link to a missing heading, a backticked repository path that does
not exist, and a quoted figure the code does not print (the runbook's old
`0.020964 s` for the host-stalled H200 run, which `analyze` prints as
0.013976 s); the true quote and the good links pass.

Usage: check_docs_selftest.py --profwatch BIN [--fixtures DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

DOC = """# Page

## A heading

[good](other.md#second-part) [self](#a-heading) [missing file](nowhere.md)
[missing heading](other.md#no-such-part) `deploy/no-such-file.yaml` `docs/other.md`

<!-- check: analyze $FIXTURES/real/h200/jobs/4343-gpt-h200-torch/stall20 -->
Stale: `host/input stall 0.020964 s idle before each step's first kernel (25.9% of the step`.

<!-- check: analyze $FIXTURES/real/h200/jobs/4343-gpt-h200-torch/stall20 -->
True: `host/input stall 0.013976 s per step` … `(17.3% of the step;`.

Each run costs its series (about 230 per run); 66–90 series per run holds.
"""
README = """# R

### Series per run

| run | series | bytes |
|---|---|---|
| `a/b` | 66 | 1 |
| `c/d` | 90 | 2 |
"""
OTHER = "# Other\n\n## Second part\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profwatch", required=True)
    ap.add_argument("--fixtures", default=os.path.join(REPO, "..", "shared", "fixtures"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profwatch-docs-selftest-") as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "tests", "fixtures"))
        for path, text in (("README.md", README), ("docs/page.md", DOC), ("docs/other.md", OTHER),
                           ("tests/fixtures/README.md", "# F\n")):
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        proc = subprocess.run([sys.executable, os.path.join(HERE, "check_docs.py"), "--repo", tmp,
                               "--profwatch", args.profwatch, "--fixtures", args.fixtures],
                              capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    print(out)
    want = ["docs/page.md:5: link to nowhere.md: nowhere.md does not exist",
            "docs/page.md:6: link to other.md#no-such-part: no heading #no-such-part in docs/other.md",
            "docs/page.md:6: `deploy/no-such-file.yaml` names a path that does not exist",
            "docs/page.md:14: 'series (about 230 per run)' is outside the 66-90 series per run "
            "of README.md's Series per run"]
    have_fixture = os.path.isdir(os.path.join(args.fixtures, "real", "h200"))
    if have_fixture:
        want.append("docs/page.md:8: `host/input stall 0.020964 s idle before each step's first "
                    "kernel (25.9% of the step` is not what `profwatch analyze "
                    "$FIXTURES/real/h200/jobs/4343-gpt-h200-torch/stall20` prints")
    problems = [l for l in out.splitlines() if l.startswith("docs/")]
    ok = proc.returncode == 1 and sorted(problems) == sorted(want)
    if not ok:
        print(f"FAIL: exit {proc.returncode}; want exactly these problems:\n  " + "\n  ".join(want))
        return 1
    if not have_fixture:
        print("SKIP (figures): shared fixtures absent; links checked")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
