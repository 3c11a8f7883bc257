"""Hangs: `timeout_s` fails an attempt that runs too long (retried, isolated, then FAILED with
cause kind `timeout`) and replaces its worker, on both executors; progress and timed flushes
go on while a stage hangs (the driver's heartbeat)."""

from __future__ import annotations

import io
import os
import sys
import threading

import pytest

import curate as cu
from curate import progress as progress_mod
from curate.io import commits as commits_mod

Doc = cu.Domain("doc")
P, F = cu.Status.PRESENT, cu.Status.FAILED
RELEASE = threading.Event()  # lets hung local threads end when the test is over
# The hung test's limit: only the hung attempts (waiting on RELEASE, set when the test is over)
# may reach it; its near-free batches (an upper()) must not, even on a machine stalled by other
# work, where 1 s could pass between a batch's dispatch and its answer. The hung attempts wait
# it out (3 of them: the test takes about 3 x this on each executor).
LIMIT_S = 5.0


def _hang() -> None:
    """Local: until the test ends; Ray: until the actor is killed (module-level, so a stage
    that calls it pickles by reference, without the Event)."""
    RELEASE.wait(120)


@pytest.fixture(autouse=True)
def _release_hung_threads():
    RELEASE.clear()
    yield
    RELEASE.set()


def test_a_hung_item_times_out_alone_and_its_worker_is_replaced(executor, recorder):
    def ocr(xs):
        if "hang" in xs:
            recorder.add("hung in", os.getpid())
            _hang()
        return [x.upper() for x in xs]

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(ocr, batch_size=2, retries=1, timeout_s=LIMIT_S)))
    res = cu.run(pipe, ["a", "hang", "b", "c"], executor=executor)
    items = res.items("out")
    assert [it.status for it in items] == [P, F, P, P], [str(it.cause) for it in items]
    assert res.values("out")[0] == "A" and res.values("out")[3] == "C"
    cause = items[1].cause
    assert cause.kind == "timeout" and cause.call == "ocr" and f"timeout_s={LIMIT_S:g}" in cause.message
    hung = recorder.values("hung in")
    assert len(hung) == 3  # with its batch-mate, alone, and once more (retries=1)
    if executor == "ray":  # each attempt ran in a fresh actor process: the hung one was replaced
        assert len(set(hung)) == 3
    else:
        assert sum(len(p.worker_batches) for p in res.metrics.pools.values()) == 1 + 3  # 3 threads replaced


def test_timeout_s_is_checked_at_plan_time():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(lambda xs: xs, timeout_s=0)))
    with pytest.raises(cu.PlanError, match="timeout_s=0; it must be a number of seconds > 0"):
        cu.compile_plan(pipe)


class Lines(io.StringIO):
    """A progress stream that tells when it has received `n` log lines."""

    def __init__(self, n: int):
        super().__init__()
        self.enough, self.n = threading.Event(), n

    def write(self, s):
        out = super().write(s)
        if self.getvalue().count("\n") >= self.n:
            self.enough.set()
        return out


def test_progress_lines_keep_coming_while_a_stage_hangs(monkeypatch):
    monkeypatch.setattr(progress_mod, "PROGRESS_LOG_S", 0.2)
    stream = Lines(3)

    def stuck(xs):  # returns once three progress lines were written while it was stuck
        return [stream.enough.wait(60) for _ in xs]

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(stuck))
    monkeypatch.setattr(sys, "stderr", stream)  # where run() writes its progress lines
    res = cu.run(pipe, [1], executor="local", progress=True)
    assert res.values("out") == [True], "no progress line while the stage was stuck"


def test_a_hung_run_still_commits_what_finished(monkeypatch, tmp_path):
    committed = threading.Event()
    real_commit = commits_mod.CommitLog.commit

    def commit(self, record):
        real_commit(self, record)
        committed.set()

    monkeypatch.setattr(commits_mod.CommitLog, "commit", commit)

    def work(xs):  # the last input waits until the finished ones are committed by the timer
        return [committed.wait(60) if x == 3 else True for x in xs]

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(work))
    res = cu.run(pipe, range(4), executor="local", input_batch_size=1, inflight=1, output_dir=tmp_path,
                 sink_options={"flush_s": 0.2})
    assert res.values("out") == [True] * 4, "the timed flush did not happen while a stage hung"
