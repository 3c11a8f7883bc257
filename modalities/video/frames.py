"""Clip -> frames: the frames a captioner sees, sampled from the clip and already sized for it.

`SampleFrames` is the expand from a clip (a `ClipRecord`, or a `ScoredClip`) to its
`FrameRecord`s in time order: N frames spread evenly over the clip (`frames: N`), or `fps` frames
per second (default 2), at most `max_frames` (a long clip is sampled more sparsely), each the
frame shown at the middle of its share of the clip. Each is resized once, here, to `size` (the
long side, e.g. 448, or a [w, h] box; the aspect ratio kept, never enlarged unless `upscale`), so
the pixels cross the object store once, at the captioner's size, never at the video's. A long clip is read
in windows (a keyframe seek to each sample that is more than a GOP ahead): a video is never
decoded whole into memory.

A captioner's reduce (Frame -> Clip) then gets each clip's frames in this order, its ordinals.
A clip of which no sampled frame decodes is an ItemFailure; a frame that does not decode is
replaced by the next one that does (its `timestamp_s` is the real one).
"""

from __future__ import annotations

import math

from curate.modalities.video.decode import (
    DEFAULT_THREADS,
    check_size,
    each,
    fit_size,
    frames_at,
)
from curate.modalities.video.records import (
    DEFAULT_SAMPLE_FPS,
    MAX_FRAMES_PER_CLIP,
    ClipRecord,
    FrameRecord,
    clip_of,
)

import curate as cu

DEFAULT_SIZE = 448  # long side in px: Qwen2.5-VL's usual frame size (16 x 28-px patches)
EPS = 1e-6


def frame_times(clip: ClipRecord, fps: float | None = DEFAULT_SAMPLE_FPS, frames: int | None = None,
                max_frames: int = MAX_FRAMES_PER_CLIP) -> list[float]:
    """The times (seconds from the video's start) to sample in a clip: `frames` of them, else `fps`
    per second (at least 1), at most `max_frames` and at most the clip's frame count, each at the
    middle of an equal share of the clip."""
    n = frames if frames else max(1, math.floor(clip.duration_s * fps + EPS))
    n = max(1, min(n, max_frames, clip.end_frame - clip.start_frame))
    step = clip.duration_s / n
    return [clip.start_s + (i + 0.5) * step for i in range(n)]


class SampleFrames:
    """Expand: a clip -> its FrameRecords, in time order, resized (see the module docstring)."""

    requires = ("av",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, fps: float | None = DEFAULT_SAMPLE_FPS, frames: int | None = None,
                 max_frames: int = MAX_FRAMES_PER_CLIP, size: int | list[int] | None = DEFAULT_SIZE,
                 upscale: bool = False, threads: int = DEFAULT_THREADS):
        if frames is not None and (not isinstance(frames, int) or frames < 1):
            raise ValueError(f"frames={frames!r}; give a whole number >= 1 (frames per clip), or null to sample by fps")
        if frames is None and (isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps > 0):
            raise ValueError(f"fps={fps!r}; give frames per second > 0, e.g. fps: 2 (or frames: 8 for a fixed count)")
        if not isinstance(max_frames, int) or max_frames < 1:
            raise ValueError(f"max_frames={max_frames!r}; give a whole number >= 1, "
                             f"e.g. max_frames: {MAX_FRAMES_PER_CLIP}")
        self.fps, self.frames, self.max_frames = fps, frames, max_frames
        self.size, self.upscale, self.threads = check_size(size), upscale, threads

    def __call__(self, clips: list) -> list:
        return each(self.sample, clips, clip_of)

    def sample(self, clip: ClipRecord, frames: int | None = None) -> list[FrameRecord]:
        """The frames of one clip (`frames` of them: else as the init says); raises InputError if
        none decodes."""
        times = frame_times(clip, self.fps, frames or self.frames, self.max_frames)
        size = fit_size(clip.width, clip.height, self.size, self.upscale)
        found, note = frames_at(clip, times, size, self.threads)
        if not found:
            raise cu.InputError(f"{clip.path}: no frame of the clip [{clip.start_s:.2f}, {clip.end_s:.2f}) s decodes"
                                f"{f' ({note})' if note else ''}; the file is damaged there: re-encode it, or drop "
                                "the clip")
        return [FrameRecord(timestamp_s=round(t, 6), image=image, width=image.shape[1], height=image.shape[0])
                for t, image in found]
