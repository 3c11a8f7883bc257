"""Task signatures of model backends: what one item and one result of each task are.

Every task is a batched method of a backend in `curate.models`, `list -> list`: one result per
item, in the items' order, and `curate.ItemFailure(curate.InputError(...))` in the place of an
item that is bad (an empty image, a caption item without frames) instead of raising for the
whole batch. A backend class implements one or several tasks (`DummyStack` serves `layout`,
`ocr` and `caption`; `RapidOcrModel` serves `detect_text`, `detect_lines` and `read_lines`), so
one shared `curate.Pool` can serve each as its own Call. `isinstance(obj, Ocr)` checks that the
methods are there (the shapes below are the contract the tests check).

Items and results are plain values (images, mappings, text); the records the PDF and video
modalities pass around (pages, regions, clips, frames) stay in `curate.modalities`, whose stage
classes turn records into these items and the results back into records. A modality's own stage
methods (the PDF text layer's `check` and `regions`, `content_regions`, ...) are not model tasks.

- An **image** is a numpy array of shape (H, W, 3), dtype uint8, RGB, or a PIL image (mode
  RGB). Modalities size it for the model before it travels.
- An **image item** (layout, OCR) is an image, or a record carrying one: a mapping with an
  `image` key, or an object with an `image` attribute, plus optional metadata such as `id`
  (a stable identity, for logs and stand-ins), `kind` (of a region) or `lang`. Backends read
  `image` and ignore metadata they do not use.
- A **caption item** is a mapping (or an object) with `frames`, a non-empty list of images in
  time order, and `prompt`, the instruction text; optional metadata as above (`id`, `fps`).
- A **PDF part** (`PdfPart`) is a run of pages of a PDF file, for a backend that reads files.
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
    score: float  # the model's confidence in the box, 0 to 1, where it gives one (rapid-layout does)


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


class TextBox(TypedDict):
    """One piece of text an OCR model found: where, what, how sure."""

    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels of the image; origin top left
    text: str
    score: float  # recognition confidence, 0 to 1


class LineCrop(TypedDict):
    """One text line a detector found, with its pixels, ready for a recogniser."""

    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels of the image
    crop: Image  # the line's pixels, straightened and upright, as the backend's own recogniser takes them


class LineText(TypedDict):
    """What a recogniser read on one line crop."""

    text: str  # "" when the score is under the backend's threshold
    score: float


class BlockCrop(TypedDict):
    """The pixels of one layout block and its block type (which prompt reads it)."""

    image: Image
    type: str  # the backend's block type, e.g. MinerU's "text", "table", "equation"


class PdfPart(TypedDict, total=False):
    """A run of pages of one PDF file, for a backend that parses files."""

    path: Required[str]
    label: Required[str]  # names the part in errors, e.g. "a.pdf pages 1-64 of 285"
    page_range: str  # 1-based inclusive, e.g. "3-66"; "" for the whole file
    ocr_mode: str  # "auto", "txt" or "ocr"
    data: bytes | None  # the file's bytes when the path alone will not do (a decrypted copy)
    keep_from: int  # 0-based first page to keep in `pages_json` (the ones before were context)
    with_pages: bool  # also return the kept pages in the backend's own page format


class ParsedPdf(TypedDict):
    """A parsed PDF part."""

    markdown: str
    pages_json: str | None  # the kept pages in the backend's format (JSON), if asked for
    parse_mode: str | None  # how the backend read it ("txt", "ocr"), where it says
    seconds: float  # the parse itself


@runtime_checkable
class TextDetection(Protocol):
    """Images to the text boxes on them (detection and recognition in one call)."""

    def detect_text(self, images: list[Image | ImageItem]) -> list[list[TextBox]]:
        """Per image, its text boxes in the backend's order ([] if it shows none), or an ItemFailure."""
        ...


@runtime_checkable
class LineDetection(Protocol):
    """Images to the text lines on them, each with its pixels (detection only)."""

    def detect_lines(self, images: list[Image | ImageItem]) -> list[list[LineCrop]]:
        """Per image, its lines in detection order ([] if it shows none), or an ItemFailure."""
        ...


@runtime_checkable
class LineReading(Protocol):
    """Line crops (of any images, in one batch) to their text."""

    def read_lines(self, crops: list[Image]) -> list[LineText]:
        """Per line crop, its text and score."""
        ...


@runtime_checkable
class BlockLayout(Protocol):
    """Page images to the backend's layout blocks."""

    def layout_blocks(self, images: list[Image]) -> list[list[Any]]:
        """Per page image, its blocks in reading order (objects with `type`, `bbox` as (x0, y0,
        x1, y1) in [0, 1] of the image, and `angle`, the turn that makes the block upright), or
        an ItemFailure."""
        ...


@runtime_checkable
class BlockReading(Protocol):
    """Block crops to their content."""

    def read_blocks(self, crops: list[BlockCrop]) -> list[str]:
        """Per block crop, its content (text; a table as HTML; a formula as LaTeX), or an ItemFailure."""
        ...


@runtime_checkable
class PdfParse(Protocol):
    """Runs of PDF pages to Markdown."""

    def parse(self, parts: list[PdfPart]) -> list[ParsedPdf]:
        """Per part, its parse, or an ItemFailure naming the part."""
        ...


TASKS = {"layout": Layout, "ocr": Ocr, "caption": Caption}  # the generic tasks every stand-in of dummy.py serves
PROTOCOLS = {**TASKS, "detect_text": TextDetection, "detect_lines": LineDetection, "read_lines": LineReading,
             "layout_blocks": BlockLayout, "read_blocks": BlockReading, "parse": PdfParse}  # task -> protocol


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


PROTOCOLS["summarize"] = Summarize
