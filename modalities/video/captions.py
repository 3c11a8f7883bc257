"""Clip captions and video summaries on Qwen2.5-VL: the video modality's side of the captioner.

`QwenVL` is the stage the recipes name for their shared `captioner` pool
(`captioner = cu.Pool(QwenVL, init={"model": path})`). Each worker builds the backend
(`curate.models.qwen_vl.QwenVLModel`, which works on plain images and texts) once, in `__init__`, so
one model serves the pool's two Calls:

- `caption_clips` (a reduce Frame -> Clip): per clip, its FrameRecords in time order ->
  a `ClipCaption` (caption, model, prompt template, frames seen, the span of those frames);
  `caption` is the same Call returning the caption text only.
- `summarize` (a reduce Clip -> Video): per video, its clip rows in order -> a summary text
  (None without captions, or with `summaries: false`).

`caption_item` turns a clip's FrameRecords (or a mapping or object with `frames` and `prompt`)
into the backend's item: the images, the prompt template and the frames' times.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping

from curate.modalities.video.records import ClipCaption
from curate.models import qwen_vl
from curate.models.protocols import TimedCaptionItem

import curate as cu


class QwenVL:
    """A pool's captioner over video records: Frame -> Clip captions (`caption_clips`,
    `caption`) and Clip -> Video summaries (`summarize`), on one `curate.models.qwen_vl.QwenVLModel`
    per worker. It takes the backend's init keys and declares what the backend declares."""

    requires = staticmethod(qwen_vl.QwenVLModel.requires)
    default_resources = staticmethod(qwen_vl.QwenVLModel.default_resources)
    # The plan checks a recipe's init keys against the constructor's signature: the backend's.
    __signature__ = inspect.signature(qwen_vl.QwenVLModel)

    def __init__(self, **init):
        self.model = qwen_vl.QwenVLModel(**init)

    @property
    def prompt(self) -> str:
        """The caption prompt template of a clip whose item names none."""
        return self.model.prompt

    @property
    def model_name(self) -> str | None:
        """The model's name as the clips table records it."""
        return self.model.model_name

    def caption(self, clips: list) -> list:
        """Per clip (its FrameRecords in time order, or a caption item): its caption, or an ItemFailure."""
        return [c.caption if isinstance(c, ClipCaption) else c for c in self.caption_clips(clips)]

    def caption_clips(self, clips: list) -> list:
        """Per clip: a `ClipCaption` (caption, model, prompt template, frames, the span of its frames),
        or an ItemFailure. The recipes' Call: the clips table takes model and prompt from here."""
        results: list = [None] * len(clips)
        todo: list[tuple[int, TimedCaptionItem, ClipCaption]] = []
        limit = self.model.max_frames
        for i, clip in enumerate(clips):
            try:
                frames, prompt, times = caption_item(clip, self.model.prompt)
            except cu.InputError as exc:
                results[i] = cu.ItemFailure(exc)
                continue
            frames, times = qwen_vl.evenly(frames, limit), qwen_vl.evenly(times, limit)  # what the model sees
            first, last = (times[0], times[-1]) if times else (0.0, 0.0)
            made = ClipCaption("", self.model.model_name or "", prompt, len(frames), first, last)
            todo.append((i, TimedCaptionItem(frames=frames, prompt=prompt, timestamps=times), made))
        if todo:
            texts = self.model.caption([item for _, item, _ in todo])
            for (i, _, made), text in zip(todo, texts, strict=True):
                failed = isinstance(text, cu.ItemFailure)
                results[i] = text if failed else dataclasses.replace(made, caption=text)
        return results

    def summarize(self, videos: list) -> list:
        """Per video (its clip rows, or caption texts, in order): a summary; None without captions
        or with summaries off."""
        return self.model.summarize([[_caption_text(c) for c in captions or []] for captions in videos])

    def close(self) -> None:
        """Release the backend's threads (http); the model goes with the worker."""
        self.model.close()


def caption_item(clip, default_prompt: str) -> tuple[list, str, list[float]]:
    """(images, prompt template, timestamps) of one clip: a list of FrameRecords (or images), or a
    mapping or object with `frames` (and optional `prompt`); InputError when it has no frames."""
    return qwen_vl.caption_item(_plain(clip), default_prompt)


def _plain(clip) -> TimedCaptionItem | object:
    """The backend's caption item of a clip: its frames' images, and their times where every frame
    has one. What is no list of frames passes as it is, for the backend to refuse with its reason."""
    if isinstance(clip, (list, tuple)):
        frames, prompt = clip, None
    elif isinstance(clip, Mapping) or hasattr(clip, "frames"):
        get = clip.get if isinstance(clip, Mapping) else lambda k: getattr(clip, k, None)
        frames, prompt = get("frames"), get("prompt")
        if not isinstance(frames, (list, tuple)):
            return clip
    else:
        return clip
    times = [float(f.timestamp_s) for f in frames if getattr(f, "timestamp_s", None) is not None]
    item = TimedCaptionItem(frames=[getattr(f, "image", f) for f in frames],
                            timestamps=times if len(times) == len(frames) else [])
    if prompt:  # else the backend's default prompt
        item["prompt"] = prompt
    return item


def _caption_text(value) -> str | None:
    """A clip's caption: the text itself, or a row's `caption`."""
    return value if isinstance(value, str) else getattr(value, "caption", None)
