"""The Parquet sink: each named output streams to `out/<name>/part-<run>-<n>.parquet` as its
roots complete. A flush holds whole roots (every row of a root, across all outputs, lands in
one commit), so a killed run resumes by skipping committed roots and redoing the rest."""

from __future__ import annotations

import time
from pathlib import Path

from curate import defaults
from curate.core.outcome import Item
from curate.deps import require
from curate.errors import CurateError
from curate.io.commits import META, CommitLog
from curate.io.rows import DEFERRED, expand_payloads, item_row, spill_files, to_table
from curate.values import LocalStore


class ParquetSink:
    """Buffers finished roots and commits them as one shard per output, every `shard_rows`
    rows or `flush_s` seconds (checked at every heartbeat, so a hung run still commits what
    finished), on Ctrl-C, and at the end."""

    def __init__(self, out: str | Path, outputs: dict[str, dict], run_id: str, *,
                 shard_rows: int = defaults.DEFAULT_SHARD_ROWS, flush_s: float = defaults.DEFAULT_FLUSH_S,
                 row_group_rows: int = defaults.DEFAULT_ROW_GROUP_ROWS):
        require("pyarrow.parquet", "Parquet output (output_dir=)")  # before the run, not at its end

        self.out = Path(out)
        self.outputs = outputs  # name -> {"schema": {...}, "files": {...}}
        self.run_id = run_id
        self.shard_rows, self.flush_s, self.row_group_rows = shard_rows, flush_s, row_group_rows
        self.log = CommitLog(self.out)
        try:
            self.records = self.log.recover()
        except FileNotFoundError as exc:
            raise CurateError(f"cannot resume {self.out}: {exc}. Put the file back, or start again in a "
                              "new output directory (or delete this one)") from None
        self.committed_keys = {k for rec in self.records for k in rec["roots"]}
        self.bind(LocalStore())
        self._buffer: dict[str, list[dict]] = {name: [] for name in outputs}
        self._roots: list[str] = []
        self._rows = 0
        self._seq = 0
        self._last_flush = time.monotonic()
        self.counts: dict[str, dict[str, int]] = {name: {} for name in outputs}  # this run's rows

    def bind(self, store) -> None:
        """Write shards where the store's values are (Ray: an actor on this node fetches the
        payloads itself, so output bytes skip the driver), or here on fetched values."""
        placed = store.place(ShardWriter, self.outputs, self.row_group_rows)
        if placed is None:
            local = ShardWriter(self.outputs, self.row_group_rows)
            placed = lambda values, *args: local(*args, values=store.fetch(values))  # noqa: E731
        self._write = placed

    def write_roots(self, roots: list[tuple[int, str, dict[str, list[Item]]]]) -> None:
        for _, root_key, rows in roots:
            for name, items in rows.items():
                buf = self._buffer[name]
                for it in items:
                    buf.append(item_row(it, root_key, defer=True, output=name))
                self._rows += len(items)
            self._roots.append(root_key)
            if self._rows >= self.shard_rows:
                self.flush()
        self.poll()

    def poll(self) -> None:
        if time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()

    def flush(self) -> None:
        """Commit every buffered root: staged shards, then the commit record, then publication."""
        if not self._roots:
            self._last_flush = time.monotonic()
            return
        flush = f"{self.run_id}-{self._seq:05d}"
        stage = self.log.stage_dir(flush)
        values = []  # the payload references, in row order; each row keeps its position
        for rows in self._buffer.values():
            for row in rows:
                if DEFERRED in row:
                    row[DEFERRED], _ = len(values), values.append(row[DEFERRED])
        shards, counts = self._write(values, self._buffer, str(stage), flush)
        record = {"flush": flush, "run": self.run_id, "shards": shards, "roots": self._roots, "counts": counts}
        self.log.commit(record)
        self.records.append(record)
        for name, c in counts.items():
            for st, n in c.items():
                self.counts[name][st] = self.counts[name].get(st, 0) + n
        self._buffer = {name: [] for name in self.outputs}
        self._roots, self._rows, self._last_flush = [], 0, time.monotonic()
        self._seq += 1

    def close(self) -> None:
        self.flush()

    def total_counts(self) -> dict[str, dict[str, int]]:
        """Rows per output and status over every committed flush of the directory."""
        out: dict[str, dict[str, int]] = {}
        for rec in self.records:
            for name, c in rec["counts"].items():
                d = out.setdefault(name, {})
                for st, n in c.items():
                    d[st] = d.get(st, 0) + n
        return out


def check_output_dir(out: Path, resume: bool) -> None:
    """Refuse an output path that is not a directory, and a new run into a directory that
    already holds committed rows."""
    if out.exists() and not out.is_dir():
        raise CurateError(f"the output directory {out} is a file; give a directory (new or empty, or the "
                          "directory of the run to resume), e.g. --output out/run1")
    blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise CurateError(f"cannot create the output directory {out}: {blocker} is a file; choose another path")
    commits = out / META / "commits"
    if not resume and commits.exists() and any(commits.glob("*.json")):
        raise CurateError(f"{out} already holds the committed output of an earlier run; pass "
                          "resume=True (curate run --resume) to continue it, or choose an empty directory")


class ShardWriter:
    """Writes one flush's staged shards (and payload files); returns their paths and rows per
    status. Holds each output's schema so later shards match earlier ones. It runs in the
    driver, or (Ray) in an actor on the driver's node that fetches the payloads itself."""

    def __init__(self, outputs: dict[str, dict], row_group_rows: int):
        self.outputs, self.row_group_rows = outputs, row_group_rows
        self._schemas: dict[str, object] = {}

    def __call__(self, buffer: dict[str, list[dict]], stage_dir: str, flush: str, values: list):
        """`values` are the rows' payloads; a row holds its payload's position in them."""
        import pyarrow.parquet as pq

        stage = Path(stage_dir)
        shards, counts = {}, {}
        for name, rows in buffer.items():
            if not rows:
                continue
            expand_payloads(rows, values.__getitem__, output=name)
            opts = self.outputs[name]
            if opts["files"]:
                spill_files(rows, opts["files"], stage / name)
            table = to_table(rows, opts["schema"], opts["files"], self._schemas.get(name))
            self._schemas[name] = table.schema
            (stage / name).mkdir(parents=True, exist_ok=True)
            pq.write_table(table, stage / name / f"part-{flush}.parquet", row_group_size=self.row_group_rows)
            shards[name] = f"{name}/part-{flush}.parquet"
            c = counts[name] = {}
            for r in rows:
                c[r["status"]] = c.get(r["status"], 0) + 1
        return shards, counts
