"""In-process executor: one thread per pool replica, each building its stage once. For tests,
debugging and small jobs; it drives the same pure Scheduler the Ray executor does."""

from __future__ import annotations

import queue
import threading
import time

from curate.batch import run_batch
from curate.errors import Cause
from curate.executors import PoolReport, WorkerStats


class _Worker(threading.Thread):
    """Runs batches of one pool; builds the pool's object once, on its first batch."""

    def __init__(self, pool, plan, outbox: queue.SimpleQueue, index: int):
        super().__init__(daemon=True, name=f"{pool.name}/{index}")
        self.pool, self.plan, self.outbox = pool, plan, outbox
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.stats = WorkerStats()
        self._obj = None

    def _fn(self, call):
        if not self.pool.is_class:
            return self.pool.target
        if self._obj is None:
            self._obj = self.pool.target(**self.pool.init)
        return getattr(self._obj, call.method)

    def run(self) -> None:
        while True:
            batch = self.inbox.get()
            if batch is None:
                return
            call = self.plan.calls[batch.call]
            t0, wall = time.perf_counter(), time.time()
            try:
                result = run_batch(self._fn(call), call.kind, batch.inputs, call.name)
            except BaseException as exc:  # noqa: BLE001 - every failure is an attempt to report
                result = Cause.from_exception(exc, call.name)
            seconds = time.perf_counter() - t0
            self.stats.add(batch.call, seconds)
            self.outbox.put((self, batch, result, wall, seconds))


class LocalExecutor:
    """Threads in this process: `replicas` workers per pool."""

    def __init__(self):
        self._workers: list[list[_Worker]] = []

    def execute(self, driver) -> list[PoolReport]:
        plan = driver.plan
        outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [[_Worker(p, plan, outbox, i) for i in range(p.replicas)] for p in plan.pools]
        idle = [list(ws) for ws in self._workers]
        for ws in self._workers:
            for w in ws:
                w.start()
        busy = 0
        try:
            while True:
                driver.drain()
                driver.admit()
                busy += self._dispatch(driver, idle)
                if busy == 0:
                    if driver.idle_done():
                        break
                    continue
                busy -= self._apply(driver, outbox.get(), idle)
                while True:  # apply everything already reported before dispatching again
                    try:
                        busy -= self._apply(driver, outbox.get_nowait(), idle)
                    except queue.Empty:
                        break
        finally:
            for ws in self._workers:
                for w in ws:
                    w.inbox.put(None)
        return [PoolReport(p.name, list(p.calls), [w.stats for w in ws]) for p, ws in zip(plan.pools, self._workers)]

    @staticmethod
    def _dispatch(driver, idle: list[list[_Worker]]) -> int:
        sent = 0
        for pool, free in enumerate(idle):
            while free:
                call = driver.next_call(pool)
                if call is None:
                    break
                batch = driver.sched.reserve(call)
                if batch is None:  # every ready grain was suppressed on the way out
                    continue
                free.pop().inbox.put(batch)
                sent += 1
        return sent

    @staticmethod
    def _apply(driver, msg, idle: list[list[_Worker]]) -> int:
        worker, batch, result, wall, seconds = msg
        sched = driver.sched
        driver.record_batch(batch.call, wall, seconds, len(batch.keys), worker.name)
        idle[worker.pool.id].append(worker)
        if isinstance(result, Cause):
            sched.fail(batch.id, result)
        else:
            sched.complete(batch.id, result)
        return 1
