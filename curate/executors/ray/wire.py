"""The wire format between the driver and its actors.

A value the driver holds is a `Ref` to one item of a payload in the object store, an `Inline`
input value, or a tuple / list of those built by the engine (zip, reduce). On the wire a `Ref`
points at a position among the actor call's top-level arguments (`to_wire`), so Ray fetches
every payload a bundle needs (from several upstream results) straight into the worker, which
`resolve`s the values from them. An actor that does not know the run answers `UNBOUND`."""

from __future__ import annotations

from ray import cloudpickle

from curate.errors import EngineError

UNBOUND = "unbound"  # a batch's report from an actor that does not know the run: requeue and rebind


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


def to_wire(x, refs: list, pos: dict):
    """Replace each driver-side Ref's ObjectRef by its position among the call's arguments."""
    t = type(x)
    if t is Ref:
        p = pos.get(x.src)
        if p is None:
            p = pos[x.src] = len(refs)
            refs.append(x.src)
        return Ref(p, x.b, x.i, x.c)
    if t is tuple:
        return tuple(to_wire(y, refs, pos) for y in x)
    if t is list:
        return [to_wire(y, refs, pos) for y in x]
    return x


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


def sources(x, out: set | None = None) -> set:
    """Hex ids of the object-store payloads an input value refers to."""
    out = set() if out is None else out
    if type(x) is Ref:
        out.add(x.src.hex())
    elif type(x) in (tuple, list):
        for y in x:
            sources(y, out)
    return out


class _Counter:
    """A file that keeps nothing and counts what is written: pickling into it checks a value
    and measures it without holding its bytes."""

    def __init__(self):
        self.n = 0

    def write(self, b) -> int:
        n = memoryview(b).nbytes  # protocol 5 writes large buffers (numpy arrays) as PickleBuffers
        self.n += n
        return n


def pickled_size(value) -> int | str:
    """The size of `value` pickled (as Ray would send it), or why it does not pickle."""
    sink = _Counter()
    try:
        cloudpickle.CloudPickler(sink, protocol=5).dump(value)
    except Exception as exc:  # noqa: BLE001 - any failure means the value cannot travel
        return f"{type(exc).__name__}: {exc}"
    return sink.n


def unpicklable(value) -> str | None:
    """None if `value` pickles (as Ray would send it), else why not."""
    size = pickled_size(value)
    return size if isinstance(size, str) else None
