"""When a run starts each replica of its worker pools (`Ramp`)."""

from __future__ import annotations

import math

from curate.executors.ray.replica import ActorPool, ActorReplica

START_GUESS_S = 0.5  # what starting a worker costs, until this run has measured one


class Ramp:
    """When a run starts each replica. Every pool's first replica starts with the run, and a GPU
    pool's every replica (a model load is long, and the GPUs are what the run is for). A CPU pool
    grows one replica at a time, while its replicas that answered are all running calls with work
    still waiting, once either the work waiting (at its measured seconds per batch) would keep
    each of them busy for longer than a worker takes to start (measured in this run), or they
    have been busy so for twice that long: a pool that one worker keeps up with (a near-free
    stage) never pays for its other workers, whose starts would take CPU from the run's own
    work on a small machine. Warm actors (a session's) count as started."""

    def __init__(self, pools: list[ActorPool]):
        self.wanted = [len(g.workers) if g.resources.uses_gpu else max(1, sum(r.handle is not None for r in g.workers))
                       for g in pools]
        self.since: dict[int, float] = {}  # pool index -> since when its workers are all busy
        self.launched: dict[ActorReplica, float] = {}  # replica -> when this run started its actor
        self.start_s = START_GUESS_S  # mean launch-to-answer of the actors this run started
        self._starts = 0

    def first(self, pools: list[ActorPool]) -> list[ActorReplica]:
        """The replicas to start with the run, in start order: every pool's first replica,
        upstream first, then the GPU pools' other replicas."""
        return sorted((r for g in pools for r in g.workers[:self.wanted[g.index]] if r.handle is None),
                      key=lambda r: (r.index, r.pool.index))

    def can_grow(self, g: ActorPool) -> bool:
        return self.wanted[g.index] < len(g.workers)

    def launch(self, r: ActorReplica, now: float) -> None:
        self.launched[r] = now

    def answered(self, r: ActorReplica, now: float) -> None:
        t0 = self.launched.pop(r, None)
        if t0 is not None:
            self._starts += 1
            self.start_s = now - t0 if self._starts == 1 else self.start_s + (now - t0 - self.start_s) / self._starts

    def grow(self, g: ActorPool, sched, seconds: dict[int, float], now: float) -> ActorReplica | None:
        """The replica of `g` to start now, if any. `seconds`: the measured seconds per batch
        of each Call."""
        i = g.index
        if not self.can_grow(g):
            return None
        # each replica that takes work (not starting or being replaced): running a call?
        up = [bool(r.flight) for r in g.workers[:self.wanted[i]] if r.answers()]
        backlog_s = 0.0 if not all(up) or not up else sum(
            math.ceil(n / sched.plan.calls[c].batch_size) * seconds.get(c, math.inf)
            for c in g.calls if (n := sched.ready(c)))  # inf: waiting, not measured yet
        if not backlog_s:
            self.since.pop(i, None)
            return None
        busy = now - self.since.setdefault(i, now)
        if busy < 2 * self.start_s and (backlog_s == math.inf or backlog_s / len(up) < self.start_s):
            return None
        self.since.pop(i, None)
        self.wanted[i] += 1
        return g.workers[self.wanted[i] - 1]
