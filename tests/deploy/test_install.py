#!/usr/bin/env python3
"""`cmake --install` into a temporary DESTDIR, under the prefixes users pick
(/usr for a distribution-style install, /usr/local, CMake's default): every
path the installed systemd unit names exists in the install, the unit runs
the installed binary, and the rules, dashboards and docs are where the README
says.

Usage: test_install.py --build BUILD_DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

OPTS = {"build": None}


def install(prefix, destdir):
    env = dict(os.environ, DESTDIR=destdir)
    proc = subprocess.run(["cmake", "--install", OPTS["build"], "--prefix", prefix], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(proc.stdout + proc.stderr)


def serve_installed_demo(binary, workdir):
    """Starts the installed `profwatch serve` without --watch; returns its
    log, the first /metrics text showing a demo window (or None when none
    came before the deadline) and its /runbook page then (or None)."""
    port_file = os.path.join(workdir, "port")
    log_path = os.path.join(workdir, "serve.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--settle", "1s",
                                 "--listen-port-file", port_file], stdout=log, stderr=log)
    metrics = None
    runbook = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    port = int(f.read())
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                              timeout=5).read().decode()
                if "profwatch_window_gpus{" in text:
                    metrics = text
                    runbook = urllib.request.urlopen(f"http://127.0.0.1:{port}/runbook",
                                                     timeout=5).read().decode()
                    break
            time.sleep(0.2)  # polling interval of a deadline-bounded wait
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with open(log_path) as f:
        return f.read(), metrics, runbook


def unit_paths(unit_text):
    """Absolute paths the unit names for files that must exist: the
    ExecStart binary and the Documentation= file:// targets."""
    paths = []
    for line in unit_text.splitlines():
        if line.startswith("ExecStart="):
            paths.append(line.split("=", 1)[1].split()[0])
        if line.startswith("Documentation="):
            for url in line.split("=", 1)[1].split():
                if url.startswith("file://"):
                    paths.append(url[len("file://"):])
    return paths


# The rules' default runbook link (no profwatch_runbook_base_url external
# label): a profwatch daemon's /runbook, as the rules file spells it
# (tests/rules/check_alert_annotations.py checks every alert has it).
REPO_RUNBOOK_DEFAULT = ('http://{{ with query `up{job=~".*profwatch.*"} == 1` | sortByLabel "instance" '
                        '}}{{ . | first | label "instance" }}{{ else }}{{ $labels.instance }}{{ end '
                        '}}/runbook')


def runbook_urls(rules_path):
    """Each alert's default runbook link (where Prometheus sets no
    profwatch_runbook_base_url external label): the template's else-branch
    and the anchor after it, with the YAML's folded lines joined."""
    with open(rules_path, encoding="utf-8") as f:
        text = re.sub(r"\s*\n\s*", " ", f.read())
    return [m[0] + m[1] for m in re.findall(
        r"\{\{ else \}\}(http://\{\{ with query .*?/runbook|[^{}\s]+\.md)\{\{ end \}\}(#[\w\-]+)",
        text)]


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="profwatch-install-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_prefix(self, prefix):
        dest = os.path.join(self.tmp, prefix.strip("/").replace("/", "_"))
        install(prefix, dest)
        root = dest + prefix
        unit = os.path.join(root, "lib", "systemd", "system", "profwatch@.service")
        with open(unit, encoding="utf-8") as f:
            text = f.read()
        paths = unit_paths(text)
        self.assertIn(f"{prefix}/bin/profwatch", paths)
        self.assertIn(f"{prefix}/share/doc/profwatch/README.md", paths)
        for p in paths:
            self.assertTrue(os.path.isfile(dest + p), f"the unit names {p}, which is not installed")
        self.assertTrue(os.access(dest + f"{prefix}/bin/profwatch", os.X_OK))
        # one program: nothing else goes to bin/
        self.assertEqual(os.listdir(dest + f"{prefix}/bin"), ["profwatch"])
        # the installed binary is the product: it answers --version
        out = subprocess.run([dest + f"{prefix}/bin/profwatch", "version"], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        # the demo `serve` uses without --watch is installed, and the
        # installed binary serves it (not the build tree's copy)
        demo = os.path.join(root, "share", "profwatch", "demo")
        traces = [f for _, _, files in os.walk(demo) for f in files if f.endswith(".trace.json.gz")]
        self.assertGreater(len(traces), 0, demo)
        log, metrics, runbook = serve_installed_demo(dest + f"{prefix}/bin/profwatch", self.tmp)
        self.assertIn(f"serving the bundled demo job directory path={demo}", log)
        self.assertIsNotNone(metrics, log)
        self.assertIn('training_job="demo-llama-8b"', metrics)
        for rel in ("share/profwatch/rules/profwatch.rules.yml",
                    "share/profwatch/dashboards/profwatch-job-overview.json",
                    "share/doc/profwatch/docs/alerts-and-dashboards.md",
                    "share/doc/profwatch/examples/profwatch.env.example"):
            self.assertTrue(os.path.isfile(os.path.join(root, rel)), rel)
        # every alert links, by default, the runbook the daemon serves, and
        # the installed daemon's /runbook has each link's anchor
        urls = runbook_urls(os.path.join(root, "share", "profwatch", "rules", "profwatch.rules.yml"))
        self.assertGreater(len(urls), 10)
        self.assertIsNotNone(runbook, log)
        for url in urls:
            self.assertTrue(url.startswith(REPO_RUNBOOK_DEFAULT + "#"), url)
            self.assertIn(f' id="{url.split("#")[1]}"', runbook, url)
        # only the install prefix changed: the rest of the unit is the repository's,
        # which test_deploy.py checks with systemd-analyze verify
        repo_unit = os.path.join(os.path.dirname(__file__), "..", "..", "deploy", "systemd",
                                 "profwatch@.service")
        with open(repo_unit, encoding="utf-8") as f:
            expected = f.read().replace("/usr/bin/profwatch ", f"{prefix}/bin/profwatch ")
            expected = expected.replace("file:///usr/share/doc/profwatch/",
                                        f"file://{prefix}/share/doc/profwatch/")
        self.assertEqual(text, expected)
        return dest, text

    def test_usr_prefix(self):
        self.check_prefix("/usr")

    def test_installed_binary_serves_https_with_the_runtime_libraries(self):
        # Debian's civetweb loads OpenSSL at run time by the unversioned names
        # (libssl.so, libcrypto.so: only libssl-dev has them) and looks up a
        # function OpenSSL 3 renamed; profwatch answers both for it
        # (exporter/src/web/civetweb_compat.cc). So the installed binary
        # serves HTTPS loading only the versioned libraries, which the
        # runtime packages (libssl3) ship.
        if shutil.which("openssl") is None:
            self.skipTest("needs the openssl command-line tool")
        import ssl
        dest = os.path.join(self.tmp, "usr")
        install("/usr", dest)
        binary = dest + "/usr/bin/profwatch"
        for args in (["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-nodes", "-keyout", "tls.key", "-out", "tls.crt", "-days", "1",
                      "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],):
            subprocess.run(["openssl", *args], cwd=self.tmp, check=True, capture_output=True)
        web = os.path.join(self.tmp, "web.yml")
        with open(web, "w") as f:
            f.write(f"tls_server_config:\n  cert_file: {self.tmp}/tls.crt\n"
                    f"  key_file: {self.tmp}/tls.key\n")
        port_file = os.path.join(self.tmp, "tls.port")
        debug = os.path.join(self.tmp, "ld")
        env = dict(os.environ, LD_DEBUG="files", LD_DEBUG_OUTPUT=debug)
        with open(os.path.join(self.tmp, "tls.log"), "w") as log:
            proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0",
                                     "--listen-port-file", port_file, "--web.config.file", web],
                                    stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(port_file) and time.monotonic() < deadline:
                self.assertIsNone(proc.poll(), "serve exited")
                time.sleep(0.1)  # polling interval of a deadline-bounded wait
            with open(port_file) as f:
                port = int(f.read())
            ctx = ssl.create_default_context(cafile=os.path.join(self.tmp, "tls.crt"))
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/-/healthy", context=ctx,
                                        timeout=10) as r:
                self.assertEqual(r.status, 200)
                self.assertEqual(r.read(), b"OK\n")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        loaded = ""
        for name in os.listdir(self.tmp):
            if name.startswith("ld."):
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    loaded += f.read()
        self.assertIn("file=libssl.so.3 ", loaded)
        self.assertNotIn("file=libssl.so [", loaded)
        self.assertNotIn("file=libcrypto.so [", loaded)

    def test_runbook_base_url_set_by_the_operator(self):
        # -DPROFWATCH_RUNBOOK_BASE_URL=... : the install step that writes the
        # rules, run as `cmake --install` runs it, with that base.
        base = "https://wiki.example.com/profwatch/docs/"
        env = dict(os.environ, DESTDIR=self.tmp)
        proc = subprocess.run(
            ["cmake", f"-DPROFWATCH_RULES_DIR={REPO}/rules", "-DPROFWATCH_DATADIR=share",
             "-DPROFWATCH_DOCDIR=share/doc/profwatch", "-DCMAKE_INSTALL_PREFIX=/opt/pw",
             f"-DPROFWATCH_RUNBOOK_BASE_URL={base}", "-P",
             os.path.join(REPO, "cmake", "install_rules.cmake")],
            env=env, capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        installed = os.path.join(self.tmp, "opt", "pw", "share", "profwatch", "rules",
                                 "profwatch.rules.yml")
        repo_urls = runbook_urls(os.path.join(REPO, "rules", "profwatch.rules.yml"))
        self.assertGreater(len(repo_urls), 10)
        self.assertEqual(runbook_urls(installed),
                         [u.replace(REPO_RUNBOOK_DEFAULT, base + "alerts-and-dashboards.md")
                          for u in repo_urls])
        # Nothing else changed: only the default, never the operator's
        # external-label branch.
        with open(installed, encoding="utf-8") as a, open(
                os.path.join(REPO, "rules", "profwatch.rules.yml"), encoding="utf-8") as b:
            ours, theirs = a.read(), b.read()
        self.assertEqual(ours.count("profwatch_runbook_base_url }}"),
                         theirs.count("profwatch_runbook_base_url }}"))
        self.assertNotIn("/runbook{{ end }}", ours)
        self.assertEqual(re.sub(r"\{\{ else \}\}https://wiki\.example\.com/profwatch/docs/"
                                r"alerts-and-dashboards\.md\{\{ end \}\}", "", ours),
                         re.sub(r"\{\{ else \}\}http://\{\{ with query .*?/runbook\{\{ end \}\}",
                                "", theirs, flags=re.S))
        promtool = shutil.which("promtool")
        if promtool:
            check = subprocess.run([promtool, "check", "rules", installed], capture_output=True,
                                   text=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_usr_local_prefix(self):
        _, text = self.check_prefix("/usr/local")
        self.assertNotRegex(text, r"ExecStart=/usr/bin/")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args, rest = ap.parse_known_args()
    OPTS["build"] = os.path.abspath(args.build)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
