#!/usr/bin/env python3
"""Every alert in the rule files carries `summary`, `description` and a
`runbook_url` that links a section that exists in the repository's docs,
and its summary states the thresholds its expression compares against.

runbook_url: one template for every alert (RUNBOOK_TEMPLATE): BASE/FILE.md
#anchor where the operator sets the Prometheus external label
profwatch_runbook_base_url (BASE), else the /runbook page of a profwatch
daemon (RUNBOOK_DAEMON: the first profwatch target that is up, else the
alert's instance), which serves docs/FILE.md's runbook with an id per
heading. FILE.md is docs/FILE.md here and the anchor the GitHub-style slug
of a heading of it. No default is a file:// link: it opens neither from a
chat message nor on another machine.

Thresholds: each number an alert's expression compares with (`> 0.15`,
`> 1.10`, `> 6 * 3600`) must appear in its summary as a person reads it
(15%, 1.10, 6 h). Comparisons that only ask "is there one" (`> 0`, `>= 1`,
`== 0`, `== 1`) are not thresholds.

Groups: a rule (its expression or an annotation's `query`) reads a recorded
series only from a rule above it in its own group. Prometheus evaluates a
group's rules in order at one timestamp but each group on its own timer, so
a series recorded by another group is read as of that group's last
evaluation, up to an interval late, and an alert's `for:` would count from
a later evaluation than the promtool tests (which order groups for the
test) show.

Usage: check_alert_annotations.py --repo DIR RULES.yml...
Exit 0 when every alert passes; otherwise prints each problem and exits 1.
"""
import argparse
import os
import re
import sys

import yaml

# Where a runbook_url points without the operator's base (as YAML parses
# it): a daemon's /runbook (cmake/install_rules.cmake replaces exactly this
# text where -DPROFWATCH_RUNBOOK_BASE_URL is set).
RUNBOOK_DAEMON = ('http://{{ with query `up{job=~".*profwatch.*"} == 1` | sortByLabel "instance" }}'
                  '{{ . | first | label "instance" }}{{ else }}{{ $labels.instance }}{{ end }}/runbook')
RUNBOOK_OPERATOR = '{{ with $externalLabels.profwatch_runbook_base_url }}{{ reReplaceAll "/+$" "" . }}/'
# Every runbook_url: RUNBOOK_OPERATOR FILE.md {{ else }} RUNBOOK_DAEMON {{ end }} #anchor.
RUNBOOK_TEMPLATE = (re.escape(RUNBOOK_OPERATOR) + r"([\w\-./]+\.md)" +
                    re.escape("{{ else }}" + RUNBOOK_DAEMON + "{{ end }}") + r"#([\w\-]+)")


def slug(heading):
    """GitHub's anchor for a Markdown heading: lower case, punctuation other
    than '-' and '_' dropped, spaces to '-'."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors_of(path):
    out = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                out.add(slug(m.group(1)))
    return out


def thresholds(expr):
    """(number as written, the forms a summary may state it in) for each
    comparison of `expr` with a number."""
    out = []
    for op, num, mult in re.findall(r"(>=|<=|!=|==|>|<)\s*([0-9]+(?:\.[0-9]+)?)(?:\s*\*\s*([0-9]+))?",
                                    expr):
        v = float(num) * (float(mult) if mult else 1)
        if v in (0, 1) and not mult:
            continue  # presence, a flag, or changes() >= 1
        if mult == "3600":
            forms = [f"{float(num):g} h", f"{float(num):g} hours"]
        elif v < 1:
            forms = [f"{v * 100:g}%"]
        else:
            forms = [num]
        out.append((f"{op} {num}" + (f" * {mult}" if mult else ""), forms))
    return out


NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def check_groups(rule_file, doc):
    """Problems where a rule reads a series recorded by another group or by
    a rule below it in its own group."""
    groups = doc.get("groups", [])
    where = {}  # recorded name -> (group name, rule index)
    for group in groups:
        for i, rule in enumerate(group.get("rules", [])):
            if "record" in rule:
                where.setdefault(rule["record"], (group["name"], i))
    problems = []
    for group in groups:
        for i, rule in enumerate(group.get("rules", [])):
            text = str(rule.get("expr", "")) + " " + " ".join(
                str(v) for v in (rule.get("annotations") or {}).values())
            who = rule.get("alert") or rule.get("record")
            for name in sorted(set(NAME.findall(text)) & set(where)):
                g, j = where[name]
                if g != group["name"]:
                    problems.append(f"{rule_file}: {who} (group {group['name']}) reads {name}, "
                                    f"recorded by group {g}: it would see that group's previous "
                                    "evaluation; move it below the rule in one group")
                elif j >= i:
                    problems.append(f"{rule_file}: {who} reads {name}, recorded below it in "
                                    f"group {g}")
    return problems


def check(repo, rule_files):
    problems = []
    alerts = 0
    for rf in rule_files:
        with open(rf, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        problems += check_groups(rf, doc)
        for group in doc.get("groups", []):
            for rule in group.get("rules", []):
                if "alert" not in rule:
                    continue
                alerts += 1
                name = rule["alert"]
                ann = rule.get("annotations") or {}
                for key in ("summary", "description", "runbook_url"):
                    if not str(ann.get(key, "")).strip():
                        problems.append(f"{rf}: {name}: missing annotation {key}")
                summary = str(ann.get("summary", ""))
                for written, forms in thresholds(str(rule.get("expr", ""))):
                    if not any(f in summary for f in forms):
                        problems.append(f"{rf}: {name}: the summary does not state the threshold "
                                        f"`{written}` (as {' or '.join(forms)}): {summary!r}")
                url = str(ann.get("runbook_url", ""))
                if "file://" in url:
                    problems.append(f"{rf}: {name}: runbook_url {url!r} has a file:// link: it "
                                    "opens neither from a chat message nor on another machine; "
                                    "link a daemon's /runbook")
                    continue
                m = re.fullmatch(RUNBOOK_TEMPLATE, url)
                if not m:
                    problems.append(f"{rf}: {name}: runbook_url {url!r} is not "
                                    f"{RUNBOOK_OPERATOR}FILE.md{{{{ else }}}}{RUNBOOK_DAEMON}"
                                    "{{ end }}#anchor (the operator's base, else a daemon's "
                                    "/runbook)")
                    continue
                doc_path = os.path.join(repo, "docs", m.group(1))
                if not os.path.isfile(doc_path):
                    problems.append(f"{rf}: {name}: {m.group(1)} does not exist")
                elif m.group(2) not in anchors_of(doc_path):
                    problems.append(f"{rf}: {name}: no heading with anchor #{m.group(2)} in {m.group(1)}")
    if alerts == 0:
        problems.append("no alerts found")
    return alerts, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("rules", nargs="+")
    args = ap.parse_args()
    alerts, problems = check(args.repo, args.rules)
    for p in problems:
        print(p)
    print(f"{alerts} alerts checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
