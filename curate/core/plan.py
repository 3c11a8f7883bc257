"""Compiler: a declared Pipeline -> a validated, index-based Plan the scheduler runs.

Every problem is collected and raised together as one PlanError, each with a fix, before
any worker starts."""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any

from curate import defaults
from curate.errors import PlanError, Problem
from curate.pipeline import Pipeline, Pool, Stage
from curate.pipeline import stage as make_stage
from curate.resources import Resources

CALL_KINDS = ("map", "filter", "expand", "reduce")
ON_CHILD_FAILURE = ("suppress", "drop")
CLOSE_CUTOFF = 0.5  # difflib similarity for "did you mean": catches forse -> force_ocr (0.57)


@dataclass
class PlanNode:
    """One node, by integer indices. Slots are per-entity cells of (status, value)."""

    id: int
    kind: str
    where: str
    space: int  # space of out_slot (expand: the children's space)
    grain_space: int  # space whose entities the grains of this node live on
    out_slot: int
    grain_slot: int  # expand: its own cell at the parent; otherwise out_slot
    in_slots: tuple[int, ...] = ()
    call: int = -1
    expand: int = -1  # reduce/broadcast: the expand node that opened the children's lineage
    on_child_failure: str = "suppress"
    guard_calls: tuple[int, ...] = ()  # reduce: calls on the children upstream of its input


@dataclass
class CallSpec:
    """One configured use of a stage: its own FIFO queue, batch size and retries."""

    id: int
    node: int
    kind: str
    name: str
    pool: int
    method: str
    batch_size: int
    retries: int
    timeout_s: float | None = None  # one attempt on one batch; None: no limit


@dataclass
class PoolSpec:
    """A physical worker pool: `replicas` workers, each building `target` once."""

    id: int
    name: str
    target: Any  # function, or class built with init
    init: dict
    replicas: int | None  # None: executors choose (one per GPU for a GPU pool, else 1)
    resources: Resources
    calls: list[int] = field(default_factory=list)

    @property
    def is_class(self) -> bool:
        return isinstance(self.target, type)


@dataclass
class SpaceSpec:
    """Entities created by one expand (or the roots): their domain and parent space."""

    id: int
    domain: str
    parent: int  # -1 for the roots
    expand: int  # node that creates them; -1 for the roots
    depth: int
    slots: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """The validated pipeline: nodes in topological order, spaces, slots, calls, pools, outputs."""

    nodes: list[PlanNode]
    spaces: list[SpaceSpec]
    slot_space: list[int]
    consumers: list[list[tuple[int, str]]]  # per slot: (node, "same" | "reduce" | "bcast")
    calls: list[CallSpec]
    pools: list[PoolSpec]
    outputs: dict[str, int]  # name -> node
    source_slot: int
    output_options: dict[str, dict] = field(default_factory=dict)  # name -> {"schema", "files"}

    def __post_init__(self):
        self.nodes_by_id = {n.id: n for n in self.nodes}

    def output_slot(self, name: str) -> int:
        return self.nodes[self.outputs[name]].out_slot


def compile_plan(pipe: Pipeline) -> Plan:
    """Validate `pipe` and lower it to a Plan, or raise PlanError listing every problem."""
    problems = list(pipe._problems)
    stages = _check_stages(pipe, problems)
    _check_structure(pipe, problems)
    needed = _needed_nodes(pipe, problems)
    if problems:
        raise PlanError(problems)
    return _lower(pipe, stages, needed)


def _describe(pipe: Pipeline, i: int) -> str:
    return f"{pipe.nodes[i].where}: {_what(pipe, i)}"


def _what(pipe: Pipeline, i: int) -> str:
    """The kind and stage of node `i` ("map read_titles")."""
    d = pipe.nodes[i]
    st = d.stage
    if not isinstance(st, Stage) and callable(st):
        st = make_stage(st)
    return f"{d.kind} {st.label}" if isinstance(st, Stage) else d.kind


def _check_stages(pipe: Pipeline, problems: list[str]) -> dict[int, Stage]:
    stages: dict[int, Stage] = {}
    seen_pools: set[int] = set()
    for i, d in enumerate(pipe.nodes):
        if d.kind not in CALL_KINDS:
            continue
        st = d.stage
        if not isinstance(st, Stage):
            if not callable(st):
                problems.append(f"{d.where}: {d.kind} got {st!r}, which is not callable; pass a "
                                "function or class taking a batch (list), or cu.stage(fn, ...)")
                continue
            st = make_stage(st)
        stages[i] = st
        problems.extend(f"{d.where}: {d.kind} {st.label}: {p}" for p in _stage_problems(st))
        if st.pool is not None and id(st.pool) not in seen_pools:
            seen_pools.add(id(st.pool))
            problems.extend(f"{d.where}: Pool {st.label} (declared at {st.pool.where}): {p}"
                            for p in _pool_problems(st.pool) + init_problems(st.pool.cls, st.pool.init))
    return stages


def _stage_problems(st: Stage) -> list[str]:
    out = []
    target = st.fn
    if isinstance(target, type):
        # __call__ on the class or its bases, not its metaclass (every class has type.__call__)
        found = (any(callable(vars(k).get("__call__")) for k in target.__mro__[:-1]) if st.method == "__call__"
                 else callable(getattr(target, st.method, None)))
        if not found:
            out.append(f"class {target.__name__} has no method {st.method!r}; define it as "
                       f"`def {st.method}(self, batch: list) -> list`")
    elif not callable(target):
        out.append(f"{target!r} is not callable; pass a function or a class")
    if not isinstance(st.init, dict):
        out.append("init must be a dict of keyword arguments for the class")
    elif st.init and not isinstance(target, type):
        out.append("init= is only for classes (built once per worker); a function takes no init")
    elif st.pool is None:
        out += init_problems(target, st.init)
    out += _number_problems(st, (("batch_size", 1), ("retries", 0)))
    t = st.timeout_s
    if t is not None and (not isinstance(t, (int, float)) or isinstance(t, bool) or not t > 0):
        out.append(f"timeout_s={t!r}; it must be a number of seconds > 0, or None for no limit")
    if st.pool is None:
        out += _pool_problems(st)
    return out


def init_problems(target: Any, init: Any) -> list[str]:
    """`init` checked against the constructor of class `target`: every key it does not take (with
    the closest one it does), and every argument it needs that init lacks. A constructor taking
    **kwargs takes any key; one with no signature to read (a C type) is not checked."""
    if not isinstance(target, type) or not isinstance(init, dict):
        return []
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    out = []
    for key in init:
        close = difflib.get_close_matches(str(key), named, n=1, cutoff=CLOSE_CUTOFF)
        if key not in named:
            hint = f"did you mean {close[0]!r}?" if close else f"it takes {', '.join(named) or 'none'}"
            out.append(f"init key {key!r} is not an argument of {target.__name__}(); {hint}")
    lacking = [n for n in named if params[n].default is params[n].empty and n not in init]
    if lacking:
        out.append(f"init lacks {', '.join(map(repr, lacking))}, which {target.__name__}() needs; add it to init")
    return out


def _pool_problems(src: Pool | Stage) -> list[str]:
    """Settings of the physical workers: on the Pool, or on a Stage that is its own pool."""
    out = [] if src.replicas is None else _number_problems(src, (("replicas", 1),))
    res = src.resources
    if not isinstance(res, Resources):
        return out + [f"resources={res!r}; pass a cu.Resources or its fields as keywords (num_cpus=..., num_gpus=...)"]
    return out + res.problems()


def _number_problems(src, fields) -> list[str]:
    out = []
    for field_name, minimum in fields:
        v = getattr(src, field_name)
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            out.append(f"{field_name}={v!r}; it must be an integer >= {minimum}")
    return out


def _check_structure(pipe: Pipeline, problems: list[str]) -> None:
    ports = pipe.ports
    for i, d in enumerate(pipe.nodes):
        here = _describe(pipe, i)
        if d.kind == "expand":
            src = ports[d.inputs[0]].domain
            if d.into is None or d.into.parent is not src:
                into = d.into.path if d.into is not None else None
                problems.append(f"{here}: expand from {src.path!r} into {into!r}, which is not a child "
                                f"of {src.path!r}; declare it as {src.name}.child(...) or expand a port of its parent")
        elif d.kind == "reduce":
            p = ports[d.inputs[0]]
            if not p.lineage:
                problems.append(Problem(here, f"reduce of a {p.domain.path!r} port that no expand produced "
                                        "(nothing to reduce into)", "reduce a port that comes from .expand(...)",
                                        "reduce a step that comes from an expand step"))
            if d.on_child_failure not in ON_CHILD_FAILURE:
                problems.append(f"{here}: on_child_failure={d.on_child_failure!r}; use one of {ON_CHILD_FAILURE}")
        elif d.kind == "zip":
            first = ports[d.inputs[0]]
            for j in d.inputs[1:]:
                p = ports[j]
                if p.domain is not first.domain:
                    problems.append(f"{here}: zip of a {first.domain.path!r} port with a {p.domain.path!r} "
                                    "port; zip only ports of one domain (use broadcast to bring a parent down)")
                elif p.lineage != first.lineage:
                    problems.append(f"{here}: zip of {first.domain.path!r} ports from different expands "
                                    "(different lineages); zip ports derived from the same expand")
        elif d.kind == "broadcast" and d.onto is not None and d.onto < len(ports):
            parent, onto = ports[d.inputs[0]], ports[d.onto]
            if not onto.lineage or onto.lineage[:-1] != parent.lineage:
                problems.append(f"{here}: broadcast of a {parent.domain.path!r} port onto a "
                                f"{onto.domain.path!r} port that is not its children's; broadcast onto "
                                "a port derived from an expand of this port's entities")
    if not pipe.outputs:
        problems.append(Problem("", "the pipeline has no outputs", "name at least one with pipe.output(name, port)",
                                "name at least one with outputs: {name: step_id}"))


def _needed_nodes(pipe: Pipeline, problems: list[str]) -> set[int]:
    """Nodes whose values reach an output, plus the expands that open their lineages."""
    needed: set[int] = set()
    stack = list(pipe.outputs.values())
    while stack:
        i = stack.pop()
        if i in needed:
            continue
        needed.add(i)
        stack.extend(pipe.nodes[i].inputs)
        stack.extend(pipe.ports[i].lineage)
    for i, d in enumerate(pipe.nodes):
        if i not in needed and d.kind != "source":
            problems.append(Problem(d.where, f"{_what(pipe, i)} reaches no output",
                                    "name its result with pipe.output(...) or remove it",
                                    "name its result with an entry under outputs: or remove it"))
    return needed


def _lower(pipe: Pipeline, stages: dict[int, Stage], needed: set[int]) -> Plan:
    spaces = [SpaceSpec(0, pipe.root.name, -1, -1, 0)]
    space_of_lineage: dict[tuple[int, ...], int] = {(): 0}
    slot_space: list[int] = []
    nodes: list[PlanNode] = []
    node_of: dict[int, PlanNode] = {}

    def new_slot(space: int) -> int:
        slot_space.append(space)
        spaces[space].slots.append(len(slot_space) - 1)
        return len(slot_space) - 1

    for i, d in enumerate(pipe.nodes):
        if i not in needed:
            continue
        port = pipe.ports[i]
        if d.kind == "expand":
            parent_space = space_of_lineage[pipe.ports[d.inputs[0]].lineage]
            sp = SpaceSpec(len(spaces), d.into.name, parent_space, i, spaces[parent_space].depth + 1)
            spaces.append(sp)
            space_of_lineage[port.lineage] = sp.id
            grain = new_slot(parent_space)
            out = new_slot(sp.id)
            n = PlanNode(i, "expand", d.where, sp.id, parent_space, out, grain)
        else:
            space = space_of_lineage[port.lineage]
            out = new_slot(space)
            n = PlanNode(i, d.kind, d.where, space, space, out, out, on_child_failure=d.on_child_failure)
            if d.kind in ("reduce", "broadcast"):
                lin = pipe.ports[d.inputs[0] if d.kind == "reduce" else d.onto].lineage
                n.expand = lin[-1]
        n.in_slots = tuple(node_of[j].out_slot for j in d.inputs)
        node_of[i] = n
        nodes.append(n)

    calls, pools = _lower_calls(pipe, stages, nodes)
    consumers: list[list[tuple[int, str]]] = [[] for _ in slot_space]
    for n in nodes:
        rel = {"reduce": "reduce", "broadcast": "bcast"}.get(n.kind, "same")
        for s in n.in_slots:
            consumers[s].append((n.id, rel))
        if n.kind == "reduce":
            n.guard_calls = _upstream_calls(nodes, n.in_slots[0], slot_space[n.in_slots[0]])
    return Plan(nodes, spaces, slot_space, consumers, calls, pools,
                dict(pipe.outputs), node_of[0].out_slot, dict(pipe.output_options))


def _upstream_calls(nodes: list[PlanNode], slot: int, space: int) -> tuple[int, ...]:
    """Calls whose grains live in `space` and feed `slot` (through values, or through the
    expand a reduce closes): their group failures make a drop-mode reduce timing-dependent."""
    by_slot = {n.out_slot: n for n in nodes}
    by_id = {n.id: n for n in nodes}
    out, stack, seen = set(), [by_slot[slot]], set()
    while stack:
        n = stack.pop()
        if n.id in seen or n.grain_space != space:
            continue
        seen.add(n.id)
        if n.call >= 0:
            out.add(n.call)
        stack.extend(by_slot[s] for s in n.in_slots)
        if n.kind == "reduce":
            stack.append(by_id[n.expand])
    return tuple(sorted(out))


def _lower_calls(pipe: Pipeline, stages: dict[int, Stage], nodes: list[PlanNode]):
    calls: list[CallSpec] = []
    pools: list[PoolSpec] = []
    pool_of: dict[int, int] = {}
    names: dict[str, int] = {}  # pool names
    call_names: dict[str, int] = {}
    for n in nodes:
        if n.kind not in CALL_KINDS:
            continue
        st = stages[n.id]
        owner: Pool | Stage = st.pool or st
        if id(owner) not in pool_of:
            pool_of[id(owner)] = len(pools)
            label = owner.name or getattr(owner.cls if isinstance(owner, Pool) else owner.fn, "__name__", "pool")
            label = _unique(label, names)
            replicas = owner.replicas
            if replicas is None and not owner.resources.uses_gpu:
                replicas = defaults.DEFAULT_REPLICAS  # a GPU pool's count waits for the cluster's GPUs
            pools.append(PoolSpec(len(pools), label, st.fn, dict(st.init), replicas, owner.resources))
        pool = pool_of[id(owner)]
        name = _unique(st.label, call_names)
        n.call = len(calls)
        calls.append(CallSpec(n.call, n.id, n.kind, name, pool, st.method, st.batch_size, st.retries,
                              st.timeout_s))
        pools[pool].calls.append(n.call)
    return calls, pools


def _unique(name: str, taken: dict[str, int]) -> str:
    """`name`, or `name#2`, `name#3`... if it was taken before."""
    taken[name] = taken.get(name, 0) + 1
    return name if taken[name] == 1 else f"{name}#{taken[name]}"
