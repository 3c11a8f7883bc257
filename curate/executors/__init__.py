"""Executors move batches between the scheduler and workers; the semantics live in the
scheduler. An executor implements `execute(driver) -> list[PoolReport]`, looping on
`driver.drain() / admit()`, its own dispatch and reports, and `driver.idle_done()` whenever
nothing is in flight (which also makes the sink's last flush once the run is done)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from curate.errors import CurateError


@dataclass
class WorkerStats:
    """One worker (thread or actor): batches run and seconds busy, per Call."""

    batches: int = 0
    busy_s: float = 0.0
    calls_busy_s: dict[int, float] = field(default_factory=dict)

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
