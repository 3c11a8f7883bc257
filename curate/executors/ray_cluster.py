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
    if address:
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
        ray.init(runtime_env=dict(env, env_vars=env_vars), **opts)
    return True


def check(demands: list[Demand], nodes: list[dict[str, float]]) -> None:
    """Raise ResourceError unless every actor of every group fits on the nodes at once
    (first-fit decreasing over each node's total resources)."""
    problems = []
    free = [dict(n) for n in nodes]
    actors = sorted(((d, i) for d in demands for i in range(d.replicas)),
                    key=lambda a: -sum(a[0].per_actor.values()))
    for d, _ in actors:
        node = next((n for n in free if all(n.get(k, 0.0) + 1e-9 >= v for k, v in d.per_actor.items())), None)
        if node is None:
            if not any(all(n.get(k, 0.0) + 1e-9 >= v for k, v in d.per_actor.items()) for n in nodes):
                problems.append(f"one worker of {d.name} needs {_fmt(d.per_actor)}, more than any node has "
                                f"({'; '.join(_fmt(n) for n in nodes) or 'no nodes'})")
            break
        for k, v in d.per_actor.items():
            node[k] = node.get(k, 0.0) - v
    else:
        return
    if not problems:
        total = {}
        for d in demands:
            for k, v in d.per_actor.items():
                total[k] = total.get(k, 0.0) + v * d.replicas
        have = {k: sum(n.get(k, 0.0) for n in nodes) for k in total}
        short = [k for k in total if total[k] > have[k] + 1e-9] or list(total)
        problems.append("the pipeline's workers hold " + ", ".join(f"{total[k]:g} {k}" for k in short)
                        + " but the cluster has " + ", ".join(f"{have[k]:g}" for k in short) + " ("
                        + "; ".join(f"{d.name}: {d.replicas} x {_fmt(d.per_actor)}" for d in demands) + ")")
    raise ResourceError(
        "the pipeline can never be scheduled on this Ray cluster: " + "; ".join(problems)
        + ". Every worker holds its resources for the whole run, so lower num_cpus (fractions such "
        "as num_cpus=0.25 are fine) or replicas, or connect to a larger cluster with address=...")


def _fmt(res: dict[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in sorted(res.items()) if v) or "nothing"


def node_resources() -> list[dict[str, float]]:
    """Total resources of each alive node."""
    import ray

    return [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]
