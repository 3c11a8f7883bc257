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
