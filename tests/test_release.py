"""Values nobody reads any more are dropped from the driver's tables as soon as their last
consumer has them for good (frames once their clip's caption is made), so a long input does not
pin every payload until it ends; outputs and values a retry may read again stay."""

from __future__ import annotations

import curate as cu
from curate.core.outcome import BatchReport
from curate.core.plan import compile_plan
from curate.core.scheduler import Scheduler
from curate.errors import Cause

Video = cu.Domain("video")
Frame = Video.child("frame")


def frames(videos):
    return [[f"{v}/f{i}" for i in range(n)] for v, n in videos]


def resize(fs):
    return [f + ":small" for f in fs]


def caption(groups):
    return ["+".join(g) for g in groups]


def plan():
    pipe = cu.Pipeline(Video)
    small = pipe.source.expand(frames, into=Frame).map(cu.stage(resize, batch_size=8, name="resize"))
    pipe.output("captions", small.reduce(cu.stage(caption, name="caption")))
    return compile_plan(pipe)


FRAMES, RESIZE, CAPTION = 0, 1, 2


def run_until_resized(s):
    while (b := s.reserve(FRAMES)) is not None:
        s.complete(b.id, BatchReport(frames(b.inputs)))
    while (b := s.reserve(RESIZE)) is not None:
        s.complete(b.id, BatchReport(resize(b.inputs)))


def test_frames_are_dropped_once_their_caption_is_made_and_outputs_stay():
    p = plan()
    s = Scheduler(p, inflight=1, probe_grains=0)
    s.admit(["v0", "v1"], [("v0", 3), ("v1", 2)])
    run_until_resized(s)
    (w,) = s.windows.values()
    frame_slot = p.nodes_by_id[p.calls[FRAMES].node].out_slot
    resized_slot = p.nodes_by_id[p.calls[RESIZE].node].out_slot
    assert all(v is None for v in w.value[frame_slot])  # read by resize, which is done with them
    assert all(v is not None for v in w.value[resized_slot])  # the caption has not read them yet
    b = s.reserve(CAPTION, limit=1)  # caption of v0 only
    assert b.inputs == [["v0/f0:small", "v0/f1:small", "v0/f2:small"]]
    s.complete(b.id, BatchReport(caption(b.inputs)))
    assert w.value[resized_slot] == [None, None, None, "v1/f0:small", "v1/f1:small"]
    out = p.output_slot("captions")
    assert w.value[out][0] == "v0/f0:small+v0/f1:small+v0/f2:small"  # an output is kept for the sink


def test_a_retried_grain_still_finds_its_input():
    p = plan()
    s = Scheduler(p, inflight=1, probe_grains=0)
    s.admit(["v0"], [("v0", 2)])
    run_until_resized(s)
    b = s.reserve(CAPTION)
    s.fail(b.id, Cause("user_code", "flaky"))  # an attempt failed: the grain goes back
    b = s.reserve(CAPTION)
    assert b.inputs == [["v0/f0:small", "v0/f1:small"]]


def test_results_are_the_same_with_values_dropped(executor):
    pipe = cu.Pipeline(Video)
    small = pipe.source.expand(frames, into=Frame).map(cu.stage(resize, batch_size=3, name="resize"))
    pipe.output("frames", small)
    pipe.output("captions", small.reduce(cu.stage(caption, name="caption", batch_size=2)))
    res = cu.run(pipe, [("a", 3), ("b", 1), ("c", 4)], executor=executor)
    assert res.values("captions")[2] == "c/f0:small+c/f1:small+c/f2:small+c/f3:small"
    assert len(res.values("frames")) == 8


def test_a_dropped_value_is_kept_for_its_output_row_and_released_upstream():
    """A DROPPED item's value at the filter reaches its output's cell (through the map that
    would have read it), and stays there until its root is written; the upstream cells that
    held it let it go as they would a PRESENT one."""
    pipe = cu.Pipeline(Video)
    scored = pipe.source.map(cu.stage(lambda xs: [x + ":scored" for x in xs], name="score", batch_size=4))
    kept = scored.filter(cu.stage(lambda xs: [not x.startswith("dark") for x in xs], name="bright", batch_size=4))
    pipe.output("rows", kept.map(cu.stage(lambda xs: [x + ":row" for x in xs], name="row", batch_size=4)))
    p = compile_plan(pipe)
    s = Scheduler(p, inflight=1, probe_grains=0)
    s.admit(["v0", "dark1"], ["v0", "dark1"])
    b = s.reserve(0)
    s.complete(b.id, BatchReport([x + ":scored" for x in b.inputs]))
    b = s.reserve(1)
    assert b.inputs == ["v0:scored", "dark1:scored"]
    s.complete(b.id, BatchReport([None, None], codes=[cu.Status.PRESENT, cu.Status.DROPPED], causes={1: "dark"}))
    (w,) = s.windows.values()
    score_slot = p.nodes_by_id[p.calls[0].node].out_slot
    out = p.output_slot("rows")
    assert w.value[score_slot] == [None, None]  # the filter and the row map have read them
    assert w.value[out] == [None, "dark1:scored"] and s.pop_finished() == [(w, 1)]  # kept for its row
    b = s.reserve(2)
    assert b.inputs == ["v0:scored"]  # the dropped item never enters the row map
    s.complete(b.id, BatchReport(["v0:scored:row"]))
    assert w.value[out] == ["v0:scored:row", "dark1:scored"]
