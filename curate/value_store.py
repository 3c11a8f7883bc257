"""Where an executor keeps stage values, as the driver and the sinks see them: the
`ValueStore` seam between executors (which hold values) and sinks (which write them)."""

from __future__ import annotations

from typing import Callable, Protocol

from curate.errors import Cause


class ValueStore(Protocol):
    """Where an executor keeps stage values, as the driver sees them. In-process executors keep
    the values themselves (`LocalStore`); the Ray executor keeps references to the object store."""

    def wrap_inputs(self, values: list) -> tuple[list, dict[int, Cause]]:
        """Input values as the store carries them, and the inputs that it cannot carry (by
        position, with the cause): those roots FAIL at admission."""

    def fetch(self, values: list) -> list:
        """The plain values that `values` (as the scheduler holds them) stand for."""

    def place(self, factory: Callable, *args) -> Callable | None:
        """Build `obj = factory(*args)` where the values are, and return `f(values, *call_args)`
        that fetches `values` there and calls `obj(*call_args, values=fetched)`; None: build it
        here and call it on `fetch(values)`."""


class LocalStore:
    """Values live in this process: nothing to wrap, fetch or place."""

    def wrap_inputs(self, values: list) -> tuple[list, dict[int, Cause]]:
        return values, {}

    def fetch(self, values: list) -> list:
        return values

    def place(self, factory: Callable, *args) -> None:
        return None
