"""The PDF's own text layer as a stage (no model): the cheap route of PDF -> Markdown.

`PdfText` serves two Calls from one pool (each worker keeps its last few opened documents):

- `check(pages)`: per `PageRecord`, the same record with its text layer (`text`, `text_chars`)
  and the routing verdict (`text_usable`, `text_reason`) of `curate.modalities.pdf.textlayer`:
  a page with usable text takes the text-layer route, a scan or a page of garbage text goes to
  OCR, a blank page is `empty` (nothing rendered, nothing read). `force_ocr=True` sends every
  page with something on it to OCR (to check OCR against a known text layer, or to distrust an
  old OCR layer).
- `regions(pages)`: the expand from a checked page to its text-layer regions. A text-layer page
  gets its regions from the PDF's structure (`curate.modalities.pdf.regions`), in reading order,
  with their content; an OCR page or an empty page gets none here (the OCR branch's
  `curate.modalities.pdf.regions:scan_regions` gives an OCR page its full-page region).

A page MuPDF cannot load, or whose size is zero, is an ItemFailure with an InputError that
names the file and the page; the other pages of its document go on.
"""

from __future__ import annotations

import time
from dataclasses import replace

from curate.modalities.pdf.documents import (
    DEFAULT_CACHE_DOCS,
    MUPDF_LOCK,
    REPAIR_FIX,
    DocumentCache,
    guarded,
    pymupdf,
)
from curate.modalities.pdf.records import PageRecord, RegionRecord
from curate.modalities.pdf.regions import TABLE_MODES, area, page_regions, text_flags
from curate.modalities.pdf.text_quality import MIN_QUALITY, score
from curate.modalities.pdf.textlayer import judge, route_of

import curate as cu


MIN_GOOD_SHARE = 0.5  # a page of garbage whose other blocks hold this share of its text keeps them


class PdfText:
    """The text layer of PDF pages: `check` (routing) and `regions` (the page's regions)."""

    requires = ("pymupdf",)  # checked before a run starts (curate.deps.check_installed)

    def __init__(self, force_ocr: bool = False, tables: str = "lines", cache_docs: int = DEFAULT_CACHE_DOCS,
                 model: str | None = None, device: str = "cpu", batch_size: int | None = None):
        if tables not in TABLE_MODES:
            raise ValueError(f"tables={tables!r}; one of {', '.join(TABLE_MODES)}, e.g. tables: lines")
        self.mod = pymupdf()
        self.force_ocr, self.tables = bool(force_ocr), tables
        self.cache = DocumentCache(cache_docs)
        self.model, self.device, self.batch_size = model, device, batch_size  # the backends' common hints

    def check(self, pages: list[PageRecord]) -> list:
        """Per page: the record with its text layer and routing verdict, or an ItemFailure."""
        return [self._guard(self._check, p) for p in pages]

    def regions(self, pages: list[PageRecord]) -> list:
        """Per checked page: its regions in reading order, or an ItemFailure."""
        return [self._guard(self._regions, p) for p in pages]

    def _check(self, record: PageRecord) -> PageRecord:
        with MUPDF_LOCK:
            page = self._page(record)
            text = page.get_text("text", flags=text_flags(self.mod))
            page_area = page.cropbox.width * page.cropbox.height
            cover = sum(area(i["bbox"]) for i in page.get_image_info()) / page_area
            drawings = 0 if text.strip() else len(page.get_cdrawings())
            verdict = judge(text, image_cover=min(cover, 1.0), drawings=drawings, force_ocr=self.force_ocr)
            garbage = verdict.reason.startswith("garbage")
            bad, good_share = garbage_blocks(page, self.mod) if verdict.usable or garbage else ((), 0.0)
        usable, reason = verdict.usable, verdict.reason
        if garbage and bad and good_share >= MIN_GOOD_SHARE:  # the garbage sits in a few blocks: OCR reads only them
            usable, reason = True, f"ok but for {len(bad)} block(s) of garbage read by OCR ({verdict.reason})"
        elif usable and bad:
            reason = f"{reason}; {len(bad)} block(s) of garbage text read by OCR"
        return replace(record, text=text, text_chars=len(text), text_usable=usable, text_reason=reason,
                       ocr_boxes=bad if usable else (), text_quality=verdict.quality)

    def _regions(self, record: PageRecord) -> list[RegionRecord]:
        if route_of(record) != "text_layer":
            return []
        start = time.perf_counter()
        with MUPDF_LOCK:
            found = page_regions(self._page(record), self.mod, self.tables, skip=record.ocr_boxes)
        share = (time.perf_counter() - start) / max(len(found), 1)
        return [replace(r, seconds=share) for r in found]

    def _page(self, record: PageRecord):
        page = self.cache.page(record)
        box = page.cropbox
        if not (box.width > 0 and box.height > 0):
            raise cu.InputError(f"{record.path}: page {record.index + 1} has size {box.width:g}x{box.height:g} pt; "
                                f"its /MediaBox or /CropBox is broken: {REPAIR_FIX}")
        return page

    def _guard(self, task, record):
        return guarded(self.mod, task, record)


def garbage_blocks(page, mod) -> tuple[tuple, float]:
    """(boxes of the page's text blocks whose own text is garbage, the share of the page's
    characters in the other blocks): a list in a symbol font on an otherwise good page goes to
    OCR alone."""
    boxes, good, total = [], 0, 0
    for block in page.get_text("blocks", flags=text_flags(mod)):
        if block[6] != 0:
            continue
        chars = sum(1 for c in block[4] if not c.isspace())
        total += chars
        if block_is_garbage(block[4]):
            boxes.append(tuple(round(float(v), 2) for v in block[:4]))
        else:
            good += chars
    return tuple(boxes), good / max(total, 1)


def block_is_garbage(text: str) -> bool:
    """A block's own text scores under `text_quality.MIN_QUALITY` for U+FFFD, private-use glyphs
    or a shifted-cipher font (a list in a symbol font on an otherwise good page); dot leaders
    and a figure's glyphs are symbols, not garbage."""
    return score(text, symbol_floor=False)[0] < MIN_QUALITY
