"""Worker side of a batch: call the stage, check its answer, and turn it into a BatchReport
(per-item outcome codes, values, causes). Runs where the stage runs; imports nothing heavy."""

from __future__ import annotations

import reprlib

from curate.core.outcome import (
    DROPPED,
    FAILED,
    GROUP,
    PRESENT,
    BatchReport,
    GroupFailure,
    ItemFailure,
)
from curate.errors import Cause, UserCodeError


def run_batch(fn, kind: str, inputs: list, call: str) -> BatchReport:
    """Call `fn(inputs)` and normalise the result; raises UserCodeError on a malformed answer
    (which the engine treats like any exception: retried, then isolated)."""
    out = fn(inputs)
    if not isinstance(out, list) and _sequence_like(out):
        out = list(out)  # a tuple, generator or array of results is fine; a bare value is not
    if not isinstance(out, list) or len(out) != len(inputs):
        got = f"{len(out)} results" if isinstance(out, list) else f"a {type(out).__name__} ({reprlib.repr(out)})"
        raise UserCodeError(f"stage {call} returned {got} for a batch of {len(inputs)}; "
                            "a stage must return a list with one result per input item")
    if kind == "filter":
        return _filter_report(out, call)
    codes: list[int] | None = None
    causes: dict[int, object] = {}
    for i, v in enumerate(out):
        if isinstance(v, (GroupFailure, ItemFailure)):
            if codes is None:
                codes = [PRESENT] * len(out)
            codes[i], causes[i] = _failure(v, call)
            out[i] = None
        elif kind == "expand":
            out[i] = _children(v, call)
    return BatchReport(out, codes, causes)


def _sequence_like(x) -> bool:
    return hasattr(x, "__iter__") and not isinstance(x, (str, bytes, dict))


def _failure(v: GroupFailure | ItemFailure, call: str) -> tuple[int, Cause]:
    """The outcome code and cause of a failure a stage returned for one item."""
    if isinstance(v, GroupFailure):
        return GROUP, Cause.of(v.cause, "group", call)
    return FAILED, Cause.of(v.cause, "item", call)


def _children(v, call: str) -> list:
    if isinstance(v, list):
        return v
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
        raise UserCodeError(f"expand stage {call} returned {type(v).__name__} for an item; "
                            "return a list (possibly empty) of children per item")
    return list(v)


def _filter_report(out: list, call: str) -> BatchReport:
    codes = [PRESENT] * len(out)
    causes: dict[int, object] = {}
    for i, v in enumerate(out):
        reason = None
        if isinstance(v, tuple) and len(v) == 2:
            v, reason = v
        if isinstance(v, (GroupFailure, ItemFailure)):
            codes[i], causes[i] = _failure(v, call)
        elif v is True or v is False or type(v).__name__ == "bool_":
            if not v:
                codes[i] = DROPPED
                causes[i] = str(reason) if reason is not None else f"filtered by {call}"
        else:
            raise UserCodeError(f"filter stage {call} returned {v!r} for an item; return a bool "
                                "or (bool, reason) per item")
        out[i] = None
    if all(c == PRESENT for c in codes):
        return BatchReport(out, None, causes)
    return BatchReport(out, codes, causes)
