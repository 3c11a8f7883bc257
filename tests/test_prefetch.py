"""The prefetch cap, driven by hand on the pure scheduler: at a nested Call, a parent with no
report there yet has at most `probe_grains` grains queued or in flight; the rest are held aside
and come back to the queue head in order at its first report, or are SUPPRESSED without running
if that report was a GroupFailure. Held grains only top up a batch the queue cannot fill, or, in
the run's tail (input closed), make a batch for an idle worker."""

from __future__ import annotations

import threading

import pytest

import curate as cu
from curate.core.outcome import DROPPED, FAILED, GROUP, PRESENT, BatchReport
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink
from curate.errors import Cause

Doc = cu.Domain("doc")
Page = Doc.child("page")


def split(docs):
    return [[f"{d}.{i}" for i in range(int(d[1:]))] for d in docs]  # "d3" -> ["d3.0", "d3.1", "d3.2"]


def ident(xs):
    return xs


def collect(xs):
    return [list(x) for x in xs]


def doc_pipeline(batch_size=4, retries=2):
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split, batch_size=8), into=Page)
    ocr = pages.map(cu.stage(ident, batch_size=batch_size, retries=retries, name="ocr"))
    pipe.output("pages", ocr)
    pipe.output("docs", ocr.reduce(cu.stage(collect)))
    return compile_plan(pipe)


SPLIT, OCR, COLLECT = 0, 1, 2
FNS = {SPLIT: split, OCR: ident, COLLECT: collect}


def start(docs, probe_grains=1, batch_size=4, **kw):
    """A scheduler with `docs` (page counts) admitted as one window and split into pages."""
    plan = doc_pipeline(batch_size, **kw)
    s = Scheduler(plan, inflight=4, probe_grains=probe_grains)
    s.admit([f"k{i}" for i in range(len(docs))], [f"d{n}" for n in docs])
    while (b := s.reserve(SPLIT)) is not None:
        s.complete(b.id, BatchReport(split(b.inputs)))
    return s


def ok(s, b):
    s.complete(b.id, BatchReport(list(b.inputs)))


def finish(s):
    dispatched = []
    while any(s.queues):
        for call, fn in FNS.items():
            while (b := s.reserve(call)) is not None:
                if call == OCR:
                    dispatched += b.inputs
                s.complete(b.id, BatchReport(fn(b.inputs)))
    return dispatched


def outcomes(s, name="pages"):
    """{lineage: (status, value or cause)} of one output, for the roots finished so far."""
    if not hasattr(s, "sink"):
        s.sink = MemorySink(s.plan.outputs)
    Driver(s.plan, s, iter(()), input_batch_size=1, key=None, sink=s.sink).drain()
    return {it.lineage: (it.status.name, it.value if it.value is not None else it.cause)
            for items in s.sink.rows[name].values() for it in items}


def test_a_probing_parent_has_at_most_k_grains_in_flight():
    s = start([6, 3, 1, 1])
    assert s.ready(OCR) == 4 and s.held[OCR] == 7  # held aside as they arrive: only first pages are ready
    b = s.reserve(OCR)
    assert b.inputs == ["d6.0", "d3.0", "d1.0", "d1.0"]  # other parents fill the batch, not siblings
    assert s.held[OCR] == 7 and s.ready(OCR) == 0
    assert s.reserve(OCR) is None  # nothing else may go before a report
    s2 = start([6, 3], probe_grains=2)
    b2 = s2.reserve(OCR)
    assert b2.inputs == ["d6.0", "d6.1", "d3.0", "d3.1"]
    assert s2.reserve(OCR) is None and s2.held[OCR] == 5


def test_held_grains_top_up_a_batch_the_queue_cannot_fill():
    s = start([6, 3])
    b = s.reserve(OCR)
    # the queue had two first pages for a batch of four: the oldest parent's held pages fill it
    # (the worker would run a short batch otherwise); they may run, but commit only if d6 does
    assert b.inputs == ["d6.0", "d3.0", "d6.1", "d6.2"]
    assert s.held[OCR] == 5 and s.reserve(OCR) is None  # held grains never start a batch
    s.complete(b.id, BatchReport([None, "d3.0", "d6.1", "d6.2"], [GROUP, PRESENT, PRESENT, PRESENT],
                                 {0: Cause("group", "bad")}))
    assert s.counters[OCR].suppressed == 5  # d6.1, d6.2 ran but cannot commit; d6.3 .. d6.5 never ran
    assert s.held[OCR] == 0 and s.ready(OCR) == 2  # d3 reported: its pages are back
    assert finish(s) == ["d3.1", "d3.2"]
    pages = outcomes(s)
    assert [pages[(0, i)][0] for i in range(6)] == ["FAILED"] + ["SUPPRESSED"] * 5


def test_an_idle_worker_takes_held_grains_only_in_the_runs_tail():
    s = start([6, 3])
    b = s.reserve(OCR)  # d6.0, d3.0 and two held pages of d6: the probe batch is in flight
    assert s.ready(OCR) == 0 and s.held[OCR] == 5
    # while more input may come, admission refills the queue: an idle worker does not take held grains
    assert s.ready(OCR, idle=True) == 0 and s.reserve(OCR, idle=True) is None
    s.close_input()  # the tail: nothing more to admit, so a second worker would sit idle
    assert s.ready(OCR, idle=True) == 5 and s.ready(OCR) == 0
    assert s.reserve(OCR) is None  # a busy worker still never starts a batch of held grains
    b2 = s.reserve(OCR, idle=True)
    assert b2.inputs == ["d6.3", "d6.4", "d6.5", "d3.1"]  # oldest parent first
    ok(s, b)
    ok(s, b2)
    assert finish(s) == ["d3.2"]
    assert [v for _, v in sorted(outcomes(s).items())] == [
        ("PRESENT", x) for x in ["d6.0", "d6.1", "d6.2", "d6.3", "d6.4", "d6.5", "d3.0", "d3.1", "d3.2"]]


def test_held_grains_come_back_at_the_queue_head_in_order_after_the_first_report():
    s = start([6, 3], batch_size=2)
    b = s.reserve(OCR)
    s.admit(["late"], ["d2"])  # a later window: its pages queue behind
    while (sb := s.reserve(SPLIT)) is not None:
        s.complete(sb.id, BatchReport(split(sb.inputs)))
    assert s.ready(OCR) == 1 and s.held[OCR] == 8
    ok(s, b)
    assert s.held[OCR] == 1  # d2.1: d2 has not reported yet
    order = []
    while (nb := s.reserve(OCR)) is not None:
        order += nb.inputs
        ok(s, nb)
    # d6 and d3 are probed: their pages go in arrival order, ahead of the later window's pages,
    # which probe in turn (d2.0 first, then d2.1 once it reported)
    assert order == ["d6.1", "d6.2", "d6.3", "d6.4", "d6.5", "d3.1", "d3.2", "d2.0", "d2.1"]


def test_a_probed_parent_fills_whole_batches():
    s = start([9, 1, 1, 1])
    ok(s, s.reserve(OCR))
    b = s.reserve(OCR)
    assert b.inputs == ["d9.1", "d9.2", "d9.3", "d9.4"]
    b2 = s.reserve(OCR)
    assert b2.inputs == ["d9.5", "d9.6", "d9.7", "d9.8"]  # prefetch is free once the parent reported


def test_group_failure_on_the_first_grain_suppresses_every_held_sibling_unrun():
    s = start([5, 2], batch_size=2)
    b = s.reserve(OCR)
    assert b.inputs == ["d5.0", "d2.0"]
    s.complete(b.id, BatchReport([None, "d2.0"], [GROUP, PRESENT], {0: Cause("group", "encrypted")}))
    assert s.held[OCR] == 0 and s.counters[OCR].suppressed == 4
    dispatched = finish(s)
    assert dispatched == ["d2.1"]  # no page of d5 ever entered the stage
    pages = outcomes(s)
    assert pages[(0, 0)][0] == "FAILED"
    assert all(pages[(0, i)][0] == "SUPPRESSED" and pages[(0, i)][1].message == "encrypted" for i in range(1, 5))
    assert pages[(1, 0)] == ("PRESENT", "d2.0") and pages[(1, 1)] == ("PRESENT", "d2.1")
    assert outcomes(s, "docs")[(0,)][0] == "SUPPRESSED"


def test_group_failure_later_in_a_probed_parent_still_suppresses_queued_siblings():
    s = start([6, 1, 1, 1])
    ok(s, s.reserve(OCR))
    b = s.reserve(OCR)  # d6.1 .. d6.4
    s.complete(b.id, BatchReport([None] * 4, [PRESENT, GROUP, PRESENT, PRESENT], {1: Cause("group", "g")}))
    assert finish(s) == []  # d6.5 was queued: suppressed on the way out
    pages = outcomes(s)
    assert [pages[(0, i)][0] for i in range(6)] == ["PRESENT", "PRESENT", "FAILED", "SUPPRESSED", "SUPPRESSED",
                                                    "SUPPRESSED"]


@pytest.mark.parametrize("code, status", [(FAILED, "FAILED"), (DROPPED, "DROPPED")])
def test_any_other_first_report_releases_the_held_grains(code, status):
    s = start([3], batch_size=1)
    b = s.reserve(OCR)
    cause = Cause("item", "blurry") if code == FAILED else "not wanted"
    s.complete(b.id, BatchReport([None], [code], {0: cause}))
    assert s.ready(OCR) == 2 and s.held[OCR] == 0 and s.counters[OCR].suppressed == 0
    assert finish(s) == ["d3.1", "d3.2"]
    assert outcomes(s)[(0, 0)][0] == status


def test_a_retried_attempt_keeps_the_parent_probing():
    s = start([4, 2], batch_size=2)
    b = s.reserve(OCR)
    assert s.fail(b.id, Cause("user_code", "boom"))  # both probes go back, halved batches
    b1 = s.reserve(OCR)
    assert b1.inputs == ["d4.0"] and b1.gens == [1]  # the siblings are still held
    assert s.held[OCR] == 4
    b2 = s.reserve(OCR)
    assert b2.inputs == ["d2.0"]
    assert s.reserve(OCR) is None
    ok(s, b1)
    assert s.ready(OCR) == 3  # d4's siblings are back; d2 still probes
    ok(s, b2)
    assert finish(s) == ["d4.1", "d4.2", "d4.3", "d2.1"]


def test_a_requeued_batch_keeps_the_parent_probing():
    s = start([3], batch_size=1)
    b = s.reserve(OCR)
    assert s.requeue(b.id)  # it never started: its worker died before
    b1 = s.reserve(OCR)
    assert b1.inputs == ["d3.0"] and s.reserve(OCR) is None
    ok(s, b1)
    assert finish(s) == ["d3.1", "d3.2"]


def test_a_final_failure_of_the_first_grain_releases_its_siblings():
    s = start([3], batch_size=1, retries=0)
    b = s.reserve(OCR)
    s.fail(b.id, Cause("input", "corrupt page"))  # isolated, bad input: FAILED at once
    assert s.ready(OCR) == 2 and s.held[OCR] == 0
    assert finish(s) == ["d3.1", "d3.2"]
    pages = outcomes(s)
    assert [pages[(0, i)][0] for i in range(3)] == ["FAILED", "PRESENT", "PRESENT"]


def test_stale_reports_change_nothing_for_probing():
    s = start([3], batch_size=1)
    b = s.reserve(OCR)
    s.fail(b.id, Cause("worker_died", "lost"))
    assert not s.complete(b.id, BatchReport(["late"]))  # the dead attempt's report
    assert s.held[OCR] == 2 and s.ready(OCR) == 1


def test_the_cap_off_prefetches_siblings():
    s = start([6, 3], probe_grains=0)
    assert s.reserve(OCR).inputs == ["d6.0", "d6.1", "d6.2", "d6.3"]
    assert s.held[OCR] == 0


def test_root_level_calls_are_never_capped():
    s = Scheduler(doc_pipeline(), inflight=1)
    s.admit(["a", "b", "c"], ["d1", "d2", "d3"])
    assert s.reserve(SPLIT).inputs == ["d1", "d2", "d3"]


def test_probe_grains_is_checked():
    with pytest.raises(cu.CurateError, match="probe_grains"):
        Scheduler(doc_pipeline(), probe_grains=-1)
    with pytest.raises(cu.CurateError, match="probe_grains"):
        Scheduler(doc_pipeline(), probe_grains=255)


def test_nested_reduce_and_expand_calls_probe_per_parent_too():
    # doc -> page -> region: the region expand and the page-level reduce both run on pages,
    # whose parent is the document
    Region = Page.child("region")
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    regions = pages.expand(cu.stage(lambda ps: [[p + "/r"] for p in ps], name="regions"), into=Region)
    per_page = regions.map(cu.stage(ident, name="m", batch_size=8)).reduce(cu.stage(collect, name="join", batch_size=8))
    pipe.output("pages", per_page)
    plan = compile_plan(pipe)
    s = Scheduler(plan)
    s.admit(["a"], ["d4"])
    b = s.reserve(0)
    s.complete(b.id, BatchReport(split(b.inputs)))
    rb = s.reserve(1)
    assert rb.inputs == ["d4.0"] and s.held[1] == 3
    s.complete(rb.id, BatchReport([["d4.0/r"]]))
    assert s.ready(1) == 3 and s.held[1] == 0


def test_local_run_keeps_every_doomed_sibling_out_of_the_stage():
    # batch_size 1: a batch is always full from the queue, so nothing is topped up from held grains;
    # one worker: it is idle only when every probe has reported, so in this all-tail run it never
    # takes held grains (a second worker could, while a probe runs: see the idle-tail test above)
    seen, lock = [], threading.Lock()

    def ocr(pages):
        with lock:
            seen.extend(pages)
        return [cu.GroupFailure("unreadable") if p.startswith("d9.") and p.endswith(".0") else p.upper()
                for p in pages]

    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    text = pages.map(cu.stage(ocr, replicas=1))
    pipe.output("docs", text.reduce(cu.stage(collect)))
    docs = ["d3", "d9", "d5", "d9", "d2"]
    res = cu.run(pipe, docs, executor="local", input_batch_size=2)
    assert not [p for p in seen if p.startswith("d9.") and not p.endswith(".0")]
    assert res.metrics.calls["ocr"].suppressed == 16
    vals = res.values("docs")
    assert vals[0] == ["D3.0", "D3.1", "D3.2"] and vals[4] == ["D2.0", "D2.1"]
    assert isinstance(vals[1], cu.Issue) and vals[1].status is cu.Status.SUPPRESSED
