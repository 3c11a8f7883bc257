"""Fault injection on real Ray, real processes, real Parquet: each faulty run is compared row
for row (and payload file for payload file) with what a clean run gives, which `expected()`
spells out from the job's pure stages. Nothing lost, nothing duplicated.

- every stage fault at once (tests/fault_job.py --faults): intermittent errors (retried), a
  worker killed mid-batch (retried on its restarted actor), a hang (timeout_s: failed, retried,
  actor replaced), a poison item (isolated, alone FAILED);
- the driver killed with SIGKILL five times in a row on one job, each time resumed;
- a worker node removed mid-run from a three-node cluster (`ray.cluster_utils.Cluster`), with
  payloads large enough to live only in that node's object store;
- duplicate and stale reports injected between the transport and the scheduler (dropped).
Other faults have their own tests: an actor killed by Ray mid-batch (test_ray_executor.py),
Ctrl-C (test_interrupt.py), SIGKILL at chosen points and mid-flush (test_resume.py,
test_bounded_memory.py), a cluster that goes away (test_cluster.py)."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kills import sigkill_after

import curate as cu

TESTS = Path(__file__).resolve().parent
JOB = TESTS / "fault_job.py"
DOCS = 30


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    e["RAY_DEDUP_LOGS"] = "0"  # every "ran" line of the workers reaches stdout: the tests count them
    return e


def start(out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(JOB), str(out), "--docs", str(DOCS), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env())


def finish(out: Path, *args: str) -> str:
    p = start(out, *args)
    stdout, stderr = p.communicate(timeout=400)
    assert p.returncode == 0, stderr[-4000:]
    return stdout


def expected(docs: int = DOCS, big: bool = False) -> dict:
    """The rows (and payload bytes) of a clean run of fault_job.py, from its stages' definition."""
    pages, out_docs = [], []
    for d in range(docs):
        n = d % 6 + 1
        poisoned = d % 13 == 5 and n > 2
        for i in range(n):
            if d % 13 == 5 and i == 2:
                pages.append(((d, i), "failed", "worker_died", None))
            else:
                scan = bytes([(d + i) % 256]) * (300_000 if big else 64)
                pages.append(((d, i), "present", None, (d, i, f"DOC {d} PAGE {i}", scan)))
        text = "\n".join(f"DOC {d} PAGE {i}" for i in range(n))
        out_docs.append(((d,), "suppressed", "worker_died", None) if poisoned else ((d,), "present", None, text))
    return {"pages": pages, "docs": out_docs}


def got(out: Path) -> dict:
    pages = []
    for r in sorted(pq.read_table(out / "pages").to_pylist(), key=lambda r: r["lineage"]):
        value = None
        if r["status"] == "present":
            value = (r["doc"], r["page"], r["text"], (out / "pages" / r["scan"]).read_bytes())
        pages.append((tuple(r["lineage"]), r["status"], r["cause_kind"], value))
    docs = [(tuple(r["lineage"]), r["status"], r["cause_kind"], r["value"])
            for r in sorted(pq.read_table(out / "docs").to_pylist(), key=lambda r: r["lineage"])]
    return {"pages": pages, "docs": docs}


def assert_clean(out: Path, big: bool = False) -> None:
    rows, want = got(out), expected(big=big)
    for name in ("pages", "docs"):
        lineages = [r[0] for r in rows[name]]
        assert len(lineages) == len(set(lineages)), f"{name}: duplicated rows"
        assert rows[name] == want[name], f"{name}: rows differ from a clean run"


def test_every_stage_fault_at_once_gives_the_rows_of_a_clean_run(tmp_path):
    marks = tmp_path / "faults"
    marks.mkdir()
    finish(tmp_path / "out", "--faults", str(marks))
    assert_clean(tmp_path / "out")
    fired = {p.name.split("-")[0] for p in marks.iterdir()}
    assert fired == {"die", "hang", "flaky"}  # each kind of fault really happened
    assert len([p for p in marks.iterdir() if p.name.startswith("die-")]) == 4


def test_driver_killed_five_times_in_a_row_then_resumed_gives_the_rows_of_a_clean_run(tmp_path):
    out, rng = tmp_path / "out", random.Random(12)
    for k in range(5):
        n = rng.randint(1, 8)  # SIGKILL after a random number of OCR batches of this run; the later ones wait for it
        p = start(out, "--hold-after", str(n), *(["--resume"] if k else []))
        assert sigkill_after(p, n, "ran (") == -signal.SIGKILL, f"run {k} ended before its kill"
    finish(out, "--resume")
    assert_clean(out)
    import json

    runs = json.loads((out / "_curate" / "manifest.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["interrupted"] * 5 + ["completed"]


OWNER = """
import sys
from ray.cluster_utils import Cluster

def ancestors(pid):
    while pid > 1:
        yield pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rpartition(")")[2].split()[1])

# The head holds no CPU, so every pool actor lives on a worker node (the writer, 0 CPU, stays
# on the head with the driver); "remove PID" removes the worker node running process PID.
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
workers = [cluster.add_node(num_cpus=1) for _ in range(3)]
cluster.wait_for_nodes()
print("ADDRESS", cluster.address, flush=True)
for line in sys.stdin:
    if line.startswith("remove"):
        try:
            chain = set(ancestors(int(line.split()[1])))
        except OSError:  # that worker has exited meanwhile: the test names another
            print("MISSING", flush=True)
            continue
        node = next(w for w in workers if w.all_processes["raylet"][0].process.pid in chain)
        workers.remove(node)
        cluster.remove_node(node)
        print("REMOVED", flush=True)
    else:
        break
cluster.shutdown()
"""


def worker_pid(line: str) -> int | None:
    """The pid in Ray's prefix of a worker's output line: "(PoolWorker pid=1234) ran (3, 0)"."""
    found = re.search(r"pid=(\d+)", line)
    return int(found.group(1)) if found else None


@pytest.mark.parametrize("pool", [[], ["--ocr-cpus", "0.75", "--ocr-replicas", "3"]], ids=["room-left", "no-room-left"])
def test_a_worker_node_removed_mid_run_loses_nothing(tmp_path, pool):
    """room-left: the removed node's actors restart on the nodes left. no-room-left: three OCR
    actors of 0.75 CPU on three 1-CPU nodes; the removed node's actor cannot be placed again,
    and the pool finishes the run with the other two (no batch waits on the missing one)."""
    # The cluster lives in its own process (removing a node of a cluster the driver's process
    # started signals that process); its record goes to its own temp dir, not /tmp/ray.
    tmp = tempfile.mkdtemp(prefix="cu-nodes-", dir="/tmp")
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(env(), RAY_TMPDIR=tmp))
    try:
        address = next(line for line in owner.stdout if line.startswith("ADDRESS")).split()[1]
        p = start(tmp_path / "out", "--big", "--slow", "0.1", "--address", address, *pool)
        seen, removed = 0, False
        for line in p.stdout:
            seen += "ran (" in line
            # well into the run: remove the node of the worker that just ran a batch (a line
            # without Ray's "(PoolWorker pid=…)" prefix, as CI once saw, waits for the next one)
            if seen >= 12 and not removed and (pid := worker_pid(line)):
                owner.stdin.write(f"remove {pid}\n")
                owner.stdin.flush()
                answer = owner.stdout.readline()
                assert answer.startswith(("REMOVED", "MISSING")), f"cluster owner answered {answer!r} to {line!r}"
                removed = answer.startswith("REMOVED")
        p.wait(timeout=400)
        stderr = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        assert p.returncode == 0, stderr[-4000:]
        assert removed and seen > 12, "the run ended before the node was removed"
    finally:
        if owner.poll() is None:
            owner.stdin.write("quit\n")
            owner.stdin.flush()
        owner.wait(timeout=120)
        subprocess.run(["rm", "-rf", tmp])
    assert_clean(tmp_path / "out", big=True)


def test_duplicate_and_stale_reports_at_the_transport_are_dropped(ray_cluster, monkeypatch):
    """Every report the Ray executor applies is delivered twice (a duplicate), and every third
    batch is first declared lost with its worker, then its real report arrives (stale): the
    scheduler drops both kinds, and the run gives the clean rows."""
    from curate.core.scheduler import Scheduler
    from curate.errors import Cause

    real_complete, counts = Scheduler.complete, {"dup": 0, "stale": 0, "n": 0}

    def complete(self, batch_id, report):
        counts["n"] += 1
        if counts["n"] % 3 == 0 and batch_id in self.in_flight:
            assert self.fail(batch_id, Cause("worker_died", "injected: declared dead before its report"))
            counts["stale"] += not real_complete(self, batch_id, report)  # the late report
            return False
        applied = real_complete(self, batch_id, report)
        counts["dup"] += applied and not real_complete(self, batch_id, report)
        return applied

    monkeypatch.setattr(Scheduler, "complete", complete)
    Doc = cu.Domain("doc")
    Page = Doc.child("page")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(lambda ds: [[(d, i) for i in range(d % 5 + 1)] for d in ds],
                                        batch_size=2, retries=9), into=Page)
    text = pages.map(cu.stage(lambda ps: [f"{d}/{i}" for d, i in ps], batch_size=3, retries=9))
    pipe.output("docs", text.reduce(cu.stage(lambda gs: ["|".join(g) for g in gs], retries=9)))
    res = cu.run(pipe, list(range(40)), executor="ray")
    assert res.values("docs") == ["|".join(f"{d}/{i}" for i in range(d % 5 + 1)) for d in range(40)]
    assert counts["dup"] > 20 and counts["stale"] > 10
    assert res.metrics.stale_reports >= counts["dup"] + counts["stale"]


def test_grains_whose_input_was_lost_run_their_roots_again_from_the_input():
    """The engine side of a lost node, driven by hand without Ray: the first OCR batch is reported
    lost for its first grain (its input payload died with a node). That grain is FAILED as
    "lost" at once (no retries spent), its root is not written but admitted again from its
    kept input, the batch's other grains are only requeued, and the outputs are those of a
    clean run."""
    from doc_stages import Doc, Page, collect, split

    from curate.executors.stage_call import run_batch
    from curate.core.plan import compile_plan
    from curate.core.scheduler import Scheduler
    from curate.run_driver import Driver, MemorySink
    from curate.errors import Cause
    from curate.run import RunResult

    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split, batch_size=2), into=Page)
    text = pages.map(cu.stage(lambda ps: [p * 10 for p in ps], batch_size=3, name="ocr"))
    pipe.output("docs", text.reduce(cu.stage(collect)))
    plan = compile_plan(pipe)
    sched = Scheduler(plan, inflight=2)
    sink = MemorySink(plan.outputs)
    driver = Driver(plan, sched, iter([2, 3, 1, 4]), input_batch_size=2, key=None, sink=sink)
    fns = {c.id: next(p.target for p in plan.pools if c.id in p.calls) for c in plan.calls}
    ocr = next(c.id for c in plan.calls if c.name == "ocr")
    lost_once = False
    while not sched.done:
        driver.drain()
        driver.admit()
        call = next((c.id for c in plan.calls if sched.ready(c.id)), None)
        assert call is not None, "nothing ready and the run is not done"
        b = sched.reserve(call)
        if call == ocr and not lost_once and len(b.keys) > 1:
            lost_once = True
            cause = Cause("lost", "an input payload of this item was lost with a Ray node", "ocr")
            assert sched.lose(b.id, [True] + [False] * (len(b.keys) - 1), cause)
            assert len(sched.lost_roots) == 1
            continue
        c = plan.calls[call]
        assert sched.complete(b.id, run_batch(fns[call], c.kind, b.inputs, c.name))
        driver.drain()
    res = RunResult(plan, sink, None)
    assert lost_once and driver.restarted_roots == 1
    assert res.values("docs") == [[0, 10], [0, 10, 20], [0], [0, 10, 20, 30]]
    assert not sched.lost_roots and not driver._raw  # nothing of the lost attempt is kept
