"""What a run measured: per Call, per pool, timings and the batch timeline (RunMetrics)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from curate.core.plan import Plan
from curate.memory import peak_rss


@dataclass(frozen=True)
class RunStats:
    """What the Driver measured over a run (`Driver.stats()`): `collect` reports it."""

    wall_s: float  # from the Driver's start to `stats()`
    startup_s: float  # executor start-up (Ray: until the first actor answered and work began)
    workers_ready_s: float | None  # Ray: until every actor it started answered (None: the run ended first)
    first_root_s: float | None  # None: no root finished
    roots: int  # roots written to the sink by this run
    skipped: int  # inputs committed by an earlier run, passed over
    restarted_roots: int  # roots run again after a payload they needed was lost with a node
    timeline: tuple = ()  # (call id, start_s, seconds, items, worker) per batch
    writer_peak_rss: int = 0  # bytes: the Parquet writer actor's peak (Ray; 0: none, or it is the driver)
    payload_files: dict = field(default_factory=dict)  # the sink's payload files: who wrote how many, how many bytes


@dataclass
class CallMetrics:
    """One Call: its batches, the items that entered the stage, fill, retries, suppressions."""

    name: str
    pool: str
    batch_size: int
    batches: int
    items: int
    retries: int
    suppressed: int
    failed: int
    dropped: int
    busy_s: float

    @property
    def batch_fill(self) -> float:
        """Mean batch size over batch_size (1.0: every batch was full)."""
        return self.items / (self.batches * self.batch_size) if self.batches else 0.0


@dataclass
class PoolMetrics:
    """One physical pool: per-worker batches and busy seconds."""

    name: str
    replicas: int
    calls: list[str]
    worker_batches: list[int]
    worker_busy_s: list[float]
    worker_peak_rss: list[int] = field(default_factory=list)  # bytes per worker process (Ray; 0: unknown)
    # bytes per worker: its largest private memory (RssAnon) at a call's end; worker_peak_rss
    # also counts the shared object-store pages the process touched
    worker_peak_private: list[int] = field(default_factory=list)


@dataclass
class RunMetrics:
    """Everything measured in one run; `summary()` prints it as a table."""

    calls: dict[str, CallMetrics]
    pools: dict[str, PoolMetrics]
    wall_s: float
    first_root_s: float | None
    roots: int
    stale_reports: int
    restarted_roots: int = 0  # roots run again from their input after a payload was lost with a node
    startup_s: float = 0.0  # executor start-up within wall_s (Ray: until the first actor answered and work began)
    workers_ready_s: float | None = None  # Ray: until every actor the run started answered; the pools' later actors start while the first work
    driver_peak_rss: int = 0  # bytes: the driver process's peak resident memory (so far, at the run's end)
    writer_peak_rss: int = 0  # bytes: the Parquet writer actor's peak (Ray; 0: none, or it is the driver)
    # payload files (`files=`) of the committed rows: staged by the workers that made them, and
    # written by the sink's writer (outputs whose port is not a Call's own value: see Pipeline.output)
    files_written_by_workers: int = 0
    file_bytes_by_workers: int = 0
    files_through_writer: int = 0
    file_bytes_through_writer: int = 0
    timeline: list = field(default_factory=list)  # (call, start_s, seconds, items, worker) per batch

    @property
    def execution_s(self) -> float:
        """Wall time once work began (Ray: the first actor answered; the others join as they come up)."""
        return self.wall_s - self.startup_s

    @property
    def grains(self) -> int:
        """Grains that entered a stage, over all Calls (retries included)."""
        return sum(c.items for c in self.calls.values())

    def to_dict(self) -> dict:
        """Plain JSON-able form (what `metrics.json` holds and the run report reads)."""
        return {
            "wall_s": self.wall_s, "startup_s": self.startup_s, "workers_ready_s": self.workers_ready_s,
            "first_root_s": self.first_root_s, "roots": self.roots, "stale_reports": self.stale_reports, "restarted_roots": self.restarted_roots,
            "grains": self.grains,
            "driver_peak_rss": self.driver_peak_rss, "writer_peak_rss": self.writer_peak_rss,
            **{k: getattr(self, k) for k in ("files_written_by_workers", "file_bytes_by_workers", "files_through_writer",
                                             "file_bytes_through_writer")},
            "calls": {n: dict(asdict(c), batch_fill=c.batch_fill) for n, c in self.calls.items()},
            "pools": {n: asdict(p) for n, p in self.pools.items()},
            "timeline": [list(e) for e in self.timeline],
        }

    def summary(self) -> str:
        first = "-" if self.first_root_s is None else f"{self.first_root_s:.3f}s"
        ready = "" if self.workers_ready_s is None else f", last worker up at {self.workers_ready_s:.3f}s"
        lines = [f"{self.roots} roots in {self.wall_s:.3f}s (start-up {self.startup_s:.3f}s{ready}); "
                 f"first root done at {first}"
                 + (f"; {self.restarted_roots} root(s) run again after payloads were lost with a node"
                    if self.restarted_roots else ""),
                 f"{'call':<24}{'batches':>8}{'items':>8}{'fill':>6}{'retries':>8}{'suppr':>6}{'failed':>7}{'busy_s':>8}"]
        for c in self.calls.values():
            lines.append(f"{c.name:<24}{c.batches:>8}{c.items:>8}{c.batch_fill:>6.2f}{c.retries:>8}"
                         f"{c.suppressed:>6}{c.failed:>7}{c.busy_s:>8.3f}")
        workers = {n: (max(p.worker_peak_rss), max(p.worker_peak_private, default=0))
                   for n, p in self.pools.items() if any(p.worker_peak_rss)}
        if self.driver_peak_rss:
            lines.append(f"peak memory: driver {self.driver_peak_rss / 2**20:.0f} MiB"
                         + (f"; Parquet writer {self.writer_peak_rss / 2**20:.0f} MiB" if self.writer_peak_rss else "")
                         + ("" if not workers else "; workers " + ", ".join(
                             f"{n} {v / 2**20:.0f} MiB" + (f" (private {u / 2**20:.0f})" if u else "")
                             for n, (v, u) in workers.items())))
        if self.files_written_by_workers or self.files_through_writer:
            lines.append(payload_files_line(self.to_dict()))
        return "\n".join(lines)


def payload_files_line(m: dict) -> str:
    """Who wrote the payload files, from `RunMetrics.to_dict()` (or metrics.json)."""
    return (f"payload files: {m.get('files_written_by_workers', 0)} written by the workers that made them "
            f"({m.get('file_bytes_by_workers', 0) / 2**20:.1f} MiB), {m.get('files_through_writer', 0)} through "
            f"the Parquet writer ({m.get('file_bytes_through_writer', 0) / 2**20:.1f} MiB)")


def collect(plan: Plan, sched, stats: RunStats, pools_run: list) -> RunMetrics:
    """RunMetrics from the scheduler's counters, the executor's pools and the driver's RunStats."""
    busy = [0.0] * len(plan.calls)
    pools = {}
    for p in pools_run:
        for s in p.workers:
            for c, t in s.calls_busy_s.items():
                busy[c] += t
        pools[p.name] = PoolMetrics(p.name, len(p.workers), [plan.calls[c].name for c in p.calls],
                                    [s.batches for s in p.workers], [s.busy_s for s in p.workers],
                                    [s.peak_rss for s in p.workers], [s.peak_private for s in p.workers])
    calls = {}
    for c in plan.calls:
        k = sched.counters[c.id]
        calls[c.name] = CallMetrics(c.name, plan.pools[c.pool].name, c.batch_size, k.batches, k.items,
                                    k.retries, k.suppressed, k.failed, k.dropped, busy[c.id])
    timeline = [(plan.calls[c].name, start, secs, n, worker) for c, start, secs, n, worker in stats.timeline]
    return RunMetrics(calls, pools, stats.wall_s, stats.first_root_s, stats.roots, sched.stale_reports,
                      restarted_roots=stats.restarted_roots, startup_s=stats.startup_s,
                      workers_ready_s=stats.workers_ready_s, timeline=timeline, driver_peak_rss=peak_rss(),
                      writer_peak_rss=stats.writer_peak_rss, **stats.payload_files)
