"""Ray executor: actor pools driving the same pure Scheduler, on the same loop, as the local
executor.

Class stages and Pools get up to `replicas` actors each (`ramp` starts them as their work calls
for them; the class is built once per actor); function stages with the same resource request
share one light pool (`pools`). Payloads stay in the object store (`store`, `wire`): the driver
gets per-item outcome codes and child counts, keeps `Ref`s, and a downstream batch names the
upstream payloads it needs as top-level arguments, so Ray moves them from worker to worker.

The package by responsibility: `RayExecutor` (here) lives as long as its session: it connects
(`cluster`), keeps warm actors and the writer actor between runs (`pools.WarmPools`, `store`)
and releases them; each `execute` makes one `run.RayRun`, which holds that run's state and loop;
`replica` is what the driver knows of an actor, `worker` what runs inside one, `replies` what a
call's reply means, and `cores` how much CPU work a node takes at once."""

from __future__ import annotations

import ray

from curate.errors import CurateError
from curate.executors.ray.cluster import CLUSTER_LOST_S, GcsWatch, connect, forget_lost_cluster
from curate.executors.ray.pools import WarmPools, kill, make_pools, measure_memory
from curate.executors.ray.run import RayRun, WorkerGone
from curate.executors.ray.store import RayStore
from curate.executors.stats import PoolReport

DEFAULT_PIPELINE_DEPTH = 2  # calls in flight per actor: one computes while the next is shipped


class RayExecutor:
    """Runs a plan on Ray: `address=` (or RAY_ADDRESS) joins a cluster, else a local Ray starts
    on demand with `ray_init` options; Ray stays up for later runs in this process. With
    `keep_warm`, the actors of a run that ended cleanly serve the next run of a pool with the
    same class, init and resources; `close()` releases them."""

    def __init__(self, address: str | None = None, ray_init: dict | None = None,
                 pipeline_depth: int = DEFAULT_PIPELINE_DEPTH, keep_warm: bool = False):
        if not isinstance(pipeline_depth, int) or pipeline_depth < 1:
            raise CurateError(f"pipeline_depth={pipeline_depth!r}; use a whole number >= 1 (calls in flight per actor)")
        self.address, self.ray_init, self.depth, self.keep_warm = address, ray_init, pipeline_depth, keep_warm
        self.warm = WarmPools()
        self._store: RayStore | None = None

    def close(self) -> None:
        """Release every actor kept warm (a session's end)."""
        if ray.is_initialized():
            self.warm.release()
            if self._store is not None:
                self._store.close()
        self._store = None

    def execute(self, driver) -> list[PoolReport]:
        """One run: its pools' warm actors bound, new ones started, the loop, then its actors
        kept warm (a clean run of a session) or killed."""
        cluster = connect(self.address, self.ray_init)
        driver.use_cluster(cluster)
        pools = make_pools(driver)
        watch = GcsWatch(cluster.address, on_lost=lambda s: driver.cluster_lost(cluster.lost(s)))
        self.warm.start(pools)
        store = self._store if self._store is not None else RayStore()
        run = RayRun(driver, cluster, pools, store, self.depth)
        run.startup()
        clean = False
        try:
            for g in pools:
                for p in g.pools:
                    driver.plan_replicas(p, g.replicas)
            run.loop()
            clean = True
            measure_memory(pools, run.memory_readable)
        except BaseException as exc:
            # A call into Ray that failed because the cluster is going away (the writer actor
            # died with its node, restarted workers never answer) is the lost cluster; so is
            # whatever the watch's wake-up interrupted (Ray's wait reports it as a SystemError).
            if (driver.lost is None and isinstance(exc, (ray.exceptions.RayError, WorkerGone))
                    and watch.gone_within(CLUSTER_LOST_S)):
                driver.cluster_lost(cluster.lost(watch.silent_s()), wake=False)
            if driver.lost is not None and exc is not driver.lost:
                raise driver.lost from None
            raise
        finally:
            watch.close()
            if driver.lost is not None:  # its actors went with the cluster (and Ray's calls would block)
                self._store = None
                self.warm.actors.clear()
                forget_lost_cluster()
            elif self.keep_warm and clean:
                self.warm.keep(pools)
                self._store = store
            else:  # a run that stopped mid-way leaves calls queued on its actors: not reusable
                kill(pools)
                store.close()
                self._store = None
        return [PoolReport(g.name, g.calls, [r.stats for r in g.workers]) for g in pools]
