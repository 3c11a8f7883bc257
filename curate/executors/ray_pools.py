"""The Ray executor's worker pools: which actors a plan needs (`make_groups`), how many (one per
GPU by default for a GPU pool), and starting them, or taking them over warm from an earlier run
of the same session (`WarmPools`): a pool whose class, init and resources are unchanged keeps its
actors, and so its loaded model."""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass, field

import ray

from curate import defaults
from curate.errors import CurateError
from curate.executors.stats import WorkerStats
from curate.executors.ray_cluster import Demand, check, node_resources
from curate.executors.ray_worker import PoolWorker
from curate.fingerprint import warm_key
from curate.resources import Resources


@dataclass
class Group:
    """One physical pool of actors and the Calls it serves."""

    key: str  # same key: same class, init and resources, so warm actors can serve it
    name: str
    target: object  # the class, or None for function stages
    init: dict
    resources: Resources
    replicas: int | None
    pools: list[int] = field(default_factory=list)  # the plan's pools it serves
    calls: list[int] = field(default_factory=list)  # downstream-first
    fns: dict[int, tuple] = field(default_factory=dict)  # call -> (kind, name, fn or method)
    actors: list = field(default_factory=list)
    flight: list[deque] = field(default_factory=list)  # per actor: its calls, oldest (running) first
    since: list[float] = field(default_factory=list)  # per actor: when its oldest call started
    stats: list[WorkerStats] = field(default_factory=list)
    remote: object = None  # the Ray actor class with this group's options: `remote.remote(...)` starts one
    index: int = 0  # its place among the run's groups (core slots know an actor as (index, replica))

    @property
    def label(self) -> str:
        return f"{self.name} ({', '.join(f[1] for f in self.fns.values())})"


def make_groups(driver) -> list[Group]:
    """One group per class pool; function stages with one resource request share a group."""
    plan, groups, shared = driver.plan, [], {}
    for p in plan.pools:
        if p.is_class:
            key = "class:" + warm_key(p)
            g = Group(key, p.name, p.target, dict(p.init), p.resources, p.replicas)
            groups.append(g)
        else:  # stateless functions with one resource request share light workers
            key = "functions:" + _digest(p.resources.signature())
            g = shared.get(key)
            if g is None:
                g = shared[key] = Group(key, "functions", None, {}, p.resources, p.replicas)
                groups.append(g)
            elif p.replicas is not None:
                g.replicas = max(g.replicas or 0, p.replicas)
        g.pools.append(p.id)
        for c in p.calls:
            spec = plan.calls[c]
            g.calls.append(c)
            g.fns[c] = (spec.kind, spec.name, spec.method if p.is_class else p.target)
    for i, g in enumerate(groups):
        g.index = i
        g.calls = driver.downstream_first(g.calls)
        if g.target is None and sum(1 for x in groups if x.target is None) > 1:
            g.name = f"functions#{i}"
    return groups


def resolve_replicas(groups: list[Group], nodes: list[dict[str, float]]) -> None:
    """Groups without a replica count get one: GPU groups share the GPUs left by the others
    (one worker per `num_gpus` of them: one per GPU for num_gpus=1), the rest DEFAULT_REPLICAS."""
    gpus = sum(n.get("GPU", 0.0) for n in nodes)
    taken = sum(g.replicas * g.resources.num_gpus for g in groups if g.replicas is not None)
    auto_gpu = [g for g in groups if g.replicas is None and g.resources.uses_gpu]
    for g in groups:
        if g.replicas is None and not g.resources.uses_gpu:
            g.replicas = defaults.DEFAULT_REPLICAS
    share = max(0.0, gpus - taken) / len(auto_gpu) if auto_gpu else 0.0
    for g in auto_gpu:
        g.replicas = max(1, math.floor(share / g.resources.num_gpus + 1e-9))


START_GUESS_S = 0.5  # what starting a worker costs, until this run has measured one


class Ramp:
    """When a run starts each replica. Every pool's first replica starts with the run, and a GPU
    pool's every replica (a model load is long, and the GPUs are what the run is for). A CPU pool
    grows one replica at a time, while its replicas that answered are all running calls with work
    still waiting, once either the work waiting (at its measured seconds per batch) would keep
    each of them busy for longer than a worker takes to start (measured in this run), or they
    have been busy so for twice that long: a pool that one worker keeps up with (a near-free
    stage) never pays for its other workers. Starting one costs about 0.5 CPU-seconds, taken
    from the run's own work on a small machine. Warm actors (a session's) count as started."""

    def __init__(self, groups: list[Group]):
        self.wanted = [len(g.actors) if g.resources.uses_gpu else max(1, sum(a is not None for a in g.actors))
                       for g in groups]
        self.since: dict[int, float] = {}  # group index -> since when its workers are all busy
        self.launched: dict[tuple[int, int], float] = {}
        self.start_s = START_GUESS_S  # mean launch-to-answer of the actors this run started
        self._starts = 0

    def first(self, groups: list[Group]) -> list[tuple[int, int]]:
        """(replica, group index) of the actors to start with the run, in start order: every
        pool's first replica, upstream first, then the GPU pools' other replicas."""
        return sorted((a, g.index) for g in groups for a in range(self.wanted[g.index]) if g.actors[a] is None)

    def can_grow(self, g: Group) -> bool:
        return self.wanted[g.index] < len(g.actors)

    def launch(self, g: Group, a: int, now: float) -> None:
        self.launched[g.index, a] = now

    def answered(self, g: Group, a: int, now: float) -> None:
        t0 = self.launched.pop((g.index, a), None)
        if t0 is not None:
            self._starts += 1
            self.start_s = now - t0 if self._starts == 1 else self.start_s + (now - t0 - self.start_s) / self._starts

    def grow(self, g: Group, sched, answers, seconds: dict[int, float], now: float) -> int | None:
        """The replica of `g` to start now, if any. `answers(a)`: replica `a` takes work (not
        starting or being replaced); `seconds`: the measured seconds per batch of each Call."""
        i = g.index
        if not self.can_grow(g):
            return None
        up = [bool(g.flight[a]) for a in range(self.wanted[i]) if answers(a)]  # each: running a call
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
        return self.wanted[i] - 1


WARM_WAIT_S = 600.0  # how long a session's run waits, as it ends, for its replicas to start and load


class WarmPools:
    """Actors by group key, kept between the runs of a session (or only for one run)."""

    def __init__(self):
        self.actors: dict[str, list] = {}

    def start(self, groups: list[Group]) -> None:
        """Check that every group fits on the cluster, then give each group its warm actors of
        the same key; the slots left are None, for the executor to start (`Group.remote`) in
        the order it needs them. Warm actors no group uses are released first, so their
        resources are free for the new ones."""
        nodes = node_resources()
        resolve_replicas(groups, nodes)
        keys = {g.key for g in groups}
        for key in [k for k in self.actors if k not in keys]:
            self.release(key)
        check([Demand(g.label, g.replicas, g.resources.demand()) for g in groups], nodes)
        check_picklable(groups)
        remote = ray.remote(PoolWorker)
        for g in groups:
            warm = self.actors.pop(g.key, [])
            for a in warm[g.replicas:]:
                ray.kill(a)
            g.remote = remote.options(max_restarts=-1, max_task_retries=0, **g.resources.ray_options())
            g.actors = warm[:g.replicas] + [None] * (g.replicas - len(warm))
            g.flight = [deque() for _ in range(g.replicas)]
            g.since = [0.0] * g.replicas
            g.stats = [WorkerStats() for _ in range(g.replicas)]

    def keep(self, groups: list[Group]) -> None:
        """After a run that ended cleanly (no call in flight): its actors stay warm. A run may
        end before all its replicas started (a small input): those start now, and every actor
        builds its stage, so the session's next run starts with whole pools, models loaded. It
        waits up to `WARM_WAIT_S` for them (an actor still loading then stays, and the next run
        waits for it); an actor that cannot start is left out (the next run starts a fresh one)."""
        for g in groups:
            g.actors = [a if a is not None else g.remote.remote(g.target, g.init) for a in g.actors]
        ready = {a: a.prepare.remote() for g in groups for a in g.actors}
        done, _ = ray.wait(list(ready.values()), num_returns=len(ready), timeout=WARM_WAIT_S)
        done = set(done)
        for g in groups:
            self.actors[g.key] = []
            for a in g.actors:
                if ready[a] in done:
                    try:
                        ray.get(ready[a])
                    except ray.exceptions.RayError:
                        ray.kill(a)
                        continue
                self.actors[g.key].append(a)

    def release(self, key: str | None = None) -> None:
        """Kill the warm actors of one key, or of every key."""
        for k in [key] if key is not None else list(self.actors):
            for a in self.actors.pop(k, []):
                ray.kill(a)


def kill(groups: list[Group]) -> None:
    for g in groups:
        for a in g.actors:
            if a is not None:
                ray.kill(a)
        g.actors = [None] * len(g.actors)


def check_picklable(groups: list[Group]) -> None:
    """Stages travel to workers by pickle: name every one that cannot, before any actor starts."""
    from ray import cloudpickle

    problems = []
    for g in groups:
        parts = [(g.name, g.target), (f"{g.name} init", g.init)] if g.target is not None else []
        parts += [(name, fn) for _, name, fn in g.fns.values() if g.target is None]
        for name, obj in parts:
            try:
                cloudpickle.dumps(obj)
            except Exception as exc:  # noqa: BLE001 - any pickling failure is the user's to fix
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
    if problems:
        raise CurateError("stages must be picklable to run on Ray workers, and these are not: "
                          + "; ".join(problems) + ". Define them at module level and create locks, "
                          "clients and models inside the stage (a class builds them once per worker)")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:16]


MEMORY_WAIT_S = 5.0  # the longest a clean run's end waits for its actors' memory readings


def measure_memory(groups: list[Group], up) -> None:
    """Each actor's peak resident memory into its WorkerStats (skipped for an actor not `up(g,
    i)` yet, still starting, and for one that does not answer in time: a reading is a report,
    never a reason to hold the run)."""
    asked = {a.memory.remote(): (g, i) for g in groups for i, a in enumerate(g.actors)
             if a is not None and up(g, i)}
    ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=MEMORY_WAIT_S)
    for ref in ready:
        g, i = asked[ref]
        try:
            g.stats[i].peak_rss, g.stats[i].peak_private = ray.get(ref)
        except ray.exceptions.RayError:
            pass
