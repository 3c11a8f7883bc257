"""Executors move batches between the scheduler and workers; the semantics live in the
scheduler. An executor implements `execute(driver) -> list[PoolReport]`; both run one loop
(`curate.executors.base.ExecutorRun`) and differ only in their workers: threads in this process
(`local`) or Ray actors (`ray`)."""

from __future__ import annotations

from typing import Any, Protocol

from curate.errors import CurateError
from curate.executors.stats import PoolReport


class Executor(Protocol):
    """What runs a plan: `execute(driver)` returns each worker pool's report."""

    def execute(self, driver) -> list[PoolReport]:  # pragma: no cover - protocol
        ...


def get_executor(executor: Any, *, context: str = "executor='ray'", **options) -> Executor:
    """An executor instance from a name ("ray", "local") or an object with `execute`; `context`
    names what asked for Ray, in the message when Ray is not installed."""
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

        require("ray", context)
        from curate.executors.ray import RayExecutor

        return RayExecutor(**options)
    raise CurateError(f"unknown executor {executor!r}; use executor='ray' (actor pools on a local or "
                      "remote Ray cluster) or 'local' (threads in this process)")
