"""Ray executor: actor pools driving the same pure Scheduler as the local executor.

Class stages and Pools get `replicas` actors each (the class is built once per actor);
function stages with the same resource request share one light pool. Payloads stay in the
object store: the driver gets per-item outcome codes and child counts, keeps `Ref`s, and a
downstream batch names the upstream payloads it needs as top-level arguments, so Ray moves
them from worker to worker. Each actor holds up to `pipeline_depth` calls so dispatch hides
behind compute, and a call carries several batches of a cheap Call (about BUNDLE_TARGET_S of
work) so cheap stages do not pay one round trip per batch."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field

import ray

from curate.core.outcome import BatchReport
from curate.errors import Cause, CurateError
from curate.executors import PoolReport, WorkerStats, timeout_cause
from curate.executors.ray_cluster import Demand, check, connect, node_resources
from curate.executors.ray_worker import (
    Inline,
    Placed,
    PoolWorker,
    Ref,
    resolve,
    unpicklable,
)

DEFAULT_PIPELINE_DEPTH = 2  # calls in flight per actor: one computes while the next is shipped
BUNDLE_TARGET_S = 0.02  # work per Ray call for cheap Calls: amortises dispatch, keeps latency low
MAX_BUNDLE = 64  # batches per Ray call, whatever their cost
COST_SMOOTHING = 0.3  # weight of the newest batch in a Call's running cost estimate


@dataclass
class _Group:
    """One physical pool of actors and the Calls it serves."""

    name: str
    target: object  # the class, or None for function stages
    init: dict
    calls: list[int]  # downstream-first
    replicas: int
    options: dict
    fns: dict[int, tuple] = field(default_factory=dict)  # call -> (kind, name, fn or method)
    actors: list = field(default_factory=list)
    flight: list[deque] = field(default_factory=list)  # per actor: its calls, oldest (running) first
    since: list[float] = field(default_factory=list)  # per actor: when its oldest call started
    stats: list[WorkerStats] = field(default_factory=list)


@dataclass
class _Call:
    """One Ray call in flight (`call` -1: a ping to an actor being replaced)."""

    group: _Group
    actor: int
    call: int
    batches: list
    payload: object
    pings: int = 0  # a ping: how many pings the replaced actor has failed to answer so far


MAX_PINGS = 20  # a replaced actor that fails this many pings in a row cannot come back


class RayStore:
    """Values as references into Ray's object store (see `curate.driver.ValueStore`)."""

    def __init__(self):
        self._placed: list = []

    def wrap_inputs(self, values: list) -> tuple[list, dict[int, Cause]]:
        out, failed = [], {}
        for i, v in enumerate(values):
            why = unpicklable(v)
            if why is None:
                out.append(Inline(v))
            else:
                out.append(None)
                failed[i] = Cause("input", f"the input is a {type(v).__name__}, which cannot be pickled to "
                                  f"travel to Ray workers ({why}); pass inputs that pickle (paths, text, "
                                  "numbers, dicts of those) and open resources inside the stage",
                                  "", "PicklingError")
        return out, failed

    def fetch(self, values: list) -> list:
        """Output values: fetch each payload once, then pick the items."""
        refs, pos = [], {}
        wire = [_to_wire(v, refs, pos) for v in values]
        payloads = ray.get(refs) if refs else []
        return [resolve(w, payloads) for w in wire]

    def place(self, factory, *args):
        """`factory(*args)` in an actor on this node (same filesystem as the driver); the returned
        callable ships value references, which the actor fetches itself."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        actor = ray.remote(Placed).options(num_cpus=0, scheduling_strategy=here).remote(factory, args)
        self._placed.append(actor)

        def call(values: list, *call_args):
            refs, pos = [], {}
            wire = [_to_wire(v, refs, pos) for v in values]
            try:
                return ray.get(actor.call.remote(wire, call_args, *refs))
            except ray.exceptions.RayTaskError as exc:  # curate's own error in the actor: as is
                if isinstance(exc.cause, CurateError):
                    raise exc.cause from None
                raise

        return call

    def close(self) -> None:
        for a in self._placed:
            ray.kill(a)
        self._placed = []


class RayExecutor:
    """Runs a plan on Ray: `address=` (or RAY_ADDRESS) joins a cluster, else a local Ray starts
    on demand with `ray_init` options; Ray stays up for later runs in this process."""

    def __init__(self, address: str | None = None, ray_init: dict | None = None,
                 pipeline_depth: int = DEFAULT_PIPELINE_DEPTH):
        if pipeline_depth < 1:
            raise CurateError(f"pipeline_depth={pipeline_depth!r}; use a whole number >= 1 (calls in flight per actor)")
        self.address, self.ray_init, self.depth = address, ray_init, pipeline_depth
        self.groups: list[_Group] = []
        self._flight: dict = {}
        self._cost: dict[int, float] = {}

    # ---- set-up ---------------------------------------------------------------------------
    def _make_groups(self, driver) -> list[_Group]:
        plan, groups, shared = driver.plan, [], {}
        for p in plan.pools:
            opts = {"num_cpus": p.num_cpus, "num_gpus": p.num_gpus, "resources": dict(p.resources)}
            if p.runtime_env:
                opts["runtime_env"] = p.runtime_env
            if p.is_class:
                g = _Group(p.name, p.target, dict(p.init), [], p.replicas, opts)
                groups.append(g)
            else:  # stateless functions with one resource request share light workers
                sig = repr(sorted(opts.items()))
                g = shared.get(sig)
                if g is None:
                    g = shared[sig] = _Group("functions", None, {}, [], 0, opts)
                    groups.append(g)
                g.replicas = max(g.replicas, p.replicas)
            for c in p.calls:
                spec = plan.calls[c]
                g.calls.append(c)
                g.fns[c] = (spec.kind, spec.name, spec.method if p.is_class else p.target)
        for i, g in enumerate(groups):
            g.calls = driver.downstream_first(g.calls)
            if g.target is None and sum(1 for x in groups if x.target is None) > 1:
                g.name = f"functions#{i}"
        return groups

    def _start(self, groups: list[_Group]) -> None:
        demands = []
        for g in groups:
            res = {"CPU": float(g.options["num_cpus"]), "GPU": float(g.options["num_gpus"]),
                   **{k: float(v) for k, v in g.options["resources"].items()}}
            demands.append(Demand(f"{g.name} ({', '.join(f[1] for f in g.fns.values())})", g.replicas,
                                  {k: v for k, v in res.items() if v}))
        check(demands, node_resources())
        _check_picklable(groups)
        remote = ray.remote(PoolWorker)
        for g in groups:
            opts = {k: v for k, v in g.options.items() if v or k == "num_cpus"}
            cls = remote.options(max_restarts=-1, max_task_retries=0, **opts)
            g.actors = [cls.remote(g.target, g.init, g.fns) for _ in range(g.replicas)]
            g.flight = [deque() for _ in range(g.replicas)]
            g.since = [0.0] * g.replicas
            g.stats = [WorkerStats() for _ in range(g.replicas)]

    # ---- the loop -------------------------------------------------------------------------
    def execute(self, driver) -> list[PoolReport]:
        connect(self.address, self.ray_init)
        self._driver, self._flight, self._cost = driver, {}, {}
        self.groups = groups = self._make_groups(driver)
        self._start(groups)
        store = RayStore()
        try:
            # Wait until every actor is up, so the run's start-up and execution phases are told
            # apart (RunMetrics.startup_s); the first batches could not start any earlier anyway.
            _wait_started(groups)
            driver.started_workers(store)
            while True:
                driver.step()
                for g in groups:
                    self._dispatch(driver, g)
                if not self._flight:
                    if driver.idle_done():
                        break
                    continue
                self._wait(driver)
        finally:
            for g in groups:
                for a in g.actors:
                    ray.kill(a)
            store.close()
        return [PoolReport(g.name, g.calls, g.stats) for g in groups]

    def _wait(self, driver) -> None:
        """Apply the reports that arrive within one heartbeat (or until the nearest time
        limit), then replace the actors whose running batch is past its limit."""
        deadline = self._deadline(driver.sched)
        now = time.perf_counter()
        wait = driver.wait_s() if deadline is None else max(0.0, min(driver.wait_s(), deadline - now))
        refs = list(self._flight)
        done, rest = ray.wait(refs, num_returns=1, timeout=wait)
        if done and rest:
            done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        for ref in done:
            fl = self._flight.pop(ref, None)
            if fl is not None:
                self._apply(driver.sched, ref, fl)
        if deadline is not None and time.perf_counter() >= deadline:
            self._expire(driver.sched)

    def _limit(self, sched, g: _Group, a: int) -> float | None:
        """The time limit of actor `a`'s running call, if its Call has one."""
        if not g.flight[a]:
            return None
        fl = self._flight.get(g.flight[a][0])
        return None if fl is None or fl.call < 0 else sched.plan.calls[fl.call].timeout_s

    def _deadline(self, sched) -> float | None:
        limits = [g.since[a] + t for g in self.groups for a in range(len(g.actors))
                  if (t := self._limit(sched, g, a))]
        return min(limits, default=None)

    def _expire(self, sched) -> None:
        """Fail each running call past its limit (an attempt, retried and isolated like an
        exception), requeue the calls queued behind it, and replace its actor: Ray restarts a
        killed actor, which takes work again once it answers a ping."""
        now = time.perf_counter()
        for g in self.groups:
            for a in range(len(g.actors)):
                t = self._limit(sched, g, a)
                if not t or now - g.since[a] < t:
                    continue
                head = self._flight.pop(g.flight[a].popleft())
                name = sched.plan.calls[head.call].name
                for b in head.batches:
                    sched.fail(b.id, timeout_cause(name, t, len(b.keys)))
                while g.flight[a]:
                    for b in self._flight.pop(g.flight[a].popleft()).batches:
                        sched.requeue(b.id)
                ray.kill(g.actors[a], no_restart=False)
                self._ping(g, a, 0)

    def _ping(self, g: _Group, a: int, failed: int) -> None:
        """Keep a replaced actor busy until it answers: only then is it the fresh one (a ping
        that reached the old one before the kill dies with it), so its start-up never counts
        against the time limit of its next batch."""
        if failed >= MAX_PINGS:
            raise CurateError(f"a worker of pool {g.name} was replaced after a timeout but its new "
                              f"actor did not answer {MAX_PINGS} pings; check the cluster's health")
        ping = g.actors[a].ping.remote()
        self._flight[ping] = _Call(g, a, -1, [], None, failed)
        g.flight[a].append(ping)
        g.since[a] = time.perf_counter()

    def _dispatch(self, driver, g: _Group) -> None:
        sched = driver.sched
        for a in sorted(range(len(g.actors)), key=lambda i: len(g.flight[i])):
            if len(g.flight[a]) >= self.depth:
                return
            if g.flight[a] and self._flight[g.flight[a][0]].call < 0:
                continue  # being replaced: nothing goes to it until the fresh actor answers
            call = self._pick(sched, g, a)
            if call is None:
                return
            free = sum(max(0, self.depth - len(f)) for f in g.flight)
            size = sched.plan.calls[call].batch_size
            want = math.ceil(sched.ready(call) / size / max(1, free))
            k = max(1, min(want, MAX_BUNDLE, int(BUNDLE_TARGET_S / max(self._cost.get(call, 1.0), 1e-6))))
            if sched.plan.calls[call].timeout_s:
                k = 1  # a time limit is per batch: one batch per call, so a timeout fails only it
            batches = []
            while len(batches) < k and (b := sched.reserve(call)) is not None:
                batches.append(b)
            if not batches:
                continue
            refs, pos = [], {}
            wire = [[_to_wire(x, refs, pos) for x in b.inputs] for b in batches]
            meta, payload = g.actors[a].run.remote(call, wire, *refs)
            self._flight[meta] = _Call(g, a, call, batches, payload)
            if not g.flight[a]:
                g.since[a] = time.perf_counter()
            g.flight[a].append(meta)

    @staticmethod
    def _pick(sched, g: _Group, actor: int) -> int | None:
        """Downstream-first Call with ready grains; a busy actor only takes full batches, so
        pipelining never trades batch fill for latency."""
        busy = len(g.flight[actor]) > 0
        for c in g.calls:
            r = sched.ready(c)
            if r and (not busy or r >= sched.plan.calls[c].batch_size):
                return c
        return None

    def _apply(self, sched, ref, fl: _Call) -> None:
        mine = fl.group.flight[fl.actor]
        running = mine[0] == ref  # an actor runs its calls in order: only the oldest had started
        mine.remove(ref)
        if running:
            fl.group.since[fl.actor] = time.perf_counter()  # the next call starts now
        if fl.call < 0:  # a replaced actor's ping: ready once it answers, else ping it again
            try:
                ray.get(ref)
            except ray.exceptions.RayError:
                self._ping(fl.group, fl.actor, fl.pings + 1)
            return
        try:
            metas = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # the call itself failed to run
            cause = Cause("user_code", str(exc).strip().splitlines()[0], sched.plan.calls[fl.call].name,
                          type(exc).__name__)
            for b in fl.batches:
                sched.fail(b.id, cause)
            return
        except ray.exceptions.RayError as exc:  # the actor died (Ray restarts it)
            cause = Cause("worker_died", f"worker {fl.actor} of pool {fl.group.name} died: "
                          f"{type(exc).__name__}", sched.plan.calls[fl.call].name, type(exc).__name__)
            for b in fl.batches:  # the running call is suspect; calls queued behind it are not
                if running:
                    sched.fail(b.id, cause)
                else:
                    sched.requeue(b.id)
            return
        kind = sched.plan.calls[fl.call].kind
        stats = fl.group.stats[fl.actor]
        for bi, (b, meta) in enumerate(zip(fl.batches, metas)):
            seconds = meta[-1]
            stats.add(fl.call, seconds)
            self._driver.record_batch(fl.call, meta[-2], seconds, len(b.keys), f"{fl.group.name}/{fl.actor}")
            old = self._cost.get(fl.call)
            self._cost[fl.call] = seconds if old is None else old + COST_SMOOTHING * (seconds - old)
            if meta[0] == "err":
                sched.fail(b.id, meta[1])
                continue
            _, codes, causes, counts, _, _ = meta
            n = len(b.keys)
            if kind == "expand":
                values = [[Ref(fl.payload, bi, i, c) for c in range(counts[i])] for i in range(n)]
            elif kind == "filter":
                values = [None] * n
            else:
                values = [Ref(fl.payload, bi, i) for i in range(n)]
            sched.complete(b.id, BatchReport(values, codes, causes))


def _wait_started(groups: list[_Group]) -> None:
    """Block until every actor answers; an actor that cannot even start (its stage does not
    unpickle on the worker, a runtime_env fails) stops the run with the reason, since no
    item of its Calls could ever run."""
    pings = {a.ping.remote(): g for g in groups for a in g.actors}
    problems = {}
    for ref, g in pings.items():
        try:
            ray.get(ref)
        except ray.exceptions.RayError as exc:
            problems.setdefault(g.name, str(exc).strip().splitlines()[-1])
    if problems:
        for g in groups:
            for a in g.actors:
                ray.kill(a)
        raise CurateError("workers could not start: " + "; ".join(f"pool {n}: {why}" for n, why in problems.items())
                          + ". Stages must be importable on the workers: define them in an installed "
                          "module or the driver script, or ship code with ray_init={'runtime_env': ...}")


def _check_picklable(groups: list[_Group]) -> None:
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


def _to_wire(x, refs: list, pos: dict):
    """Replace each driver-side Ref's ObjectRef by its position among the call's arguments."""
    t = type(x)
    if t is Ref:
        p = pos.get(x.src)
        if p is None:
            p = pos[x.src] = len(refs)
            refs.append(x.src)
        return Ref(p, x.b, x.i, x.c)
    if t is tuple:
        return tuple(_to_wire(y, refs, pos) for y in x)
    if t is list:
        return [_to_wire(y, refs, pos) for y in x]
    return x
