"""End-to-end semantics through `cu.run`, parametrised over executors: hierarchies, ordering,
failures, retries, shared pools, streaming inputs."""

from __future__ import annotations

import os
import threading

import pytest

import curate as cu

Doc = cu.Domain("doc")
Page = Doc.child("page")
Region = Page.child("region")
P, D, F, S = cu.Status.PRESENT, cu.Status.DROPPED, cu.Status.FAILED, cu.Status.SUPPRESSED


def pages_of(docs):
    return [[f"{d}/p{i}" for i in range(int(d.split(":")[1]))] for d in docs]


def upper(xs):
    return [x.upper() for x in xs]


def joined(groups):
    return ["|".join(g) for g in groups]


def _n(page: str) -> int:
    return (int(page[-1]) + 1) % 3  # p0: 1 region, p1: 2, p2: none


def test_three_level_hierarchy_goes_down_and_back_up_in_order(executor):
    # doc -> page -> region -> page -> doc, with cross-parent batches at the region level
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(pages_of, batch_size=3), into=Page)
    regions = pages.expand(cu.stage(lambda ps: [[f"{p}/r{j}" for j in range(_n(p))] for p in ps],
                                    name="regions"), into=Region)
    text = regions.map(cu.stage(upper, batch_size=4, replicas=2))
    page_md = text.reduce(cu.stage(joined, batch_size=2))
    doc_md = page_md.reduce(cu.stage(lambda gs: ["\n".join(g) for g in gs], name="doc_md"))
    pipe.output("docs", doc_md)
    pipe.output("regions", text)
    docs = ["a:2", "bb:0", "ccc:3"]
    res = cu.run(pipe, docs, executor=executor, input_batch_size=2, inflight=1)

    def expect(d):
        out = []
        for p in pages_of([d])[0]:
            out.append("|".join(f"{p}/r{j}".upper() for j in range(_n(p))))
        return "\n".join(out)

    assert res.values("docs") == [expect(d) for d in docs]
    regions_items = res.items("regions")
    assert [it.lineage for it in regions_items] == sorted(it.lineage for it in regions_items)
    assert regions_items[0].lineage == (0, 0, 0) and regions_items[0].value == "A:2/P0/R0"
    assert res.metrics.calls["upper"].items == len(regions_items)


def test_expand_to_zero_children_reduces_an_empty_list(executor):
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(pages_of, into=Page)
    pipe.output("docs", pages.map(upper).reduce(lambda gs: [len(g) for g in gs]))
    pipe.output("pages", pages)
    res = cu.run(pipe, ["x:0", "y:2", "z:0"], executor=executor)
    assert res.values("docs") == [0, 2, 0]
    assert [it.lineage for it in res.items("pages")] == [(1, 0), (1, 1)]


def test_filter_drops_with_reason_and_values_show_issues(executor):
    def keep_even(xs):
        return [(x % 2 == 0, f"{x} is odd") for x in xs]

    pipe = cu.Pipeline(Doc)
    kept = pipe.source.filter(cu.stage(keep_even, batch_size=4))
    pipe.output("kept", kept.map(lambda xs: [x * 10 for x in xs]))
    res = cu.run(pipe, [0, 1, 2, 3], executor=executor)
    vals = res.values("kept")
    assert vals[0] == 0 and vals[2] == 20
    assert isinstance(vals[1], cu.Issue) and vals[1].status is D and vals[1].cause == "1 is odd"
    assert res.metrics.calls["keep_even"].dropped == 2


def test_poison_item_is_isolated_and_the_rest_of_the_batch_succeeds(executor, recorder):
    def fragile(xs):
        recorder.add("batch", len(xs))
        if 13 in xs:
            raise ValueError("cannot handle 13")
        return [x + 1 for x in xs]

    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(lambda ds: [list(range(d)) for d in ds], into=Page)
    out = pages.map(cu.stage(fragile, batch_size=8, retries=2))
    pipe.output("pages", out)
    pipe.output("docs", out.reduce(lambda gs: [sum(g) for g in gs], on_child_failure="drop"))
    res = cu.run(pipe, [20, 5], executor=executor, input_batch_size=2)
    pages = res.items("pages")
    failed = [it for it in pages if it.status is F]
    assert [it.lineage for it in failed] == [(0, 13)]
    assert failed[0].cause.error_type == "ValueError" and "cannot handle 13" in failed[0].cause.message
    assert "Traceback" in failed[0].cause.traceback
    assert all(it.value == it.lineage[1] + 1 for it in pages if it.status is P)
    assert res.values("docs") == [sum(range(1, 21)) - 14, sum(range(1, 6))]
    m = res.metrics.calls["fragile"]
    assert m.retries > 0 and m.failed == 1
    assert recorder.values("batch").count(1) >= 3  # the poison ran alone 1 + retries times


def test_transient_errors_are_retried_to_success(executor, recorder):
    def flaky(xs):
        if any([recorder.incr(f"seen {x}") == 1 for x in xs]):  # every item fails its first run
            raise cu.TransientError("busy device")
        return [x * 2 for x in xs]

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(flaky, batch_size=3, retries=1)))
    res = cu.run(pipe, list(range(7)), executor=executor)
    assert res.values("out") == [x * 2 for x in range(7)]


def test_default_reduce_suppresses_parent_with_the_child_cause(executor):
    def ocr(ps):
        return [cu.ItemFailure("unreadable") if p.endswith("p1") else p for p in ps]

    pipe = cu.Pipeline(Doc)
    text = pipe.source.expand(pages_of, into=Page).map(cu.stage(ocr, batch_size=4))
    pipe.output("docs", text.reduce(joined))
    res = cu.run(pipe, ["a:1", "b:3"], executor=executor)
    a, b = res.items("docs")
    assert a.status is P and a.value == "a:1/p0"
    assert b.status is S and b.cause.message == "unreadable" and b.cause.kind == "item"


def test_group_failure_suppresses_siblings_but_not_other_parents(executor, recorder):
    def ocr(ps):
        for p in ps:
            recorder.add("ran", p)
        return [cu.GroupFailure("bad document") if p == "b:3/p0" else p for p in ps]

    pipe = cu.Pipeline(Doc)
    text = pipe.source.expand(pages_of, into=Page).map(cu.stage(ocr, batch_size=1))
    pipe.output("pages", text)
    pipe.output("docs", text.reduce(joined))
    res = cu.run(pipe, ["a:2", "b:3", "c:1"], executor=executor, input_batch_size=1, inflight=1)
    by = {it.lineage: it for it in res.items("pages")}
    assert by[(1, 0)].status is F
    assert by[(1, 1)].status is S and by[(1, 2)].status is S
    # p1 may have been in flight beside p0 (pipelined workers) and then could not commit;
    # p2 was still queued when p0 failed, so it never entered the stage
    assert "b:3/p2" not in recorder.values("ran")
    assert [v for v in res.values("docs")][0] == "a:2/p0|a:2/p1"
    assert res.values("docs")[2] == "c:1/p0"
    assert res.values("docs")[1].status is S
    assert res.metrics.calls["ocr"].suppressed == 2


def test_shared_pool_serves_two_calls_with_one_model_per_worker(executor, recorder):
    class Stack:
        def __init__(self, scale):
            recorder.add("built", f"{os.getpid()}/{threading.get_ident()}")
            self.scale = scale

        def layout(self, pages):
            return [[f"{p}#{i}" for i in range(2)] for p in pages]

        def recognize(self, regions):
            return [f"{r}*{self.scale}" for r in regions]

    pool = cu.Pool(Stack, init={"scale": 3}, replicas=2)
    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(pages_of, into=Page)
    regions = pages.expand(pool.stage("layout", batch_size=4), into=Region)
    text = regions.map(pool.stage("recognize", batch_size=8))
    pipe.output("docs", text.reduce(joined).reduce(lambda gs: [" ".join(g) for g in gs]))
    res = cu.run(pipe, ["a:3", "b:2", "c:5"], executor=executor)
    assert res.values("docs")[1] == "b:2/p0#0*3|b:2/p0#1*3 b:2/p1#0*3|b:2/p1#1*3"
    built = recorder.values("built")
    assert 1 <= len(built) <= 2 and len(set(built)) == len(built)  # one model load per worker
    pm = res.metrics.pools["Stack"]
    assert sorted(pm.calls) == ["Stack.layout", "Stack.recognize"] and pm.replicas == 2
    assert sum(pm.worker_batches) == sum(res.metrics.calls[c].batches for c in pm.calls)


def test_streaming_input_of_unknown_length_is_admitted_window_by_window(executor, recorder):
    def source():
        for i in range(40):
            recorder.add("pulled", i)
            yield i

    def note(xs):
        for x in xs:
            recorder.add("ran", x)
        return xs

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(note, batch_size=2)))
    res = cu.run(pipe, source(), executor=executor, input_batch_size=3, inflight=2)
    assert res.values("out") == list(range(40))
    # when root x runs, at most its own window and one more (of three roots each) were pulled
    pulled = 0
    for key, x in recorder.events():
        if key == "pulled":
            pulled += 1
        else:
            assert pulled <= (x // 3 + 2) * 3, (x, pulled)
    assert pulled == 40


def test_class_stage_whose_constructor_fails_fails_its_items(executor):
    class Broken:
        def __init__(self):
            raise OSError("weights not found at /models/x")

        def __call__(self, xs):
            return xs

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(Broken, retries=1)))
    res = cu.run(pipe, [1, 2], executor=executor)
    for v in res.values("out"):
        assert v.status is F and "weights not found" in v.cause.message


def test_malformed_stage_answer_fails_with_a_clear_message(executor):
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(lambda xs: xs[:-1], batch_size=4, retries=0, name="short")))
    res = cu.run(pipe, [1, 2, 3], executor=executor)
    issue = res.values("out")[0]
    assert issue.status is F
    assert "returned 0 results for a batch of 1" in issue.cause.message


def test_results_do_not_depend_on_batching_windows_or_replicas(executor):
    def build(bs, reps):
        pipe = cu.Pipeline(Doc)
        pages = pipe.source.expand(cu.stage(pages_of, batch_size=bs), into=Page)
        text = pages.map(cu.stage(upper, batch_size=bs, replicas=reps))
        pipe.output("docs", text.reduce(cu.stage(joined, batch_size=bs)))
        pipe.output("pages", text)
        return pipe

    docs = [f"d{i}:{(i * 7) % 6}" for i in range(25)]
    ref = cu.run(build(1, 1), docs, executor=executor, input_batch_size=1, inflight=1)
    for bs, reps, win, inf in [(4, 2, 3, 2), (32, 3, 25, 1), (2, 1, 7, 4)]:
        res = cu.run(build(bs, reps), iter(docs), executor=executor, input_batch_size=win, inflight=inf)
        assert res.values("docs") == ref.values("docs")
        assert res.items("pages") == ref.items("pages")


def test_metrics_report_batches_fill_and_first_completion(executor):
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(upper, batch_size=4)))
    res = cu.run(pipe, [f"x{i}" for i in range(8)], executor=executor, input_batch_size=8)
    m = res.metrics
    c = m.calls["upper"]
    assert c.items == 8 and c.batches >= 2 and 0 < c.batch_fill <= 1
    assert m.roots == 8 and m.first_root_s is not None and m.first_root_s <= m.wall_s
    assert "upper" in m.summary()
    assert res.root_keys() == [str(i) for i in range(8)]


def test_unknown_output_name_says_which_exist(executor):
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(upper))
    res = cu.run(pipe, ["a"], executor=executor)
    with pytest.raises(KeyError, match="outputs are \\['out'\\]"):
        res.values("nope")
