"""The run's driver (not Ray's driver process): what every executor shares around the pure
scheduler: pulling input windows from a stream, choosing which Call a free worker serves, and
handing finished roots to a sink. The Driver's contract (what run() gives it, what executors
may call, what it gives back) is in its docstring."""

from __future__ import annotations

import sys
import threading
import time
from typing import AbstractSet, Any, Callable, Iterable, Iterator

from curate import defaults
from curate.core.outcome import DROPPED, PRESENT, Item, Status
from curate.core.plan import Plan
from curate.core.scheduler import Scheduler
from curate.errors import CurateError, EngineError
from curate.keys import IndexDigests, RootKeys, digest_hex
from curate.metrics import RunStats
from curate.progress import Progress
from curate.sinks import MemorySink, Sink  # noqa: F401 - MemorySink: run() and tests import it here
from curate.value_store import LocalStore, ValueStore

_END = object()
MAX_ROOT_RESTARTS = 3  # a root that lost payloads with dead nodes this often is written FAILED
HEARTBEAT_S = 0.5  # longest an executor waits for reports before the driver looks up: progress
#                    lines, timed flushes and Ctrl-C are served even while every worker hangs


class Driver:
    """Feeds input windows to a Scheduler and drains finished roots into a sink.

    Given at construction (by run(); every keyword after `sink` has a default): `skip`, the
    root keys committed by an earlier run (resume), passed over; `committed`, the digests of
    its index-keyed inputs, so a changed input under a committed index is refused;
    `progress`, the live progress lines to update at every heartbeat; `on_start(cluster)`,
    called once the workers are up (the cluster is the Ray executor's ClusterInfo, or None).

    What an executor may call (the whole executor-facing API; nothing else):
    `plan`, `sched` (the Scheduler: reserve/complete/fail/requeue/ready/stale_reports),
    `file_staging` (what workers hand to `FileStaging.stage` after each batch, or None);
    `use_cluster(c)` and `plan_replicas(pool, n)` before the loop; `started_workers(store)`
    once its workers are up and `workers_ready()` once every one answered; then a loop on
    `step()`, its own dispatch (`next_call(pool, idle)`, `downstream_first(calls)`) and
    reports, blocking at most `wait_s()` at a time, with `record_batch(...)` per batch and
    `idle_done()` whenever nothing is in flight; `cluster_lost(error, wake)` from any thread
    when its cluster is gone, and `lost` (read only) to see whether it is.

    What run() uses besides: `interrupt()` for a Ctrl-C, `wake_with(fn)` to say how to
    interrupt the run's thread where it blocks, and `stats()`, the RunStats that
    curate.metrics reports. `drain()`, `heartbeat()` and `admit()`, the parts of `step()`,
    serve tests that drive a Driver by hand. Everything else is read only (`sink`, `total`,
    `roots_done`, `skipped`, `restarted_roots`, `interrupted`, `stopping`) or private."""

    def __init__(self, plan: Plan, scheduler: Scheduler, inputs: Iterable[Any], *,
                 input_batch_size: int, key: Callable[[Any], str] | None, sink: Sink,
                 skip: AbstractSet[str] = frozenset(), committed: IndexDigests | None = None,
                 progress: Progress | None = None, on_start: Callable[[Any], None] | None = None):
        if not isinstance(input_batch_size, int) or input_batch_size < 1:
            raise CurateError(f"input_batch_size={input_batch_size!r}; use a whole number >= 1 (roots per input window)")
        self._plan, self._sched, self._sink = plan, scheduler, sink
        try:
            self._inputs = iter(inputs)
        except TypeError:
            raise CurateError(f"inputs must be a list or an iterator of inputs, not "
                              f"{type(inputs).__name__}; wrap a single input as [x]") from None
        self._total = input_count(inputs)
        self._window_size = input_batch_size
        self._key = RootKeys(key)
        self._index = 0
        self._skip = skip
        self._committed = committed if committed is not None else IndexDigests()
        self._progress = progress
        self._on_start = on_start
        self._input_digests: dict[str, str] | None = getattr(sink, "input_digests", None)  # for the sink
        staging = getattr(sink, "file_staging", None)  # a sink whose payload files workers may write
        self._file_staging = staging(plan) if staging is not None else None
        self._store: ValueStore = LocalStore()
        self._cluster = None
        self._starting = True  # until the workers are up: nothing admitted yet, a Ctrl-C stops at once
        self._interrupted = False  # a Ctrl-C came; the next heartbeat flushes and stops
        self._stopping = False  # a Ctrl-C is ending the run: its clean-up must finish
        self._lost: Exception | None = None  # the executor's cluster went away (ClusterLostError)
        self._wake: Callable[[], None] | None = None  # interrupts the run's thread where it blocks
        self._lost_lock = threading.Lock()  # wake is never called after wake_with(None) returned
        self._started = time.perf_counter()
        self._started_wall = time.time()
        self._timeline: list[tuple[int, float, float, int, str]] = []  # (call, start_s, seconds, items, worker)
        self._first_root_s: float | None = None
        self._startup_s = 0.0  # executor start-up (Ray: until the first actor answered and work began)
        self._workers_ready_s: float | None = None  # Ray: until every actor it started answered (None: the run ended first)
        self._roots_done = self._skipped = 0
        self._restarted_roots = 0  # roots run again after a payload they needed was lost with a node
        self._restarts: dict[str, int] = {}  # root key -> times it was run again
        self._raw: dict[int, list] = {}  # window id -> its roots' inputs, for running a root again
        self._outputs = [(name, plan.output_slot(name), _chain(plan, plan.output_slot(name)))
                         for name in plan.outputs]
        # downstream-first: a free worker serves the Call nearest the outputs, so parents finish
        self._pool_calls = [self.downstream_first(p.calls) for p in plan.pools]

    # ---- read only ----------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        """The compiled plan the run executes."""
        return self._plan

    @property
    def sched(self) -> Scheduler:
        """The run's Scheduler (executors reserve, complete, fail and requeue batches on it)."""
        return self._sched

    @property
    def file_staging(self):
        """What workers need to write the payload files of the sink's outputs themselves
        (`curate.io.staged_files.FileStaging`), or None: the sink's writer writes them."""
        return self._file_staging

    @property
    def sink(self) -> Sink:
        """Where finished roots go."""
        return self._sink

    @property
    def lost(self) -> Exception | None:
        """The error the run must end with, once the executor's cluster is gone (else None)."""
        return self._lost

    @property
    def total(self) -> int | None:
        """How many inputs the run has (None: an iterator, not known ahead)."""
        return self._total

    @property
    def roots_done(self) -> int:
        """Roots written to the sink so far by this run."""
        return self._roots_done

    @property
    def skipped(self) -> int:
        """Inputs passed over so far: committed by an earlier run (`skip`)."""
        return self._skipped

    @property
    def restarted_roots(self) -> int:
        """Roots run again so far after a payload they needed was lost with a node."""
        return self._restarted_roots

    @property
    def interrupted(self) -> bool:
        """A Ctrl-C came (the run's end says "interrupted")."""
        return self._interrupted

    @property
    def stopping(self) -> bool:
        """A Ctrl-C is ending the run: further ones are ignored while its clean-up finishes."""
        return self._stopping

    # ---- for run() ----------------------------------------------------------------------
    def interrupt(self) -> None:
        """A Ctrl-C. Until the workers are up nothing is admitted, so the run stops at once
        (KeyboardInterrupt); while it runs, the first one asks the next heartbeat to commit
        what finished and stop, and a second one stops at once; once the run is stopping,
        more are ignored, so that its clean-up finishes."""
        if self._stopping:
            return
        at_once = self._interrupted or self._starting
        self._interrupted = True
        if at_once:
            self._stopping = True
            raise KeyboardInterrupt

    def wake_with(self, wake: Callable[[], None] | None) -> None:
        """`cluster_lost` calls `wake` to interrupt the run's thread where it blocks (None: no
        more; once this returns, no call of the previous one is made or under way)."""
        with self._lost_lock:
            self._wake = wake

    def stats(self) -> RunStats:
        """What the run measured so far (wall time up to now)."""
        return RunStats(wall_s=time.perf_counter() - self._started, startup_s=self._startup_s,
                        workers_ready_s=self._workers_ready_s, first_root_s=self._first_root_s,
                        roots=self._roots_done, skipped=self._skipped, restarted_roots=self._restarted_roots,
                        timeline=tuple(self._timeline), writer_peak_rss=getattr(self._sink, "writer_peak_rss", 0),
                        payload_files=dict(getattr(self._sink, "payload_files", {})))

    # ---- for executors ------------------------------------------------------------------
    def started_workers(self, store: ValueStore | None = None) -> None:
        """The executor's workers are up: from here on the run counts as started."""
        self._startup_s = time.perf_counter() - self._started
        if store is not None:
            self._store = store
        self._sink.bind(self._store)
        self._starting = False  # from the manifest's "running" on, a Ctrl-C commits what finished
        if self._progress is not None and self._cluster is not None:
            self._progress.note(f"running on {self._cluster.describe()}")
        if self._on_start is not None:
            self._on_start(self._cluster)

    def use_cluster(self, cluster) -> None:
        """The executor runs on `cluster` (the Ray executor's ClusterInfo): the manifest and the
        progress line name it."""
        self._cluster = cluster

    def plan_replicas(self, pool: int, workers: int) -> None:
        """The executor runs `workers` workers for the plan's pool `pool`: admission plans
        with it (a scheduler without admission ignores it)."""
        replicas = getattr(self._sched, "replicas", None)
        if replicas is not None:
            replicas[pool] = workers

    def workers_ready(self) -> None:
        """Every worker the executor started so far answered (the report's `workers_ready_s`)."""
        self._workers_ready_s = time.perf_counter() - self._started

    def cluster_lost(self, error: Exception, wake: bool = True) -> None:
        """The executor's cluster is gone (called from its watch thread, or its own thread): the
        run must end with `error` now, even where its thread is blocked in a call that will
        never return (`wake`). Python's own excepthook comes back at once: Ray's would report
        the exception to the dead cluster and wait forever."""
        with self._lost_lock:
            if self._lost is not None:
                return
            self._lost = error
            if sys.excepthook is not sys.__excepthook__:
                sys.excepthook = sys.__excepthook__
            if wake and self._wake is not None:
                self._wake()

    def record_batch(self, call: int, start_wall: float, seconds: float, items: int, worker: str) -> None:
        """Note one batch's run for the report's timeline (up to MAX_TIMELINE_EVENTS)."""
        if len(self._timeline) < defaults.MAX_TIMELINE_EVENTS:
            self._timeline.append((call, start_wall - self._started_wall, seconds, items, worker))

    def step(self) -> None:
        """Hand finished roots to the sink, serve the heartbeat, admit new input windows."""
        self.drain()
        self.heartbeat()
        self.admit()

    def heartbeat(self) -> None:
        """Progress lines and timed flushes; a pending Ctrl-C flushes what is complete and stops."""
        if self._progress is not None:
            self._progress.update(self)
        if self._lost is not None:
            raise self._lost
        if self._interrupted:
            self.drain()
            self._sink.flush()
            self._stopping = True
            raise KeyboardInterrupt
        self._sink.poll()

    @staticmethod
    def wait_s() -> float:
        """How long an executor may block waiting for reports before calling step() again."""
        return HEARTBEAT_S

    def admit(self) -> None:
        """Admit input windows while the scheduler has room; close the input when it ends.
        Roots whose key is in `skip` (committed by an earlier run) are passed over."""
        s = self._sched
        while s.can_admit():
            keys, values, indices = [], [], []
            ended = False
            while len(values) < self._window_size:
                v = next(self._inputs, _END)
                if v is _END:
                    ended = True
                    break
                k = self._key(v, self._index)
                if k in self._skip:
                    if self._key.digest is not None:  # keyed by index: refuse a changed input
                        self._committed.check(self._index, v, self._key.digest)
                    self._skipped += 1
                else:
                    if self._key.digest and self._input_digests is not None:  # the sink commits it
                        self._input_digests[k] = digest_hex(self._key.digest)
                    keys.append(k)
                    values.append(v)
                    indices.append(self._index)
                self._index += 1
            if values:
                wrapped, failed = self._store.wrap_inputs(values)
                self._raw[s.admit(keys, wrapped, indices, failed=failed)] = values
            if ended:
                s.close_input()
                return

    def idle_done(self) -> bool:
        """Nothing is in flight: True if the run is done (the sink then makes its last flush,
        while the executor's workers are still up), False if there is more to admit or
        dispatch. Neither means a scheduling bug, raised rather than hung on."""
        self.drain()
        s = self._sched
        if s.done:
            self._sink.close()
            return True
        if s.can_admit() or any(s.queues) or any(s.held):
            return False
        raise EngineError("no batch in flight, none ready and the run is not done")

    def next_call(self, pool: int, idle: bool = True) -> int | None:
        """The Call of `pool` a free worker should serve now, or None if none has grains it may
        take (`idle`: the worker has nothing in flight; see `Scheduler.ready`)."""
        for c in self._pool_calls[pool]:
            if self._sched.ready(c, idle):
                return c
        return None

    def downstream_first(self, calls: list[int]) -> list[int]:
        """`calls` ordered nearest-the-outputs first: serving them first lets parents finish."""
        return sorted(calls, key=lambda c: -self._plan.calls[c].node)

    def drain(self) -> int:
        """Hand every finished root's rows to the sink and release them; returns how many."""
        fin = self._sched.pop_finished()
        if self._sched.lost_roots:
            fin = self._run_again(fin)
        if not fin:
            return 0
        # each output's items are an iterator over the scheduler's tables, read by the sink
        # before `release`: a root of 200,000 children is never a list of 200,000 rows here
        roots = [(w.indices[r], w.keys[r], {name: self._rows(w, slot, chain, r) for name, slot, chain in self._outputs})
                 for w, r in fin]
        self._sink.write_roots(roots)
        for w, r in fin:
            self._release(w, r)
        if self._first_root_s is None:
            self._first_root_s = time.perf_counter() - self._started
        self._roots_done += len(fin)
        return len(fin)

    def _run_again(self, fin: list) -> list:
        """Finished roots that lost a payload with a node (Scheduler.lose) are not written: they
        run again from their input in a new window, up to MAX_ROOT_RESTARTS times (then their
        rows are written as they are: FAILED, cause kind "lost"). Returns the roots to write."""
        keep, again = [], []
        for w, r in fin:
            key = w.keys[r]
            if (w.wid, r) not in self._sched.lost_roots or self._restarts.get(key, 0) >= MAX_ROOT_RESTARTS:
                keep.append((w, r))
                continue
            self._restarts[key] = self._restarts.get(key, 0) + 1
            again.append((key, self._raw[w.wid][r], w.indices[r]))
            self._release(w, r)
        if again:
            keys, values, indices = map(list, zip(*again))
            wrapped, failed = self._store.wrap_inputs(values)
            wid = self._sched.readmit(keys, wrapped, indices, failed=failed)
            self._raw[wid] = values
            self._restarted_roots += len(again)
        return keep

    def _release(self, w, r: int) -> None:
        self._sched.release(w, r)
        if w.roots_left == 0:
            self._raw.pop(w.wid, None)

    @staticmethod
    def _rows(w, slot: int, chain: list[int], r: int) -> Iterator[Item]:
        """The Item of every entity of one output under root `r`, in lineage order, made one
        at a time as the sink reads them (valid until the root is released)."""
        st, val, causes = w.status[slot], w.value[slot], w.causes
        first, count = w.first, w.count
        depth = len(chain)

        def walk(level: int, idx: int, path: tuple[int, ...]) -> Iterator[Item]:
            if level == depth:
                s = st[idx]
                yield (Item(path, Status(s), val[idx]) if s == PRESENT
                       else Item(path, Status(s), val[idx] if s == DROPPED else None, causes.get((slot, idx))))
                return
            e = chain[level]
            f = first[e][idx]
            for k in range(count[e][idx]):
                yield from walk(level + 1, f + k, path + (k,))

        return walk(0, r, (w.indices[r],))


def input_count(inputs: Iterable[Any]) -> int | None:
    """How many inputs there are, where that is known ahead (a list; not an iterator)."""
    return len(inputs) if hasattr(inputs, "__len__") else None


def _chain(plan: Plan, slot: int) -> list[int]:
    """Expand nodes from the root down to the space of `slot`."""
    chain = []
    space = plan.slot_space[slot]
    while space:
        chain.append(plan.spaces[space].expand)
        space = plan.spaces[space].parent
    return chain[::-1]


