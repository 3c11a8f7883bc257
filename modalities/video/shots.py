"""Video -> clips: shots found by PySceneDetect, or a fixed stride, shaped by clip-length rules.

`SplitShots` is the expand from a `VideoRecord` to its `ClipRecord`s, in time order:

1. **Cuts.** `method: adaptive` (PySceneDetect's AdaptiveDetector: a frame's change against
   the average of its neighbours, `adaptive_threshold`, at least `min_content_val`) or
   `content` (ContentDetector: HSV and edge change over `threshold`), on frames decoded once
   and shrunk to `detect_width` px (PySceneDetect's `downscale`: 256 px wide by default, where
   its accuracy is tuned); or `stride`: a cut every `stride_s` seconds, with nothing decoded.
2. **Short spans** (under `min_clip_s`) are merged into their shorter neighbour (`short: merge`,
   split "merged") or dropped (`short: drop`, recorded as "dropped [a, b) s: ..." on the next
   clip). A video with a single span keeps it, however short (the duration filter decides).
3. **Long spans** (over `max_clip_s`) are split into equal parts (split "split_long").

Every decision is written in the clip's `decisions`, so the clips cover the video's duration,
minus the dropped spans their decisions name (`dropped_spans`). Packets that did not decode
during detection are noted on the clips they fall in. A clip's number is its lineage ordinal.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

from curate.modalities.video.decode import (
    DEFAULT_THREADS,
    FrameSource,
    each,
    fit_size,
    open_video,
    to_array,
)
from curate.modalities.video.records import (
    DEFAULT_MAX_CLIP_S,
    DEFAULT_MIN_CLIP_S,
    ClipRecord,
    VideoRecord,
)

import curate as cu
from curate.deps import require

METHODS = ("adaptive", "content", "stride")
SHORT_MODES = ("merge", "drop")
DETECT_WIDTH = 256  # PySceneDetect's DEFAULT_MIN_WIDTH: the width its downscale aims at
DEFAULT_STRIDE_S = 10.0  # clip length of the stride method
DEFAULT_MIN_SCENE_S = 0.6  # a detector's shortest shot (PySceneDetect's 15 frames at 25 fps)
CONTENT_THRESHOLD = 27.0  # ContentDetector's default
ADAPTIVE_THRESHOLD = 3.0  # AdaptiveDetector's defaults
MIN_CONTENT_VAL = 15.0
EPS = 1e-6  # seconds
DROPPED = re.compile(r"^dropped \[(\d+(?:\.\d+)?), (\d+(?:\.\d+)?)\) s")


@dataclass
class Span:
    """A time span on its way to becoming a clip (mutable while the rules shape it)."""

    start: float
    end: float
    split: str
    decisions: list[str] = field(default_factory=list)

    @property
    def length(self) -> float:
        return self.end - self.start

    def label(self) -> str:
        kind = "shot" if self.split in ("shot", "merged") else "span"
        return f"{self.length:.2f} s {kind} [{self.start:.2f}, {self.end:.2f}) s"


def spans_from_cuts(cuts: list[float], duration: float, split: str) -> list[Span]:
    """The spans between cuts (seconds from the start), covering [0, duration)."""
    inner = sorted({c for c in cuts if EPS < c < duration - EPS})
    edges = [0.0, *inner, duration]
    return [Span(a, b, split) for a, b in itertools.pairwise(edges)]


def stride_cuts(duration: float, stride_s: float) -> list[float]:
    """A cut every `stride_s` seconds."""
    return [k * stride_s for k in range(1, math.ceil(duration / stride_s - EPS))]


def shape(spans: list[Span], min_s: float, max_s: float, short: str = "merge") -> list[Span]:
    """Apply the clip-length rules: short spans merged or dropped, long ones split in equal parts."""
    spans = _merge_short(spans, min_s) if short == "merge" else _drop_short(spans, min_s)
    if len(spans) == 1 and spans[0].length < min_s - EPS:
        spans[0].decisions.append(f"the whole video is {spans[0].length:.2f} s, under min_clip_s {min_s:g} s: "
                                  "kept as one clip")
    return [part for span in spans for part in _split_long(span, max_s)]


def _merge_short(spans: list[Span], min_s: float) -> list[Span]:
    spans = list(spans)
    while len(spans) > 1:
        short = [i for i, s in enumerate(spans) if s.length < min_s - EPS]
        if not short:
            break
        i = min(short, key=lambda k: (spans[k].length, k))
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < len(spans)]
        j = min(neighbours, key=lambda k: (spans[k].length, k))
        a, b = sorted((i, j))
        note = f"merged a {spans[i].label()} (under min_clip_s {min_s:g} s)"
        spans[a:b + 1] = [Span(spans[a].start, spans[b].end, "merged",
                               [*spans[a].decisions, *spans[b].decisions, note])]
    return spans


def _drop_short(spans: list[Span], min_s: float) -> list[Span]:
    keep = [s for s in spans if s.length >= min_s - EPS]
    if not keep:
        longest = max(spans, key=lambda s: s.length)
        longest.decisions.append(f"every span is under min_clip_s {min_s:g} s: kept the longest")
        keep = [longest]
    kept = {id(k) for k in keep}
    for span in spans:
        if id(span) in kept:
            continue
        after = next((k for k in keep if k.start >= span.end - EPS), keep[-1])
        after.decisions.append(f"dropped [{span.start:.3f}, {span.end:.3f}) s: a {span.label()} "
                               f"under min_clip_s {min_s:g} s")
    return keep


def _split_long(span: Span, max_s: float) -> list[Span]:
    if span.length <= max_s + EPS:
        return [span]
    n = math.ceil(span.length / max_s - EPS)
    step = span.length / n
    edges = [span.start + k * step for k in range(n)] + [span.end]
    return [Span(a, b, "split_long", [*span.decisions, (f"part {k + 1} of {n} of a {span.label()} "
                                                       f"(over max_clip_s {max_s:g} s)")])
            for k, (a, b) in enumerate(itertools.pairwise(edges))]


def dropped_spans(clip: ClipRecord) -> list[tuple[float, float]]:
    """The spans the splitter dropped next to this clip, from its decisions."""
    return [(float(m.group(1)), float(m.group(2))) for d in clip.decisions if (m := DROPPED.match(d))]


class SplitShots:
    """Expand: VideoRecord -> its ClipRecords in time order (see the module docstring)."""

    requires = ("av", "scenedetect", "cv2")  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, method: str = "adaptive", threshold: float = CONTENT_THRESHOLD,
                 adaptive_threshold: float = ADAPTIVE_THRESHOLD, min_content_val: float = MIN_CONTENT_VAL,
                 min_scene_s: float = DEFAULT_MIN_SCENE_S, stride_s: float = DEFAULT_STRIDE_S,
                 min_clip_s: float = DEFAULT_MIN_CLIP_S, max_clip_s: float = DEFAULT_MAX_CLIP_S, short: str = "merge",
                 detect_width: int = DETECT_WIDTH, threads: int = DEFAULT_THREADS):
        problems = _init_problems(method, short, detect_width, threshold=threshold,
                                  adaptive_threshold=adaptive_threshold, min_content_val=min_content_val,
                                  min_scene_s=min_scene_s, stride_s=stride_s, min_clip_s=min_clip_s,
                                  max_clip_s=max_clip_s)
        if problems:
            raise ValueError("; ".join(problems))
        self.method, self.short, self.detect_width, self.threads = method, short, detect_width, threads
        self.threshold, self.adaptive_threshold, self.min_content_val = threshold, adaptive_threshold, min_content_val
        self.min_scene_s, self.stride_s = min_scene_s, stride_s
        self.min_clip_s, self.max_clip_s = min_clip_s, max_clip_s

    def __call__(self, videos: list[VideoRecord]) -> list:
        return each(self.clips, videos)

    def clips(self, video: VideoRecord) -> list[ClipRecord]:
        """The clips of one video; raises InputError if its frames cannot be read."""
        errors: list[tuple[float, str]] = []
        if self.method == "stride":
            spans = spans_from_cuts(stride_cuts(video.duration_s, self.stride_s), video.duration_s, "stride")
        else:
            cuts, errors = self.detect(video)
            spans = spans_from_cuts(cuts, video.duration_s, "shot")
        spans = shape(spans, self.min_clip_s, self.max_clip_s, self.short)
        return [_clip(video, span, errors) for span in spans]

    def detect(self, video: VideoRecord) -> tuple[list[float], list[tuple[float, str]]]:
        """(cut times in seconds from the start, packets that did not decode: (time, message))."""
        detector = self._detector(video.fps)
        common = require("scenedetect.common", "shot detection (PySceneDetect)")
        container, stream = open_video(video.path, self.threads)
        try:
            source = FrameSource(container, stream)
            size = fit_size(video.width, video.height, (self.detect_width, 10 * self.detect_width))
            time_base, rate = Fraction(stream.time_base), Fraction(video.fps).limit_denominator(100_000)
            cuts, last, first = [], None, None
            while (frame := source.next()) is not None:
                pts = round(source.last_time / time_base)
                first = pts if first is None else first  # timecodes count from the first frame: never negative
                last = common.FrameTimecode(common.Timecode(max(0, pts - first), time_base), rate)
                cuts += detector.process_frame(last, to_array(frame, size, "bgr24"))
            if last is None:
                raise cu.InputError(f"{video.path}: no frame decodes for shot detection; the file changed or is "
                                    "damaged: run it again, or use method: stride")
            cuts += detector.post_process(last)
            errors = [(t - video.start_offset_s, m) for t, m in source.errors if t is not None]
        finally:
            container.close()
        shift = first * float(time_base) - video.start_offset_s  # where this decode's first frame is
        return [c.seconds + shift for c in cuts], errors

    def _detector(self, fps: float):
        detectors = require("scenedetect.detectors", "shot detection (PySceneDetect)")
        min_scene_len = max(1, round(self.min_scene_s * fps))  # in frames: what both detectors count in
        if self.method == "content":
            return detectors.ContentDetector(threshold=self.threshold, min_scene_len=min_scene_len)
        return detectors.AdaptiveDetector(adaptive_threshold=self.adaptive_threshold, min_scene_len=min_scene_len,
                                          min_content_val=self.min_content_val)


def _clip(video: VideoRecord, span: Span, errors: list[tuple[float, str]]) -> ClipRecord:
    decisions = list(span.decisions)
    bad = [(t, m) for t, m in errors if span.start - EPS <= t < span.end]
    if bad:
        decisions.append(f"{len(bad)} packet(s) between {bad[0][0]:.2f} and {bad[-1][0]:.2f} s did not decode "
                         f"during shot detection ({bad[0][1][:100]}); their frames are skipped")
    start_frame = round(span.start * video.fps)
    end_frame = max(start_frame + 1, round(span.end * video.fps))
    return ClipRecord(path=video.path, start_s=round(float(span.start), 6), end_s=round(float(span.end), 6),
                      start_frame=start_frame, end_frame=end_frame, fps=video.fps, width=video.width,
                      height=video.height, decoder=video.decoder, split=span.split, decisions=tuple(decisions),
                      start_offset_s=video.start_offset_s)


def _init_problems(method, short, detect_width, **positive) -> list[str]:
    problems = []
    if method not in METHODS:
        problems.append(f"method={method!r}; one of {METHODS}, e.g. method: adaptive")
    if short not in SHORT_MODES:
        problems.append(f"short={short!r}; one of {SHORT_MODES}: merge short shots into a neighbour, or drop them")
    if not isinstance(detect_width, int) or detect_width < 16:
        problems.append(f"detect_width={detect_width!r}; give a width in pixels >= 16, e.g. detect_width: 256")
    for name, value in positive.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            problems.append(f"{name}={value!r}; give a number > 0")
    if not problems and positive["max_clip_s"] < 2 * positive["min_clip_s"]:
        problems.append(f"max_clip_s={positive['max_clip_s']} is under 2 x min_clip_s={positive['min_clip_s']}: "
                        "the equal parts of a long shot could then be shorter than min_clip_s; raise max_clip_s")
    return problems
