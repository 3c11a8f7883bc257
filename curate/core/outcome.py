"""Outcomes, in one home: what a stage may return for an item (GroupFailure, ItemFailure), the
integer codes the scheduler stores per cell and a worker reports per item (BatchReport), and
what a run gives back per item (Item, Issue)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from curate.errors import Cause, EngineError


class Status(enum.IntEnum):
    """Terminal outcome of an item. The integer codes are what the scheduler stores per grain."""

    PRESENT = 1
    DROPPED = 2  # removed by a filter, with a reason; it keeps its value at the filter
    FAILED = 3  # its own computation failed, with a cause
    SUPPRESSED = 4  # never computed because of another item's failure, with that cause

    def __str__(self) -> str:
        return self.name.lower()


PENDING = 0  # not terminal yet: the code stored before a grain commits
PRESENT, DROPPED, FAILED, SUPPRESSED = (int(s) for s in Status)
GROUP = 5  # reported only: FAILED, and its not-yet-run siblings are SUPPRESSED


@dataclass(slots=True)
class BatchReport:
    """Outcome of one batch, as a worker reports it. `codes is None` means every item is
    PRESENT (the common case); `nbytes` is the size of the values where the executor measured
    it (Ray: their pickled size), for the admission's bytes budget."""

    values: list  # per item: value (expand: list of children values); None if not PRESENT
    #               (a filter's PRESENT and DROPPED items keep their input value: not sent back)
    codes: list[int] | None = None
    causes: dict[int, object] = field(default_factory=dict)  # index -> Cause, or drop reason (str)
    nbytes: int = 0


@dataclass(frozen=True, slots=True)
class GroupFailure:
    """Return in place of an item's result: the item FAILS and its not-yet-run siblings
    (same Call, same direct parent) are SUPPRESSED. At the root level it acts as ItemFailure."""

    cause: Any


@dataclass(frozen=True, slots=True)
class ItemFailure:
    """Return in place of an item's result: this item alone FAILS with `cause`."""

    cause: Any


@dataclass(frozen=True, slots=True)
class Item:
    """One entity of an output: its lineage (input index, then ordinals), outcome and value. A
    DROPPED item keeps the value it had at the filter that dropped it; a FAILED or SUPPRESSED
    one has none."""

    lineage: tuple[int, ...]
    status: Status
    value: Any = None
    cause: Cause | str | None = None

    def __post_init__(self):
        if self.status is Status.PRESENT and self.cause is not None:
            raise EngineError(f"PRESENT item {self.lineage} carries a cause")
        if self.status in (Status.FAILED, Status.SUPPRESSED) and self.value is not None:
            raise EngineError(f"{self.status} item {self.lineage} carries a value")


def has_value(item: Item) -> bool:
    """Whether an item carries a value for a sink to fetch and write: PRESENT, or DROPPED with
    the value it had at its filter (FAILED and SUPPRESSED items have none)."""
    return item.status is Status.PRESENT or (item.status is Status.DROPPED and item.value is not None)


@dataclass(frozen=True, slots=True)
class Issue:
    """Stands in `RunResult.values()` for an item that is not PRESENT."""

    lineage: tuple[int, ...]
    status: Status
    cause: Cause | str | None
