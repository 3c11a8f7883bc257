"""Ray executor: actor pools driving the same pure Scheduler as the local executor.

Class stages and Pools get up to `replicas` actors each (`Ramp` starts them as their work calls
for them; the class is built once per actor); function stages with the same resource request
share one light pool (`ray_pools`). Payloads stay in the object store (`ray_store`): the driver
gets per-item outcome codes and child counts, keeps `Ref`s, and a downstream batch names the
upstream payloads it needs as top-level arguments, so Ray moves them from worker to worker. Each
actor holds up to `pipeline_depth` calls so dispatch hides behind compute, and a call carries
several batches of a cheap Call (about BUNDLE_TARGET_S of work) so cheap stages do not pay one
round trip per batch. CPU work starts on a node only while it fits the node's cores
(`ray_cores`). With `keep_warm` (a `cu.Session`), actors and the writer actor outlive the run."""

from __future__ import annotations

import math
import time
import uuid
from collections import deque
from dataclasses import dataclass

import ray

from curate.core.outcome import BatchReport
from curate.errors import Cause, CurateError
from curate.executors.base import timeout_cause
from curate.executors.stats import CallCosts, PoolReport
from curate.executors.ray_cluster import CLUSTER_LOST_S, GcsWatch, connect, forget_lost_cluster, node_cpus
from curate.executors.ray_cores import CoreSlots
from curate.executors.ray_pools import Group, Ramp, WarmPools, kill, make_groups, measure_memory
from curate.executors.ray_store import RayStore, _to_wire, lose_payload, output_calls
from curate.executors.ray_worker import UNBOUND, Ref

DEFAULT_PIPELINE_DEPTH = 2  # calls in flight per actor: one computes while the next is shipped
BUNDLE_TARGET_S = 0.02  # work per Ray call for cheap Calls: amortises dispatch, keeps latency low
MAX_PINGS = 20  # a replaced actor that fails this many pings in a row cannot come back
PING, BIND = -1, -2  # the `call` of a ping to a restarted actor, and of a new actor's first call
# New actors starting at once, per CPU (`Ramp` orders them): a start is CPU-bound, more only delay the first
STARTING_PER_CPU = 1.0


class WorkerGone(CurateError):
    """A restarted worker never came back (its pings failed): the cluster is failing."""


@dataclass
class _Call:
    """One Ray call in flight (`call` PING: a ping to an actor being replaced; BIND: a new or
    warm actor told which Calls it serves in this run)."""

    group: Group
    actor: int
    call: int
    batches: list
    payload: object
    pings: int = 0  # a ping: how many pings the replaced actor has failed to answer so far
    unstarted: bool = False  # queued behind a call whose actor died: it never ran
    meta: object = None  # the reply with per-item outcomes (the call is keyed by its payload when secured)
    new: bool = False  # a bind to an actor just started: its answer lets the next one start


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
        self.groups: list[Group] = []
        self.warm = WarmPools()
        self._store: RayStore | None = None
        self._flight: dict = {}
        self._cost = CallCosts(BUNDLE_TARGET_S)
        self._slots = CoreSlots()
        self._secured: set[int] = set()
        self._load: dict[str | None, float] = {}

    def close(self) -> None:
        """Release every actor kept warm (a session's end)."""
        if ray.is_initialized():
            self.warm.release()
            if self._store is not None:
                self._store.close()
        self._store = None

    # ---- the loop -------------------------------------------------------------------------
    def execute(self, driver) -> list[PoolReport]:
        self.cluster = connect(self.address, self.ray_init)
        driver.use_cluster(self.cluster)
        self._driver, self._flight, self._cost, self._slots = driver, {}, CallCosts(BUNDLE_TARGET_S), CoreSlots()
        self._secured = output_calls(driver.plan)
        self.groups = groups = make_groups(driver)
        # a freed core goes to the pool nearest the outputs first: parents finish, memory drains
        order = sorted(range(len(groups)), key=lambda i: -max(driver.plan.calls[c].node for c in groups[i].calls))
        self._run = uuid.uuid4().hex
        watch = GcsWatch(self.cluster.address, on_lost=lambda s: driver.cluster_lost(self.cluster.lost(s)))
        self.warm.start(groups)
        store = self._store if self._store is not None else RayStore()
        self._startup(driver, groups, store)
        clean = False
        try:
            for g in groups:
                for p in g.pools:
                    driver.plan_replicas(p, g.replicas)
            while True:
                if self._up:  # work begins with the first actor that answered
                    driver.step()
                    self._load = self._slots.load(groups, self._flight)
                    now = time.perf_counter()
                    for i in order:
                        self._dispatch(driver, groups[i])
                        self._grow(driver.sched, groups[i], now)
                    if not any(fl.call >= 0 for fl in self._flight.values()):  # pings and binds aside
                        if driver.idle_done():
                            break
                        if not self._flight:
                            continue
                self._wait(driver)  # the watch raises ClusterLostError here (driver.heartbeat/wake)
            clean = True
            measure_memory(groups, lambda g, i: not any(self._flight[r].call == BIND for r in g.flight[i]))
        except BaseException as exc:
            # A call into Ray that failed because the cluster is going away (the writer actor
            # died with its node, restarted workers never answer) is the lost cluster; so is
            # whatever the watch's wake-up interrupted (Ray's wait reports it as a SystemError).
            if (driver.lost is None and isinstance(exc, (ray.exceptions.RayError, WorkerGone))
                    and watch.gone_within(CLUSTER_LOST_S)):
                driver.cluster_lost(self.cluster.lost(watch.silent_s()), wake=False)
            if driver.lost is not None and exc is not driver.lost:
                raise driver.lost from None
            raise
        finally:
            watch.close()
            if driver.lost is not None:  # its actors went with the cluster (and Ray's calls would block)
                self.groups, self._store = [], None
                self.warm.actors.clear()
                forget_lost_cluster()
            elif self.keep_warm and clean:
                self.warm.keep(groups)
                self._store = store
            else:  # a run that stopped mid-way leaves calls queued on its actors: not reusable
                kill(groups)
                store.close()
                self._store = None
        return [PoolReport(g.name, g.calls, g.stats) for g in groups]

    def _startup(self, driver, groups: list[Group], store) -> None:
        """Bind the warm actors and start the first new ones; the loop takes each actor into
        work as it answers (`_bound`), so the first pools work while the last still start."""
        self._startup_store, self._up, self._starting = store, 0, 0
        self._ramp = Ramp(groups)
        self._pending = deque(self._ramp.first(groups))  # (replica index, group index)
        self._start_cap = max(1, math.floor(self.cluster.resources.get("CPU", 0.0) * STARTING_PER_CPU))
        for g in groups:
            for a, actor in enumerate(g.actors):
                if actor is not None:
                    self._bind(g, a)
        self._launch()

    def _answers(self, g: Group, a: int) -> bool:  # takes work: started, no bind or ping in flight
        return g.actors[a] is not None and not any(self._flight[r].call < 0 for r in g.flight[a])

    def _grow(self, sched, g: Group, now: float) -> None:
        """Start `g`'s next replica when its work calls for one (`Ramp`)."""
        a = self._ramp.grow(g, sched, lambda a: self._answers(g, a), self._cost.seconds, now)
        if a is not None:
            self._pending.append((a, g.index))
            self._launch()

    def _launch(self) -> None:
        """Start new actors, up to the cap of actors starting at once."""
        while self._pending and self._starting < self._start_cap:
            a, i = self._pending.popleft()
            g = self.groups[i]
            g.actors[a] = g.remote.remote(g.target, g.init)
            self._ramp.launch(g, a, time.perf_counter())
            self._starting += 1
            self._bind(g, a, new=True)

    def _bind(self, g: Group, a: int, new: bool = False) -> None:
        ref = g.actors[a].bind.remote(self._run, g.fns)
        self._flight[ref] = _Call(g, a, BIND, [], None, meta=ref, new=new)
        g.flight[a].append(ref)
        g.since[a] = time.perf_counter()

    def _bound(self, driver, fl: _Call, ref) -> None:
        """An actor answered its bind: it takes work from now on. An actor that cannot even
        start (its stage does not unpickle on the worker, a runtime_env fails) stops the run
        with the reason, since no item of its Calls could ever run."""
        try:
            node, cores = ray.get(ref)
        except ray.exceptions.RayError as exc:
            raise CurateError(
                f"workers could not start: pool {fl.group.name}: {str(exc).strip().splitlines()[-1]}. Stages must "
                "be importable on the workers: define them in an installed module or the driver script, or ship "
                "code with ray_init={'runtime_env': ...}") from None
        self._place(fl, node, cores)
        if fl.new:  # the next actor may start
            self._ramp.answered(fl.group, fl.actor, time.perf_counter())
            self._starting -= 1
            self._launch()
        self._up += 1
        if self._up == 1:
            driver.started_workers(self._startup_store)
        if not self._starting and not self._pending:  # every actor started so far answered
            driver.workers_ready()

    def _place(self, fl: _Call, node: str, cores: float) -> None:
        """Where an actor that answered runs: its node and the cores it may use there."""
        self._slots.place(fl.group.index, fl.actor, node, cores, None if node in self._slots.cap else node_cpus().get(node))

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
                self._apply(driver, ref, fl)
        if deadline is not None and time.perf_counter() >= deadline:
            self._expire(driver.sched)

    def _limit(self, sched, g: Group, a: int) -> float | None:
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

    def _ping(self, g: Group, a: int, failed: int) -> None:
        """Keep a replaced or restarted actor out of work until it answers: only then is it the
        fresh one (a ping that reached the old one before the kill dies with it), so its
        start-up never counts against the time limit of its next batch, and an actor Ray cannot
        place again (its node died, no room left) holds no batch."""
        if failed >= MAX_PINGS:
            raise WorkerGone(f"a worker of pool {g.name} was restarted (after a timeout or its death) but "
                             f"its new actor did not answer {MAX_PINGS} pings; check the cluster's health")
        ping = g.actors[a].ping.remote()
        self._flight[ping] = _Call(g, a, PING, [], None, failed, meta=ping)
        g.flight[a].append(ping)
        g.since[a] = time.perf_counter()

    def _dispatch(self, driver, g: Group) -> None:
        sched = driver.sched
        for a in sorted(range(len(g.actors)), key=lambda i: len(g.flight[i])):
            if len(g.flight[a]) >= self.depth:
                return
            if not self._answers(g, a):
                continue
            call = self._pick(sched, g, a)
            if call is None:
                return
            if not g.resources.uses_gpu:  # CPU work starts only where it fits the node's cores
                node, cores = self._slots.node.get((g.index, a)), self._slots.cores_of(call)
                load = self._load.get(node, 0.0)
                if not g.flight[a]:  # an idle actor waits for a core; a busy one keeps its own
                    if not self._slots.fits(load, node, cores):
                        continue
                    self._load[node] = load + cores
            free = sum(max(0, self.depth - len(f)) for f in g.flight)
            spec = sched.plan.calls[call]
            k = self._cost.bundle(spec, math.ceil(sched.ready(call) / spec.batch_size / max(1, free)))
            batches = []
            idle = not g.flight[a]  # an idle actor may take grains the prefetch cap holds (one batch)
            while len(batches) < k and (b := sched.reserve(call, idle=idle and not batches)) is not None:
                batches.append(b)
                if any(b.gens):  # a retry, maybe isolating a poison item: alone, so that if it kills
                    break        # the worker it takes no other batch's attempt with it
            if not batches:
                continue
            refs, pos = [], {}
            wire = [[_to_wire(x, refs, pos) for x in b.inputs] for b in batches]
            meta, payload = g.actors[a].run.remote(self._run, call, wire, *refs)
            # A payload that holds output values is awaited on this node (ray.wait fetches it
            # here), so a copy outlives the worker's node: Ray recovers a lost object from a copy.
            key = payload if call in self._secured else meta
            self._flight[key] = _Call(g, a, call, batches, payload, meta=meta)
            if not g.flight[a]:
                g.since[a] = time.perf_counter()
            g.flight[a].append(key)

    def _pick(self, sched, g: Group, actor: int) -> int | None:
        """Downstream-first Call with ready grains; a busy actor only takes full batches, so
        pipelining never trades batch fill for latency, and none of a Call not measured yet
        while its pool may still grow: that work waits for the pool's next replica (`Ramp`)."""
        busy = len(g.flight[actor]) > 0
        for c in g.calls:
            r = sched.ready(c, idle=not busy)
            if r and (not busy or (r >= sched.plan.calls[c].batch_size
                                   and (c in self._cost.seconds or not self._ramp.can_grow(g)))):
                return c
        return None

    def _apply(self, driver, ref, fl: _Call) -> None:
        sched = driver.sched
        mine = fl.group.flight[fl.actor]
        # an actor runs its calls in order: only the oldest had started (and when the actor died
        # under it, the calls queued behind it never did, whichever order their errors arrive in)
        running = mine[0] == ref and not fl.unstarted
        mine.remove(ref)
        if running:
            fl.group.since[fl.actor] = time.perf_counter()  # the next call starts now
        if fl.call == BIND:
            self._bound(driver, fl, ref)
            return
        if fl.call == PING:  # a restarted actor's ping: ready once it answers, else ping it again
            try:
                node, cores = ray.get(ref)
            except ray.exceptions.RayError:
                self._ping(fl.group, fl.actor, fl.pings + 1)
                return
            self._place(fl, node, cores)  # it may have restarted on another node
            return
        try:
            metas = ray.get(fl.meta)
        except ray.exceptions.ObjectLostError as exc:  # an input's node died with its only copy
            lose_payload(sched, fl.call, fl.batches, exc)
            return
        except ray.exceptions.RayTaskError as exc:  # the call itself failed to run
            if isinstance(exc.cause, ray.exceptions.ObjectLostError):
                lose_payload(sched, fl.call, fl.batches, exc.cause)
                return
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
            if running:
                for r in mine:
                    self._flight[r].unstarted = True
                # No more work for it until its restarted actor answers: after a node loss that
                # may be never (no room left), and the pool goes on with its other workers.
                self._ping(fl.group, fl.actor, 0)
            return
        if metas and metas[0][0] == UNBOUND:  # Ray restarted the actor since the run began
            for b in fl.batches:
                sched.requeue(b.id)
            fl.group.actors[fl.actor].bind.remote(self._run, fl.group.fns)  # runs before later calls
            return
        kind = sched.plan.calls[fl.call].kind
        stats = fl.group.stats[fl.actor]
        for bi, (b, meta) in enumerate(zip(fl.batches, metas)):
            start, seconds, cores = meta[-3:]
            stats.add(fl.call, seconds)
            self._driver.record_batch(fl.call, start, seconds, len(b.keys), f"{fl.group.name}/{fl.actor}")
            self._cost.add(fl.call, seconds)
            self._slots.add(fl.call, cores)
            if meta[0] == "err":
                sched.fail(b.id, meta[1])
                continue
            _, codes, causes, counts, nbytes = meta[:5]
            n = len(b.keys)
            if kind == "expand":
                values = [[Ref(fl.payload, bi, i, c) for c in range(counts[i])] for i in range(n)]
            elif kind == "filter":
                values = [None] * n
            else:
                values = [Ref(fl.payload, bi, i) for i in range(n)]
            sched.complete(b.id, BatchReport(values, codes, causes, nbytes))
