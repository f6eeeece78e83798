#!/usr/bin/env python3
"""No function over MAX lines (issue 62): a long function is read as a whole
or not at all, and splitting it names its parts.

  check_function_length.py SRC_DIR [--max 100] [--allow FILE]

Lengths come from Universal Ctags (--fields=+ne: each function definition's
first and end line, both counted; lambdas are counted as functions of their
own too). --allow FILE lists the functions allowed over the bound for now,
one "PATH NAME  # why" a line (PATH relative to SRC_DIR); an entry that is
no longer over the bound fails too, so the list only shrinks. Prints every
violation (one line each), then exits 1; exits 77 (skipped) when Universal
Ctags is not installed (scripts/install-deps.sh --test installs it).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def functions(src_dir):
    """(path relative to src_dir, name, first line, end line) of each function definition."""
    out = subprocess.run(
        ["ctags", "-R", "--languages=C++", "--kinds-C++=f", "--fields=+ne",
         "--output-format=json", "-o", "-", "."],
        cwd=src_dir, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or "end" not in tag:
            continue
        yield os.path.normpath(tag["path"]), tag["name"], int(tag["line"]), int(tag["end"])


def read_allowed(path):
    allowed = set()
    if not path:
        return allowed
    with open(path, encoding="utf-8") as f:
        for raw in f:
            text = raw.split("#", 1)[0].strip()
            if text:
                file, name = text.split(None, 1)
                allowed.add((os.path.normpath(file), name.strip()))
    return allowed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src_dir")
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("--allow")
    args = ap.parse_args()
    ctags = shutil.which("ctags")
    if not ctags or "Universal Ctags" not in subprocess.run(
            [ctags, "--version"], capture_output=True, text=True).stdout:
        print("Universal Ctags not installed (apt-get install universal-ctags)")
        return 77
    allowed = read_allowed(args.allow)
    long_ones = set()
    violations = []
    count = 0
    for path, name, first, end in sorted(functions(args.src_dir)):
        count += 1
        length = end - first + 1
        if length <= args.max:
            continue
        long_ones.add((path, name))
        if (path, name) not in allowed:
            violations.append(f"VIOLATION src/{path}:{first}: {name} is {length} lines "
                              f"(at most {args.max}): split it")
    for path, name in sorted(allowed - long_ones):
        violations.append(f"VIOLATION {args.allow}: src/{path} {name} is allowed over "
                          f"{args.max} lines but is not (or is gone): remove the entry")
    for v in violations:
        print(v)
    if count == 0:
        print(f"no functions found under {args.src_dir}")
        return 1
    if violations:
        print(f"{len(violations)} function length violation(s)")
        return 1
    print(f"{count} functions, none over {args.max} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
