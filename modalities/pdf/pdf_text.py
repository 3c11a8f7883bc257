"""The PDF's own text layer as a stage (no model): the cheap route of PDF -> Markdown.

`PdfText` serves two Calls from one pool (each worker keeps its last few opened documents):

- `check(pages)`: per `PageRecord`, the same record with its text layer (`text`, `text_chars`)
  and the routing verdict (`text_usable`, `text_reason`) of `curate.modalities.pdf.textlayer`,
  and on a text-layer page the boxes OCR reads (`ocr_boxes`: blocks of garbage text;
  `figure_boxes`: an image over half the page, or words drawn as outlines, with no text on it):
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
# An image over this share of a text-layer page with no text on it is read by OCR as a region (a
# letter's scan under a typed heading must not be one figure); a figure unless its text reads as
# prose (`ocr_text.reads_as_text`). Smaller images stay figures unread: OCR costs a second or more each.
READ_FIGURE_SHARE = 0.5
# Words drawn as vector outlines on a page with little text of its own (a poster, a slide exported with
# text as paths): at least DRAWN_MIN_GLYPHS filled paths, each no larger than GLYPH_MAX_SHARE of the
# page's width and height, off its text, on a page whose text layer has under DRAWN_MAX_ALNUM letters or
# digits; their box is read by OCR as a figure (text when it reads as prose). A chart's markers on a
# paper's page never count: the page has its text.
DRAWN_MIN_GLYPHS = 100
GLYPH_MAX_SHARE = 0.08
DRAWN_MAX_ALNUM = 400


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
            images = [tuple(i["bbox"]) for i in page.get_image_info()]
            cover = sum(area(b) for b in images) / page_area
            drawings = 0 if text.strip() else len(page.get_cdrawings())
            verdict = judge(text, image_cover=min(cover, 1.0), drawings=drawings, force_ocr=self.force_ocr)
            garbage = verdict.reason.startswith("garbage")
            bad, good_share = garbage_blocks(page, self.mod) if verdict.usable or garbage else ((), 0.0)
            large = [b for b in images if area(b) >= READ_FIGURE_SHARE * page_area]
            if verdict.usable and sum(c.isalnum() for c in text) < DRAWN_MAX_ALNUM:
                large += drawn_text(page.get_cdrawings(), page.cropbox.width, page.cropbox.height)
            unread = textless(page, self.mod, large) if verdict.usable and large else ()
        usable, reason = verdict.usable, verdict.reason
        if unread:
            reason = f"{reason}; {len(unread)} image(s) or drawn words over much of the page without text, read by OCR"
        if garbage and bad and good_share >= MIN_GOOD_SHARE:  # the garbage sits in a few blocks: OCR reads only them
            usable, reason = True, f"ok but for {len(bad)} block(s) of garbage read by OCR ({verdict.reason})"
        elif usable and bad:
            reason = f"{reason}; {len(bad)} block(s) of garbage text read by OCR"
        return replace(record, text=text, text_chars=len(text), text_usable=usable, text_reason=reason,
                       ocr_boxes=bad if usable else (), text_quality=verdict.quality,
                       figure_boxes=unread if usable else ())

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


def drawn_text(drawings: list, width: float, height: float) -> list[tuple]:
    """[the box of the page's glyph-sized filled paths] when there are DRAWN_MIN_GLYPHS of them or
    more (words drawn as outlines), else []."""
    glyphs = [d["rect"] for d in drawings if "f" in (d.get("type") or "")
              and d["rect"][2] - d["rect"][0] <= GLYPH_MAX_SHARE * width
              and d["rect"][3] - d["rect"][1] <= GLYPH_MAX_SHARE * height]
    if len(glyphs) < DRAWN_MIN_GLYPHS:
        return []
    return [(min(g[0] for g in glyphs), min(g[1] for g in glyphs), max(g[2] for g in glyphs), max(g[3] for g in glyphs))]


def textless(page, mod, boxes: list[tuple]) -> tuple:
    """The boxes among `boxes` (images, in points) that no word of the page's text layer lies on
    (by its centre), rounded: on a page whose text sits over its image (a scan with its OCR layer,
    a background) the image is no figure to read."""
    words = [((w[0] + w[2]) / 2, (w[1] + w[3]) / 2) for w in page.get_text("words", flags=text_flags(mod))]
    return tuple(tuple(round(float(v), 2) for v in b) for b in boxes
                 if not any(b[0] <= x <= b[2] and b[1] <= y <= b[3] for x, y in words))


def block_is_garbage(text: str) -> bool:
    """A block's own text scores under `text_quality.MIN_QUALITY` for U+FFFD, private-use glyphs
    or a shifted-cipher font (a list in a symbol font on an otherwise good page); dot leaders
    and a figure's glyphs are symbols, not garbage."""
    return score(text, symbol_floor=False)[0] < MIN_QUALITY
