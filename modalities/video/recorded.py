"""A video run's committed rows -> the values its caption steps take: what `curate rerun OUT
--step captions` uses (recipes/video_captions.yaml, `rerun: captions:`) instead of probing,
splitting, scoring and sampling the videos again.

- `ClipFileFrames` (expand: a clip's row -> its frames) samples the frames the captioner sees
  from the clip's own file (`clip_file`, written by the run), as `SampleFrames` samples them from
  the video: by default as many as the row says the captioner saw (`frames`), so at the same
  times within the clip (reported as times in the video); or by `fps` / `frames` as given. The
  file is a re-encoding of the span, so the pixels are close to, not the same as, the video's.
- `recaptioned` (map: a clip's row and its new caption) gives the clips table's row again: the
  new caption, model, prompt and frames, everything else as recorded (span, scores, split,
  decisions, and the path of its clip file, which the rerun does not write again); a clip the
  selection did not pick keeps its recorded row.
- `video_record` (map: a video's row) gives what the videos table's row is made from (duration,
  notes), as the probe's `VideoRecord` gave it."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from curate.modalities.video.decode import each, open_video
from curate.modalities.video.frames import DEFAULT_SIZE, SampleFrames
from curate.modalities.video.records import (
    DEFAULT_SAMPLE_FPS,
    MAX_FRAMES_PER_CLIP,
    ClipCaption,
    ClipRecord,
    FrameRecord,
)

import curate as cu


def clip_file(row) -> str:
    """The absolute path (or URL) of a clip row's file; InputError if the row has none."""
    rel = row.get("clip_file")
    if not rel:
        raise cu.InputError(f"clip {row.entity_id} has no clip_file in its row: the run wrote no clip files, and a "
                            "rerun reads a clip's frames from its file; run the recipe with its clip_files step")
    return posixpath.join(row.files_dir, rel) if "://" in row.files_dir else f"{row.files_dir}/{rel}"


class ClipFileFrames(SampleFrames):
    """Expand: a clip's recorded row -> its FrameRecords, sampled from its clip file."""

    def __init__(self, fps: float | None = None, frames: int | None = None,
                 max_frames: int = MAX_FRAMES_PER_CLIP, size: int | list[int] | None = DEFAULT_SIZE,
                 upscale: bool = False, threads: int = 1):
        super().__init__(fps or DEFAULT_SAMPLE_FPS, frames, max_frames, size, upscale, threads)
        self.recorded = fps is None and frames is None  # as many frames as the run's captioner saw

    def __call__(self, rows: list) -> list:
        return each(self.sample_row, rows)

    def sample_row(self, row) -> list[FrameRecord]:
        record = self.file_record(row)
        start = float(row["start_s"])
        seen = row.get("frames")  # as many as the run sampled: each in the middle of its share, at the same times
        found = self.sample(record, seen if self.recorded and isinstance(seen, int) and seen > 0 else None)
        return [FrameRecord(round(f.timestamp_s + start, 6), f.image, f.width, f.height) for f in found]

    def file_record(self, row) -> ClipRecord:
        """The clip file as a ClipRecord of its own (time 0 at the clip's start)."""
        path = clip_file(row)
        container, stream = open_video(path, self.threads)
        try:
            fps = float(stream.average_rate or stream.guessed_rate or 0) or 1.0
            ctx = stream.codec_context
            duration = float(row["end_s"]) - float(row["start_s"])
            frames = stream.frames or max(1, round(duration * fps))
            return ClipRecord(path=path, start_s=0.0, end_s=duration, start_frame=0, end_frame=frames, fps=fps,
                              width=ctx.width, height=ctx.height, decoder="pyav")
        finally:
            container.close()


def recaptioned(items: list[tuple]) -> list:
    """Map: (a clip's recorded row, its new ClipCaption or None) -> the clips table's row."""
    out = []
    for row, caption in items:
        f = row.fields
        new = caption if isinstance(caption, ClipCaption) else None
        out.append(ClipCaption(
            caption=new.caption if new else f["caption"], model=new.model if new else f["model"],
            prompt=new.prompt if new else f["prompt"], frames=new.frames if new else f["frames"],
            start_s=f["start_s"], end_s=f["end_s"], scores=dict(f.get("scores") or {}), clip_file=f.get("clip_file"),
            split=f.get("split") or "", decisions=tuple(f.get("decisions") or ())))
    return out


@dataclass(frozen=True, slots=True)
class RecordedVideo:
    """What a videos row keeps of its VideoRecord: what `video_captions` reads."""

    duration_s: float
    duration_measured: bool
    notes: tuple[str, ...]


def video_record(rows: list) -> list:
    """Map: a video's recorded row -> its RecordedVideo."""
    return [RecordedVideo(float(r["duration_s"]), bool(r.get("duration_measured")), tuple(r.get("notes") or ()))
            for r in rows]
