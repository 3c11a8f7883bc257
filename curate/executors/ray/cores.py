"""Core slots: the Ray executor starts no more CPU work on a node at once than the node has cores.

Pools ask Ray for fractional CPUs (`num_cpus: 0.25` by default) so that many actors fit on a
machine and no pool starves the ones that feed it. But an actor that runs a call uses what the
call uses: a decoder or an OCR model keeps a whole core busy. Left alone, a small machine with
many busy actors time-slices them, every switch evicts the caches the other call had warmed, and
the same work takes more CPU-seconds than it does in one process (docs/benchmarks.md has the
figures).

So each worker reports, per batch, how many cores its call kept busy: CPU-seconds over the time
it was on a core or could have been (wall time minus the time it waited in the kernel's run
queue for a core: /proc/thread-self/schedstat), so a call slowed by contention still measures
what it would use alone. The driver keeps a running estimate per Call (a Call not yet measured
counts as one core), and an idle actor of a CPU pool (no GPUs asked) starts a call only while
the estimates of the calls running on its node, plus this one, fit the node's cores times
RUNNING_PER_CORE. A call that waits on something else (a sleeping stand-in, an HTTP model
server, a GPU) measures near zero and is never held back. GPU pools are not counted. A busy
actor keeps its core while it has work: its next call still ships ahead of time (handing the
core back after every call cost more than it saved). A freed core goes to the idle pool nearest
the outputs."""

from __future__ import annotations

import os
import time

RUNNING_PER_CORE = 1.5  # a little over one call per core: one call's hand-off overlaps another's compute
SMOOTHING = 0.3  # weight of the newest batch in a Call's estimate
UNMEASURED = 1.0  # cores a Call counts for before its first batch reports


def usable_cores() -> float:
    """The cores this process may run on: its CPU affinity, capped by a cgroup (v2 or v1) CPU
    quota where the container sets one."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = float(os.cpu_count() or 1)
    quota = _cgroup_quota()
    return min(cores, quota) if quota else cores


def _cgroup_quota() -> float | None:
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            q, period = f.read().split()[:2]
        return None if q == "max" else max(1.0, int(q) / int(period))
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            q = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
        return None if q <= 0 else max(1.0, q / period)
    except (OSError, ValueError):
        return None


def _run_queue_wait() -> float:
    """Seconds this thread has waited for a core so far (Linux schedstat; 0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class CoreMeter:
    """Around one batch on a worker: `cores()` is the cores its call kept busy."""

    def __init__(self):
        self.t, self.cpu, self.wait = time.perf_counter(), time.process_time(), _run_queue_wait()

    def read(self) -> tuple[float, float]:
        """(seconds since the meter started, cores kept busy meanwhile)."""
        wall = time.perf_counter() - self.t
        ran = wall - (_run_queue_wait() - self.wait)
        return wall, max(0.0, time.process_time() - self.cpu) / max(ran, 1e-3)

    def cores(self) -> float:
        return self.read()[1]


class CoreSlots:
    """The driver's side: per-Call estimates, per-node caps, and the load of running calls."""

    def __init__(self, per_core: float = RUNNING_PER_CORE):
        self.per_core = per_core
        self.estimate: dict[int, float] = {}  # call -> cores one of its calls keeps busy
        self.cap: dict[str, float] = {}  # node id -> cores x per_core

    def add(self, call: int, cores: float) -> None:
        old = self.estimate.get(call)
        self.estimate[call] = cores if old is None else old + SMOOTHING * (cores - old)

    def cores_of(self, call: int) -> float:
        return self.estimate.get(call, UNMEASURED)

    def place(self, replica, node: str, cores: float, node_cpus: float | None) -> None:
        """A replica's actor answered from `node`, which has `cores` (and Ray's CPU count for it)."""
        replica.node, replica.cores = node, cores
        if node in self.cap and node_cpus is None:  # known node: its cap stands
            return
        usable = min(cores, node_cpus) if node_cpus else cores
        self.cap[node] = max(1.0, usable) * self.per_core

    def load(self, pools: list) -> dict[str | None, float]:
        """Per node: the estimated cores of the calls CPU pools' replicas are running now."""
        out: dict[str | None, float] = {}
        for g in pools:
            if g.resources.uses_gpu:
                continue
            for r in g.workers:
                if (head := r.running()) is not None:
                    out[r.node] = out.get(r.node, 0.0) + self.cores_of(head.call)
        return out

    def fits(self, load: float, node: str | None, cores: float) -> bool:
        """May a call of `cores` start on `node`, where running calls already hold `load`? An
        empty node always takes one, however large."""
        cap = self.cap.get(node) if node is not None else None
        return cap is None or load <= 0.0 or load + cores <= cap + 1e-9
