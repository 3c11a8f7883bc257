"""A page's figures as rows of their own, their pictures written as files on request.

`FigureImages` is the expand from a page (its checked record and its regions) to its figures
(`FigureRecord`s, in reading order): each figure's box, its caption (the nearest caption region
over or under it in its column) and, when
`images: true`, its picture as PNG bytes, rendered from the PDF at `dpi`. The recipe's
`figures` output writes that column as files (`files: {image: {ext: .png, name:
"{key}/images/{ordinal}"}}`, as MinerU writes `images/`); with `images: false` (the default)
nothing is rendered and the rows say where the figures are. The Markdown keeps its placeholder
(`assemble.FIGURE`) and the caption as the paragraph after it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from curate.modalities.pdf.documents import DEFAULT_CACHE_DOCS, MUPDF_LOCK, DocumentCache, guarded, pymupdf
from curate.modalities.pdf.records import PageRecord, RegionRecord

DEFAULT_DPI = 144  # twice the PDF's own resolution: a figure readable at a page's width
MAX_DPI = 600
CAPTION_GAP = 0.25  # of the page's height: a caption further from its figure than this is another's


@dataclass(frozen=True, slots=True)
class FigureRecord:
    """One figure of a page: its box (points, unrotated, top-left origin), its caption ("" when
    none is found), and its picture as PNG bytes when asked for (else None)."""

    bbox: tuple[float, float, float, float]
    caption: str = ""
    image: bytes | None = None
    width_px: int = 0
    height_px: int = 0


class FigureImages:
    """Expand: (checked page, its regions) -> its figures (see the module docstring)."""

    requires = ("pymupdf",)

    def __init__(self, images: bool = False, dpi: float = DEFAULT_DPI, cache_docs: int = DEFAULT_CACHE_DOCS):
        if not isinstance(images, bool):
            raise ValueError(f"images={images!r}; give true or false, e.g. images: true")
        if not (isinstance(dpi, (int, float)) and 0 < dpi <= MAX_DPI):
            raise ValueError(f"dpi={dpi!r}; give a number in (0, {MAX_DPI}], e.g. dpi: {DEFAULT_DPI}")
        self.images, self.dpi = images, int(round(dpi))  # PyMuPDF takes whole dots per inch
        self.mod = pymupdf() if images else None
        self.cache = DocumentCache(cache_docs)

    def __call__(self, items: list[tuple[PageRecord, list[RegionRecord]]]) -> list:
        out = []
        for page, regions in items:
            figures = [r for r in sorted(regions, key=lambda r: r.order) if r.kind == "figure"]
            if not figures:
                out.append([])
            elif not self.images:
                out.append([FigureRecord(bbox=f.bbox, caption=caption_of(f, regions, page.height_pt)) for f in figures])
            else:
                out.append(guarded(self.mod, functools.partial(self._render, figures=figures, regions=regions), page))
        return out

    def _render(self, page: PageRecord, figures: list[RegionRecord], regions: list[RegionRecord]) -> list:
        found = []
        with MUPDF_LOCK:
            pdf_page = self.cache.page(page)
            for f in figures:
                clip = self.mod.Rect(f.bbox) * pdf_page.rotation_matrix  # boxes are unrotated; clip is as shown
                pix = pdf_page.get_pixmap(clip=clip, dpi=self.dpi)
                found.append(FigureRecord(bbox=f.bbox, caption=caption_of(f, regions, page.height_pt),
                                          image=pix.tobytes("png"), width_px=pix.width, height_px=pix.height))
        return found


def caption_of(figure: RegionRecord, regions: list[RegionRecord], page_height: float) -> str:
    """The text of the caption region nearest to `figure`, over or under it (under wins a tie),
    that overlaps it horizontally and lies within `CAPTION_GAP` of the page's height; "" if none."""
    x0, y0, x1, y1 = figure.bbox
    best, best_gap = "", page_height * CAPTION_GAP
    for r in regions:
        if r.kind != "caption" or not r.content or r.bbox[2] <= x0 or r.bbox[0] >= x1:
            continue
        gap = r.bbox[1] - y1 if r.bbox[1] >= (y0 + y1) / 2 else (y0 - r.bbox[3]) + 1e-3  # below wins a tie
        if -1.0 <= gap < best_gap:  # touching or just apart; an overlap of a point is layout noise
            best, best_gap = " ".join(r.content.split()), gap
    return best
