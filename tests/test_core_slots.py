"""Core slots (curate.executors.ray_cores): CPU work starts on a node only while it fits the
node's cores; calls that wait on something else are never held back."""

from __future__ import annotations

import time

import pytest

import curate as cu
from curate.executors import ray_cores
from curate.executors.ray_cores import CoreMeter, CoreSlots

Doc = cu.Domain("doc")


def spin(items, seconds=0.05):
    """Keeps one core busy for `seconds` per item."""
    out = []
    for x in items:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
        out.append(x * 2)
    return out


def nap(items):
    time.sleep(0.05 * len(items))
    return [x * 2 for x in items]


def most_at_once(timeline, call: str) -> int:
    """The most batches of `call` whose measured intervals overlap (a microsecond of clock slack)."""
    edges = []
    for name, start, seconds, _, _ in timeline:
        if name == call:
            edges += [(start + 1e-6, 1), (start + seconds - 1e-6, -1)]
    most = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
        now += step
        most = max(most, now)
    return most


def test_a_node_caps_at_its_cores_and_rays_count_times_the_share_per_core():
    slots = CoreSlots(per_core=1.5)
    slots.place(0, 0, "a", cores=2.0, node_cpus=4.0)  # Ray told 4 CPUs, the machine has 2 cores
    slots.place(0, 1, "b", cores=16.0, node_cpus=4.0)  # Ray told 4 of 16 cores
    slots.place(1, 0, "c", cores=0.5, node_cpus=None)  # less than a core: still one
    assert slots.cap == {"a": 3.0, "b": 6.0, "c": 1.5}
    assert slots.node[(0, 1)] == "b"


def test_an_unmeasured_call_counts_one_core_then_its_running_estimate():
    slots = CoreSlots(per_core=1.0)
    assert slots.cores_of(7) == ray_cores.UNMEASURED == 1.0
    slots.add(7, 0.0)
    assert slots.cores_of(7) == 0.0
    slots.add(7, 1.0)
    assert slots.cores_of(7) == pytest.approx(ray_cores.SMOOTHING)


def test_a_call_starts_where_it_fits_and_an_empty_node_takes_any_call():
    slots = CoreSlots(per_core=1.0)
    slots.place(0, 0, "n", cores=2.0, node_cpus=2.0)
    assert slots.fits(1.0, "n", 1.0)
    assert not slots.fits(1.5, "n", 1.0)
    assert slots.fits(0.0, "n", 8.0)  # larger than the node: runs alone rather than never
    assert slots.fits(5.0, None, 1.0)  # a node nobody measured is not held back


def test_the_meter_tells_a_busy_call_from_a_waiting_one():
    meter = CoreMeter()
    spin([1], seconds=0.2)
    busy = meter.cores()
    meter = CoreMeter()
    nap([1, 2, 3, 4])
    assert meter.cores() < 0.5 < 0.7 < busy


@pytest.mark.usefixtures("ray_cluster")
def test_busy_replicas_run_no_more_calls_at_once_than_the_node_has_slots(monkeypatch):
    """Six replicas of a core-bound stage on a node capped at two cores: never more than two of
    its batches run at once, and every item comes out right; six replicas of a sleeping stage on
    the same cap are not held back once measured."""
    place = CoreSlots.place

    def two_cores(self, group, actor, node, cores, node_cpus):
        place(self, group, actor, node, cores, node_cpus)
        self.cap[node] = 2.0

    monkeypatch.setattr(CoreSlots, "place", two_cores)
    items = list(range(60))
    for fn, name in ((spin, "spin"), (nap, "nap")):
        pipe = cu.Pipeline(Doc)
        pipe.output("out", pipe.source.map(cu.stage(fn, name=name, batch_size=1, replicas=6)))
        res = cu.run(pipe, items, executor="ray")
        assert res.values("out") == [x * 2 for x in items]
        at_once = most_at_once(res.metrics.timeline, name)
        if fn is spin:
            assert at_once <= 2
        else:
            assert at_once >= 3  # 6 sleepers share 2 cores: each measures near zero
