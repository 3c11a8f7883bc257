"""The Ray executor's worker pools: which actors a plan needs (`make_pools`), how many (one per
GPU by default for a GPU pool), and starting them, or taking them over warm from an earlier run
of the same session (`WarmPools`): a pool whose class, init and resources are unchanged keeps its
actors, and so its loaded model."""

from __future__ import annotations

import hashlib
import math

import ray

from curate import defaults
from curate.errors import CurateError
from curate.executors.ray.cluster import Demand, check, node_resources
from curate.executors.ray.replica import ActorPool, ActorReplica
from curate.executors.ray.worker import PoolWorker
from curate.fingerprint import warm_key


def make_pools(driver) -> list[ActorPool]:
    """One worker pool per class Pool; function stages with one resource request share one."""
    plan, pools, shared = driver.plan, [], {}
    for p in plan.pools:
        if p.is_class:
            key = "class:" + warm_key(p)
            g = ActorPool(p.name, key=key, target=p.target, init=dict(p.init), resources=p.resources,
                          replicas=p.replicas)
            pools.append(g)
        else:  # stateless functions with one resource request share light workers
            key = "functions:" + _digest(p.resources.signature())
            g = shared.get(key)
            if g is None:
                g = shared[key] = ActorPool("functions", key=key, target=None, init={}, resources=p.resources,
                                            replicas=p.replicas)
                pools.append(g)
            elif p.replicas is not None:
                g.replicas = max(g.replicas or 0, p.replicas)
        g.pools.append(p.id)
        for c in p.calls:
            spec = plan.calls[c]
            g.calls.append(c)
            g.fns[c] = (spec.kind, spec.name, spec.method if p.is_class else p.target)
    for i, g in enumerate(pools):
        g.index = i
        g.calls = driver.downstream_first(g.calls)
        if g.target is None and sum(1 for x in pools if x.target is None) > 1:
            g.name = f"functions#{i}"
    return pools


def resolve_replicas(pools: list[ActorPool], nodes: list[dict[str, float]]) -> None:
    """Pools without a replica count get one: GPU pools share the GPUs left by the others
    (one worker per `num_gpus` of them: one per GPU for num_gpus=1), the rest DEFAULT_REPLICAS."""
    gpus = sum(n.get("GPU", 0.0) for n in nodes)
    taken = sum(g.replicas * g.resources.num_gpus for g in pools if g.replicas is not None)
    auto_gpu = [g for g in pools if g.replicas is None and g.resources.uses_gpu]
    for g in pools:
        if g.replicas is None and not g.resources.uses_gpu:
            g.replicas = defaults.DEFAULT_REPLICAS
    share = max(0.0, gpus - taken) / len(auto_gpu) if auto_gpu else 0.0
    for g in auto_gpu:
        g.replicas = max(1, math.floor(share / g.resources.num_gpus + 1e-9))


WARM_WAIT_S = 600.0  # how long a session's run waits, as it ends, for its replicas to start and load


class WarmPools:
    """Actors by pool key, kept between the runs of a session (or only for one run)."""

    def __init__(self):
        self.actors: dict[str, list] = {}

    def start(self, pools: list[ActorPool]) -> None:
        """Check that every pool fits on the cluster, then give each pool its warm actors of
        the same key; the replicas left without one are for the run to start (`ActorPool.remote`)
        in the order it needs them. Warm actors no pool uses are released first, so their
        resources are free for the new ones."""
        nodes = node_resources()
        resolve_replicas(pools, nodes)
        keys = {g.key for g in pools}
        for key in [k for k in self.actors if k not in keys]:
            self.release(key)
        check([Demand(g.label, g.replicas, g.resources.demand()) for g in pools], nodes)
        check_picklable(pools)
        remote = ray.remote(PoolWorker)
        for g in pools:
            warm = self.actors.pop(g.key, [])
            for a in warm[g.replicas:]:
                ray.kill(a)
            g.remote = remote.options(max_restarts=-1, max_task_retries=0, **g.resources.ray_options())
            handles = warm[:g.replicas] + [None] * (g.replicas - len(warm))
            g.workers = [ActorReplica(g, i, handle=h) for i, h in enumerate(handles)]

    def keep(self, pools: list[ActorPool]) -> None:
        """After a run that ended cleanly (no call in flight): its actors stay warm. A run may
        end before all its replicas started (a small input): those start now, and every actor
        builds its stage, so the session's next run starts with whole pools, models loaded. It
        waits up to `WARM_WAIT_S` for them (an actor still loading then stays, and the next run
        waits for it); an actor that cannot start is left out (the next run starts a fresh one)."""
        for g in pools:
            for r in g.workers:
                if r.handle is None:
                    r.handle = g.remote.remote(g.target, g.init)
        ready = {r.handle: r.handle.prepare.remote() for g in pools for r in g.workers}
        done, _ = ray.wait(list(ready.values()), num_returns=len(ready), timeout=WARM_WAIT_S)
        done = set(done)
        for g in pools:
            self.actors[g.key] = []
            for a in (r.handle for r in g.workers):
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


def kill(pools: list[ActorPool]) -> None:
    """Kill every actor of the run's pools (a run that stopped mid-way)."""
    for g in pools:
        for r in g.workers:
            if r.handle is not None:
                ray.kill(r.handle)
            r.handle = None


def check_picklable(pools: list[ActorPool]) -> None:
    """Stages travel to workers by pickle: name every one that cannot, before any actor starts."""
    from ray import cloudpickle

    problems = []
    for g in pools:
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


def measure_memory(pools: list[ActorPool], up) -> None:
    """Each actor's peak resident memory into its WorkerStats (skipped for a replica not `up(r)`
    yet, still starting, and for one that does not answer in time: a reading is a report, never
    a reason to hold the run)."""
    asked = {r.handle.memory.remote(): r for g in pools for r in g.workers if r.handle is not None and up(r)}
    ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=MEMORY_WAIT_S)
    for ref in ready:
        r = asked[ref]
        try:
            r.stats.peak_rss, r.stats.peak_private = ray.get(ref)
        except ray.exceptions.RayError:
            pass
