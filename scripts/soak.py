"""Soak: fault rounds for a given time, each checked row for row against a clean run (not in CI).

    .venv/bin/python scripts/soak.py --minutes 20 [--seed N] [--out DIR] [--keep]
    .venv/bin/python scripts/soak.py --replay ROUND_SEED [--out DIR] [--keep]    # one round again

Each round runs tests/fault_job.py (real processes, the Ray executor, Parquet output) until the
job completes, with a mix of faults drawn from the round's seed:
  - a job of 30-120 documents, with 300 KB payloads (--big) or small ones, OCR slowed or not;
  - stage faults (--faults): intermittent errors, a worker dying mid-batch, a hang past the
    stage's timeout_s; the job's poison item is always there (a page that kills its worker on
    every attempt, FAILED alone);
  - the driver SIGKILLed 0-3 times, after a random number of OCR batches plus a random delay, or
    at a random moment of its start-up, each time resumed (--resume);
  - where it runs: a private local Ray (--address local), a 3-worker-node
    `ray.cluster_utils.Cluster` owned by a separate process (a worker node removed mid-run, once
    or twice, gracefully or by SIGKILL; a fresh node added before a second removal), or a
    one-node `ray start --head --block` cluster;
  - now and then the whole cluster killed mid-run (stopped, or every process SIGKILLed): the run
    must end with ClusterLostError, and is resumed with --address local.
After the round, the output is compared with `expected()` of tests/test_faults.py: every row,
status, cause and payload byte, no row missing or duplicated, no payload file that no row names,
the poison pages FAILED alone; and the manifest's run history must be what was done: each run
that started its work has one entry, SIGKILLed runs "interrupted" without an end, a run that lost
its cluster "interrupted" with the loss as its error, the last "completed" with every root done
or skipped, and the totals of a clean run.

One line per round (round, seed, size, faults applied, runs, seconds, result), then a summary;
the summary and every round's details go to DIR/soak.json (DIR: --out, default a new
/tmp/cu-soak-results-*); a failed round's logs and manifest go to DIR/round-N/. Exit 1 if any
round failed. Everything runs in /tmp/cusoak-* (Ray's temp dir included, so no cluster record is
left in /tmp/ray), removed at the end unless --keep; every process the soak starts carries
CURATE_SOAK in its environment, and any such process left at the end of a run or round is
killed by its pid (and counted). It never runs `ray stop`."""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

# the fault suite's job and its checks
from test_faults import JOB, expected, got, worker_pid

PY = sys.executable
RAY = str(Path(PY).with_name("ray"))
MARK = "CURATE_SOAK"
RUN_LIMIT_S = 480  # a run that has not ended by then is a hang
LOSS_LIMIT_S = 60  # a run whose cluster was killed must end within this (docs/guides/cluster.md: about 15 s)

# The cluster owner: a head with no CPU (pool actors all live on worker nodes; the writer, 0 CPU,
# stays on the head with the driver) and three 1-CPU worker nodes. Commands on stdin:
#   remove PID graceful|kill  remove the worker node running process PID (or, if PID is on no
#                             node, the first one), gracefully or by SIGKILL
#   add                       add a fresh 1-CPU worker node
#   quit (or EOF)             shut the cluster down
OWNER = r"""
import sys
from ray.cluster_utils import Cluster

def ancestors(pid):
    try:
        while pid > 1:
            yield pid
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rpartition(")")[2].split()[1])
    except OSError:
        return

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
workers = [cluster.add_node(num_cpus=1) for _ in range(3)]
cluster.wait_for_nodes()
print("ADDRESS", cluster.address, flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd and cmd[0] == "remove":
        chain = set(ancestors(int(cmd[1]))) if cmd[1].isdigit() else set()
        node = next((w for w in workers if w.all_processes["raylet"][0].process.pid in chain), None)
        how = "its node" if node is not None else "not on a worker node: the first"
        node = node or workers[0]
        workers.remove(node)
        cluster.remove_node(node, allow_graceful=cmd[2] == "graceful")
        print("REMOVED", how, flush=True)
    elif cmd and cmd[0] == "add":
        workers.append(cluster.add_node(num_cpus=1))
        cluster.wait_for_nodes()
        print("ADDED", flush=True)
    else:
        break
cluster.shutdown()
print("SHUTDOWN", flush=True)
"""


# ---- processes ------------------------------------------------------------------------------


def marked(prefix: str) -> dict[int, str]:
    """Live processes whose environment has CURATE_SOAK starting with `prefix`: pid -> command."""
    found, key = {}, f"{MARK}=".encode()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{d}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    continue  # a zombie: gone, its parent has not reaped it yet
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        for kv in env.split(b"\0"):
            if kv.startswith(key) and kv[len(key):].decode(errors="replace").startswith(prefix):
                found[int(d)] = cmd
                break
    return found


def sweep(prefix: str, wait_s: float) -> list[str]:
    """Wait up to `wait_s` for the processes marked `prefix` to end, then SIGKILL those left (by
    pid); returns what was left (short commands)."""
    deadline = time.monotonic() + wait_s
    left = marked(prefix)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = marked(prefix)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return [short(c) for c in left.values()]


def short(cmd: str) -> str:
    words = cmd.split()
    if not words:
        return "?"
    if words[0].startswith("ray::"):
        return words[0]
    name = next((Path(w).name for w in words if w.endswith(".py") or "/" in w), words[0])
    return name if name not in ("python", "python3") else " ".join(words[:2])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """A process's stdout, line by line through a thread (so the soak can wait with a timeout),
    copied to a log file."""

    def __init__(self, stream, log: Path):
        self.q: queue.Queue = queue.Queue()
        self.log = log
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        with open(self.log, "a") as log:
            for line in stream:
                log.write(line)
                log.flush()
                self.q.put(line)
        self.q.put(None)

    def get(self, timeout: float) -> str | None:
        """The next line, "" if none came within `timeout`, None at the end."""
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return ""

    def wait_for(self, prefix: str, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.get(min(1.0, max(0.01, deadline - time.monotonic())))
            if line is None:
                return None
            if line.startswith(prefix):
                return line
        return None


class Cluster:
    """A cluster the soak owns: "nodes" (the OWNER process above) or "head" (`ray start --head
    --block`), started with its own marker, Ray temp dir and HOME."""

    def __init__(self, kind: str, env: dict, tmp: Path, log: Path):
        self.kind, self.tag, self.alive = kind, env[MARK], False
        if kind == "nodes":
            self.proc = subprocess.Popen([PY, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
            self.lines = Lines(self.proc.stdout, log)
            line = self.lines.wait_for("ADDRESS", 180)
            if line is None:
                raise RuntimeError(f"the 3-node cluster did not start (see {log})")
            self.address = line.split()[1]
        else:
            port = free_port()
            self.proc = subprocess.Popen([RAY, "start", "--head", f"--port={port}", "--num-cpus=2",
                                          "--include-dashboard=false", "--block", f"--temp-dir={tmp}",
                                          "--disable-usage-stats"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
            self.lines = Lines(self.proc.stdout, log)
            deadline = time.monotonic() + 180
            while True:
                line = self.lines.get(1.0)
                if line is None or time.monotonic() > deadline:
                    raise RuntimeError(f"`ray start --head` did not start (see {log})")
                if "Ray runtime started" in line:
                    break
            self.address = f"127.0.0.1:{port}"
        self.alive = True

    def command(self, cmd: str, answer: str, timeout: float = 120) -> str | None:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.lines.wait_for(answer, timeout)

    def kill(self, how: str) -> None:
        """The whole cluster goes away: stopped ("stop": the owner shuts it down, `ray start
        --block` is sent SIGTERM) or every one of its processes SIGKILLed ("sigkill")."""
        self.alive = False
        if how == "sigkill":
            for pid in marked(self.tag):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        elif self.kind == "nodes":
            self.command("quit", "SHUTDOWN")
        else:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> list[str]:
        """Stop it if it is still up; returns the processes that were left (then killed)."""
        if self.proc.poll() is None:
            try:
                if self.kind == "nodes":
                    self.proc.stdin.write("quit\n")
                    self.proc.stdin.flush()
                else:
                    self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=90)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                pass
        left = sweep(self.tag, 10)
        if self.proc.poll() is None:
            self.proc.wait()
        for s in (self.proc.stdin, self.proc.stdout):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
        return left


# ---- a round ---------------------------------------------------------------------------------


@dataclass
class Plan:
    """What a round does, drawn from its seed."""

    seed: int
    docs: int
    big: bool
    slow: float
    stage_faults: bool
    where: str  # "local", "nodes" or "head"
    ends: list[dict]  # how each run before the last ends: a driver kill or the cluster killed
    removals: list[dict]  # worker nodes removed ("nodes" only), at fractions of the job's batches

    @staticmethod
    def draw(seed: int) -> Plan:
        rng = random.Random(seed)
        docs, big = rng.randint(30, 120), rng.random() < 0.4
        slow, stage_faults = rng.choice([0.0, 0.05, 0.1]), rng.random() < 0.75
        r = rng.random()
        where = "nodes" if r < 0.45 else "head" if r < 0.57 else "local"
        ends = []
        for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
            if rng.random() < 0.2:
                ends.append({"kind": "kill", "early_s": round(rng.uniform(0.5, 8.0), 2)})
            else:
                ends.append({"kind": "kill", "frac": round(rng.uniform(0.02, 0.7), 3),
                             "delay_s": round(rng.choice([0.0, rng.uniform(0.0, 1.5)]), 2)})
        if where == "head" and rng.random() < 0.8 or where == "nodes" and rng.random() < 0.25:
            ends.insert(rng.randint(0, len(ends)), {"kind": "cluster", "frac": round(rng.uniform(0.05, 0.6), 3),
                                                    "how": rng.choice(["stop", "sigkill"])})
        removals = []
        if where == "nodes":
            fracs = sorted(rng.uniform(0.05, 0.8) for _ in range(rng.choice([1, 1, 2])))
            removals = [{"frac": round(f, 3), "how": rng.choice(["graceful", "kill"])} for f in fracs]
        return Plan(seed, docs, big, slow, stage_faults, where, ends, removals)

    def batches(self) -> int:
        """About how many OCR batches a clean run has (batches of 4 pages)."""
        return max(1, sum(d % 6 + 1 for d in range(self.docs)) // 4)


@dataclass
class RunRecord:
    resume: bool
    address: str
    planned: str  # "kill", "early-kill", "cluster" or "complete"
    outcome: str = ""  # "completed", "killed", "cluster-lost" or "crashed"/"hung"/...
    rc: int | None = None
    batches: int = 0
    seconds: float = 0.0
    entry: dict | None = None  # its manifest entry as the run left it
    note: str = ""


@dataclass
class Round:
    index: int
    plan: Plan
    runs: list[RunRecord] = field(default_factory=list)
    applied: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # a failed check: the round fails
    notes: list[str] = field(default_factory=list)  # known behaviour of Ray worth seeing: shown, not failed
    leftovers: list[str] = field(default_factory=list)
    rows: int = 0
    payload_bytes: int = 0
    seconds: float = 0.0
    restarted_roots: int = 0
    loss_seconds: list[float] = field(default_factory=list)


def job_env(base: dict, tag: str, ray_tmp: Path) -> dict:
    env = dict(base)
    env[MARK] = tag
    env["RAY_TMPDIR"] = str(ray_tmp)
    return env


def base_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    env["HOME"] = str(home)  # `ray start` turns token auth on when ~/.ray/auth_token exists
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    env["RAY_DEDUP_LOGS"] = "0"  # every worker "ran" line reaches the driver's stdout: kill points count them
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def read_manifest(out: Path) -> dict | None:
    p = out / "_curate" / "manifest.json"
    try:
        return json.loads(p.read_text()) if p.exists() else None
    except (OSError, json.JSONDecodeError) as exc:
        return {"unreadable": str(exc)}


def play(rnd: Round, work: Path, home: Path, session: str) -> None:
    """Run the round's job until it completes, applying its faults; then check its output."""
    plan, started = rnd.plan, time.monotonic()
    work.mkdir(parents=True)
    out, marks, logs = work / "out", work / "faults", work / "logs"
    marks.mkdir()
    logs.mkdir()
    base = base_env(home)
    cluster = None
    applied = rnd.applied
    applied.update(driver_kills=0, early_kills=0, nodes_removed=0, nodes_added=0, clusters_killed=0)
    try:
        if plan.where != "local":
            cluster = Cluster(plan.where, job_env(base, f"{session}:r{rnd.index}:cluster", work), work,
                              logs / "cluster.log")
        ends, removals, completed = list(plan.ends), list(plan.removals), False
        total, seen_all = plan.batches(), 0
        while True:
            k = len(rnd.runs)
            if k > len(plan.ends) + 3:
                rnd.problems.append(f"the job did not complete in {k} runs")
                break
            end = ends.pop(0) if ends else None
            if end is not None and end["kind"] == "cluster" and (cluster is None or not cluster.alive):
                end = ends.pop(0) if ends else None
            address = cluster.address if cluster is not None and cluster.alive else "local"
            planned = "complete" if end is None else "early-kill" if "early_s" in end else end["kind"]
            run = RunRecord(resume=k > 0, address=address, planned=planned)
            rnd.runs.append(run)
            before = read_manifest(out)
            n_before = len(before["runs"]) if before and "runs" in before else 0
            seen_all = drive(rnd, run, end, removals, cluster, out, marks, logs / f"run{k}", total, seen_all,
                             job_env(base, f"{session}:r{rnd.index}:job{k}", work))
            left = sweep(f"{session}:r{rnd.index}:job{k}", 15)
            if left:  # Ray's business more than curate's: counted and shown, not a failed check
                rnd.leftovers += [f"run {k} ({run.outcome}): {c}" for c in left]
            after = read_manifest(out)
            entries = after.get("runs", []) if after else []
            if len(entries) == n_before + 1:
                run.entry = entries[-1]
            elif len(entries) != n_before:
                rnd.problems.append(f"run {k} changed the number of manifest entries from {n_before} to {len(entries)}")
            check_entry(rnd, k, run)
            if run.outcome == "completed" or run.outcome == "killed" and (run.entry or {}).get("status") == "completed":
                if run.outcome != "completed":
                    run.note = "SIGKILLed after it had completed"
                completed = True
                break
            # crashed or hung: the round has failed, but it goes on (resumed) to see what was kept
        if plan.stage_faults:
            fired = [p.name for p in marks.iterdir()]
            applied["stage_faults"] = {k: sum(f.startswith(k) for f in fired) for k in ("die", "hang", "flaky")}
        if completed:
            check_output(rnd, out, marks)
        elif not rnd.problems:
            rnd.problems.append("the job did not complete")
    except Exception as exc:  # noqa: BLE001 - the soak's own machinery failed: the round's problem
        rnd.problems.append(f"soak error: {type(exc).__name__}: {exc}")
    finally:
        if cluster is not None:
            rnd.leftovers += [f"cluster: {c}" for c in cluster.close()]
        rnd.leftovers += [f"round: {c}" for c in sweep(f"{session}:r{rnd.index}:", 5)]
        rnd.seconds = time.monotonic() - started


def drive(rnd: Round, run: RunRecord, end: dict | None, removals: list[dict], cluster: Cluster | None, out: Path,
          marks: Path, log: Path, total: int, seen_all: int, env: dict) -> int:
    """One run of the job, with its faults; returns the OCR batches seen so far in the round."""
    plan, applied = rnd.plan, rnd.applied
    cmd = [PY, str(JOB), str(out), "--docs", str(plan.docs), "--executor", "ray", "--address", run.address,
           "--slow", str(plan.slow)]
    cmd += ["--faults", str(marks)] if plan.stage_faults else []
    cmd += ["--big"] if plan.big else []
    cmd += ["--resume"] if run.resume else []
    err = open(f"{log}.err", "w")  # noqa: SIM115 - the job writes to it until it ends
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                         start_new_session=True)
    lines = Lines(p.stdout, Path(f"{log}.out"))
    remaining = max(1, total - seen_all)
    at = max(1, int(end["frac"] * remaining)) if end and "frac" in end else None
    kill_due = t0 + end["early_s"] if end and "early_s" in end else None
    seen, sent, lost_at, done_line = 0, None, None, ""
    try:
        while True:
            line = lines.get(0.2)
            now = time.monotonic()
            if line == "" and p.poll() is not None:
                lines.thread.join(5)  # its last lines (Ray's processes may hold the pipe open longer)
                line = lines.get(0)
                if line == "":
                    break
            if line is None:
                break
            if line.startswith("done "):
                done_line = line
            if "ran (" in line:
                seen += 1
                seen_all += 1
                if removals and cluster is not None and cluster.alive and seen_all >= removals[0]["frac"] * total:
                    r = removals.pop(0)
                    if applied["nodes_removed"] >= 1:
                        if cluster.command("add", "ADDED") is None:
                            rnd.problems.append("the owner did not add a node")
                        else:
                            applied["nodes_added"] += 1
                    answer = cluster.command(f"remove {worker_pid(line) or 'none'} {r['how']}", "REMOVED")
                    if answer is None:
                        rnd.problems.append("the owner did not remove a node")
                    else:
                        applied["nodes_removed"] += 1
                        applied.setdefault("removals", []).append(f"{r['how']} at batch {seen_all}")
                if at is not None and sent is None and seen >= at:
                    if end["kind"] == "kill":
                        if end["delay_s"]:
                            time.sleep(end["delay_s"])
                        sent = time.monotonic()
                        p.send_signal(signal.SIGKILL)
                    else:
                        cluster.kill(end["how"])
                        sent = lost_at = time.monotonic()
                        applied["clusters_killed"] += 1
                        applied.setdefault("cluster_kills", []).append(end["how"])
            if kill_due is not None and sent is None and now >= kill_due and p.poll() is None:
                sent = now
                p.send_signal(signal.SIGKILL)
            if lost_at is not None and now - lost_at > LOSS_LIMIT_S and p.poll() is None:
                run.note = f"still running {LOSS_LIMIT_S} s after its cluster was killed"
                p.kill()
                break
            if now - t0 > RUN_LIMIT_S and p.poll() is None:
                run.note = f"still running after {RUN_LIMIT_S} s"
                p.kill()
                break
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        err.close()
        p.stdout.close()
    run.rc, run.batches, run.seconds = rc, seen, time.monotonic() - t0
    stderr = Path(f"{log}.err").read_text(errors="replace")
    if done_line and "restarted" in done_line:
        try:
            rnd.restarted_roots += int(done_line.rsplit(None, 1)[1])
        except ValueError:
            pass
    if run.note:
        run.outcome = "hung"
        rnd.problems.append(f"run {len(rnd.runs) - 1}: {run.note} (seed {plan.seed})")
    elif rc == 0:
        run.outcome = "completed"
    elif rc == -signal.SIGKILL and sent is not None and (end or {}).get("kind") == "kill":
        run.outcome = "killed"
        applied["driver_kills"] += 1
        applied["early_kills"] += "early_s" in end
    elif lost_at is not None and rc == 1 and last_exception(stderr).endswith("ClusterLostError"):
        run.outcome = "cluster-lost"
        rnd.loss_seconds.append(round(time.monotonic() - lost_at, 1))
    elif lost_at is not None and rc == 1 and "Traceback" not in stderr and (why := ray_end_reason(out.parent, p.pid)):
        # The driver's own node (its raylet and object store) went before the GCS: Ray's core ends
        # the process at once, before curate can see the GCS go. Ray's doing, not curate's; shown.
        run.outcome = "ended-by-ray"
        rnd.notes.append(f"run {len(rnd.runs) - 1}: Ray's core ended the driver (exit 1, no Python error) when the "
                         f"cluster went away: {why}; no ClusterLostError, its manifest entry left 'running' "
                         f"(seed {plan.seed})")
    else:
        run.outcome = "crashed"
        tail = "\n    ".join(stderr.strip().splitlines()[-12:])
        why = "after its cluster was killed" if lost_at else "no fault ended it"
        rnd.problems.append(f"run {len(rnd.runs) - 1} ended with exit {rc} ({why}):\n    {tail}")
    return seen_all


def last_exception(stderr: str) -> str:
    """The type of the exception a Python process ended with ("" if it printed no traceback)."""
    if "Traceback (most recent call last)" not in stderr:
        return ""
    for x in reversed(stderr.splitlines()):
        m = re.match(r"([A-Za-z_][\w.]*)(: |$)", x)
        if m and not x.startswith(("[", "Traceback")):
            return m.group(1)
    return ""


def ray_end_reason(work: Path, pid: int) -> str:
    """The line of the driver's Ray core log saying that Ray ended the process because its node's
    raylet or object store went away ("" if there is none)."""
    for log in work.glob(f"**/logs/python-core-driver-*_{pid}.log"):
        for x in reversed(log.read_text(errors="replace").splitlines()):
            if ("plasma store" in x or "raylet" in x.lower()) and ("Terminate" in x or "exit" in x.lower()):
                return "its core log ends " + repr(x.split("] ", 1)[-1][:160])
    return ""


def check_entry(rnd: Round, k: int, run: RunRecord) -> None:
    """The manifest entry a run left is what that run was."""
    e, where = run.entry, f"run {k} ({run.outcome})"
    if e is None:
        if run.outcome in ("completed", "cluster-lost") or run.outcome == "killed" and run.batches > 0:
            rnd.problems.append(f"{where} did work but left no manifest entry")
        return
    if e.get("resumed") is not run.resume:
        rnd.problems.append(f"{where}: manifest says resumed={e.get('resumed')}, it was {run.resume}")
    how = (e.get("cluster") or {}).get("how")
    want_how = "private" if run.address == "local" else "joined"
    if how != want_how:
        rnd.problems.append(f"{where}: manifest says its Ray was {how!r}, it was {want_how!r}")
    status = e.get("status")
    if run.outcome in ("killed", "ended-by-ray") and status not in ("running", "completed"):
        rnd.problems.append(f"{where}: SIGKILLed, but its entry says {status!r} (want 'running' until the next run)")
    if run.outcome == "cluster-lost" and (status != "interrupted"
                                          or "lost the Ray cluster" not in (e.get("error") or "")):
        rnd.problems.append(f"{where}: entry {status!r} error {e.get('error')!r} "
                            "(want interrupted, lost the Ray cluster)")
    if run.outcome == "completed" and status != "completed":
        rnd.problems.append(f"{where}: exited 0 but its entry says {status!r}")
    if status == "completed":
        done = (e.get("roots_done") or 0) + (e.get("roots_skipped") or 0)
        if done != rnd.plan.docs:
            rnd.problems.append(f"{where}: roots done {e.get('roots_done')} + skipped {e.get('roots_skipped')} "
                                f"!= {rnd.plan.docs} inputs")


def counts_of(rows: list[tuple]) -> dict[str, int]:
    c: dict[str, int] = {}
    for r in rows:
        c[r[1]] = c.get(r[1], 0) + 1
    return c


def check_output(rnd: Round, out: Path, marks: Path) -> None:
    """Rows and payloads against a clean run's; the run history against what was done."""
    plan = rnd.plan
    want = expected(plan.docs, big=plan.big)
    try:
        have = got(out)
    except Exception as exc:  # noqa: BLE001 - any failure to read the output is a failed check
        rnd.problems.append(f"the output cannot be read: {type(exc).__name__}: {exc}")
        return
    for name in ("pages", "docs"):
        rows, ref = have[name], want[name]
        lineages = [r[0] for r in rows]
        dup = sorted({x for x in lineages if lineages.count(x) > 1})
        missing = sorted({r[0] for r in ref} - set(lineages))
        extra = sorted(set(lineages) - {r[0] for r in ref})
        wrong = [r[0] for r in rows if r[0] in {x[0] for x in ref} and r not in ref]
        if dup or missing or extra or wrong:
            rnd.problems.append(f"{name}: {len(rows)} rows vs {len(ref)}: duplicated {dup[:8]}, missing {missing[:8]}, "
                                f"extra {extra[:8]}, differing {wrong[:8]}"
                                + "".join(f"\n    got {r[:3]}" for r in rows if r[0] in wrong[:3]))
        rnd.rows += len(rows)
    rnd.payload_bytes = sum(len(v[3]) for _, st, _, v in have["pages"] if st == "present")
    named = {str(r) for r in _payload_names(out)}
    on_disk = {str(p.relative_to(out / "pages")) for p in (out / "pages").rglob("*")
               if p.is_file() and "_files" in p.relative_to(out / "pages").parts}
    if on_disk != named:
        rnd.problems.append(f"payload files: {len(on_disk - named)} that no row names "
                            f"(e.g. {sorted(on_disk - named)[:3]}), {len(named - on_disk)} named but absent")
    man = read_manifest(out) or {}
    statuses = [r.get("status") for r in man.get("runs", [])]
    want_status = {"killed": "interrupted", "cluster-lost": "interrupted", "ended-by-ray": "interrupted",
                   "hung": "interrupted", "crashed": "failed"}
    history = [want_status.get(r.outcome, r.outcome) for r in rnd.runs if r.entry is not None][:-1] + ["completed"]
    if statuses != history:
        rnd.problems.append(f"manifest run history {statuses}: want {history} (interrupted runs, then completed)")
    entries = [r.entry for r in rnd.runs if r.entry is not None]
    if [e["run"] for e in entries] != [r.get("run") for r in man.get("runs", [])]:
        rnd.problems.append("the manifest's runs are not the runs the soak saw start, in order")
    for e, r in zip(man.get("runs", []), (r for r in rnd.runs if r.entry is not None)):
        if r.outcome == "killed" and e.get("status") != "completed" and "finished" in e:
            rnd.problems.append(f"a SIGKILLed run's entry has an end: {e}")
    totals = {name: counts_of(want[name]) for name in ("pages", "docs")}
    if man.get("counts") != totals:
        rnd.problems.append(f"manifest totals {man.get('counts')} != a clean run's {totals}")
    if plan.stage_faults:
        fired = sorted(p.name for p in marks.iterdir())
        want_fired = {f"die-{d}" for d in range(plan.docs) if d % 9 == 2} | {"hang"}
        want_fired |= {f"flaky-{d}-{i}" for d in range(plan.docs) for i in range(d % 6 + 1)
                       if (d * 7 + i) % 7 == 3 and not (d % 13 == 5 and i == 2)}
        if not want_fired <= set(fired):
            rnd.problems.append(f"stage faults that never fired: {sorted(want_fired - set(fired))[:8]}")
    rnd.applied["poison_pages"] = sum(1 for r in want["pages"] if r[1] == "failed")


def _payload_names(out: Path) -> list[str]:
    import pyarrow.parquet as pq

    return [r["scan"] for r in pq.read_table(out / "pages", columns=["status", "scan"]).to_pylist()
            if r["status"] == "present" and r["scan"]]


# ---- reporting -------------------------------------------------------------------------------


def describe(rnd: Round) -> str:
    p, a = rnd.plan, rnd.applied
    parts = [p.where + ("" if p.where == "local" else " cluster")]
    if p.stage_faults:
        sf = a.get("stage_faults")
        parts.append("stage faults" + (f" (die {sf['die']}, hang {sf['hang']}, flaky {sf['flaky']})" if sf else ""))
    if a.get("driver_kills"):
        early = f" ({a['early_kills']} at start-up)" if a.get("early_kills") else ""
        parts.append(f"driver SIGKILL x{a['driver_kills']}{early}")
    if a.get("nodes_removed"):
        parts.append(f"node removed x{a['nodes_removed']} ({', '.join(x.split()[0] for x in a.get('removals', []))})"
                     + (f" + {a['nodes_added']} added" if a.get("nodes_added") else ""))
    if a.get("clusters_killed"):
        ended = [f"ClusterLostError after {s:g} s" for s in rnd.loss_seconds]
        ended += ["the driver ended by Ray"] * sum(r.outcome == "ended-by-ray" for r in rnd.runs)
        parts.append(f"cluster killed ({', '.join(a['cluster_kills'])}; {', '.join(ended) or 'run not ended by it'})")
    return ", ".join(parts)


def line(rnd: Round) -> str:
    p = rnd.plan
    short_names = {"completed": "done", "killed": "kill", "cluster-lost": "lost", "ended-by-ray": "ray-ended"}
    runs = "+".join(short_names.get(r.outcome, r.outcome.upper()) for r in rnd.runs)
    result = "ok" if not rnd.problems else "FAILED"
    return (f"round {rnd.index:3d}  seed {p.seed:<10d}  {p.docs:3d} docs{' big' if p.big else '    '}  "
            f"{describe(rnd)}  |  runs {len(rnd.runs)} ({runs})  {rnd.seconds:6.1f} s  {result}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="start rounds until this much time has passed")
    ap.add_argument("--seed", type=int, default=None, help="seed of the whole soak (default: drawn, printed)")
    ap.add_argument("--replay", type=int, default=None, help="run the one round with this round seed")
    ap.add_argument("--rounds", type=int, default=None, help="stop after this many rounds")
    ap.add_argument("--out", type=Path, default=None, help="where soak.json and failed rounds' logs go")
    ap.add_argument("--keep", action="store_true", help="keep every round's working directory")
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    out = args.out or Path(tempfile.mkdtemp(prefix="cu-soak-results-", dir="/tmp"))
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cusoak-", dir="/tmp"))  # short: Ray's socket paths live under it
    home = work / "home"
    home.mkdir()
    session = work.name
    print(f"soak: seed {seed}, {args.minutes:g} min, job {JOB.relative_to(ROOT)}, work dir {work}, results {out}",
          flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    rounds: list[Round] = []
    started, interrupted = time.monotonic(), False
    try:
        while True:
            if args.replay is not None and rounds:
                break
            if args.replay is None and time.monotonic() - started >= args.minutes * 60:
                break
            if args.rounds is not None and len(rounds) >= args.rounds:
                break
            rseed = args.replay if args.replay is not None else rng.randrange(2**31)
            rnd = Round(len(rounds) + 1, Plan.draw(rseed))
            rounds.append(rnd)
            rdir = work / f"r{rnd.index}"
            play(rnd, rdir, home, session)
            print(line(rnd), flush=True)
            for p in rnd.problems:
                print(f"    ! {p}", flush=True)
            for n in rnd.notes:
                print(f"    ~ {n}", flush=True)
            if rnd.leftovers:
                print(f"    ~ {len(rnd.leftovers)} process(es) left behind, killed: {'; '.join(rnd.leftovers)}",
                      flush=True)
            if rnd.problems:
                keep_logs(rnd, rdir, out / f"round-{rnd.index}")
            if not args.keep:
                shutil.rmtree(rdir, ignore_errors=True)
    except KeyboardInterrupt:
        interrupted = True
        print("soak: interrupted; cleaning up", flush=True)
    finally:
        left = sweep(f"{session}:", 5)
        if left:
            print(f"soak: killed {len(left)} process(es) left at the end: {', '.join(sorted(set(left)))}", flush=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    summary = summarise(seed, args, rounds, time.monotonic() - started, interrupted)
    (out / "soak.json").write_text(json.dumps(summary, indent=2, default=str))
    print(report(summary), flush=True)
    kept = f"; working files kept in {work}" if args.keep else ""
    print(f"soak: summary in {out / 'soak.json'}{kept}", flush=True)
    return 1 if summary["failed"] or interrupted or not rounds else 0


def keep_logs(rnd: Round, rdir: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    if (rdir / "logs").exists():
        shutil.copytree(rdir / "logs", dest / "logs", dirs_exist_ok=True)
    man = rdir / "out" / "_curate" / "manifest.json"
    if man.exists():
        shutil.copy(man, dest / "manifest.json")


def summarise(seed: int, args, rounds: list[Round], seconds: float, interrupted: bool) -> dict:
    faults = {"stage_fault_rounds": 0, "worker_deaths": 0, "hangs": 0, "intermittent_errors": 0, "poison_pages": 0,
              "driver_kills": 0, "driver_kills_at_start_up": 0, "nodes_removed": 0, "nodes_added": 0,
              "clusters_killed": 0, "runs": 0}
    for r in rounds:
        a = r.applied
        sf = a.get("stage_faults")
        faults["stage_fault_rounds"] += r.plan.stage_faults
        if sf:
            faults["worker_deaths"] += sf["die"]
            faults["hangs"] += sf["hang"]
            faults["intermittent_errors"] += sf["flaky"]
        faults["poison_pages"] += a.get("poison_pages", 0)
        faults["driver_kills"] += a.get("driver_kills", 0)
        faults["driver_kills_at_start_up"] += a.get("early_kills", 0)
        faults["nodes_removed"] += a.get("nodes_removed", 0)
        faults["nodes_added"] += a.get("nodes_added", 0)
        faults["clusters_killed"] += a.get("clusters_killed", 0)
        faults["runs"] += len(r.runs)
    return {
        "seed": seed, "minutes": args.minutes, "replay": args.replay, "seconds": round(seconds, 1),
        "interrupted": interrupted, "rounds": len(rounds), "failed": sum(bool(r.problems) for r in rounds),
        "faults": faults,
        "where": {w: sum(r.plan.where == w for r in rounds) for w in ("local", "nodes", "head")},
        "rows_checked": sum(r.rows for r in rounds),
        "payload_bytes_checked": sum(r.payload_bytes for r in rounds),
        "roots_restarted_after_lost_payloads": sum(r.restarted_roots for r in rounds),
        "cluster_loss_seconds": [s for r in rounds for s in r.loss_seconds],
        "leftover_processes_killed": sum(len(r.leftovers) for r in rounds),
        "runs_ended_by_ray": sum(run.outcome == "ended-by-ray" for r in rounds for run in r.runs),
        "notes": [n for r in rounds for n in r.notes],
        "round_details": [{
            "round": r.index, "seed": r.plan.seed, "plan": r.plan.__dict__, "applied": r.applied,
            "runs": [{k: v for k, v in run.__dict__.items() if k != "entry"}
                     | {"status": (run.entry or {}).get("status")} for run in r.runs],
            "rows": r.rows, "payload_bytes": r.payload_bytes, "seconds": round(r.seconds, 1),
            "problems": r.problems, "notes": r.notes, "leftovers": r.leftovers, "line": line(r),
            "replay": f"{PY} scripts/soak.py --replay {r.plan.seed}",
        } for r in rounds],
    }


def report(s: dict) -> str:
    f = s["faults"]
    lines = [
        (f"soak: {s['rounds']} rounds in {s['seconds'] / 60:.1f} min (seed {s['seed']}): "
         f"{s['rounds'] - s['failed']} passed, {s['failed']} failed" + (" (interrupted)" if s["interrupted"] else "")),
        (f"  where: {s['where']['local']} private local Ray, {s['where']['nodes']} 3-node cluster, "
         f"{s['where']['head']} `ray start` head; {f['runs']} runs"),
        (f"  faults: stage faults in {f['stage_fault_rounds']} rounds ({f['worker_deaths']} worker deaths mid-batch, "
         f"{f['hangs']} hangs past timeout_s, {f['intermittent_errors']} intermittent errors), "
         f"{f['poison_pages']} poison pages, {f['driver_kills']} driver SIGKILLs ({f['driver_kills_at_start_up']} at "
         f"start-up), {f['nodes_removed']} worker nodes removed ({f['nodes_added']} added), "
         f"{f['clusters_killed']} clusters killed"),
        (f"  checked: {s['rows_checked']} rows, {s['payload_bytes_checked'] / 2**20:.1f} MiB of payloads; "
         f"{s['roots_restarted_after_lost_payloads']} roots restarted for lost payloads; cluster losses ended runs in "
         f"{s['cluster_loss_seconds']} s with ClusterLostError, {s['runs_ended_by_ray']} ended by Ray's core "
         f"instead; {s['leftover_processes_killed']} leftover processes killed"),
    ]
    lines += [f"  note: {n}" for n in s["notes"]]
    for r in s["round_details"]:
        if r["problems"]:
            lines.append(f"  FAILED round {r['round']} (seed {r['seed']}; replay: {r['replay']}):")
            lines += [f"    {p}" for p in r["problems"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
