"""In-process executor: one thread per pool replica, each building its stage once. For tests,
debugging and small jobs; it runs the same loop (`curate.executors.base`) and the same pure
Scheduler the Ray executor does. A cheap Call's batches go to a thread several at a time (about
BUNDLE_TARGET_S of work), so near-free stages do not pay two thread hand-offs per batch.

`timeout_s` holds as far as threads allow: a batch past its limit is failed like an exception
(retried, isolated, then FAILED with cause kind `timeout`) and its worker is replaced by a
fresh thread, but Python cannot stop a thread, so the hung one runs on in the background
until its stage returns (its late report is dropped)."""

from __future__ import annotations

import queue
import threading
import time

from curate.executors.stage_call import run_batch
from curate.errors import Cause, build_stage
from curate.executors.base import ExecutorRun, Flight, Replica, WorkerPool
from curate.executors.stats import PoolReport, WorkerStats
from curate.fingerprint import warm_key

BUNDLE_TARGET_S = 0.002  # work per hand-off for cheap Calls: a hand-off costs tens of microseconds


class _Worker(threading.Thread):
    """Runs batches of one pool; builds the pool's object once, on its first batch."""

    def __init__(self, pool, plan, outbox: queue.SimpleQueue, index: int):
        super().__init__(daemon=True, name=f"{pool.name}/{index}")
        self.pool, self.plan, self.outbox = pool, plan, outbox
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.stats = WorkerStats()
        self.abandoned = False  # timed out: replaced, and whatever it reports is dropped
        self.replica: Replica | None = None  # the replica it is in this run
        self.staging = None  # the run's FileStaging: its Calls' payload files are written here
        self._obj = None

    def _fn(self, call):
        if not self.pool.is_class:
            return self.pool.target
        if self._obj is None:
            self._obj = build_stage(self.pool.target, self.pool.init, self.pool.name)
        return getattr(self._obj, call.method)

    def run(self) -> None:
        while True:
            batches = self.inbox.get()
            if batches is None:
                return
            done = []
            for batch in batches:
                call = self.plan.calls[batch.call]
                t0, wall = time.perf_counter(), time.time()
                try:
                    result = run_batch(self._fn(call), call.kind, batch.inputs, call.name)
                    if self.staging is not None:
                        result = self.staging.stage(batch.call, call.kind, result, call.name)
                except BaseException as exc:  # noqa: BLE001 - every failure is an attempt to report
                    result = Cause.from_exception(exc, call.name)
                seconds = time.perf_counter() - t0
                self.stats.add(batch.call, seconds)
                done.append((batch, result, wall, seconds))
            self.outbox.put((self, done))


def _replica(pool: WorkerPool, index: int, worker: _Worker) -> Replica:
    """The replica `index` of `pool` that `worker` runs as (it counts into the replica's stats)."""
    r = Replica(pool, index, handle=worker, stats=worker.stats)
    worker.replica = r
    return r


class LocalExecutor:
    """Threads in this process: `replicas` workers per pool (resource requests are not
    enforced). With `keep_warm` (a `cu.Session`), the threads of a run that ended cleanly, and
    the objects they built, serve the next run of a pool with the same class and init."""

    def __init__(self, keep_warm: bool = False):
        self.keep_warm = keep_warm
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._warm: dict[str, list[_Worker]] = {}

    def close(self) -> None:
        """Stop every thread kept warm (a session's end)."""
        for ws in self._warm.values():
            for w in ws:
                w.inbox.put(None)
        self._warm = {}

    def _take(self, plan) -> list[WorkerPool]:
        """Each pool's workers: warm ones of the same class and init first, new ones for the rest."""
        warm, self._warm = self._warm, {}
        out = []
        for p in plan.pools:
            ws = warm.pop(warm_key(p), [])
            n = p.replicas or 1
            for w in ws[n:]:
                w.inbox.put(None)
            ws = ws[:n]
            for w in ws:
                w.pool, w.plan, w.stats = p, plan, WorkerStats()
            fresh = [_Worker(p, plan, self._outbox, i) for i in range(len(ws), n)]
            for w in fresh:
                w.start()
            pool = WorkerPool(p.name, list(p.calls), p.id)
            pool.workers = [_replica(pool, i, w) for i, w in enumerate(ws + fresh)]
            out.append(pool)
        for ws in warm.values():  # pools this run does not use
            for w in ws:
                w.inbox.put(None)
        return out

    def execute(self, driver) -> list[PoolReport]:
        plan = driver.plan
        run = LocalRun(driver, self._take(plan), self._outbox)
        for r in run.replicas():
            r.handle.staging = driver.file_staging
        for p in run.pools:
            driver.plan_replicas(p.index, len(p.workers))
        driver.started_workers()
        clean = False
        try:
            run.loop()
            clean = True
        finally:
            if self.keep_warm and clean:
                for p, pool in zip(plan.pools, run.pools):
                    self._warm.setdefault(warm_key(p), []).extend(r.handle for r in pool.workers)
            else:
                for r in run.replicas():
                    r.handle.inbox.put(None)
        return [PoolReport(p.name, list(p.calls), [r.stats for r in p.workers + old])
                for p, old in zip(run.pools, run.retired)]


class LocalRun(ExecutorRun):
    """One run on threads: each replica holds at most one hand-off."""

    def __init__(self, driver, pools: list[WorkerPool], outbox: queue.SimpleQueue):
        super().__init__(driver, BUNDLE_TARGET_S)
        self.pools, self.outbox = pools, outbox
        self.idle = [list(p.workers) for p in pools]
        self.retired: list[list[Replica]] = [[] for _ in pools]  # replaced after a timeout
        self.busy = 0  # replicas with batches

    def working(self) -> bool:
        return self.busy > 0

    def dispatch(self) -> None:
        for pool, free in zip(self.pools, self.idle):
            while free:
                call = self.driver.next_call(pool.index, idle=True)
                if call is None:
                    break
                batches = self.take(call, len(free))
                if not batches:  # every ready grain was suppressed on the way out
                    continue
                r = free.pop()
                r.flight.append(Flight(call, batches))
                r.since = time.perf_counter()
                r.handle.inbox.put(batches)
                self.busy += 1

    def reports(self, timeout: float):
        try:
            yield self.outbox.get(timeout=timeout)
            while True:  # apply everything already reported before dispatching again
                yield self.outbox.get_nowait()
        except queue.Empty:
            return

    def apply(self, report) -> None:
        worker, done = report
        if worker.abandoned:  # its batch was failed for running too long: a stale report
            self.sched.stale_reports += len(done)
            return
        r = worker.replica
        r.flight.clear()
        self.busy -= 1
        self.idle[r.pool.index].append(r)
        for batch, result, wall, seconds in done:
            self.record(worker.name, batch.call, batch, wall, seconds)
            if isinstance(result, Cause):
                self.sched.fail(batch.id, result)
            else:
                self.sched.complete(batch.id, result)

    def replace(self, replica: Replica) -> None:
        """Python cannot stop a thread: the hung one is abandoned (if it ever returns, it
        stops) and a fresh thread takes its place."""
        old = replica.handle
        self.busy -= 1
        old.abandoned = True
        replica.flight.clear()
        old.inbox.put(None)
        fresh = _Worker(old.pool, self.plan, self.outbox, replica.index)
        fresh.staging = old.staging
        fresh.start()
        pool = replica.pool
        new = pool.workers[replica.index] = _replica(pool, replica.index, fresh)
        self.retired[pool.index].append(replica)
        self.idle[pool.index].append(new)
