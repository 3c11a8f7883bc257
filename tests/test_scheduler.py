"""The pure scheduler driven by hand, one rule at a time: group-failure barriers, retries,
generations, poison isolation, stale and duplicate reports, admission, reservation."""

from __future__ import annotations

import pytest
from doc_stages import Doc, Page, collect, ident, split

import curate as cu
from curate.core.outcome import FAILED, GROUP, PRESENT, BatchReport
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.errors import Cause


def doc_pipeline(batch_size=1, retries=2, on_child_failure="suppress"):
    """doc -(split)-> page -(ocr)-> reduce(collect) per doc; outputs docs and pages."""
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    ocr = pages.map(cu.stage(ident, batch_size=batch_size, retries=retries, name="ocr"))
    pipe.output("pages", ocr)
    pipe.output("docs", ocr.reduce(cu.stage(collect), on_child_failure=on_child_failure))
    return compile_plan(pipe)


SPLIT, OCR, COLLECT = 0, 1, 2


def start(plan, docs, inflight=4, probe_grains=0):
    """Admit `docs` (page counts) as one window and commit the split expansions. The prefetch
    cap is off unless asked for, so each rule here is seen alone in hand-made batches (the cap
    has its own tests in test_prefetch.py)."""
    s = Scheduler(plan, inflight=inflight, probe_grains=probe_grains)
    s.admit([f"d{i}" for i in range(len(docs))], docs)
    while (b := s.reserve(SPLIT)) is not None:
        s.complete(b.id, BatchReport(split(b.inputs)))
    return s


FNS = {SPLIT: split, OCR: ident, COLLECT: collect}


def finish(s):
    """Run every remaining ready grain with the plain stage functions."""
    while any(s.queues):
        for call, fn in FNS.items():
            while (b := s.reserve(call)) is not None:
                s.complete(b.id, BatchReport(fn(b.inputs)))


def outcomes(s, plan, name):
    """Finish the run, then {lineage: (status, value or cause)} of one output."""
    from curate.run_driver import Driver, MemorySink

    finish(s)
    if not hasattr(s, "sink"):
        s.sink = MemorySink(plan.outputs)
    Driver(plan, s, iter(()), input_batch_size=1, key=None, sink=s.sink).drain()
    res = {}
    for items in s.sink.rows[name].values():
        for it in items:
            res[it.lineage] = (it.status.name, it.value if it.value is not None else it.cause)
    return res


def report(values, codes=None, causes=None):
    return BatchReport(list(values), codes, causes or {})


def test_group_failure_suppresses_queued_siblings_without_running_them():
    plan = doc_pipeline()
    s = start(plan, [3, 2])
    b = s.reserve(OCR)  # page 0 of doc 0
    assert b.inputs == [0]
    s.complete(b.id, report([None], [GROUP], {0: Cause("group", "bad scan")}))
    entered = []
    while (b := s.reserve(OCR)) is not None:  # pages 1, 2 of doc 0 must not come out
        entered.append(b.keys[0])
        s.complete(b.id, report(b.inputs))
    assert len(entered) == 2  # only doc 1's two pages entered the stage
    assert s.counters[OCR].suppressed == 2
    pages = outcomes(s, plan, "pages")
    assert pages[(0, 0)][0] == "FAILED" and pages[(0, 0)][1].message == "bad scan"
    assert pages[(0, 1)][0] == pages[(0, 2)][0] == "SUPPRESSED"
    assert pages[(0, 1)][1].message == "bad scan"
    assert pages[(1, 0)] == ("PRESENT", 0) and pages[(1, 1)] == ("PRESENT", 1)  # other parent untouched


def test_in_flight_sibling_cannot_commit_after_group_failure():
    plan = doc_pipeline()
    s = start(plan, [2])
    b0, b1 = s.reserve(OCR), s.reserve(OCR)
    s.complete(b0.id, report([None], [GROUP], {0: Cause("group", "corrupt")}))
    s.complete(b1.id, report(b1.inputs))  # computed, but its group failed while it was in flight
    pages = outcomes(s, plan, "pages")
    assert pages[(0, 1)][0] == "SUPPRESSED"
    assert s.counters[OCR].suppressed == 1


def test_committed_sibling_stays_present():
    plan = doc_pipeline()
    s = start(plan, [2])
    b0, b1 = s.reserve(OCR), s.reserve(OCR)
    s.complete(b0.id, report(b0.inputs))
    s.complete(b1.id, report([None], [GROUP], {0: Cause("group", "late failure")}))
    pages = outcomes(s, plan, "pages")
    assert pages[(0, 0)] == ("PRESENT", 0)
    assert pages[(0, 1)][0] == "FAILED"
    docs = outcomes(s, plan, "docs")  # default reduce: a failed child suppresses the parent
    assert docs[(0,)][0] == "SUPPRESSED" and docs[(0,)][1].message == "late failure"


def test_group_failure_in_one_batch_spares_earlier_items_and_blocks_later_ones():
    plan = doc_pipeline(batch_size=4)
    s = start(plan, [4])
    b = s.reserve(OCR)
    assert len(b.keys) == 4
    s.complete(b.id, report([0, None, 2, 3], [PRESENT, GROUP, PRESENT, PRESENT], {1: Cause("group", "g")}))
    pages = outcomes(s, plan, "pages")
    assert [pages[(0, i)][0] for i in range(4)] == ["PRESENT", "FAILED", "SUPPRESSED", "SUPPRESSED"]


def test_group_failure_at_root_level_fails_only_that_root():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(cu.stage(ident, name="check")))
    plan = compile_plan(pipe)
    s = Scheduler(plan)
    s.admit(["a", "b"], [1, 2])
    b = s.reserve(0)
    b2 = s.reserve(0)
    s.complete(b.id, report([None], [GROUP], {0: Cause("group", "root-level")}))
    s.complete(b2.id, report([2]))
    docs = outcomes(s, plan, "docs")
    assert docs[(0,)][0] == "FAILED" and docs[(1,)] == ("PRESENT", 2)


def test_item_failure_fails_one_item_only():
    plan = doc_pipeline(batch_size=3)
    s = start(plan, [3])
    b = s.reserve(OCR)
    s.complete(b.id, report([0, None, 2], [PRESENT, FAILED, PRESENT], {1: Cause("item", "blurry")}))
    pages = outcomes(s, plan, "pages")
    assert [pages[(0, i)][0] for i in range(3)] == ["PRESENT", "FAILED", "PRESENT"]
    assert s.counters[OCR].suppressed == 0


def test_failed_attempt_requeues_at_head_with_next_generation_and_halved_batch():
    plan = doc_pipeline(batch_size=4)
    s = start(plan, [6])
    b = s.reserve(OCR)
    assert b.gens == [0, 0, 0, 0]
    assert s.fail(b.id, Cause("user_code", "boom"))
    assert s.counters[OCR].retries == 4
    b1 = s.reserve(OCR)  # the first half comes back first, at generation 1
    assert b1.inputs == [0, 1] and b1.gens == [1, 1]
    b2 = s.reserve(OCR)
    assert b2.inputs == [2, 3] and b2.gens == [1, 1]
    b3 = s.reserve(OCR)  # never-failed grains still fill whole batches
    assert b3.inputs == [4, 5] and b3.gens == [0, 0]


def test_poison_is_isolated_and_failed_after_retries():
    plan = doc_pipeline(batch_size=4, retries=2)
    s = start(plan, [4])
    attempts = 0
    while (b := s.reserve(OCR)) is not None:
        if 2 in b.inputs:
            attempts += len(b.inputs) == 1
            s.fail(b.id, Cause("user_code", "poison 2"))
        else:
            s.complete(b.id, report(b.inputs))
    assert attempts == 3  # isolated, then retried twice
    pages = outcomes(s, plan, "pages")
    assert [pages[(0, i)][0] for i in range(4)] == ["PRESENT", "PRESENT", "FAILED", "PRESENT"]
    assert pages[(0, 2)][1].message == "poison 2"


def test_bad_input_is_not_retried_once_isolated():
    plan = doc_pipeline(batch_size=1, retries=5)
    s = start(plan, [1])
    b = s.reserve(OCR)
    s.fail(b.id, Cause("input", "encrypted PDF"))
    assert s.reserve(OCR) is None
    assert outcomes(s, plan, "pages")[(0, 0)][0] == "FAILED"


def test_stale_and_duplicate_reports_are_dropped():
    plan = doc_pipeline()
    s = start(plan, [1])
    b = s.reserve(OCR)
    assert s.fail(b.id, Cause("worker_died", "node lost"))
    assert not s.complete(b.id, report(["late"]))  # the dead worker's report, after the retry began
    b2 = s.reserve(OCR)
    assert b2.gens == [1]
    assert s.complete(b2.id, report([0]))
    assert not s.complete(b2.id, report([0]))  # duplicate
    assert s.stale_reports == 2
    assert outcomes(s, plan, "pages")[(0, 0)] == ("PRESENT", 0)


def test_reservation_mixes_parents_and_windows_in_fifo_order():
    plan = doc_pipeline(batch_size=5)
    s = Scheduler(plan, inflight=2, probe_grains=0)
    s.admit(["a", "b"], [2, 1])
    s.admit(["c"], [3])
    while (b := s.reserve(SPLIT)) is not None:
        s.complete(b.id, BatchReport(split(b.inputs)))
    b = s.reserve(OCR)
    # pages of doc a, doc b (window 0) then doc c (window 1), in the order they became ready
    assert b.inputs == [0, 1, 0, 0, 1]
    assert not s.can_admit()


def test_reduce_waits_only_for_its_own_children():
    plan = doc_pipeline(batch_size=1)
    s = start(plan, [1, 3])
    b = s.reserve(OCR)  # doc 0's only page
    s.complete(b.id, report(b.inputs))
    r = s.reserve(COLLECT)
    assert r is not None and r.inputs == [[0]]  # doc 0 reduces while doc 1 still has 3 pages queued
    assert s.ready(OCR) == 3


def test_drop_mode_reduces_the_rest_after_an_item_failure():
    plan = doc_pipeline(batch_size=3, on_child_failure="drop")
    s = start(plan, [3])
    b = s.reserve(OCR)
    s.complete(b.id, report([0, None, 2], [PRESENT, FAILED, PRESENT], {1: Cause("item", "x")}))
    r = s.reserve(COLLECT)
    assert r.inputs == [[0, 2]]


def test_drop_mode_suppresses_the_parent_after_a_group_failure():
    plan = doc_pipeline(batch_size=3, on_child_failure="drop")
    s = start(plan, [3])
    b = s.reserve(OCR)
    s.complete(b.id, report([0, None, None], [PRESENT, GROUP, PRESENT], {1: Cause("group", "g")}))
    assert s.reserve(COLLECT) is None
    assert outcomes(s, plan, "docs")[(0,)][0] == "SUPPRESSED"


def test_admission_is_bounded_and_windows_retire():
    plan = doc_pipeline()
    s = start(plan, [0], inflight=1)  # zero pages: the reduce is ready at once
    assert not s.can_admit()
    r = s.reserve(COLLECT)
    assert r.inputs == [[]]
    with pytest.raises(cu.EngineError):
        s.admit(["b"], [1])
    s.complete(r.id, report(["empty doc"]))
    (w, root), = s.pop_finished()
    assert not s.can_admit()  # finished, but its rows are not taken yet
    s.release(w, root)
    assert s.can_admit() and not s.windows


def test_settling_a_cell_twice_is_an_engine_error():
    plan = doc_pipeline()
    s = start(plan, [1])
    b = s.reserve(OCR)
    w = next(iter(s.windows.values()))
    s.complete(b.id, report([0]))
    with pytest.raises(cu.EngineError):
        s._settle(w, plan.nodes_by_id[plan.calls[OCR].node].out_slot, 0, PRESENT, 1)
