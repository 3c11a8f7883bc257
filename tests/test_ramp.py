"""Replicas started as the work calls for them (curate.executors.ray.ramp.Ramp): a pool's
first worker starts with the run, a CPU pool grows while its workers are all busy with work
waiting, a GPU pool starts whole; on real Ray, a pool that one worker keeps up with never starts
the others, a busy one grows to all its replicas, and two long items run on two workers."""

from __future__ import annotations

import time
from collections import deque
from types import SimpleNamespace

import pytest

import curate as cu
from curate.executors.base import Flight
from curate.executors.ray.ramp import START_GUESS_S, Ramp
from curate.executors.ray.replica import BIND, ActorPool, ActorReplica

Doc = cu.Domain("doc")


def group(index, replicas, num_gpus=0.0, warm=0):
    g = ActorPool(f"g{index}", index=index, key=f"g{index}", target=None, init={},
                  resources=cu.Resources(num_gpus=num_gpus), replicas=replicas)
    g.workers = [ActorReplica(g, a, handle="warm" if a < warm else None) for a in range(replicas)]
    g.calls = [0]
    return g


def pairs(replicas):  # (replica, pool index) of each
    return [(r.index, r.pool.index) for r in replicas]


class Work:
    """What Ramp.grow reads of the scheduler and the executor: grains ready for Call 0 (batches
    of one), its measured seconds per batch, and each wanted replica's state."""

    def __init__(self, g, ready=0, seconds=None):
        self.g, self.n, self.seconds = g, ready, {} if seconds is None else {0: seconds}
        self.plan = SimpleNamespace(calls={0: SimpleNamespace(batch_size=1)})

    def ready(self, call):
        return self.n

    def replicas(self, *states):  # "run", "idle" or "bind" (starting), per replica
        for r, state in zip(self.g.workers, states):
            r.handle = r.handle or "actor"
            r.flight = deque([] if state == "idle" else [Flight(BIND if state == "bind" else 0, [])])
        return self

    def grow(self, ramp, now):
        r = ramp.grow(self.g, self, self.seconds, now)
        return None if r is None else r.index


def test_every_pool_starts_its_first_worker_and_a_gpu_pool_every_worker():
    cpu, gpu, warm = group(0, 3), group(1, 2, num_gpus=1), group(2, 3, warm=2)
    ramp = Ramp([cpu, gpu, warm])
    assert pairs(ramp.first([cpu, gpu, warm])) == [(0, 0), (0, 1), (1, 1)]  # warm actors count as started
    assert ramp.wanted == [1, 2, 2]
    assert not ramp.can_grow(gpu) and ramp.can_grow(cpu)


def test_a_pool_grows_at_once_when_the_work_waiting_outlasts_a_worker_start():
    g = group(0, 3)
    ramp = Ramp([g])
    work = Work(g, ready=10, seconds=START_GUESS_S).replicas("run")
    assert work.grow(ramp, now=0.0) == 1
    work.replicas("run", "bind")  # the new one starting does not count as a worker to share with
    assert work.grow(ramp, now=0.0) == 2
    assert work.grow(ramp, now=0.0) is None  # never beyond its replicas


def test_a_pool_that_keeps_up_grows_only_after_twice_a_start_of_being_busy():
    g = group(0, 2)
    ramp = Ramp([g])
    ramp.launch(g.workers[0], 0.0)
    ramp.answered(g.workers[0], 0.4)  # this run's workers start in 0.4 s
    work = Work(g, ready=1, seconds=0.01).replicas("run")  # far less work waiting than a start
    assert work.grow(ramp, now=1.0) is None
    assert work.replicas("idle").grow(ramp, now=1.5) is None  # an idle moment: busy again from 0
    work.replicas("run")
    assert work.grow(ramp, now=1.6) is None
    assert work.grow(ramp, now=2.3) is None
    assert work.grow(ramp, now=2.41) == 1  # 0.81 s busy > 2 x 0.4 s


def test_no_growth_without_waiting_work_or_while_no_worker_is_up():
    g = group(0, 2)
    ramp = Ramp([g])
    work = Work(g, ready=0).replicas("run")
    assert work.grow(ramp, now=0.0) is None
    assert work.grow(ramp, now=10.0) is None  # busy, but nothing waits
    work = Work(g, ready=5).replicas("bind")  # its first worker still starting
    assert work.grow(ramp, now=20.0) is None
    assert work.grow(ramp, now=30.0) is None
    work.replicas("run")  # up and running; the work waiting is not measured yet
    assert work.grow(ramp, now=40.0) is None
    assert work.grow(ramp, now=40.0 + 2 * START_GUESS_S) == 1


def quick(xs):
    return [x + 1 for x in xs]


def slow(xs):
    time.sleep(0.2 * len(xs))  # the stage's cost (a model call), not a synchronisation
    return [x + 1 for x in xs]


def workers(res, name):
    return {w for n, _, _, _, w in res.metrics.timeline if n == name}


SEEN_START_S = 60.0  # the worker start the Ramp is shown in the near-free run: see below


@pytest.mark.usefixtures("ray_cluster")
def test_on_ray_a_near_free_pool_stays_at_one_worker_and_a_busy_one_grows_to_all(monkeypatch):
    """The near-free run shows the Ramp a worker start of SEEN_START_S (each measured start set
    to that): whether one worker keeps up is then decided on the measured seconds per batch
    alone (400 items: all of them waiting would have to cost a batch over 1 s to outlast a
    start), not on how long this machine takes to start a worker or to finish the run (on a
    loaded one, a real start was shorter than the run's busy spells, and the pool grew)."""
    answered, launch, started = Ramp.answered, Ramp.launch, []

    def seen(self, r, now):
        answered(self, r, self.launched.get(r, now) + SEEN_START_S)

    def launched(self, r, now):  # every worker the run starts, whether or not it gets a batch
        started.append(r.index)
        launch(self, r, now)

    monkeypatch.setattr(Ramp, "answered", seen)
    monkeypatch.setattr(Ramp, "launch", launched)
    pipe = cu.Pipeline(Doc)
    pipe.output("quick", pipe.source.map(cu.stage(quick, name="quick", batch_size=8, replicas=3, num_cpus=0.1)))
    res = cu.run(pipe, range(400), executor="ray")
    assert res.values("quick") == list(range(1, 401))
    assert started == [0] and len(workers(res, "quick")) == 1  # one started, not two that one did the work of
    assert res.metrics.workers_ready_s is not None  # every worker it started answered
    monkeypatch.undo()  # the busy run below grows at its real start cost

    import ray

    from recorders import ray_barrier

    barrier = ray_barrier(3)  # three calls meet, on three workers, however slowly they start

    class Slow:
        def __call__(self, xs):
            assert ray.get(barrier.arrive.remote(120)) >= 3, "the pool never grew to three workers"
            return slow(xs)

    pipe = cu.Pipeline(Doc)
    pipe.output("slow", pipe.source.map(cu.stage(Slow, name="slow", batch_size=1, replicas=3, num_cpus=0.1,
                                                             retries=0)))  # a retry would hide a timed-out call
    res = cu.run(pipe, range(12), executor="ray")
    assert res.values("slow") == list(range(1, 13))  # no call failed at the barrier
    assert len(workers(res, "slow")) == 3


@pytest.mark.usefixtures("ray_cluster")
def test_on_ray_two_long_items_run_on_two_workers():
    """Each item's call waits until the other's arrived on another worker: the first worker
    must not queue the second item behind its first while its pool can still grow."""
    import ray

    from recorders import ray_barrier

    barrier = ray_barrier(2)

    class Long:
        def __call__(self, xs):
            assert ray.get(barrier.arrive.remote(120)) >= 2, "the other item never reached another worker"
            return [x + 1 for x in xs]

    pipe = cu.Pipeline(Doc)
    # no retries: a call that timed out at the barrier and passed on its retry (the second item
    # queued behind the first on one worker) would hide the fault
    pipe.output("long", pipe.source.map(cu.stage(Long, name="long", batch_size=1, replicas=2, num_cpus=0.1, retries=0)))
    res = cu.run(pipe, [1, 2], executor="ray")
    assert res.values("long") == [2, 3]  # neither item failed at its barrier
    assert len(workers(res, "long")) == 2
