#!/usr/bin/env python3
"""Docs that stay true: README.md, docs/*.md and tests/fixtures/README.md.

1. Links. Every relative link resolves: the file or directory exists, and a
   `#anchor` (in the same file or another Markdown file) is the GitHub slug
   of one of its headings. Paths quoted in backticks that start at a
   top-level directory of the repository (`deploy/...`, `tests/...`) exist.
2. Quoted figures. A marker
       <!-- check: analyze --format table $FIXTURES/real/h200/jobs/... -->
   names the command (`analyze` or `compare`, run with the built binary;
   $FIXTURES is ../shared/fixtures) whose output the text after it quotes.
   The marker covers the text up to the next marker or blank line (a
   paragraph, or one row of a table: put a marker in each row's first
   cell). Every backtick-quoted span in it that holds a digit (but does not
   start with `../`, a path naming the fixture) must be in the
   command's output as printed (spaces collapsed; `…` stands for any text
   between its pieces). A marker whose fixture is absent is skipped, named.
3. Series per run. README.md's "Series per run" table (series_budget_test
   checks it against the code) is the measure: a count of series per run
   claimed elsewhere ("66-90 series per run", "about 90 series per run",
   "series (about 90 per run)") must lie within its default column's range.

Usage: check_docs.py --repo DIR --profwatch BIN
Exit 0 when all holds, 1 with one line per problem, 77 when nothing could
be checked for figures (no fixtures) and the links hold.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"<!--\s*check:\s*(.*?)\s*-->")
TOP_DIRS = ("bench", "cmake", "dashboards", "deploy", "docs", "exporter", "rules", "scripts",
            "tests", "tools")


def slug(heading):
    """GitHub's anchor for a heading: links and code marks dropped, lower
    case, punctuation other than '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def without_code(text):
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
            out.append("")
            continue
        out.append("" if fenced else line)
    return "\n".join(out)


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        with open(path, encoding="utf-8") as f:
            for line in without_code(f.read()).split("\n"):
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def check_links(repo, path):
    problems = []
    rel = os.path.relpath(path, repo)
    with open(path, encoding="utf-8") as f:
        text = without_code(f.read())
    for lineno, line in enumerate(text.split("\n"), 1):
        prose = re.sub(r"`[^`]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose):
            target = target.strip("<>")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # http:, https:, mailto:, file:
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(dest):
                problems.append(f"{rel}:{lineno}: link to {target}: {file_part} does not exist")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{rel}:{lineno}: link to {target}: no heading #{anchor} in "
                                f"{os.path.relpath(dest, repo)}")
        for quoted in re.findall(r"`([^`\s]+)`", line):
            if not re.match(r"^(%s)/" % "|".join(TOP_DIRS), quoted):
                continue
            if re.search(r"[<>{}$*…]|\.\.\.", quoted):
                continue  # a pattern, not a path
            where = os.path.join(repo, quoted.split("#")[0].rstrip(":,."))
            # A program is named by its source (`bench/peak_rss`: peak_rss.cc).
            if not any(os.path.exists(where + ext) for ext in ("", ".cc", ".py", ".sh")):
                problems.append(f"{rel}:{lineno}: `{quoted}` names a path that does not exist")
    return problems


def normalize(text):
    return re.sub(r"\s+", " ", text).strip()


def found_in(quote, output):
    """`quote` in `output`, spaces collapsed, `…` matching any text."""
    pattern = ".*?".join(re.escape(normalize(p)) for p in quote.split("…"))
    return re.search(pattern, output, re.S) is not None


def markers_in(line):
    """The markers of a line that are not quoted in a code span."""
    spans = [m.span() for m in re.finditer(r"`[^`]*`", line)]
    return [m for m in MARKER.finditer(line)
            if not any(a <= m.start() < b for a, b in spans)]


def marked_regions(text):
    """(line number, command, text it covers) for each marker."""
    lines = without_code(text).split("\n")
    out = []
    for i, line in enumerate(lines):
        found = markers_in(line)
        for n, m in enumerate(found):
            if n + 1 < len(found):
                covered = [line[m.end():found[n + 1].start()]]
            else:
                covered = [line[m.end():]]
                j = i + 1
                while j < len(lines) and lines[j].strip() and not markers_in(lines[j]):
                    covered.append(lines[j])
                    j += 1
                if j < len(lines) and lines[j].strip():
                    covered.append(lines[j][:markers_in(lines[j])[0].start()])
            out.append((i + 1, m.group(1), "\n".join(covered)))
    return out


def check_figures(repo, path, profwatch, fixtures, outputs, skipped):
    problems, checked = [], 0
    rel = os.path.relpath(path, repo)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for lineno, command, covered in marked_regions(text):
        words = shlex.split(command)
        if not words or words[0] not in ("analyze", "compare"):
            problems.append(f"{rel}:{lineno}: check marker runs {words[:1]}: only analyze or compare")
            continue
        args = [w.replace("$FIXTURES", fixtures) for w in words]
        missing = [a for a, w in zip(args, words) if "$FIXTURES" in w and not os.path.exists(a)]
        if missing:
            skipped.append(f"{rel}:{lineno}: {missing[0]} absent")
            continue
        # Quotes: spans with a digit, but not a relative path naming the
        # fixture itself (`../shared/fixtures/...`).
        quotes = [q for q in re.findall(r"`([^`]+)`", re.sub(r"<!--.*?-->", "", covered))
                  if re.search(r"\d", q) and not q.startswith("../")]
        if not quotes:
            problems.append(f"{rel}:{lineno}: check marker covers no quoted figure")
            continue
        key = tuple(args)
        if key not in outputs:
            proc = subprocess.run([profwatch] + args, capture_output=True, text=True, cwd=repo,
                                  timeout=300)
            outputs[key] = (proc.returncode, normalize(proc.stdout + "\n" + proc.stderr))
        code, output = outputs[key]
        if code != 0:
            problems.append(f"{rel}:{lineno}: `profwatch {command}` exited {code}")
            continue
        for q in quotes:
            checked += 1
            if not found_in(q, output):
                problems.append(f"{rel}:{lineno}: `{q}` is not what `profwatch {command}` prints")
    return problems, checked


SERIES_RANGE = re.compile(r"(\d[\d,]*)\s*(?:–|-|to)\s*(\d[\d,]*) series per run")
SERIES_ABOUT = re.compile(r"about (\d[\d,]*) (?:series )?per run|series \(about (\d[\d,]*) per run\)")


def series_budget(repo):
    """(min, max) of the default series column of README.md's Series per run
    table, or None when it has none."""
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as f:
        text = f.read()
    at = text.find("### Series per run")
    if at < 0:
        return None
    counts = []
    for line in text[at:].splitlines()[1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`") and cells[1].replace(",", "").isdigit():
            counts.append(int(cells[1].replace(",", "")))
    return (min(counts), max(counts)) if counts else None


def check_series_claims(repo, path, budget):
    """Problems: claims of series per run outside the README's measured range."""
    if budget is None or os.path.basename(path) == "CHANGES.md":
        return []
    lo, hi = budget
    problems = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            claims = []
            for m in SERIES_RANGE.finditer(line):
                claims.append((m.group(0), int(m.group(1).replace(",", "")),
                               int(m.group(2).replace(",", ""))))
            for m in SERIES_ABOUT.finditer(line):
                v = int((m.group(1) or m.group(2)).replace(",", ""))
                claims.append((m.group(0), v, v))
            for quote, a, b in claims:
                if a < lo or b > hi:
                    problems.append(f"{os.path.relpath(path, repo)}:{n}: '{quote}' is outside the "
                                    f"{lo}-{hi} series per run of README.md's Series per run")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--profwatch", required=True)
    ap.add_argument("--fixtures", help="default: REPO/../shared/fixtures")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    fixtures = os.path.abspath(args.fixtures or os.path.join(repo, "..", "shared", "fixtures"))
    docs = [os.path.join(repo, "README.md")] + sorted(glob.glob(os.path.join(repo, "docs", "*.md")))
    docs.append(os.path.join(repo, "tests", "fixtures", "README.md"))
    problems, checked, outputs, skipped = [], 0, {}, []
    budget = series_budget(repo) if os.path.isfile(docs[0]) else None
    for path in docs:
        if not os.path.isfile(path):
            problems.append(f"{os.path.relpath(path, repo)} does not exist")
            continue
        problems += check_links(repo, path)
        problems += check_series_claims(repo, path, budget)
        p, n = check_figures(repo, path, os.path.abspath(args.profwatch), fixtures, outputs, skipped)
        problems += p
        checked += n
    for s in skipped:
        print(f"skipped: {s}")
    for p in problems:
        print(p)
    print(f"{len(docs)} files, {checked} quoted figures checked against {len(outputs)} commands, "
          f"{len(skipped)} markers skipped, {len(problems)} problems")
    if problems:
        return 1
    return 77 if checked == 0 and skipped else 0


if __name__ == "__main__":
    sys.exit(main())
