"""What runs inside a Ray actor: resolve a bundle's inputs from the payloads Ray fetched
(`wire`), run each batch, and return small metadata apart from the payloads."""

from __future__ import annotations

import time

import ray

from curate.executors.stage_call import run_batch
from curate.core.outcome import FAILED, PRESENT, BatchReport
from curate.errors import Cause, build_stage
from curate.executors.ray.cores import CoreMeter, usable_cores
from curate.executors.ray.wire import UNBOUND, pickled_size, resolve, unpicklable
from curate.memory import peak_rss, private_rss


class PoolWorker:
    """One actor of a pool. A class target is built once per actor (and once per session when
    a session keeps the actor warm): on its first batch, or by `prepare` (a session builds
    every replica before its next run); a failing constructor fails batches (with its cause)
    instead of the actor. `bind` tells it, at the start of each run, which Calls it serves; an
    actor Ray restarted after a death has forgotten it, and answers UNBOUND until it is told
    again."""

    def __init__(self, target, init: dict):
        self._target, self._init = target, init
        self._run = None  # the run whose Calls it serves
        self._calls: dict[int, tuple[str, str, object]] = {}  # call -> (kind, name, fn or method)
        self._staging = None  # the run's FileStaging, where this actor can write the output's files
        self._obj = None
        self._failed: BaseException | None = None  # prepare's constructor failure, for the next batch
        self._peak_private = 0  # the largest private memory seen at the end of a batch

    def bind(self, run: str, calls: dict[int, tuple[str, str, object]], staging=None) -> tuple[str, float]:
        """Serve `calls` for `run`, writing the payload files `staging` (a FileStaging) names
        where it can: an output on object storage, or a local one on its own node. Returns this
        actor's node and the cores it may use there."""
        self._run, self._calls = run, calls
        where = _where()
        self._staging = staging if staging is not None and staging.node in (None, where[0]) else None
        return where

    def prepare(self) -> None:
        """Build the class target now, not on the first batch. A constructor that fails here
        fails the next batch with that error, as if that batch had built it (a later batch
        tries again, so a TransientError may pass)."""
        if self._target is not None and self._obj is None and self._failed is None:
            try:
                self._build()
            except BaseException as exc:  # noqa: BLE001 - reported by the next batch
                self._failed = exc

    def _build(self) -> None:
        self._obj = build_stage(self._target, self._init, getattr(self._target, "__name__", "the stage"))

    def _fn(self, call: int):
        kind, name, what = self._calls[call]
        if self._target is None:
            return what
        if self._failed is not None:
            exc, self._failed = self._failed, None
            raise exc
        if self._obj is None:
            self._build()
        return getattr(self._obj, what)

    @ray.method(num_returns=2)
    def run(self, run: str, call: int, batches: list[list], *payloads):
        """Run each batch of one Call; returns (metadata, payload): per batch either
        ("ok", codes, causes, child counts, value bytes, start, seconds, cores) or ("err", Cause,
        start, seconds, cores), where cores is how many the batch kept busy (`cores`). Values
        that cannot be pickled FAIL their items here, before Ray sends them."""
        if run != self._run:  # restarted since bind: nothing ran, the batches go back unharmed
            return [(UNBOUND,)] * len(batches), [None] * len(batches)
        kind, name, _ = self._calls[call]
        metas, outs = [], []
        for inputs in batches:
            wall, meter = time.time(), CoreMeter()
            try:
                rep = run_batch(self._fn(call), kind, [resolve(x, payloads) for x in inputs], name)
                if self._staging is not None:  # its payload files written here: the bytes stay
                    rep = self._staging.stage(call, kind, rep, name)
            except BaseException as exc:  # noqa: BLE001 - every failure is an attempt to report
                metas.append(("err", Cause.from_exception(exc, name), wall, *meter.read()))
                outs.append(None)
                continue
            counts = None
            if kind == "expand":
                codes = rep.codes
                counts = [len(v) if (codes is None or codes[i] == PRESENT) else 0 for i, v in enumerate(rep.values)]
            out = None if kind == "filter" else rep.values
            size = 0 if out is None else pickled_size(out)
            if isinstance(size, str):  # rare: fail the items whose values cannot travel
                rep = _fail_unpicklable(rep, counts, kind, name)
                size = pickled_size(out)
            metas.append(("ok", rep.codes, rep.causes, counts, size, wall, *meter.read()))
            outs.append(out)
        self._peak_private = max(self._peak_private, private_rss())  # the outputs are still held here
        return metas, outs

    def ping(self) -> tuple[str, float]:
        """Alive (a restarted actor answers once it is up): its node and usable cores, as `bind`."""
        return _where()

    def memory(self) -> tuple[int, int]:
        """This actor process's peak resident memory (VmHWM: it includes the pages of Ray's
        shared object store the process touched) and its largest private memory at the end of
        a call, in bytes."""
        return peak_rss(), self._peak_private


def _where() -> tuple[str, float]:
    """This actor's node and the cores it may use there (for the driver's core slots)."""
    return ray.get_runtime_context().get_node_id(), usable_cores()


def _fail_unpicklable(rep: BatchReport, counts: list | None, kind: str, name: str) -> BatchReport:
    """FAIL each item of one batch whose value cannot be pickled (its value becomes None, so the
    rest of the batch travels); its batch-mates are left alone."""
    out = rep.values
    codes = list(rep.codes) if rep.codes is not None else [PRESENT] * len(out)
    causes = dict(rep.causes)
    for i, v in enumerate(out):
        why = unpicklable(v) if codes[i] == PRESENT else None
        if why is None:
            continue
        what = f"its children include a {_culprit(v)}" if kind == "expand" else f"its result is a {type(v).__name__}"
        codes[i], causes[i], out[i] = FAILED, Cause(
            "user_code", f"stage {name} returned a value that cannot be pickled to travel between Ray "
            f"workers: {what} ({why}); return plain data (numbers, text, bytes, lists, dicts, dataclasses, "
            "arrays) and keep locks, files, generators and clients inside the stage", name, "PicklingError"), None
        if counts is not None:
            counts[i] = 0
    return BatchReport(out, codes, causes)


def _culprit(children: list) -> str:
    return next((type(c).__name__ for c in children if unpicklable(c) is not None), "value")


class Placed:
    """An object built where the values are (the Parquet sink's shard writer, on the driver's
    node): each call fetches the values it names from the object store itself, so output
    bytes skip the driver."""

    def __init__(self):
        self._obj = None

    def build(self, factory, args: tuple) -> bool:
        """A fresh object for a run (an actor kept by a session serves run after run)."""
        self._obj = factory(*args)
        return True

    def call(self, values: list, args: tuple, *payloads):
        return self._obj(*args, values=[resolve(v, payloads) for v in values])

    def ping(self) -> bool:
        return True
