"""In-process executor: one thread per pool replica, each building its stage once. For tests,
debugging and small jobs; it drives the same pure Scheduler the Ray executor does. A cheap
Call's batches go to a thread several at a time (about BUNDLE_TARGET_S of work), so near-free
stages do not pay two thread hand-offs per batch.

`timeout_s` holds as far as threads allow: a batch past its limit is failed like an exception
(retried, isolated, then FAILED with cause kind `timeout`) and its worker is replaced by a
fresh thread, but Python cannot stop a thread, so the hung one runs on in the background
until its stage returns (its late report is dropped)."""

from __future__ import annotations

import math
import queue
import threading
import time

from curate.batch import run_batch
from curate.errors import Cause, build_stage
from curate.executors import CallCosts, PoolReport, WorkerStats, timeout_cause
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
        self.batches = None  # the batches it runs (a list), and since when (perf_counter)
        self.since = 0.0
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
                except BaseException as exc:  # noqa: BLE001 - every failure is an attempt to report
                    result = Cause.from_exception(exc, call.name)
                seconds = time.perf_counter() - t0
                self.stats.add(batch.call, seconds)
                done.append((batch, result, wall, seconds))
            self.outbox.put((self, done))


class LocalExecutor:
    """Threads in this process: `replicas` workers per pool (resource requests are not
    enforced). With `keep_warm` (a `cu.Session`), the threads of a run that ended cleanly, and
    the objects they built, serve the next run of a pool with the same class and init."""

    def __init__(self, keep_warm: bool = False):
        self.keep_warm = keep_warm
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._workers: list[list[_Worker]] = []
        self._retired: list[list[_Worker]] = []
        self._warm: dict[str, list[_Worker]] = {}

    def close(self) -> None:
        """Stop every thread kept warm (a session's end)."""
        for ws in self._warm.values():
            for w in ws:
                w.inbox.put(None)
        self._warm = {}

    def _take(self, plan) -> list[list[_Worker]]:
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
            out.append(ws + fresh)
        for ws in warm.values():  # pools this run does not use
            for w in ws:
                w.inbox.put(None)
        return out

    def execute(self, driver) -> list[PoolReport]:
        plan = driver.plan
        self._workers = self._take(plan)
        self._retired = [[] for _ in plan.pools]
        idle = [list(ws) for ws in self._workers]
        for p, ws in zip(plan.pools, self._workers):
            driver.plan_replicas(p.id, len(ws))
        driver.started_workers()
        self._busy = 0  # workers with batches
        self._cost = CallCosts(BUNDLE_TARGET_S)
        clean = False
        try:
            while True:
                driver.step()
                self._dispatch(driver, idle)
                if self._busy == 0:
                    if driver.idle_done():
                        break
                    continue
                self._wait(driver, idle)
            clean = True
        finally:
            if self.keep_warm and clean:
                for p, ws in zip(plan.pools, self._workers):
                    self._warm.setdefault(warm_key(p), []).extend(ws)
            else:
                for ws in self._workers:
                    for w in ws:
                        w.inbox.put(None)
        return [PoolReport(p.name, list(p.calls), [w.stats for w in ws + old])
                for p, ws, old in zip(plan.pools, self._workers, self._retired)]

    def _wait(self, driver, idle: list[list[_Worker]]) -> None:
        """Apply reports for up to one heartbeat (or until the nearest time limit), then
        everything already reported; replace workers whose batch ran past its limit."""
        now = time.perf_counter()
        deadline = min((w.since + self._limit(driver, w) for ws in self._workers for w in ws
                        if w.batches is not None and self._limit(driver, w)), default=None)
        wait = driver.wait_s() if deadline is None else max(0.0, min(driver.wait_s(), deadline - now))
        try:
            self._apply(driver, self._outbox.get(timeout=wait), idle)
            while True:  # apply everything already reported before dispatching again
                self._apply(driver, self._outbox.get_nowait(), idle)
        except queue.Empty:
            pass
        if deadline is not None and time.perf_counter() >= deadline:
            self._expire(driver, idle)

    @staticmethod
    def _limit(driver, w: _Worker) -> float | None:
        return driver.plan.calls[w.batches[0].call].timeout_s

    def _expire(self, driver, idle: list[list[_Worker]]) -> None:
        now = time.perf_counter()
        for pool, ws in enumerate(self._workers):
            for i, w in enumerate(ws):
                limit = w.batches is not None and self._limit(driver, w)
                if not limit or now - w.since < limit:
                    continue
                for b in w.batches:  # one: a Call with a time limit goes a batch at a time
                    call = driver.plan.calls[b.call]
                    driver.sched.fail(b.id, timeout_cause(call.name, limit, len(b.keys)))
                self._busy -= 1
                w.abandoned, w.batches = True, None
                w.inbox.put(None)  # if it ever returns, it stops
                fresh = _Worker(w.pool, driver.plan, self._outbox, i)
                fresh.start()
                ws[i] = fresh
                self._retired[pool].append(w)
                idle[pool].append(fresh)

    def _dispatch(self, driver, idle: list[list[_Worker]]) -> None:
        sched = driver.sched
        for pool, free in enumerate(idle):
            while free:
                call = driver.next_call(pool, idle=True)
                if call is None:
                    break
                spec = sched.plan.calls[call]
                # several cheap batches per hand-off, but never more than this worker's share
                want = math.ceil(sched.ready(call) / spec.batch_size / len(free))
                k = self._cost.bundle(spec, want)
                batches = []
                while len(batches) < k and (b := sched.reserve(call, idle=not batches)) is not None:
                    batches.append(b)
                    if any(b.gens):  # a retry, maybe isolating a poison item: alone
                        break
                if not batches:  # every ready grain was suppressed on the way out
                    continue
                w = free.pop()
                w.batches, w.since = batches, time.perf_counter()
                w.inbox.put(batches)
                self._busy += 1

    def _apply(self, driver, msg, idle: list[list[_Worker]]) -> None:
        worker, done = msg
        if worker.abandoned:  # its batch was failed for running too long: a stale report
            driver.sched.stale_reports += len(done)
            return
        sched = driver.sched
        worker.batches = None
        self._busy -= 1
        idle[worker.pool.id].append(worker)
        for batch, result, wall, seconds in done:
            driver.record_batch(batch.call, wall, seconds, len(batch.keys), worker.name)
            self._cost.add(batch.call, seconds)
            if isinstance(result, Cause):
                sched.fail(batch.id, result)
            else:
                sched.complete(batch.id, result)
