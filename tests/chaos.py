"""A hostile executor over the pure scheduler: random reservation order and sizes, several
batches in flight completed in random order, duplicate reports, and dead workers whose late
reports arrive after their grains were retried."""

from __future__ import annotations

import random

from curate.executors.stage_call import run_batch
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink
from curate.errors import Cause
from curate.metrics import collect
from curate.run import RunResult


def run_chaos(pipe, inputs, *, seed: int, input_batch_size: int, inflight: int,
              max_deaths: int = 2) -> tuple[RunResult, dict]:
    rng = random.Random(seed)
    plan = compile_plan(pipe)
    sched = Scheduler(plan, inflight=inflight)
    sink = MemorySink(plan.outputs)
    driver = Driver(plan, sched, iter(inputs), input_batch_size=input_batch_size, key=None, sink=sink)
    fns = {c.id: next(p.target for p in plan.pools if c.id in p.calls) for c in plan.calls}
    flying: list = []  # (batch, report or Cause)
    done_reports: list = []
    late: list = []  # reports of batches declared dead
    stats = {"duplicates_dropped": 0, "stale_dropped": 0, "deaths": 0}
    while True:
        driver.drain()
        driver.admit()
        ready = [c.id for c in plan.calls if sched.ready(c.id)]
        if ready and (not flying or rng.random() < 0.6):
            call = rng.choice(ready)
            b = sched.reserve(call, limit=rng.randint(1, plan.calls[call].batch_size))
            if b is not None:
                c = plan.calls[call]
                try:
                    rep = run_batch(fns[call], c.kind, b.inputs, c.name)
                except Exception as exc:  # noqa: BLE001 - becomes a failed attempt
                    rep = Cause.from_exception(exc, c.name)
                flying.append((b, rep))
            continue
        if flying:
            b, rep = flying.pop(rng.randrange(len(flying)))
            roll = rng.random()
            if roll < 0.05 and stats["deaths"] < max_deaths:
                stats["deaths"] += 1
                assert sched.fail(b.id, Cause("worker_died", "chaos killed the worker"))
                late.append((b, rep))
            else:
                _deliver(sched, b, rep)
                done_reports.append((b, rep))
            if rng.random() < 0.1 and done_reports:  # a duplicate of an applied report
                ob, orep = rng.choice(done_reports)
                assert not _deliver(sched, ob, orep)
                stats["duplicates_dropped"] += 1
            if late and rng.random() < 0.3:  # the dead worker's report arrives after all
                ob, orep = late.pop()
                assert not _deliver(sched, ob, orep)
                stats["stale_dropped"] += 1
            continue
        driver.drain()
        if sched.done:
            break
        raise AssertionError("chaos driver: nothing ready, nothing in flight, run not done")
    assert sched.stale_reports == stats["duplicates_dropped"] + stats["stale_dropped"]
    return RunResult(plan, sink, collect(plan, sched, driver.stats(), [])), stats


def _deliver(sched, b, rep) -> bool:
    return sched.fail(b.id, rep) if isinstance(rep, Cause) else sched.complete(b.id, rep)
