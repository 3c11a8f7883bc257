"""Admission driven by hand on the pure scheduler: demand-driven (the default) admits while the
Calls that turn inputs into work are short and the feed pools are starving, within a live-entity
budget and a bytes budget; an explicit `inflight` keeps the fixed window count."""

from __future__ import annotations

import pytest
from doc_stages import Doc, Page, collect, ident, split

import curate as cu
from curate.core.outcome import BatchReport
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.run_driver import Driver, MemorySink


def doc_pipeline(ocr_batch=4, ocr_replicas=2):
    """doc -(split: head)-> page -(ocr: the feed pool)-> reduce per doc."""
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    ocr = pages.map(cu.stage(ident, batch_size=ocr_batch, replicas=ocr_replicas, name="ocr"))
    pipe.output("docs", ocr.reduce(cu.stage(collect)))
    return compile_plan(pipe)


SPLIT, OCR, COLLECT = 0, 1, 2
FNS = {SPLIT: split, OCR: ident, COLLECT: collect}


def run_call(s, call, fn=None):
    """Run every ready grain of one Call (of doc_pipeline, or with `fn`); returns how many batches ran."""
    fn = fn or FNS[call]
    n = 0
    while (b := s.reserve(call)) is not None:
        s.complete(b.id, BatchReport(fn(b.inputs)))
        n += 1
    return n


def admit_one(s, pages, name=None):
    """Admit one window of one document with `pages` pages."""
    return s.admit([name or f"d{s.admitted}"], [pages])


def finish(s):
    while any(s.queues):
        for call in FNS:
            run_call(s, call)


def drain(s):
    for w, r in s.pop_finished():
        s.release(w, r)


def test_first_window_is_always_admitted_even_over_budget():
    s = Scheduler(doc_pipeline(), max_entities=1, max_bytes=1)
    assert s.inflight is None and s.can_admit()
    admit_one(s, 3)
    run_call(s, SPLIT)
    assert s.live_entities() == 4 and not s.can_admit()  # over the entity budget now


def test_demand_admits_while_the_feed_call_starves_and_stops_at_two_batches_per_replica():
    # target at ocr: 2 * 4 * 2 = 16 grains (the prefetch cap is off: see the next test)
    s = Scheduler(doc_pipeline(ocr_batch=4, ocr_replicas=2), probe_grains=0)
    admit_one(s, 5)
    assert s.can_admit()  # split has 1 of its 2 ready (batch 1, 1 replica), ocr is empty
    admit_one(s, 5)
    assert not s.can_admit()  # split holds two batches per replica: inputs wait for it, not for more inputs
    run_call(s, SPLIT)
    assert s.ready(OCR) == 10 and s.can_admit()  # the feed pool starves (10 < 16): admit more
    admit_one(s, 5)
    admit_one(s, 5)
    run_call(s, SPLIT)
    assert s.ready(OCR) == 20 and not s.can_admit()  # 20 >= 16: enough for both replicas
    assert len(s.windows) == 4
    b = s.reserve(OCR)
    s.complete(b.id, BatchReport(b.inputs))
    assert s.ready(OCR) == 16 and not s.can_admit()
    b = s.reserve(OCR)
    assert s.ready(OCR) == 12 and s.can_admit()  # below target again
    s.complete(b.id, BatchReport(b.inputs))


def test_grains_held_by_the_prefetch_cap_count_except_below_one_batch_per_replica():
    s = Scheduler(doc_pipeline(ocr_batch=4, ocr_replicas=2))  # target 16, one batch per replica: 8

    def add(pages):
        admit_one(s, pages)
        run_call(s, SPLIT)

    add(20)
    assert s.ready(OCR) == 1 and s.held[OCR] == 19  # only the first page of a new document is ready
    assert s.can_admit()  # 1 + 19 >= 16, but one ready grain would leave a replica idle
    for _ in range(6):
        add(1)
    assert s.ready(OCR) == 7 and s.can_admit()
    add(1)
    assert s.ready(OCR) == 8 and not s.can_admit()  # 8 ready and 19 coming after one report
    b = s.reserve(OCR)
    s.complete(b.id, BatchReport(b.inputs))  # the 20-page document reported: its 19 pages are back
    assert s.ready(OCR) == 23 and s.held[OCR] == 0 and not s.can_admit()
    s2 = Scheduler(doc_pipeline(ocr_batch=4, ocr_replicas=2))
    for pages in [2] * 7 + [1]:
        admit_one(s2, pages)
        run_call(s2, SPLIT)
    assert s2.ready(OCR) == 8 and s2.held[OCR] == 7 and s2.can_admit()  # 15 < 16
    admit_one(s2, 2)
    run_call(s2, SPLIT)
    assert s2.ready(OCR) + s2.held[OCR] == 17 and not s2.can_admit()


def test_replicas_set_by_the_executor_scale_the_target():
    s = Scheduler(doc_pipeline(ocr_batch=4, ocr_replicas=1), probe_grains=0)
    admit_one(s, 10)
    run_call(s, SPLIT)
    assert s.ready(OCR) == 10 and not s.can_admit()  # 10 >= 2 * 4 * 1
    s.replicas[s.plan.calls[OCR].pool] = 2  # the executor runs two workers for it after all
    assert s.can_admit()  # 10 < 2 * 4 * 2


def test_entity_budget_stops_admission_until_windows_are_released():
    s = Scheduler(doc_pipeline(ocr_batch=64), max_entities=12)
    admit_one(s, 5)
    run_call(s, SPLIT)
    assert s.can_admit()  # 6 live entities
    admit_one(s, 5)
    run_call(s, SPLIT)
    assert s.live_entities() == 12 and not s.can_admit()  # the ocr pool starves, but the budget is spent
    assert s.live_entities() == sum(w.size() for w in s.windows.values())
    finish(s)
    drain(s)
    assert s.live_entities() == 0 and not s.windows and s.can_admit()


def test_bytes_budget_stops_admission_and_is_forgotten_with_the_window():
    s = Scheduler(doc_pipeline(ocr_batch=64), max_bytes=1000)
    admit_one(s, 2)
    run_call(s, SPLIT)
    b = s.reserve(OCR)
    s.complete(b.id, BatchReport(b.inputs, nbytes=1500))  # the executor measured the payloads
    assert s.live_bytes == 1500 and not s.can_admit()
    finish(s)
    drain(s)
    assert s.live_bytes == 0 and s.can_admit()


def test_bytes_of_a_batch_are_charged_to_the_windows_of_its_grains():
    s = Scheduler(doc_pipeline(ocr_batch=64), probe_grains=0)
    admit_one(s, 2)
    admit_one(s, 2)  # window 1 (split was not full yet: 1 of 2 ready)
    run_call(s, SPLIT)
    b = s.reserve(OCR)
    assert len(b.keys) == 4
    s.complete(b.id, BatchReport(b.inputs, nbytes=400))
    assert [w.nbytes for w in s.windows.values()] == [200, 200]
    run_call(s, COLLECT)
    (w0, r0), (w1, r1) = s.pop_finished()
    s.release(w0, r0)
    assert s.live_bytes == 200
    s.release(w1, r1)
    assert s.live_bytes == 0


def test_explicit_inflight_keeps_the_window_count_rule():
    s = Scheduler(doc_pipeline(), inflight=2, max_entities=1)  # the budgets do not apply
    admit_one(s, 5)
    admit_one(s, 5)
    assert not s.can_admit()  # two windows, although the feed pool starves
    run_call(s, SPLIT)
    s2 = Scheduler(doc_pipeline(), inflight=3)
    for _ in range(3):
        admit_one(s2, 50)
    run_call(s2, SPLIT)
    assert s2.ready(OCR) + s2.held[OCR] == 150  # far more than the pools need, still admitted
    assert not s2.can_admit()
    finish(s)
    drain(s)
    assert s.can_admit()


@pytest.mark.parametrize("bad", [0, -1, 2.0, "4", True])
def test_inflight_must_be_a_whole_number_or_none(bad):
    with pytest.raises(cu.CurateError, match="inflight"):
        Scheduler(doc_pipeline(), inflight=bad)


@pytest.mark.parametrize("option", ["ready_batches", "max_entities", "max_bytes"])
def test_budgets_must_be_positive_whole_numbers(option):
    with pytest.raises(cu.CurateError, match=option):
        Scheduler(doc_pipeline(), **{option: 0})


def test_a_starved_stage_behind_a_full_bottleneck_pulls_no_more_inputs():
    # doc -> page -> ocr (bottleneck, batch 4) -> layout (cheap, batch 1): layout starves because
    # ocr is slow; more inputs would only lengthen ocr's queue.
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    ocr = pages.map(cu.stage(ident, batch_size=4, name="ocr"))
    layout = ocr.map(cu.stage(ident, name="layout"))
    pipe.output("docs", layout.reduce(cu.stage(collect)))
    s = Scheduler(compile_plan(pipe), probe_grains=0)  # targets: ocr 2 * 4, layout 2 * 1
    admit_one(s, 8)
    run_call(s, 0)
    assert s.ready(1) == 8 and s.ready(2) == 0
    assert not s.can_admit()  # layout starves, but the line ocr -> layout is held up by ocr
    b = s.reserve(1)
    s.complete(b.id, BatchReport(b.inputs))
    assert s.ready(1) == 4 and s.ready(2) == 4
    assert not s.can_admit()  # layout has its two batches: the line waits until it takes them
    run_call(s, 2, ident)
    assert s.can_admit()  # ocr below target, layout too


def test_a_cheap_filter_ahead_of_a_full_bottleneck_pulls_no_more_inputs():
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    kept = pages.filter(cu.stage(lambda xs: [True] * len(xs), name="keep"))
    ocr = kept.map(cu.stage(ident, batch_size=2, name="ocr"))
    pipe.output("docs", ocr.reduce(cu.stage(collect)))
    s = Scheduler(compile_plan(pipe), probe_grains=0)
    admit_one(s, 6)
    run_call(s, 0)
    while (b := s.reserve(1)) is not None:  # the filter keeps every page
        s.complete(b.id, BatchReport([None] * len(b.keys)))
    assert s.ready(1) == 0 and s.ready(2) == 6
    assert not s.can_admit()  # the filter starves, ocr (target 4) does not
    b = s.reserve(2)
    s.complete(b.id, BatchReport(b.inputs))
    assert s.ready(2) == 4 and not s.can_admit()
    s.reserve(2)
    assert s.ready(2) == 2 and s.can_admit()


def test_parallel_branches_admit_for_the_one_that_starves():
    # pages -> ocr and pages -> caption: a full ocr queue does not starve the caption pool
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split), into=Page)
    ocr = pages.map(cu.stage(ident, batch_size=4, name="ocr"))
    cap = pages.map(cu.stage(ident, batch_size=4, name="caption"))
    pipe.output("ocr", ocr.reduce(cu.stage(collect, name="c1")))
    pipe.output("cap", cap.reduce(cu.stage(collect, name="c2")))
    plan = compile_plan(pipe)
    ocr_c, cap_c = (next(c.id for c in plan.calls if c.name == n) for n in ("ocr", "caption"))
    s = Scheduler(plan, probe_grains=0)
    admit_one(s, 8)
    run_call(s, 0)
    assert s.ready(ocr_c) == s.ready(cap_c) == 8 and not s.can_admit()
    run_call(s, cap_c, ident)
    assert s.ready(ocr_c) == 8 and s.can_admit()


def test_root_only_pipeline_admits_until_its_head_has_two_batches_per_replica():
    pipe = cu.Pipeline(Doc)
    pipe.output("docs", pipe.source.map(cu.stage(ident, batch_size=3, replicas=2, name="m")))
    s = Scheduler(compile_plan(pipe))  # target: 2 * 3 * 2 = 12 roots ready
    while s.can_admit():
        s.admit([f"r{s.admitted + i}" for i in range(5)], [1] * 5)
    assert s.ready(0) == 15 and len(s.windows) == 3


def test_the_driver_admits_windows_on_demand_and_closes_the_input():
    plan = doc_pipeline(ocr_batch=4, ocr_replicas=1)  # ocr target 8
    s = Scheduler(plan)
    d = Driver(plan, s, iter([3] * 40), input_batch_size=2, key=None, sink=MemorySink(plan.outputs))
    d.admit()
    assert len(s.windows) == 1  # split now holds 2 ready roots: two batches of its one replica
    run_call(s, SPLIT)
    d.admit()
    assert len(s.windows) == 2 and s.ready(OCR) + s.held[OCR] == 6
    assert run_steps(s, d) <= 4 * 8  # a handful of windows at a time, never the whole input (160 entities)
    assert d.roots_done == 40 and s.input_closed
    assert sorted(d.sink.rows["docs"]) == list(range(40))


def run_steps(s, d):
    """An executor with one worker per Call, one batch each per step; returns the peak of live
    entities."""
    peak = 0
    while not s.done:
        d.step()
        peak = max(peak, s.live_entities())
        for call in (COLLECT, OCR, SPLIT):
            b = s.reserve(call)
            if b is not None:
                s.complete(b.id, BatchReport(FNS[call](b.inputs)))
    d.drain()
    return peak


@pytest.mark.parametrize("probe_grains", [0, 1])
def test_live_entities_stay_bounded_on_a_long_stream(probe_grains):
    plan = doc_pipeline(ocr_batch=4, ocr_replicas=2)
    s = Scheduler(plan, probe_grains=probe_grains)
    pages = [1 + (i * 7) % 23 for i in range(1000)]  # 1 to 23 pages, 12,000 pages in all
    d = Driver(plan, s, iter(pages), input_batch_size=4, key=None, sink=MemorySink(plan.outputs))
    peak = run_steps(s, d)
    assert d.roots_done == 1000
    assert peak < 250  # of 13,000 entities: admission follows the pool, not the input


def test_results_do_not_depend_on_admission():
    def pages(docs):
        return [[f"{d}.{i}" for i in range(d % 7)] for d in docs]

    pipe = cu.Pipeline(Doc)
    ps = pipe.source.expand(cu.stage(pages, batch_size=3), into=Page)
    up = ps.map(cu.stage(lambda xs: [x.upper() for x in xs], name="up", batch_size=5, replicas=2))
    pipe.output("docs", up.reduce(cu.stage(lambda gs: ["|".join(g) for g in gs], name="join")))
    pipe.output("pages", up)
    docs = list(range(60))
    ref = cu.run(pipe, docs, executor="local", input_batch_size=60, inflight=1)
    for opts in ({}, {"input_batch_size": 1}, {"input_batch_size": 4, "inflight": 2}):
        got = cu.run(pipe, docs, executor="local", **opts)
        assert got.values("docs") == ref.values("docs")
        assert [(it.lineage, it.value) for it in got.items("pages")] == \
            [(it.lineage, it.value) for it in ref.items("pages")]
