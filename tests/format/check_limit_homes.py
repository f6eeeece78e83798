#!/usr/bin/env python3
"""Caps, limits and maxima live in few homes (issue 62): a bound is found
where its stage keeps its bounds, not beside whichever function applies it.

  check_limit_homes.py SRC_DIR [--max 12]

Homes: core/caps.h (the declared table of the caps a user's files and flags
can hit: name, default, flag, reason) and one limits.h per stage folder
(parse/limits.h, aggregate/limits.h, ...) for the bounds each stage keeps
on what it holds.

What counts: a `constexpr` definition (namespace, class or function scope,
.h or .cc) of a name k...Max..., k...Cap... or k...Limit... where Max, Cap
or Limit is a whole word of the CamelCase name (followed by an upper-case
letter, a digit, `_` or the end: kMaxOps, kU128Max, kJaxEventCap count;
kNsysCaptureDirName and the tables kOwnerCaps/kDaemonCaps do not). An alias
(`kDefaultMaxX = caps::kX.value`) is a definition too: use the table's name.
What does not count:
 - labels: a std::string_view or character-string constant (a reason label
   such as kDirFileCapReason names what was refused; the bound it names is
   defined in a home, and the label stays beside the code that exports it);
 - the names in NOT_BOUNDS below, each with its reason; an entry no longer
   defined anywhere fails, so the list only shrinks.
Prints each file that defines such constants with their names, then exits 1
when more than MAX files do (or a NOT_BOUNDS entry is stale), else 0.
"""
import argparse
import os
import re
import sys

# Names that read like bounds but bound nothing a file or flag supplies.
NOT_BOUNDS = {
    "kU128Max": "the largest value of the type (parse/number.cc), not a bound on input",
}

DEFINITION = re.compile(r"\bconstexpr\b(?P<decl>[^=;{}()]*?)\b(?P<name>k[A-Za-z0-9_]+)\s*(=|\{)")
BOUND_NAME = re.compile(r"^k[A-Za-z0-9_]*?(Max|Cap|Limit)(?![a-z])")
LABEL_TYPE = re.compile(r"\bstring_view\b|\bchar\s*\*|\bchar\b.*\[")


def definitions(path):
    """The bound names `path` defines, in order."""
    names = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.split("//", 1)[0]
            for m in DEFINITION.finditer(line):
                name = m.group("name")
                if not BOUND_NAME.match(name) or LABEL_TYPE.search(m.group("decl")):
                    continue
                names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src_dir")
    ap.add_argument("--max", type=int, default=12)
    args = ap.parse_args()
    homes = {}
    exempt_seen = set()
    for root, dirs, files in os.walk(args.src_dir):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(root, name)
            found = []
            for n in definitions(path):
                if n in NOT_BOUNDS:
                    exempt_seen.add(n)
                else:
                    found.append(n)
            if found:
                homes[os.path.relpath(path, args.src_dir)] = found
    for rel, names in sorted(homes.items()):
        print(f"src/{rel}: {len(names)} ({', '.join(sorted(set(names)))})")
    failed = False
    for n in sorted(set(NOT_BOUNDS) - exempt_seen):
        print(f"VIOLATION NOT_BOUNDS lists {n}, which is no longer defined: remove the entry")
        failed = True
    if len(homes) > args.max:
        print(f"VIOLATION {len(homes)} files define caps, limits or maxima (at most {args.max}): "
              "move them to core/caps.h or the stage's limits.h")
        failed = True
    else:
        print(f"{len(homes)} files define caps, limits or maxima (at most {args.max})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
