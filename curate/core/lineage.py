"""Entity tables of one input window: compact arrays, no object per entity.

An entity is (space, index) inside a window; a space holds the entities one expand created
(space 0: the roots). Per entity the window keeps its parent index and root index (int32);
per slot (one output cell of a node) a status byte and a value reference. Children of one
parent are allocated contiguously in ordinal order, so `ordinal = index - first[parent]` and a
lineage-ordered walk is a nested range. Ray-free, clock-free."""

from __future__ import annotations

from array import array

from curate.core.outcome import PRESENT

KEY_BITS = 32  # a grain key is (window id << KEY_BITS) | entity index
KEY_MASK = (1 << KEY_BITS) - 1


def entity_id(root_key: str, path: tuple[int, ...] | list[int]) -> str:
    """Stable id of an entity: its root's key plus the ordinal path below the root."""
    return root_key if not path else f"{root_key}#{'/'.join(map(str, path))}"


class Window:
    """The entities, slot cells and bookkeeping of one admitted input window."""

    __slots__ = ("wid", "indices", "keys", "parent", "root", "status", "value", "pending", "first",
                 "count", "remaining", "causes", "barriers", "root_open", "roots_left", "probe", "held",
                 "nbytes", "uses")

    def __init__(self, wid: int, indices: list[int], keys: list, layout: Layout):
        n = len(keys)
        self.wid = wid
        self.indices = indices  # input index of each root (resumed runs skip committed ones)
        self.keys = keys  # root keys, stable ids of the sources
        self.parent = [array("i") for _ in layout.space_slots]
        self.root = [array("i") for _ in layout.space_slots]
        self.status = [bytearray() for _ in layout.slot_space]
        self.value: list[list] = [[] for _ in layout.slot_space]
        self.pending = {z: bytearray() for z in layout.zip_arity}  # zip node -> inputs not yet terminal
        self.first = {e: array("i") for e in layout.expand_space}  # expand -> first child per parent
        self.count = {e: array("i") for e in layout.expand_space}  # expand -> children per parent (-1: none yet)
        self.remaining = {r: array("i") for r in layout.reduce_space}  # reduce -> children not terminal
        self.causes: dict[tuple[int, int], object] = {}  # (slot, index) -> cause or drop reason
        self.barriers: dict[tuple[int, int], object] = {}  # (call, parent index) -> group-failure cause
        # nested Call -> per parent: its grains queued or in flight there before its first report, or PROBED
        self.probe = {c: bytearray() for c in layout.probe_calls}
        self.held: dict[int, dict[int, list[int]]] = {}  # call -> parent -> grain keys held until it is probed
        self.nbytes = 0  # payload bytes its committed grains reported (admission's bytes budget)
        # releasable slot -> per entity: consumers that have not finished reading its value yet
        self.uses = {sl: bytearray() for sl in layout.readers}
        self.root_open = array("i", [layout.pending_per_entity[0]] * n)
        self.roots_left = n
        self._grow(layout, 0, -1, n, range(n))

    def _grow(self, layout: Layout, space: int, parent: int, n: int, roots) -> int:
        first = len(self.parent[space])
        self.parent[space].extend(array("i", [parent]) * n)
        self.root[space].extend(roots)
        for slot in layout.space_slots[space]:
            self.status[slot].extend(bytes(n))
            self.value[slot].extend([None] * n)
            if slot in layout.readers:
                self.uses[slot].extend(bytes([layout.readers[slot]]) * n)
        for z in layout.space_zips[space]:
            self.pending[z].extend(bytes([layout.zip_arity[z]]) * n)
        for e in layout.space_expands[space]:
            self.first[e].extend(array("i", [0]) * n)
            self.count[e].extend(array("i", [-1]) * n)
        for r in layout.space_reduces[space]:
            self.remaining[r].extend(array("i", [0]) * n)
        for c in layout.space_probes[space]:
            self.probe[c].extend(bytes(n))
        return first

    def add_children(self, layout: Layout, expand: int, parent: int, values: list) -> int:
        """Create the ordered children of `parent` made by `expand`; returns the first index."""
        space = layout.expand_space[expand]
        pspace = layout.space_parent[space]
        n = len(values)
        r = self.root[pspace][parent]
        first = self._grow(layout, space, parent, n, array("i", [r]) * n)
        out = layout.expand_out[expand]
        self.status[out][first:first + n] = bytes([PRESENT]) * n
        self.value[out][first:first + n] = values
        self.first[expand][parent] = first
        self.count[expand][parent] = n
        self.root_open[r] += layout.pending_per_entity[space] * n
        return first

    def size(self) -> int:
        """Number of live entities in this window, all spaces together."""
        return sum(len(p) for p in self.parent)


class Layout:
    """Per-space and per-slot facts of a Plan that the entity tables need, as plain lists."""

    def __init__(self, plan):
        nsp = len(plan.spaces)
        self.slot_space = list(plan.slot_space)
        self.space_parent = [s.parent for s in plan.spaces]
        self.space_slots = [list(s.slots) for s in plan.spaces]
        self.zip_arity = {n.id: len(n.in_slots) for n in plan.nodes if n.kind == "zip"}
        self.expand_space = {n.id: n.space for n in plan.nodes if n.kind == "expand"}
        self.expand_out = {n.id: n.out_slot for n in plan.nodes if n.kind == "expand"}
        self.reduce_space = {n.id: n.grain_space for n in plan.nodes if n.kind == "reduce"}
        self.space_zips = [[z for z in self.zip_arity if plan.nodes_by_id[z].space == s] for s in range(nsp)]
        self.space_expands = [[e for e in self.expand_space if plan.nodes_by_id[e].grain_space == s]
                              for s in range(nsp)]
        self.space_reduces = [[r for r, s2 in self.reduce_space.items() if s2 == s] for s in range(nsp)]
        # nested Calls (grains below the roots) keep a probe byte per parent, in the parent's space
        nested = [(n.call, s.parent) for n in plan.nodes if n.call >= 0 and n.grain_space != 0
                  for s in (plan.spaces[n.grain_space],)]
        self.probe_calls = [c for c, _ in nested]
        self.space_probes = [[c for c, ps in nested if ps == s] for s in range(nsp)]
        # A value nobody reads any more is dropped (frames once their clip's caption is made), so a
        # long video does not pin all its pixels until it ends: every slot but the outputs and the
        # parents of broadcasts, with its number of consumers (each reads it once per entity).
        outputs = {plan.output_slot(name) for name in plan.outputs}
        self.readers = {sl: len(cs) for sl, cs in enumerate(plan.consumers)
                        if sl not in outputs and cs and len(cs) < 256 and all(rel != "bcast" for _, rel in cs)}
        born_present = {plan.source_slot} | set(self.expand_out.values())
        self.pending_per_entity = [sum(1 for sl in s.slots if sl not in born_present) for s in plan.spaces]
