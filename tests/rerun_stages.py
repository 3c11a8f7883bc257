"""Stages of the small recipe the rerun tests write (tests/test_rerun.py): a text file -> its
lines -> each line scored and labelled -> the document's labels joined; `label` is the step a
rerun runs again, on the lines a run committed. Every label batch prints its lines, and with
RERUN_HOLD=TEXT a batch holding the line TEXT waits until the job is killed (tests/kills.py)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import curate as cu


@dataclass(frozen=True)
class Line:
    text: str
    score: int


@dataclass(frozen=True)
class Labelled:
    text: str
    score: int
    label: str


def lines(paths: list) -> list:
    out = []
    for p in paths:
        text = Path(p).read_text()
        if text.startswith("BROKEN"):
            out.append(cu.ItemFailure(cu.InputError(f"{p}: broken")))
        else:
            out.append(text.splitlines())
    return out


def score(items: list) -> list:
    return [Line(t, len(t)) if t != "bad" else cu.ItemFailure(cu.InputError("a bad line")) for t in items]


def long_enough(items: list) -> list:
    return [(it.score >= 2, f"short: {it.score}") for it in items]


class Label:
    def __init__(self, tag: str = "v1"):
        self.tag = tag

    def __call__(self, items: list) -> list:
        texts = [it.text for it in items]
        print("ran label", len(items), *texts, flush=True)
        if os.environ.get("RERUN_HOLD") in texts:
            threading.Event().wait()  # until the test kills the job
        return [Labelled(it.text, it.score, f"{self.tag}:{it.text.upper()}") for it in items]


def join(groups: list) -> list:
    return [" ".join(x.label for x in g) for g in groups]


def as_line(rows: list) -> list:
    """A recorded line row -> the Line the label step takes."""
    return [Line(r["text"], r["score"]) for r in rows]


def chosen(items: list) -> list:
    """(recorded row, new Labelled or None) -> the new one, or the recorded one."""
    return [new if new is not None else Labelled(row["text"], row["score"], row["label"]) for row, new in items]
