"""Where finished roots go: the Sink protocol the Driver writes to, and MemorySink, which keeps
them in memory for RunResult (the Parquet sink is curate.io.parquet.ParquetSink)."""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from curate.core.outcome import Item, has_value
from curate.value_store import LocalStore, ValueStore


class Sink(Protocol):
    """Where finished roots go: memory (MemorySink) or Parquet (curate.io.parquet.ParquetSink).
    Rows reach the sink with the store's value references in their PRESENT and DROPPED items
    (`has_value`); the sink fetches them (`store.fetch`) or has them fetched where it writes (`store.place`).
    A sink may also have `file_staging(plan)`: what the workers need to write its outputs' payload
    files themselves (`curate.io.staged_files.FileStaging`, or None), asked for once by the Driver."""

    def bind(self, store: ValueStore) -> None:
        """Called once the executor's workers are up, before the first root."""

    def write_roots(self, roots: list[tuple[int, str, dict[str, Iterable[Item]]]]) -> None:
        """Finished roots: (input index, root key, {output: items in lineage order}). The items
        are an iterator over the scheduler's tables: read it once, during this call."""

    def poll(self) -> None:
        """Called at every heartbeat: a sink that flushes on a timer does it here."""

    def flush(self) -> None:
        """Make every root written so far durable (Ctrl-C flushes before stopping)."""

    def close(self) -> None:
        """The run is done: the last flush, while the executor's workers are still up."""


class MemorySink:
    """Keeps every output's rows in memory, grouped by input index (for RunResult)."""

    def __init__(self, outputs: Iterable[str]):
        self.rows: dict[str, dict[int, list[Item]]] = {name: {} for name in outputs}
        self.keys: dict[int, str] = {}
        self._fetch: Callable[[list], list] = LocalStore().fetch

    def bind(self, store: ValueStore) -> None:
        self._fetch = store.fetch

    def write_roots(self, roots) -> None:
        roots = [(index, key, {name: list(items) for name, items in rows.items()}) for index, key, rows in roots]
        held = [(items, i) for _, _, rows in roots for items in rows.values()
                for i, it in enumerate(items) if has_value(it)]
        values = self._fetch([items[i].value for items, i in held]) if held else []
        for (items, i), v in zip(held, values):
            it = items[i]
            items[i] = Item(it.lineage, it.status, v, it.cause)
        for index, key, rows in roots:
            self.keys[index] = key
            for name, items in rows.items():
                self.rows[name][index] = items

    def poll(self) -> None:
        """Nothing to flush: the rows are already in memory."""

    def flush(self) -> None:
        """Nothing to flush: the rows are already in memory."""

    def close(self) -> None:
        """Nothing to flush: the rows are already in memory."""
