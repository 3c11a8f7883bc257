"""Connecting to Ray and checking, before any actor starts, that the cluster can ever hold
every worker the pipeline asks for."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

from curate.errors import ClusterLostError, CurateError

RAY_INIT_DEFAULTS = dict(  # a local Ray for one job on this machine
    include_dashboard=False,  # the dashboard costs ~1 s and a port; ask with ray_init={...}
    log_to_driver=True,  # stage prints and tracebacks reach the user's terminal
    configure_logging=False,  # leave the user's logging alone
)


PROBE_TIMEOUT_S = 3.0  # how long a TCP probe of a cluster's GCS port may take
WATCH_EVERY_S = 1.0  # how often a run checks that its cluster's GCS still answers
CLUSTER_LOST_S = 15.0  # GCS silent this long: the cluster is gone (Ray's core gives up after 60 s)


class ResourceError(CurateError):
    """The pipeline's workers can never all be placed on this cluster."""


@dataclass(frozen=True)
class ClusterInfo:
    """Which Ray a run uses: its GCS address, how the process got it ("private": started by
    curate for this process; "joined": a cluster given by address; "existing": a Ray the
    program initialised itself), its alive nodes and their total resources."""

    address: str
    how: str
    nodes: int
    resources: dict = field(default_factory=dict)

    def describe(self) -> str:
        what = {"private": "a private local Ray", "joined": "the Ray cluster",
                "existing": "the Ray this process had initialised"}[self.how]
        res = ", ".join(f"{self.resources.get(k, 0):g} {k}" for k in ("CPU", "GPU"))
        mem = self.resources.get("memory", 0) / 2**30
        return (f"{what} at {self.address} ({self.nodes} node{'s' if self.nodes != 1 else ''}: "
                f"{res}, {mem:.1f} GiB memory)")

    def lost(self, silent: float) -> ClusterLostError:
        return ClusterLostError(
            f"lost the Ray cluster: {self.describe()} has not answered for {silent:.0f} s (stopped, "
            "crashed or unreachable); the run stops here, every input committed so far stays committed, and "
            "running it again with --resume (resume=True) on a live cluster continues it")

    def to_dict(self) -> dict:
        return {"address": self.address, "how": self.how, "nodes": self.nodes,
                "resources": {k: v for k, v in sorted(self.resources.items()) if not k.startswith("node:")}}


def cluster_info(how: str) -> ClusterInfo:
    """What the connected Ray is (called once, at a run's start)."""
    import ray

    alive = [n for n in ray.nodes() if n.get("Alive")]
    total: dict[str, float] = {}
    for n in alive:
        for k, v in n["Resources"].items():
            total[k] = total.get(k, 0.0) + v
    return ClusterInfo(ray.get_runtime_context().gcs_address, how, len(alive), total)


@dataclass
class Demand:
    """What one worker pool asks for: `replicas` actors of `per_actor` resources each."""

    name: str
    replicas: int
    per_actor: dict[str, float]


_how: str | None = None  # how connect() got the Ray this process uses ("private" or "joined")


def connect(address: str | None, ray_init: dict | None) -> ClusterInfo:
    """Use the running Ray, join `address` (or RAY_ADDRESS), or start a private local one.
    Returns which Ray the run uses."""
    global _how
    import ray

    if ray.is_initialized():
        return cluster_info(_how or "existing")
    opts = dict(RAY_INIT_DEFAULTS, **(ray_init or {}))
    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        opts.pop("include_dashboard", None)
        target = preflight(address)
        try:
            ray.init(address=target, **opts)
        except ConnectionError as exc:
            raise CurateError(f"no Ray cluster at {address!r} ({exc}); start one there with `ray start "
                              "--head`, or use --address local (address='local') for a private local Ray") from None
        _how = "joined"
    else:
        # Local workers start with this interpreter but not with this process's sys.path: give
        # them the same path so stages defined in the user's own modules import there too.
        env = dict(opts.pop("runtime_env", None) or {})
        env_vars = dict(env.get("env_vars", {}))
        env_vars.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))
        # "local": a private Ray for this process, never a cluster some earlier `ray start`
        # recorded on the machine (join one with address="auto" or HOST:PORT).
        ray.init(address="local", runtime_env=dict(env, env_vars=env_vars), **opts)
        _how = "private"
    return cluster_info(_how)


def preflight(address: str) -> str:
    """Check in seconds that a Ray cluster answers at `address` ("auto": the one `ray start`
    recorded on this machine) and will accept this process, before `ray.init` spends 20 s to
    minutes retrying; returns the address to join."""
    where = ""
    if address == "auto":
        from ray._private.services import find_bootstrap_address

        recorded = find_bootstrap_address(None)
        if not recorded:
            raise CurateError("address='auto' joins the cluster that `ray start` recorded on this machine, and "
                              "none is recorded; start one with `ray start --head`, pass its HOST:PORT, or use "
                              "--address local (address='local') for a private local Ray")
        address, where = recorded, " (recorded by an earlier `ray start` on this machine)"
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise CurateError(f"Ray address {address!r} is not HOST:PORT; pass e.g. 10.0.0.1:6379, 'auto' or 'local'")
    if (exc := _unreachable((host, int(port)))) is not None:
        stale = "; if that cluster was stopped, `ray stop` clears the stale record" if where else ""
        raise CurateError(f"no Ray cluster answers at {address}{where}: {exc.strerror or exc}{stale}; start one "
                          f"with `ray start --head --port={port}`, pass the address of a running one, or use "
                          "--address local (address='local') for a private local Ray") from None
    _check_token(address)
    return address


def _unreachable(target: tuple[str, int]) -> OSError | None:
    """Why a TCP connection to a GCS port fails (None: it accepts), within PROBE_TIMEOUT_S."""
    try:
        socket.create_connection(target, timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        return exc
    return None


def _refused(address: str) -> bool:
    """Whether the cluster's GCS refuses this process's credentials."""
    from ray._raylet import GcsClient

    try:
        GcsClient(address=address)
    except Exception as exc:  # noqa: BLE001 - only the authentication refusal is ours to explain
        return type(exc).__name__ == "AuthenticationError"
    return False


def _check_token(address: str) -> None:
    """A cluster with token authentication (`RAY_AUTH_MODE=token`, which `ray start` also turns on
    by itself when ~/.ray/auth_token exists, as Ray 2.60 writes one at every local `ray.init`)
    refuses a process without its token, and `ray.init` reports that as "no cluster" after 20 s
    of warnings. With RAY_AUTH_MODE unset and a token at hand (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH,
    ~/.ray/auth_token), use it, as Ray does for address="auto"; otherwise say what to set."""
    if not _refused(address):
        return
    mode = os.environ.get("RAY_AUTH_MODE")
    if mode is None:
        from ray._private.authentication.authentication_token_setup import _enable_token_auth
        from ray._raylet import AuthenticationTokenLoader

        if AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
            _enable_token_auth()  # this process (and the workers it starts) now present the token
            if not _refused(address):
                return
    raise CurateError(f"the Ray cluster at {address} uses token authentication and refused this "
                      f"process (RAY_AUTH_MODE is {mode or 'unset'!r} here, and no token it accepts was found): set "
                      "RAY_AUTH_MODE=token, and the cluster's token in RAY_AUTH_TOKEN, in a file named by "
                      "RAY_AUTH_TOKEN_PATH, or in ~/.ray/auth_token (`ray get-auth-token` on the head node "
                      "prints it)")


class GcsWatch:
    """Checks in a thread, every WATCH_EVERY_S, that the cluster's GCS still accepts
    connections; `silent_s()` says for how long it has not. The run's loop reads it and ends
    with ClusterLostError before Ray's core would kill the process without a word; `on_lost`
    reaches a run blocked inside a call into Ray."""

    def __init__(self, address: str, on_lost=None):
        host, _, port = address.rpartition(":")
        self._target = (host, int(port))
        self._on_lost = on_lost  # called once, from the thread, when silent_s() passes CLUSTER_LOST_S
        self._last_ok = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="curate-gcs-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(WATCH_EVERY_S):
            if not self.answers() and self.silent_s() > CLUSTER_LOST_S and self._on_lost is not None:
                self._on_lost(self.silent_s())  # the run's thread may be blocked in a call into Ray
                return

    def answers(self) -> bool:
        """Probe now (the caller waits up to PROBE_TIMEOUT_S)."""
        if _unreachable(self._target) is not None:
            return False
        self._last_ok = time.monotonic()
        return True

    def gone_within(self, seconds: float) -> bool:
        """After a Ray error: whether the GCS stops answering within `seconds` (a cluster being
        stopped loses its workers a moment before its GCS)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if not self.answers():
                return True
            self._stop.wait(WATCH_EVERY_S / 2)
        return False

    def silent_s(self) -> float:
        return time.monotonic() - self._last_ok

    def close(self) -> None:
        self._stop.set()


def check(demands: list[Demand], nodes: list[dict[str, float]]) -> None:
    """Raise ResourceError unless every actor of every pool fits on the nodes at once
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


def node_cpus() -> dict[str, float | None]:
    """Ray's CPU count of each alive node (what the cluster was told it has), by node id."""
    import ray

    return {n["NodeID"]: n.get("Resources", {}).get("CPU") for n in ray.nodes() if n.get("Alive")}


SHUTDOWN_WAIT_S = 10.0  # how long a lost cluster's clean-up may take before the process moves on


def forget_lost_cluster() -> None:
    """After the cluster went away: disconnect Ray without letting its shutdown (which may wait
    for the dead cluster) hold the process."""
    import ray

    t = threading.Thread(target=ray.shutdown, name="curate-ray-shutdown", daemon=True)
    t.start()
    t.join(SHUTDOWN_WAIT_S)
