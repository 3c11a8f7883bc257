"""Clip filters that keep their rows: every clip is scored once, and the filter reads the scores.

- `ScoreClips` (a map) decodes a few small frames of each clip (`fps` per second, at most
  `max_frames`, `size` px on the long side) and scores it: `duration` (seconds), `motion` (mean
  absolute luma difference between consecutive samples, 0-1: 0 is a still picture), `blur`
  (variance of the Laplacian of the luma at `size`: low is blurry; it depends on the size, so
  thresholds hold for one `size`), `brightness` (mean luma, 0-1: an aesthetic proxy that finds
  black or blown-out clips). Each score is a `ClipScores` with its threshold and verdict; a
  threshold of null only scores. The result, a `ScoredClip`, is what the clips table keeps.
- `ClipFilter` (a filter) keeps a ScoredClip whose checks all passed. A clip it drops keeps its
  row, DROPPED, with a reason that names the failed checks and gives every score
  ("motion 0.0012 < 0.004; duration 4.20 s >= 1 ok, ..."). `score_only: true` drops nothing;
  `checks` limits which scores decide (one filter step per check is then possible).
"""

from __future__ import annotations

import itertools

from curate.modalities.video.decode import (
    DEFAULT_THREADS,
    check_size,
    each,
    fit_size,
    frames_at,
)
from curate.modalities.video.frames import frame_times
from curate.modalities.video.records import (
    DEFAULT_MIN_CLIP_S,
    ClipRecord,
    ClipScores,
    ScoredClip,
    clip_of,
)

import curate as cu

SCORES = ("duration", "motion", "blur", "brightness")
SCORE_FPS = 2.0  # samples per second for the scores: motion is the change over half a second
SCORE_MAX_FRAMES = 16  # at most this many small frames a clip is decoded for
SCORE_SIZE = 256  # long side of the frames scored; blur thresholds hold for this size
MIN_MOTION = 0.004  # mean luma change between samples 0.5 s apart: below it the clip is a still picture
MIN_BLUR = 30.0  # Laplacian variance at 256 px: under it the clip is out of focus or a flat colour
MIN_BRIGHTNESS = 0.06  # mean luma: darker is a black screen
MAX_BRIGHTNESS = 0.94  # brighter is a white (blown-out) screen
LUMA = (0.299, 0.587, 0.114)  # BT.601 weights of R, G, B


class ScoreClips:
    """Map: a clip -> ScoredClip with its duration, motion, blur and brightness scores."""

    requires = ("av",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, min_duration_s: float | None = DEFAULT_MIN_CLIP_S, max_duration_s: float | None = None,
                 min_motion: float | None = MIN_MOTION, min_blur: float | None = MIN_BLUR,
                 min_brightness: float | None = MIN_BRIGHTNESS, max_brightness: float | None = MAX_BRIGHTNESS,
                 fps: float = SCORE_FPS, max_frames: int = SCORE_MAX_FRAMES, size: int | list[int] = SCORE_SIZE,
                 threads: int = DEFAULT_THREADS):
        limits = {"min_duration_s": min_duration_s, "max_duration_s": max_duration_s, "min_motion": min_motion,
                      "min_blur": min_blur, "min_brightness": min_brightness, "max_brightness": max_brightness}
        bad = [f"{k}={v!r}" for k, v in limits.items()
               if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0)]
        if bad:
            raise ValueError(f"{', '.join(bad)}: a threshold is a number >= 0, or null to only score")
        if not (isinstance(fps, (int, float)) and fps > 0 and isinstance(max_frames, int) and max_frames >= 2):
            raise ValueError(f"fps={fps!r}, max_frames={max_frames!r}; give fps > 0 and max_frames >= 2")
        self.limits, self.fps, self.max_frames = limits, fps, max_frames
        self.size, self.threads = check_size(size), threads

    def __call__(self, clips: list) -> list:
        return each(self.score, clips, clip_of)

    def score(self, clip: ClipRecord) -> ScoredClip:
        """The scores of one clip; raises InputError if none of its frames decodes."""
        import numpy as np

        times = frame_times(clip, self.fps, None, self.max_frames)
        if len(times) < 2 and clip.end_frame - clip.start_frame >= 2:
            times = frame_times(clip, None, 2, self.max_frames)  # motion needs two frames
        found, _ = frames_at(clip, times, fit_size(clip.width, clip.height, self.size), self.threads)
        if not found:
            raise cu.InputError(f"{clip.path}: no frame of the clip [{clip.start_s:.2f}, {clip.end_s:.2f}) s decodes; "
                                "the file is damaged there: re-encode it, or drop the clip")
        luma = [np.tensordot(image.astype(np.float32), np.float32(LUMA), axes=([2], [0])) for _, image in found]
        changes = [np.abs(b - a).mean() / 255 for a, b in itertools.pairwise(luma)]
        motion = float(np.mean(changes)) if changes else 0.0  # a one-frame clip is a still picture
        blur = float(np.median([_laplacian(y).var() for y in luma]))
        brightness = float(np.mean([y.mean() for y in luma]) / 255)
        lim = self.limits
        return ScoredClip(clip, (
            _verdict("duration", clip.duration_s, lim["min_duration_s"], lim["max_duration_s"]),
            _verdict("motion", motion, lim["min_motion"], None),
            _verdict("blur", blur, lim["min_blur"], None),
            _verdict("brightness", brightness, lim["min_brightness"], lim["max_brightness"])))


def _laplacian(y):
    """The 4-neighbour Laplacian of a 2-D array (its interior)."""
    return y[:-2, 1:-1] + y[2:, 1:-1] + y[1:-1, :-2] + y[1:-1, 2:] - 4 * y[1:-1, 1:-1]


def _verdict(name: str, score: float, low: float | None, high: float | None) -> ClipScores:
    passed = (low is None or score >= low) and (high is None or score <= high)
    if low is not None and high is not None:
        threshold = f"in [{low:g}, {high:g}]"
    elif low is not None:
        threshold = f">= {low:g}"
    elif high is not None:
        threshold = f"<= {high:g}"
    else:
        threshold = ""
    return ClipScores(name=name, score=round(score, 6), passed=passed, threshold=threshold)


def describe(s: ClipScores) -> str:
    """One score as text: "motion 0.0012 (>= 0.004: failed)"."""
    value = f"{s.score:.2f} s" if s.name == "duration" else f"{s.score:.4g}"
    if not s.threshold:
        return f"{s.name} {value}"
    return f"{s.name} {value} ({s.threshold}: {'ok' if s.passed else 'failed'})"


class ClipFilter:
    """Filter: keep a ScoredClip whose checks passed; a dropped one's reason carries every score.

    `score_only`: keep every clip (the scores stay in the rows); `checks`: the scores that decide
    (default all of SCORES)."""

    def __init__(self, score_only: bool = False, checks: list[str] | tuple[str, ...] = SCORES):
        unknown = [c for c in checks if c not in SCORES]
        if unknown or not checks:
            raise ValueError(f"checks={list(checks)!r}; name some of {list(SCORES)}")
        self.score_only, self.checks = bool(score_only), tuple(checks)

    def __call__(self, items: list[ScoredClip]) -> list[tuple[bool, str]]:
        return [self.verdict(item) for item in items]

    def verdict(self, item: ScoredClip) -> tuple[bool, str]:
        """(keep it, why not): the reason names the failed checks first, then gives every score."""
        if not isinstance(item, ScoredClip):
            raise cu.InputError(f"ClipFilter takes the ScoredClips of ScoreClips, not {type(item).__name__}; "
                                "filter the scored clips")
        failed = [s for s in item.scores if s.name in self.checks and not s.passed]
        if self.score_only or not failed:
            return True, ""
        return False, f"failed {', '.join(s.name for s in failed)}: " + "; ".join(describe(s) for s in item.scores)
