#!/usr/bin/env python3
"""Tests of the dashboard linter itself: the shipped dashboards pass, and
each kind of defect planted in a copy of one is reported (so the linter's
green result means something). Python 3 stdlib (unittest).

  lint_dashboards_selftest.py [--promtool PATH]
"""
import copy
import glob
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import lint_dashboards  # noqa: E402
import promql_extract  # noqa: E402

PROMTOOL = shutil.which("promtool")
DASHBOARDS = sorted(glob.glob(os.path.join(ROOT, "dashboards", "*.json")))


def first_panel(dash, ptype=None):
    for p in promql_extract.iter_panels(dash["panels"]):
        if p["type"] != "row" and (ptype is None or p["type"] == ptype):
            return p
    raise AssertionError("no panel")


class LintDashboardsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="profwatch-lint-test-")
        with open(os.path.join(ROOT, "dashboards", "profwatch-job-overview.json")) as f:
            self.base = json.load(f)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_linter(self, *dashboards, promql=False, extra=()):
        paths = []
        for i, d in enumerate(dashboards):
            path = os.path.join(self.tmp, f"d{i}.json")
            with open(path, "w") as f:
                if isinstance(d, str):
                    f.write(d)
                else:
                    json.dump(d, f)
            paths.append(path)
        args = paths + (["--promtool", PROMTOOL] if promql else ["--no-promql"]) + list(extra)
        out = io.StringIO()
        with redirect_stdout(out):
            rc = lint_dashboards.main(args)
        return rc, out.getvalue()

    def assert_reports(self, dash, needle, promql=False):
        rc, out = self.run_linter(dash, promql=promql)
        self.assertEqual(rc, 1, out)
        self.assertIn(needle, out)

    def test_shipped_dashboards_are_clean(self):
        self.assertEqual(len(DASHBOARDS), 3)
        out = io.StringIO()
        args = DASHBOARDS + (["--promtool", PROMTOOL] if PROMTOOL else ["--no-promql"])
        with redirect_stdout(out):
            rc = lint_dashboards.main(args)
        self.assertEqual(rc, 0, out.getvalue())

    def test_clean_copy_passes(self):
        rc, out = self.run_linter(copy.deepcopy(self.base))
        self.assertEqual(rc, 0, out)

    def test_reports_invalid_json(self):
        self.assert_reports("{\"uid\": ", "cannot load")

    def test_reports_missing_unit(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d, "timeseries")
        del p["fieldConfig"]["defaults"]["unit"]
        self.assert_reports(d, f"panel '{p['title']}': no unit")

    def panel_titled(self, d, title):
        for p in promql_extract.iter_panels(d["panels"]):
            if p.get("title") == title:
                return p
        raise AssertionError(title)

    def test_reports_an_absent_figure_shown_as_zero(self):
        # Each way a panel over profwatch_mfu_ratio (absent without counted
        # FLOPs, a step time or a peak) would draw 0 for a run it has no
        # figure for.
        plants = {
            "vector(0) fallback": lambda p: p["targets"][0].update(
                expr=p["targets"][0]["expr"] + " or on() vector(0)"),
            "noValue '0'": lambda p: p["fieldConfig"]["defaults"].update(noValue="0"),
            "maps null to '0'": lambda p: p["fieldConfig"]["defaults"].update(mappings=[
                {"type": "special", "options": {"match": "null", "result": {"text": "0"}}}]),
            "'null as zero'": lambda p: p.update(nullPointMode="null as zero"),
            "sets no noValue text": lambda p: p["fieldConfig"]["defaults"].pop("noValue"),
        }
        for needle, plant in plants.items():
            with self.subTest(needle):
                d = copy.deepcopy(self.base)
                p = self.panel_titled(d, "MFU from the trace")
                self.assertIn("profwatch_mfu_ratio", p["targets"][0]["expr"])
                plant(p)
                self.assert_reports(d, f"panel 'MFU from the trace': ")
                rc, out = self.run_linter(d)
                self.assertIn(needle, out)

    def test_reports_missing_description(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d)
        p["description"] = ""
        self.assert_reports(d, f"panel '{p['title']}': no description")

    def test_reports_export_placeholder_datasource(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d)
        p["datasource"] = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
        rc, out = self.run_linter(d)
        self.assertEqual(rc, 1)
        self.assertIn("export placeholder", out)
        self.assertIn("not the datasource variable", out)

    def test_reports_target_without_datasource_variable(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d)
        p["targets"][0]["datasource"] = {"type": "prometheus", "uid": "abc123"}
        self.assert_reports(d, "target A: datasource is not the datasource variable")

    def test_reports_missing_datasource_variable(self):
        d = copy.deepcopy(self.base)
        d["templating"]["list"] = [v for v in d["templating"]["list"] if v["name"] != "datasource"]
        rc, out = self.run_linter(d)
        self.assertEqual(rc, 1)
        self.assertIn("no 'datasource' variable", out)
        self.assertIn("undefined variable '$datasource'", out)

    def test_reports_undefined_and_unused_variables(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d)
        p["targets"][0]["expr"] += ' * on() group_left() max(up{cluster="$cluster"})'
        d["templating"]["list"].append(copy.deepcopy(d["templating"]["list"][1]))
        d["templating"]["list"][-1]["name"] = "unused_var"
        rc, out = self.run_linter(d)
        self.assertEqual(rc, 1)
        self.assertIn("undefined variable '$cluster'", out)
        self.assertIn("variable 'unused_var' is defined but never used", out)

    def test_gap_colours_follow_the_gap_alert(self):
        rules = os.path.join(ROOT, "rules", "profwatch.rules.yml")
        with open(rules) as f:
            self.assertEqual(lint_dashboards.gap_alert_thresholds(f.read()), [0.15, 0.3])
        rc, out = self.run_linter(self.base, extra=["--rules", rules])
        self.assertEqual(rc, 0, out)
        d = copy.deepcopy(self.base)
        for p in promql_extract.iter_panels(d["panels"]):
            if p.get("title") == "Step − kernel gap":
                p["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] = 0.05
        rc, out = self.run_linter(d, extra=["--rules", rules])
        self.assertEqual(rc, 1, out)
        self.assertIn("colours the gap at [0.05, 0.3], the alert fires at [0.15, 0.3]", out)

    def test_reports_duplicate_panel_ids(self):
        d = copy.deepcopy(self.base)
        panels = [p for p in d["panels"] if p["type"] != "row"]
        panels[1]["id"] = panels[0]["id"]
        self.assert_reports(d, f"panel id {panels[0]['id']} is used more than once")

    def test_reports_overlapping_panels(self):
        d = copy.deepcopy(self.base)
        panels = [p for p in d["panels"] if p["type"] != "row"]
        panels[1]["gridPos"] = dict(panels[0]["gridPos"], x=panels[0]["gridPos"]["x"] + 1)
        self.assert_reports(d, "overlap")

    def test_reports_panel_past_the_grid(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d)
        p["gridPos"]["w"] = 30
        self.assert_reports(d, "extends past column 24")

    def test_reports_missing_top_level_keys(self):
        self.assert_reports({"title": "x"}, "missing or mistyped top-level key 'uid'")

    def test_reports_duplicate_uid_across_files(self):
        rc, out = self.run_linter(copy.deepcopy(self.base), copy.deepcopy(self.base))
        self.assertEqual(rc, 1)
        self.assertIn("uid 'profwatch-job-overview' also used", out)

    @unittest.skipUnless(PROMTOOL, "promtool not installed")
    def test_reports_unparsable_promql_with_its_panel(self):
        d = copy.deepcopy(self.base)
        p = first_panel(d, "timeseries")
        p["targets"][0]["expr"] = "sum by (training_job (profwatch_window_gpus"
        rc, out = self.run_linter(d, promql=True)
        self.assertEqual(rc, 1, out)
        self.assertIn("promtool check rules failed", out)
        self.assertIn(f"-> profwatch-job-overview / {p['title']} / A", out)


class ExtractTest(unittest.TestCase):
    def test_substitutes_variables_and_builtins(self):
        self.assertEqual(
            promql_extract.substitute(
                'rate(x{training_job="$training_job", run=~"${run}"}[$__rate_interval])',
                {"training_job": None, "run": None}),
            'rate(x{training_job=~".+", run=~".+"}[1m])')
        self.assertEqual(
            promql_extract.substitute('x{training_job="$training_job", run=~"$run"}',
                                      {"training_job": "j1", "run": "r1"}),
            'x{training_job="j1", run=~"r1"}')

    def test_longer_variable_names_are_not_eaten(self):
        self.assertEqual(
            promql_extract.substitute('x{a="$run", b="$run_name"}', {"run": "r", "run_name": "n"}),
            'x{a="r", b="n"}')

    def test_label_values_becomes_count_by(self):
        self.assertEqual(
            promql_extract.variable_expr('label_values(profwatch_window_gpus{training_job="$j"}, run)'),
            'count by (run) (profwatch_window_gpus{training_job="$j"})')
        self.assertIsNone(promql_extract.variable_expr("label_names()"))

    def test_extracts_every_target_of_the_shipped_dashboards(self):
        total_targets = 0
        queries = []
        for path in DASHBOARDS:
            with open(path) as f:
                dash = json.load(f)
            total_targets += sum(len(p.get("targets", [])) for p in
                                 promql_extract.iter_panels(dash["panels"]))
            queries.extend(promql_extract.extract(dash))
        panel_queries = [q for q in queries if q.kind == "panel"]
        self.assertEqual(len(panel_queries), total_targets)
        for q in queries:
            self.assertNotIn("$", q.expr, q.where())


class ProvisioningTest(unittest.TestCase):
    def setUp(self):
        try:
            import yaml  # python3-yaml, installed by scripts/install-deps.sh
        except ImportError:
            self.skipTest("python3-yaml not installed")
        self.yaml = yaml
        self.dir = os.path.join(ROOT, "dashboards", "provisioning")

    def test_datasource_is_a_prometheus(self):
        doc = self.yaml.safe_load(open(os.path.join(self.dir, "datasources", "profwatch-prometheus.yml")))
        self.assertEqual(doc["apiVersion"], 1)
        self.assertEqual([d["type"] for d in doc["datasources"]], ["prometheus"])

    def test_dashboard_provider_reads_files(self):
        doc = self.yaml.safe_load(open(os.path.join(self.dir, "dashboards", "profwatch.yml")))
        self.assertEqual(doc["apiVersion"], 1)
        (provider,) = doc["providers"]
        self.assertEqual(provider["type"], "file")
        self.assertTrue(provider["options"]["path"].startswith("/"))


if __name__ == "__main__":
    if "--promtool" in sys.argv:
        i = sys.argv.index("--promtool")
        PROMTOOL = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    unittest.main()
