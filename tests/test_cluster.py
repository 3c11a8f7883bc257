"""Which Ray cluster a run uses, and what happens when it is wrong or goes away: a dead address
and a token-authenticated cluster are refused at once with what to do; a run says which cluster
it joined (progress line, manifest); a cluster that dies mid-run ends the run with curate's own
error, the manifest saying "interrupted", and `--resume` on another Ray completes it exactly.

The clusters are real `ray start --head --block` processes with their own temp dir (so no
record of them is left in /tmp/ray), stopped by the test."""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

import curate as cu
from curate.errors import CurateError

TESTS = Path(__file__).resolve().parent
JOB = TESTS / "resume_job.py"
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


HOME = tempfile.mkdtemp(prefix="cu-home-")  # `ray start` turns token auth on if ~/.ray/auth_token exists
atexit.register(shutil.rmtree, HOME, True)


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    env["HOME"] = HOME
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    env["RAY_DEDUP_LOGS"] = "0"  # every worker line reaches the job's stdout: the test counts them
    return dict(env, **extra)


@contextmanager
def head(**env: str):
    """A one-node Ray cluster in its own process group, on a free port; yields its address."""
    port, tmp = free_port(), tempfile.mkdtemp(prefix="cu-ray-", dir="/tmp")
    proc = subprocess.Popen([RAY, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                             "--block", f"--temp-dir={tmp}", "--disable-usage-stats"], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env(**env))
    try:
        for line in proc.stdout:  # --block prints this once the head is up
            if "Ray runtime started" in line:
                break
        else:
            pytest.fail(f"`ray start --head` did not start (exit {proc.wait()})")
        yield f"127.0.0.1:{port}", proc
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def stop(proc: subprocess.Popen) -> None:
    """The cluster dies at once, as when its machine goes down: SIGKILL to the process group of
    `ray start --block` (its GCS, raylet and workers; a graceful stop takes some 30 s)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)
    proc.stdout.close()


def job(out: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(JOB), str(out), "--executor", "ray", *args], capture_output=True,
                          text=True, timeout=300, env=env or clean_env())


def rows(out: Path) -> dict:
    import pyarrow.parquet as pq

    return {name: sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"]) for name in ("pages", "docs")}


def runs(out: Path) -> list[dict]:
    return json.loads((out / "_curate" / "manifest.json").read_text())["runs"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    p = subprocess.run([sys.executable, str(JOB), str(out)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert p.returncode == 0, p.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def long_reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("long_reference")
    p = subprocess.run([sys.executable, str(JOB), str(out), "--docs", "150"], capture_output=True, text=True,
                       timeout=300, env=clean_env())
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def test_an_address_where_no_cluster_answers_is_refused_with_what_to_do(tmp_path):
    p = job(tmp_path / "out", "--address", f"127.0.0.1:{free_port()}")
    assert p.returncode != 0
    assert "no Ray cluster answers at 127.0.0.1:" in p.stderr
    assert "--address local" in p.stderr and "ray start --head" in p.stderr
    assert not (tmp_path / "out" / "_curate" / "manifest.json").exists()  # a refused run leaves no entry


def test_a_stale_auto_record_is_named_as_such(monkeypatch):
    from ray._private import services

    from curate.executors.ray.cluster import preflight

    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: f"127.0.0.1:{free_port()}")
    with pytest.raises(CurateError, match="recorded by an earlier `ray start`.*`ray stop` clears the stale record"):
        preflight("auto")
    monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
    with pytest.raises(CurateError, match="none is recorded"):
        preflight("auto")


def test_a_token_cluster_refuses_without_its_token_and_the_run_says_so_then_joins_with_it(tmp_path, reference):
    token = secrets.token_hex(16)
    with_file = tmp_path / "home-with-token"  # `ray get-auth-token` saved there, RAY_AUTH_MODE unset
    (with_file / ".ray").mkdir(parents=True)
    (with_file / ".ray" / "auth_token").write_text(token)
    (tmp_path / "home-head").mkdir()
    (tmp_path / "home-without").mkdir()
    with head(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token, HOME=str(tmp_path / "home-head")) as (address, _):
        refused = job(tmp_path / "a", "--address", address, env=clean_env(HOME=str(tmp_path / "home-without")))
        assert refused.returncode != 0
        assert "uses token authentication" in refused.stderr and "RAY_AUTH_MODE=token" in refused.stderr
        assert "no Ray cluster" not in refused.stderr  # the false "nothing there" of ray.init
        joined = job(tmp_path / "b", "--address", address, "--progress",
                     env=clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token))
        assert joined.returncode == 0, joined.stderr[-3000:]
        by_file = job(tmp_path / "c", "--address", address, env=clean_env(HOME=str(with_file)))
        assert by_file.returncode == 0, by_file.stderr[-3000:]  # the token on disk is used, as "auto" would
    assert "running on the Ray cluster at" in joined.stderr and "(1 node: 2 CPU, 0 GPU" in joined.stderr
    (entry,) = runs(tmp_path / "b")
    assert entry["status"] == "completed"
    assert entry["cluster"]["how"] == "joined" and entry["cluster"]["nodes"] == 1
    assert entry["cluster"]["address"].endswith(":" + address.rpartition(":")[2])
    assert entry["cluster"]["resources"]["CPU"] == 2
    assert rows(tmp_path / "b") == rows(reference) == rows(tmp_path / "c")


def test_a_cluster_that_dies_mid_run_ends_it_with_our_error_and_resume_completes_it(tmp_path, long_reference):
    out = tmp_path / "out"
    with head() as (address, cluster):
        # batches after the 15th wait for the cluster to go (kills.hold_after), so the job is
        # still mid-work when it does, whatever the machine's speed
        p = subprocess.Popen([sys.executable, str(JOB), str(out), "--executor", "ray", "--docs", "150",
                              "--hold-after", "15", "--address", address],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
        seen = 0
        for line in p.stdout:  # kill the cluster once the job is well into its work
            seen += "ran " in line
            if seen >= 15:  # of about 140 batches
                break
        stop(cluster)
        _, stderr = p.communicate(timeout=240)
    assert p.returncode == 1, stderr[-3000:]  # cu.run raised ClusterLostError (the job script has no CLI)
    assert "ClusterLostError: lost the Ray cluster" in stderr and "--resume" in stderr, stderr[-6000:]
    (entry,) = runs(out)
    assert entry["status"] == "interrupted" and "lost the Ray cluster" in entry["error"], entry["error"]
    assert entry["cluster"]["how"] == "joined"
    done = job(out, "--resume", "--address", "local", "--docs", "150")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [r["status"] for r in runs(out)] == ["interrupted", "completed"]
    assert rows(out) == rows(long_reference)


def test_a_run_says_which_ray_it_used(tmp_path, ray_cluster, capsys):
    Doc = cu.Domain("doc")
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(cu.stage(lambda xs: [x + 1 for x in xs])))
    res = cu.run(pipe, [1, 2], executor="ray", output_dir=tmp_path / "out", progress=True)
    assert res.counts["docs"] == {"present": 2}
    assert "running on the Ray this process had initialised at" in capsys.readouterr().err
    (entry,) = runs(tmp_path / "out")
    assert entry["cluster"]["how"] == "existing" and entry["cluster"]["nodes"] == 1
    assert entry["cluster"]["resources"]["CPU"] == 4  # the test session's Ray (conftest)


SPREAD_SCRIPT = """
import asyncio, os, ray
from ray.cluster_utils import Cluster
import curate as cu

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
for _ in range(2):
    cluster.add_node(num_cpus=1, num_gpus=1)  # logical GPUs: Ray places and pins as with real ones
cluster.wait_for_nodes()
Doc = cu.Domain("doc"); Page = Doc.child("page")

@ray.remote(num_cpus=0)
class Barrier:  # work begins with the first actor up: each one's first batch waits for the other's
    def __init__(self):
        self.n, self.event = 0, asyncio.Event()
    async def arrive(self):
        self.n += 1
        if self.n >= 2:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), 120)

ray.init(address=cluster.address)
barrier = Barrier.remote()

class Captioner:
    def __init__(self):
        self.where = (ray.get_runtime_context().get_node_id(), os.environ.get("CUDA_VISIBLE_DEVICES"))
        self.met = False
    def __call__(self, ps):
        if not self.met:
            self.met = ray.get(barrier.arrive.remote()) is None
        return [(p, *self.where) for p in ps]

pipe = cu.Pipeline(Doc)
pages = pipe.source.expand(cu.stage(lambda ds: [list(range(d)) for d in ds], num_cpus=0.25), into=Page)
out = pages.map(cu.stage(Captioner, batch_size=2, replicas=2, num_gpus=1, num_cpus=0.25))
pipe.output("pages", out)
res = cu.run(pipe, [3, 5, 4, 6], executor="ray", address=cluster.address)
where = {(node, gpus) for _, node, gpus in res.values("pages")}
print("WHERE", sorted(where))
print("NODES", len({n for n, _ in where}), "GPUS", sorted({g for _, g in where}))
three = cu.Pipeline(Doc)
three.output("x", three.source.map(cu.stage(Captioner, replicas=3, num_gpus=1, num_cpus=0.25)))
try:
    cu.run(three, [1], executor="ray")
except cu.CurateError as exc:
    print("REFUSED", exc)
ray.shutdown()
cluster.shutdown()
"""


def test_gpu_pools_get_one_actor_per_gpu_spread_over_the_nodes(tmp_path):
    ray_tmp = tempfile.mkdtemp(prefix="cu-gpu-", dir="/tmp")  # short: Ray's socket paths live there
    try:
        proc = subprocess.run([sys.executable, "-c", SPREAD_SCRIPT], capture_output=True, text=True, timeout=300,
                              env=clean_env(RAY_TMPDIR=ray_tmp))
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "NODES 2 GPUS ['0']" in proc.stdout  # two actors, two nodes, each pinned to its node's GPU
    refused = next(line for line in proc.stdout.splitlines() if line.startswith("REFUSED"))
    assert "the workers ask for 3 GPU in all" in refused and "the cluster has 2" in refused, refused
