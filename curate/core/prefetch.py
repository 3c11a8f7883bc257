"""The prefetch cap: how many grains of a parent that has not reported yet may be queued or in
flight at a nested Call, and what happens to the rest. Part of the pure runtime (no Ray, no
clock); `curate.core.scheduler.Scheduler` builds on it."""

from __future__ import annotations

from curate.core.dataflow import Dataflow
from curate.core.lineage import KEY_BITS, KEY_MASK, Window
from curate.core.outcome import SUPPRESSED
from curate.core.plan import Plan

PROBED = 255  # probe byte of a parent whose grains at a Call have had a report there


class PrefetchCap(Dataflow):
    """Ready queues with a prefetch cap for parents that have not reported yet.

    At a nested Call, a parent that has had no report there yet has at most
    `probe_grains` grains queued or in flight there; its further grains are held aside as they
    become ready. At its first report (a commit, a drop, an item failure or a final failure)
    they go back to the queue head, in order, behind grains put back there before them; if
    that report was a GroupFailure they are SUPPRESSED without ever running. A failed or
    requeued attempt keeps the parent probing. Held grains never leave a worker short or idle: a
    batch the queue cannot fill is topped up with them, oldest parent first; and once the input
    is closed (no more roots to admit: the run's tail), a worker with nothing in flight
    (`idle=True`) takes them when the queue is empty rather than sit idle for a report. Before
    that, admission refills the queue instead. 0 turns the cap off."""

    def __init__(self, plan: Plan, probe_grains: int):
        super().__init__(plan)
        self.probe_grains = probe_grains
        self.windows: dict[int, Window] = {}
        self.input_closed = False  # no more roots will be admitted: the run's tail
        self._call_node = [plan.nodes_by_id[c.node] for c in plan.calls]
        self._capped = [probe_grains > 0 and n.grain_space != 0 for n in self._call_node]
        self.held = [0] * len(plan.calls)  # grains held aside per Call
        self._front = [0] * len(plan.calls)  # grains at each queue's head that were sent or put back there

    def _takes_held(self, idle: bool) -> bool:
        """Whether a worker may take held grains as a batch of their own: it is idle and the
        input is closed (the run's tail: no admission will refill the queue)."""
        return idle and self.input_closed

    def _probed(self, call: int, w: Window, idx: int, probed: list | None) -> list | None:
        """A report of grain `idx` at `call`: if it is its parent's first there, mark the parent
        probed and add it to `probed` (made on first use), whose held grains may then go."""
        par = w.parent[self._call_node[call].grain_space][idx]
        if w.probe[call][par] != PROBED:
            w.probe[call][par] = PROBED
            (probed := probed or []).append((w, par))
        return probed

    def _enqueue(self, call: int, w: Window, idx: int) -> None:
        """Prefetch cap: a parent with no report yet at a nested Call has at most `probe_grains`
        grains queued or in flight there; its further grains are held aside until that report.
        Held grains are not ready: admission and executors see only what may run now."""
        if self._capped[call]:
            par = w.parent[self._call_node[call].grain_space][idx]
            pr = w.probe[call]
            n = pr[par]
            if n != PROBED:
                if n >= self.probe_grains:
                    groups = w.held.get(call)
                    if groups is None:
                        groups = w.held[call] = {}
                    held = groups.get(par)
                    if held is None:
                        groups[par] = [(w.wid << KEY_BITS) | idx]
                    else:
                        held.append((w.wid << KEY_BITS) | idx)
                    self.held[call] += 1
                    return
                pr[par] = n + 1
        self.queues[call].append((w.wid << KEY_BITS) | idx)

    def _top_up(self, call: int, keys: list[int], gens: list[int], cap: int) -> None:
        """The queue ran dry before the batch was full: fill it with held grains, oldest parent
        first, rather than leave the worker short (the batch costs its fixed part anyway). Their
        parents keep probing: the first report of any of their grains releases the rest."""
        want = need = cap - len(keys)
        for w in self.windows.values():
            groups = w.held.get(call)
            if not groups:
                continue
            emptied = []
            for par, held in groups.items():
                take = held[:need]
                del held[:need]
                keys += take
                gens += [0] * len(take)
                need -= len(take)
                if not held:
                    emptied.append(par)
                if not need:
                    break
            for par in emptied:
                del groups[par]
            if not need:
                break
        self.held[call] -= want - need

    def _release_held(self, call: int, probed: list[tuple[Window, int]]) -> None:
        """Parents just probed at `call`: their held grains go back to the queue head in order,
        or, where that first report was a GroupFailure, are SUPPRESSED without running."""
        node, back = self._call_node[call], []
        for w, par in probed:
            groups = w.held.get(call)
            held = groups.pop(par, None) if groups else None
            if held is None:
                continue
            self.held[call] -= len(held)
            bar = w.barriers.get((call, par)) if w.barriers else None
            if bar is None:
                back.extend(held)
                continue
            self.counters[call].suppressed += len(held)
            for key in held:  # held grains never ran, so they have no retry state to forget
                self._resolve_grain(node, w, key & KEY_MASK, SUPPRESSED, bar)
        if back:  # behind the grains sent back before them, ahead of those that arrived later
            q, n = self.queues[call], self._front[call]
            q.rotate(-n)
            q.extendleft(reversed(back))
            q.rotate(n)
            self._front[call] = n + len(back)
