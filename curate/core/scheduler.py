"""The pure runtime: admission (demand-driven or by window count), per-Call FIFO reservation
across parents and windows with a prefetch cap for unprobed parents, commit, group-failure
barriers, retries with generations, poison isolation. How a settled cell flows
on to its consumers (completion-driven reduce, zip, broadcast) is `curate.core.dataflow`. No Ray,
no clock, no threads: executors call `admit`, `reserve`, `complete`, `fail` and `requeue`,
and read `pop_finished`."""

from __future__ import annotations

from dataclasses import dataclass

from curate import defaults
from curate.core.admission import Admission
from curate.core.lineage import KEY_BITS, KEY_MASK, Window
from curate.core.outcome import DROPPED, FAILED, GROUP, PRESENT, SUPPRESSED, BatchReport
from curate.core.plan import Plan
from curate.core.prefetch import PROBED, PrefetchCap
from curate.errors import Cause, CurateError, EngineError


@dataclass(slots=True)
class Batch:
    """Up to batch_size grains of one Call, possibly from many parents and windows.
    `id` is the attempt token: a report for an id that is no longer in flight is dropped."""

    id: int
    call: int
    keys: list[int]
    gens: list[int]
    inputs: list


class Scheduler(PrefetchCap):
    """Drives one Plan over a stream of input windows (docs/concepts/statuses-and-failures.md says
    what a run guarantees).

    Admission: see `curate.core.admission.Admission` (on demand by default, or a fixed
    number of windows with `inflight`).

    Prefetch cap: see `curate.core.prefetch.PrefetchCap` (`probe_grains`; 0 turns it off)."""

    def __init__(self, plan: Plan, *, inflight: int | None = defaults.DEFAULT_INFLIGHT,
                 ready_batches: int = defaults.DEFAULT_READY_BATCHES,
                 max_entities: int = defaults.DEFAULT_ADMIT_ENTITIES,
                 max_bytes: int = defaults.DEFAULT_ADMIT_BYTES,
                 probe_grains: int = defaults.DEFAULT_PROBE_GRAINS):
        if inflight is not None and (not _whole(inflight) or inflight < 1):
            raise CurateError(f"inflight={inflight!r}; use a whole number >= 1 (input windows admitted at once), "
                              "or None to admit on demand")
        for name, v, lo, hi in (("ready_batches", ready_batches, 1, None), ("max_entities", max_entities, 1, None),
                                ("max_bytes", max_bytes, 1, None), ("probe_grains", probe_grains, 0, PROBED - 1)):
            if not _whole(v) or v < lo or (hi is not None and v > hi):
                raise CurateError(f"{name}={v!r}; use a whole number >= {lo}" + (f" and <= {hi}" if hi else ""))
        super().__init__(plan, probe_grains)
        self.inflight = inflight
        self.replicas = [p.replicas or 1 for p in plan.pools]  # executors may overwrite (workers they run)
        self.in_flight: dict[int, Batch] = {}
        self.stale_reports = 0
        self.lost_roots: set[tuple[int, int]] = set()  # (window, root) that lost a payload: to run again
        self.admitted = 0  # roots admitted so far
        self.live_bytes = 0  # payload bytes reported by the grains of live windows
        self._released = 0  # entities of released windows
        self._retry: dict[tuple[int, int], list[int]] = {}  # (call, key) -> [generation, cap, attempts]
        self._next_wid = 0
        self._next_bid = 0
        self._next_base = 0
        self.admission = Admission(plan, inflight, ready_batches, max_entities, max_bytes, self.replicas)

    # ---- admission ------------------------------------------------------------------------
    def can_admit(self) -> bool:
        return not self.input_closed and self.admission.allows(self)

    def admit(self, keys: list, values: list, indices: list[int] | None = None,
              failed: dict[int, Cause] | None = None) -> int:
        """Admit one input window of roots (stable keys, input values and, if not consecutive,
        their input indices); returns its id. Roots in `failed` (by position) are FAILED with
        that cause at once: an input the executor cannot carry to its workers."""
        if not self.can_admit():
            raise EngineError("admit() called while the admission window is full or input closed")
        self.admitted += len(keys)
        return self.readmit(keys, values, indices, failed)

    def readmit(self, keys: list, values: list, indices: list[int] | None = None,
                failed: dict[int, Cause] | None = None) -> int:
        """Open a window whatever the admission budget and even after the input closed: roots
        run again from their input because a payload they needed was lost (`lose`)."""
        if len(keys) != len(values) or not keys:
            raise EngineError("admit() needs one key per value and at least one root")
        wid = self._next_wid
        self._next_wid += 1
        if indices is None:
            indices = list(range(self._next_base, self._next_base + len(keys)))
        w = Window(wid, indices, keys, self.layout)
        self._next_base = indices[-1] + 1
        self.windows[wid] = w
        self.created[0] += len(keys)
        src = self.plan.source_slot
        w.status[src][:] = bytes([PRESENT]) * len(keys)
        w.value[src][:] = values
        for r, cause in (failed or {}).items():
            w.status[src][r], w.value[src][r] = FAILED, None
            w.causes[(src, r)] = cause
        for r in range(len(keys)):
            if w.root_open[r] == 0:
                self._finished.append((w, r))
            self._notify(w, src, r)
        return wid

    def close_input(self) -> None:
        self.input_closed = True

    @property
    def done(self) -> bool:
        return self.input_closed and not self.windows

    def live_entities(self) -> int:
        """Entities of every level in the admitted windows (kept as a running count)."""
        return sum(self.created) - self._released

    # ---- reservation ----------------------------------------------------------------------
    def ready(self, call: int, idle: bool = False) -> int:
        """Grains of `call` a worker may take now; `idle`: a worker with nothing in flight,
        which in the run's tail may also take grains held by the prefetch cap."""
        return len(self.queues[call]) + (self.held[call] if self._takes_held(idle) else 0)

    def reserve(self, call: int, limit: int | None = None, idle: bool = False) -> Batch | None:
        """Take up to batch_size ready grains of `call` from its queue head, any parents; if the
        queue runs dry first, grains held by the prefetch cap top the batch up (`_top_up`), and
        for an `idle` worker in the run's tail they may make the whole batch."""
        q = self.queues[call]
        spec = self.plan.calls[call]
        cap = spec.batch_size if limit is None else min(limit, spec.batch_size)
        node = self._call_node[call]
        nested = node.grain_space != 0
        keys: list[int] = []
        gens: list[int] = []
        windows, retry, front = self.windows, self._retry, self._front
        while q and len(keys) < cap:
            key = q[0]
            gen = 0
            if retry:
                st = retry.get((call, key))
                if st is not None:
                    if len(keys) >= st[1]:
                        break
                    cap = min(cap, st[1])
                    gen = st[0]
            q.popleft()
            if front[call]:
                front[call] -= 1
            if nested and self._suppressed(node, windows[key >> KEY_BITS], key & KEY_MASK):
                retry.pop((call, key), None)
                continue
            keys.append(key)
            gens.append(gen)
        if (keys or self._takes_held(idle)) and not q and len(keys) < cap and self.held[call]:
            self._top_up(call, keys, gens, cap)
        if not keys:
            return None
        inputs = [self._input(node, windows[k >> KEY_BITS], k & KEY_MASK) for k in keys]
        bid = self._next_bid
        self._next_bid += 1
        b = Batch(bid, call, keys, gens, inputs)
        self.in_flight[bid] = b
        c = self.counters[call]
        c.batches += 1
        c.items += len(keys)
        return b

    def _suppressed(self, node, w: Window, idx: int) -> bool:
        """A sibling of this grain group-failed at its Call: SUPPRESS it (never run, or run but
        not committed) and say so."""
        if not w.barriers:
            return False
        bar = w.barriers.get((node.call, w.parent[node.grain_space][idx]))
        if bar is None:
            return False
        self.counters[node.call].suppressed += 1
        self._resolve_grain(node, w, idx, SUPPRESSED, bar)
        return True

    def _input(self, node, w: Window, idx: int):
        if node.kind != "reduce":
            return w.value[node.in_slots[0]][idx]
        slot = node.in_slots[0]
        f, n = w.first[node.expand][idx], w.count[node.expand][idx]
        st, val = w.status[slot], w.value[slot]
        return [val[c] for c in range(f, f + n) if st[c] == PRESENT]

    # ---- reports --------------------------------------------------------------------------
    def complete(self, batch_id: int, report: BatchReport) -> bool:
        """Commit a batch's outcomes. Returns False (and changes nothing) for a stale or
        duplicate report."""
        b = self._take(batch_id)
        if b is None:
            return False
        call = b.call
        node = self._call_node[call]
        kind, nested, gspace = node.kind, node.grain_space != 0, node.grain_space
        codes, values, causes = report.codes, report.values, report.causes
        if len(values) != len(b.keys):
            raise EngineError(f"report of batch {batch_id} has {len(values)} values for {len(b.keys)} grains")
        windows, retry, cnt = self.windows, self._retry, self.counters[call]
        capped, probed = self._capped[call], None
        if report.nbytes:
            self._add_bytes(b.keys, report.nbytes)
        for i, key in enumerate(b.keys):
            w = windows[key >> KEY_BITS]
            idx = key & KEY_MASK
            if retry:
                retry.pop((call, key), None)
            if capped:  # the first report of its parent here: its held grains may go
                probed = self._probed(call, w, idx, probed)
            if nested and self._suppressed(node, w, idx):  # a sibling failed while it was in flight
                continue
            code = PRESENT if codes is None else codes[i]
            if code == PRESENT:
                if kind == "expand":
                    self._commit_expand(node, w, idx, values[i])
                elif kind == "filter":
                    self._settle(w, node.out_slot, idx, PRESENT, w.value[node.in_slots[0]][idx])
                else:
                    self._settle(w, node.out_slot, idx, PRESENT, values[i])
            elif code == DROPPED:  # a filter's verdict: the item keeps the value it was judged on
                cnt.dropped += 1
                self._resolve_grain(node, w, idx, DROPPED, causes[i], w.value[node.in_slots[0]][idx])
            else:
                if code == GROUP and nested:
                    w.barriers[(call, w.parent[gspace][idx])] = causes[i]
                cnt.failed += 1
                self._resolve_grain(node, w, idx, FAILED, causes[i])
        if probed:
            self._release_held(call, probed)
        return True

    def fail(self, batch_id: int, cause: Cause) -> bool:
        """An attempt failed (exception, dead worker): requeue its grains with generation+1 at
        the queue head, capped to half the batch so repeated failures isolate the poison item;
        an isolated grain out of retries (or with bad input) is FAILED. A stage that could not
        be built (cause kind "setup") FAILS the whole batch at once, without retries."""
        b = self._take(batch_id)
        if b is None:
            return False
        call, n = b.call, len(b.keys)
        spec, node, cnt = self.plan.calls[call], self._call_node[call], self.counters[call]
        requeue, probed = [], None
        for key in b.keys:
            st = self._retry_state(call, key)
            st[0] += 1
            final = cause.kind == "setup"  # the stage cannot even be built: no item can succeed
            if n > 1 and not final:
                st[1] = min(st[1], (n + 1) // 2)
            else:
                st[2] += 1
                if final or st[2] > spec.retries or cause.kind == "input" or st[0] >= defaults.MAX_GENERATION:
                    del self._retry[(call, key)]
                    cnt.failed += 1
                    w, idx = self.windows[key >> KEY_BITS], key & KEY_MASK
                    if self._capped[call]:  # a final failure is its parent's first report here
                        probed = self._probed(call, w, idx, probed)
                    self._resolve_grain(node, w, idx, FAILED, cause)
                    continue
            requeue.append(key)
        self._send_back(call, requeue)  # a retried attempt keeps its parent probing
        if probed:
            self._release_held(call, probed)
        return True

    def lose(self, batch_id: int, lost: list[bool], cause: Cause) -> bool:
        """An attempt could not run because payloads it needed were lost (their node died, no
        copy left): grains marked in `lost` can never succeed from these inputs, so they are
        FAILED at once (cause kind "lost") and their roots listed in `lost_roots`, for the
        driver to run again from their inputs; the other grains go back to the queue head
        without counting an attempt."""
        b = self._take(batch_id)
        if b is None:
            return False
        node, again = self._call_node[b.call], []
        for key, gone in zip(b.keys, lost):
            if not gone:
                self._retry_state(b.call, key)[0] += 1
                again.append(key)
                continue
            self._retry.pop((b.call, key), None)
            w, idx = self.windows[key >> KEY_BITS], key & KEY_MASK
            self.lost_roots.add((w.wid, w.root[node.grain_space][idx]))
            self.counters[b.call].failed += 1
            self._resolve_grain(node, w, idx, FAILED, cause)
            if self._capped[b.call] and (probed := self._probed(b.call, w, idx, None)):
                self._release_held(b.call, probed)
        if again:
            self._send_back(b.call, again)
        return True

    def requeue(self, batch_id: int) -> bool:
        """Send a batch that never started (it waited behind a worker that died) back to the
        queue head with generation+1, without counting an attempt against its grains."""
        b = self._take(batch_id)
        if b is None:
            return False
        for key in b.keys:
            self._retry_state(b.call, key)[0] += 1
        self._send_back(b.call, b.keys)
        return True

    def _take(self, batch_id: int) -> Batch | None:
        """The in-flight batch of a report, or None (counted) for a stale or duplicate one."""
        b = self.in_flight.pop(batch_id, None)
        if b is None:
            self.stale_reports += 1
        return b

    def _retry_state(self, call: int, key: int) -> list[int]:
        """[generation, batch cap, isolated attempts] of a grain that has been sent back."""
        return self._retry.setdefault((call, key), [0, self.plan.calls[call].batch_size, 0])

    def _add_bytes(self, keys: list[int], nbytes: int) -> None:
        """Charge a batch's payload bytes to the windows of its grains, in proportion to their
        grains; a window forgets its bytes when it is released."""
        per_window: dict[int, int] = {}
        for key in keys:
            wid = key >> KEY_BITS
            per_window[wid] = per_window.get(wid, 0) + 1
        for wid, k in per_window.items():
            share = nbytes * k // len(keys)
            self.windows[wid].nbytes += share
            self.live_bytes += share

    def _send_back(self, call: int, keys: list[int]) -> None:
        """Requeue grains at the queue head, in their order: their parents finish first."""
        self.counters[call].retries += len(keys)
        self.queues[call].extendleft(reversed(keys))
        self._front[call] += len(keys)

    # ---- completion -----------------------------------------------------------------------
    def pop_finished(self) -> list[tuple[Window, int]]:
        """Roots whose every cell is terminal, in completion order, since the last call.
        The caller reads their rows, then calls `release(window, root)`."""
        out, self._finished = self._finished, []
        return out

    def release(self, w: Window, root: int) -> None:
        """The rows of `root` were taken; a window whose roots are all taken is dropped."""
        w.roots_left -= 1
        self.lost_roots.discard((w.wid, root))
        if w.roots_left == 0:
            del self.windows[w.wid]
            self._released += w.size()
            self.live_bytes -= w.nbytes


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
