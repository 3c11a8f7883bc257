"""The video modality's domains and records: Video -> Clip -> Frame.

Records are frozen and check themselves, so a bad value fails where it is made, not stages
later; derive new ones with `dataclasses.replace`. They carry paths and spans until the stage
that needs pixels decodes them, so no full-size frame crosses the object store: a clip is a time
span of a file, and its frames travel from the sampling stage to the captioner once, already
resized for the model. A clip's number is its lineage ordinal; a frame's too.

Times are seconds from the start of the video stream (its first decodable frame at 0.0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import curate as cu

Video = cu.Domain("video")
Clip = Video.child("clip")
Frame = Clip.child("frame")

DECODERS = ("decord", "pyav")  # how a video's frames are read, chosen per video and recorded

DEFAULT_SAMPLE_FPS = 2.0  # frames per second sampled from a clip for the captioner
MAX_FRAMES_PER_CLIP = 32  # cap on sampled frames of one clip (a long clip is sampled more sparsely)
DEFAULT_MIN_CLIP_S = 1.0  # shorter shots are merged into a neighbour or dropped (recorded)
DEFAULT_MAX_CLIP_S = 20.0  # longer shots are split into equal parts (recorded)


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """One stream of a container, as probed."""

    index: int
    kind: str  # "video", "audio", "subtitle", "data"
    codec: str
    decodable: bool = True  # the codec preflight decoded a first packet


@dataclass(frozen=True, slots=True)
class VideoRecord:
    """One input video as probed: container, codec, duration (measured by decoding when the
    container lies about it or lacks it: `duration_measured`), fps, size, streams, and the
    decoder chosen for it."""

    path: str
    container: str
    codec: str
    duration_s: float
    fps: float
    width: int
    height: int
    frame_count: int
    streams: tuple[StreamInfo, ...] = ()
    duration_measured: bool = False
    variable_fps: bool = False
    decoder: str = "pyav"
    notes: tuple[str, ...] = ()  # what the probe noticed and worked around (decode errors, ...)
    start_offset_s: float = 0.0  # the first frame's timestamp in the container: record times are relative to it

    def __post_init__(self):
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder {self.decoder!r}; one of {DECODERS}")
        if not (self.duration_s > 0 and self.fps > 0 and self.width > 0 and self.height > 0):
            raise cu.InputError(f"{self.path}: a video needs a positive duration, frame rate and size "
                                f"(got {self.duration_s} s, {self.fps} fps, {self.width}x{self.height})")


@dataclass(frozen=True, slots=True)
class ClipRecord:
    """A time span of a video: [start_s, end_s), its frame range [start_frame, end_frame),
    how it was made (`split`: "shot", "stride", "split_long", "merged") and the video it cuts
    (path, decoder, fps, size: what the stages that decode it need)."""

    path: str
    start_s: float
    end_s: float
    start_frame: int
    end_frame: int
    fps: float
    width: int
    height: int
    decoder: str = "pyav"
    split: str = "shot"
    decisions: tuple[str, ...] = ()  # what the splitter decided about it ("merged a 0.4 s shot", ...)
    start_offset_s: float = 0.0  # the video's `start_offset_s`: where time 0.0 is in the container

    def __post_init__(self):
        if not (0 <= self.start_s < self.end_s):
            raise ValueError(f"clip [{self.start_s}, {self.end_s}) s of {self.path}: start < end")
        if not (0 <= self.start_frame < self.end_frame):
            raise ValueError(f"clip frames [{self.start_frame}, {self.end_frame}) of {self.path}")

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One sampled frame: its time in the video, its pixels (numpy uint8 HxWx3 RGB, already
    resized for the captioner) and their size."""

    timestamp_s: float
    image: object
    width: int
    height: int

    def __post_init__(self):
        shape = getattr(self.image, "shape", None)
        if shape is None or len(shape) != 3 or shape[2] != 3 or (shape[1], shape[0]) != (self.width, self.height):
            raise ValueError(f"frame at {self.timestamp_s} s: image of shape {shape}, not {self.height}x{self.width}x3")


@dataclass(frozen=True, slots=True)
class ClipScores:
    """A filter's verdict on a clip, kept in its row whether it passed or not."""

    name: str  # "duration", "motion", "blur", "brightness"
    score: float
    passed: bool
    threshold: str = ""  # e.g. ">= 0.02"


@dataclass(frozen=True, slots=True)
class ScoredClip:
    """A clip with every filter's verdict on it: what the scoring map gives and the filters read,
    so a clip is decoded once for all its scores and keeps them in its row."""

    clip: ClipRecord
    scores: tuple[ClipScores, ...] = ()

    def __post_init__(self):
        if not isinstance(self.clip, ClipRecord):
            raise TypeError(f"a ScoredClip holds a ClipRecord, not {type(self.clip).__name__}")

    @property
    def passed(self) -> bool:
        """Whether every filter passed it."""
        return all(s.passed for s in self.scores)

    def score_map(self) -> dict[str, float]:
        """Filter name -> score (what the clips table keeps)."""
        return {s.name: s.score for s in self.scores}

    def __curate_row__(self) -> dict:
        """Its row in the clips table, named as a ClipCaption's columns: a clip its filter
        DROPPED keeps this value, so its row shows its span, scores and split beside its kept
        siblings' (their caption, frames and file stay null)."""
        c = self.clip
        return {"start_s": c.start_s, "end_s": c.end_s, "scores": self.score_map(), "split": c.split,
                "decisions": c.decisions}


def clip_of(item) -> ClipRecord:
    """The ClipRecord of a stage's item: a ClipRecord, or a ScoredClip holding one."""
    if isinstance(item, ScoredClip):
        return item.clip
    if isinstance(item, ClipRecord):
        return item
    raise TypeError(f"a clip stage takes a ClipRecord or a ScoredClip, not {type(item).__name__}; "
                    "feed it the clips (or the scored clips) of the video")


@dataclass(frozen=True, slots=True)
class EncodedClip:
    """A clip encoded as its own small video file: its bytes (`clip_file`, written by the run's
    sink, never by the stage), and how it was encoded."""

    clip_file: bytes
    codec: str
    container: str
    width: int
    height: int
    frames: int
    start_s: float
    end_s: float

    def __post_init__(self):
        if not self.clip_file or self.frames < 1:
            raise ValueError(f"an encoded clip [{self.start_s}, {self.end_s}) s needs bytes and at least one frame")


@dataclass(frozen=True, slots=True)
class ClipCaption:
    """A clip's caption and what made it (the clips table's payload)."""

    caption: str
    model: str
    prompt: str
    frames: int
    start_s: float
    end_s: float
    scores: dict = field(default_factory=dict)  # filter name -> score
    # The clip's own file, when extracted: its encoded bytes (`EncodedClip.clip_file`), which the
    # run's sink writes as a file (`files={"clip_file": ...}`), leaving the file's path in the column.
    clip_file: bytes | str | None = None
    split: str = ""  # how the clip was made (ClipRecord.split) ...
    decisions: tuple[str, ...] = ()  # ... and what the splitter decided about it (ClipRecord.decisions)


@dataclass(frozen=True, slots=True)
class VideoCaptions:
    """A video's ordered clip spans and captions (the videos table's payload), with an optional
    summary made from its clip captions, and what the probe found about the file: whether its
    duration was measured by decoding (the header lacked it or lied) and its notes."""

    clips: int
    spans: tuple[tuple[float, float], ...]
    captions: tuple[str, ...]
    duration_s: float
    summary: str | None = None
    duration_measured: bool = False  # VideoRecord.duration_measured
    notes: tuple[str, ...] = ()  # VideoRecord.notes: what the probe noticed and worked around
