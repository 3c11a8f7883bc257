"""What every executor shares around the pure scheduler: pulling input windows from a stream,
choosing which Call a free worker serves, and handing finished roots to a sink."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Protocol

from curate import defaults
from curate.errors import CurateError, EngineError
from curate.outcome import Item, Status
from curate.plan import Plan
from curate.scheduler import Scheduler


_END = object()


class Sink(Protocol):
    """Where finished roots go: memory (MemorySink) or Parquet (curate.io.parquet.ParquetSink)."""

    def write_root(self, input_index: int, root_key: str, rows: dict[str, list[Item]]) -> None: ...

    def close(self) -> None: ...


class MemorySink:
    """Keeps every output's rows in memory, grouped by input index (for RunResult)."""

    def __init__(self, outputs: Iterable[str]):
        self.rows: dict[str, dict[int, list[Item]]] = {name: {} for name in outputs}
        self.keys: dict[int, str] = {}

    def write_root(self, input_index: int, root_key: str, rows: dict[str, list[Item]]) -> None:
        self.keys[input_index] = root_key
        for name, items in rows.items():
            self.rows[name][input_index] = items

    def close(self) -> None:
        """Nothing to flush: the rows are already in memory."""


class Driver:
    """Feeds input windows to a Scheduler and drains finished roots into a sink."""

    def __init__(self, plan: Plan, scheduler: Scheduler, inputs: Iterable[Any], *,
                 input_batch_size: int, key: Callable[[Any], str] | None, sink: Sink):
        if input_batch_size < 1:
            raise ValueError(f"input_batch_size={input_batch_size}; use at least 1")
        self.plan = plan
        self.sched = scheduler
        try:
            self._inputs = iter(inputs)
        except TypeError:
            raise CurateError(f"inputs must be a list or an iterator of inputs, not "
                              f"{type(inputs).__name__}; wrap a single input as [x]") from None
        self._window_size = input_batch_size
        self._key = key
        self._index = 0
        self.total = len(inputs) if hasattr(inputs, "__len__") else None
        self.progress = None  # a curate.progress.Progress, when shown
        self.skip: set[str] = set()  # root keys already committed (resume)
        self.skipped = 0
        self.sink = sink
        self.started = time.perf_counter()
        self.started_wall = time.time()
        self.timeline: list[tuple[int, float, float, int, str]] = []  # (call, start_s, seconds, items, worker)
        self.first_root_s: float | None = None
        self.startup_s = 0.0  # executor start-up (Ray: until every actor answered)
        self.roots_done = 0
        self._outputs = [(name, plan.output_slot(name), _chain(plan, plan.output_slot(name)))
                         for name in plan.outputs]
        # downstream-first: a free worker serves the Call nearest the outputs, so parents finish
        self._pool_calls = [self.downstream_first(p.calls) for p in plan.pools]
        # Executors whose values live elsewhere (Ray: the object store) set these two hooks.
        self.wrap_inputs: Callable[[list], list] | None = None
        self.resolve_values: Callable[[list], list] | None = None

    def record_batch(self, call: int, start_wall: float, seconds: float, items: int, worker: str) -> None:
        """Note one batch's run for the report's timeline (up to MAX_TIMELINE_EVENTS)."""
        if len(self.timeline) < defaults.MAX_TIMELINE_EVENTS:
            self.timeline.append((call, start_wall - self.started_wall, seconds, items, worker))

    def admit(self) -> None:
        """Admit input windows while the scheduler has room; close the input when it ends.
        Roots whose key is in `skip` (committed by an earlier run) are passed over."""
        s = self.sched
        while s.can_admit():
            keys, values, indices = [], [], []
            ended = False
            while len(values) < self._window_size:
                v = next(self._inputs, _END)
                if v is _END:
                    ended = True
                    break
                k = self._key(v) if self._key else str(self._index)
                if k in self.skip:
                    self.skipped += 1
                else:
                    keys.append(k)
                    values.append(v)
                    indices.append(self._index)
                self._index += 1
            if values:
                s.admit(keys, self.wrap_inputs(values) if self.wrap_inputs else values, indices)
            if ended:
                s.close_input()
                return

    def idle_done(self) -> bool:
        """Nothing is in flight: True if the run is done (the sink then makes its last flush,
        while the executor's workers are still up), False if there is more to admit or
        dispatch. Neither means a scheduling bug, raised rather than hung on."""
        self.drain()
        s = self.sched
        if s.done:
            self.sink.close()
            return True
        if s.can_admit() or any(s.queues):
            return False
        raise EngineError("no batch in flight, none ready and the run is not done")

    def next_call(self, pool: int) -> int | None:
        """The Call of `pool` a free worker should serve now, or None if none has ready grains."""
        for c in self._pool_calls[pool]:
            if self.sched.queues[c]:
                return c
        return None

    def downstream_first(self, calls: list[int]) -> list[int]:
        """`calls` ordered nearest-the-outputs first: serving them first lets parents finish."""
        return sorted(calls, key=lambda c: -self.plan.calls[c].node)

    def drain(self) -> int:
        """Hand every finished root's rows to the sink and release them; returns how many."""
        fin = self.sched.pop_finished()
        if self.progress is not None:
            self.progress.update(self)
        if not fin:
            return 0
        roots = [{name: self._rows(w, slot, chain, r) for name, slot, chain in self._outputs} for w, r in fin]
        if self.resolve_values and not getattr(self.sink, "defer", False):
            present = [row for rows in roots for items in rows.values() for row in items if row[1] == 1]
            for row, v in zip(present, self.resolve_values([row[2] for row in present])):
                row[2] = v
        for (w, r), rows in zip(fin, roots):
            items = {name: [Item(p, Status(s), v, c) for p, s, v, c in lst] for name, lst in rows.items()}
            self.sink.write_root(w.indices[r], w.keys[r], items)
            self.sched.release(w, r)
        if self.first_root_s is None:
            self.first_root_s = time.perf_counter() - self.started
        self.roots_done += len(fin)
        return len(fin)

    @staticmethod
    def _rows(w, slot: int, chain: list[int], r: int) -> list[list]:
        """[lineage, status, value, cause] of every entity of one output under root `r`."""
        out: list[list] = []
        st, val, causes = w.status[slot], w.value[slot], w.causes
        first, count = w.first, w.count

        def walk(level: int, idx: int, path: tuple[int, ...]) -> None:
            if level == len(chain):
                s = st[idx]
                out.append([path, s, val[idx], None] if s == 1 else [path, s, None, causes.get((slot, idx))])
                return
            e = chain[level]
            f = first[e][idx]
            for k in range(count[e][idx]):
                walk(level + 1, f + k, path + (k,))

        walk(0, r, (w.indices[r],))
        return out


def _chain(plan: Plan, slot: int) -> list[int]:
    """Expand nodes from the root down to the space of `slot`."""
    chain = []
    space = plan.slot_space[slot]
    while space:
        chain.append(plan.spaces[space].expand)
        space = plan.spaces[space].parent
    return chain[::-1]


