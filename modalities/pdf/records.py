"""The PDF modality's domains and records: Document -> Page -> Region (-> Line, for OCR).

Records are frozen and check themselves; derive new ones with `dataclasses.replace`.
They carry paths and numbers until the stage that needs pixels renders them: a page
knows its file and index and how to render itself, and its image travels only from the render
stage to the model that reads it, already sized for that model. A page's number is its lineage
ordinal (`Page.index` is the same number, kept because a worker needs it to open the page).

Coordinates: `bbox` is (x0, y0, x1, y1) in PDF points on the unrotated page, origin at the top
left of its cropbox (PyMuPDF's text extraction space: `page.rect` before /Rotate, `width_pt` x
`height_pt`); a rendered image of `scale` maps a point p to pixel p * scale. A page row's `layout`
alone is in points of the page as rendered (its /Rotate applied, `crops.displayed`), for drawing
on its image.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import curate as cu

Document = cu.Domain("document")
Page = Document.child("page")
Region = Page.child("region")
Line = Region.child("line")  # a text line that OCR detection found in a region's pixels

# What a region is, whatever found it (the PDF's own structure, RapidOCR, or a layout model);
# MinerU 2.5's block types map onto these (see models/mineru25.py).
REGION_KINDS = ("text", "title", "list", "table", "figure", "caption", "formula", "code", "footnote",
                "header", "footer", "page_number", "aside", "unknown")
PARATEXT = frozenset({"header", "footer", "page_number", "aside"})  # dropped from Markdown by default

# A page row's `layout` entry: one region, in the page's reading order, its box in points of the
# page as rendered (PyMuPDF's get_pixmap applies /Rotate: multiply by a zoom to get its pixels)
LAYOUT_KEYS = ("order", "kind", "x0", "y0", "x1", "y1")

# How a page's text was obtained, recorded in its row.
ROUTES = ("text_layer", "ocr", "layout", "empty")
# Where the words of a page's Markdown come from (`PageMarkdown.text_source`): the PDF's text layer,
# OCR (RapidOCR), a VLM (a layout route: MinerU), `mixed` (a text-layer page with regions OCR read:
# blocks of garbage text, or an image over most of the page with no text on it), `none` (a blank page).
TEXT_SOURCES = ("layer", "ocr", "vlm", "mixed", "none")
SOURCE_OF_ROUTE = {"text_layer": "layer", "ocr": "ocr", "layout": "vlm", "empty": "none"}
# A page OCR read with a mean line confidence under this is flagged in its `reason` (and the routed
# recipe sends it to the VLM): RapidOCR misreads many of its lines (handwriting, a faint or noisy
# scan); the readable scans of ../shared/data/pdfs average 0.94-0.98 (docs/guides/pdf-to-markdown.md).
LOW_OCR_CONFIDENCE = 0.90

DEFAULT_DPI = 200  # MinerU's default render resolution
MAX_LONG_SIDE_PX = 3500  # MinerU's cap on a rendered page's long side: absurd page sizes stay bounded


def render_scale(width_pt: float, height_pt: float, dpi: float = DEFAULT_DPI,
                 max_long_side: int = MAX_LONG_SIDE_PX) -> float:
    """Pixels per point for rendering a page: `dpi / 72`, lowered so the long side stays within
    `max_long_side` pixels."""
    scale = dpi / 72.0
    long_side = max(width_pt, height_pt)
    if long_side > 0 and long_side * scale > max_long_side:
        scale = max_long_side / long_side
    return scale


@dataclass(frozen=True, slots=True)
class PdfFile:
    """One input document as opened: its path, page count and (if it was encrypted and a
    password opened it) which password to use again on the workers."""

    path: str
    page_count: int
    password: str | None = None
    metadata: dict = field(default_factory=dict)  # title, author, producer... as PyMuPDF reads them

    def __post_init__(self):
        if self.page_count < 0:
            raise ValueError(f"page_count={self.page_count} of {self.path}")


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One page: where it is, its geometry, its text layer and whether that is usable.

    `text` is the page's text layer in reading order (PyMuPDF "text" extraction, possibly ""),
    `text_chars` its length, `text_usable` the verdict of the garbage check (a scan has no text
    layer; a broken font encoding gives text that is mostly replacement or private-use
    characters): a page whose text layer is not usable is routed to OCR."""

    path: str
    index: int  # 0-based page index in the file: the page's lineage ordinal
    width_pt: float
    height_pt: float
    rotation: int = 0  # /Rotate of the page: 0, 90, 180 or 270
    scale: float = DEFAULT_DPI / 72.0  # render scale in pixels per point (see render_scale)
    text: str = ""
    text_chars: int = 0
    text_usable: bool = False
    text_reason: str = ""  # why the text layer is (not) usable: "ok", "no text layer", "garbage: ..."
    password: str | None = None
    doc_title: str = ""  # the document's /Title metadata as PyMuPDF reads it ("" when it has none)
    text_quality: float | None = None  # 0..1 score of the text layer (text_quality.py); None: not judged
    orientation: int = 0  # of a page read by OCR: degrees its content is turned clockwise (0, 90, 180, 270)
    ocr_boxes: tuple = ()  # of a text-layer page: boxes (points) of blocks whose text is garbage, read by OCR
    # of a text-layer page: boxes (points) of images over most of it with no text on them, read by OCR
    # (a letter's scan under a typed heading): a figure unless OCR finds text in it (`ocr_text.reads_as_text`)
    figure_boxes: tuple = ()

    def __post_init__(self):
        if self.index < 0 or not (self.width_pt > 0 and self.height_pt > 0):
            raise cu.InputError(f"page {self.index} of {self.path} has size {self.width_pt}x{self.height_pt} pt; "
                                "a page needs a positive width and height (the file's /MediaBox is broken)")
        if self.rotation not in (0, 90, 180, 270):
            raise ValueError(f"page {self.index} of {self.path}: rotation {self.rotation}")

    @property
    def pixel_size(self) -> tuple[int, int]:
        """(width, height) in pixels of the page rendered at `scale` (unrotated)."""
        return round(self.width_pt * self.scale), round(self.height_pt * self.scale)


@dataclass(frozen=True, slots=True)
class PageImage:
    """A page rendered for a model: RGB pixels (numpy uint8, H x W x 3) at `scale` pixels per
    point, with the page record it came from (without its text, to keep it light)."""

    page: PageRecord
    image: object  # numpy.ndarray (H, W, 3) uint8
    scale: float

    def __post_init__(self):
        shape = getattr(self.image, "shape", None)
        if shape is None or len(shape) != 3 or shape[2] != 3:
            raise ValueError(f"page {self.page.index} of {self.page.path}: image of shape {shape}, not HxWx3")


@dataclass(frozen=True, slots=True)
class RegionRecord:
    """One region of a page: what it is, where (points, top-left origin), its place in the
    page's reading order, and its content once known (text, a table as HTML or Markdown, a
    formula as LaTeX). `crop` holds the region's pixels (numpy uint8 HxWx3) only between the
    stage that cuts it and the model that reads it."""

    kind: str
    bbox: tuple[float, float, float, float]
    order: int
    content: str | None = None
    source: str = ""  # what found it: "text_layer", "rapidocr", "mineru25", ...
    crop: object = None
    score: float | None = None
    level: int = 0  # of a title: 1 (top), 2, 3...; 0 when not a title or not known
    size: float = 0.0  # median font size of its text in points (text layer); 0.0 when not known
    bold: bool = False  # all its text is bold (text layer)
    seconds: float = 0.0  # time the stages that found and read it spent on it (a page pass: shared out)
    orientation: int = 0  # degrees OCR found its content turned clockwise (it read it turned back)
    label: str = ""  # the layout model's class for its box ("table", "page-header", ...); "" when none labelled it
    whole_page: bool = False  # the full page of a scan (regions.scan_regions): OCR's layout cuts it into regions
    note: str = ""  # how its page was read, for the page's `reason` ("layout: skipped (...)": layout.Layout)

    def __post_init__(self):
        if self.kind not in REGION_KINDS:
            raise ValueError(f"region kind {self.kind!r}; one of {REGION_KINDS}")
        x0, y0, x1, y1 = self.bbox
        if not (x0 <= x1 and y0 <= y1):
            raise ValueError(f"region bbox {self.bbox}: x0 <= x1 and y0 <= y1")
        if self.order < 0:
            raise ValueError(f"region order {self.order}")
        if self.level < 0:
            raise ValueError(f"region level {self.level}; 0 (not a title) or 1, 2, 3...")


@dataclass(frozen=True, slots=True)
class TextLine:
    """One line of text that OCR detection found in a region's pixels: where (`box`, pixels of
    the region's crop turned upright, origin top left), its own pixels (`crop`, numpy uint8 HxWx3 in BGR
    order as the recogniser takes them, straightened and upright) until recognition reads them, then its `text` and `score` (recognition
    confidence; a line under the backend's `text_score` keeps its score and gets `text` ""), and
    the seconds spent on it (its share of detection, then its recognition).

    A line of a whole scanned page read with layout (`laid_out`) carries the layout box that
    holds its centre: its class (`label`, "" when no box holds it), the box (`layout_box`, pixels
    of the same upright image) and the model's score (`layout_score`)."""

    box: tuple[float, float, float, float]
    crop: object = None
    text: str | None = None
    score: float | None = None
    seconds: float = 0.0
    orientation: int = 0  # degrees its region's content was turned clockwise; `box` is in the upright crop
    laid_out: bool = False  # its page went through the layout model (tagged or not)
    label: str = ""
    layout_box: tuple | None = None
    layout_score: float | None = None

    def __post_init__(self):
        x0, y0, x1, y1 = self.box
        if not (x0 <= x1 and y0 <= y1):
            raise ValueError(f"line box {self.box}: x0 <= x1 and y0 <= y1")


@dataclass(frozen=True, slots=True)
class RegionText:
    """A region's text as OCR read it, line by line: the reduce of its `TextLine`s (see
    `curate.modalities.pdf.ocr.join_lines`), joined back onto the region by `with_text`."""

    text: str
    score: float | None = None  # mean confidence of the lines kept; None when none was
    lines: int = 0  # lines kept
    seconds: float = 0.0
    orientation: int = 0  # degrees the region's content was turned clockwise (read after turning it back)
    dropped: int = 0  # lines read under the backend's text_score: their text is lost
    # of a whole scanned page read with layout: its read lines (no pixels), which `ocr.read_regions`
    # cuts into regions by layout group (`scan_layout`); () otherwise
    tagged: tuple = ()


@dataclass(frozen=True, slots=True)
class PageMarkdown:
    """A page's Markdown and how it was made: the row of the pages table."""

    markdown: str
    route: str  # one of ROUTES
    chars: int
    regions: int = 0
    seconds: float = 0.0  # time spent on the page by the stage that produced its text
    width_pt: float = 0.0
    height_pt: float = 0.0
    reason: str = ""  # why this route: the text layer's verdict ("ok", "no text layer", "garbage: ...")
    language: str = ""  # ISO 639-1 code of the page's main language ("" when it cannot be told)
    language_score: float | None = None  # the detector's confidence, 0..1
    rotation: int = 0  # degrees the page's content is turned (its /Rotate, or what OCR found)
    has_table: bool = False  # a table region, or a box the layout model called a table whose cells failed (text)
    has_figure: bool = False
    has_equation: bool = False
    # every formula region written as LaTeX from the text layer's glyphs (formulas.py); None: no formula
    equation_latex: bool | None = None
    ocr_confidence: float | None = None  # mean recognition confidence of the OCR lines kept; None: no OCR
    text_quality: float | None = None  # 0..1 score of the page's text (text_quality.py)
    titles: tuple = ()  # (font size, bold) of each title block in page order, for levelling across pages
    hyphens: tuple = ()  # (start, split, end) of each word joined at a line-end hyphen (words.resolve)
    doc_title: str = ""  # the document's /Title metadata when it is trustworthy (assemble.trusted_title)
    # per region the Markdown was made from (paratext too), in reading order: a dict of LAYOUT_KEYS
    # (order, kind, x0, y0, x1, y1: points of the page as rendered, top left origin); a recorded
    # row's list of dicts (Parquet's list<struct>) is taken as it comes back
    layout: tuple = ()
    # where its words come from, one of TEXT_SOURCES ("" when not given: the source of its route)
    text_source: str = ""

    def __post_init__(self):
        if self.route not in ROUTES:
            raise ValueError(f"route {self.route!r}; one of {ROUTES}")
        if not self.text_source:
            object.__setattr__(self, "text_source", SOURCE_OF_ROUTE[self.route])
        if self.text_source not in TEXT_SOURCES:
            raise ValueError(f"text_source {self.text_source!r}; one of {TEXT_SOURCES}")
        object.__setattr__(self, "layout", tuple(layout_entry(e) for e in self.layout or ()))


def layout_entry(entry: dict) -> dict:
    """One `PageMarkdown.layout` entry with exactly LAYOUT_KEYS, typed as its column is (an int
    order, a str kind, float coordinates: one Parquet struct type for every row and part)."""
    missing = [k for k in LAYOUT_KEYS if entry.get(k) is None]
    if missing:
        raise ValueError(f"layout entry {entry!r} lacks {', '.join(missing)}; give each of {', '.join(LAYOUT_KEYS)}")
    box = tuple(float(entry[k]) for k in LAYOUT_KEYS[2:])
    if not (box[0] <= box[2] and box[1] <= box[3]):
        raise ValueError(f"layout entry {entry!r}: x0 <= x1 and y0 <= y1")
    return {"order": int(entry["order"]), "kind": str(entry["kind"]), **dict(zip(LAYOUT_KEYS[2:], box))}


@dataclass(frozen=True, slots=True)
class DocumentMarkdown:
    """A document's Markdown in page order: the row of the documents table. `routes` counts
    the pages per route (`{"text_layer": 12, "ocr": 3}`)."""

    markdown: str
    pages: int
    chars: int
    routes: dict = field(default_factory=dict)
    title: str | None = None
