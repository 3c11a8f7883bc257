"""Reading order of boxes on a page, for the text layer's blocks and for OCR's text lines.

Boxes are (x0, y0, x1, y1), origin top left. The page is cut into horizontal bands at the boxes
that span most of the text's width (a title, a full-width paragraph or figure; with any box on
the same line, left to right); within a band
the boxes fall into columns (boxes whose x ranges overlap, chained), read left to right (right
to left for vertical writing), each column top to bottom. One column gives plain top-to-bottom
order; a two-column paper under a full-width title gives the title, the left column, the right
column. No learned model: a layout model (MinerU) does better on magazines and forms.
"""

from __future__ import annotations

from collections.abc import Sequence

FULL_WIDTH = 0.6  # a box at least this share of the text's width is a band of its own
OVERLAP_PT = 1.0  # x ranges must overlap by more than this to chain into one column

Box = Sequence[float]


def reading_order(boxes: Sequence[Box], right_to_left: bool = False) -> list[int]:
    """The indices of `boxes` in reading order."""
    if not boxes:
        return []
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    wide = max(right - left, 1e-6) * FULL_WIDTH
    order: list[int] = []
    band: list[int] = []  # boxes between full-width ones: read in columns
    row: list[int] = []  # a full-width box and the boxes on its line
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i][1], boxes[i][0])):
        if row and _same_line(boxes[i], boxes[row[0]]):
            row.append(i)
        elif boxes[i][2] - boxes[i][0] >= wide:
            order += _row(boxes, row, right_to_left)
            row = [i] + [b for b in band if _same_line(boxes[b], boxes[i])]
            order += _columns(boxes, [b for b in band if b not in row], right_to_left)
            band = []
        else:
            order += _row(boxes, row, right_to_left)
            row = []
            band.append(i)
    return order + _row(boxes, row, right_to_left) + _columns(boxes, band, right_to_left)


def _same_line(a: Box, b: Box, min_overlap: float = 0.5) -> bool:
    shared = min(a[3], b[3]) - max(a[1], b[1])
    return shared >= min_overlap * max(min(a[3] - a[1], b[3] - b[1]), 1e-6)


def _row(boxes: Sequence[Box], row: list[int], right_to_left: bool) -> list[int]:
    return sorted(row, key=lambda i: boxes[i][0], reverse=right_to_left)


def _columns(boxes: Sequence[Box], band: list[int], right_to_left: bool) -> list[int]:
    """The boxes of one band: column by column, each top to bottom."""
    if not band:
        return []
    columns: list[tuple[float, float, list[int]]] = []  # (x0, x1, members), by x0
    for i in sorted(band, key=lambda i: boxes[i][0]):
        x0, x1 = boxes[i][0], boxes[i][2]
        if columns and x0 < columns[-1][1] - OVERLAP_PT:
            c0, c1, members = columns[-1]
            columns[-1] = (c0, max(c1, x1), members + [i])
        else:
            columns.append((x0, x1, [i]))
    if right_to_left:
        columns.reverse()
    return [i for _, _, members in columns for i in sorted(members, key=lambda i: (boxes[i][1], boxes[i][0]))]


def group_lines(boxes: Sequence[Box], min_overlap: float = 0.5) -> list[list[int]]:
    """Boxes that share a text line (their vertical extents overlap by at least `min_overlap`
    of the shorter one), line by line top to bottom, each line left to right."""
    lines: list[tuple[float, float, list[int]]] = []  # (y0, y1, members)
    for i in sorted(range(len(boxes)), key=lambda i: ((boxes[i][1] + boxes[i][3]) / 2, boxes[i][0])):
        y0, y1 = boxes[i][1], boxes[i][3]
        if lines:
            l0, l1, members = lines[-1]
            shared = min(l1, y1) - max(l0, y0)
            if shared >= min_overlap * max(min(l1 - l0, y1 - y0), 1e-6):
                lines[-1] = (min(l0, y0), max(l1, y1), members + [i])
                continue
        lines.append((y0, y1, [i]))
    return [sorted(members, key=lambda i: boxes[i][0]) for _, _, members in lines]


# ---- recursive XY-cut: the reading order of a layout model's regions -------------------------
MIN_GUTTER_PT = 4.0  # a vertical stripe of white at least this wide between boxes separates columns


def xy_cut(boxes: Sequence[Box], right_to_left: bool = False) -> list[int]:
    """The indices of `boxes` (a page's layout regions) in reading order, by recursive XY-cut.

    A set of boxes with a white vertical stripe through it (a gutter at least `MIN_GUTTER_PT`
    wide) is read column by column (left to right, or right to left); else it is cut into
    horizontal strips at white horizontal lines, read top to bottom, after merging neighbouring
    strips that share a gutter (two columns whose paragraph breaks line up are still two
    columns, not a sequence of rows). A centred author block or a full-width title crosses the
    gutter, so it is a strip of its own above the columns."""
    return _xy(list(range(len(boxes))), boxes, right_to_left)


def _xy(idx: list[int], boxes: Sequence[Box], rtl: bool) -> list[int]:
    if len(idx) <= 1:
        return idx
    columns = _split(idx, boxes, 0, MIN_GUTTER_PT)
    if len(columns) > 1:
        return [i for part in (reversed(columns) if rtl else columns) for i in _xy(part, boxes, rtl)]
    strips = _split(idx, boxes, 1, 0.0)
    if len(strips) == 1:
        return sorted(idx, key=lambda i: (boxes[i][1], boxes[i][0]))
    groups: list[list[int]] = []
    for strip in strips:
        if groups and _gutters(groups[-1] + strip, boxes):
            groups[-1] += strip
        else:
            groups.append(list(strip))
    if len(groups) == 1:  # cannot happen (the whole set has no gutter); kept as a guard against recursion
        return sorted(idx, key=lambda i: (boxes[i][1], boxes[i][0]))
    return [i for g in groups for i in _xy(g, boxes, rtl)]


def _split(idx: list[int], boxes: Sequence[Box], axis: int, min_gap: float) -> list[list[int]]:
    """`idx` cut at every white gap wider than `min_gap` along `axis` (0: x, 1: y), in order."""
    lo, hi = axis, axis + 2
    parts: list[list[int]] = []
    end = None
    for i in sorted(idx, key=lambda i: (boxes[i][lo], boxes[i][hi])):
        if end is not None and boxes[i][lo] - end > min_gap:
            parts.append([])
        if not parts:
            parts.append([])
        parts[-1].append(i)
        end = boxes[i][hi] if end is None else max(end, boxes[i][hi])
    return parts


def _gutters(idx: list[int], boxes: Sequence[Box]) -> bool:
    return len(_split(idx, boxes, 0, MIN_GUTTER_PT)) > 1
