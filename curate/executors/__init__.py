"""Executors move batches between the scheduler and workers; the semantics live in the
scheduler. An executor implements `execute(driver) -> list[PoolReport]`: it calls
`driver.started_workers(store)` once its workers are up, then loops on `driver.step()`, its
own dispatch and reports (blocking at most `driver.wait_s()` at a time, so progress, timed
flushes and Ctrl-C are served while workers hang), and `driver.idle_done()` whenever nothing is
in flight (which also makes the sink's last flush once the run is done). A batch that runs
past its Call's `timeout_s` is failed with `timeout_cause` and its worker replaced. Both
executors send a cheap Call's batches several at a time (`CallCosts.bundle`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from curate.errors import Cause, CurateError


class CallCosts:
    """A running estimate of each Call's seconds per batch, and from it how many batches one
    hand-off to a worker should carry: about `target_s` of work, at most `max_bundle`, never
    more than `want` (the worker's share of what is ready), one for a Call with a time limit
    (the limit is per batch, so a timeout fails only that batch)."""

    SMOOTHING = 0.3  # weight of the newest batch in the running estimate

    def __init__(self, target_s: float, max_bundle: int = 64):
        self.target_s, self.max_bundle = target_s, max_bundle
        self.seconds: dict[int, float] = {}

    def add(self, call: int, seconds: float) -> None:
        old = self.seconds.get(call)
        self.seconds[call] = seconds if old is None else old + self.SMOOTHING * (seconds - old)

    def bundle(self, spec, want: int) -> int:
        if spec.timeout_s:
            return 1
        per_batch = max(self.seconds.get(spec.id, 1.0), 1e-6)  # unknown: one batch, until measured
        return max(1, min(want, self.max_bundle, int(self.target_s / per_batch)))


@dataclass
class WorkerStats:
    """One worker (thread or actor): batches run and seconds busy, per Call."""

    batches: int = 0
    busy_s: float = 0.0
    calls_busy_s: dict[int, float] = field(default_factory=dict)
    peak_rss: int = 0  # bytes: the peak resident memory of its process (0: not measured)
    peak_private: int = 0  # bytes: its largest private memory at a batch's end (0: not measured)

    def add(self, call: int, seconds: float) -> None:
        self.batches += 1
        self.busy_s += seconds
        self.calls_busy_s[call] = self.calls_busy_s.get(call, 0.0) + seconds


@dataclass
class PoolReport:
    """A physical pool as an executor ran it: its Calls and per-worker statistics."""

    name: str
    calls: list[int]
    workers: list[WorkerStats]


def timeout_cause(call: str, limit: float, items: int) -> Cause:
    """The cause of an attempt that ran past its Call's `timeout_s`."""
    return Cause("timeout", f"a batch of {items} ran longer than timeout_s={limit:g}; its worker was "
                 "replaced. Raise timeout_s if the stage is just slow, or find the input it hangs on "
                 "(the item is isolated by retries)", call, "Timeout")


class Executor(Protocol):
    def execute(self, driver) -> list[PoolReport]:  # pragma: no cover - protocol
        ...


def get_executor(executor: Any, **options) -> Executor:
    """An executor instance from a name ("ray", "local") or an object with `execute`."""
    if hasattr(executor, "execute"):
        if options:
            raise CurateError(f"executor options {sorted(options)} given with an executor object; "
                              "configure the object instead")
        return executor
    if executor == "local":
        from curate.executors.local import LocalExecutor

        return LocalExecutor(**options)
    if executor == "ray":
        from curate.deps import require

        require("ray", "executor='ray'")
        from curate.executors.ray import RayExecutor

        return RayExecutor(**options)
    raise CurateError(f"unknown executor {executor!r}; use executor='ray' (actor pools on a local or "
                      "remote Ray cluster) or 'local' (threads in this process)")
