"""Shared state for stages in tests, working the same for threads and for Ray workers:
append events, count occurrences. The Ray flavour is a named actor the stages call."""

from __future__ import annotations

import threading


class LocalRecorder:
    """Thread-safe in-process event log."""

    def __init__(self):
        self._lock = threading.Lock()
        self._log: list[tuple[str, object]] = []

    def add(self, key: str, value=None) -> None:
        with self._lock:
            self._log.append((key, value))

    def incr(self, key: str) -> int:
        """Log one occurrence of `key` and return how many there are now."""
        with self._lock:
            self._log.append((key, None))
            return sum(1 for k, _ in self._log if k == key)

    def events(self) -> list[tuple[str, object]]:
        with self._lock:
            return list(self._log)

    def values(self, key: str) -> list:
        return [v for k, v in self.events() if k == key]

    def reset(self) -> None:
        with self._lock:
            self._log.clear()


class _Log(LocalRecorder):
    """The body of the Ray actor (actor methods run one at a time)."""


class RayRecorder:
    """Same interface; every call is a synchronous call to one actor, so the order of events
    in the log is the order in which they happened across processes."""

    def __init__(self, actor):
        self.actor = actor

    def add(self, key, value=None):
        import ray

        ray.get(self.actor.add.remote(key, value))

    def incr(self, key):
        import ray

        return ray.get(self.actor.incr.remote(key))

    def events(self):
        import ray

        return ray.get(self.actor.events.remote())

    def values(self, key):
        return [v for k, v in self.events() if k == key]

    def reset(self):
        import ray

        ray.get(self.actor.reset.remote())

    @staticmethod
    def start():
        import ray

        return RayRecorder(ray.remote(num_cpus=0)(_Log).remote())


class _Barrier:
    """The body of a Ray barrier actor: `arrive` returns once `n` callers have arrived. An async
    actor, so callers waiting do not block the ones arriving."""

    def __init__(self, n: int):
        import asyncio

        self.n, self.count, self.event = n, 0, asyncio.Event()

    async def arrive(self, timeout_s: float) -> int:
        import asyncio

        self.count += 1
        if self.count >= self.n:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), timeout_s)
        return self.count


def ray_barrier(n: int):
    """A Ray actor whose `arrive.remote(timeout_s)` returns once `n` calls arrived (from any
    workers): a stage that must not finish before another worker joins waits on it."""
    import ray

    return ray.remote(num_cpus=0)(_Barrier).remote(n)
