#!/usr/bin/env python3
"""Tests of deploy/: the systemd unit, Kubernetes manifests, the Slurm
sidecar wrapper, the Prometheus scrape config and the Dockerfile.

Uses real tools where the machine has them (systemd-analyze, promtool,
bash, shellcheck) and python3-yaml for the manifests.

  test_deploy.py [--profwatch BIN] [--promtool BIN] [unittest args]

--profwatch: when the binary's `serve --help` works, every flag the deploy
files pass to `profwatch serve` must appear in it (catches drift between the
examples and the daemon).
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
OPTS = {"profwatch": None, "promtool": shutil.which("promtool")}

try:
    import yaml  # python3-yaml (scripts/install-deps.sh)
except ImportError:  # pragma: no cover - reported as skips
    yaml = None


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse_unit(text):
    """systemd unit -> {section: [(key, value), ...]} (keys may repeat)."""
    sections, current = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            current = sections.setdefault(m.group(1), [])
            continue
        assert current is not None, f"key outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"not key=value: {line}"
        current.append((key.strip(), value.strip()))
    return sections


def parse_env(text):
    env = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep and re.match(r"^[A-Z_][A-Z0-9_]*$", key), f"bad env line: {raw}"
        env[key] = value
    return env


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# --------------------------------------------------------------- systemd
class SystemdUnitTest(unittest.TestCase):
    UNIT = os.path.join(DEPLOY, "systemd", "profwatch@.service")
    ENV = os.path.join(DEPLOY, "systemd", "profwatch.env.example")

    def setUp(self):
        self.unit = parse_unit(read(self.UNIT))
        self.service = dict(self.unit["Service"])

    def test_hardening_and_priority_keys(self):
        s = self.service
        expect = {
            "NoNewPrivileges": "yes",
            "ProtectSystem": "strict",
            "ProtectHome": "read-only",
            "PrivateTmp": "yes",
            "CPUSchedulingPolicy": "batch",
            "IOSchedulingClass": "idle",
            "EnvironmentFile": "/etc/profwatch/%i.env",
            "StateDirectory": "profwatch/%i",
            "CapabilityBoundingSet": "",
        }
        for key, value in expect.items():
            self.assertEqual(s.get(key), value, key)
        self.assertGreaterEqual(int(s["Nice"]), 5)
        self.assertRegex(s["MemoryMax"], r"^\d+[KMG]$")
        self.assertRegex(s["CPUQuota"], r"^\d+%$")
        self.assertLessEqual(int(s["CPUQuota"].rstrip("%")), 100)
        # Room for the default --max-followed-logs (4096 open logs) and the
        # 1,024 descriptors serve counts beside them (cmd_serve.cc).
        self.assertGreaterEqual(int(s["LimitNOFILE"]), 4096 + 1024)
        self.assertEqual(dict(self.unit["Install"]).get("WantedBy"), "multi-user.target")

    def test_start_waits_for_the_health_endpoint_of_the_same_address(self):
        post = self.service["ExecStartPost"]
        self.assertTrue(post.startswith("/usr/bin/profwatch probe "), post)
        self.assertIn("--listen ${PROFWATCH_LISTEN}", post)
        self.assertIn("--listen ${PROFWATCH_LISTEN}", self.service["ExecStart"])
        # The probe's door flags (TLS, basic auth) come from the env file,
        # which sets the variable (empty: plain HTTP).
        self.assertIn("$PROFWATCH_PROBE_ARGS", post)
        self.assertIn("PROFWATCH_PROBE_ARGS", parse_env(read(self.ENV)))

    def test_exec_start_uses_state_directory_and_env(self):
        exec_start = self.service["ExecStart"]
        self.assertTrue(exec_start.startswith("/usr/bin/profwatch serve "), exec_start)
        self.assertIn("--state ${STATE_DIRECTORY}/state.json", exec_start)
        env = parse_env(read(self.ENV))
        for var in re.findall(r"\$\{?([A-Z_]+)\}?", exec_start):
            if var == "STATE_DIRECTORY":
                continue  # set by systemd from StateDirectory=
            self.assertIn(var, env, f"ExecStart uses ${var}, the env example does not set it")
        self.assertTrue(env["PROFWATCH_WATCH"].startswith("/"))
        self.assertRegex(env["PROFWATCH_LISTEN"], r"^[\d.]+:\d+$")

    def _verify(self, unit_text):
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze not installed (apt-get install systemd)")
        with tempfile.TemporaryDirectory(prefix="profwatch-unit-") as tmp:
            binary = OPTS["profwatch"] if OPTS["profwatch"] and os.access(OPTS["profwatch"], os.X_OK) else "/bin/true"
            with open(os.path.join(tmp, "profwatch@.service"), "w") as f:
                f.write(unit_text.replace("/usr/bin/profwatch", os.path.abspath(binary)))
            os.symlink("profwatch@.service", os.path.join(tmp, "profwatch@test.service"))
            proc = subprocess.run([tool, "--man=no", "verify", os.path.join(tmp, "profwatch@test.service")],
                                  capture_output=True, text=True, timeout=60)
        out = (proc.stdout + proc.stderr).strip()
        # Failures of the environment, not of the unit (containers without
        # cgroups or a systemd instance): skip, saying why.
        env_failures = ("Failed to initialize manager", "Failed to set up the root directory",
                        "System has not been booted with systemd", "Failed to allocate manager",
                        "Failed to create /init.scope control group", "Operation not permitted")
        for marker in env_failures:
            if marker in out and "profwatch@" not in out.split(marker)[0][-200:]:
                self.skipTest(f"systemd-analyze cannot run here: {out.splitlines()[0]}")
        return proc.returncode, out

    def test_systemd_analyze_verify_is_clean(self):
        rc, out = self._verify(read(self.UNIT))
        self.assertEqual(rc, 0, out)
        # verify only warns (exit 0) on unknown keys and bad values: any
        # output at all is a problem.
        self.assertEqual(out, "")

    def test_systemd_analyze_verify_reports_a_bad_unit(self):
        bad = read(self.UNIT).replace("NoNewPrivileges=yes", "NoNewPrivilegez=yes").replace(
            "CPUQuota=100%", "CPUQuota=lots")
        rc, out = self._verify(bad)
        self.assertIn("NoNewPrivilegez", out)
        self.assertIn("CPU quota", out)


# ------------------------------------------------------------ kubernetes
@unittest.skipIf(yaml is None, "python3-yaml not installed")
def project_version():
    """VERSION of project() in the top-level CMakeLists.txt."""
    m = re.search(r"project\(profwatch VERSION ([0-9.]+)", read(os.path.join(ROOT, "CMakeLists.txt")))
    return m.group(1)


class KubernetesTest(unittest.TestCase):
    def load(self, name):
        docs = [d for d in yaml.safe_load_all(read(os.path.join(DEPLOY, "kubernetes", name))) if d]
        for d in docs:
            for key in ("apiVersion", "kind", "metadata"):
                self.assertIn(key, d, f"{name}: document without {key}")
            self.assertTrue(d["metadata"].get("name"), f"{name}: {d['kind']} without a name")
        return docs

    def check_profwatch_container(self, c, where):
        self.assertEqual(c["args"][0], "serve", where)
        # a pinned release tag, the project's version, never :latest
        self.assertEqual(c["image"].rsplit(":", 1)[1], project_version(), where)
        self.assertTrue(any(a.startswith("--watch=") for a in c["args"]), where)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertIn("metrics", ports, where)
        listen = [a for a in c["args"] if a.startswith("--listen=")]
        self.assertEqual(listen, [f"--listen=0.0.0.0:{ports['metrics']}"], where)
        sc = c["securityContext"]
        self.assertIs(sc["allowPrivilegeEscalation"], False, where)
        self.assertIs(sc["readOnlyRootFilesystem"], True, where)
        self.assertIs(sc["runAsNonRoot"], True, where)
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"], where)
        self.assertIn("memory", c["resources"]["limits"], where)
        self.assertIn("cpu", c["resources"]["limits"], where)
        # probes on the daemon's health endpoints, not on a full scrape
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/-/ready", "port": "metrics"},
                         where)
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/-/healthy", "port": "metrics"},
                         where)
        self.assertEqual(c["startupProbe"]["httpGet"], {"path": "/-/ready", "port": "metrics"},
                         where)
        return ports["metrics"]

    def mount(self, container, volume):
        (m,) = [m for m in container["volumeMounts"] if m["name"] == volume]
        return m

    def test_native_sidecar_shares_outputs_read_only(self):
        (job,) = self.load("training-job-with-sidecar.yaml")
        self.assertEqual((job["apiVersion"], job["kind"]), ("batch/v1", "Job"))
        spec = job["spec"]["template"]["spec"]
        (sidecar,) = [c for c in spec["initContainers"] if c["name"] == "profwatch"]
        self.assertEqual(sidecar.get("restartPolicy"), "Always")
        (trainer,) = spec["containers"]
        self.check_profwatch_container(sidecar, "sidecar")
        watch = [a.split("=", 1)[1] for a in sidecar["args"] if a.startswith("--watch=")][0]
        out_pw = self.mount(sidecar, "outputs")
        out_tr = self.mount(trainer, "outputs")
        self.assertIs(out_pw.get("readOnly"), True)
        self.assertFalse(out_tr.get("readOnly", False))
        self.assertEqual(out_pw["mountPath"], watch)
        self.assertIn("outputs", [v["name"] for v in spec["volumes"]])
        # state goes to a writable volume (the root file system is read-only)
        state = [a.split("=", 1)[1] for a in sidecar["args"] if a.startswith("--state=")][0]
        self.assertTrue(any(state.startswith(m["mountPath"] + "/") and not m.get("readOnly")
                            for m in sidecar["volumeMounts"]))

    def test_daemonset_watches_host_path_read_only(self):
        (ds,) = self.load("daemonset.yaml")
        self.assertEqual((ds["apiVersion"], ds["kind"]), ("apps/v1", "DaemonSet"))
        tmpl = ds["spec"]["template"]
        for k, v in ds["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(tmpl["metadata"]["labels"].get(k), v)
        (c,) = tmpl["spec"]["containers"]
        self.check_profwatch_container(c, "daemonset")
        vols = {v["name"]: v for v in tmpl["spec"]["volumes"]}
        self.assertIn("hostPath", vols["outputs"])
        self.assertIs(self.mount(c, "outputs").get("readOnly"), True)

    def test_daemonset_runs_on_gpu_nodes_of_every_vendor_it_tolerates(self):
        (ds,) = self.load("daemonset.yaml")
        spec = ds["spec"]["template"]["spec"]
        self.assertNotIn("nodeSelector", spec)  # a nodeSelector cannot say "NVIDIA or AMD"
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        selected = {e["key"].split("/")[0] for t in terms for e in t["matchExpressions"]}
        vendors = {"nvidia": "nvidia.com", "amd": "feature.node.kubernetes.io"}
        tolerated = {t["key"].split(".")[0] for t in spec["tolerations"]}
        self.assertEqual(tolerated, {"nvidia", "amd"})
        for vendor in tolerated:
            self.assertIn(vendors[vendor], selected, f"{vendor} is tolerated but never selected")

    def test_statefulset_shards_by_pod_name_over_a_read_only_job_tree(self):
        docs = {d["kind"]: d for d in self.load("statefulset-sharded.yaml")}
        sts, svc = docs["StatefulSet"], docs["Service"]
        self.assertEqual((sts["apiVersion"], sts["kind"]), ("apps/v1", "StatefulSet"))
        tmpl = sts["spec"]["template"]
        for k, v in sts["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(tmpl["metadata"]["labels"].get(k), v)
        # the governing Service is headless and selects the pods
        self.assertEqual(sts["spec"]["serviceName"], svc["metadata"]["name"])
        self.assertEqual(svc["spec"]["clusterIP"], "None")
        for k, v in svc["spec"]["selector"].items():
            self.assertEqual(tmpl["metadata"]["labels"].get(k), v)
        (c,) = tmpl["spec"]["containers"]
        self.check_profwatch_container(c, "statefulset")
        # I from the pod name (profwatch-<ordinal>), N equal to the replicas
        shard = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--shard=")]
        self.assertEqual(shard, [f"$(POD_NAME)/{sts['spec']['replicas']}"])
        (env,) = [e for e in c["env"] if e["name"] == "POD_NAME"]
        self.assertEqual(env["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")
        # the shared job tree read-only, the state on a per-pod volume
        watch = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--watch=")][0]
        jobs = self.mount(c, "jobs")
        self.assertEqual(jobs["mountPath"], watch)
        self.assertIs(jobs.get("readOnly"), True)
        vols = {v["name"]: v for v in tmpl["spec"]["volumes"]}
        self.assertIs(vols["jobs"]["persistentVolumeClaim"].get("readOnly"), True)
        state = [a.split("=", 1)[1] for a in c["args"] if a.startswith("--state=")][0]
        state_mount = self.mount(c, "state")
        self.assertTrue(state.startswith(state_mount["mountPath"] + "/"))
        self.assertFalse(state_mount.get("readOnly", False))
        self.assertIn("state", [t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]])

    def test_podmonitor_and_service_select_both_pod_kinds(self):
        docs = {d["kind"]: d for d in self.load("podmonitor.yaml")}
        pm, svc = docs["PodMonitor"], docs["Service"]
        self.assertEqual(pm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(svc["apiVersion"], "v1")
        self.assertIn("profwatch", pm["metadata"]["name"])  # ProfwatchExporterDown's job match
        # sidecars live in the training jobs' namespaces
        self.assertEqual(pm["spec"]["namespaceSelector"], {"any": True})
        (endpoint,) = pm["spec"]["podMetricsEndpoints"]
        self.assertEqual(endpoint["port"], "metrics")
        self.assertEqual(endpoint["path"], "/metrics")
        (job,) = self.load("training-job-with-sidecar.yaml")
        (ds,) = self.load("daemonset.yaml")
        for name, labels in (("job", job["spec"]["template"]["metadata"]["labels"]),
                             ("daemonset", ds["spec"]["template"]["metadata"]["labels"])):
            for k, v in pm["spec"]["selector"]["matchLabels"].items():
                self.assertEqual(labels.get(k), v, f"PodMonitor does not select the {name} pods")
            for k, v in svc["spec"]["selector"].items():
                self.assertEqual(labels.get(k), v, f"Service does not select the {name} pods")
        # the sharded StatefulSet's pods: one PodMonitor target per shard
        (sts,) = [d for d in self.load("statefulset-sharded.yaml") if d["kind"] == "StatefulSet"]
        for k, v in pm["spec"]["selector"]["matchLabels"].items():
            self.assertEqual(sts["spec"]["template"]["metadata"]["labels"].get(k), v,
                             "PodMonitor does not select the sharded StatefulSet's pods")
        (port,) = svc["spec"]["ports"]
        self.assertEqual(port["targetPort"], "metrics")


# ----------------------------------------------------------------- slurm
class SlurmTest(unittest.TestCase):
    SCRIPT = os.path.join(DEPLOY, "slurm", "profwatch-sidecar.sh")
    SBATCH = os.path.join(DEPLOY, "slurm", "train.sbatch")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="profwatch-slurm-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_bash_syntax(self):
        for path in (self.SCRIPT, self.SBATCH):
            proc = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_shellcheck(self):
        tool = shutil.which("shellcheck")
        if not tool:
            self.skipTest("shellcheck not installed")
        proc = subprocess.run([tool, "-x", self.SCRIPT, self.SBATCH], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_file_sd_is_valid_with_job_labels(self):
        out = os.path.join(self.tmp, "t.json")
        env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_JOB_NAME='llama "7b"', PROFWATCH_PORT="9555")
        proc = subprocess.run([self.SCRIPT, "file-sd", out, "gpu-001", "gpu-002"], env=env,
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            groups = json.load(f)
        self.assertEqual(groups, [{"targets": ["gpu-001:9555", "gpu-002:9555"],
                                   "labels": {"slurm_job_name": 'llama "7b"', "slurm_job_id": "4242",
                                              "slurm_cluster": ""}}])
        self.assertEqual([n for n in os.listdir(self.tmp)], ["t.json"])  # no temp file left

    def test_file_sd_never_sets_the_exporters_training_job_label(self):
        # A target label training_job would rename the exporter's own
        # training_job (the job directory) to exported_training_job.
        out = os.path.join(self.tmp, "t.json")
        env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_JOB_NAME="llama")
        env.pop("PROFWATCH_PORT", None)
        proc = subprocess.run([self.SCRIPT, "file-sd", out, "gpu-001"], env=env,
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(out) as f:
            labels = json.load(f)[0]["labels"]
        self.assertNotIn("training_job", labels)
        self.assertEqual(labels["slurm_job_name"], "llama")

    def test_port_is_derived_from_the_job_id_so_jobs_on_a_node_differ(self):
        ports = []
        for job_id in ("4242", "4243"):
            out = os.path.join(self.tmp, f"{job_id}.json")
            env = dict(os.environ, SLURM_JOB_ID=job_id)
            env.pop("PROFWATCH_PORT", None)
            proc = subprocess.run([self.SCRIPT, "file-sd", out, "gpu-001"], env=env,
                                  capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out) as f:
                ports.append(json.load(f)[0]["targets"][0])
        self.assertEqual(ports, ["gpu-001:24242", "gpu-001:24243"])

    def test_file_sd_without_nodes_fails(self):
        proc = subprocess.run([self.SCRIPT, "file-sd", os.path.join(self.tmp, "t.json")],
                              capture_output=True, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("usage", proc.stderr)

    def fake_slurm(self, nodes):
        """Fake Slurm in a bin dir: scontrol expands the node list to
        `nodes`, srun records its arguments and then behaves like a running
        step until SIGTERM. Returns (bin dir, srun's argument log)."""
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        srun_log = os.path.join(self.tmp, "srun.log")
        with open(os.path.join(bindir, "scontrol"), "w") as f:
            f.write("#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] || exit 2\n" +
                    "".join(f"echo {n}\n" for n in nodes))
        with open(os.path.join(bindir, "srun"), "w") as f:
            f.write("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > \"$FAKE_SRUN_LOG\"\n"
                    "trap 'echo TERM >> \"$FAKE_SRUN_LOG.signals\"; exit 0' TERM\n"
                    "while :; do sleep 0.05; done\n")
        for n in ("scontrol", "srun"):
            os.chmod(os.path.join(bindir, n), 0o755)
        return bindir, srun_log

    def test_start_and_stop_one_overlapping_step(self):
        bindir, srun_log = self.fake_slurm(["gpu-001", "gpu-002"])
        sd_dir = os.path.join(self.tmp, "file_sd")
        os.makedirs(sd_dir)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], FAKE_SRUN_LOG=srun_log,
                   TMPDIR=self.tmp, SLURM_JOB_ID="77", SLURM_JOB_NAME="llama",
                   SLURM_JOB_NODELIST="gpu-[001-002]", PROFWATCH_FILE_SD_DIR=sd_dir,
                   PROFWATCH_WATCH="/data/jobs/llama", PROFWATCH_EXTRA_ARGS="--expected-gpus 8")
        proc = subprocess.run([self.SCRIPT, "start"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        pid_file = os.path.join(self.tmp, "profwatch-sidecar-77", "srun.pid")
        pid = int(read(pid_file))
        try:
            wait_for(lambda: os.path.exists(srun_log), 10, "srun to start")
            args = read(srun_log).splitlines()
            self.assertIn("--overlap", args)
            self.assertIn("--ntasks-per-node=1", args)
            self.assertIn("--nodes=2", args)
            cmd = args[args.index("serve") - 1:]
            self.assertEqual(cmd[:3], ["profwatch", "serve", "--watch"])
            self.assertEqual(cmd[3], "/data/jobs/llama")
            self.assertIn("--host-filter", cmd)
            self.assertEqual(cmd[-2:], ["--expected-gpus", "8"])
            with open(os.path.join(sd_dir, "slurm-77.json")) as f:
                self.assertEqual(json.load(f)[0]["targets"], ["gpu-001:20077", "gpu-002:20077"])
            self.assertIn("0.0.0.0:20077", cmd)
            # a second start while running is refused
            again = subprocess.run([self.SCRIPT, "start"], env=env, capture_output=True, text=True, timeout=30)
            self.assertNotEqual(again.returncode, 0)
            self.assertIn("already running", again.stderr)

            proc = subprocess.run([self.SCRIPT, "stop"], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(sd_dir, "slurm-77.json")))
            self.assertFalse(os.path.exists(pid_file))
            self.assertEqual(read(srun_log + ".signals").split(), ["TERM"])
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def test_profwatch_job_watches_one_jobs_directory_under_that_name(self):
        # train.sbatch watches its own output directory: one job, so the
        # sidecar passes it as --watch JOB=DIR (a bare DIR is a directory
        # of jobs, whose children would be jobs of their own).
        bindir, srun_log = self.fake_slurm(["gpu-001"])
        sd_dir = os.path.join(self.tmp, "file_sd")
        os.makedirs(sd_dir)
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], FAKE_SRUN_LOG=srun_log,
                   TMPDIR=self.tmp, SLURM_JOB_ID="78", SLURM_JOB_NAME="llama",
                   SLURM_JOB_NODELIST="gpu-001", PROFWATCH_FILE_SD_DIR=sd_dir,
                   PROFWATCH_WATCH="/data/outputs/78-llama", PROFWATCH_JOB="78-llama")
        proc = subprocess.run([self.SCRIPT, "start"], env=env, capture_output=True, text=True,
                              timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        pid = int(read(os.path.join(self.tmp, "profwatch-sidecar-78", "srun.pid")))
        try:
            wait_for(lambda: os.path.exists(srun_log) and "serve" in read(srun_log).split("\n"),
                     10, "srun to start")
            args = read(srun_log).splitlines()
            self.assertEqual(args[args.index("serve") + 1:args.index("serve") + 3],
                             ["--watch", "78-llama=/data/outputs/78-llama"])
            proc = subprocess.run([self.SCRIPT, "stop"], env=env, capture_output=True, text=True,
                                  timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        finally:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ------------------------------------------------------------ prometheus
class PrometheusConfigTest(unittest.TestCase):
    def test_promtool_check_config(self):
        promtool = OPTS["promtool"]
        if not promtool:
            self.skipTest("promtool not installed (apt-get install prometheus)")
        text = read(os.path.join(DEPLOY, "prometheus", "prometheus.yml"))
        with tempfile.TemporaryDirectory(prefix="profwatch-promcfg-") as tmp:
            os.makedirs(os.path.join(tmp, "rules"))
            os.makedirs(os.path.join(tmp, "file_sd"))
            shutil.copy(os.path.join(ROOT, "rules", "profwatch.rules.yml"), os.path.join(tmp, "rules"))
            # a real target file from the Slurm wrapper, so promtool checks it too
            subprocess.run([SlurmTest.SCRIPT, "file-sd", os.path.join(tmp, "file_sd", "slurm-1.json"),
                            "gpu-001"], check=True, env=dict(os.environ, SLURM_JOB_ID="1"))
            self.assertIn("/etc/prometheus/rules/", text)
            self.assertIn("/shared/prometheus/file_sd/profwatch/", text)
            text = text.replace("/etc/prometheus/rules/", tmp + "/rules/").replace(
                "/shared/prometheus/file_sd/profwatch/", tmp + "/file_sd/")
            cfg = os.path.join(tmp, "prometheus.yml")
            with open(cfg, "w") as f:
                f.write(text)
            proc = subprocess.run([promtool, "check", "config", cfg], capture_output=True, text=True, timeout=60)
        out = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 0, out)
        self.assertNotIn("WARNING", out)
        with open(os.path.join(ROOT, "rules", "profwatch.rules.yml")) as f:
            rules = sum(1 for line in f if line.lstrip().startswith(("- record:", "- alert:")))
        self.assertGreater(rules, 0)
        self.assertIn(f"SUCCESS: {rules} rules found", out)


# ---------------------------------------------------------------- docker
def install_deps_packages():
    text = read(os.path.join(ROOT, "scripts", "install-deps.sh"))
    m = re.search(r"^packages=\(\n(.*?)^\)", text, re.S | re.M)
    assert m, "packages=( ... ) not found in scripts/install-deps.sh"
    pkgs = []
    for line in m.group(1).splitlines():
        pkgs.extend(line.split("#", 1)[0].split())
    return pkgs


def dockerfile_build_packages():
    text = read(os.path.join(DEPLOY, "docker", "Dockerfile"))
    m = re.search(r"# BEGIN install-deps packages.*?\n(.*?)# END install-deps packages", text, re.S)
    assert m, "BEGIN/END install-deps markers not found in the Dockerfile"
    block = m.group(1).replace("\\\n", " ")
    m = re.search(r"--no-install-recommends(.*?)&&", block, re.S)
    assert m, "no apt-get install ... --no-install-recommends in the marked block"
    return m.group(1).split()


class DockerfileTest(unittest.TestCase):
    def test_build_stage_installs_exactly_the_install_script_packages(self):
        script, docker = install_deps_packages(), dockerfile_build_packages()
        self.assertGreater(len(script), 10)
        self.assertEqual(sorted(set(docker)), sorted(docker), "duplicates in the Dockerfile list")
        self.assertEqual(sorted(docker), sorted(script),
                         "deploy/docker/Dockerfile and scripts/install-deps.sh install different "
                         f"packages: only in Dockerfile {sorted(set(docker) - set(script))}, only in "
                         f"install-deps.sh {sorted(set(script) - set(docker))}")

    def test_quick_start_installs_no_test_toolchain_and_touches_no_service(self):
        # The demo command must not install the test toolchain nor stop the
        # Prometheus a monitoring host already runs.
        script = install_deps_packages()
        for test_only in ("prometheus", "clang", "libgtest-dev", "systemd"):
            self.assertNotIn(test_only, script)
        for name in ("install-deps.sh", "run-demo.sh", "test.sh"):
            text = read(os.path.join(ROOT, "scripts", name))
            self.assertNotRegex(text, r"(?m)^[^#]*\bsystemctl\b", name)
        self.assertIn("install-deps.sh --test", read(os.path.join(ROOT, "scripts", "test.sh")))

    def test_debian_12_base_and_non_root_runtime(self):
        text = read(os.path.join(DEPLOY, "docker", "Dockerfile"))
        froms = re.findall(r"^FROM (\S+)", text, re.M)
        self.assertEqual(froms, ["debian:12", "debian:12-slim"])
        self.assertRegex(text, r"(?m)^USER 65534")

    def test_runtime_stage_installs_the_package_of_every_linked_library(self):
        # The slim runtime gets only the listed libraries: each shared library
        # the built binary links must come from one of them (or the base image).
        binary = OPTS["profwatch"]
        if not binary or shutil.which("ldd") is None or shutil.which("dpkg") is None:
            self.skipTest("needs the built binary, ldd and dpkg")
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        libs = re.findall(r"=> (/\S+)", ldd)
        if any(re.search(r"lib[at]san|libubsan", lib) for lib in libs):
            self.skipTest("sanitizer build: links the sanitizer runtimes, not the release set")
        text = read(os.path.join(DEPLOY, "docker", "Dockerfile"))
        runtime = text.split("FROM debian:12-slim", 1)[1].replace("\\\n", " ")
        m = re.search(r"--no-install-recommends(.*?)&&", runtime, re.S)
        self.assertIsNotNone(m, "no apt-get install in the runtime stage")
        listed = set(m.group(1).split()) | {"libc6", "libstdc++6", "libgcc-s1"}  # in the base

        def owners(paths):
            """Path -> the (first) package owning it, by one `dpkg -S` for all
            paths (a call per library searched every package list again)."""
            run = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True)
            found = {}
            for line in run.stdout.splitlines():  # "pkg[:arch][, pkg2...]: /path"
                if line.startswith("diversion "):
                    continue
                pkgs, sep, path = line.partition(": ")
                if sep:
                    found[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
            return found, run.stderr

        real = owners([os.path.realpath(lib) for lib in libs])[0]
        # /usr/lib vs /lib: ask for the path as linked too.
        linked, errors = owners(libs)
        for lib in libs:
            package = real.get(os.path.realpath(lib)) or linked.get(lib)
            self.assertIsNotNone(package, f"{lib}: no package owns it ({errors})")
            self.assertIn(package, listed, f"{binary} links {lib} from {package}, which the "
                          "Dockerfile's runtime stage does not install")

    def test_image_gets_the_cmake_install_and_serves_the_demo_by_default(self):
        # The build stage installs what the README's install does (cmake
        # --install, with the demo the default command serves); the runtime
        # copies that tree, so the image and an install cannot drift apart.
        text = read(os.path.join(DEPLOY, "docker", "Dockerfile"))
        build, runtime = text.split("FROM debian:12-slim", 1)
        self.assertIn("-DPROFWATCH_TESTS=OFF", build)
        self.assertIn("DESTDIR=/out cmake --install /build --prefix /usr", build)
        copies = re.findall(r"(?m)^COPY --from=build (.+)$", runtime)
        self.assertEqual(copies, ["/out/usr/ /usr/"])
        self.assertEqual(re.findall(r"(?m)^ENTRYPOINT (.+)$", runtime), ['["/usr/bin/profwatch"]'])
        self.assertEqual(re.findall(r"(?m)^CMD (.+)$", runtime), ['["serve"]'])
        # the health check asks the liveness endpoint through the binary itself
        self.assertRegex(runtime, r'HEALTHCHECK .*\\\n\s+CMD \["/usr/bin/profwatch", "probe", '
                                  r'"--listen", "127.0.0.1:19474"')
        self.assertNotIn("profwatch-serve", text)
        install_rules = read(os.path.join(ROOT, "tools", "tracegen", "CMakeLists.txt"))
        self.assertRegex(install_rules, r"install\(DIRECTORY \$\{PROFWATCH_DEMO_DIR\}/ DESTINATION "
                                        r"\$\{CMAKE_INSTALL_DATADIR\}/profwatch/demo\)")


# ------------------------------------------- what the flags need, given
def k8s_serve_containers():
    """(file, container, pod spec) of every profwatch container in the manifests."""
    out = []
    for name in ("training-job-with-sidecar.yaml", "daemonset.yaml", "statefulset-sharded.yaml"):
        for doc in yaml.safe_load_all(read(os.path.join(DEPLOY, "kubernetes", name))):
            if not doc or "template" not in doc["spec"]:
                continue
            spec = doc["spec"]["template"]["spec"]
            for c in spec.get("initContainers", []) + spec.get("containers", []):
                if (c.get("args") or [None])[0] == "serve":
                    out.append((name, c, spec))
    return out


def flag_value(args, name):
    for i, a in enumerate(args):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(args):
            return args[i + 1]
    return None


class WhatTheFlagsNeedTest(unittest.TestCase):
    """Each deploy file gives the daemon the writable places its flags (and
    their defaults) need. tests/deploy/test_run_as_written.py runs them."""

    @unittest.skipIf(yaml is None, "python3-yaml not installed")
    def test_read_only_roots_spill_and_save_state_on_writable_volumes(self):
        for name, c, _ in k8s_serve_containers():
            self.assertIs(c["securityContext"]["readOnlyRootFilesystem"], True, name)
            writable = [m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")]
            # --spill-dir's default is $TMPDIR, else /tmp: on the read-only root here.
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            spill = flag_value(c["args"], "--spill-dir") or env.get("TMPDIR") or "/tmp"
            state = flag_value(c["args"], "--state")
            for what, path in (("--spill-dir", spill), ("--state", state)):
                self.assertTrue(any(path == w or path.startswith(w.rstrip("/") + "/")
                                    for w in writable),
                                f"{name}: {what} {path} is on the read-only root file system "
                                f"(writable mounts: {writable})")

    def test_systemd_state_and_spill_dirs_are_the_writable_ones(self):
        unit = dict(parse_unit(read(SystemdUnitTest.UNIT))["Service"])
        env = parse_env(read(SystemdUnitTest.ENV))
        self.assertEqual(unit["ProtectSystem"], "strict")  # all read-only but:
        self.assertIn("--state ${STATE_DIRECTORY}/", unit["ExecStart"])
        spill = flag_value(env["PROFWATCH_ARGS"].split(), "--spill-dir")
        # No --spill-dir: /tmp, which PrivateTmp= makes private and writable.
        self.assertIsNone(spill, "a --spill-dir under ProtectSystem=strict needs ReadWritePaths=")
        self.assertEqual(unit["PrivateTmp"], "yes")

    def test_no_deploy_file_runs_fewer_workers_than_serve_advises(self):
        # serve --help: "more than one, so a window running to its file
        # budget does not hold the others".
        texts = {"profwatch.env.example": parse_env(read(SystemdUnitTest.ENV))["PROFWATCH_ARGS"],
                 "profwatch@.service": dict(parse_unit(read(SystemdUnitTest.UNIT))["Service"])[
                     "ExecStart"],
                 "train.sbatch": read(SlurmTest.SBATCH),
                 "profwatch-sidecar.sh": read(SlurmTest.SCRIPT)}
        if yaml is not None:
            for name, c, _ in k8s_serve_containers():
                texts[name] = " ".join(c["args"])
        for name, text in texts.items():
            for value in re.findall(r"--workers[= ](\d+)", text):
                self.assertGreaterEqual(int(value), 2, f"{name} sets --workers {value}")

    def test_docs_name_the_labels_the_slurm_target_file_has(self):
        out = os.path.join(tempfile.mkdtemp(prefix="profwatch-sd-"), "t.json")
        try:
            subprocess.run([SlurmTest.SCRIPT, "file-sd", out, "gpu-001"], check=True,
                           env=dict(os.environ, SLURM_JOB_ID="1", SLURM_JOB_NAME="x"))
            with open(out) as f:
                labels = sorted(json.load(f)[0]["labels"])
        finally:
            shutil.rmtree(os.path.dirname(out))
        doc = read(os.path.join(ROOT, "docs", "alerts-and-dashboards.md"))
        (bullet,) = re.findall(r"(?ms)^- \*\*Slurm\*\*:.*?(?=^- \*\*)", doc)
        m = re.search(r"labels\s+((?:`\w+`(?:,\s*|\s+and\s+)?)+)", bullet)
        self.assertIsNotNone(m, bullet)
        self.assertEqual(sorted(re.findall(r"`(\w+)`", m.group(1))), labels, bullet)
        self.assertIn("slurm_job_name", read(os.path.join(DEPLOY, "prometheus", "prometheus.yml")))


# ------------------------------------------------------- flags vs daemon
def deploy_serve_flags():
    """Every --flag the deploy files hand to `profwatch serve`."""
    texts = [dict(parse_unit(read(SystemdUnitTest.UNIT))["Service"])["ExecStart"],
             parse_env(read(SystemdUnitTest.ENV))["PROFWATCH_ARGS"],
             read(SlurmTest.SCRIPT).split('"$bin" serve', 1)[1].split("</dev/null", 1)[0],
             re.search(r'PROFWATCH_EXTRA_ARGS="([^"]*)"', read(SlurmTest.SBATCH)).group(1)]
    if yaml is not None:
        for name in ("training-job-with-sidecar.yaml", "daemonset.yaml", "statefulset-sharded.yaml"):
            for doc in yaml.safe_load_all(read(os.path.join(DEPLOY, "kubernetes", name))):
                if "template" not in doc["spec"]:
                    continue
                spec = doc["spec"]["template"]["spec"]
                for c in spec.get("initContainers", []) + spec.get("containers", []):
                    if c.get("args", [None])[0] == "serve":
                        texts.append(" ".join(c["args"]))
    flags = set()
    for t in texts:
        flags.update(re.findall(r"(?<![\w-])(--[a-z][a-z0-9.-]*)", t))
    return sorted(flags)


class ServeFlagsTest(unittest.TestCase):
    def test_deploy_files_use_only_flags_serve_knows(self):
        binary = OPTS["profwatch"]
        if not binary or not os.access(binary, os.X_OK):
            self.skipTest("no profwatch binary given (--profwatch)")
        proc = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30)
        helptext = proc.stdout + proc.stderr
        if proc.returncode != 0 or "--watch" not in helptext:
            self.skipTest(f"`profwatch serve --help` does not list flags yet (exit {proc.returncode})")
        flags = deploy_serve_flags()
        self.assertIn("--watch", flags)
        missing = [f for f in flags if not re.search(re.escape(f) + r"(?![\w-])", helptext)]
        self.assertEqual(missing, [], "deploy files pass flags `profwatch serve --help` does not list")


if __name__ == "__main__":
    for opt in ("--profwatch", "--promtool"):
        if opt in sys.argv:
            i = sys.argv.index(opt)
            OPTS[opt[2:]] = sys.argv[i + 1]
            del sys.argv[i:i + 2]
    unittest.main(verbosity=2)
