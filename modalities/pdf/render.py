"""Pages -> pixels, for the models that read them: pixels are made where they are needed,
already sized, and cross the object store once.

`Render` (a class stage: each worker keeps its last few opened documents in a small LRU) turns
a `PageRecord` into a `PageImage` (`__call__`), or a page and one of its regions into that
region with its `crop` (`crops`). Images are numpy uint8 RGB, H x W x 3, at the page's `scale`
(`render_scale`: 200 dpi, the long side at most 3,500 px), and show the page as displayed: a
page with /Rotate 90 comes out turned, its text upright, so its image is `pixel_size` with
width and height swapped. `max_pixels` caps what one image may hold: a page whose scale was set
past it (a `dpi` far above the default) fails alone instead of taking a worker's memory. A page
MuPDF cannot render fails alone too, with an InputError naming the file and the page. A page
that hangs the renderer is stopped by the stage's `timeout_s` (the recipe sets it).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from curate.modalities.pdf.documents import (
    DEFAULT_CACHE_DOCS,
    MUPDF_LOCK,
    REPAIR_FIX,
    DocumentCache,
    pymupdf,
)
from curate.modalities.pdf.records import (
    MAX_LONG_SIDE_PX,
    PageImage,
    PageRecord,
    RegionRecord,
)

import curate as cu

MAX_PIXELS = MAX_LONG_SIDE_PX * MAX_LONG_SIDE_PX  # 12.25 MP, 37 MB of RGB: any page within the long-side cap


class Render:
    """PageRecord -> PageImage (`__call__`); (PageRecord, RegionRecord) -> RegionRecord with its
    crop (`crops`). A bad page is an ItemFailure; its batch-mates go on."""

    requires = ("pymupdf",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, cache_docs: int = DEFAULT_CACHE_DOCS, max_pixels: int = MAX_PIXELS):
        if not isinstance(max_pixels, int) or max_pixels < 1:
            raise ValueError(f"max_pixels={max_pixels!r}; give a whole number >= 1, e.g. max_pixels: 12250000")
        self.cache = DocumentCache(cache_docs)
        self.max_pixels = max_pixels

    def __call__(self, pages: list[PageRecord]) -> list:
        """Per page: its PageImage, or an ItemFailure."""
        return [self._guard(self._page_image, p) for p in pages]

    def crops(self, items: list[tuple[PageRecord, RegionRecord]]) -> list:
        """Per (page, region): the region with `crop` set to its pixels (and the render time added
        to its `seconds`), or an ItemFailure."""
        return [self._guard(self._crop, *item) for item in items]

    def _page_image(self, page: PageRecord) -> PageImage:
        image, _ = self._render(page, None)
        return PageImage(page=replace(page, text=""), image=image, scale=page.scale)

    def _crop(self, page: PageRecord, region: RegionRecord) -> RegionRecord:
        image, seconds = self._render(page, region.bbox)
        return replace(region, crop=image, seconds=region.seconds + seconds)

    def _guard(self, task, *args) -> Any:
        try:
            return task(*args)
        except cu.InputError as exc:
            return cu.ItemFailure(exc)

    def _render(self, page: PageRecord, bbox: tuple | None) -> tuple[Any, float]:
        """(RGB pixels of the page, or of `bbox` on it, as displayed; seconds it took)."""
        import numpy as np

        start = time.perf_counter()
        w, h = page.pixel_size
        if w * h > self.max_pixels:
            raise cu.InputError(f"{page.path}: page {page.index + 1} would render at {w}x{h} px, over the cap of "
                                f"{self.max_pixels:,} pixels; lower the dpi (steps.pages.expand.init.dpi) or raise "
                                "max_pixels on the render stage")
        if w < 1 or h < 1:
            raise cu.InputError(f"{page.path}: page {page.index + 1} is {page.width_pt:.1f}x{page.height_pt:.1f} pt, "
                                f"which renders to {w}x{h} px: nothing to read; leave the page out")
        mod = pymupdf()
        with MUPDF_LOCK:
            pg = self.cache.page(page)
            try:
                clip = None if bbox is None else mod.Rect(bbox) * pg.rotation_matrix
                pix = pg.get_pixmap(matrix=mod.Matrix(page.scale, page.scale), clip=clip,
                                    colorspace=mod.csRGB, alpha=False)
            except Exception as exc:  # noqa: BLE001 - whatever MuPDF raises, that page is damaged
                raise cu.InputError(f"{page.path}: page {page.index + 1} (index {page.index}) cannot be rendered "
                                    f"({type(exc).__name__}: {exc}); the page is damaged: {REPAIR_FIX}") from None
        rows = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.stride)
        image = rows[:, : pix.width * pix.n].reshape(pix.height, pix.width, pix.n)[:, :, :3].copy()
        return image, time.perf_counter() - start
