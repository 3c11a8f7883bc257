"""Executors move batches between the scheduler and workers; the semantics live in the
scheduler. An executor implements `execute(driver) -> dict` (per-pool statistics)."""

from __future__ import annotations

from typing import Any, Protocol

from curate.errors import CurateError


class Executor(Protocol):
    def execute(self, driver) -> dict:  # pragma: no cover - protocol
        ...


def get_executor(executor: Any, **options) -> Executor:
    """An executor instance from a name ("local") or an object with `execute`."""
    if hasattr(executor, "execute"):
        if options:
            raise CurateError(f"executor options {sorted(options)} given with an executor object; "
                              "configure the object instead")
        return executor
    if executor == "local":
        from curate.executors.local import LocalExecutor

        return LocalExecutor(**options)
    raise CurateError(f"unknown executor {executor!r}; use executor='local' (in-process threads)")
