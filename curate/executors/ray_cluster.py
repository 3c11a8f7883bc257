"""Connecting to Ray and checking, before any actor starts, that the cluster can ever hold
every worker the pipeline asks for."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from curate.errors import CurateError

RAY_INIT_DEFAULTS = dict(  # a local Ray for one job on this machine
    include_dashboard=False,  # the dashboard costs ~1 s and a port; ask with ray_init={...}
    log_to_driver=True,  # stage prints and tracebacks reach the user's terminal
    configure_logging=False,  # leave the user's logging alone
)


class ResourceError(CurateError):
    """The pipeline's workers can never all be placed on this cluster."""


@dataclass
class Demand:
    """What one worker group asks for: `replicas` actors of `per_actor` resources each."""

    name: str
    replicas: int
    per_actor: dict[str, float]


def connect(address: str | None, ray_init: dict | None) -> bool:
    """Use the running Ray, join `address` (or RAY_ADDRESS), or start a local one.
    Returns True if this call started Ray."""
    import ray

    if ray.is_initialized():
        return False
    opts = dict(RAY_INIT_DEFAULTS, **(ray_init or {}))
    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        opts.pop("include_dashboard", None)
        try:
            ray.init(address=address, **opts)
        except ConnectionError as exc:
            raise CurateError(f"no Ray cluster at {address!r} ({exc}); start one there with `ray start "
                              "--head`, or leave the address out to run on a local Ray") from None
    else:
        # Local workers start with this interpreter but not with this process's sys.path: give
        # them the same path so stages defined in the user's own modules import there too.
        env = dict(opts.pop("runtime_env", None) or {})
        env_vars = dict(env.get("env_vars", {}))
        env_vars.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
        # "local": a private Ray for this process, never a cluster some earlier `ray start`
        # recorded on the machine (join one with address="auto" or HOST:PORT).
        ray.init(address="local", runtime_env=dict(env, env_vars=env_vars), **opts)
    return True


def check(demands: list[Demand], nodes: list[dict[str, float]]) -> None:
    """Raise ResourceError unless every actor of every group fits on the nodes at once
    (first-fit decreasing over each node's total resources). The error names each resource
    that is short, the pools that ask for it, and the fix for that resource."""
    free = [dict(n) for n in nodes]
    actors = sorted(((d, i) for d in demands for i in range(d.replicas)),
                    key=lambda a: -sum(a[0].per_actor.values()))
    for d, _ in actors:
        node = next((n for n in free if _fits(d.per_actor, n)), None)
        if node is None:
            break
        for k, v in d.per_actor.items():
            node[k] = node.get(k, 0.0) - v
    else:
        return
    raise ResourceError("the pipeline can never be scheduled on this Ray cluster: "
                        + "; ".join(_shortages(demands, nodes)))


def _fits(per_actor: dict[str, float], node: dict[str, float]) -> bool:
    return all(node.get(k, 0.0) + 1e-9 >= v for k, v in per_actor.items())


def _shortages(demands: list[Demand], nodes: list[dict[str, float]]) -> list[str]:
    """Why the demands cannot be placed, one line per short resource, each with its fix."""
    asked = sorted({k for d in demands for k in d.per_actor})
    biggest = {k: max((n.get(k, 0.0) for n in nodes), default=0.0) for k in asked}
    have = {k: sum(n.get(k, 0.0) for n in nodes) for k in asked}
    out = []
    for d in demands:  # one worker that no node can hold
        for k, v in sorted(d.per_actor.items()):
            if v > biggest[k] + 1e-9:
                where = "no node has any" if biggest[k] == 0 else f"the largest node has {biggest[k]:g}"
                out.append(f"each worker of {d.name} asks for {v:g} {k}, but {where}; {_fix(k, have[k], True)}")
    if out:
        return out
    for k in asked:  # every worker fits somewhere, but not all at once
        users = [d for d in demands if d.per_actor.get(k)]
        need = sum(d.per_actor[k] * d.replicas for d in users)
        if need > have[k] + 1e-9:
            parts = ", ".join(f"{d.name}: {d.replicas} x {d.per_actor[k]:g}" for d in users)
            out.append(f"the workers ask for {need:g} {k} in all ({parts}), but the cluster has "
                       f"{have[k]:g}; {_fix(k, have[k], False)}")
    return out or ["the workers' requests fit the cluster's totals but not its nodes one by one ("
                   + "; ".join(f"{d.name}: {d.replicas} x {_fmt(d.per_actor)}" for d in demands)
                   + "); lower num_cpus or replicas, or connect to a cluster with larger nodes"]


def _fix(resource: str, have: float, per_worker: bool) -> str:
    """How to fix a shortage of one resource."""
    if resource == "CPU":
        return ("every worker holds its CPUs for the whole run: lower num_cpus (fractions such as "
                "num_cpus=0.25 are fine)" + ("" if per_worker else " or replicas")
                + ", or connect to a larger cluster with address=...")
    if resource == "GPU":
        if have == 0:
            return ("this cluster has no GPU: set num_gpus=0 to run the stage on CPU (if its model can), "
                    "or connect to a cluster with GPUs with address=...")
        return ("lower num_gpus (fractions such as num_gpus=0.5 share a GPU)" + ("" if per_worker else " or replicas")
                + ", or connect to a cluster with more GPUs")
    if resource.startswith("accelerator_type:"):
        kind = resource.partition(":")[2]
        return (f"no node has a {kind} accelerator: set accelerator_type to one the cluster has (or None), "
                "or connect to a cluster with that accelerator")
    if resource == "memory":
        return "lower memory= (bytes per worker)" + ("" if per_worker else " or replicas")
    if have == 0:
        return (f"no node offers the custom resource {resource!r}: start nodes with "
                f"`ray start --resources '{{\"{resource}\": 1}}'`, or remove it from resources=")
    return f"lower resources={{{resource!r}: ...}}" + ("" if per_worker else " or replicas") + ", or add nodes that offer it"


def _fmt(res: dict[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in sorted(res.items()) if v) or "nothing"


def node_resources() -> list[dict[str, float]]:
    """Total resources of each alive node."""
    import ray

    return [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]
