"""Random hierarchical pipelines with injected faults, and a plain-Python reference evaluation
of the same semantics (no batching, no scheduling) to compare the engine against."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from recorders import LocalRecorder

import curate as cu

NONE, ITEM, GROUP, POISON, TRANSIENT, DROP = range(6)


@dataclass
class Spec:
    """A pipeline shape and its fault plan. Level 0 is the root domain."""

    depth: int  # levels below the root: 1..3
    fanout: list[int]  # max children per expand, per level
    batch: dict[str, int]  # batch size per call name
    replicas: dict[str, int]
    filters: list[bool]  # a filter at this level
    bcast: list[bool]  # children zip their value with the parent's broadcast value
    drop_mode: list[bool]  # reduce into this level drops failed children
    rates: dict[int, int] = field(default_factory=dict)  # fault kind -> per-mille
    salt: int = 0
    transient_times: int = 1  # a transient item raises on its first N appearances

    def calls(self) -> list[str]:
        names = []
        for lv in range(self.depth + 1):
            names.append(f"m{lv}")
            if self.filters[lv]:
                names.append(f"f{lv}")
            if lv < self.depth:
                names += [f"e{lv}", f"r{lv}", f"j{lv}"]
        return names


def fault(spec: Spec, call: str, item) -> int:
    """Deterministic fault decision for one item at one call (keyed by the item's value)."""
    b = zlib.crc32(f"{spec.salt}|{call}|{item!r}".encode()) % 1000
    kinds = (ITEM, GROUP, POISON, TRANSIENT, DROP) if call[0] == "f" else (ITEM, GROUP, POISON, TRANSIENT)
    acc = 0
    for k in kinds:
        acc += spec.rates.get(k, 0)
        if b < acc:
            return k
    return NONE


def n_children(spec: Spec, level: int, item) -> int:
    return zlib.crc32(f"n|{spec.salt}|{item!r}".encode()) % (spec.fanout[level] + 1)


# ---- the pure functions of each call (on PRESENT inputs, without faults) -------------------
def f_map(level, v):
    if isinstance(v[0], tuple) and len(v) == 2 and isinstance(v[1], tuple):  # zipped with parent
        (path, pay), (_, ppay) = v
        return (path, pay * 7 + ppay % 13 + level + 1)
    path, pay = v
    return (path, pay * 7 + level + 1)


def f_expand(spec, level, v):
    path, pay = v
    return [(path + (i,), pay + i) for i in range(n_children(spec, level, v))]


def f_reduce(children):
    return sum(p for _, p in children) + 1000 * len(children)


def f_join(v):
    red, (path, pay) = v
    return (path, red + pay)


class Faults:
    """Applies the fault plan inside stages; counts appearances for transient items in
    `counter` (a recorder shared by every worker, in-process or on Ray)."""

    def __init__(self, spec: Spec, counter=None):
        self.spec = spec
        self.counter = counter if counter is not None else LocalRecorder()

    def batch(self, call: str, items: list, level: int, fn) -> list:
        spec, out, boom = self.spec, [], None
        for it in items:
            k = fault(spec, call, it)
            if k == POISON:
                boom = boom or f"poison {call} {it!r}"
            elif k == TRANSIENT:
                if self.counter.incr(f"{call} {it!r}") <= spec.transient_times:
                    boom = boom or f"transient {call} {it!r}"
        if boom:
            raise RuntimeError(boom)
        for it in items:
            k = fault(spec, call, it)
            if k == ITEM:
                out.append(cu.ItemFailure(f"item {call} {it!r}"))
            elif k == GROUP:
                out.append(cu.GroupFailure(f"group {call} {it!r}"))
            elif k == DROP:
                out.append((False, f"drop {call} {it!r}"))
            else:
                out.append(fn(it))
        return out


def build(spec: Spec, faults: Faults):
    """The curate pipeline of `spec`; outputs: "root", and per level k>=1 "l{k}" (after the
    map/filter) and "u{k-1}" (the joined value after reducing level k)."""
    doms = [cu.Domain("d0")]
    for lv in range(1, spec.depth + 1):
        doms.append(doms[-1].child(f"d{lv}"))
    pipe = cu.Pipeline(doms[0])

    def st(name, level, fn):
        def call(batch):
            return faults.batch(name, batch, level, fn)
        call.__name__ = name
        return cu.stage(call, batch_size=spec.batch[name], replicas=spec.replicas[name])

    def level(lv, port):
        v = port.map(st(f"m{lv}", lv, lambda x: f_map(lv, x)))
        if spec.filters[lv]:
            v = v.filter(st(f"f{lv}", lv, lambda x: True))
        if lv:
            pipe.output(f"l{lv}", v)
        if lv == spec.depth:
            return v
        ch = v.expand(st(f"e{lv}", lv, lambda x: f_expand(spec, lv, x)), into=doms[lv + 1])
        if spec.bcast[lv + 1]:
            ch = cu.zip(ch, v.broadcast(onto=ch))
        sub = level(lv + 1, ch)
        red = sub.reduce(st(f"r{lv}", lv, f_reduce), on_child_failure="drop" if spec.drop_mode[lv] else "suppress")
        out = cu.zip(red, v).map(st(f"j{lv}", lv, f_join))
        if lv:
            pipe.output(f"u{lv}", out)
        return out

    pipe.output("root", level(0, pipe.source))
    return pipe


# ---- reference ----------------------------------------------------------------------------
@dataclass
class Ref:
    """Reference outcomes: per output, lineage -> (status, value or cause message)."""

    outputs: dict[str, dict[tuple, tuple]] = field(default_factory=dict)
    causes: dict[int, set] = field(default_factory=dict)  # root index -> every failure message under it
    group_failed: set = field(default_factory=set)  # parent lineages whose children had a GroupFailure

    def tainted(self, lineage: tuple) -> bool:
        """Some ancestor-or-self belongs to a group-failed family: its outcome depends on timing."""
        return any(lineage[:k] in self.group_failed for k in range(1, len(lineage)))


def reference(spec: Spec, roots: list) -> Ref:
    ref = Ref()

    def record(name, lin, o):
        ref.outputs.setdefault(name, {})[lin] = o

    def call(name, lin, o, fn, level):
        """Apply one Call to an outcome o = ("present", v) | (status, cause)."""
        if o[0] != "present":
            return o
        it = o[1]
        k = fault(spec, name, it)
        root = lin[0]
        if k in (ITEM, GROUP, POISON, DROP):
            msg = {ITEM: "item", GROUP: "group", POISON: "poison", DROP: "drop"}[k] + f" {name} {it!r}"
            ref.causes.setdefault(root, set()).add(msg)
            if k == GROUP and len(lin) > 1:
                ref.group_failed.add(lin[:-1])
            return ("dropped" if k == DROP else "failed", msg)
        return ("present", fn(it))

    def level(lv, lin, o):
        v = call(f"m{lv}", lin, o, lambda x: f_map(lv, x), lv)
        if spec.filters[lv]:
            v = call(f"f{lv}", lin, v, lambda x: x, lv)
        if lv:
            record(f"l{lv}", lin, v)
        if lv == spec.depth:
            return v
        e = call(f"e{lv}", lin, v, lambda x: f_expand(spec, lv, x), lv)
        if e[0] != "present":
            red = e
        else:
            kids = []
            for i, cv in enumerate(e[1]):
                ci = ("present", (cv, v[1]) if spec.bcast[lv + 1] else cv)
                kids.append(level(lv + 1, lin + (i,), ci))
            bad = [k for k in kids if k[0] in ("failed", "suppressed")]
            if spec.drop_mode[lv]:
                bad = bad if lin in ref.group_failed else []
            if bad:
                red = ("suppressed", bad[0][1])
            else:
                red = call(f"r{lv}", lin, ("present", [k[1] for k in kids if k[0] == "present"]), f_reduce, lv)
        j = red if red[0] != "present" else (v if v[0] != "present" else ("present", (red[1], v[1])))
        out = call(f"j{lv}", lin, j, f_join, lv)
        if lv:
            record(f"u{lv}", lin, out)
        return out

    for i, r in enumerate(roots):
        record("root", (i,), level(0, (i,), ("present", ((i,), r))))
    return ref
