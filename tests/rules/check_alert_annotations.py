#!/usr/bin/env python3
"""Every alert in the rule files carries `summary`, `description` and a
`runbook_url` that points at a section that exists in the repository's docs
(`docs/FILE.md#anchor`, the anchor being the GitHub-style slug of a heading).

Usage: check_alert_annotations.py --repo DIR RULES.yml...
Exit 0 when every alert passes; otherwise prints each problem and exits 1.
"""
import argparse
import os
import re
import sys

import yaml


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


def check(repo, rule_files):
    problems = []
    alerts = 0
    for rf in rule_files:
        with open(rf, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
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
                url = str(ann.get("runbook_url", ""))
                m = re.fullmatch(r"(docs/[\w\-./]+\.md)#([\w\-]+)", url)
                if not m:
                    problems.append(f"{rf}: {name}: runbook_url {url!r} is not docs/FILE.md#anchor")
                    continue
                doc_path = os.path.join(repo, m.group(1))
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
