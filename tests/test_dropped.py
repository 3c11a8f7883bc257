"""A DROPPED item keeps the value it had at the filter that dropped it, and that value travels
with its status to the outputs: through maps, expands and their reduces, zips and broadcasts
that would have consumed it. `result.items()` gives it, `result.values()` an Issue in its
place; a Parquet row carries its columns (the columns later stages add stay null). The same
on both executors."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import curate as cu

Doc = cu.Domain("doc")
Page = Doc.child("page")
D, P = cu.Status.DROPPED, cu.Status.PRESENT
INPUTS = [0, 1, 2, 3]
ODD = {"n": 1, "score": 0.5}  # input 1's value at the filter


def scored(xs):
    return [{"n": x, "score": x / 2} for x in xs]


def keep_even(rows):
    return [(r["n"] % 2 == 0, f"{r['n']} is odd") for r in rows]


def labelled(rows):
    return [{**r, "label": f"#{r['n']}"} for r in rows]


def pages_of(rows):
    return [[f"{r['n']}/p{i}" for i in range(2)] for r in rows]


def counted(groups):
    return [{"pages": len(g)} for g in groups]


def copies(xs):
    return [[f"{x}/c{i}" for i in range(2)] for x in xs]


def paired(pairs):
    return [{"copy": c, **k} for c, k in pairs]


def pipeline() -> cu.Pipeline:
    pipe = cu.Pipeline(Doc)
    kept = pipe.source.map(cu.stage(scored, batch_size=4)).filter(cu.stage(keep_even, batch_size=4))
    pipe.output("labels", kept.map(labelled))  # a map
    pipe.output("counts", kept.expand(pages_of, into=Page).reduce(counted))  # an expand and its reduce
    pipe.output("pairs", cu.zip(pipe.source, kept).map(lambda ps: [{"input": a, **b} for a, b in ps]))  # a zip
    spread = pipe.source.expand(copies, into=Page)  # children made before their parent is dropped
    pipe.output("spread", cu.zip(spread, kept.broadcast(onto=spread)).map(paired))  # a broadcast
    return pipe


def test_a_dropped_item_keeps_its_value_at_the_filter_in_memory(executor):
    res = cu.run(pipeline(), INPUTS, executor=executor, input_batch_size=2)
    for name in ("labels", "counts", "pairs", "spread"):
        dropped = [it for it in res.items(name) if it.status is D]
        assert [it.lineage[0] for it in dropped] == ([1, 1, 3, 3] if name == "spread" else [1, 3]), name
        assert dropped[0].value == ODD and dropped[0].cause == "1 is odd", (name, dropped[0])
        assert dropped[-1].value == {"n": 3, "score": 1.5}, name
    assert res.values("labels")[2] == {"n": 2, "score": 1.0, "label": "#2"}
    issue = res.values("labels")[1]
    assert isinstance(issue, cu.Issue) and issue.status is D and issue.cause == "1 is odd"


def test_a_dropped_row_carries_the_columns_of_its_value(executor, tmp_path):
    out = tmp_path / "out"
    res = cu.run(pipeline(), INPUTS, executor=executor, input_batch_size=2, output_dir=out)
    labels = sorted(pq.read_table(out / "labels").to_pylist(), key=lambda r: r["lineage"])
    assert [(r["status"], r["n"], r["score"], r["label"]) for r in labels] == [
        ("present", 0, 0.0, "#0"), ("dropped", 1, 0.5, None), ("present", 2, 1.0, "#2"), ("dropped", 3, 1.5, None)]
    counts = {tuple(r["lineage"]): r for r in pq.read_table(out / "counts").to_pylist()}
    assert (counts[(1,)]["n"], counts[(1,)]["pages"], counts[(0,)]["pages"]) == (1, None, 2)
    spread = [r for r in pq.read_table(out / "spread").to_pylist() if r["status"] == "dropped"]
    assert sorted((r["n"], r["score"], r["copy"]) for r in spread) == [(1, 0.5, None)] * 2 + [(3, 1.5, None)] * 2
    item = res.items("labels")[1]  # read back: the row's payload columns
    assert item.status is D and item.value == {**ODD, "label": None} and item.cause == "1 is odd"
    assert isinstance(res.values("labels")[1], cu.Issue)


def test_a_filter_that_drops_nothing_of_value_leaves_no_columns(executor, tmp_path):
    """A dropped item whose value at the filter was None has an empty row, read back as None."""
    pipe = cu.Pipeline(Doc)
    pipe.output("kept", pipe.source.filter(cu.stage(lambda xs: [x is not None for x in xs], name="some")))
    res = cu.run(pipe, [None, 1], executor=executor, output_dir=tmp_path / "o")
    assert [(it.status, it.value) for it in res.items("kept")] == [(D, None), (P, 1)]


@pytest.mark.parametrize("kind", ["failed", "suppressed"])
def test_failed_and_suppressed_items_carry_no_value(executor, kind):
    def fragile(xs):
        return [cu.ItemFailure("bad") if x == 1 else x for x in xs] if kind == "failed" else \
            [cu.GroupFailure("bad") if x == "1/c0" else x for x in xs]

    pipe = cu.Pipeline(Doc)
    if kind == "failed":
        pipe.output("out", pipe.source.map(cu.stage(fragile, retries=0)).map(lambda xs: xs))
    else:
        pipe.output("out", pipe.source.expand(copies, into=Page).map(cu.stage(fragile, batch_size=1, retries=0)))
    res = cu.run(pipe, [0, 1], executor=executor)
    bad = [it for it in res.items("out") if it.status is not P]
    assert bad and all(it.value is None for it in bad)


def test_ray_secures_the_payloads_a_dropped_row_reads():
    """On Ray, the payloads that hold output values are kept on the driver's node (a copy that
    outlives a worker's node): now also those of the Calls before a filter, whose values a
    DROPPED row carries."""
    pytest.importorskip("ray")
    from curate.core.plan import compile_plan
    from curate.executors.ray.store import output_calls

    pipe = cu.Pipeline(Doc)
    kept = pipe.source.map(cu.stage(scored, name="score")).filter(cu.stage(keep_even, name="even"))
    pipe.output("labels", kept.map(cu.stage(labelled, name="label")))
    pipe.output("pages", pipe.source.expand(copies, into=Page))
    plan = compile_plan(pipe)
    names = {c.id: c.name for c in plan.calls}
    assert {names[c] for c in output_calls(plan)} == {"score", "label", "copies"}
