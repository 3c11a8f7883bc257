"""The loop every executor runs, and the bookkeeping it shares.

One run of a plan is an `ExecutorRun`: it loops on `driver.step()`, its backend's dispatch
and the workers' reports, blocking at most `driver.wait_s()` at a time (or until the nearest
time limit), so progress, timed flushes and Ctrl-C are served while workers hang; it calls
`driver.idle_done()` whenever nothing is in flight (which also makes the sink's last flush once
the run is done). A batch that runs past its Call's `timeout_s` is failed with `timeout_cause`
and its replica replaced. A backend (threads, Ray actors) implements only what differs: how it
hands batches to its replicas (`dispatch`), receives their reports (`reports`, `apply`) and
replaces one that timed out (`replace`)."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field

from curate.errors import Cause
from curate.executors.stats import CallCosts, WorkerStats


def timeout_cause(call: str, limit: float, items: int) -> Cause:
    """The cause of an attempt that ran past its Call's `timeout_s`."""
    return Cause("timeout", f"a batch of {items} ran longer than timeout_s={limit:g}; its worker was "
                 "replaced. Raise timeout_s if the stage is just slow, or find the input it hangs on "
                 "(the item is isolated by retries)", call, "Timeout")


@dataclass(eq=False)
class Flight:
    """One hand-off to a replica: the batches of one Call (a `call` below 0 is the backend's
    own message to the replica, which runs no batch)."""

    call: int
    batches: list


@dataclass(eq=False)
class Replica:
    """One worker of a worker pool (a thread, an actor): what it runs, oldest (running) first,
    since when its oldest hand-off runs, and its statistics."""

    pool: WorkerPool
    index: int  # its place in its pool: "pool/3" in the timeline
    handle: object = None  # the thread or actor (None: not started yet)
    flight: deque = field(default_factory=deque)
    since: float = 0.0
    stats: WorkerStats = field(default_factory=WorkerStats)

    @property
    def name(self) -> str:
        return f"{self.pool.name}/{self.index}"

    def running(self) -> Flight | None:
        """The hand-off it runs now, if that carries batches."""
        return self.flight[0] if self.flight and self.flight[0].call >= 0 else None


@dataclass
class WorkerPool:
    """The workers an executor runs for one or more of the plan's Pools (`curate.core.plan.Pool`
    is the logical pool; this is the physical one) and the Calls they serve."""

    name: str
    calls: list[int] = field(default_factory=list)  # downstream-first
    index: int = 0  # its place among the run's worker pools
    workers: list[Replica] = field(default_factory=list)


class ExecutorRun:
    """One run's loop over its worker pools (`pools`), for a backend to complete."""

    def __init__(self, driver, bundle_target_s: float):
        self.driver, self.sched, self.plan = driver, driver.sched, driver.plan
        self.cost = CallCosts(bundle_target_s)
        self.pools: list[WorkerPool] = []

    # ---- what a backend implements ----------------------------------------------------------
    def taking_work(self) -> bool:
        """Whether the run dispatches now (Ray: once its first worker answered)."""
        return True

    def dispatch(self) -> None:
        raise NotImplementedError

    def working(self) -> bool:
        """Whether any replica runs batches."""
        raise NotImplementedError

    def waiting(self) -> bool:
        """Whether anything at all is in flight (batches, or the backend's own messages)."""
        return self.working()

    def reports(self, timeout: float):
        """The reports that arrive within `timeout`, then every one already there."""
        raise NotImplementedError

    def apply(self, report) -> None:
        raise NotImplementedError

    def replace(self, replica: Replica) -> None:
        """Replace `replica`, whose running batches were failed for their time limit."""
        raise NotImplementedError

    # ---- the loop ---------------------------------------------------------------------------
    def loop(self) -> None:
        """step -> dispatch -> wait (with a deadline) -> apply -> expire, until the run is done."""
        while True:
            if self.taking_work():
                self.driver.step()
                self.dispatch()
                if not self.working():
                    if self.driver.idle_done():
                        return
                    if not self.waiting():
                        continue
            self.wait()

    def wait(self) -> None:
        """Apply the reports that arrive within one heartbeat (or until the nearest time
        limit), then everything already reported; replace the replicas past their limit."""
        deadline = self.deadline()
        now = time.perf_counter()
        wait = self.driver.wait_s() if deadline is None else max(0.0, min(self.driver.wait_s(), deadline - now))
        for report in self.reports(wait):
            self.apply(report)
        if deadline is not None and time.perf_counter() >= deadline:
            self.expire()

    def replicas(self) -> list[Replica]:
        return [r for p in self.pools for r in p.workers]

    def limit(self, replica: Replica) -> float | None:
        """The time limit of the batches `replica` runs, if their Call has one."""
        head = replica.running()
        return None if head is None else self.plan.calls[head.call].timeout_s

    def deadline(self) -> float | None:
        return min((r.since + t for r in self.replicas() if (t := self.limit(r))), default=None)

    def expire(self) -> None:
        """Fail each running hand-off past its limit (an attempt, retried and isolated like an
        exception) and replace its replica."""
        now = time.perf_counter()
        for r in self.replicas():
            t = self.limit(r)
            if not t or now - r.since < t:
                continue
            head = r.running()
            name = self.plan.calls[head.call].name
            for b in head.batches:  # one: a Call with a time limit goes a batch at a time
                self.sched.fail(b.id, timeout_cause(name, t, len(b.keys)))
            self.replace(r)

    # ---- shared steps -----------------------------------------------------------------------
    def take(self, call: int, share: int, idle: bool = True) -> list:
        """Reserve one hand-off of `call`: several cheap batches (`CallCosts.bundle`), never
        more than one replica's `share` of what is ready. `idle`: the replica has nothing in
        flight, so it may take grains the prefetch cap holds (one batch)."""
        spec = self.plan.calls[call]
        k = self.cost.bundle(spec, math.ceil(self.sched.ready(call) / spec.batch_size / max(1, share)))
        batches = []
        while len(batches) < k and (b := self.sched.reserve(call, idle=idle and not batches)) is not None:
            batches.append(b)
            if any(b.gens):  # a retry, maybe isolating a poison item: alone, so that if it kills
                break        # the worker it takes no other batch's attempt with it
        return batches

    def record(self, worker: str, call: int, batch, start_wall: float, seconds: float) -> None:
        """One batch's timing: into the run's timeline and its Call's cost estimate."""
        self.driver.record_batch(call, start_wall, seconds, len(batch.keys), worker)
        self.cost.add(call, seconds)
