"""What runs inside a Ray actor: resolve a bundle's inputs from the payloads Ray fetched,
run each batch, and return small metadata apart from the payloads.

A value the driver holds is a `Ref` to one item of a payload in the object store, an
`Inline` input value, or a tuple / list of those built by the engine (zip, reduce). On the
wire a `Ref` points at a position among the actor call's top-level arguments, so Ray fetches
every payload a bundle needs (from several upstream results) straight into the worker."""

from __future__ import annotations

import time

import ray

from curate.batch import PRESENT, run_batch
from curate.errors import Cause, EngineError


class Ref:
    """Item `i` of batch `b` of a payload (child `c` of it for an expand, else -1). `src` is an
    ObjectRef on the driver and an argument position on the wire."""

    __slots__ = ("src", "b", "i", "c")

    def __init__(self, src, b: int, i: int, c: int = -1):
        self.src, self.b, self.i, self.c = src, b, i, c

    def __reduce__(self):
        return Ref, (self.src, self.b, self.i, self.c)


class Inline:
    """An input value carried by value (a path, a URL): it never went through a stage."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __reduce__(self):
        return Inline, (self.v,)


def resolve(x, payloads):
    """The value a driver-side structure stands for, given the fetched payloads."""
    t = type(x)
    if t is Ref:
        v = payloads[x.src][x.b][x.i]
        return v if x.c < 0 else v[x.c]
    if t is Inline:
        return x.v
    if t is tuple:
        return tuple(resolve(y, payloads) for y in x)
    if t is list:
        return [resolve(y, payloads) for y in x]
    raise EngineError(f"cannot resolve a {t.__name__} value reference")


class PoolWorker:
    """One actor of a pool. A class target is built once, on the first batch, so a model loads
    once per actor and a failing constructor fails batches (with its cause) instead of the actor."""

    def __init__(self, target, init: dict, calls: dict[int, tuple[str, str, object]]):
        self._target, self._init, self._calls = target, init, calls  # call -> (kind, name, fn or method)
        self._obj = None

    def _fn(self, call: int):
        kind, name, what = self._calls[call]
        if self._target is None:
            return what
        if self._obj is None:
            self._obj = self._target(**self._init)
        return getattr(self._obj, what)

    @ray.method(num_returns=2)
    def run(self, call: int, batches: list[list], *payloads):
        """Run each batch of one Call; returns (metadata, payload): per batch either
        ("ok", codes, causes, child counts, start, seconds) or ("err", Cause, start, seconds)."""
        kind, name, _ = self._calls[call]
        metas, outs = [], []
        for inputs in batches:
            t0, wall = time.perf_counter(), time.time()
            try:
                rep = run_batch(self._fn(call), kind, [resolve(x, payloads) for x in inputs], name)
            except BaseException as exc:  # noqa: BLE001 - every failure is an attempt to report
                metas.append(("err", Cause.from_exception(exc, name), wall, time.perf_counter() - t0))
                outs.append(None)
                continue
            counts = None
            if kind == "expand":
                codes = rep.codes
                counts = [len(v) if (codes is None or codes[i] == PRESENT) else 0 for i, v in enumerate(rep.values)]
            metas.append(("ok", rep.codes, rep.causes, counts, wall, time.perf_counter() - t0))
            outs.append(None if kind == "filter" else rep.values)
        return metas, outs

    def ping(self) -> bool:
        return True


class RemoteShardWriter:
    """The Parquet sink's shard writer as an actor on the driver's node: it receives the rows'
    lineage columns and fetches their payloads itself, so output bytes skip the driver."""

    def __init__(self, outputs: dict, row_group_rows: int):
        from curate.io.parquet import ShardWriter

        self._write = ShardWriter(outputs, row_group_rows)

    def write(self, buffer: dict, stage_dir: str, flush: str, *payloads):
        return self._write(buffer, stage_dir, flush, resolve=lambda v: resolve(v, payloads))

    def ping(self) -> bool:
        return True
