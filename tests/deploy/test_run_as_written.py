#!/usr/bin/env python3
"""Every deploy file, run as written: the real built `profwatch serve` with
exactly the file's arguments, its directories and its mounts, read-only where
the file says so, serving /metrics of a real window and spilling it.

What each file says is read from the file itself:
- Kubernetes (daemonset, statefulset-sharded, training-job-with-sidecar): the
  profwatch container's args (with `$(VAR)` from its env), volumeMounts
  (readOnly), readOnlyRootFilesystem, runAsUser, the pod's fsGroup; the window
  goes where the file's trainer (or job tree) puts it.
- systemd: ExecStart with the environment example's values (`${VAR}` one
  word, `$VAR` split as systemd does), StateDirectory= as $STATE_DIRECTORY,
  ProtectSystem=strict (all read-only but the state directory and the
  PrivateTmp= /tmp); then ExecStartPost's probe.
- Docker: ENTRYPOINT + CMD on the `cmake --install` tree the image copies,
  and the header's documented `docker run -v ...:ro ... serve ...`, as USER.
- Slurm: profwatch-sidecar.sh start/stop with train.sbatch's settings, a fake
  srun that runs its command here and a fake scontrol naming this host.

The container's paths are mapped under a temporary root: `/outputs` is
ROOT/outputs, the container's /tmp (where $TMPDIR, unset in the files, sends
spills) is ROOT/tmp. As root the daemon runs in its own mount namespace with
read-only bind mounts (the root, then each volume rw or ro as the file says)
and as the file's user (setpriv); otherwise directories are made read-only
with chmod. A check inside, as the daemon's user, proves each read-only path
refuses a write and each writable one takes it. Where neither can be done
(root without a mount namespace) the test skips, saying why.

Under a sanitizer (--sanitized, from a PROFWATCH_SANITIZE or PROFWATCH_TSAN
build) each daemon is several times slower, and they all run side by side on
the same cores: there the Kubernetes daemonset, the systemd unit and the
Slurm wrapper run, each wait's deadline is scaled like the test's ctest
timeout (tests/CMakeLists.txt), and the others (SANITIZER_SKIPS) skip,
saying so: they run in the plain build's ctest. There each daemon also gets
`--worker-nice 0` (SANITIZER_ARGS), through the file's own place for extra
flags where it has one.

The window: 8 one-GPU trace files named after this host (so --host-filter
auto keeps them), each with more kernel intervals than a waiting file keeps
in memory, so the window spills; profwatch_spill_bytes_total must grow and
profwatch_spill_errors_total stay 0.

  test_run_as_written.py --profwatch BIN --tracegen BIN --build BUILD_DIR [--sanitized]
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

try:
    import yaml  # python3-yaml (scripts/install-deps.sh --test)
except ImportError:  # pragma: no cover - reported as skips
    yaml = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")
OPTS = {"profwatch": None, "tracegen": None, "build": None, "sanitized": False}
HOST = socket.gethostname().split(".")[0]
GPUS = 8             # train.sbatch's --expected-gpus 8: a whole node's window
EVENTS = 75_000      # per file: > FileAggregator::kParkedIntervals (65,536) kernels
TS_DIR = "2026_01_15_10_00_00"
DEADLINE = 120       # seconds for any one wait (a busy 2-core machine)
# Result keys of the deployments a sanitizer build skips (see the docstring).
SANITIZER_SKIPS = ("training-job-with-sidecar.yaml", "statefulset-sharded.yaml", "docker CMD",
                   "docker run")
SANITIZER_DEADLINE_FACTOR = 3  # PROFWATCH_TEST_TIMEOUT_FACTOR of a sanitizer build
# Added under a sanitizer (the Slurm wrapper through its PROFWATCH_EXTRA_ARGS):
# the analysis workers keep the daemon's priority. A sanitizer run checks
# memory and threads, not scheduling, and niced workers of a several times
# slower daemon starve beside a CPU-bound job; the plain build runs the files
# exactly as written.
SANITIZER_ARGS = ["--worker-nice", "0"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def hashmod(value, modulus):
    """Prometheus' hashmod (and serve --shard): MD5, last 8 bytes, big endian."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def sample(text, name, labels=None):
    """Value of one series in an exposition, or None."""
    for line in text.splitlines():
        m = re.match(r"^([a-z_:]+)(\{[^}]*\})? (\S+)$", line)
        if not m or m.group(1) != name:
            continue
        if labels and any(f'{k}="{v}"' not in (m.group(2) or "") for k, v in labels.items()):
            continue
        return float(m.group(3))
    return None


def wait_for(cond, what, proc=None, log=None):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"daemon exited ({proc.returncode}) waiting for {what}:\n"
                                 + (read(log)[-4000:] if log else ""))
        got = cond()
        if got:
            return got
        time.sleep(0.1)  # polling interval of a deadline-bounded wait
    raise AssertionError(f"timed out after {DEADLINE}s waiting for {what}:\n"
                         + (read(log)[-4000:] if log else ""))


# ------------------------------------------------------------- the window
def generate_window(out):
    """8 one-GPU files of one window, named <this host>.proc<N>.trace.json.gz."""
    subprocess.run([OPTS["tracegen"], "job", "--out", out, "--job", "gen", "--run", "r",
                    "--mode", "1gpu", "--hosts", "1", "--gpus-per-host", str(GPUS),
                    "--host-prefix", "gen", "--events", str(EVENTS), "--vendor", "nvidia"],
                   check=True, capture_output=True)
    files = sorted(glob.glob(os.path.join(out, "gen", "r", "tensorboard", "plugins", "profile",
                                          "*", "*.trace.json.gz")))
    assert len(files) == GPUS, files
    window = os.path.join(out, "window")
    os.makedirs(window)
    for f in files:
        proc = re.search(r"\.(proc\d+)\.", os.path.basename(f)).group(1)
        os.rename(f, os.path.join(window, f"{HOST}.{proc}.trace.json.gz"))
    return window


def place_window(window, run_dir):
    """The trainer's write: the window's files under RUN/tensorboard/plugins/profile/<ts>/."""
    dest = os.path.join(run_dir, "tensorboard", "plugins", "profile", TS_DIR)
    os.makedirs(dest)
    for name in os.listdir(window):
        shutil.copy(os.path.join(window, name), dest)
    for d in (run_dir, os.path.dirname(run_dir)):
        os.chmod(d, 0o755)


# -------------------------------------------------- deployments from files
class Deployment:
    """One way a deploy file runs the daemon, in the container's terms."""

    def __init__(self, name, argv, mounts, read_only_root, user, watch, job, run, where):
        self.name = name
        self.argv = argv                    # profwatch's arguments: ["serve", ...]
        self.mounts = mounts                # container path -> read-only?
        self.read_only_root = read_only_root
        self.user = user                    # (uid, gid, [groups]) or None
        self.watch = watch                  # container path of the --watch root
        self.job, self.run = job, run       # where the window lands below it
        self.where = where                  # the file, for messages
        self.binary = OPTS["profwatch"]
        self.post = None                    # argv run once listening (systemd)
        self.want_job = job                 # training_job of the exported window
        self.needs_window = True

    def flag(self, name):
        for i, a in enumerate(self.argv):
            if a == name and i + 1 < len(self.argv):
                return self.argv[i + 1]
            if a.startswith(name + "="):
                return a.split("=", 1)[1]
        return None


def kubernetes_deployments():
    out = []
    for name in ("training-job-with-sidecar.yaml", "daemonset.yaml", "statefulset-sharded.yaml"):
        for doc in yaml.safe_load_all(read(os.path.join(DEPLOY, "kubernetes", name))):
            if not doc or "template" not in doc.get("spec", {}):
                continue
            pod = doc["spec"]["template"]["spec"]
            pod_name = doc["metadata"]["name"] + ("-0" if doc["kind"] == "StatefulSet" else "-x1")
            for c in pod.get("initContainers", []) + pod.get("containers", []):
                if (c.get("args") or [None])[0] != "serve":
                    continue
                env = {}
                for e in c.get("env", []):
                    ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                    env[e["name"]] = pod_name if ref == "metadata.name" else e.get("value", "")
                argv = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["args"]]
                mounts = {m["mountPath"]: bool(m.get("readOnly")) for m in c["volumeMounts"]}
                sc = c.get("securityContext", {})
                groups = [pod["securityContext"]["fsGroup"]] if "fsGroup" in pod.get(
                    "securityContext", {}) else []
                user = (sc["runAsUser"], sc.get("runAsGroup", 65534), groups) \
                    if "runAsUser" in sc else None
                d = Deployment(f"kubernetes/{name}", argv, mounts,
                               bool(sc.get("readOnlyRootFilesystem")), user, None, None, "r1", name)
                d.watch = d.flag("--watch")
                # The job: where the file's trainer writes (MaxText's
                # base_output_directory/run_name), else a job of this shard.
                trainers = [t for t in pod.get("containers", []) if t is not c]
                job = None
                for t in trainers:
                    targs = dict(a.split("=", 1) for a in t.get("args", []) if "=" in a)
                    if "base_output_directory" in targs:
                        base = targs["base_output_directory"]
                        job = os.path.relpath(base, d.watch)
                        d.run = targs["run_name"]
                shard = d.flag("--shard")
                if job is None and shard:
                    index = int(re.search(r"(\d+)/\d+$", shard).group(1))
                    count = int(shard.rsplit("/", 1)[1])
                    job = next(f"job-{i}" for i in range(100) if hashmod(f"job-{i}", count) == index)
                d.job = d.want_job = job or "llama"
                out.append(d)
    return out


def parse_unit(text):
    """systemd unit -> {section: {key: value}} (the last value of a key)."""
    sections, current = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = re.match(r"^\[(\w+)\]$", line)
        if m:
            current = sections.setdefault(m.group(1), {})
            continue
        key, _, value = line.partition("=")
        current[key.strip()] = value.strip()
    return sections


def parse_env(text):
    env = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


def systemd_command(line, env):
    """An Exec line as systemd expands it: `${VAR}` is one word, `$VAR` is
    split at whitespace (an empty one disappears)."""
    words = []
    for token in line.split():
        m = re.fullmatch(r"\$(\w+)", token)
        if m:
            words.extend(env.get(m.group(1), "").split())
        else:
            words.append(re.sub(r"\$\{(\w+)\}", lambda v: env[v.group(1)], token))
    return words


def systemd_deployment():
    unit = parse_unit(read(os.path.join(DEPLOY, "systemd", "profwatch@.service")))["Service"]
    env = parse_env(read(os.path.join(DEPLOY, "systemd", "profwatch.env.example")))
    instance = "test"
    state = "/var/lib/" + unit["StateDirectory"].replace("%i", instance)
    env["STATE_DIRECTORY"] = state
    start = systemd_command(unit["ExecStart"], env)
    assert start[0] == "/usr/bin/profwatch", start
    assert unit["ProtectSystem"] == "strict"  # the whole file system read-only but:
    mounts = {state: False}                    # StateDirectory=
    if unit.get("PrivateTmp") == "yes":
        mounts["/tmp"] = False                 # a private, writable /tmp
    d = Deployment("systemd/profwatch@.service", start[1:], mounts, True, (65534, 65534, []),
                   env["PROFWATCH_WATCH"], "llama", "r1", "profwatch@.service + env example")
    d.post = systemd_command(unit["ExecStartPost"], env)[1:]
    return d


def docker_deployments():
    text = read(os.path.join(DEPLOY, "docker", "Dockerfile"))
    runtime = text.split("FROM debian:12-slim", 1)[1]
    entry = json.loads(re.search(r"(?m)^ENTRYPOINT (.+)$", runtime).group(1))
    cmd = json.loads(re.search(r"(?m)^CMD (.+)$", runtime).group(1))
    uid, gid = (int(x) for x in re.search(r"(?m)^USER (\d+):(\d+)", runtime).groups())
    assert entry == ["/usr/bin/profwatch"], entry
    out = []
    # The image's default command: the bundled demo of the installed tree.
    d = Deployment("docker CMD", cmd, {}, False, (uid, gid, []), None, None, None, "Dockerfile CMD")
    d.needs_window = False
    d.want_job = "demo-llama-8b"
    out.append(d)
    # The documented run with a jobs directory.
    for line in re.findall(r"(?m)^#\s+(docker run .*)$", text):
        if "--health-cmd" in line:
            continue  # the health check's example, not a way to run serve
        words = shlex.split(line)
        if "serve" not in words:
            continue
        i, mounts = 2, {}
        while words[i].startswith("-"):
            if words[i] in ("-p", "-v", "--name", "-e"):
                if words[i] == "-v":
                    parts = words[i + 1].split(":")
                    mounts[parts[1]] = len(parts) > 2 and parts[2] == "ro"
                i += 2
            else:
                i += 1
        argv = words[i + 1:]  # after the image name
        d = Deployment("docker run", argv, mounts, False, (uid, gid, []), None, "llama", "r1",
                       "Dockerfile: " + line)
        d.watch = d.flag("--watch")
        out.append(d)
    return out


# --------------------------------------------------------------- running
def namespace_available():
    if os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                          capture_output=True).returncode == 0


def make_read_only_by_chmod(root, rw):
    """Not root: every directory under ROOT but the writable mounts 0555."""
    for dirpath, dirnames, _ in os.walk(root):
        if any(dirpath == p or dirpath.startswith(p + "/") for p in rw):
            dirnames[:] = []
            continue
        os.chmod(dirpath, 0o555)


def run_deployment(d, window, tmp):
    """Starts the daemon as `d` says; returns (metrics text, log text, exit
    code after SIGTERM, the host path of ROOT)."""
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "root")
    ctl = os.path.join(tmp, "ctl")  # the test's channel (port file), outside the container
    os.makedirs(ctl)
    os.chmod(ctl, 0o777)
    os.makedirs(os.path.join(root, "tmp"))
    for path in d.mounts:
        os.makedirs(root + path, exist_ok=True)
    if d.needs_window:
        place_window(window, root + os.path.join(d.watch, d.job, d.run))
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, 0o755)
    # Writable volumes as Kubernetes gives them (emptyDir 0777, fsGroup):
    # open to the daemon's user.
    rw = [root + p for p, ro in d.mounts.items() if not ro]
    if not d.read_only_root and "/tmp" not in d.mounts:
        rw.append(root + "/tmp")  # the image's /tmp
    for p in rw:
        os.chmod(p, 0o1777)
    ro = [root + p for p, is_ro in d.mounts.items() if is_ro]
    if d.read_only_root:
        ro.append(root)
        if "/tmp" not in d.mounts:
            ro.append(root + "/tmp")

    # The file's arguments, its paths under ROOT, listening where the test
    # can reach it.
    args, port_file = [], os.path.join(ctl, "port")
    for a in d.argv:
        if a.startswith("--listen=") or a.startswith("--web.listen-address="):
            args.append("--listen=127.0.0.1:0")
            continue
        flag, eq, value = a.partition("=")
        if eq and value.startswith("/"):
            args.append(f"{flag}={root}{value}")
        elif a.startswith("/"):
            args.append(root + a)
        elif args and args[-1] in ("--listen", "--web.listen-address"):
            args.append("127.0.0.1:0")
        else:
            args.append(a)
    if not any(re.match(r"--(listen|web\.listen-address)\b", a) for a in d.argv):
        args.append("--listen=127.0.0.1:0")  # the default port, 19474, may be taken here
    args += ["--listen-port-file", port_file]

    # The container's environment: no TMPDIR, so /tmp, here ROOT/tmp.
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": root + "/tmp", "LANG": "C.UTF-8"}
    checks = "".join(f'if touch {shlex.quote(p)}/.rw-check 2>/dev/null; then echo "writable: {p}" >&2; '
                     f"exit 97; fi; " for p in ro)
    checks += "".join(f'touch {shlex.quote(p)}/.rw-check && rm {shlex.quote(p)}/.rw-check || '
                      f'{{ echo "not writable: {p}" >&2; exit 97; }}; ' for p in rw)
    inner = ["bash", "-c", checks + 'exec "$@"', "profwatch-as-written", d.binary] + args
    if namespace_available():
        script = "set -e; "
        if d.read_only_root:
            script += f"mount --bind {shlex.quote(root)} {shlex.quote(root)}; " \
                      f"mount -o remount,bind,ro {shlex.quote(root)}; "
        for path, is_ro in d.mounts.items():
            p = shlex.quote(root + path)
            script += f"mount --bind {p} {p}; mount -o remount,bind,{'ro' if is_ro else 'rw'} {p}; "
        if d.user:
            uid, gid, groups = d.user
            drop = ["setpriv", f"--reuid={uid}", f"--regid={gid}"] + (
                [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"])
        else:
            drop = []
        script += 'exec "$@"'
        command = ["unshare", "-m", "--propagation", "private", "bash", "-c", script,
                   "mounts"] + drop + inner
    elif os.geteuid() != 0:
        make_read_only_by_chmod(root, rw) if d.read_only_root else None
        for p in ro:
            os.chmod(p, 0o555)
        command = inner
    else:
        raise unittest.SkipTest("root without a mount namespace (unshare -m failed): "
                                "read-only mounts cannot be made here")

    log_path = os.path.join(tmp, "daemon.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    metrics, code = None, None
    try:
        port = wait_for(lambda: os.path.exists(port_file) and read(port_file).strip(),
                        "the daemon to listen", proc, log_path)
        if d.post:
            post = [root + a if a.startswith("/") else a for a in d.post]
            post = [f"127.0.0.1:{port}" if a == "0.0.0.0:19474" or re.fullmatch(
                r"[\d.]+:\d+", a) else a for a in post]
            probe = subprocess.run([d.binary] + post, capture_output=True, text=True, timeout=60)
            assert probe.returncode == 0, f"ExecStartPost {post}: {probe.stderr}"

        def exported():
            text = scrape(port)
            gpus = sample(text, "profwatch_window_gpus", {"training_job": d.want_job})
            if gpus is None:
                return None
            # A spilling window is counted once its analysis is published.
            if d.needs_window and not (sample(text, "profwatch_spill_bytes_total") or
                                       sample(text, "profwatch_spill_errors_total")):
                return None
            return text
        metrics = wait_for(exported, f"a window of {d.want_job} on /metrics", proc, log_path)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        if os.geteuid() != 0:
            for dirpath, _, _ in os.walk(root):
                os.chmod(dirpath, 0o755)
    return metrics, read(log_path), code, root


class RunAsWrittenTest(unittest.TestCase):
    results = {}

    @classmethod
    def setUpClass(cls):
        if not (OPTS["profwatch"] and os.access(OPTS["profwatch"], os.X_OK)):
            raise unittest.SkipTest("no profwatch binary (--profwatch)")
        if yaml is None:
            raise unittest.SkipTest("python3-yaml not installed")
        cls.tmp = tempfile.mkdtemp(prefix="profwatch-as-written-")
        os.chmod(cls.tmp, 0o755)  # the daemons' users pass through it
        cls.window = generate_window(os.path.join(cls.tmp, "gen"))
        cls.deployments = kubernetes_deployments() + [systemd_deployment()] + docker_deployments()
        runnable = []
        for d in cls.deployments:
            key = d.name if d.name.startswith("docker") else d.where
            if OPTS["sanitized"] and key in SANITIZER_SKIPS:
                cls.results[key] = unittest.SkipTest(
                    "not under a sanitizer: run by the plain build's ctest")
                continue
            if d.name == "docker CMD":
                try:
                    d.binary = install_image_tree(os.path.join(cls.tmp, "image"))
                except (unittest.SkipTest, subprocess.CalledProcessError, OSError) as e:
                    cls.results[d.name] = unittest.SkipTest(f"no install tree for the image: {e}")
                    continue
            if OPTS["sanitized"]:
                d.argv = d.argv + SANITIZER_ARGS
            runnable.append(d)
        # The daemons wait for --settle; they run side by side.
        with concurrent.futures.ThreadPoolExecutor(len(runnable)) as pool:
            futures = {}
            for i, d in enumerate(runnable):
                case = os.path.join(cls.tmp, f"case{i}")
                os.makedirs(case)
                futures[d.name if d.name.startswith("docker") else d.where] = pool.submit(
                    run_deployment, d, cls.window, case)
            for key, f in futures.items():
                try:
                    cls.results[key] = f.result()
                except Exception as e:  # reported by the test of that file
                    cls.results[key] = e

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def check(self, key, state=True):
        got = self.results[key]
        if isinstance(got, unittest.SkipTest):
            self.skipTest(str(got))
        if isinstance(got, Exception):
            raise got
        metrics, log, code, root = got
        (d,) = [x for x in self.deployments if key in (x.name, x.where)]
        self.assertIsNotNone(metrics, log[-4000:])
        gpus = sample(metrics, "profwatch_window_gpus", {"training_job": d.want_job})
        if d.needs_window:
            self.assertEqual(gpus, GPUS)
        else:
            self.assertGreater(gpus, 0)
        self.assertFalse("spill dir not writable" in log, log[-3000:])
        if d.needs_window:
            # Spilled into a writable place, and nothing failed to spill.
            self.assertEqual(sample(metrics, "profwatch_spill_errors_total"), 0, log[-4000:])
            self.assertGreater(sample(metrics, "profwatch_spill_bytes_total"), 0)
        self.assertEqual(code, 0, log[-4000:])
        if state and d.flag("--state"):
            self.assertTrue(os.path.isfile(root + d.flag("--state")),
                            f"{d.where}: --state {d.flag('--state')} was not written")

    def test_kubernetes_native_sidecar(self):
        self.check("training-job-with-sidecar.yaml")

    def test_kubernetes_daemonset(self):
        self.check("daemonset.yaml")

    def test_kubernetes_statefulset_shard(self):
        self.check("statefulset-sharded.yaml")

    def test_systemd_unit_with_the_environment_example(self):
        self.check("profwatch@.service + env example")

    def test_docker_default_command_serves_the_demo(self):
        self.check("docker CMD")

    def test_docker_documented_run_with_a_jobs_volume(self):
        self.check("docker run")


def install_image_tree(dest):
    """The image's /usr: `cmake --install` with prefix /usr under DESTDIR, as
    the Dockerfile's build stage does; returns its bin/profwatch."""
    if not OPTS["build"]:
        raise unittest.SkipTest("no build dir (--build) to install the image's tree from")
    env = dict(os.environ, DESTDIR=dest)
    subprocess.run(["cmake", "--install", OPTS["build"], "--prefix", "/usr"], env=env, check=True,
                   capture_output=True)
    for dirpath, _, _ in os.walk(dest):
        os.chmod(dirpath, 0o755)
    return os.path.join(dest, "usr", "bin", "profwatch")


# ----------------------------------------------------------------- slurm
class SlurmAsWrittenTest(unittest.TestCase):
    SCRIPT = os.path.join(DEPLOY, "slurm", "profwatch-sidecar.sh")
    SBATCH = os.path.join(DEPLOY, "slurm", "train.sbatch")

    def setUp(self):
        if not (OPTS["profwatch"] and OPTS["tracegen"]):
            self.skipTest("needs --profwatch and --tracegen")
        self.tmp = tempfile.mkdtemp(prefix="profwatch-slurm-as-written-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_sidecar_start_serves_the_training_steps_window_and_stop_ends_it(self):
        tmp = self.tmp
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        # srun runs its command on this node (the options are Slurm's);
        # scontrol expands the node list to this host.
        with open(os.path.join(bindir, "srun"), "w") as f:
            f.write('#!/usr/bin/env bash\nwhile [[ "$1" == -* ]]; do shift; done\nexec "$@"\n')
        with open(os.path.join(bindir, "scontrol"), "w") as f:
            f.write(f"#!/bin/sh\n[ \"$1 $2\" = 'show hostnames' ] || exit 2\necho {HOST}\n")
        for n in ("srun", "scontrol"):
            os.chmod(os.path.join(bindir, n), 0o755)
        sbatch = read(self.SBATCH)
        job_name = re.search(r"(?m)^#SBATCH --job-name=(\S+)", sbatch).group(1)
        slurm = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": job_name,
                 "SLURM_SUBMIT_DIR": os.path.join(tmp, "submit"), "SLURM_JOB_NODELIST": HOST}
        # train.sbatch's settings, as its bash evaluates them; the file_sd
        # directory (the Prometheus host's shared path) is this test's.
        exports = "\n".join(re.findall(r"(?m)^export .*$", sbatch))
        shown = subprocess.run(["bash", "-c", exports + '\nenv -0'], capture_output=True,
                               env=dict(slurm, PATH="/usr/bin:/bin"), check=True).stdout
        settings = dict(kv.split("=", 1) for kv in shown.decode().split("\0") if kv.startswith(
            "PROFWATCH_"))
        port = free_port()
        env = dict(os.environ)
        env.update(slurm)
        env.update(settings)
        env.update(PATH=bindir + os.pathsep + os.environ["PATH"], TMPDIR=tmp,
                   PROFWATCH_FILE_SD_DIR=os.path.join(tmp, "file_sd"),
                   PROFWATCH_BIN=OPTS["profwatch"], PROFWATCH_PORT=str(port))
        os.makedirs(env["PROFWATCH_FILE_SD_DIR"])
        watch = settings["PROFWATCH_WATCH"]
        os.makedirs(watch)
        self.assertEqual(settings["PROFWATCH_EXTRA_ARGS"], "--expected-gpus 8")
        if OPTS["sanitized"]:
            env["PROFWATCH_EXTRA_ARGS"] += " " + " ".join(SANITIZER_ARGS)
        # The training step writes its window (run_name=r1 under
        # base_output_directory=$PROFWATCH_WATCH, as train.sbatch's srun says).
        run = re.search(r"run_name=(\S+)", sbatch).group(1)
        self.assertIn('base_output_directory="$PROFWATCH_WATCH"', sbatch)
        place_window(generate_window(os.path.join(tmp, "gen")), os.path.join(watch, run))

        start = subprocess.run([self.SCRIPT, "start"], env=env, capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(start.returncode, 0, start.stderr)
        rd = os.path.join(tmp, "profwatch-sidecar-4242")
        log = os.path.join(rd, "srun.log")
        pid = int(read(os.path.join(rd, "srun.pid")))
        try:
            with open(os.path.join(env["PROFWATCH_FILE_SD_DIR"], "slurm-4242.json")) as f:
                self.assertEqual(json.load(f)[0]["targets"], [f"{HOST}:{port}"])

            def exported():
                try:
                    text = scrape(port)
                except OSError:
                    return None
                ok = sample(text, "profwatch_window_gpus",
                            {"training_job": os.path.basename(watch), "run": run})
                return text if ok is not None else None
            metrics = wait_for(exported, "the sidecar's /metrics to show the window", log=log)
            self.assertEqual(sample(metrics, "profwatch_window_gpus"), GPUS)
            self.assertEqual(sample(metrics, "profwatch_window_expected_gpus"), GPUS)
            self.assertEqual(sample(metrics, "profwatch_spill_errors_total"), 0)
            self.assertGreater(sample(metrics, "profwatch_spill_bytes_total"), 0)
        finally:
            stop = subprocess.run([self.SCRIPT, "stop"], env=env, capture_output=True, text=True,
                                  timeout=60)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.assertEqual(stop.returncode, 0, stop.stderr)
        self.assertNotIn("killing", stop.stderr)  # stopped by SIGTERM, state saved
        self.assertFalse(os.path.exists(os.path.join(env["PROFWATCH_FILE_SD_DIR"],
                                                     "slurm-4242.json")))
        self.assertTrue(os.path.isfile(os.path.join(tmp, "profwatch-4242", "state.json")),
                        read(log)[-3000:])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--profwatch")
    ap.add_argument("--tracegen")
    ap.add_argument("--build")
    ap.add_argument("--sanitized", action="store_true")
    args, rest = ap.parse_known_args()
    for k in ("profwatch", "tracegen", "build"):
        v = getattr(args, k)
        OPTS[k] = os.path.abspath(v) if v else None
    OPTS["sanitized"] = args.sanitized
    if args.sanitized:
        DEADLINE *= SANITIZER_DEADLINE_FACTOR
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
