#!/usr/bin/env python3
"""Extracts every PromQL expression from Grafana dashboard JSON files.

Used two ways:
  * by lint_dashboards.py: writes the expressions as recording rules into a
    generated rules file so `promtool check rules` parses each one;
  * by tests/integration/e2e_prometheus.py: runs each expression against a
    real Prometheus that scraped a real `profwatch serve` and demands data.

Grafana template variables are substituted before Prometheus sees a query:
  * built-ins: $__rate_interval, $__interval, $__range (+ _s/_ms variants);
  * dashboard variables: either with a concrete value (`values`), or, when a
    variable has no value, in "match anything" form: `label="$v"` becomes
    `label=~".+"` and any other use becomes `.+`.
Variable queries of the form label_values(selector, label) are extracted
too, as `count by (label) (selector)`, so a variable that can never list a
value is caught as well.

Python 3 standard library only.

  promql_extract.py [--rules-out FILE] [--set NAME=VALUE]... DASHBOARD.json...
prints one line per expression (or writes the rules file).
"""
import argparse
import json
import re
import sys
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

# Values for Grafana's built-in interval variables. 1m is a safe rate window
# for any scrape interval up to 15 s.
BUILTINS = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
}


@dataclass
class Query:
    dashboard: str      # dashboard uid
    panel_id: int       # 0 for variable queries
    panel_title: str    # or "variable <name>"
    ref_id: str         # target refId, or the variable name
    raw: str            # as written in the dashboard
    expr: str           # after substitution
    kind: str           # "panel" or "variable"
    instant: bool       # target asks for an instant query (tables)

    def where(self) -> str:
        return f"{self.dashboard} / {self.panel_title} / {self.ref_id}"


def _var_pattern(name: str) -> str:
    # $name, ${name}, ${name:format}, [[name]]
    return r"(\$\{" + re.escape(name) + r"(?::[\w]+)?\}|\$" + re.escape(name) + r"\b|\[\[" + re.escape(name) + r"\]\])"


def referenced_variables(text: str) -> List[str]:
    """Names of the template variables a string refers to (built-ins excluded)."""
    names = set()
    for m in re.finditer(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]", text):
        name = m.group(1) or m.group(2) or m.group(3)
        if name and not name.startswith("__"):
            names.add(name)
    return sorted(names)


def substitute(expr: str, values: Dict[str, Optional[str]]) -> str:
    out = expr
    for name, value in BUILTINS.items():
        out = re.sub(_var_pattern(name), value, out)
    # Longest names first so $run never eats part of $run_name.
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        pat = _var_pattern(name)
        if value is None:
            # label="$v" / label!="$v" -> regex matchers that match anything
            out = re.sub(r'(\w+)\s*=\s*"' + pat + r'"', r'\1=~".+"', out)
            out = re.sub(r'(\w+)\s*!=\s*"' + pat + r'"', r'\1!~".+"', out)
            out = re.sub(pat, ".+", out)
        else:
            out = re.sub(pat, lambda _m, v=value: v, out)
    return out


_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)


def variable_expr(query: str) -> Optional[str]:
    """The PromQL inside a Prometheus variable query, or None if it has none."""
    m = _LABEL_VALUES.match(query)
    if m:
        return f"count by ({m.group(2)}) ({m.group(1).strip()})"
    m = _QUERY_RESULT.match(query)
    if m:
        return m.group(1).strip()
    return None


def variable_query_text(var: dict) -> str:
    q = var.get("query", "")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q or var.get("definition", "") or ""


def iter_panels(panels: Iterable[dict]) -> Iterable[dict]:
    """Every panel, including those nested in (collapsed) rows."""
    for p in panels or []:
        yield p
        for child in p.get("panels", []) or []:
            yield child


def extract(dashboard: dict, values: Optional[Dict[str, Optional[str]]] = None) -> List[Query]:
    uid = dashboard.get("uid") or dashboard.get("title", "?")
    variables = [v for v in dashboard.get("templating", {}).get("list", [])]
    vals: Dict[str, Optional[str]] = {v.get("name"): None for v in variables if v.get("name")}
    if values:
        for k, v in values.items():
            if k in vals:
                vals[k] = v
    queries: List[Query] = []
    for var in variables:
        if var.get("type") != "query":
            continue
        raw = variable_query_text(var)
        inner = variable_expr(raw)
        if inner is None:
            continue
        queries.append(Query(uid, 0, f"variable {var.get('name')}", var.get("name", "?"),
                             raw, substitute(inner, vals), "variable", True))
    for panel in iter_panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []) or []:
            raw = target.get("expr")
            if not raw:
                continue
            queries.append(Query(uid, int(panel.get("id", 0)), panel.get("title", "?"),
                                 target.get("refId", "?"), raw, substitute(raw, vals), "panel",
                                 bool(target.get("instant")) and not target.get("range")))
    return queries


def load(paths: Iterable[str]) -> List[dict]:
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out.append(json.load(f))
    return out


def rule_name(q: Query) -> str:
    base = re.sub(r"[^a-zA-Z0-9_]", "_", q.dashboard)
    ref = re.sub(r"[^a-zA-Z0-9_]", "_", q.ref_id)
    return f"dashboard:{base}:p{q.panel_id}_{ref}"


def rules_document(queries: List[Query]) -> dict:
    """A Prometheus rules file (as a dict) with one recording rule per query."""
    groups: Dict[str, list] = {}
    for q in queries:
        groups.setdefault(q.dashboard, []).append({
            "record": rule_name(q),
            "expr": q.expr,
            "labels": {"dashboard_panel": q.panel_title},
        })
    return {"groups": [{"name": f"dashboard-check-{name}", "rules": rules}
                       for name, rules in groups.items()]}


def write_rules_file(queries: List[Query], path: str) -> None:
    # JSON is valid YAML, so promtool reads this directly.
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rules_document(queries), f, indent=2, ensure_ascii=False)
        f.write("\n")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dashboards", nargs="+")
    ap.add_argument("--rules-out")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    values = dict(s.split("=", 1) for s in args.set)
    queries: List[Query] = []
    for dash in load(args.dashboards):
        queries.extend(extract(dash, values))
    if args.rules_out:
        write_rules_file(queries, args.rules_out)
        print(f"wrote {len(queries)} expressions to {args.rules_out}")
    else:
        for q in queries:
            print(f"{q.where()}\t{q.expr}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
