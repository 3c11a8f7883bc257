"""The values a rerun starts from: each root's committed rows (`RecordedRoot`), and the built-in
stages a recipe's `rerun:` entry uses to turn them back into items of the run that wrote them.

A rerun's input is one `RecordedRoot` per input the selection touches: its root key, the rows of
the outputs the entry `reads`, and which of them the selection picked. Its steps then rebuild the
upstream values from those rows instead of re-running the stages that made them:
- `Rows` (expand) gives a root's rows of one output as its children, in ordinal order, so every
  child gets the entity id its row has (the output must hold every child of the root: a gap is
  refused naming the output);
- `present` (filter) replays the verdict the row records: a DROPPED row is dropped again with its
  reason, a FAILED one fails again with its cause, so the reduces downstream see the children they
  saw then;
- `pick` (expand into a child domain of the entity) gives a selected row as its only child, an
  unselected one none: what runs under the pick runs for the selected entities only;
- `one` (reduce) brings a pick's result back to its entity (or None, unselected);
- `RootRow` (map on the source) gives the root's own row of one output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from curate.core.outcome import ItemFailure
from curate.errors import CurateError


class RecordedCause(CurateError):
    """The cause an earlier run recorded for a row that failed: replayed as it was."""


@dataclass(frozen=True, slots=True)
class RecordedRow:
    """One committed row: its payload columns (`fields`), status, cause and whether the
    selection picked it."""

    entity_id: str
    depth: int  # ordinals below the root (0: the root's own row)
    ordinal: int
    status: str
    cause: str | None
    fields: dict
    selected: bool = False
    files_dir: str = ""  # the absolute directory (or URL) of its output: its file columns are relative to it
    source: str | None = None  # the input file (path or URL) its root was read from, where the manifest says

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    def source_file(self) -> str:
        """The input file its root was read from, checked against the content hash in its root
        key; InputError if the manifest names none, or the file changed since the run read it."""
        from curate.errors import InputError
        from curate.io.sources import MISSING, file_digest

        if not self.source:
            raise InputError(f"{self.entity_id}: the run's manifest names no input file for it (inputs that were not "
                             "files, or an input root moved since); rerun where the run's inputs are")
        want = self.entity_id.split("#")[0].rpartition("@")[2]
        if want and want != MISSING and file_digest(self.source) != want:
            raise InputError(f"{self.source}: the file changed since the run read it (its key's hash is {want}); "
                             "rerun on the file the run read, or run the recipe again on the new one")
        return self.source

    def get(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


@dataclass(frozen=True, slots=True)
class RecordedRoot:
    """One input of a rerun: its root key and its committed rows per output (each output's rows
    of this root in lineage order, the root's own row first where the output is at the root)."""

    key: str
    index: int  # its input index in the run that wrote it (the first lineage entry of its rows)
    rows: dict = field(default_factory=dict)  # output -> [RecordedRow]

    def output(self, name: str) -> list[RecordedRow]:
        if name not in self.rows:
            raise CurateError(f"the rerun reads output {name!r}, which it was not given ({sorted(self.rows)}); "
                              f"name it in the rerun entry's reads:")
        return self.rows[name]


class Rows:
    """Expand: each root's rows of `output` at lineage depth `depth` (1: its children), as its
    children in ordinal order. A gap in the ordinals (an output that does not hold every child)
    would give children other entity ids than their rows: refused, naming the output."""

    def __init__(self, output: str, depth: int = 1):
        self.output, self.depth = output, depth

    def __call__(self, roots: list[RecordedRoot]) -> list[list[RecordedRow]]:
        out = []
        for root in roots:
            kids = [r for r in root.output(self.output) if r.depth == self.depth]
            for i, r in enumerate(kids):
                if r.ordinal != i:
                    raise CurateError(f"output {self.output!r} of {root.key} has no row for child {i} (the next "
                                      f"holds ordinal {r.ordinal}); a rerun rebuilds children from an output that "
                                      "holds every child of its parent, DROPPED and FAILED ones too: read another "
                                      "output")
            out.append(kids)
        return out


def present(recorded: list[RecordedRow]) -> list:
    """Filter: the row's recorded verdict again (DROPPED with its reason, FAILED with its cause)."""
    out = []
    for r in recorded:
        if r.status == "dropped":
            out.append((False, r.cause or "dropped by the run that wrote it"))
        elif r.status == "present":
            out.append(True)
        else:
            out.append(ItemFailure(RecordedCause(r.cause or f"{r.status} in the run that wrote it")))
    return out


def pick(recorded: list[RecordedRow]) -> list[list[RecordedRow]]:
    """Expand: the row itself if the selection picked it, else no child."""
    return [[r] if r.selected else [] for r in recorded]


def one(groups: list[list]) -> list:
    """Reduce: a pick's only result, or None for an entity the selection left alone."""
    return [g[0] if g else None for g in groups]


class RootRow:
    """Map: the root's own row of `output` (an output at the root: no ordinals)."""

    def __init__(self, output: str):
        self.output = output

    def __call__(self, roots: list[RecordedRoot]) -> list:
        out = []
        for root in roots:
            mine = [r for r in root.output(self.output) if r.depth == 0]
            out.append(mine[0] if mine else ItemFailure(CurateError(
                f"output {self.output!r} has no row for {root.key}; a rerun reads a root's own row from an "
                "output at the root")))
        return out
