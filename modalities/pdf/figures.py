"""A page's figures as rows of their own, their pictures written as files on request.

The layout pool's `figures` Call (`layout.Layout.figures`, so no worker of its own) is the expand
from a page (its checked record and its regions) to its figures
(`FigureRecord`s, in reading order): each figure's box, its caption (the nearest caption region
over or under it in its column) and, when
`figure_images: true` (an init option of the layout pool), its picture as PNG bytes, rendered
from the PDF at `figure_dpi`. The recipe's
`figures` output writes that column as files (`files: {image: {ext: .png, name:
"{key}/images/{lineage}"}}`, as MinerU writes `images/`); with `figure_images: false` (the default)
nothing is rendered and the rows say where the figures are. The Markdown keeps its placeholder
(`assemble.FIGURE`) and the caption as the paragraph after it.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def page_figures(page: PageRecord, regions: list[RegionRecord], pdf_page=None, mod=None,
                 dpi: int = DEFAULT_DPI) -> list[FigureRecord]:
    """A page's figures in reading order; rendered as PNG at `dpi` when `pdf_page` (its
    pymupdf.Page, with `mod` the pymupdf module) is given, else only their boxes and captions.
    Call with MUPDF_LOCK held when rendering."""
    found = []
    for f in sorted((r for r in regions if r.kind == "figure"), key=lambda r: r.order):
        caption = caption_of(f, regions, page.height_pt)
        if pdf_page is None:
            found.append(FigureRecord(bbox=f.bbox, caption=caption))
            continue
        pix = pdf_page.get_pixmap(clip=mod.Rect(f.bbox) * pdf_page.rotation_matrix, dpi=dpi)  # clip: as shown
        found.append(FigureRecord(bbox=f.bbox, caption=caption, image=pix.tobytes("png"),
                                  width_px=pix.width, height_px=pix.height))
    return found


def check_options(images: bool, dpi) -> int:
    """The render options, checked: `dpi` as whole dots per inch (PyMuPDF takes ints)."""
    if not isinstance(images, bool):
        raise ValueError(f"figure_images={images!r}; give true or false, e.g. figure_images: true")
    if not (isinstance(dpi, (int, float)) and 0 < dpi <= MAX_DPI):
        raise ValueError(f"figure_dpi={dpi!r}; give a number in (0, {MAX_DPI}], e.g. figure_dpi: {DEFAULT_DPI}")
    return int(round(dpi))


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
