"""The OCR route of PDF -> Markdown, for pages whose text layer is missing or garbage: RapidOCR
(`curate.models.rapidocr`) on rendered pages and region crops, its text in reading order.

`RapidOcr` (a pool class: one RapidOCR model and one orientation classifier per actor) reads
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
  finish the route and give what `ocr_regions` gives.

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

Text comes in reading order: margin notes (`split_margin`: narrow boxes wholly beside the body's
wide lines, such as the fax's "No. 1") come after the body, each read on its own: the boxes are
put in columns and bands (`order.reading_order`), boxes that share a line are joined left to
right with spaces, lines with a newline, and a vertical gap larger than `PARAGRAPH_GAP` line
heights (or a new column) starts a paragraph (a blank line). This holds for a whole page and for
a region's crop alike. An empty or unreadable image is an ItemFailure with an InputError; a page
with no text gives "".
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import replace

from curate.modalities.pdf.order import FULL_WIDTH, reading_order
from curate.modalities.pdf.records import RegionRecord, RegionText, TextLine
from curate.models.orientation import RapidOrientationModel, upright
from curate.models.rapidocr import RapidOcrModel, image_of

import curate as cu

PARAGRAPH_GAP = 0.8  # a gap between lines above this many line heights starts a paragraph
# boxes whose heights overlap by this share of the smaller one share a line, if their x ranges
# overlap by no more than this share of it (RapidOCR's boxes of one line touch or overlap a little)
LINE_OVERLAP = 0.5
MIN_BODY_LINES = 2  # wide lines needed to tell the body's span from its margins (one is a title)
# a margin note (a folio, a stamp, "No. 1" in the fax's margin) is narrower than this share of the
# text's width; a column of a page is wider (two columns: about half each)
MARGIN_MAX_WIDTH = 0.2
SOURCE = "rapidocr"


class RapidOcr:
    """RapidOCR on PDF records: `ocr` (image -> text), `ocr_regions` (region -> region), and the
    recipe's `detect_lines` (region -> lines) and `read_lines` (line -> line)."""

    # checked before a run starts (curate.deps.check_installed): module -> what installs it
    requires = {**dict.fromkeys(RapidOcrModel.requires), **RapidOrientationModel.requires}
    default_resources = RapidOcrModel.default_resources

    def __init__(self, model: str | None = None, device: str = "cpu", batch_size: int | None = None,
                 threads: int = 1, text_score: float = 0.5, rec_batch_num: int = 1, orient: bool = True):
        self.ocr_model = RapidOcrModel(model, device, batch_size, threads, text_score, rec_batch_num)
        # orient=False reads every image as it comes (a corpus known to be upright skips the classifier)
        self.orientation = RapidOrientationModel(threads=threads) if orient else None
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
            found, angle = self._upright_lines(rgb)
            share = (time.perf_counter() - start) / max(len(found), 1)
            out.append([TextLine(box=line["box"], crop=line["crop"], seconds=share, orientation=angle)
                        for line in found])
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

    def _upright_lines(self, rgb) -> tuple[list[dict], int]:
        """The text lines of an image turned upright, and the angle. When the page classifier
        cannot tell (a page of two lines), the lines vote: most of them upside down turns it."""
        if self.orientation is None:
            return self.ocr_model.lines(rgb), 0
        angle, score = self.orientation.angle(rgb)
        found = self.ocr_model.lines(upright(rgb, angle))
        unsure = score is None or score < self.orientation.min_score
        if angle == 0 and unsure and self.ocr_model.upside_down([line["crop"] for line in found]):
            angle, found = 180, self.ocr_model.lines(upright(rgb, 180))
        return found, angle

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
        out.append(RegionText(text=text, score=score, lines=len(kept), seconds=sum(line.seconds for line in lines),
                              orientation=orientation, dropped=dropped))
    return out


def with_text(items: list[tuple[RegionRecord, RegionText]]) -> list[RegionRecord]:
    """Per (region, its RegionText): the region with that text as content, as `ocr_regions` gives it."""
    return [replace(region, content=read.text, source=SOURCE, score=read.score, crop=None,
                    seconds=region.seconds + read.seconds, orientation=read.orientation) for region, read in items]


def lines_to_text(boxes: list[tuple[float, float, float, float]], texts: list[str]) -> str:
    """OCR boxes and their texts as text in reading order (see the module docstring): the body,
    then its margin notes, each joined into lines and paragraphs."""
    parts = [_paragraphs(_lines(boxes, texts, part)) for part in split_margin(boxes)]
    return "\n\n".join(p for p in parts if p)


def split_margin(boxes: list[tuple[float, float, float, float]]) -> tuple[list[int], list[int]]:
    """(indices of the body's boxes, indices of margin notes): a margin note is a narrow box
    (under MARGIN_MAX_WIDTH of the text's width) wholly left or right of the span of the body's
    wide lines (FULL_WIDTH of the text's width, at least MIN_BODY_LINES of them). Without such
    lines (a column, a table, a note alone) every box is the body's."""
    if not boxes:
        return [], []
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    width = max(right - left, 1e-6)
    wide = [b for b in boxes if b[2] - b[0] >= FULL_WIDTH * width]
    if len(wide) < MIN_BODY_LINES:
        return list(range(len(boxes))), []
    x0, x1 = min(b[0] for b in wide), max(b[2] for b in wide)
    margin = {i for i, b in enumerate(boxes) if b[2] - b[0] < MARGIN_MAX_WIDTH * width and (b[2] <= x0 or b[0] >= x1)}
    return [i for i in range(len(boxes)) if i not in margin], sorted(margin)


def _lines(boxes, texts, indices: list[int]) -> list[tuple[list[float], list[str]]]:
    """The boxes `indices` in reading order, joined into lines: (bounds of the line, its texts
    left to right). A box joins the line before it when it shares its height (LINE_OVERLAP)
    and lies beside each of its boxes, on either side: boxes of one line whose tops differ by
    a pixel come in the order of their tops, not always left to right."""
    sub = [boxes[i] for i in indices]
    lines: list[tuple[list[float], list[int]]] = []  # (bounds, members)
    for i in (indices[j] for j in reading_order(sub)):
        x0, y0, x1, y1 = boxes[i]
        if lines:
            (lx0, ly0, lx1, ly1), members = lines[-1]
            shared = min(ly1, y1) - max(ly0, y0)
            small = max(min(ly1 - ly0, y1 - y0), 1e-6)
            beside = all(min(x1, boxes[m][2]) - max(x0, boxes[m][0]) <= LINE_OVERLAP * small for m in members)
            if shared >= LINE_OVERLAP * small and beside:
                lines[-1] = ([min(lx0, x0), min(ly0, y0), max(lx1, x1), max(ly1, y1)], members + [i])
                continue
        lines.append(([x0, y0, x1, y1], [i]))
    return [(bounds, [texts[m] for m in sorted(members, key=lambda m: boxes[m][0])]) for bounds, members in lines]


def _paragraphs(lines: list[tuple[list[float], list[str]]]) -> str:
    """Lines as text: a newline between them, a blank line where the gap is over PARAGRAPH_GAP
    line heights or the next line starts above this one (a new column)."""
    if not lines:
        return ""
    height = statistics.median(b[3] - b[1] for b, _ in lines)
    out = [" ".join(lines[0][1])]
    for (prev, _), (box, words) in itertools.pairwise(lines):
        gap = box[1] - prev[3]
        out.append(("\n\n" if gap > PARAGRAPH_GAP * height or box[1] < prev[1] else "\n") + " ".join(words))
    return "".join(out).strip()
