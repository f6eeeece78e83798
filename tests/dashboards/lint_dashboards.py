#!/usr/bin/env python3
"""Lints profwatch's Grafana dashboards (dashboards/*.json).

Checks (each failure names the dashboard and panel):
  * JSON model sanity: loads, uid/title/schemaVersion/panels/templating,
    unique uid and title across the files, no `__inputs` / ${DS_...} export
    placeholders (the dashboards must be provisioning-ready as they are);
  * a `datasource` variable of type datasource for Prometheus, and every
    panel and every target uses it ({"type": "prometheus", "uid": "${datasource}"});
  * every variable referenced anywhere exists, and every defined variable is
    used by a panel, a link or another variable's query;
  * every panel (rows aside) has a title, a description and a unit
    (fieldConfig.defaults.unit) and at least one target with an expression;
    refIds unique within a panel;
  * panel ids unique; gridPos inside the 24-column grid, panels not
    overlapping;
  * every PromQL expression parses: they are extracted (promql_extract.py)
    into a generated rules file and `promtool check rules` must accept it;
  * absent is absent: a panel over a figure the exporter leaves out when it
    cannot compute it (OPTIONAL_METRICS) never shows 0 for it: no
    `or vector(0)` fallback, no numeric noValue, no mapping of null/NaN to
    a number, no "null as zero"; and a panel whose every target is such a
    figure sets noValue to the text that says why it is absent;
  * with --metric-names FILE (exporter/src/expose/metric_names.h): a panel
    over a detail metric (kDetailMetrics: exported only by `serve
    --metrics-detail`) says so in its description and in its noValue text,
    so on the default flags it reads "needs --metrics-detail", not "no data";
  * with --rules FILE: every panel that colours the step - kernel gap ratio
    uses the ProfwatchStepKernelGapHigh thresholds of that rules file, so a
    panel is orange or red exactly when the alert would fire.

Python 3 standard library only.
  lint_dashboards.py [--promtool PATH] [--work-dir DIR] [--rules FILE] DASHBOARD.json...
Exit status 0 when clean, 1 with one line per problem otherwise.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_extract  # noqa: E402

GRID_COLUMNS = 24
PANEL_TYPES = {"row", "timeseries", "stat", "table", "bargauge", "gauge", "text",
               "barchart", "heatmap", "piechart", "state-timeline", "status-history"}
DATASOURCE_REF = {"type": "prometheus", "uid": "${datasource}"}


# Figures profwatch does not export when it could not compute them (no
# shapes, no peak, no step time, one profiled step, one GPU, no scopes, no
# log): matched as substrings, so recording rules over them count too.
OPTIONAL_METRICS = (
    "profwatch_mfu_ratio", "profwatch_model_flops_per_second",
    "profwatch_achieved_flops_per_second", "profwatch_window_flops_per_gpu_step",
    "profwatch_host_stall_seconds", "profwatch_blocker_seconds", "profwatch_straggler_ratio",
    "profwatch_region_kernel_seconds", "profwatch_step_seconds",
    "profwatch_step_minus_kernel_seconds", "profwatch_step_minus_kernel_ratio",
    "profwatch_window_expected_gpus", "profwatch_training_",
    "profwatch_family_bytes", "profwatch_bytes_coverage_ratio", "profwatch_peak_hbm_bytes",
    "profwatch_family_achieved_bytes", "profwatch_family_arithmetic_intensity",
)
# `or vector(0)`, `or on() vector(0.0)`: an absent series becomes 0.
ZERO_FALLBACK = re.compile(r"\bor\b[^;]*?\bvector\s*\(\s*[-+]?0*\.?0*\s*\)")
NUMBER = re.compile(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*%?\s*$")


def absent_shown_as_zero(p) -> List[str]:
    """Why panel `p` would show 0 (or no reason) for an absent optional figure."""
    exprs = [t.get("expr") or "" for t in p.get("targets") or []]
    optional = [e for e in exprs if any(m in e for m in OPTIONAL_METRICS)]
    if not optional:
        return []
    problems = []
    for e in optional:
        if ZERO_FALLBACK.search(e):
            problems.append(f"turns an absent figure into 0 with a vector(0) fallback: {e}")
    fc = p.get("fieldConfig") or {}
    defaults = fc.get("defaults") or {}
    no_value = defaults.get("noValue")
    if no_value is not None and NUMBER.match(str(no_value)):
        problems.append(f"noValue {no_value!r} shows an absent figure as a number")
    for o in fc.get("overrides") or []:
        for prop in o.get("properties") or []:
            if prop.get("id") == "noValue" and NUMBER.match(str(prop.get("value"))):
                problems.append(f"an override sets noValue {prop.get('value')!r}")
    mappings = list(defaults.get("mappings") or [])
    for o in fc.get("overrides") or []:
        for prop in o.get("properties") or []:
            if prop.get("id") == "mappings":
                mappings.extend(prop.get("value") or [])
    for m in mappings:
        if m.get("type") != "special":
            continue
        opts = m.get("options") or {}
        text = str((opts.get("result") or {}).get("text", ""))
        if opts.get("match") in ("null", "nan", "null+nan", "empty") and NUMBER.match(text):
            problems.append(f"maps {opts.get('match')} to {text!r}")
    for node in (p, defaults.get("custom") or {}, p.get("options") or {}):
        for key in ("nullPointMode", "nullValueMode"):
            if node.get(key) == "null as zero":
                problems.append(f"{key} is 'null as zero'")
    if len(optional) == len(exprs) and not (isinstance(no_value, str) and no_value.strip()):
        problems.append("shows only figures that can be absent but sets no noValue text "
                        "saying why (fieldConfig.defaults.noValue)")
    return problems


def _strings(node):
    """Every string inside a JSON value."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def lint_dashboard(path: str, dash: dict) -> List[str]:
    errors: List[str] = []
    name = os.path.basename(path)

    def err(msg):
        errors.append(f"{name}: {msg}")

    if not isinstance(dash, dict):
        return [f"{name}: top level is not a JSON object"]
    for key, typ in (("uid", str), ("title", str), ("schemaVersion", int),
                     ("panels", list), ("templating", dict)):
        if not isinstance(dash.get(key), typ):
            err(f"missing or mistyped top-level key '{key}' (want {typ.__name__})")
    if errors:
        return errors
    if not 1 <= len(dash["uid"]) <= 40:
        err(f"uid '{dash['uid']}' must be 1-40 characters")
    if dash["schemaVersion"] < 30:
        err(f"schemaVersion {dash['schemaVersion']} is older than the classic model this project targets")
    if "__inputs" in dash or "__requires" in dash:
        err("has __inputs/__requires (an export-for-sharing artifact): not provisioning-ready")
    for s in _strings(dash):
        if "${DS_" in s:
            err(f"uses an export placeholder '{s}'")
            break
    if not dash.get("description"):
        err("dashboard has no description")

    variables = dash["templating"].get("list", [])
    if not isinstance(variables, list):
        return errors + [f"{name}: templating.list is not a list"]
    var_names = [v.get("name") for v in variables]
    if len(set(var_names)) != len(var_names):
        err(f"duplicate variable names {var_names}")
    ds_vars = [v for v in variables if v.get("name") == "datasource"]
    if not ds_vars:
        err("no 'datasource' variable")
    else:
        dv = ds_vars[0]
        if dv.get("type") != "datasource" or dv.get("query") != "prometheus":
            err("variable 'datasource' must have type 'datasource' and query 'prometheus'")

    # Variable references: panels, links, and other variables' queries.
    used = set()
    defined = set(n for n in var_names if n)
    for v in variables:
        if v.get("type") == "query":
            if v.get("datasource") != DATASOURCE_REF:
                err(f"variable '{v.get('name')}' does not use the datasource variable")
            q = promql_extract.variable_query_text(v)
            if not q:
                err(f"variable '{v.get('name')}' has no query")
            for ref in promql_extract.referenced_variables(q):
                used.add(ref)
                if ref == v.get("name"):
                    err(f"variable '{ref}' refers to itself")
    for s in _strings([dash.get("panels", []), dash.get("links", []), dash.get("title", "")]):
        used.update(promql_extract.referenced_variables(s))
    for ref in sorted(used - defined):
        err(f"references undefined variable '${ref}'")
    for unused in sorted(defined - used):
        err(f"variable '{unused}' is defined but never used")

    # Panels.
    panels = list(promql_extract.iter_panels(dash["panels"]))
    ids = [p.get("id") for p in panels]
    for i in set(i for i in ids if ids.count(i) > 1):
        err(f"panel id {i} is used more than once")
    boxes = []
    for p in panels:
        title = p.get("title") or f"id {p.get('id')}"
        where = f"panel '{title}'"
        if not isinstance(p.get("id"), int):
            err(f"{where}: id missing or not an integer")
        ptype = p.get("type")
        if ptype not in PANEL_TYPES:
            err(f"{where}: unknown panel type '{ptype}'")
        gp = p.get("gridPos")
        if not isinstance(gp, dict) or not all(isinstance(gp.get(k), int) for k in "xywh"):
            err(f"{where}: gridPos needs integer x, y, w, h")
        else:
            if gp["x"] < 0 or gp["y"] < 0 or gp["w"] < 1 or gp["h"] < 1:
                err(f"{where}: gridPos {gp} has a negative position or empty size")
            if gp["x"] + gp["w"] > GRID_COLUMNS:
                err(f"{where}: gridPos {gp} extends past column {GRID_COLUMNS}")
            boxes.append((title, gp))
        if ptype == "row":
            if not p.get("title"):
                err(f"row id {p.get('id')} has no title")
            continue
        if not p.get("title"):
            err(f"{where}: no title")
        if not p.get("description"):
            err(f"{where}: no description")
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if not unit:
            err(f"{where}: no unit (fieldConfig.defaults.unit)")
        if p.get("datasource") != DATASOURCE_REF:
            err(f"{where}: datasource is {p.get('datasource')!r}, not the datasource variable")
        targets = p.get("targets") or []
        if not targets:
            err(f"{where}: no targets")
        ref_ids = [t.get("refId") for t in targets]
        if len(set(ref_ids)) != len(ref_ids) or None in ref_ids:
            err(f"{where}: refIds {ref_ids} missing or not unique")
        for t in targets:
            if t.get("datasource") != DATASOURCE_REF:
                err(f"{where} target {t.get('refId')}: datasource is not the datasource variable")
            if not (t.get("expr") or "").strip():
                err(f"{where} target {t.get('refId')}: empty expression")
        for problem in absent_shown_as_zero(p):
            err(f"{where}: {problem}")
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (ta, a), (tb, b) = boxes[i], boxes[j]
            if (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and
                    a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]):
                err(f"panels '{ta}' {a} and '{tb}' {b} overlap")
    return errors


def detail_metrics(metric_names_h: str) -> List[str]:
    """Names of the metrics in kDetailMetrics of metric_names.h."""
    rows = dict(re.findall(r"\{Metric::(k\w+), \"(profwatch_\w+)\"", metric_names_h))
    block = re.search(r"kDetailMetrics\[\] = \{(.*?)\};", metric_names_h, re.S)
    if not block:
        return []
    return [rows[e] for e in re.findall(r"Metric::(k\w+)", block.group(1)) if e in rows]


def check_detail_panels(loaded, details: List[str]) -> List[str]:
    """Panels over a detail metric that do not say they need --metrics-detail."""
    errors = []
    for path, dash in loaded:
        stack = list(dash.get("panels") or [])
        while stack:
            p = stack.pop()
            stack.extend(p.get("panels") or [])
            exprs = " ".join(t.get("expr") or "" for t in p.get("targets") or [])
            # The name itself, not a recording rule named after it
            # (level:metric:operation reads the raw sums by default).
            used = [m for m in details
                    if re.search(r"(?<![\w:])" + re.escape(m) + r"(?![\w:])", exprs)]
            if not used:
                continue
            where = f"{os.path.basename(path)}: panel '{p.get('title')}'"
            if "--metrics-detail" not in (p.get("description") or ""):
                errors.append(f"{where} reads {used[0]} (serve --metrics-detail only) "
                              "but its description does not say it needs --metrics-detail")
            no_value = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("noValue")
            if "--metrics-detail" not in str(no_value or ""):
                errors.append(f"{where} reads {used[0]} (serve --metrics-detail only) "
                              "but its noValue text does not say it needs --metrics-detail")
    return errors


def gap_alert_thresholds(rules_text: str) -> List[float]:
    """The ProfwatchStepKernelGapHigh thresholds of a rules file, ascending."""
    found = re.findall(r"alert: ProfwatchStepKernelGapHigh\s+expr: \|\s+.*?profwatch_step_minus_kernel_ratio\)\s*>\s*([0-9.]+)",
                       rules_text)
    return sorted(float(v) for v in found)


def check_gap_colours(loaded, thresholds: List[float]) -> List[str]:
    errors = []
    if not thresholds:
        return ["no ProfwatchStepKernelGapHigh thresholds found in the rules file"]
    for path, dash in loaded:
        for p in promql_extract.iter_panels(dash.get("panels", [])):
            exprs = " ".join(t.get("expr") or "" for t in p.get("targets", []))
            steps = ((p.get("fieldConfig") or {}).get("defaults") or {}).get("thresholds", {}).get("steps")
            if "step_minus_kernel_ratio" not in exprs or not steps:
                continue
            values = sorted(s["value"] for s in steps if s.get("value") is not None)
            if values != thresholds:
                errors.append(f"{os.path.basename(path)}: panel '{p.get('title')}' colours the gap at {values}, "
                              f"the alert fires at {thresholds}")
    return errors


def check_promql(dashboards: List[dict], promtool: str, work_dir: str) -> List[str]:
    queries = []
    for dash in dashboards:
        queries.extend(promql_extract.extract(dash))
    if not queries:
        return ["no PromQL expressions found in the dashboards"]
    rules_path = os.path.join(work_dir, "dashboard_queries.rules.yml")
    promql_extract.write_rules_file(queries, rules_path)
    proc = subprocess.run([promtool, "check", "rules", rules_path],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        # promtool names the rule; map it back to the panel.
        names = {promql_extract.rule_name(q): q for q in queries}
        out = (proc.stdout + proc.stderr).strip()
        msgs = [f"promtool check rules failed on the dashboard queries:\n{out}"]
        for rule, q in names.items():
            if f'"{rule}"' in out:
                msgs.append(f"  -> {q.where()}: {q.raw}")
        return msgs
    print(f"promtool parsed {len(queries)} dashboard expressions")
    return []


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dashboards", nargs="+")
    ap.add_argument("--promtool", default=shutil.which("promtool"),
                    help="promtool binary (default: from PATH)")
    ap.add_argument("--work-dir", help="where to write the generated rules file")
    ap.add_argument("--no-promql", action="store_true", help="skip the promtool parse check")
    ap.add_argument("--rules", help="rules file whose gap alert thresholds the gap panels must use")
    ap.add_argument("--metric-names",
                    help="metric_names.h: panels over its detail metrics must say they need them")
    args = ap.parse_args(argv)

    errors: List[str] = []
    loaded = []
    for path in args.dashboards:
        try:
            with open(path, encoding="utf-8") as f:
                dash = json.load(f)
        except (OSError, ValueError) as e:
            errors.append(f"{os.path.basename(path)}: cannot load: {e}")
            continue
        errors.extend(lint_dashboard(path, dash))
        loaded.append((path, dash))
    for key in ("uid", "title"):
        seen = {}
        for path, dash in loaded:
            v = dash.get(key) if isinstance(dash, dict) else None
            if v in seen:
                errors.append(f"{os.path.basename(path)}: {key} '{v}' also used by {seen[v]}")
            seen[v] = os.path.basename(path)

    if args.rules:
        with open(args.rules, encoding="utf-8") as f:
            errors.extend(check_gap_colours([(p, d) for p, d in loaded if isinstance(d, dict)],
                                            gap_alert_thresholds(f.read())))
    if args.metric_names:
        with open(args.metric_names, encoding="utf-8") as f:
            details = detail_metrics(f.read())
        if not details:
            errors.append(f"{args.metric_names}: no kDetailMetrics found")
        errors.extend(check_detail_panels([(p, d) for p, d in loaded if isinstance(d, dict)],
                                          details))
    if not args.no_promql:
        if not args.promtool:
            errors.append("promtool not found (apt-get install prometheus); use --no-promql to skip")
        else:
            valid = [d for _, d in loaded if isinstance(d, dict)]
            if args.work_dir:
                os.makedirs(args.work_dir, exist_ok=True)
                errors.extend(check_promql(valid, args.promtool, args.work_dir))
            else:
                with tempfile.TemporaryDirectory(prefix="profwatch-dash-") as tmp:
                    errors.extend(check_promql(valid, args.promtool, tmp))

    for e in errors:
        print(e)
    if errors:
        print(f"FAILED: {len(errors)} problem(s) in {len(args.dashboards)} dashboard(s)")
        return 1
    print(f"OK: {len(loaded)} dashboard(s) clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
