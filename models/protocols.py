"""Task signatures of model backends: what one item and one result of each task are.

Every task is a batched method, `list -> list`: one result per item, in the items' order, and
`curate.ItemFailure(curate.InputError(...))` in the place of an item that is bad (an empty
image, a caption item without frames) instead of raising for the whole batch. A backend class
implements one or several tasks (`DummyStack` and, later, MinerU serve both `layout` and `ocr`),
so one shared `curate.Pool` can serve each as its own Call. `isinstance(obj, Ocr)` checks that
the methods are there (the shapes below are the contract the tests check).

The records the PDF and video modalities pass around (pages, regions, clips, frames) come with
those modalities; what is fixed here is only what every backend of a task reads and returns:

- An **image** is a numpy array of shape (H, W, 3), dtype uint8, RGB, or a PIL image (mode
  RGB). Modalities size it for the model before it travels (STYLE 17).
- An **image item** (layout, OCR) is an image, or a record carrying one: a mapping with an
  `image` key, or an object with an `image` attribute, plus optional metadata such as `id`
  (a stable identity, for logs and stand-ins), `kind` (of a region) or `lang`. Backends read
  `image` and ignore metadata they do not use.
- A **caption item** is a mapping (or an object) with `frames`, a non-empty list of images in
  time order, and `prompt`, the instruction text; optional metadata as above (`id`, `fps`).
"""

from __future__ import annotations

from typing import Any, Protocol, Required, TypedDict, runtime_checkable

Image = Any  # numpy.ndarray (H, W, 3) uint8 RGB, or PIL.Image.Image: not imported here (heavy)


class ImageItem(TypedDict, total=False):
    """An image with optional metadata: the item of `layout` and `ocr` (a bare image is one too)."""

    image: Required[Image]
    id: str  # stable identity of the item, e.g. "report.pdf@ab12#3/1"


class CaptionItem(TypedDict, total=False):
    """Frames of one clip and what to say about them: the item of `caption`."""

    frames: Required[list[Image]]  # in time order, at least one
    prompt: Required[str]
    id: str


class RegionBox(TypedDict, total=False):
    """One region a layout model found on a page (the PDF modality wraps it in its own record)."""

    kind: Required[str]  # "title", "text", "table", "figure", "formula", ...
    bbox: Required[tuple[int, int, int, int]]  # x0, y0, x1, y1 in pixels of the page image; origin top left
    order: Required[int]  # reading order on the page: 0, 1, 2, ... as listed
    id: str  # the page's id + "/" + order, where the page item has an id


@runtime_checkable
class Layout(Protocol):
    """Page images to regions."""

    def layout(self, pages: list[Image | ImageItem]) -> list[list[RegionBox]]:
        """Per page, its regions in reading order (possibly none), or an ItemFailure."""
        ...


@runtime_checkable
class Ocr(Protocol):
    """Images of text (a page or a region) to text."""

    def ocr(self, images: list[Image | ImageItem]) -> list[str]:
        """Per image, its text ("" if it shows none), or an ItemFailure."""
        ...


@runtime_checkable
class Caption(Protocol):
    """Frames of a clip, plus a prompt, to a caption."""

    def caption(self, clips: list[CaptionItem]) -> list[str]:
        """Per clip, its caption, or an ItemFailure."""
        ...


TASKS = {"layout": Layout, "ocr": Ocr, "caption": Caption}  # task method name -> its protocol


# ---- video tasks ----
# What a video captioner (curate.models.qwen_vl) serves beside `caption`: a caption item may carry
# its frames' times, and a video's clip captions, in order, summarize to one text.


class TimedCaptionItem(CaptionItem, total=False):
    """A caption item with each frame's time in seconds, in order (a prompt's `{timestamps}`)."""

    timestamps: list[float]


@runtime_checkable
class Summarize(Protocol):
    """A video's clip captions, in order, to a summary of the whole video."""

    def summarize(self, videos: list[list[str]]) -> list[str | None]:
        """Per video, its summary (None when it has no caption to summarize), or an ItemFailure."""
        ...
