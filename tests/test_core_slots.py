"""Core slots (curate.executors.ray.cores): CPU work starts on a node only while it fits the
node's cores; calls that wait on something else are never held back."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

import curate as cu
from curate.executors.ray import cores as ray_cores
from curate.executors.ray.cores import CoreMeter, CoreSlots
from curate.executors.ray.replica import ActorReplica

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


def test_a_node_caps_at_its_cores_and_rays_count_times_the_share_per_core():
    slots = CoreSlots(per_core=1.5)
    a, b, c = ActorReplica(None, 0), ActorReplica(None, 1), ActorReplica(None, 0)
    slots.place(a, "a", cores=2.0, node_cpus=4.0)  # Ray told 4 CPUs, the machine has 2 cores
    slots.place(b, "b", cores=16.0, node_cpus=4.0)  # Ray told 4 of 16 cores
    slots.place(c, "c", cores=0.5, node_cpus=None)  # less than a core: still one
    assert slots.cap == {"a": 3.0, "b": 6.0, "c": 1.5}
    assert b.node == "b"


def test_an_unmeasured_call_counts_one_core_then_its_running_estimate():
    slots = CoreSlots(per_core=1.0)
    assert slots.cores_of(7) == ray_cores.UNMEASURED == 1.0
    slots.add(7, 0.0)
    assert slots.cores_of(7) == 0.0
    slots.add(7, 1.0)
    assert slots.cores_of(7) == pytest.approx(ray_cores.SMOOTHING)


def test_a_call_starts_where_it_fits_and_an_empty_node_takes_any_call():
    slots = CoreSlots(per_core=1.0)
    slots.place(ActorReplica(None, 0), "n", cores=2.0, node_cpus=2.0)
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


class Inside:
    """Counts, through files in `gate` (one per call inside the stage), how many of its calls run
    at once: each call notes how many it found inside as it entered, itself included. Exact on
    any load, unlike the workers' timeline, whose intervals a descheduled worker shifts."""

    def __init__(self, gate: str):
        self.gate = Path(gate)

    def enter(self) -> Path:
        me = self.gate / f"in-{os.getpid()}-{uuid.uuid4().hex}"
        me.touch()
        (self.gate / f"seen-{me.name}-{len(list(self.gate.glob('in-*')))}").touch()
        return me

    @staticmethod
    def most(gate: Path) -> int:
        return max(int(p.name.rsplit("-", 1)[1]) for p in gate.glob("seen-*"))


class Spin(Inside):
    """`spin`, counting its calls at once."""

    def __call__(self, items):
        me = self.enter()
        try:
            return spin(items)
        finally:
            me.unlink()


class Together(Inside):
    """Sleeps on its items, its calls meeting at a gate so that `together` of them provably run
    at once (whatever the machine's load): a call waits, sleeping, until that many are inside,
    except the first `alone` calls of the run, which only sleep (they are what the executor
    measures a call's cores from). A gate never met within GATE_S lets its calls go (the test
    then fails on the overlap, instead of hanging)."""

    GATE_S = 120.0  # only catches a hang: three workers start in a few seconds even on a busy machine

    def __init__(self, gate: str, together: int = 3, alone: int = 2):
        super().__init__(gate)
        self.together, self.alone = together, alone

    def __call__(self, items):
        time.sleep(0.05 * len(items))
        if self._number() >= self.alone:
            me = self.enter()  # stays: later calls pass the gate at once
            end = time.monotonic() + self.GATE_S
            while len(list(self.gate.glob("in-*"))) < self.together and time.monotonic() < end:
                time.sleep(0.01)
            # stay inside until all `together` have seen the gate met (each leaves its mark)
            (self.gate / f"met-{me.name}").touch()
            while len(list(self.gate.glob("met-*"))) < self.together and time.monotonic() < end:
                time.sleep(0.01)
        return [x * 2 for x in items]

    def _number(self) -> int:
        """This call's number in the run (0, 1, ...), from files created exclusively."""
        k = 0
        while True:
            try:
                os.close(os.open(self.gate / f"call-{k}", os.O_CREAT | os.O_EXCL))
                return k
            except FileExistsError:
                k += 1


@pytest.mark.usefixtures("ray_cluster")
def test_busy_replicas_run_no_more_calls_at_once_than_the_node_has_slots(monkeypatch, tmp_path):
    """Six replicas of a core-bound stage (measured at a core a call) on a node capped at two
    cores: never more than two of its batches run at once, and every item comes out right;
    replicas of a sleeping stage on the same cap are not held back once measured (at no core):
    three of its calls, which wait for each other inside the stage, all run at once (held back
    to two, they would never meet)."""
    place = CoreSlots.place

    def two_cores(self, replica, node, cores, node_cpus):
        place(self, replica, node, cores, node_cpus)
        self.cap[node] = 2.0

    monkeypatch.setattr(CoreSlots, "place", two_cores)
    add = CoreSlots.add
    items = list(range(60))
    # Each call's cores as the meter reads them on an idle machine (its own test above): on a
    # loaded one a core-bound call waits for its core in ways the meter cannot always subtract.
    for stage, cores, n, check in ((Spin, 1.0, 60, lambda most: most <= 2), (Together, 0.0, 12, lambda most: most >= 3)):
        monkeypatch.setattr(CoreSlots, "add", lambda self, call, _, c=cores: add(self, call, c))
        gate = tmp_path / stage.__name__
        gate.mkdir()
        pipe = cu.Pipeline(Doc)
        pipe.output("out", pipe.source.map(cu.stage(stage, init={"gate": str(gate)}, batch_size=1, replicas=6)))
        res = cu.run(pipe, items[:n], executor="ray")
        assert res.values("out") == [x * 2 for x in items[:n]]
        assert check(Inside.most(gate)), f"{stage.__name__}: {Inside.most(gate)} calls at once"
