"""What a batch call's reply means (`settle`): its batches completed (values kept as `Ref`s into
its payload), failed, or requeued, depending on how Ray reports the call."""

from __future__ import annotations

import ray

from curate.core.outcome import BatchReport
from curate.errors import Cause
from curate.executors.ray.wire import UNBOUND, Ref, sources


def settle(run, fl, running: bool) -> None:
    """Apply the reply of batch call `fl` of `run` (`running`: it was its actor's oldest call,
    so the one that had started)."""
    sched, r = run.sched, fl.replica
    try:
        metas = ray.get(fl.meta)
    except ray.exceptions.ObjectLostError as exc:  # an input's node died with its only copy
        lose_payload(sched, fl.call, fl.batches, exc)
        return
    except ray.exceptions.RayTaskError as exc:  # the call itself failed to run
        if isinstance(exc.cause, ray.exceptions.ObjectLostError):
            lose_payload(sched, fl.call, fl.batches, exc.cause)
            return
        cause = Cause("user_code", str(exc).strip().splitlines()[0], sched.plan.calls[fl.call].name,
                      type(exc).__name__)
        for b in fl.batches:
            sched.fail(b.id, cause)
        return
    except ray.exceptions.RayError as exc:  # the actor died (Ray restarts it)
        cause = Cause("worker_died", f"worker {r.index} of pool {r.pool.name} died: "
                      f"{type(exc).__name__}", sched.plan.calls[fl.call].name, type(exc).__name__)
        for b in fl.batches:  # the running call is suspect; calls queued behind it are not
            if running:
                sched.fail(b.id, cause)
            else:
                sched.requeue(b.id)
        if running:
            for queued in r.flight:
                queued.unstarted = True
            # No more work for it until its restarted actor answers: after a node loss that
            # may be never (no room left), and the pool goes on with its other workers.
            run.ping(r, 0)
        return
    if metas and metas[0][0] == UNBOUND:  # Ray restarted the actor since the run began
        for b in fl.batches:
            sched.requeue(b.id)
        r.handle.bind.remote(run.id, r.pool.fns, run.staging)  # runs before later calls
        return
    complete(run, fl, metas)


def complete(run, fl, metas: list) -> None:
    """Each batch's report: its timing, then FAILED, or its items' outcomes with their values
    as references into the call's payload."""
    sched, r = run.sched, fl.replica
    kind = sched.plan.calls[fl.call].kind
    for bi, (b, meta) in enumerate(zip(fl.batches, metas)):
        start, seconds, cores = meta[-3:]
        r.stats.add(fl.call, seconds)
        run.record(r.name, fl.call, b, start, seconds)
        run.slots.add(fl.call, cores)
        if meta[0] == "err":
            sched.fail(b.id, meta[1])
            continue
        _, codes, causes, counts, nbytes = meta[:5]
        n = len(b.keys)
        if kind == "expand":
            values = [[Ref(fl.payload, bi, i, c) for c in range(counts[i])] for i in range(n)]
        elif kind == "filter":
            values = [None] * n
        else:
            values = [Ref(fl.payload, bi, i) for i in range(n)]
        sched.complete(b.id, BatchReport(values, codes, causes, nbytes))


def lose_payload(sched, call: int, batches: list, exc) -> None:
    """A call whose input payload is gone for good (its node died and no copy is left): the
    grains that read that payload are lost, and their roots run again from their inputs
    (Scheduler.lose, Driver); the call's other grains are only requeued."""
    gone = getattr(exc, "object_ref_hex", None)
    name = sched.plan.calls[call].name
    cause = Cause("lost", f"an input payload of this item was lost with a Ray node ({type(exc).__name__}); "
                  "its input is run again", name, type(exc).__name__)
    marks = [[gone is None or gone in sources(x) for x in b.inputs] for b in batches]
    if gone is not None and not any(map(any, marks)):  # the lost object is none we sent
        marks = [[True] * len(b.inputs) for b in batches]
    for b, m in zip(batches, marks):
        sched.lose(b.id, m, cause)
