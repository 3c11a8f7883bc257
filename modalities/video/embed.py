"""Clip embeddings and aesthetic scores: the video modality's side of the embedder pool.

`ClipEmbedder` is the stage the curated recipe names for its shared `embedder` pool. Each worker
builds the backend (`curate.models.embedder.ClipEmbedderModel`, a CLIP or SigLIP image tower over
plain images) once, and, given `aesthetic: DIR`, the LAION-shaped head
(`curate.models.aesthetic.AestheticModel`) on the same device. Its Call:

- `embed_clips` (a reduce Frame -> Clip): per clip, its FrameRecords in time order -> a
  `ClipEmbedding`: the clip's unit float32 vector (its frames' normalised embeddings, averaged,
  normalised), the model's name, the times of the frames it used, and the clip's aesthetic
  score (the mean of its frames' scores; None without a head). The frames of every clip in the
  Call's batch go through the model together, `batch_size` images per pass, so clips of many
  videos share passes; `embed` is the same Call returning the vector only.

Then the clips table's row and the optional filter:

- `EmbeddedRows` (a map on a zip of the kept clip, its caption, its clip file and its
  ClipEmbedding) makes the row, an `EmbeddedClip`: `ClipRows`' ClipCaption columns, then
  `embedding` (`fixed_size_list<float32>[d]` in Parquet), `embedding_model`,
  `embedding_frames` and `aesthetic`. `curate dedup OUT --output clips --embedding embedding`
  reads them (`curate.dedup.semantic`).
- `AestheticFilter` (a filter on those rows) drops a clip whose aesthetic score is under
  `min_aesthetic`, its reason giving the score and the threshold; with the threshold null (the
  default) it drops nothing and the score stays a column. It runs on the finished row, so a
  dropped clip keeps its caption and embedding for whoever tunes the threshold.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass

from curate.modalities.video.assemble import ClipRows
from curate.modalities.video.records import ClipCaption
from curate.models import embedder as backend
from curate.models.aesthetic import AestheticModel

import curate as cu
from curate.errors import CurateError


@dataclass(frozen=True, slots=True)
class ClipEmbedding:
    """A clip's vector (numpy float32, shape (d,), unit length), the model that made it, the times
    of the frames it saw (seconds, in order) and its aesthetic score (None without a head)."""

    embedding: object
    embedding_model: str
    embedding_frames: tuple[float, ...] = ()
    aesthetic: float | None = None

    def __post_init__(self):
        shape, dtype = getattr(self.embedding, "shape", None), getattr(self.embedding, "dtype", None)
        if shape is None or len(shape) != 1 or not shape[0] or str(dtype) != "float32":
            raise ValueError(f"a clip embedding is a 1-D float32 array, not {type(self.embedding).__name__} "
                             f"{shape} {dtype}")


@dataclass(frozen=True, slots=True)
class EmbeddedClip(ClipCaption):
    """A clips table row with its embedding: a ClipCaption's fields, then the ClipEmbedding's."""

    embedding: object = None
    embedding_model: str = ""
    embedding_frames: tuple[float, ...] = ()
    aesthetic: float | None = None


def _signature() -> inspect.Signature:
    """The backend's init keys and `aesthetic` (the plan checks a recipe's keys against it)."""
    params = list(inspect.signature(backend.ClipEmbedderModel).parameters.values())
    return inspect.Signature([*params, inspect.Parameter("aesthetic", inspect.Parameter.KEYWORD_ONLY, default=None)])


class ClipEmbedder:
    """A pool's embedder over video records: Frame -> Clip (`embed_clips`, `embed`), on one
    `ClipEmbedderModel` per worker and, with `aesthetic: DIR`, one `AestheticModel` beside it."""

    requires = backend.ClipEmbedderModel.requires
    default_resources = backend.ClipEmbedderModel.default_resources
    __signature__ = _signature()

    def __init__(self, *, aesthetic: str | None = None, **init):
        self.model = backend.ClipEmbedderModel(**init)
        self.aesthetic = AestheticModel(aesthetic, device=self.model.device) if aesthetic else None
        if self.aesthetic is not None and self.aesthetic.input_dim != self.model.dim:
            raise CurateError(f"the aesthetic head {aesthetic} takes vectors of length {self.aesthetic.input_dim}, "
                              f"the embedder {self.model.model_name} makes {self.model.dim}; give the head trained on "
                              "this embedder (LAION's: CLIP ViT-L/14, 768), or no aesthetic")

    def embed(self, clips: list) -> list:
        """Per clip (its FrameRecords in time order): its vector, or an ItemFailure."""
        return [c.embedding if isinstance(c, ClipEmbedding) else c for c in self.embed_clips(clips)]

    def embed_clips(self, clips: list) -> list:
        """Per clip (its FrameRecords in time order): a ClipEmbedding, or an ItemFailure."""
        import numpy as np

        results: list = [None] * len(clips)
        spans, images = [], []  # per clip to embed: (index, first image, count, frame times)
        for i, clip in enumerate(clips):
            try:
                frames = backend.evenly(list(_frames_of(clip)), self.model.max_frames)
                pixels = backend.clip_frames(frames)
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
                continue
            times = tuple(float(t) for f in frames if (t := getattr(f, "timestamp_s", None)) is not None)
            spans.append((i, len(images), len(frames), times if len(times) == len(frames) else ()))
            images.extend(pixels)
        if not images:
            return results
        vectors = self.model.embed_frames(images)
        scores = self.aesthetic.score(list(vectors)) if self.aesthetic is not None else None
        for i, start, n, times in spans:
            aesthetic = None if scores is None else round(float(np.mean(scores[start:start + n])), 6)
            results[i] = ClipEmbedding(backend.pooled(vectors[start:start + n], np), self.model.model_name, times,
                                       aesthetic)
        return results


def _frames_of(clip):
    """A clip item's frames: a list of FrameRecords (or images), or a mapping or object with `frames`."""
    if isinstance(clip, (list, tuple)):
        return clip
    frames = clip.get("frames") if isinstance(clip, dict) else getattr(clip, "frames", None)
    if not isinstance(frames, (list, tuple)):
        raise cu.InputError(f"embed_clips takes per clip its frames in time order (a list of FrameRecords); got "
                            f"{type(clip).__name__}: reduce the frames stage's output onto the clips")
    return frames


class EmbeddedRows:
    """Map: (clip, caption[, EncodedClip], ClipEmbedding) -> the clip's EmbeddedClip row: what
    `curate.modalities.video.assemble:ClipRows` makes of the first parts (it takes ClipRows' init),
    with the embedding's columns."""

    __signature__ = inspect.signature(ClipRows)

    def __init__(self, **init):
        self.rows = ClipRows(**init)

    def __call__(self, items: list[tuple]) -> list:
        return [self.row(*item) for item in items]

    def row(self, *parts) -> EmbeddedClip | cu.ItemFailure:
        *made, embedded = parts
        if not isinstance(embedded, ClipEmbedding) or not 2 <= len(made) <= 3:
            return cu.ItemFailure(cu.InputError(
                f"EmbeddedRows takes (clip, caption[, clip file], ClipEmbedding), not "
                f"({', '.join(type(p).__name__ for p in parts)}): zip the clips, their captions, files and "
                "embed_clips' output, in that order"))
        row = self.rows.row(*made)
        if isinstance(row, cu.ItemFailure):
            return row
        fields = {f.name: getattr(row, f.name) for f in dataclasses.fields(ClipCaption)}
        return EmbeddedClip(**fields, **{f.name: getattr(embedded, f.name) for f in dataclasses.fields(ClipEmbedding)})


class AestheticFilter:
    """Filter: keep a clip (an EmbeddedClip or a ClipEmbedding) whose aesthetic score is at least
    `min_aesthetic`; null (the default) keeps every clip, its score in its row. A dropped clip's
    reason gives its score and the threshold."""

    def __init__(self, min_aesthetic: float | None = None):
        number = isinstance(min_aesthetic, (int, float)) and not isinstance(min_aesthetic, bool)
        if min_aesthetic is not None and not number:
            raise ValueError(f"min_aesthetic={min_aesthetic!r}: a score (LAION's scale is 1-10, e.g. 4.5), or null "
                             "to keep every clip")
        self.min_aesthetic = min_aesthetic

    def __call__(self, items: list) -> list[tuple[bool, str]]:
        return [self.verdict(item) for item in items]

    def verdict(self, item) -> tuple[bool, str]:
        """(keep it, why not)."""
        if self.min_aesthetic is None:
            return True, ""
        score = getattr(item, "aesthetic", None)
        if not hasattr(item, "aesthetic"):
            raise cu.InputError(f"AestheticFilter takes clips with an aesthetic score (EmbeddedClip), not "
                                f"{type(item).__name__}")
        if score is None:
            raise cu.InputError(f"min_aesthetic={self.min_aesthetic:g}, but the clip has no aesthetic score: give the "
                                "embedder pool an aesthetic head (init aesthetic: DIR), or set min_aesthetic: null")
        if score >= self.min_aesthetic:
            return True, ""
        return False, f"failed aesthetic: aesthetic {score:.4g} (>= {self.min_aesthetic:g}: failed)"
