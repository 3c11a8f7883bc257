"""When the scheduler may admit another input window: on demand (the default), or a fixed
number of windows at once. Pure: it reads the scheduler's queues and counters, nothing else."""

from __future__ import annotations

from curate.core.plan import Plan


class Admission:
    """`inflight=None` admits on demand: one more input window while the Calls that turn new
    inputs into work ("heads": root-level Calls with no reduce upstream) each have fewer than
    `ready_batches` batches per replica ready, and some line of "feed" Calls (a map, filter or
    expand Call below the roots, with the feed Calls up- and downstream of it) is short
    everywhere (see `short`), within `max_entities` live entities and `max_bytes` payload bytes
    (as the executor reports them in `BatchReport.nbytes`). The first window is always
    admitted. A whole number keeps the fixed rule: at most that many windows at once, whatever
    the queues and budgets. `replicas` (per pool, shared with the scheduler; an executor may
    overwrite it with the workers it runs) scales the targets."""

    def __init__(self, plan: Plan, inflight: int | None, ready_batches: int, max_entities: int, max_bytes: int,
                 replicas: list[int]):
        self.plan, self.inflight, self.replicas = plan, inflight, replicas
        self.ready_batches, self.max_entities, self.max_bytes = ready_batches, max_entities, max_bytes
        self.heads, self.feed_lines = _admission_calls(plan)

    def allows(self, sched) -> bool:
        """Whether `sched` (a Scheduler with open input) may admit one more window now."""
        if self.inflight is not None:
            return len(sched.windows) < self.inflight
        if not sched.windows:
            return True
        if sched.live_entities() >= self.max_entities or sched.live_bytes >= self.max_bytes:
            return False
        for c in self.heads:
            if len(sched.queues[c]) >= self.target(c):
                return False
        if not self.feed_lines:
            return True
        return any(all(self.short(sched, c) for c in line) for line in self.feed_lines)

    def short(self, sched, call: int) -> bool:
        """`call` needs more inputs: fewer than its target ready, counting grains held by the
        prefetch cap (they come back after one report), or under one batch per replica ready
        whatever is held (the held grains' parents may report only after its workers idle)."""
        ready, spec = len(sched.queues[call]), self.plan.calls[call]
        low = spec.batch_size * self.replicas[spec.pool]
        return ready < low or ready + sched.held[call] < self.ready_batches * low

    def target(self, call: int) -> int:
        """Ready grains that keep `call`'s workers busy: `ready_batches` batches per replica."""
        spec = self.plan.calls[call]
        return self.ready_batches * spec.batch_size * self.replicas[spec.pool]


def _admission_calls(plan: Plan) -> tuple[list[int], list[list[int]]]:
    """The Calls demand-driven admission watches. Heads: root-level Calls with no reduce
    upstream (they turn new inputs into work). Feed lines: per map, filter or expand Call
    below the roots (the pools admission feeds), itself and the feed Calls up- and downstream
    of it. A starved feed Call behind a full one (or ahead of one) waits for that one, so a
    cheap stage next to the bottleneck never pulls in more inputs than the bottleneck needs."""
    by_slot = {n.out_slot: n for n in plan.nodes}
    by_slot.update({n.grain_slot: n for n in plan.nodes})
    up: dict[int, set[int]] = {}  # node -> every node upstream of it
    for n in plan.nodes:  # topological order
        direct = [by_slot[s].id for s in n.in_slots]
        if n.expand >= 0:
            direct.append(n.expand)
        up[n.id] = set(direct).union(*(up[d] for d in direct))
    nodes = plan.nodes_by_id
    after_reduce = {n.id for n in plan.nodes
                    if n.kind == "reduce" or any(nodes[u].kind == "reduce" for u in up[n.id])}
    heads = [n.call for n in plan.nodes if n.call >= 0 and n.grain_space == 0 and n.id not in after_reduce]
    feeds = [n for n in plan.nodes if n.call >= 0 and n.grain_space != 0 and n.kind != "reduce"]
    lines = [sorted(g.call for g in feeds if g is f or g.id in up[f.id] or f.id in up[g.id]) for f in feeds]
    return heads, lines
