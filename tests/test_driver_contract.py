"""The Driver's contract: what run() gives it at construction (the committed keys it skips, the
call once the workers are up), and the RunStats it gives back, which is what the run's
metrics report."""

from __future__ import annotations

import dataclasses

import pytest

import curate as cu
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink
from curate.executors import get_executor
from curate.metrics import collect


def plan():
    pipe = cu.Pipeline(cu.Domain("doc"))
    pipe.output("docs", pipe.source.map(cu.stage(lambda xs: [x.upper() for x in xs], name="upper")))
    return compile_plan(pipe)


def test_the_run_stats_carry_what_the_metrics_report():
    p = plan()
    sched = Scheduler(p)
    sink = MemorySink(p.outputs)
    d = Driver(p, sched, ["a", "b", "c"], input_batch_size=1, key=lambda x: x, sink=sink, skip={"b"})
    pools = get_executor("local").execute(d)
    stats = d.stats()
    assert (stats.roots, stats.skipped, stats.restarted_roots) == (2, 1, 0)
    assert sorted(sink.keys.values()) == ["a", "c"]  # "b" was committed before: passed over
    assert stats.timeline and all(call == p.calls[0].id for call, *_ in stats.timeline)
    m = collect(p, sched, stats, pools)
    assert (m.wall_s, m.startup_s, m.workers_ready_s, m.first_root_s, m.roots, m.restarted_roots) == (
        stats.wall_s, stats.startup_s, stats.workers_ready_s, stats.first_root_s, stats.roots, stats.restarted_roots)
    assert m.timeline == [("upper", *event[1:]) for event in stats.timeline]
    assert m.writer_peak_rss == stats.writer_peak_rss == 0  # no Parquet writer actor here
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.roots = 0  # a value read once, not the driver's counters


def test_on_start_is_called_once_the_workers_are_up_with_the_cluster_the_run_uses():
    p = plan()
    seen = []
    d = Driver(p, Scheduler(p), ["a"], input_batch_size=1, key=None, sink=MemorySink(p.outputs),
               on_start=seen.append)
    cluster = object()  # what the Ray executor passes: its ClusterInfo
    d.use_cluster(cluster)
    assert seen == []
    d.started_workers()
    assert seen == [cluster]
