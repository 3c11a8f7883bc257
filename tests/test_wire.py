"""Values that cannot cross the wire on Ray: an unpicklable stage result or input FAILS that
item alone, with a cause naming the stage and the type; batch-mates and downstream stages are
untouched, and the run (and its resume) completes. Causes carry no terminal colour codes."""

from __future__ import annotations

import threading

import pytest

import curate as cu

Doc = cu.Domain("doc")
Page = Doc.child("page")
P, F = cu.Status.PRESENT, cu.Status.FAILED


@pytest.fixture(autouse=True)
def _ray(ray_cluster):
    return ray_cluster


def make(xs):
    return [threading.Lock() if x == 2 else x for x in xs]


def double(xs):
    return [x * 2 for x in xs]


def pipeline():
    pipe = cu.Pipeline(Doc)
    made = pipe.source.map(cu.stage(make, batch_size=4))
    pipe.output("made", made)
    pipe.output("doubled", made.map(cu.stage(double, batch_size=4)))
    return pipe


def test_an_unpicklable_result_fails_its_item_alone(tmp_path):
    res = cu.run(pipeline(), range(6), executor="ray")
    made = res.items("made")
    assert [it.status for it in made] == [P, P, F, P, P, P]
    cause = made[2].cause
    assert cause.call == "make" and cause.kind == "user_code"
    assert "its result is a lock" in cause.message and "cannot be pickled" in cause.message
    doubled = res.values("doubled")
    assert [v for i, v in enumerate(doubled) if i != 2] == [0, 2, 6, 8, 10]
    assert doubled[2].status is F and doubled[2].cause.call == "make"  # blamed on its own stage
    assert res.metrics.calls["make"].retries == 0  # a value problem, not an attempt to retry


def test_an_unpicklable_child_fails_its_parent_and_spares_the_others():
    def split(docs):
        return [[threading.Lock()] if d == 1 else [d, d] for d in docs]

    pipe = cu.Pipeline(Doc)
    pages = pipe.source.expand(cu.stage(split, batch_size=3), into=Page)
    pipe.output("docs", pages.reduce(cu.stage(lambda gs: [sum(g) for g in gs], name="total")))
    res = cu.run(pipe, range(3), executor="ray")
    docs = res.values("docs")
    assert docs[0] == 0 and docs[2] == 4
    assert docs[1].status is F and "its children include a lock" in docs[1].cause.message


def test_an_unpicklable_input_fails_its_root_and_the_run_completes():
    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(lambda xs: [str(x) for x in xs], name="show", batch_size=4)))
    res = cu.run(pipe, [1, threading.Lock(), 3], executor="ray")
    out = res.items("out")
    assert [it.status for it in out] == [P, F, P] and res.values("out")[0] == "1"
    assert out[1].cause.kind == "input" and "the input is a lock" in out[1].cause.message


def test_an_unpicklable_result_with_parquet_output_completes_and_resumes(tmp_path):
    res = cu.run(pipeline(), range(6), executor="ray", output_dir=tmp_path)
    assert res.counts["made"] == {"present": 5, "failed": 1}
    again = cu.run(pipeline(), range(6), executor="ray", output_dir=tmp_path, resume=True)
    assert again.metrics.roots == 0


def test_causes_from_ray_carry_no_terminal_colour_codes():
    def boom(xs):
        raise RuntimeError("\x1b[31mred\x1b[0m failure")

    pipe = cu.Pipeline(Doc)
    pipe.output("out", pipe.source.map(cu.stage(boom, retries=0)))
    res = cu.run(pipe, [1], executor="ray")
    cause = res.items("out")[0].cause
    assert "\x1b" not in cause.message and "\x1b" not in cause.traceback
    assert "red failure" in cause.message


def test_a_payload_field_named_like_a_lineage_column_is_one_clear_error_on_ray(tmp_path):
    pipe = cu.Pipeline(Doc)
    pipe.output("pages", pipe.source.map(cu.stage(lambda xs: [{"status": "B", "text": x} for x in xs], name="tag")))
    with pytest.raises(cu.PayloadError, match="output 'pages' .* field named 'status'") as err:
        cu.run(pipe, ["a"], executor="ray", output_dir=tmp_path)
    assert "Traceback" not in str(err.value)


def test_large_array_values_travel_and_are_measured():
    import numpy as np

    def images(xs):
        return [np.full((300, 400, 3), x, dtype=np.uint8) for x in xs]  # 360 KB each: pickled out of band

    pipe = cu.Pipeline(Doc)
    pipe.output("sums", pipe.source.map(cu.stage(images, batch_size=2)).map(
        cu.stage(lambda arrs: [int(a[0, 0, 0]) for a in arrs], name="corner")))
    res = cu.run(pipe, [1, 2, 3], executor="ray")
    assert res.values("sums") == [1, 2, 3]
