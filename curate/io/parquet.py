"""The Parquet sink: each named output streams to `out/<name>/part-<run>-<n>.parquet` as its
roots complete. A flush holds whole roots (every row of a root, across all outputs, lands in
one commit), so a killed run resumes by skipping committed roots and redoing the rest.

Memory is bounded by constants, not by a root's size: rows reach the writer in chunks of at
most `chunk_rows` while a root's rows are still being read from the scheduler, and the writer
holds them as Arrow tables until an output has `shard_rows` rows (or `part_bytes` bytes)
pending, then writes them as one staged part. A flush (a commit) names all its parts: a root
of 200,000 rows becomes several part files that are committed, recovered and published
together, like the single shard of a small flush."""

from __future__ import annotations

import time
from pathlib import Path

from curate import defaults
from curate.deps import require
from curate.errors import CurateError
from curate.memory import peak_rss
from curate.io.commits import META, CommitLog, record_counts
from curate.io.retry import Retry
from curate.io.location import location
from curate.io.parts import PartRewriter, conform, merge, same, vector_lists
from curate.io.rows import DEFERRED, concat_tables, expand_payloads, item_row, spill_files, to_table
from curate.io.staged_files import PAYLOAD_FILE_METRICS, STAGED_FILES, FlushFiles, file_staging
from curate.value_store import LocalStore


CHUNK_ROWS = 4096  # rows the sink hands its writer at a time: the driver never builds more rows
#                   than twice this however large a root is (~1 KB a row before they become Arrow)
PART_BYTES = 64 * 2**20  # Arrow bytes of one output that the writer holds before writing them as a
#                          part: bounds its memory when payloads are large (rows alone: `shard_rows`)


class ParquetSink:
    """Buffers finished roots and commits them as staged parts per output, every `shard_rows`
    rows or `flush_s` seconds (checked at every heartbeat, so a hung run still commits what
    finished), on Ctrl-C, and at the end. A flush of small roots is one part per output; a root
    larger than `chunk_rows` streams to the writer while it is read, and an output's part is
    cut at `shard_rows` rows or `part_bytes` bytes, so a flush may name several parts."""

    def __init__(self, out: str | Path, outputs: dict[str, dict], run_id: str, *,
                 shard_rows: int = defaults.DEFAULT_SHARD_ROWS, flush_s: float = defaults.DEFAULT_FLUSH_S,
                 row_group_rows: int = defaults.DEFAULT_ROW_GROUP_ROWS, chunk_rows: int = CHUNK_ROWS,
                 part_bytes: int = PART_BYTES, retry_failed: bool = False, rows=None,
                 worker_files: bool = True):
        require("pyarrow.parquet", "Parquet output (output_dir=)")  # before the run, not at its end

        self.loc = location(out)
        self.out = self.loc.spec  # a Path, or the URL of an output on object storage
        self.outputs = outputs  # name -> {"schema": {...}, "files": {...}}
        self.run_id = run_id
        self.shard_rows, self.flush_s, self.row_group_rows = shard_rows, flush_s, row_group_rows
        self.chunk_rows, self.part_bytes = max(1, chunk_rows), part_bytes
        self.row_hook = rows  # (output, row) -> the row to write, or None to leave it out (curate rerun)
        self.log = CommitLog(self.loc)
        try:
            self.records = self.log.recover()
        except FileNotFoundError as exc:
            raise CurateError(f"cannot resume {self.out}: {exc}. Put the file back, or start again in a "
                              "new output directory (or delete this one)") from None
        self.committed_keys = {k for rec in self.records for k in rec["roots"]}
        self.retry = Retry(self.loc, outputs, self.records) if retry_failed else None
        self.retried = 0  # committed failed roots whose rows this run replaced
        self.bind(LocalStore())
        self._buffer: dict[str, list[dict]] = {name: [] for name in outputs}  # rows not yet shipped
        self._buffered = 0
        self._roots: list[str] = []  # roots of the open flush
        self.input_digests: dict[str, str] = {}  # index-keyed roots admitted: their input's digest
        self._replaced: list[str] = []  # committed failed roots whose rows the open flush replaces
        self._rows = 0  # rows of the open flush
        self._stage: Path | None = None  # its staging directory, once something was shipped
        self._seq = 0
        self._last_flush = time.monotonic()
        self.counts: dict[str, dict[str, int]] = {name: {} for name in outputs}  # this run's rows
        self.writer_peak_rss = 0  # bytes: peak resident memory of the writer's process (0: unknown)
        self.worker_files = worker_files  # False: every payload file goes through the writer, as before
        self.payload_files = dict.fromkeys(PAYLOAD_FILE_METRICS, 0)  # this run's, for its metrics

    def bind(self, store) -> None:
        """Write shards where the store's values are (Ray: an actor on this node fetches the
        payloads itself, so output bytes skip the driver), or here on fetched values."""
        args = (self.outputs, self.row_group_rows, self.shard_rows, self.part_bytes, self.loc.absolute())
        placed = store.place(ShardWriter, *args)
        self._writer_elsewhere = placed is not None  # its peak is another process's (else the driver's)
        if placed is None:
            local = ShardWriter(*args)
            placed = lambda values, *a: local(*a, values=store.fetch(values))  # noqa: E731
        self._write = placed

    def file_staging(self, plan):
        """What the workers of `plan` need to stage payload files themselves (None: none do, or
        `worker_files=False`): see `curate.io.staged_files`."""
        return file_staging(plan, self.loc, self.run_id) if self.worker_files else None

    @property
    def _flush_name(self) -> str:
        return f"{self.run_id}-{self._seq:05d}"

    def write_roots(self, roots) -> None:
        """Finished roots, each `(index, key, {output: items in lineage order})`; the items may be
        an iterator over the scheduler's tables, read here once. Rows go to the writer a chunk
        at a time, so a root's rows are never all in memory at once."""
        chunk = self.chunk_rows
        for _, root_key, rows in roots:
            in_root = 0  # rows of this root not shipped yet
            for name, items in rows.items():
                buf = self._buffer[name]
                for it in items:
                    row = item_row(it, root_key, defer=True, output=name)
                    if self.row_hook is not None and (row := self.row_hook(name, row)) is None:
                        continue
                    buf.append(row)
                    self._rows += 1
                    self._buffered += 1
                    in_root += 1
                    if in_root >= chunk:  # a large root: stream it to the writer while it is read
                        self._ship(last=False)
                        buf, in_root = self._buffer[name], 0
            self._roots.append(root_key)
            if self.retry is not None:
                self._replaced.extend(self.retry.replaced_by(root_key))
            if self._rows >= self.shard_rows:
                self.flush()
            elif self._buffered >= chunk:
                self._ship(last=False)
        self.poll()

    def poll(self) -> None:
        if time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()

    def _ship(self, last: bool, drop: tuple | None = None):
        """Hand the buffered rows to the writer (into the open flush's staging directory); with
        `last`, the writer writes what it still holds and returns the flush's parts and counts."""
        if self._stage is None:
            self._stage = self.log.stage_dir(self._flush_name)
        values = []  # the payload references, in row order; each row keeps its position
        for rows in self._buffer.values():
            for row in rows:
                if DEFERRED in row:
                    row[DEFERRED], _ = len(values), values.append(row[DEFERRED])
        buffer, self._buffer, self._buffered = self._buffer, {name: [] for name in self.outputs}, 0
        return self._write(values, buffer, str(self._stage), self._flush_name, last, drop)

    def flush(self) -> None:
        """Commit every buffered root: staged parts, then the commit record, then publication."""
        if not self._roots:
            self._last_flush = time.monotonic()
            return
        flush = self._flush_name
        drop = self.retry.drop(self._replaced) if self._replaced else None
        shards, counts, peak, rewrites, removed, files = self._ship(last=True, drop=drop)
        if self._writer_elsewhere:
            self.writer_peak_rss = max(self.writer_peak_rss, peak)
        record = {"flush": flush, "run": self.run_id, "shards": shards, "roots": self._roots, "counts": counts}
        digests = {k: self.input_digests.pop(k) for k in self._roots if k in self.input_digests}
        if digests:  # a resume checks that each index still names the same input (curate.keys)
            record["inputs"] = digests
        if rewrites:  # committed parts rewritten to a wider schema, or without replaced roots' rows
            record["rewrites"] = rewrites
        if self._replaced:
            record.update(retried=self._replaced, removed=removed)
        if moves := files.record():  # payload files the workers staged: moved into place by the commit
            record["files"] = moves
        self.log.commit(record)
        for k, n in files.counts().items():
            self.payload_files[k] += n
        self.retried += len(self._replaced)
        self.records.append(record)
        for name, c in counts.items():
            for st, n in c.items():
                self.counts[name][st] = self.counts[name].get(st, 0) + n
        self._roots, self._replaced, self._rows, self._stage = [], [], 0, None
        self._last_flush = time.monotonic()
        self._seq += 1

    def close(self) -> None:
        """The last flush; then this run's staged payload files that no commit named (a batch
        that ran twice, an item whose root failed) are deleted."""
        self.flush()
        self.loc.delete_tree(f"{STAGED_FILES}/{self.run_id}")

    def total_counts(self) -> dict[str, dict[str, int]]:
        """Rows per output and status over every committed flush of the directory."""
        return record_counts(self.records)


def check_output_dir(out, resume: bool) -> None:
    """Refuse an output path that is not a directory, and a new run into a directory that
    already holds committed rows (`out`: a path, a URL or a location)."""
    loc = location(out)
    if loc.remote:
        _check_remote_output(loc)
    else:
        out = loc.root
        if out.exists() and not out.is_dir():
            raise CurateError(f"the output directory {out} is a file; give a directory (new or empty, or the "
                              "directory of the run to resume), e.g. --output out/run1")
        blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise CurateError(f"cannot create the output directory {out}: {blocker} is a file; choose another path")
    if not resume and loc.list(f"{META}/commits", "*.json"):
        raise CurateError(f"{loc.spec} already holds the committed output of an earlier run; pass "
                          "resume=True (curate run --resume) to continue it, or choose an empty directory")


def _check_remote_output(loc) -> None:
    """An output URL names a prefix, never an object; a store that refuses (no bucket, no
    permission, wrong endpoint) is reported naming the URL before the run starts."""
    from curate.io.remote import StorageError, describe

    bucket = loc.root.split("/", 1)[0]
    try:
        is_object, has_bucket = loc.is_file(), loc.fs.exists(bucket)
    except Exception as exc:  # noqa: BLE001 - the store's client raises many kinds
        raise StorageError(f"cannot use the output {loc.spec}: {describe(exc)}; check the bucket exists, the "
                           "credentials (AWS_* variables) and the endpoint (AWS_ENDPOINT_URL)") from None
    if not has_bucket:
        raise StorageError(f"cannot use the output {loc.spec}: its bucket {bucket!r} does not exist (or these "
                           "credentials cannot see it); create it first, or check AWS_ENDPOINT_URL and the AWS_* "
                           "variables")
    if is_object:
        raise CurateError(f"the output {loc.spec} is an object, not a prefix; give a prefix (new or empty, or the "
                          "output of the run to resume), e.g. --output s3://bucket/run1")


class ShardWriter:
    """Writes one flush's staged parts (and payload files), a chunk of rows per call; the
    call with `last` writes what it still holds and returns the parts per output, rows per
    output and status, this process's peak RSS, the committed parts it rewrote per output and
    the rows those rewrites left out per output and status. It runs in the driver, or (Ray) in
    an actor on the driver's node that fetches the payloads itself.

    Every part of an output has the output's whole schema (`curate.io.parts`): the schema of
    the parts on disk when the writer starts (`out`), widened by each new part; a flush that
    widens it rewrites its own earlier parts and the committed ones to it, in the same commit.

    Between calls it keeps each output's rows as Arrow tables (compact: no Python object per
    row) until they reach `part_rows` rows or `part_bytes` bytes, then writes them as one part:
    `part-<flush>.parquet` for the first, `part-<flush>_<k>.parquet` after it (names sort in
    write order, so a directory listing reads the parts in lineage order)."""

    def __init__(self, outputs: dict[str, dict], row_group_rows: int, part_rows: int = defaults.DEFAULT_SHARD_ROWS,
                 part_bytes: int = PART_BYTES, out: str | None = None):
        self.outputs, self.row_group_rows = outputs, row_group_rows
        self.part_rows, self.part_bytes = max(1, part_rows), part_bytes
        self._disk = PartRewriter(out, outputs)
        self._schemas: dict[str, object] = {n: s for n in outputs if (s := self._disk.schema(n)) is not None}
        self._flush: str | None = None
        self._pending: dict[str, list] = {}  # output -> Arrow tables not written yet
        self._parts: dict[str, dict[str, object]] = {}  # output -> {part: its schema} of this flush
        self._counts: dict[str, dict[str, int]] = {}
        self._files = FlushFiles()

    def __call__(self, buffer: dict[str, list[dict]], stage_dir: str, flush: str, last: bool = True,
                 drop: tuple | None = None, *, values: list):
        """Add a chunk of rows to `flush`; `values` are the rows' payloads (a row holds its
        payload's position in them). With `last`: write the rest, leave the rows of the root
        keys `drop[0]` out of the committed parts `drop[1]` names (retry_failed), and return
        (parts, counts, peak, rewrites, removed, files): `files` is the flush's FlushFiles."""
        if flush != self._flush:  # a new flush (a failed one left nothing that is committed)
            self._flush, self._pending, self._parts, self._counts = flush, {}, {}, {}
            self._files = FlushFiles()
        stage = location(stage_dir)
        for name, rows in buffer.items():
            if not rows:
                continue
            expand_payloads(rows, values.__getitem__, output=name)
            opts = self.outputs[name]
            if opts["files"]:
                self._files.add(spill_files(rows, opts["files"], stage.child(name), self._files.moves(name)))
            c = self._counts.setdefault(name, {})
            for r in rows:
                c[r["status"]] = c.get(r["status"], 0) + 1
            # typed like the parts written before (so they read as one dataset); the chunks of
            # one part are unified when it is written, as one conversion of its rows would be
            table = to_table(rows, opts["schema"], opts["files"], self._schemas.get(name))
            rows.clear()  # the Python rows go now; the chunk lives on as Arrow
            pending = self._pending.setdefault(name, [])
            pending.append(table)
            if sum(t.num_rows for t in pending) >= self.part_rows or sum(t.nbytes for t in pending) >= self.part_bytes:
                self._write_part(stage, name)
        if not last:
            return None
        for name in list(self._pending):
            self._write_part(stage, name)
        rewrites, removed = self._rewrite(stage, *(drop or (set(), set())))
        out = ({name: list(parts)[0] if len(parts) == 1 else list(parts) for name, parts in self._parts.items()},
               self._counts, peak_rss(), rewrites, removed, self._files)
        self._flush, self._pending, self._parts, self._counts = None, {}, {}, {}
        self._files = FlushFiles()
        return out

    def _write_part(self, stage, name: str) -> None:
        """Write the pending tables of output `name` as the flush's next part, in the output's
        schema widened by its columns."""
        tables = self._pending.pop(name, [])
        if not tables:
            return
        table = concat_tables(tables)
        del tables
        known = self._schemas.get(name)
        schema = merge(known, table.schema)
        conformed = conform(table, schema)
        if (safe := vector_lists(schema, known, conformed)) is not schema:  # a null vector: a list column
            conformed = conform(table, safe)
        parts = self._parts.setdefault(name, {})
        file = f"part-{self._flush}.parquet" if not parts else f"part-{self._flush}_{len(parts):05d}.parquet"
        self._schemas[name] = written = stage.write_parquet(conformed, f"{name}/{file}", self.row_group_rows)
        parts[f"{name}/{file}"] = written

    def _rewrite(self, stage, drop_roots: set, candidates: set) -> tuple[dict, dict]:
        """Bring every part of each output to its final schema: this flush's parts written
        before the schema widened, and the committed parts (staged under the same names, to be
        published by this flush's commit), leaving out the rows of `drop_roots`."""
        rewrites, removed = {}, {}
        for name in self.outputs:
            final = self._schemas.get(name)
            if final is None:
                continue
            mine = self._parts.get(name, {})
            for part, schema in mine.items():
                if not same(schema, final):
                    path = f"{name}/{Path(part).name}"
                    table = conform(stage.read_parquet(path), final)
                    mine[part] = stage.write_parquet(table, path, self.row_group_rows)
            staged, gone = self._disk.rewrite(name, final, stage, self.row_group_rows, drop_roots, candidates)
            if staged:
                rewrites[name] = staged
            if gone:
                removed[name] = gone
            self._disk.committed(name, mine)
        return rewrites, removed
