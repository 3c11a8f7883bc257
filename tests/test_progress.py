"""Progress per level: redrawn in place on a terminal, log lines elsewhere."""

from __future__ import annotations

import io
import sys

import curate as cu
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink
from curate.progress import Progress

Doc = cu.Domain("doc")
Page = Doc.child("page")


def pipeline():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(lambda ds: [list(range(d)) for d in ds], into=Page)
    ok = pages.map(lambda ps: [cu.ItemFailure("bad page") if p == 2 else p for p in ps])
    pipe.output("docs", ok.reduce(lambda gs: [sum(g) for g in gs]))
    return pipe


class Tty(io.StringIO):
    def isatty(self):
        return True


def run_watched(monkeypatch, pipe, inputs, stream):
    """cu.run on the local executor with its progress lines written to `stream` (run() gives
    them to its driver, and closes them at the end)."""
    monkeypatch.setattr(sys, "stderr", stream)
    return cu.run(pipe, inputs, executor="local", progress=True)


def test_a_finished_run_logs_roots_entities_and_failures_per_level(monkeypatch):
    stream = io.StringIO()
    run_watched(monkeypatch, pipeline(), [1, 3, 0, 4], stream)
    last = stream.getvalue().strip().splitlines()[-1]
    assert "\x1b[" not in last  # not a terminal: plain log lines
    assert "doc: 4/4 done (0 resumed), 0 in flight" in last
    assert "page: 8/8 done" in last and "2 failed" in last


def test_a_level_that_only_feeds_a_reduce_counts_its_entities_done(monkeypatch):
    """Pages no Call runs on (they go straight into a reduce) are done once created, not left
    at 0/N."""
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(lambda ds: [list(range(d)) for d in ds], into=Page)
    pipe.output("docs", pages.reduce(lambda gs: [sum(g) for g in gs]))
    stream = io.StringIO()
    run_watched(monkeypatch, pipe, [1, 3, 0, 4], stream)
    last = stream.getvalue().strip().splitlines()[-1]
    assert "page: 8/8 done, 0 grains run" in last


def test_two_expands_into_one_domain_are_told_apart_by_their_call(monkeypatch):
    pipe = cu.Pipeline(Doc)
    first = pipe.source.expand(cu.stage(lambda ds: [[d] for d in ds], name="whole"), into=Page)
    second = pipe.source.expand(cu.stage(lambda ds: [list(range(d)) for d in ds], name="split"), into=Page)
    pipe.output("a", first.reduce(lambda gs: [len(g) for g in gs]))
    pipe.output("b", second.reduce(lambda gs: [len(g) for g in gs]))
    stream = io.StringIO()
    run_watched(monkeypatch, pipe, [2, 3], stream)
    last = stream.getvalue().strip().splitlines()[-1]
    assert "page (whole): 2/2 done" in last and "page (split): 5/5 done" in last


def test_admitted_roots_show_as_in_flight():
    plan = cu.compile_plan(pipeline())
    stream = io.StringIO()
    d = Driver(plan, Scheduler(plan, inflight=4), [1, 3, 0, 4], input_batch_size=2, key=None, sink=MemorySink(plan.outputs))
    d.admit()
    Progress(plan, stream, total=d.total).update(d, force=True)
    line = stream.getvalue().strip()
    assert "doc: 0/4 done" in line and "4 in flight" in line and "page: 0/0 done" in line


def test_a_terminal_is_redrawn_in_place():
    plan = cu.compile_plan(pipeline())
    stream = Tty()
    d = Driver(plan, Scheduler(plan), [1, 3], input_batch_size=2, key=None, sink=MemorySink(plan.outputs))
    prog = Progress(plan, stream, total=2)
    prog.update(d, force=True)
    prog.update(d, force=True)
    out = stream.getvalue()
    assert out.count("\x1b[2K") == 6 and "\x1b[3F" in out  # three lines drawn, then drawn over
