"""Ctrl-C at every point of a run: during start-up (Ray workers starting) it stops the run at
once, writing no run into the manifest; during the run it commits what finished; once the run
is stopping (releasing workers, writing the manifest, Ray's shutdown at exit) another Ctrl-C
prints no traceback and changes neither the exit code nor what is committed. The process tests
synchronise on files and lines the process writes, never on sleeps; their timeouts only catch
a hang (the latencies are measured for docs/benchmarks.md, not asserted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hang_stages import RECIPE as HANG
from startup_stages import HELD_WORKERS

import curate as cu
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink
from curate.run import _ctrl_c

TESTS = Path(__file__).resolve().parent
HANG_S = 120  # a process still running after this long has hung (a run here takes ~15 s)


def curate(tmp_path: Path, recipe: str, *args: str, **env: str) -> subprocess.Popen:
    (tmp_path / "job.yaml").write_text(recipe)
    if not (tmp_path / "docs.parquet").exists():
        pq.write_table(pa.table({"doc": [str(i) for i in range(8)]}), tmp_path / "docs.parquet")
    env = dict(os.environ, RAY_ADDRESS="", **env,
               PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "curate.cli", "run", str(tmp_path / "job.yaml"), "--output",
                             str(tmp_path / "out"), "--no-progress", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)


def wait_for(path: Path, p: subprocess.Popen) -> None:
    """Until the process (or one of its Ray workers) creates `path`; fails if it exits first."""
    from startup_stages import POLL_S

    while not path.exists():
        assert p.poll() is None, p.communicate()[1][-3000:]
        try:
            p.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass


def test_ctrl_c_while_ray_workers_start_stops_the_run_and_records_nothing(tmp_path):
    held, release = tmp_path / "held", tmp_path / "release"
    p = curate(tmp_path, HELD_WORKERS, CURATE_TEST_STARTED=str(held), CURATE_TEST_RELEASE=str(release))
    wait_for(held, p)  # a Ray worker is held at its start: no actor has answered, nothing is admitted
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=HANG_S)
    assert p.returncode == 130, err[-3000:]
    assert "interrupted before the run started: nothing was committed" in err
    assert "Traceback" not in err and "continue with:" not in err
    assert not (tmp_path / "out" / "_curate" / "manifest.json").exists()  # no run recorded

    release.touch()  # the same command again, without --resume, runs the whole job
    p = curate(tmp_path, HELD_WORKERS, CURATE_TEST_STARTED=str(held), CURATE_TEST_RELEASE=str(release))
    _, err = p.communicate(timeout=HANG_S)
    assert p.returncode == 0, err[-3000:]
    assert sorted(pq.read_table(tmp_path / "out" / "docs").column("value").to_pylist()) == [str(i) for i in range(8)]


def test_second_ctrl_c_while_the_process_exits_prints_no_traceback(tmp_path):
    p = curate(tmp_path, HANG, "--executor", "ray", CURATE_TEST_HANG_DOC="5")
    for line in p.stdout:  # documents 0-4 are done once document 5 hangs
        if "blocked on" in line:
            break
    p.send_signal(signal.SIGINT)
    err = []
    for line in p.stderr:
        err.append(line)
        if line.startswith("curate run: interrupted"):  # printed as Ray starts to shut down
            p.send_signal(signal.SIGINT)
            break
    p.wait(timeout=HANG_S)
    err = "".join(err) + p.stderr.read()  # the rest, with what the line iterator had buffered
    assert p.returncode == 130, err[-3000:]
    assert "interrupted: 5 input(s) are committed" in err and "continue with:" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert sorted(pq.read_table(tmp_path / "out" / "docs").column("root_key").to_pylist()) == [str(i) for i in range(5)]


def driver() -> Driver:
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("docs", pipe.source.map(cu.stage(lambda xs: xs, name="same")))
    plan = compile_plan(pipe)
    return Driver(plan, Scheduler(plan), ["a"], input_batch_size=1, key=None, sink=MemorySink(plan.outputs))


@pytest.mark.parametrize("phase", ["starting", "running", "asked twice", "stopping"])
def test_what_a_ctrl_c_does_in_each_phase_of_a_run(phase):
    d = driver()  # a new run is starting: nothing admitted yet
    if phase != "starting":
        d.started_workers()
    if phase in ("asked twice", "stopping"):
        d.interrupt()  # the first Ctrl-C while the run goes on
    if phase == "stopping":
        with pytest.raises(KeyboardInterrupt):
            d.heartbeat()  # commits what finished and stops the run
    stops = phase in ("starting", "asked twice")
    before = signal.getsignal(signal.SIGINT)
    with _ctrl_c(d):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            assert stops, f"a Ctrl-C while {phase} raised"
        else:
            assert not stops, f"a Ctrl-C while {phase} did not stop the run at once"
    assert d.interrupted  # the run's end says "interrupted" whenever a Ctrl-C came
    assert d.stopping == (phase != "running")
    assert signal.getsignal(signal.SIGINT) is before
