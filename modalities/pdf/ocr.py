"""The OCR route of PDF -> Markdown, for pages whose text layer is missing or garbage: RapidOCR
(`curate.models.rapidocr`) on rendered pages and region crops, its text in reading order.

`RapidOcr` (a pool class: one RapidOCR model, one orientation classifier and one layout model per
actor) reads
records and serves:

- `ocr(images)`: the `Ocr` protocol, image items -> text. An item is a numpy RGB image, a PIL
  image, a mapping with `image`, or a record with `image` (a `PageImage`) or `crop` (a
  `RegionRecord` cut by `Render.crops`).
- `ocr_regions(regions)`: regions with a `crop` -> the same regions with `content` (the text),
  `source` "rapidocr", `score` (mean recognition confidence), `crop` dropped and the OCR time
  added to `seconds`: detection and recognition in one call per region.
- The same work in two Calls on one pool, as the PDF recipe runs it: `detect_lines(regions)`
  (an expand: region -> its `TextLine`s, each with its straightened pixels) and
  `read_lines(lines)` (a map: line -> its text and score). Recognition is most of RapidOCR's
  time on a scanned page, so reading lines as their own items lets one page's lines spread over
  every OCR actor, and batches mix the lines of different pages and documents. `join_lines`
  (the reduce: a region's lines -> `RegionText`) and `with_text` (the region with that text)
  finish the route and give what `ocr_regions` gives; the recipe's `read_regions` does the
  same given the region's page, and cuts a whole scanned page into its regions (below).

Every path first asks the orientation classifier (`curate.models.orientation`) how far the
image's content is turned, and turns it upright before detection: a page scanned upside down or
sideways is read, and its angle kept (`TextLine.orientation`, `RegionText.orientation`; line
boxes are pixels of the upright image). An image too small or too unclear to judge (a line, a
stamp) is read as it comes. The angle is decided once per image, from all its text: RapidOCR's
per-line classifier, which turned an upright fax line upside down, is off (models/rapidocr.py).

Confidence: each line keeps its recognition score (`TextLine.score`; a line under `text_score`
keeps its score, loses its text, and counts in `RegionText.dropped`); a region's score is the
mean over the lines it kept (`RegionText.score`), which `with_text` puts on the region
(`RegionRecord.score`, what the page's OCR confidence is made of).

Layout (`layout=True`, the default): when `detect_lines` gets the whole page of a scan
(`RegionRecord.whole_page`, from `regions.scan_regions`), rapid-layout (`curate.models.rapidlayout`)
runs once on the upright image and each line is tagged with the layout box holding its centre
(class, box, score; a line in no box stays untagged). `join_lines` keeps the page's read lines
(`RegionText.tagged`), and `read_regions` (the recipe's map after the reduce, given the page)
cuts the page into regions by layout group (`scan_layout`): titles, text, tables from their OCR
boxes, captions, formulas, and headers, footers and page numbers kept as classed regions (dropped
from the Markdown) where they sit in the page's top or bottom zone. The page's text
(`RegionText.text`) is the same with and without layout. A region cut from a text-layer page
(a block of garbage, `ocr_boxes`) is read whole, as before; `layout=False` reads scans whole too.

Text comes in reading order by the rules of `ocr_text` (margin notes after the body, boxes that
share a line joined left to right, paragraphs at gaps), for a whole page and for a region's crop
alike. An empty or unreadable image is an ItemFailure with an InputError; a page with no text
gives "".
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace

from curate.errors import EngineError
from curate.modalities.pdf import scan_layout
from curate.modalities.pdf.ocr_text import lines_to_text, reads_as_text
from curate.modalities.pdf.records import PageRecord, RegionRecord, RegionText, TextLine
from curate.models.orientation import RapidOrientationModel, upright
from curate.models.rapidlayout import RapidLayoutModel
from curate.models.rapidocr import RapidOcrModel, image_of

import curate as cu

SOURCE = "rapidocr"


class RapidOcr:
    """RapidOCR on PDF records: `ocr` (image -> text), `ocr_regions` (region -> region), and the
    recipe's `detect_lines` (region -> lines) and `read_lines` (line -> line)."""

    # checked before a run starts (curate.deps.check_installed): module -> what installs it
    requires = {**dict.fromkeys(RapidOcrModel.requires), **RapidOrientationModel.requires,
                **RapidLayoutModel.requires}
    default_resources = RapidOcrModel.default_resources

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, text_score: float = 0.5, rec_batch_num: int = 1, orient: bool = True,
                 layout: bool = True):
        if not isinstance(layout, bool):
            raise ValueError(f"layout={layout!r}; give true (cut scanned pages into regions) or false (read them whole)")
        self.ocr_model = RapidOcrModel(model, device, batch_size, threads, text_score, rec_batch_num)
        # orient=False reads every image as it comes (a corpus known to be upright skips the classifier)
        self.orientation = RapidOrientationModel(threads=threads) if orient else None
        # layout=False reads a scanned page as one region (its text is the same either way)
        self.layout = RapidLayoutModel(threads=threads) if layout else None
        self.model, self.device, self.batch_size = model, device, batch_size

    def ocr(self, images: list) -> list:
        """Per image item: its text in reading order ("" if it shows none), or an ItemFailure."""
        out = []
        for item in images:
            try:
                out.append(self._read(image_of(item))[0])
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
        return out

    __call__ = ocr

    def ocr_regions(self, regions: list) -> list:
        """Per region with a crop: the region with its text as content, or an ItemFailure."""
        out = []
        for region in regions:
            try:
                start = time.perf_counter()
                text, score = self._read(image_of(region))
                out.append(replace(region, content=text, source=SOURCE, score=score, crop=None,
                                   seconds=region.seconds + time.perf_counter() - start))
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
        return out

    def detect_lines(self, regions: list) -> list:
        """Expand: per region with a crop, its text lines in detection order (`TextLine`s with their
        pixels; the detection time shared out over them), [] if it shows none, or an ItemFailure."""
        out = []
        for region in regions:
            try:
                rgb = image_of(region)
            except cu.InputError as exc:
                out.append(cu.ItemFailure(exc))
                continue
            start = time.perf_counter()
            found, angle, image = self._upright_lines(rgb)
            lines = [TextLine(box=line["box"], crop=line["crop"], orientation=angle) for line in found]
            if self.layout is not None and region.whole_page:  # a scanned page: tag its lines by layout
                boxes = self.layout.boxes(image)
                lines = [scan_layout.tagged(line, boxes) for line in lines]
            share = (time.perf_counter() - start) / max(len(lines), 1)
            out.append([replace(line, seconds=share) for line in lines])
        return out

    def read_lines(self, lines: list[TextLine]) -> list[TextLine]:
        """Map: per line (of any region, page or document), the line with its text and score and
        without its pixels. A line scoring under `text_score` gets text "" (RapidOCR drops it)."""
        if not lines:
            return []
        start = time.perf_counter()
        read = self.ocr_model.read_lines([line.crop for line in lines])
        share = (time.perf_counter() - start) / len(lines)
        return [replace(line, crop=None, text=r["text"], score=r["score"], seconds=line.seconds + share)
                for line, r in zip(lines, read, strict=True)]

    def _upright(self, rgb) -> tuple[object, int]:
        """The image turned upright, and how far its content was turned (clockwise degrees)."""
        if self.orientation is None:
            return rgb, 0
        angle, _ = self.orientation.angle(rgb)
        return upright(rgb, angle), angle

    def _upright_lines(self, rgb) -> tuple[list[dict], int, object]:
        """The text lines of an image turned upright, the angle, and the upright image. When the
        page classifier cannot tell (a page of two lines), the lines vote: most of them upside
        down turns it."""
        if self.orientation is None:
            return self.ocr_model.lines(rgb), 0, rgb
        angle, score = self.orientation.angle(rgb)
        image = upright(rgb, angle)
        found = self.ocr_model.lines(image)
        unsure = score is None or score < self.orientation.min_score
        if angle == 0 and unsure and self.ocr_model.upside_down([line["crop"] for line in found]):
            angle, image = 180, upright(rgb, 180)
            found = self.ocr_model.lines(image)
        return found, angle, image

    def _read(self, rgb) -> tuple[str, float | None]:
        boxes = self.ocr_model.read(self._upright(rgb)[0])
        if not boxes:
            return "", None
        text = lines_to_text([b["box"] for b in boxes], [b["text"] for b in boxes])
        return text, float(statistics.fmean(b["score"] for b in boxes))


def join_lines(groups: list[list[TextLine]]) -> list[RegionText]:
    """Reduce: per region, its read lines as text in reading order (`RegionText`)."""
    out = []
    for lines in groups:
        kept = [line for line in lines if line.text]
        text = lines_to_text([line.box for line in kept], [line.text for line in kept])
        score = float(statistics.fmean(line.score for line in kept)) if kept else None
        dropped = sum(1 for line in lines if line.text == "")
        orientation = lines[0].orientation if lines else 0  # one decision per region: its lines share it
        laid_out = tuple(lines) if lines and lines[0].laid_out else ()  # a scanned page's lines, for read_regions
        out.append(RegionText(text=text, score=score, lines=len(kept), seconds=sum(line.seconds for line in lines),
                              orientation=orientation, dropped=dropped, tagged=laid_out))
    return out


def with_text(items: list[tuple[RegionRecord, RegionText]]) -> list[RegionRecord]:
    """Per (region, its RegionText): the region with that text as content, as `ocr_regions` gives
    it (a scanned page read with layout too: its whole text as one region)."""
    return [replace(region, content=read.text, source=SOURCE, score=read.score, crop=None,
                    seconds=region.seconds + read.seconds, orientation=read.orientation) for region, read in items]


def read_regions(items: list[tuple[PageRecord, RegionRecord, RegionText]]) -> list[list[RegionRecord]]:
    """Per (page, region, its RegionText): the regions OCR read in it, as the recipe's `read`
    map gives them to the page (`assemble.collect` flattens them): a whole scanned page read with
    layout is cut into its regions by layout group (`scan_layout.page_regions`); any other
    region (a block of garbage text, a page read without layout or where no line was read) is
    one region with its text, as `with_text` gives it; a figure read so is text only when its
    text reads as prose (`_figure_or_text`)."""
    out = []
    for item in items:
        if len(item) != 3:
            raise EngineError(f"read_regions takes (page, region, RegionText) triples, got {len(item)} values; "
                              "zip the region's page in first, e.g. zip: [ocr_pages, ocr_regions, region_text]")
        page, region, read = item
        out.append(scan_layout.page_regions(page, region, read) if read.tagged and read.lines
                   else [_figure_or_text(r) for r in with_text([(region, read)])])
    return out


def _figure_or_text(region: RegionRecord) -> RegionRecord:
    """A region read as a figure (an image over most of a text-layer page: `regions.scan_regions`)
    is text when its OCR text reads as prose (`ocr_text.reads_as_text`), else a figure whose text
    stays on the region, out of the Markdown; label "figure" says what sent it to OCR."""
    if region.kind != "figure":
        return region
    return replace(region, kind="text" if reads_as_text(region.content or "") else "figure", label="figure")
