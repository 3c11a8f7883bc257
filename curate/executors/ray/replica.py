"""What the Ray executor knows of its actors: each worker pool (`ActorPool`), each of its
replicas (`ActorReplica`: the actor, its calls in flight, where it runs) and each call in
flight (`RayCall`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from curate.executors.base import Flight, Replica, WorkerPool
from curate.resources import Resources

PING, BIND = -1, -2  # the `call` of a ping to a restarted actor, and of a new actor's first call


@dataclass(eq=False)
class ActorReplica(Replica):
    """One actor slot of a pool (`handle` None: not started yet), its calls in flight (oldest,
    running, first) and the node and cores it reported when it answered."""

    node: str | None = None  # the node id it answered from (None: it has not answered yet)
    cores: float | None = None  # the cores it may use there

    def answers(self) -> bool:
        """Takes work: started, and no bind or ping in flight."""
        return self.handle is not None and not any(f.call < 0 for f in self.flight)


@dataclass(kw_only=True)
class ActorPool(WorkerPool):
    """A worker pool of Ray actors: the class (None for function stages), its init and
    resources, how many replicas, the plan's Pools it serves and each Call's function."""

    key: str  # same key: same class, init and resources, so warm actors can serve it
    target: object
    init: dict
    resources: Resources
    replicas: int | None
    pools: list[int] = field(default_factory=list)  # the plan's pools it serves
    fns: dict[int, tuple] = field(default_factory=dict)  # call -> (kind, name, fn or method)
    remote: object = None  # the Ray actor class with this pool's options: `remote.remote(...)` starts one

    @property
    def label(self) -> str:
        return f"{self.name} ({', '.join(f[1] for f in self.fns.values())})"


@dataclass(eq=False)
class RayCall(Flight):
    """One Ray call in flight (`call` PING: a ping to an actor being replaced; BIND: a new or
    warm actor told which Calls it serves in this run)."""

    replica: ActorReplica = None
    payload: object = None
    key: object = None  # what the run waits on: the payload when secured, else the reply (`meta`)
    pings: int = 0  # a ping: how many pings the replaced actor has failed to answer so far
    unstarted: bool = False  # queued behind a call whose actor died: it never ran
    meta: object = None  # the reply with per-item outcomes
    new: bool = False  # a bind to an actor just started: its answer lets the next one start
