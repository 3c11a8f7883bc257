"""What both executors measure and report: each Call's seconds per batch (`CallCosts`, which
sizes bundles), each worker's batches and busy time (`WorkerStats`), and each worker pool as it
ran (`PoolReport`, which `curate.metrics` reads)."""

from __future__ import annotations

from dataclasses import dataclass, field


class CallCosts:
    """A running estimate of each Call's seconds per batch, and from it how many batches one
    hand-off to a worker should carry: about `target_s` of work, at most `max_bundle`, never
    more than `want` (the worker's share of what is ready), one for a Call with a time limit
    (the limit is per batch, so a timeout fails only that batch)."""

    SMOOTHING = 0.3  # weight of the newest batch in the running estimate

    def __init__(self, target_s: float, max_bundle: int = 64):
        self.target_s, self.max_bundle = target_s, max_bundle
        self.seconds: dict[int, float] = {}

    def add(self, call: int, seconds: float) -> None:
        """Fold one batch's seconds into its Call's estimate."""
        old = self.seconds.get(call)
        self.seconds[call] = seconds if old is None else old + self.SMOOTHING * (seconds - old)

    def bundle(self, spec, want: int) -> int:
        """How many batches of Call `spec` one hand-off carries."""
        if spec.timeout_s:
            return 1
        per_batch = max(self.seconds.get(spec.id, 1.0), 1e-6)  # unknown: one batch, until measured
        return max(1, min(want, self.max_bundle, int(self.target_s / per_batch)))


@dataclass
class WorkerStats:
    """One worker (thread or actor): batches run and seconds busy, per Call."""

    batches: int = 0
    busy_s: float = 0.0
    calls_busy_s: dict[int, float] = field(default_factory=dict)
    peak_rss: int = 0  # bytes: the peak resident memory of its process (0: not measured)
    peak_private: int = 0  # bytes: its largest private memory at a batch's end (0: not measured)

    def add(self, call: int, seconds: float) -> None:
        """Count one batch of `call` that took `seconds`."""
        self.batches += 1
        self.busy_s += seconds
        self.calls_busy_s[call] = self.calls_busy_s.get(call, 0.0) + seconds


@dataclass
class PoolReport:
    """A worker pool (`curate.executors.base.WorkerPool`: the workers an executor ran for one
    or more of the plan's Pools) as it ran: its Calls and per-worker statistics."""

    name: str
    calls: list[int]
    workers: list[WorkerStats]
