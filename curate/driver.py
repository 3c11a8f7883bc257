"""What every executor shares around the pure scheduler: pulling input windows from a stream,
choosing which Call a free worker serves, and handing finished roots to a sink."""

from __future__ import annotations

import hashlib
import reprlib
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Protocol

from curate import defaults
from curate.core.outcome import DROPPED, PRESENT, Item, Status, has_value
from curate.core.plan import Plan
from curate.core.scheduler import Scheduler
from curate.errors import CurateError, EngineError, RootKeyError
from curate.keys import IndexDigests, content_key, digest_hex, value_digest
from curate.values import LocalStore, ValueStore

_END = object()
MAX_ROOT_RESTARTS = 3  # a root that lost payloads with dead nodes this often is written FAILED
HEARTBEAT_S = 0.5  # longest an executor waits for reports before the driver looks up: progress
#                    lines, timed flushes and Ctrl-C are served even while every worker hangs


class Sink(Protocol):
    """Where finished roots go: memory (MemorySink) or Parquet (curate.io.parquet.ParquetSink).
    Rows reach the sink with the store's value references in their PRESENT and DROPPED items
    (`has_value`); the sink fetches them (`store.fetch`) or has them fetched where it writes (`store.place`)."""

    def bind(self, store: ValueStore) -> None:
        """Called once the executor's workers are up, before the first root."""

    def write_roots(self, roots: list[tuple[int, str, dict[str, Iterable[Item]]]]) -> None:
        """Finished roots: (input index, root key, {output: items in lineage order}). The items
        are an iterator over the scheduler's tables: read it once, during this call."""

    def poll(self) -> None:
        """Called at every heartbeat: a sink that flushes on a timer does it here."""

    def flush(self) -> None:
        """Make every root written so far durable (Ctrl-C flushes before stopping)."""

    def close(self) -> None:
        """The run is done: the last flush, while the executor's workers are still up."""


class MemorySink:
    """Keeps every output's rows in memory, grouped by input index (for RunResult)."""

    def __init__(self, outputs: Iterable[str]):
        self.rows: dict[str, dict[int, list[Item]]] = {name: {} for name in outputs}
        self.keys: dict[int, str] = {}
        self._fetch: Callable[[list], list] = LocalStore().fetch

    def bind(self, store: ValueStore) -> None:
        self._fetch = store.fetch

    def write_roots(self, roots) -> None:
        roots = [(index, key, {name: list(items) for name, items in rows.items()}) for index, key, rows in roots]
        held = [(items, i) for _, _, rows in roots for items in rows.values()
                for i, it in enumerate(items) if has_value(it)]
        values = self._fetch([items[i].value for items, i in held]) if held else []
        for (items, i), v in zip(held, values):
            it = items[i]
            items[i] = Item(it.lineage, it.status, v, it.cause)
        for index, key, rows in roots:
            self.keys[index] = key
            for name, items in rows.items():
                self.rows[name][index] = items

    def poll(self) -> None:
        """Nothing to flush: the rows are already in memory."""

    def flush(self) -> None:
        """Nothing to flush: the rows are already in memory."""

    def close(self) -> None:
        """Nothing to flush: the rows are already in memory."""


class RootKeys:
    """Checks the stable key of every input: a str (an int is taken as its decimal text), not
    empty, and unique among the inputs of this run, skipped ones included. A 64-bit digest per
    input (and its index) is kept, so a duplicate can name both inputs. Without `key=`, a file
    or bytes input is keyed by its content and any other by its index (`curate.keys`); then
    `digest` is that input's value digest, else None."""

    def __init__(self, key: Callable[[Any], Any] | None):
        self._key = key
        self._seen: dict[int, int] = {}  # key digest -> input index
        self.digest: int | None = None  # of the last input, where it is keyed by its index

    def __call__(self, value: Any, index: int) -> str:
        self.digest = None
        if self._key is None:
            k = content_key(value)
            if k is None:  # keyed by index: they cannot collide (and have no '@')
                self.digest = value_digest(value)
                return str(index)
            return self._unique(k, value, index)
        try:
            k = self._key(value)
        except Exception as exc:  # noqa: BLE001 - the user's key function: say which input broke it
            raise RootKeyError(f"key= raised {type(exc).__name__}: {exc} for input {index} ({_short(value)}); "
                               "fix the key function: it must return a str for every input") from exc
        if isinstance(k, int) and not isinstance(k, bool):
            k = str(k)
        if not isinstance(k, str) or not k:
            raise RootKeyError(f"key= returned {k!r} for input {index} ({_short(value)}); a root key must be "
                               "a non-empty str (or an int), e.g. a path plus a content hash "
                               "(curate.io.sources.path_key); join several parts into one text, "
                               "e.g. f\"{a}/{b}\"")
        return self._unique(k, value, index)

    def _unique(self, k: str, value: Any, index: int) -> str:
        digest = int.from_bytes(hashlib.blake2b(k.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        first = self._seen.setdefault(digest, index)
        if first == index:
            return k
        if self._key is None:
            raise RootKeyError(f"input {index} ({_short(value)}) has the same name and content as input {first} "
                               f"(default key {k!r}); root keys must be unique, or their rows would mix; remove "
                               "the duplicate, or pass key= to tell them apart")
        raise RootKeyError(f"key= gave input {index} ({_short(value)}) the key {k!r}, which input {first} "
                           "already has; root keys must be unique, or their rows would mix and a resumed "
                           "run would skip the second input; make the key tell them apart (e.g. include "
                           "the full path or a content hash), or remove the duplicate input")


def _short(value: Any) -> str:
    return reprlib.repr(value)


class Driver:
    """Feeds input windows to a Scheduler and drains finished roots into a sink. Executors
    call `started()` once their workers are up, then loop on `step()`, their own dispatch and
    reports (waiting at most `wait_s()` at a time), and `idle_done()` when nothing is in flight."""

    def __init__(self, plan: Plan, scheduler: Scheduler, inputs: Iterable[Any], *,
                 input_batch_size: int, key: Callable[[Any], str] | None, sink: Sink):
        if not isinstance(input_batch_size, int) or input_batch_size < 1:
            raise CurateError(f"input_batch_size={input_batch_size!r}; use a whole number >= 1 (roots per input window)")
        self.plan = plan
        self.sched = scheduler
        try:
            self._inputs = iter(inputs)
        except TypeError:
            raise CurateError(f"inputs must be a list or an iterator of inputs, not "
                              f"{type(inputs).__name__}; wrap a single input as [x]") from None
        self._window_size = input_batch_size
        self._key = RootKeys(key)
        self._index = 0
        self.total = len(inputs) if hasattr(inputs, "__len__") else None
        self.progress = None  # a curate.progress.Progress, when shown
        self.skip: set[str] = set()  # root keys already committed (resume)
        self.committed_digests = IndexDigests()  # of index-keyed inputs committed before (resume)
        self.input_digests: dict[str, str] | None = getattr(sink, "input_digests", None)  # for the sink
        self.skipped = 0
        self.sink = sink
        self.store: ValueStore = LocalStore()
        self.on_start: Callable[[], None] | None = None  # run(): record the run once workers are up
        self.cluster = None  # the Ray executor's ClusterInfo: which Ray the run uses
        self.interrupted = False  # set by a Ctrl-C handler; the next step() flushes and stops
        self.starting = True  # until the workers are up: nothing admitted yet, a Ctrl-C stops at once
        self.stopping = False  # a Ctrl-C is ending the run: its clean-up must finish
        self.lost: Exception | None = None  # the executor's cluster went away (ClusterLostError)
        self.wake: Callable[[], None] | None = None  # run(): interrupts the run's thread where it blocks
        self._lost_lock = threading.Lock()  # wake is never called after run() took it away
        self.started = time.perf_counter()
        self.started_wall = time.time()
        self.timeline: list[tuple[int, float, float, int, str]] = []  # (call, start_s, seconds, items, worker)
        self.first_root_s: float | None = None
        self.startup_s = 0.0  # executor start-up (Ray: until the first actor answered and work began)
        self.workers_ready_s: float | None = None  # Ray: until every actor it started answered (None: the run ended first)
        self.roots_done = 0
        self.restarted_roots = 0  # roots run again after a payload they needed was lost with a node
        self._restarts: dict[str, int] = {}  # root key -> times it was run again
        self._raw: dict[int, list] = {}  # window id -> its roots' inputs, for running a root again
        self._outputs = [(name, plan.output_slot(name), _chain(plan, plan.output_slot(name)))
                         for name in plan.outputs]
        # downstream-first: a free worker serves the Call nearest the outputs, so parents finish
        self._pool_calls = [self.downstream_first(p.calls) for p in plan.pools]

    def started_workers(self, store: ValueStore | None = None) -> None:
        """The executor's workers are up: from here on the run counts as started."""
        self.startup_s = time.perf_counter() - self.started
        if store is not None:
            self.store = store
        self.sink.bind(self.store)
        self.starting = False  # from the manifest's "running" on, a Ctrl-C commits what finished
        if self.progress is not None and self.cluster is not None:
            self.progress.note(f"running on {self.cluster.describe()}")
        if self.on_start is not None:
            self.on_start()

    def use_cluster(self, cluster) -> None:
        """The executor runs on `cluster` (the Ray executor's ClusterInfo): the manifest and the
        progress line name it."""
        self.cluster = cluster

    def plan_replicas(self, pool: int, workers: int) -> None:
        """The executor runs `workers` workers for the plan's pool `pool`: admission plans
        with it (a scheduler without admission ignores it)."""
        replicas = getattr(self.sched, "replicas", None)
        if replicas is not None:
            replicas[pool] = workers

    def workers_ready(self) -> None:
        """Every worker the executor started so far answered (the report's `workers_ready_s`)."""
        self.workers_ready_s = time.perf_counter() - self.started

    def cluster_lost(self, error: Exception, wake: bool = True) -> None:
        """The executor's cluster is gone (called from its watch thread, or its own thread): the
        run must end with `error` now, even where its thread is blocked in a call that will
        never return (`wake`). Python's own excepthook comes back at once: Ray's would report
        the exception to the dead cluster and wait forever."""
        with self._lost_lock:
            if self.lost is not None:
                return
            self.lost = error
            if sys.excepthook is not sys.__excepthook__:
                sys.excepthook = sys.__excepthook__
            if wake and self.wake is not None:
                self.wake()

    def record_batch(self, call: int, start_wall: float, seconds: float, items: int, worker: str) -> None:
        """Note one batch's run for the report's timeline (up to MAX_TIMELINE_EVENTS)."""
        if len(self.timeline) < defaults.MAX_TIMELINE_EVENTS:
            self.timeline.append((call, start_wall - self.started_wall, seconds, items, worker))

    def step(self) -> None:
        """Hand finished roots to the sink, serve the heartbeat, admit new input windows."""
        self.drain()
        self.heartbeat()
        self.admit()

    def heartbeat(self) -> None:
        """Progress lines and timed flushes; a pending Ctrl-C flushes what is complete and stops."""
        if self.progress is not None:
            self.progress.update(self)
        if self.lost is not None:
            raise self.lost
        if self.interrupted:
            self.drain()
            self.sink.flush()
            self.stopping = True
            raise KeyboardInterrupt
        self.sink.poll()

    @staticmethod
    def wait_s() -> float:
        """How long an executor may block waiting for reports before calling step() again."""
        return HEARTBEAT_S

    def admit(self) -> None:
        """Admit input windows while the scheduler has room; close the input when it ends.
        Roots whose key is in `skip` (committed by an earlier run) are passed over."""
        s = self.sched
        while s.can_admit():
            keys, values, indices = [], [], []
            ended = False
            while len(values) < self._window_size:
                v = next(self._inputs, _END)
                if v is _END:
                    ended = True
                    break
                k = self._key(v, self._index)
                if k in self.skip:
                    if self._key.digest is not None:  # keyed by index: refuse a changed input
                        self.committed_digests.check(self._index, v, self._key.digest)
                    self.skipped += 1
                else:
                    if self._key.digest and self.input_digests is not None:  # the sink commits it
                        self.input_digests[k] = digest_hex(self._key.digest)
                    keys.append(k)
                    values.append(v)
                    indices.append(self._index)
                self._index += 1
            if values:
                wrapped, failed = self.store.wrap_inputs(values)
                self._raw[s.admit(keys, wrapped, indices, failed=failed)] = values
            if ended:
                s.close_input()
                return

    def idle_done(self) -> bool:
        """Nothing is in flight: True if the run is done (the sink then makes its last flush,
        while the executor's workers are still up), False if there is more to admit or
        dispatch. Neither means a scheduling bug, raised rather than hung on."""
        self.drain()
        s = self.sched
        if s.done:
            self.sink.close()
            return True
        if s.can_admit() or any(s.queues) or any(s.held):
            return False
        raise EngineError("no batch in flight, none ready and the run is not done")

    def next_call(self, pool: int, idle: bool = True) -> int | None:
        """The Call of `pool` a free worker should serve now, or None if none has grains it may
        take (`idle`: the worker has nothing in flight; see `Scheduler.ready`)."""
        for c in self._pool_calls[pool]:
            if self.sched.ready(c, idle):
                return c
        return None

    def downstream_first(self, calls: list[int]) -> list[int]:
        """`calls` ordered nearest-the-outputs first: serving them first lets parents finish."""
        return sorted(calls, key=lambda c: -self.plan.calls[c].node)

    def drain(self) -> int:
        """Hand every finished root's rows to the sink and release them; returns how many."""
        fin = self.sched.pop_finished()
        if self.sched.lost_roots:
            fin = self._run_again(fin)
        if not fin:
            return 0
        # each output's items are an iterator over the scheduler's tables, read by the sink
        # before `release`: a root of 200,000 children is never a list of 200,000 rows here
        roots = [(w.indices[r], w.keys[r], {name: self._rows(w, slot, chain, r) for name, slot, chain in self._outputs})
                 for w, r in fin]
        self.sink.write_roots(roots)
        for w, r in fin:
            self._release(w, r)
        if self.first_root_s is None:
            self.first_root_s = time.perf_counter() - self.started
        self.roots_done += len(fin)
        return len(fin)

    def _run_again(self, fin: list) -> list:
        """Finished roots that lost a payload with a node (Scheduler.lose) are not written: they
        run again from their input in a new window, up to MAX_ROOT_RESTARTS times (then their
        rows are written as they are: FAILED, cause kind "lost"). Returns the roots to write."""
        keep, again = [], []
        for w, r in fin:
            key = w.keys[r]
            if (w.wid, r) not in self.sched.lost_roots or self._restarts.get(key, 0) >= MAX_ROOT_RESTARTS:
                keep.append((w, r))
                continue
            self._restarts[key] = self._restarts.get(key, 0) + 1
            again.append((key, self._raw[w.wid][r], w.indices[r]))
            self._release(w, r)
        if again:
            keys, values, indices = map(list, zip(*again))
            wrapped, failed = self.store.wrap_inputs(values)
            wid = self.sched.readmit(keys, wrapped, indices, failed=failed)
            self._raw[wid] = values
            self.restarted_roots += len(again)
        return keep

    def _release(self, w, r: int) -> None:
        self.sched.release(w, r)
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


def _chain(plan: Plan, slot: int) -> list[int]:
    """Expand nodes from the root down to the space of `slot`."""
    chain = []
    space = plan.slot_space[slot]
    while space:
        chain.append(plan.spaces[space].expand)
        space = plan.spaces[space].parent
    return chain[::-1]


