"""OCR boxes -> text in reading order: the rules the OCR route joins a region's lines by, pure
(boxes and strings in, strings out; no model).

Margin notes (`split_margin`: narrow boxes wholly beside the body's wide lines, such as the fax's
"No. 1") come after the body, each read on its own: the boxes are put in columns and bands
(`order.reading_order`), boxes that share a line are joined left to right with spaces
(`rows`), lines with a newline, and a vertical gap larger than `PARAGRAPH_GAP` line heights (or
a new column) starts a paragraph (`paragraph_starts`: a blank line). This holds for a whole page
and for a region's crop alike, and the layout of a scan (`scan_layout`) groups its lines by the
same rows and paragraphs.
"""

from __future__ import annotations

import itertools
import statistics

from curate.modalities.pdf.order import FULL_WIDTH, reading_order

PARAGRAPH_GAP = 0.8  # a gap between lines above this many line heights starts a paragraph
# boxes whose heights overlap by this share of the smaller one share a line, if their x ranges
# overlap by no more than this share of it (RapidOCR's boxes of one line touch or overlap a little)
LINE_OVERLAP = 0.5
MIN_BODY_LINES = 2  # wide lines needed to tell the body's span from its margins (one is a title)
# a margin note (a folio, a stamp, "No. 1" in the fax's margin) is narrower than this share of the
# text's width; a column of a page is wider (two columns: about half each)
MARGIN_MAX_WIDTH = 0.2

Box = tuple[float, float, float, float]


def lines_to_text(boxes: list[Box], texts: list[str]) -> str:
    """OCR boxes and their texts as text in reading order (see the module docstring): the body,
    then its margin notes, each joined into lines and paragraphs."""
    parts = [_paragraphs([(bounds, [texts[m] for m in members]) for bounds, members in rows(boxes, part)])
             for part in split_margin(boxes)]
    return "\n\n".join(p for p in parts if p)


def split_margin(boxes: list[Box]) -> tuple[list[int], list[int]]:
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


def rows(boxes: list[Box], indices: list[int]) -> list[tuple[list[float], list[int]]]:
    """The boxes `indices` in reading order, joined into lines: (bounds of the line, its boxes
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
    return [(bounds, sorted(members, key=lambda m: boxes[m][0])) for bounds, members in lines]


def paragraph_starts(bounds: list[list[float]]) -> list[bool]:
    """Per line (its bounds, in reading order): whether it starts a paragraph. The first does;
    a later one when the gap above it is over PARAGRAPH_GAP line heights (the median line's) or
    it starts above the line before (a new column)."""
    if not bounds:
        return []
    height = statistics.median(b[3] - b[1] for b in bounds)
    return [True] + [box[1] - prev[3] > PARAGRAPH_GAP * height or box[1] < prev[1]
                     for prev, box in itertools.pairwise(bounds)]


def _paragraphs(lines: list[tuple[list[float], list[str]]]) -> str:
    """Lines as text: a newline between them, a blank line where a paragraph starts."""
    starts = paragraph_starts([b for b, _ in lines])
    out = [("\n\n" if start else "\n") + " ".join(words) for start, (_, words) in zip(starts, lines)]
    return "".join(out).strip()


# A figure's OCR text is the page's text, not a picture's labels, when at least PROSE_MIN_LINES of its
# lines have PROSE_MIN_WORDS words or more and such lines hold at least PROSE_MIN_SHARE of its words: a
# letter, notes, a poster's lines. A chart's tick numbers and one-word labels, a photo's sign, a
# diagram's few boxes have at most a title and a legend line that long.
PROSE_MIN_LINES = 3
PROSE_MIN_WORDS = 3
PROSE_MIN_SHARE = 0.5


def reads_as_text(text: str) -> bool:
    """Whether the OCR text of a figure (its rows, one a line) reads as prose (see PROSE_MIN_LINES)."""
    counts = [len(row.split()) for row in text.splitlines() if row.strip()]
    prose = [n for n in counts if n >= PROSE_MIN_WORDS]
    return len(prose) >= PROSE_MIN_LINES and sum(prose) >= PROSE_MIN_SHARE * sum(counts)
