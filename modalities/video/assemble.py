"""Clips -> rows: the clips table's row (`ClipRows`), and a video's ordered captions (`collect`,
then `video_captions`).

- `ClipRows` (a map on a zip of the kept clip, its caption and, optionally, its extracted file)
  builds a clip's `ClipCaption`: the caption; the model and prompt that made it; the frames it
  saw; the clip's span, `split` and `decisions`; its scores (filter name -> score); and the
  extracted file's bytes in `clip_file`, for the sink to write. The caption is what the captioner's reduce (Frame -> Clip)
  returned: a text, or a mapping or object with `caption` (or `text`) and optional `model`,
  `prompt` and `frames` (a count, or the frames). What it does not say is taken from
  `ClipRows`' init: `model`, `prompt`, and the frames the sampler takes from such a clip
  (`fps`, `frames`, `max_frames`: give the sampler's values).
- `collect` (a reduce Clip -> Video) gives a video's clip rows in clip order (DROPPED clips are
  left out by the engine), and `video_captions` (a map on a zip of the VideoRecord and that
  list) makes the video's `VideoCaptions`: the clips' spans and captions, in order.
- `with_summary` (a map on a zip of the VideoCaptions and the captioner's summary of the video)
  makes the videos table's row: the VideoCaptions with its `summary`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from curate.modalities.video.frames import frame_times
from curate.modalities.video.records import (
    DEFAULT_SAMPLE_FPS,
    MAX_FRAMES_PER_CLIP,
    ClipCaption,
    EncodedClip,
    ScoredClip,
    VideoCaptions,
    VideoRecord,
    clip_of,
)

import curate as cu


class ClipRows:
    """Map: (clip or ScoredClip, caption[, EncodedClip or None]) -> the clip's ClipCaption row."""

    def __init__(self, model: str = "", prompt: str = "", fps: float | None = DEFAULT_SAMPLE_FPS,
                 frames: int | None = None, max_frames: int = MAX_FRAMES_PER_CLIP):
        self.model, self.prompt = str(model), str(prompt)
        self.fps, self.frames, self.max_frames = fps, frames, max_frames

    def __call__(self, items: list[tuple]) -> list:
        return [self.row(*item) for item in items]

    def row(self, clip: Any, caption: Any, encoded: EncodedClip | None = None) -> ClipCaption | cu.ItemFailure:
        record = clip_of(clip)
        text = _field(caption, "caption", _field(caption, "text")) if not isinstance(caption, str) else caption
        if not isinstance(text, str):
            return cu.ItemFailure(cu.InputError(f"{record.path}: the caption of clip [{record.start_s:.2f}, "
                                                f"{record.end_s:.2f}) s is {type(caption).__name__}, not a text or a "
                                                "record with 'caption'; make the captioner's reduce return one"))
        seen = _field(caption, "frames")
        if seen is None:
            seen = len(frame_times(record, self.fps, self.frames, self.max_frames))
        elif not isinstance(seen, int):
            seen = len(seen)
        scores = clip.score_map() if isinstance(clip, ScoredClip) else {}
        return ClipCaption(caption=text, model=str(_field(caption, "model", self.model)),
                           prompt=str(_field(caption, "prompt", self.prompt)), frames=seen, start_s=record.start_s,
                           end_s=record.end_s, scores=scores,
                           clip_file=encoded.clip_file if isinstance(encoded, EncodedClip) else None,
                           split=record.split, decisions=record.decisions)


def _field(value: Any, name: str, default: Any = None) -> Any:
    if isinstance(value, str):
        return default
    if isinstance(value, dict):
        return value.get(name, default)
    return getattr(value, name, default)


def collect(groups: list[list]) -> list[list]:
    """Reduce: a video's clip rows, as a list in clip order (possibly empty)."""
    return [list(g) for g in groups]


def video_captions(items: list[tuple[VideoRecord, list]]) -> list[VideoCaptions]:
    """Per (video, its clip rows in order): the video's VideoCaptions."""
    return [_captions(video, rows) for video, rows in items]


def _captions(video: VideoRecord, rows: list) -> VideoCaptions:
    spans, captions = [], []
    for row in rows:
        if isinstance(row, ClipCaption):
            spans.append((row.start_s, row.end_s))
            captions.append(row.caption)
        else:  # a clip without a caption (a pipeline that splits and filters only)
            record = clip_of(row)
            spans.append((record.start_s, record.end_s))
            captions.append("")
    return VideoCaptions(clips=len(rows), spans=tuple(spans), captions=tuple(captions), duration_s=video.duration_s,
                         duration_measured=video.duration_measured, notes=tuple(video.notes))


def with_summary(items: list[tuple[VideoCaptions, str | None]]) -> list[VideoCaptions]:
    """Per (VideoCaptions, its summary): the videos table's row, with the summary (the captioner's
    `summarize` Call makes it: `curate.modalities.video.captions`)."""
    return [dataclasses.replace(captions, summary=summary) for captions, summary in items]
