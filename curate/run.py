"""`run()`: compile, schedule, execute; and what it gives back (`RunResult`, metrics)."""

from __future__ import annotations

import time
from os import PathLike
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from curate import defaults
from curate.driver import Driver, MemorySink
from curate.errors import CurateError
from curate.executors import get_executor
from curate.outcome import Issue, Item, Status
from curate.pipeline import Pipeline
from curate.plan import Plan, compile_plan
from curate.scheduler import Scheduler


@dataclass
class CallMetrics:
    """One Call: its batches, the items that entered the stage, fill, retries, suppressions."""

    name: str
    pool: str
    batch_size: int
    batches: int
    items: int
    retries: int
    suppressed: int
    failed: int
    dropped: int
    busy_s: float

    @property
    def batch_fill(self) -> float:
        """Mean batch size over batch_size (1.0: every batch was full)."""
        return self.items / (self.batches * self.batch_size) if self.batches else 0.0


@dataclass
class PoolMetrics:
    """One physical pool: per-worker batches and busy seconds."""

    name: str
    replicas: int
    calls: list[str]
    worker_batches: list[int]
    worker_busy_s: list[float]


@dataclass
class RunMetrics:
    """Everything measured in one run; `summary()` prints it as a table."""

    calls: dict[str, CallMetrics]
    pools: dict[str, PoolMetrics]
    wall_s: float
    first_root_s: float | None
    roots: int
    stale_reports: int
    startup_s: float = 0.0  # executor start-up within wall_s (Ray: actors starting)

    @property
    def execution_s(self) -> float:
        """Wall time once every worker was up."""
        return self.wall_s - self.startup_s

    @property
    def grains(self) -> int:
        """Grains that entered a stage, over all Calls (retries included)."""
        return sum(c.items for c in self.calls.values())

    def summary(self) -> str:
        first = "-" if self.first_root_s is None else f"{self.first_root_s:.3f}s"
        lines = [f"{self.roots} roots in {self.wall_s:.3f}s (start-up {self.startup_s:.3f}s); "
                 f"first root done at {first}",
                 f"{'call':<24}{'batches':>8}{'items':>8}{'fill':>6}{'retries':>8}{'suppr':>6}{'failed':>7}{'busy_s':>8}"]
        for c in self.calls.values():
            lines.append(f"{c.name:<24}{c.batches:>8}{c.items:>8}{c.batch_fill:>6.2f}{c.retries:>8}"
                         f"{c.suppressed:>6}{c.failed:>7}{c.busy_s:>8.3f}")
        return "\n".join(lines)


class RunResult:
    """Outputs of a run held in memory, and its metrics."""

    def __init__(self, plan: Plan, sink: MemorySink, metrics: RunMetrics):
        self._plan = plan
        self._rows = sink.rows
        self._keys = sink.keys
        self.metrics = metrics

    def root_keys(self) -> list[str]:
        """Stable key of every input, in input order (the `key=` of `run`)."""
        return [self._keys[i] for i in sorted(self._keys)]

    def _check(self, name: str) -> None:
        if name not in self._rows:
            raise KeyError(f"no output named {name!r}; outputs are {sorted(self._rows)}")

    def items(self, name: str) -> list[Item]:
        """Every item of an output, in lineage order (input order, then ordinals)."""
        self._check(name)
        by_root = self._rows[name]
        return [it for i in sorted(by_root) for it in by_root[i]]

    def values(self, name: str) -> list[Any]:
        """Values in lineage order (input order for root-level outputs); an item that is not
        PRESENT appears as an `Issue` carrying its status and cause."""
        return [it.value if it.status is Status.PRESENT else Issue(it.lineage, it.status, it.cause)
                for it in self.items(name)]


def run(pipe: Pipeline, inputs: Iterable[Any], *, executor: Any = defaults.DEFAULT_EXECUTOR,
        input_batch_size: int = defaults.DEFAULT_INPUT_BATCH_SIZE,
        inflight: int = defaults.DEFAULT_INFLIGHT, key: Callable[[Any], str] | None = None,
        **executor_options) -> RunResult:
    """Run `pipe` over `inputs` (a list or any iterator, consumed window by window).

    `input_batch_size` roots form an input window; at most `inflight` windows are admitted at
    once. `key(input)` gives a root's stable key (default: its input index as text).
    `executor` is "ray" (actor pools; a local Ray starts on demand, or pass `address=`),
    "local" (threads in this process) or an executor object; other keyword arguments go to it."""
    plan = compile_plan(pipe)  # every declaration problem, before anything starts
    if isinstance(inputs, (str, bytes, PathLike)):
        raise CurateError(f"inputs is a single {type(inputs).__name__}; pass a list (or iterator) of inputs")
    ex = get_executor(executor, **executor_options)
    sched = Scheduler(plan, inflight=inflight)
    sink = MemorySink(plan.outputs)
    driver = Driver(plan, sched, inputs, input_batch_size=input_batch_size, key=key, sink=sink)
    pools_run = ex.execute(driver)
    wall = time.perf_counter() - driver.started
    return RunResult(plan, sink, _metrics(plan, sched, driver, pools_run, wall))


def _metrics(plan: Plan, sched: Scheduler, driver: Driver, pools_run: list, wall: float) -> RunMetrics:
    busy = [0.0] * len(plan.calls)
    pools = {}
    for p in pools_run:
        for s in p.workers:
            for c, t in s.calls_busy_s.items():
                busy[c] += t
        pools[p.name] = PoolMetrics(p.name, len(p.workers), [plan.calls[c].name for c in p.calls],
                                    [s.batches for s in p.workers], [s.busy_s for s in p.workers])
    calls = {}
    for c in plan.calls:
        k = sched.counters[c.id]
        calls[c.name] = CallMetrics(c.name, plan.pools[c.pool].name, c.batch_size, k.batches, k.items,
                                    k.retries, k.suppressed, k.failed, k.dropped, busy[c.id])
    return RunMetrics(calls, pools, wall, driver.first_root_s, driver.roots_done, sched.stale_reports,
                      startup_s=driver.startup_s)
