"""Payload files written by the worker that made them, not by the sink's writer.

An output with payload files (`Pipeline.output(..., files={"clip_file": ".mp4"})`) has its
files staged at the worker when its port is the value of a Call (map, expand, reduce) that
nothing else reads and no other output names (`staging_calls`): right after the Call's batch,
the worker writes each file column's bytes as one whole object under
`<out>/_curate/staging/files/<run>/<uuid><ext>` and replaces the value by a `StagedRow`, whose
file columns are `StagedFile`s (where the bytes are, and how many). So the bytes never travel
to the driver's node; the writer names each file as it always did (`rows.spill_files`) and the
commit record lists the moves (`"files": {output: [[staged, final], ...]}`), which publication
makes after the commit point (`curate.io.commits`).

Any other output with files (its port a filter, zip or broadcast, or a value another step
reads) keeps the writer's path: the bytes reach the writer, which writes them into its flush's
staging. This module imports nothing heavy: the workers import it."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from curate.core.outcome import FAILED, PRESENT, BatchReport
from curate.errors import Cause
from curate.io.commits import STAGED_FILES
from curate.io.rows import StagedFile, payload_fields
from curate.names import file_spec

CALL_KINDS = ("map", "expand", "reduce")  # the nodes whose value a worker makes (a filter passes its input on)


def staging_calls(plan) -> dict[int, str]:
    """The Calls whose payload files their workers stage: call id -> the output it makes. Each
    is the node of an output with `files`, a map, expand or reduce, whose values no other node
    reads and no other output names (those would see a StagedRow, not the bytes)."""
    named = Counter(plan.outputs.values())
    out = {}
    for name, node_id in plan.outputs.items():
        n = plan.nodes_by_id[node_id]
        if (plan.output_options.get(name, {}).get("files") and n.kind in CALL_KINDS and n.call >= 0
                and not plan.consumers[n.out_slot] and named[node_id] == 1):
            out[n.call] = name
    return out


def fallback_outputs(plan) -> list[str]:
    """Outputs with payload files that the writer writes (no Call of theirs stages them)."""
    staged = set(staging_calls(plan).values())
    return sorted(n for n, o in plan.output_options.items() if o.get("files") and n not in staged)


@dataclass(frozen=True, slots=True)
class StagedRow:
    """A value whose payload files are staged: its row's fields (`rows.payload_fields` of the
    value the stage returned), each staged file column a StagedFile."""

    fields: dict

    def __curate_row__(self) -> dict:
        return dict(self.fields)


@dataclass(frozen=True)
class FileStaging:
    """What a worker needs to stage payload files for one run: the output directory (`out`, a
    spelling another process opens), the run id, and per staging Call its output's `files`.
    `node`: for a local directory, the Ray node whose disk it is (workers elsewhere leave the
    bytes to the writer); None for a URL, or in one process."""

    out: str
    run_id: str
    calls: dict[int, dict] = field(default_factory=dict)  # call -> {column: file spec}
    local: bool = False
    node: str | None = None

    @property
    def prefix(self) -> str:
        return f"{STAGED_FILES}/{self.run_id}"

    def stage(self, call: int, kind: str, rep: BatchReport, name: str) -> BatchReport:
        """`rep` with each PRESENT value of a staging Call (each child of an expand) turned into
        a StagedRow, its files written; an item whose file cannot be written FAILS (cause kind
        "storage"), its batch-mates go on. Other Calls' reports are returned as they are."""
        files = self.calls.get(call)
        if files is None:
            return rep
        from curate.io.location import location

        loc = location(self.out)  # made per batch: its file system follows the environment (remote.filesystem)
        specs = {col: file_spec(spec)[0] for col, spec in files.items()}
        values, codes, causes = list(rep.values), rep.codes, dict(rep.causes)
        for i, v in enumerate(values):
            if codes is not None and codes[i] != PRESENT:
                continue
            try:
                values[i] = [self._row(loc, c, specs) for c in v] if kind == "expand" else self._row(loc, v, specs)
            except _Refused as refused:
                codes = list(codes) if codes is not None else [PRESENT] * len(values)
                codes[i], causes[i], values[i] = FAILED, self._cause(loc, refused.error, name), None
        return BatchReport(values, codes, causes, rep.nbytes)

    def _row(self, loc, value, specs: dict[str, str]) -> StagedRow:
        fields = payload_fields(value)
        for col, ext in specs.items():
            data = fields.get(col)
            if not isinstance(data, (bytes, bytearray, memoryview, str)):
                continue  # None (no file), or a value the writer reports as it always did
            raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            rel = f"{self.prefix}/{uuid.uuid4().hex}{ext}"
            try:
                loc.write_bytes(rel, raw)
            except Exception as exc:  # noqa: BLE001 - the store's client raises many kinds
                raise _Refused(exc) from exc
            fields[col] = StagedFile(rel, len(raw))
        return StagedRow(fields)

    def _cause(self, loc, exc: Exception, call: str) -> Cause:
        from curate.io.remote import describe

        where = loc.show(self.prefix)
        return Cause("storage", f"its payload file could not be written to {where}: {describe(exc)}; check that "
                     "the output location is writable from every worker (disk space and permissions, or for "
                     "object storage the bucket, the AWS_* credentials and AWS_ENDPOINT_URL on each node), "
                     "then run again with --retry-failed", call, type(exc).__name__)


class _Refused(Exception):
    """The output location refused a staged file (`error`): its item FAILS, not its batch."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


@dataclass
class FlushFiles:
    """The payload files of one flush, as its writer met them: per output the moves of the
    files workers staged, `(staged, final, nbytes)`, and the files the writer wrote itself."""

    staged: dict[str, list] = field(default_factory=dict)
    written: int = 0
    written_bytes: int = 0

    def moves(self, output: str) -> list:
        """Where `spill_files` puts the staged files it names for `output`."""
        return self.staged.setdefault(output, [])

    def add(self, written: tuple[int, int]) -> None:
        """Count the files (and bytes) `spill_files` wrote itself."""
        self.written, self.written_bytes = self.written + written[0], self.written_bytes + written[1]

    def record(self) -> dict[str, list[list[str]]]:
        """The commit record's "files": output -> [[staged, final], ...]."""
        return {o: [[s, f] for s, f, _ in m] for o, m in self.staged.items() if m}

    def counts(self) -> dict[str, int]:
        """What the run's metrics add up (PAYLOAD_FILE_METRICS)."""
        moved = [n for m in self.staged.values() for _, _, n in m]
        return {"files_written_by_workers": len(moved), "file_bytes_by_workers": sum(moved),
                "files_through_writer": self.written, "file_bytes_through_writer": self.written_bytes}


PAYLOAD_FILE_METRICS = ("files_written_by_workers", "file_bytes_by_workers", "files_through_writer",
                        "file_bytes_through_writer")


def file_staging(plan, out, run_id: str) -> FileStaging | None:
    """The FileStaging of a run of `plan` into `out` (a location), or None if no Call stages."""
    calls = {c: plan.output_options[o]["files"] for c, o in staging_calls(plan).items()}
    if not calls:
        return None
    return FileStaging(out.absolute(), run_id, calls, local=not out.remote)
