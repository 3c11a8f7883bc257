"""One run on Ray actors (`RayRun`, made per `RayExecutor.execute`): its worker pools, calls in
flight, core slots and ramp, on the shared loop (`curate.executors.base.ExecutorRun`).

Each actor holds up to `pipeline_depth` calls so dispatch hides behind compute, and a call
carries several batches of a cheap Call (about BUNDLE_TARGET_S of work) so cheap stages do not
pay one round trip per batch. CPU work starts on a node only while it fits the node's cores
(`cores`). Replicas start as their work calls for them (`ramp`); a replaced or restarted actor
takes work again once it answers a ping."""

from __future__ import annotations

import math
import time
import uuid
from collections import deque
from dataclasses import replace

import ray

from curate.errors import CurateError
from curate.executors.base import ExecutorRun
from curate.executors.ray.cluster import node_cpus
from curate.executors.ray.cores import CoreSlots
from curate.executors.ray.ramp import Ramp
from curate.executors.ray.replica import BIND, PING, ActorPool, ActorReplica, RayCall
from curate.executors.ray.replies import settle
from curate.executors.ray.store import output_calls
from curate.executors.ray.wire import to_wire

BUNDLE_TARGET_S = 0.02  # work per Ray call for cheap Calls: amortises dispatch, keeps latency low
MAX_PINGS = 20  # a replaced actor that fails this many pings in a row cannot come back
# New actors starting at once, per CPU (`Ramp` orders them): a start is CPU-bound, more only delay the first
STARTING_PER_CPU = 1.0


class WorkerGone(CurateError):
    """A restarted worker never came back (its pings failed): the cluster is failing."""


class RayRun(ExecutorRun):
    """One run's state on Ray: `pools` (their replicas), `flight` (every call in flight, by the
    ref the run waits on), the core slots and the ramp."""

    def __init__(self, driver, cluster, pools: list[ActorPool], store, depth: int):
        super().__init__(driver, BUNDLE_TARGET_S)
        self.cluster, self.pools, self.store, self.depth = cluster, pools, store, depth
        self.id = uuid.uuid4().hex  # an actor answers only calls of the run it was bound to
        self.flight: dict = {}
        self.slots = CoreSlots()
        self.secured = output_calls(driver.plan)
        self.staging = driver.file_staging  # a local output directory: staged only on this node's disk
        if self.staging is not None and self.staging.local:
            self.staging = replace(self.staging, node=ray.get_runtime_context().get_node_id())
        self.load: dict[str | None, float] = {}
        # a freed core goes to the pool nearest the outputs first: parents finish, memory drains
        self.order = sorted(pools, key=lambda g: -max(driver.plan.calls[c].node for c in g.calls))
        self.up = self.starting = 0  # actors that answered their bind; actors starting now
        self.ramp = Ramp(pools)
        self.pending = deque(self.ramp.first(pools))  # replicas to start, in order
        self.start_cap = max(1, math.floor(cluster.resources.get("CPU", 0.0) * STARTING_PER_CPU))

    # ---- starting replicas ------------------------------------------------------------------
    def startup(self) -> None:
        """Bind the warm actors and start the first new ones; the loop takes each actor into
        work as it answers (`bound`), so the first pools work while the last still start."""
        for r in self.replicas():
            if r.handle is not None:
                self.bind(r)
        self.launch()

    def grow(self, g: ActorPool, now: float) -> None:
        """Start `g`'s next replica when its work calls for one (`Ramp`)."""
        r = self.ramp.grow(g, self.sched, self.cost.seconds, now)
        if r is not None:
            self.pending.append(r)
            self.launch()

    def launch(self) -> None:
        """Start new actors, up to the cap of actors starting at once."""
        while self.pending and self.starting < self.start_cap:
            r = self.pending.popleft()
            r.handle = r.pool.remote.remote(r.pool.target, r.pool.init)
            self.ramp.launch(r, time.perf_counter())
            self.starting += 1
            self.bind(r, new=True)

    def bind(self, r: ActorReplica, new: bool = False) -> None:
        ref = r.handle.bind.remote(self.id, r.pool.fns, self.staging)
        self.send(r, RayCall(BIND, [], replica=r, key=ref, meta=ref, new=new))
        r.since = time.perf_counter()

    def bound(self, fl: RayCall) -> None:
        """An actor answered its bind: it takes work from now on. An actor that cannot even
        start (its stage does not unpickle on the worker, a runtime_env fails) stops the run
        with the reason, since no item of its Calls could ever run."""
        try:
            node, cores = ray.get(fl.meta)
        except ray.exceptions.RayError as exc:
            raise CurateError(
                f"workers could not start: pool {fl.replica.pool.name}: {str(exc).strip().splitlines()[-1]}. "
                "Stages must be importable on the workers: define them in an installed module or the driver "
                "script, or ship code with ray_init={'runtime_env': ...}") from None
        self.place(fl.replica, node, cores)
        if fl.new:  # the next actor may start
            self.ramp.answered(fl.replica, time.perf_counter())
            self.starting -= 1
            self.launch()
        self.up += 1
        if self.up == 1:
            self.driver.started_workers(self.store)
        if not self.starting and not self.pending:  # every actor started so far answered
            self.driver.workers_ready()

    def place(self, r: ActorReplica, node: str, cores: float) -> None:
        """Where a replica that answered runs: its node and the cores it may use there."""
        self.slots.place(r, node, cores, None if node in self.slots.cap else node_cpus().get(node))

    def ping(self, r: ActorReplica, failed: int) -> None:
        """Keep a replaced or restarted actor out of work until it answers: only then is it the
        fresh one (a ping that reached the old one before the kill dies with it), so its
        start-up never counts against the time limit of its next batch, and an actor Ray cannot
        place again (its node died, no room left) holds no batch."""
        if failed >= MAX_PINGS:
            raise WorkerGone(f"a worker of pool {r.pool.name} was restarted (after a timeout or its death) but "
                             f"its new actor did not answer {MAX_PINGS} pings; check the cluster's health")
        ref = r.handle.ping.remote()
        self.send(r, RayCall(PING, [], replica=r, key=ref, meta=ref, pings=failed))
        r.since = time.perf_counter()

    def send(self, r: ActorReplica, fl: RayCall) -> None:
        self.flight[fl.key] = fl
        r.flight.append(fl)

    # ---- the loop's steps -------------------------------------------------------------------
    def taking_work(self) -> bool:
        return self.up > 0  # work begins with the first actor that answered

    def working(self) -> bool:
        return any(fl.call >= 0 for fl in self.flight.values())  # pings and binds aside

    def waiting(self) -> bool:
        return bool(self.flight)

    def dispatch(self) -> None:
        self.load = self.slots.load(self.pools)
        now = time.perf_counter()
        for g in self.order:
            self.dispatch_pool(g)
            self.grow(g, now)

    def reports(self, timeout: float):
        """Replies within `timeout`, then every one already there. A lost cluster ends this wait
        too: the watch's `driver.cluster_lost` wakes the blocked thread, and the run's
        ClusterLostError is raised (`RayExecutor.execute`)."""
        done, rest = ray.wait(list(self.flight), num_returns=1, timeout=timeout)
        if done and rest:
            done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        for ref in done:
            fl = self.flight.pop(ref, None)
            if fl is not None:
                yield ref, fl

    def dispatch_pool(self, g: ActorPool) -> None:
        for r in sorted(g.workers, key=lambda r: len(r.flight)):
            if len(r.flight) >= self.depth:
                return
            if not r.answers():
                continue
            call = self.pick(g, r)
            if call is None:
                return
            if not g.resources.uses_gpu:  # CPU work starts only where it fits the node's cores
                cores = self.slots.cores_of(call)
                load = self.load.get(r.node, 0.0)
                if not r.flight:  # an idle actor waits for a core; a busy one keeps its own
                    if not self.slots.fits(load, r.node, cores):
                        continue
                    self.load[r.node] = load + cores
            free = sum(max(0, self.depth - len(w.flight)) for w in g.workers)
            batches = self.take(call, free, idle=not r.flight)
            if not batches:
                continue
            refs, pos = [], {}
            wire = [[to_wire(x, refs, pos) for x in b.inputs] for b in batches]
            meta, payload = r.handle.run.remote(self.id, call, wire, *refs)
            # A payload that holds output values is awaited on this node (ray.wait fetches it
            # here), so a copy outlives the worker's node: Ray recovers a lost object from a copy.
            key = payload if call in self.secured else meta
            if not r.flight:
                r.since = time.perf_counter()
            self.send(r, RayCall(call, batches, replica=r, payload=payload, key=key, meta=meta))

    def pick(self, g: ActorPool, r: ActorReplica) -> int | None:
        """Downstream-first Call with ready grains; a busy actor only takes full batches, so
        pipelining never trades batch fill for latency, and none of a Call not measured yet
        while its pool may still grow or has a replica starting: that work waits for the
        pool's next replica (`Ramp`), not behind a call whose length nobody knows yet."""
        busy = len(r.flight) > 0
        coming = busy and (self.ramp.can_grow(g) or any(not w.answers() for w in g.workers[:self.ramp.wanted[g.index]]))
        for c in g.calls:
            n = self.sched.ready(c, idle=not busy)
            if n and (not busy or (n >= self.plan.calls[c].batch_size and (c in self.cost.seconds or not coming))):
                return c
        return None

    def replace(self, r: ActorReplica) -> None:
        """Requeue the calls queued behind the one that timed out and replace its actor: Ray
        restarts a killed actor, which takes work again once it answers a ping."""
        self.flight.pop(r.flight.popleft().key)
        while r.flight:
            for b in self.flight.pop(r.flight.popleft().key).batches:
                self.sched.requeue(b.id)
        ray.kill(r.handle, no_restart=False)
        self.ping(r, 0)

    def apply(self, report) -> None:
        ref, fl = report
        r = fl.replica
        # an actor runs its calls in order: only the oldest had started (and when the actor died
        # under it, the calls queued behind it never did, whichever order their errors arrive in)
        running = r.flight[0] is fl and not fl.unstarted
        r.flight.remove(fl)
        if running:
            r.since = time.perf_counter()  # the next call starts now
        if fl.call == BIND:
            self.bound(fl)
        elif fl.call == PING:  # a restarted actor's ping: ready once it answers, else ping it again
            try:
                node, cores = ray.get(fl.meta)
            except ray.exceptions.RayError:
                self.ping(r, fl.pings + 1)
                return
            self.place(r, node, cores)  # it may have restarted on another node
        else:
            settle(self, fl, running)

    def memory_readable(self, r: ActorReplica) -> bool:
        """Whether a replica's actor can report its memory: it is not still binding."""
        return not any(f.call == BIND for f in r.flight)
