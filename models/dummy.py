"""Deterministic CPU stand-ins for the generic tasks (`protocols.TASKS`: layout, ocr, caption):
a recipe runs end to end in CI, and a test of ordering can check that each result belongs to
its item.

Each result is derived from its item alone: a digest of the image's pixels (or of its `id`),
never from the batch, the worker or the clock. So results are the same for every batch size,
replica count and executor, and a result in the wrong place shows at once:

- `ocr` returns `"ocr:<label>:<digest>"`, label the item's `id`, else the image's WxH.
- `caption` returns `"caption:<label>:<n> frames:<digest>"`, the digest over frames and prompt.
- `layout` returns 1 to `max_regions` regions (how many: from the digest), horizontal bands
  over the page inside a 5% margin, scaled to the image size: the first a "title", the rest
  "text", each with `id` "<label>/<order>".

Beyond the item forms of `curate.models.protocols`, a stand-in also takes an item that is only
an identity: a string (e.g. an input path) or a mapping with `id` and no image. Its results
derive from that identity, and `layout` lays it out on a nominal 850x1100 page. This lets a
recipe run on plain file paths, and OCR the regions `layout` returned (they carry `id`). An
empty image, or an item of no known form, is an `ItemFailure` with an `InputError` cause.

No heavy import: images are read through their own methods (numpy's `shape`/`tobytes`, PIL's
`size`/`tobytes`). Use a class as a stage (`cu.stage(DummyOcr, init={...})`, its `__call__`
is its task) or in a shared pool (`cu.Pool(DummyStack, init=...)`, then
`pool.stage("layout")`, `pool.stage("ocr")`). `init` mirrors the real backends: `model`
(a path, only recorded here), `device`, `batch_size`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from curate import InputError, ItemFailure

NOMINAL_PAGE = (850, 1100)  # width, height of an identity-only page: US letter at 100 dpi
MARGIN = 0.05  # of the page's width and height, left free around the regions
DIGEST_CHARS = 12  # hex characters of a digest in a result: enough to tell items apart


class _StandIn:
    """What every stand-in's constructor takes, like the real backends (and records only)."""

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None):
        self.model, self.device, self.batch_size = model, device, batch_size


class DummyLayout(_StandIn):
    """`layout` stand-in: page images to horizontal-band regions."""

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 max_regions: int = 4):
        _StandIn.__init__(self, model, device, batch_size)
        if not isinstance(max_regions, int) or isinstance(max_regions, bool) or max_regions < 1:
            raise ValueError(f"max_regions={max_regions!r}; give a whole number >= 1, e.g. max_regions: 4")
        self.max_regions = max_regions

    def layout(self, pages: list) -> list:
        """Per page: its regions in reading order, or an ItemFailure."""
        return [_per_item(page_layout, p, self.max_regions) for p in pages]

    __call__ = layout


class DummyOcr(_StandIn):
    """`ocr` stand-in: an image (or an identity) to a text naming it."""

    def ocr(self, images: list) -> list:
        """Per image: `ocr:<label>:<digest>`, or an ItemFailure."""
        return [_per_item(image_text, x) for x in images]

    __call__ = ocr


class DummyCaption(_StandIn):
    """`caption` stand-in: frames and a prompt to a caption naming the frame count."""

    def caption(self, clips: list) -> list:
        """Per clip: `caption:<label>:<n> frames:<digest>`, or an ItemFailure."""
        return [_per_item(clip_caption, c) for c in clips]

    __call__ = caption


class DummyStack(_StandIn):
    """Every task on one object, like a model stack that serves several tasks from one load
    (MinerU: layout and OCR). Meant for a shared pool: it has no `__call__`, so each Call
    names its task (`pool.stage("layout")`, `pool.stage("ocr")`)."""

    __init__ = DummyLayout.__init__
    layout = DummyLayout.layout
    ocr = DummyOcr.ocr
    caption = DummyCaption.caption


# ---- one item -------------------------------------------------------------------------------
def page_layout(page: Any, max_regions: int = 4) -> list[dict]:
    """The regions of one page item (raises InputError for a bad one)."""
    label, digest, (width, height) = _identity(page)
    count = 1 + int(digest[:8], 16) % max_regions
    x0, x1 = round(width * MARGIN), round(width * (1 - MARGIN))
    top, bottom = height * MARGIN, height * (1 - MARGIN)
    step = (bottom - top) / count
    return [{"kind": "title" if i == 0 else "text",
             "bbox": (x0, round(top + i * step), x1, round(top + (i + 1) * step)),
             "order": i, "id": f"{label}/{i}"} for i in range(count)]


def image_text(item: Any) -> str:
    """The OCR text of one image item."""
    label, digest, _ = _identity(item)
    return f"ocr:{label}:{digest[:DIGEST_CHARS]}"


def clip_caption(item: Any) -> str:
    """The caption of one caption item."""
    frames, prompt = _field(item, "frames"), _field(item, "prompt")
    if not isinstance(frames, (list, tuple)) or not frames:
        raise InputError(f"a caption item needs frames, a non-empty list of images; got {_kind(frames)}")
    if not isinstance(prompt, str):
        raise InputError(f"a caption item needs prompt, a text; got {_kind(prompt)}")
    h = hashlib.sha256(prompt.encode())
    for frame in frames:
        width, height, data = _pixels(frame)
        h.update(f"{width}x{height}:".encode() + hashlib.sha256(data).digest())
    label = _field(item, "id")
    return f"caption:{label if label is not None else 'clip'}:{len(frames)} frames:{h.hexdigest()[:DIGEST_CHARS]}"


def _per_item(task, item: Any, *args) -> Any:
    """A bad item fails alone, as the task's ItemFailure, and its batch goes on."""
    try:
        return task(item, *args)
    except InputError as exc:
        return ItemFailure(exc)


def _identity(item: Any) -> tuple[str, str, tuple[int, int]]:
    """(label, hex digest, (width, height)) of an image item or an identity-only item."""
    if isinstance(item, str) and item:
        return item, hashlib.sha256(item.encode()).hexdigest(), NOMINAL_PAGE
    image, ident = _field(item, "image"), _field(item, "id")
    if image is None and not _is_record(item):
        image = item  # a bare image
    if image is None:
        if isinstance(ident, str) and ident:
            return ident, hashlib.sha256(ident.encode()).hexdigest(), NOMINAL_PAGE
        raise InputError(f"an image item needs an image (or, for a stand-in, an id); got {_kind(item)}")
    width, height, data = _pixels(image)
    digest = hashlib.sha256(f"{width}x{height}:".encode() + data).hexdigest()
    return (ident if isinstance(ident, str) and ident else f"{width}x{height}"), digest, (width, height)


def _pixels(image: Any) -> tuple[int, int, bytes]:
    """(width, height, pixel bytes) of a numpy array (H, W[, C]) or a PIL image."""
    shape, size = getattr(image, "shape", None), getattr(image, "size", None)
    if isinstance(shape, tuple) and len(shape) in (2, 3) and hasattr(image, "tobytes"):
        height, width = shape[0], shape[1]
    elif isinstance(size, tuple) and len(size) == 2 and hasattr(image, "tobytes"):
        width, height = size
    else:
        raise InputError(f"expected an image (a numpy array HxWx3 uint8 or a PIL image); got {_kind(image)}")
    if not width or not height:
        raise InputError(f"the image is empty ({width}x{height} pixels); skip empty pages and regions before "
                         "this stage, or render them at a size > 0")
    return int(width), int(height), image.tobytes()


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None) if _is_record(item) else None


def _is_record(item: Any) -> bool:
    """A mapping or an object carrying named fields (not an image: those have `tobytes`)."""
    named = hasattr(item, "__dict__") or hasattr(item, "__slots__")
    return isinstance(item, Mapping) or (named and not hasattr(item, "tobytes"))


def _kind(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"
