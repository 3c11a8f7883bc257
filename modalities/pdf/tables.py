"""Tables a layout model found (its box given), read from the page: booktabs (a few horizontal
rules), whitespace-aligned (no rules) and ruled tables alike; and tables of scans, from their OCR
boxes. Markdown when every cell is single, else HTML with `rowspan`/`colspan` (MinerU's
convention), which `assemble.merge_tables` joins across pages too. How cells are found from word
positions and rules: `table_cells`.

`table_content` reads the box's words (one text page, clipped to the box and `EDGE` around it: a
layout model's box can clip the table's edge), its upright lines (headers of narrow columns,
read from "dict" only when a word is taller than wide) and the rules of the page's vector
graphics that cross it.
"""

from __future__ import annotations

from typing import Any

from curate.errors import EngineError
from curate.modalities.pdf.regions import text_flags
from curate.modalities.pdf.table_cells import cells_table

EDGE = 3.0  # points around the box still in the table: a layout model's box can clip its edge
RULE_THICKNESS = 2.0  # points: a thinner line or filled bar is a rule
RULE_HEIGHT = 0.5  # vertical rules (merged segments) at least this share of the table's height part columns


def table_content(page: Any, mod: Any, bbox: tuple[float, float, float, float], drawings: list | None = None) -> str:
    """The table inside `bbox` (points, top-left origin, the coordinates of `page.get_text`) of a
    pymupdf.Page (`mod`: the pymupdf module): Markdown when every cell is single, HTML with
    rowspan/colspan otherwise, "" when the box does not hold a table (one column, one row,
    prose). `drawings`: the page's `get_cdrawings()` when the caller has them already (a page
    with several tables, or heavy vector graphics, reads them once)."""
    rect = mod.Rect(bbox).normalize() + (-EDGE, -EDGE, EDGE, EDGE)
    textpage = page.get_textpage(clip=rect, flags=text_flags(mod))
    words = [w for w in page.get_text("words", textpage=textpage) if _within(w[:4], rect)]
    upright, turned = [], set()  # lines of text that run up or down (a narrow column's header)
    if any(w[3] - w[1] > w[2] - w[0] for w in words):  # only then is the slower "dict" worth it
        for b, block in enumerate(page.get_text("dict", textpage=textpage)["blocks"]):
            for k, line in enumerate(block.get("lines", ())):
                text = " ".join("".join(s["text"] for s in line.get("spans", ())).split())
                if abs(line.get("dir", (1, 0))[0]) < 0.5 and text and _within(line["bbox"], rect):
                    upright.append((*line["bbox"], text))
                    turned.add((b, k))
    hrules, vrules = _rules(page.get_cdrawings() if drawings is None else drawings, rect)
    return cells_table([w[:5] for w in words if (w[5], w[6]) not in turned], hrules, vrules, upright)


def _within(box, rect) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return rect.x0 <= x <= rect.x1 and rect.y0 <= y <= rect.y1


def table_from_boxes(boxes: list, texts: list[str]) -> str:
    """The same from OCR boxes of a scanned table region (x0, y0, x1, y1 in pixels or points,
    top-left origin, or four corner points) and their texts: columns and rows from the boxes
    alone (a scan has no vector rules)."""
    if len(boxes) != len(texts):
        raise EngineError(f"table_from_boxes: {len(boxes)} boxes but {len(texts)} texts; pass one text per box")
    words = []
    for box, text in zip(boxes, texts):
        if len(box) == 4 and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in box):
            xs, ys = [v[0] for v in box], [v[1] for v in box]
            box = (min(xs), min(ys), max(xs), max(ys))
        if len(box) != 4:
            raise EngineError(f"table_from_boxes: box {box!r} is neither (x0, y0, x1, y1) nor four points")
        if str(text).strip():
            words.append((*(float(v) for v in box), " ".join(str(text).split())))
    return cells_table(words, [], [])


# ---- rules -----------------------------------------------------------------------------------
def _rules(drawings: list, rect: Any) -> tuple[list[tuple[float, float, float]], list[float]]:
    """(horizontal rules as (x0, y, x1), x of vertical rules) across `rect`, cut to it: lines and
    thin filled bars of the page's vector graphics (a layout model's box often lies inside the
    table's frame); the pieces of a vertical rule (one a row) are summed."""
    hrules, vpieces = [], {}
    for path in drawings:
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if min(abs(x1 - x0), abs(y1 - y0)) > RULE_THICKNESS:
                    continue  # a filled box, not a rule
            else:
                continue
            (x0, x1), (y0, y1) = sorted((x0, x1)), sorted((y0, y1))
            if y1 - y0 <= RULE_THICKNESS and x1 - x0 > RULE_THICKNESS and rect.y0 - EDGE <= y0 <= rect.y1 + EDGE:
                a, b = max(x0, rect.x0), min(x1, rect.x1)
                if b > a:
                    hrules.append((a, (y0 + y1) / 2, b))
            elif x1 - x0 <= RULE_THICKNESS and rect.x0 - EDGE <= x0 <= rect.x1 + EDGE:
                key = round((x0 + x1) / 2)
                vpieces[key] = vpieces.get(key, 0.0) + max(0.0, min(y1, rect.y1) - max(y0, rect.y0))
    vrules = [float(x) for x, length in vpieces.items() if length >= RULE_HEIGHT * rect.height]
    return hrules, sorted(vrules)
