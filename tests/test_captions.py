"""Captions can never land on the wrong clip. A stand-in captioner writes into each caption the
identity it reads from the clip's own frames (the video and clip numbers painted into the pixels,
the frames' timestamps), and every caption is checked against the row it lands in: its lineage and
its clip record. Many videos share batches (batch_size > 1, all videos admitted in one window), on
a pool of 2 replicas that also serves the per-video summary; the captioner raises on its first
call (a failed attempt: split and retried), and on Ray its actor dies once mid-batch (os._exit).
Some clips are filtered out, one clip has no frames (it alone FAILS; its video's row goes on without it), some
videos have no clips. The wiring is the recipe's, with synthetic probe, splitter and sampler: clips
-> filter -> frames -> caption (a reduce Frame -> Clip on the shared pool) -> rows (the modality's
ClipRows on a zip with the clip) -> summary (a reduce on the same pool) and the video's row."""

from __future__ import annotations

import os

import numpy as np
from curate.modalities.video.assemble import ClipRows, collect, video_captions, with_summary
from curate.modalities.video.records import (
    Clip,
    ClipCaption,
    ClipRecord,
    Frame,
    FrameRecord,
    Video,
    VideoCaptions,
    VideoRecord,
)

import curate as cu

VIDEOS = [7, 3, 11, 0, 5, 9, 1, 12, 4, 8, 2, 10, 6]  # input order is not video order
NO_FRAMES = (11, 1)  # (video, clip) sampled to no frames
CLIP_S = 2.0


def clips_in(video: int) -> int:
    return video % 4  # video 0, 4, 8, 12: no clips


def frames_in(video: int, clip: int) -> int:
    return 0 if (video, clip) == NO_FRAMES else (video + clip) % 3 + 1


def short(video: int, clip: int) -> bool:
    return (video + clip) % 5 == 0  # filtered out: too short


def video_number(path: str) -> int:
    return int(path.removeprefix("video").removesuffix(".mp4"))


# ---- the synthetic modality stages (module level: Ray workers import them from tests/) -------------
def probe(paths: list[str]) -> list[VideoRecord]:
    return [VideoRecord(path, "mp4", "h264", 10 * CLIP_S, 10.0, 16, 8, 200) for path in paths]


def split_clips(videos: list[VideoRecord]) -> list[list[ClipRecord]]:
    out = []
    for video in videos:
        path, v = video.path, video_number(video.path)
        out.append([ClipRecord(path, k * CLIP_S, k * CLIP_S + (0.5 if short(v, k) else CLIP_S), 20 * k,
                               20 * k + 10, 10.0, 16, 8) for k in range(clips_in(v))])
    return out


def long_enough(clips: list[ClipRecord]) -> list[tuple[bool, str]]:
    return [(c.duration_s >= 1.0, f"shorter than 1 s ({c.duration_s} s)") for c in clips]


def sample_frames(clips: list[ClipRecord]) -> list[list[FrameRecord]]:
    """Per clip, its frames: the video and clip numbers and the frame's number painted into the pixels."""
    out = []
    for c in clips:
        v, k = video_number(c.path), round(c.start_s / CLIP_S)
        frames = []
        for j in range(frames_in(v, k)):
            image = np.zeros((8, 16, 3), np.uint8)
            image[..., 0], image[..., 1], image[..., 2] = v, k, j
            frames.append(FrameRecord(c.start_s + 0.25 * j, image, 16, 8))
        out.append(frames)
    return out


def identity(frames: list[FrameRecord]) -> str:
    """What the frames say they are: video, clip, frame numbers (from pixels), and timestamps."""
    (v, k), = {(int(f.image[0, 0, 0]), int(f.image[0, 0, 1])) for f in frames}  # one clip's frames only
    assert [int(f.image[0, 0, 2]) for f in frames] == list(range(len(frames))), "frames out of order"
    return f"video{v}/clip{k}@" + ",".join(f"{f.timestamp_s:.2f}" for f in frames)


def expected(video: int, clip: int) -> str:
    times = (clip * CLIP_S + 0.25 * j for j in range(frames_in(video, clip)))
    return f"video{video}/clip{clip}@" + ",".join(f"{t:.2f}" for t in times)


def pipeline(captioner_class, init: dict) -> cu.Pipeline:
    captioner = cu.Pool(captioner_class, init=init, replicas=2)
    pipe = cu.Pipeline(Video)
    videos = pipe.source.map(cu.stage(probe, batch_size=4))
    clips = videos.expand(cu.stage(split_clips, batch_size=4), into=Clip)
    kept = clips.filter(cu.stage(long_enough, batch_size=8))
    frames = kept.expand(cu.stage(sample_frames, batch_size=3), into=Frame)
    captions = frames.reduce(captioner.stage("caption_clips", batch_size=3))
    rows = cu.zip(kept, captions).map(cu.stage(ClipRows, batch_size=5))
    summaries = rows.reduce(captioner.stage("summarize", batch_size=2), on_child_failure="drop")
    clip_lists = rows.reduce(cu.stage(collect, batch_size=4), on_child_failure="drop")
    per_video = cu.zip(videos, clip_lists).map(video_captions)
    pipe.output("clips", rows)
    pipe.output("videos", cu.zip(per_video, summaries).map(with_summary))
    return pipe


# ---- the test --------------------------------------------------------------------------------------
def test_every_caption_lands_on_its_own_clip(executor, recorder):
    die = executor == "ray"

    class EchoCaptioner:
        """Captions each clip with the identity its frames carry; fails its first call, and on Ray
        its worker dies in its second."""

        def caption_clips(self, clips: list) -> list:
            call = recorder.incr("caption calls")
            if call == 1:
                raise RuntimeError("the first caption call fails")  # a failed attempt: split, retried
            if die and call == 2:
                os._exit(1)  # the actor dies mid-batch; Ray restarts it
            recorder.add("batch", sorted({identity(f).split("/")[0] for f in clips if f}))
            return [ClipCaption(identity(f), "echo", "identity", len(f), f[0].timestamp_s, f[-1].timestamp_s)
                    if f else cu.ItemFailure(cu.InputError("the clip has no frames to caption")) for f in clips]

        def summarize(self, videos: list) -> list:
            return [" | ".join(c.caption for c in captions) for captions in videos]

    result = cu.run(pipeline(EchoCaptioner, {}), [f"video{v}.mp4" for v in VIDEOS], executor=executor,
                    input_batch_size=len(VIDEOS), inflight=1)

    rows = result.items("clips")
    assert [it.lineage for it in rows] == [(i, k) for i, v in enumerate(VIDEOS) for k in range(clips_in(v))]
    for it in rows:
        i, k = it.lineage
        v = VIDEOS[i]
        if short(v, k):
            assert it.status is cu.Status.DROPPED and "shorter than 1 s" in it.cause
        elif (v, k) == NO_FRAMES:
            assert it.status is cu.Status.FAILED and "no frames" in it.cause.message
        else:
            assert it.status is cu.Status.PRESENT, it
            row = it.value
            assert row.caption == expected(v, k), (it.lineage, row.caption)  # its own clip's frames
            assert (row.start_s, row.end_s, row.frames) == (k * CLIP_S, (k + 1) * CLIP_S, frames_in(v, k))
    for it in result.items("videos"):
        v = VIDEOS[it.lineage[0]]
        kept = [k for k in range(clips_in(v)) if not short(v, k) and (v, k) != NO_FRAMES]  # as the recipe: drop
        captions = tuple(expected(v, k) for k in kept)
        assert it.status is cu.Status.PRESENT and isinstance(it.value, VideoCaptions)
        assert it.value.captions == captions and it.value.summary == " | ".join(captions), (v, it.value)
        assert it.value.spans == tuple((k * CLIP_S, (k + 1) * CLIP_S) for k in kept)

    calls = result.metrics.calls["EchoCaptioner.caption_clips"]
    assert calls.retries >= (2 if die else 1)
    assert any(len(videos) > 1 for videos in recorder.values("batch")), "no batch mixed videos"
    assert sorted(result.metrics.pools["EchoCaptioner"].calls) == ["EchoCaptioner.caption_clips",
                                                                    "EchoCaptioner.summarize"]
