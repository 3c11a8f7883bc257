"""How outcomes flow through the graph inside a window: a settled cell notifies its
consumers; a Call whose input is PRESENT queues a grain, one whose input is not passes the
outcome on; a reduce becomes ready when its own children are terminal; zips and broadcasts
resolve at once. A DROPPED cell keeps the value its item had at the filter, and passes it on
with its status (to the outputs' rows). Pure: no Ray, no clock, no threads."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from curate.core.lineage import KEY_BITS, Layout, Window
from curate.core.outcome import DROPPED, FAILED, PENDING, PRESENT, SUPPRESSED
from curate.core.plan import Plan
from curate.errors import EngineError


@dataclass(slots=True)
class CallCounters:
    """What the scheduler saw of one Call."""

    batches: int = 0
    items: int = 0  # grains that entered the stage, retries included
    retries: int = 0  # grains sent back to the queue after a failed attempt
    suppressed: int = 0  # grains never run (or not committed) because a sibling group-failed
    failed: int = 0
    dropped: int = 0


class Dataflow:
    """Cells, ready queues and completion of roots; the Scheduler adds admission, reservation
    and reports on top."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.layout = Layout(plan)
        self.queues = [deque() for _ in plan.calls]
        self.counters = [CallCounters() for _ in plan.calls]
        self.created = [0] * len(plan.spaces)  # entities created per space (progress)
        self.completed = [0] * len(plan.spaces)  # entities whose last cell in their space has settled
        self._last_slot = {max(sp.slots): sp.id for sp in plan.spaces if sp.slots}
        self._finished: list[tuple[Window, int]] = []
        nodes = plan.nodes_by_id
        self._reduces_of = {e: [n for n in plan.nodes if n.kind == "reduce" and n.expand == e]
                            for e in self.layout.expand_space}
        self._bcasts_of = {e: [n for n in plan.nodes if n.kind == "broadcast" and n.expand == e]
                           for e in self.layout.expand_space}
        self._consumers = [[(nodes[i], rel) for i, rel in cs] for cs in plan.consumers]
        # the slot whose settling means a node has read its inputs for good: a Call's grain cell,
        # a zip's or broadcast's output
        self._reads_done = {(n.grain_slot if n.call >= 0 else n.out_slot): n for n in plan.nodes
                            if n.kind != "source" and any(s in self.layout.readers for s in n.in_slots)}

    # ---- state transitions ----------------------------------------------------------------
    def _settle(self, w: Window, slot: int, idx: int, status: int, value=None, cause=None) -> None:
        st = w.status[slot]
        if st[idx] != PENDING:
            raise EngineError(f"slot {slot} of entity {idx} settled twice")
        st[idx] = status
        if status == PRESENT or status == DROPPED:  # a dropped item keeps its value at the filter
            w.value[slot][idx] = value
        if status != PRESENT:
            w.causes[(slot, idx)] = cause
        if slot in self._reads_done:
            self._release_inputs(self._reads_done[slot], w, idx)
        r = w.root[self.layout.slot_space[slot]][idx]
        if slot in self._last_slot:
            self.completed[self._last_slot[slot]] += 1
        w.root_open[r] -= 1
        if w.root_open[r] == 0:
            self._finished.append((w, r))
        self._notify(w, slot, idx)

    def _release_inputs(self, n, w: Window, idx: int) -> None:
        """Node `n` has read its inputs at `idx` for good (a reduce: those of `idx`'s children):
        drop each input value no other consumer still needs."""
        readers = self.layout.readers
        for s in n.in_slots:
            if s not in readers:
                continue
            if n.kind == "reduce":
                c = w.count[n.expand][idx]
                targets = range(w.first[n.expand][idx], w.first[n.expand][idx] + c) if c > 0 else ()
            else:
                targets = (idx,)
            uses, values = w.uses[s], w.value[s]
            for i in targets:
                uses[i] -= 1
                if uses[i] == 0:
                    values[i] = None

    def _resolve_grain(self, node, w: Window, idx: int, status: int, cause, dropped=None) -> None:
        """A grain ends without a result: its cell (and for an expand, its reduces) say why; a
        DROPPED one holds the value `dropped` its item had at the filter (an expand's own cell
        holds no value: its reduces, the parent's next cells, do)."""
        if node.kind != "expand":
            self._settle(w, node.grain_slot, idx, status, dropped, cause)
            return
        self._settle(w, node.grain_slot, idx, status, None, cause)
        for r in self._reduces_of[node.id]:
            self._settle(w, r.out_slot, idx, status, dropped, cause)

    def _notify(self, w: Window, slot: int, idx: int) -> None:
        for n, rel in self._consumers[slot]:
            if rel == "same":
                if n.kind == "zip":
                    pend = w.pending[n.id]
                    pend[idx] -= 1
                    if pend[idx] == 0:
                        self._resolve_zip(n, w, idx)
                else:
                    self._ready(n, w, idx)
            elif rel == "reduce":
                p = w.parent[self.layout.slot_space[slot]][idx]
                rem = w.remaining[n.id]
                rem[p] -= 1
                if rem[p] == 0:
                    self._reduce_ready(n, w, p)
            else:  # bcast: this slot is the parent value of a broadcast
                f, c = w.first[n.expand][idx], w.count[n.expand][idx]
                for child in range(f, f + c):
                    self._resolve_bcast(n, w, child, idx)

    def _ready(self, n, w: Window, idx: int) -> None:
        """The input of a Call node at `idx` is terminal: queue the grain or pass the issue on."""
        src = n.in_slots[0]
        st = w.status[src][idx]
        if st == PRESENT:
            self._enqueue(n.call, w, idx)
        else:
            self._resolve_grain(n, w, idx, st, w.causes[(src, idx)], w.value[src][idx])

    def _commit_expand(self, n, w: Window, p: int, children: list) -> None:
        first = w.add_children(self.layout, n.id, p, children)
        self.created[n.space] += len(children)
        if not self.layout.pending_per_entity[n.space]:  # nothing runs on them: done at birth
            self.completed[n.space] += len(children)
        for r in self._reduces_of[n.id]:
            w.remaining[r.id][p] = len(children)
        self._settle(w, n.grain_slot, p, PRESENT, None)
        out = n.out_slot
        for c in range(first, first + len(children)):
            self._notify(w, out, c)
        for b in self._bcasts_of[n.id]:
            if w.status[b.in_slots[0]][p] != PENDING:
                for c in range(first, first + len(children)):
                    self._resolve_bcast(b, w, c, p)
        if not children:
            for r in self._reduces_of[n.id]:
                self._reduce_ready(r, w, p)

    def _reduce_ready(self, n, w: Window, p: int) -> None:
        """All children of `p` are terminal at the reduce's input: queue it, or suppress it."""
        slot = n.in_slots[0]
        f, c = w.first[n.expand][p], w.count[n.expand][p]
        st = w.status[slot]
        bad = next((i for i in range(f, f + c) if st[i] >= FAILED), None)
        if bad is not None:
            cause = w.causes[(slot, bad)]
            if n.on_child_failure == "drop":
                # A group failure makes which siblings ran depend on timing: the group is void.
                bars = [w.barriers[(k, p)] for k in n.guard_calls if (k, p) in w.barriers]
                cause = bars[0] if bars else None
            if cause is not None:
                self.counters[n.call].suppressed += 1
                self._settle(w, n.out_slot, p, SUPPRESSED, None, cause)
                return
        self._enqueue(n.call, w, p)

    def _enqueue(self, call: int, w: Window, idx: int) -> None:
        """A grain is ready: to the tail of its Call's queue (the Scheduler may hold it aside)."""
        self.queues[call].append((w.wid << KEY_BITS) | idx)

    def _resolve_zip(self, n, w: Window, idx: int) -> None:
        for s in n.in_slots:
            st = w.status[s][idx]
            if st != PRESENT:  # the first input that is not PRESENT: its outcome (and dropped value)
                self._settle(w, n.out_slot, idx, st, w.value[s][idx], w.causes[(s, idx)])
                return
        self._settle(w, n.out_slot, idx, PRESENT, tuple(w.value[s][idx] for s in n.in_slots))

    def _resolve_bcast(self, n, w: Window, child: int, p: int) -> None:
        src = n.in_slots[0]
        st = w.status[src][p]
        self._settle(w, n.out_slot, child, st, w.value[src][p], None if st == PRESENT else w.causes[(src, p)])
