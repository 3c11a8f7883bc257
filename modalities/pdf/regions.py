"""Page -> regions, from the PDF's own structure (no model): PyMuPDF's text blocks, ruled tables
and images, classified by simple rules and put in reading order (`order.reading_order`).

- A text block is a `title` when its font is at least `TITLE_RATIO` times the page's body size
  (level 1 from `TOP_TITLE_RATIO`), or when it is one short bold line; `code` when every span is
  monospaced and its lines, or its page's monospaced lines, look like code (`code_blocks.is_code`:
  prose set in Courier is text); `list` when it starts with a bullet or an enumeration; `caption` when it starts
  with "Figure 3", "Table 2"...; `footnote` when small and in the bottom part of the page;
  `page_number` when it is only a page number in the top or bottom margin, `aside` when its
  text runs vertically on a page of horizontal text (an arXiv stamp, a margin note): both are
  paratext, dropped from the Markdown; else `text`. Lines are joined with spaces (none between CJK characters),
  and a word hyphenated at a line end is joined again.
- Tables: `page.find_tables()` runs only on pages with at least `MIN_RULES` long horizontal
  rules, clipped to them, without PyMuPDF's layout model (`tables="lines"`, the default: a few
  ms a page). `tables="layout"` lets PyMuPDF's layout model find unruled tables too, at about
  a second a page on a CPU; `tables="off"` skips them. A table is Markdown (`content`), and the
  text blocks inside it are not repeated.
- Images of at least `MIN_FIGURE_AREA` of the page, with no text over them (text over an image
  means a scan with its OCR layer, or a background), are `figure` regions (a placeholder in
  the Markdown).

Headers and footers other than page numbers are found by repetition across pages, in the
document reducer (`assemble`).

Also here: the OCR branch's expand (`scan_regions`): a page whose text layer is not usable is one
full-page region without content, which goes to rendering and OCR (which cuts it into regions by
rapid-layout's boxes: `scan_layout`).
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from curate.modalities.pdf.formulas import SOURCE as FORMULA_SOURCE
from curate.modalities.pdf.formulas import block_latex, is_display, line_has_math, line_text, merge_display, page_blocks
from curate.modalities.pdf.code_blocks import code_share, indented, is_code
from curate.modalities.pdf.order import group_lines, reading_order
from curate.modalities.pdf.records import RegionRecord
from curate.modalities.pdf.textlayer import route_of
from curate.modalities.pdf.words import join_lines

SOURCE = "text_layer"
TITLE_RATIO = 1.15  # font size over the page's body size that makes a short block a title
TOP_TITLE_RATIO = 1.6  # ...and a level-1 title
TITLE_MAX_CHARS = 200
BOLD_TITLE_MAX_CHARS = 80  # one bold line at body size, this short and without a final period
FOOTNOTE_RATIO = 0.85  # font size under the body size that makes a bottom block a footnote
FOOTNOTE_ZONE = 0.7  # ...when it starts below this share of the page's height
MARGIN = 0.08  # top and bottom share of the page where a lone number is a page number
MIN_RULES = 3  # long horizontal rules a page needs before tables are looked for
RULE_MIN_WIDTH = 0.1  # of the page's width: a rule at least this long
TABLE_MIN_WORDS = 0.9  # share of the words inside a table's box its cells must hold (else: a form's grid)
TABLE_MIN_FILL = 0.3  # share of its cells that must hold text (else: a layout grid with a few labels)
MIN_FIGURE_AREA = 0.01  # of the page's area: smaller images are icons and bullets
TABLE_MODES = ("lines", "layout", "off")
BOLD, MONO = 16, 8  # PyMuPDF span flags
BULLETS = "•◦▪▫‣⁃∙●○■□➢►–—-*·\ufffd\uf0b7\uf0a7\uf0d8"  # U+FFFD, U+F0B7...: a symbol font's bullet
LIST_ITEM = re.compile(rf"^\s*(?:[{re.escape(BULLETS)}]\s+|\(?\d{{1,3}}[.)]\s+|\(?[a-z][.)]\s+|\[\d{{1,3}}\]\s+)")
BULLET = re.compile(rf"^\s*[{re.escape(BULLETS)}]\s+")
CAPTION = re.compile(r"^(?:Figure|Fig\.|Table|Listing|Algorithm|Chart|Plate)\s*[0-9IVX]+[.:\s]", re.IGNORECASE)
PAGE_NUMBER = re.compile(r"^(?:page\s*)?(?:\d{1,5}|[ivxlcdm]{1,8})(?:\s*(?:of|/)\s*\d{1,5})?$", re.IGNORECASE)


def text_flags(mod) -> int:
    """PyMuPDF extraction flags: ligatures expanded (ﬁ -> fi), whitespace kept, text outside the
    page ignored, no image data (images are listed with `get_image_info`)."""
    return mod.TEXT_PRESERVE_WHITESPACE | mod.TEXT_MEDIABOX_CLIP


def page_regions(page: Any, mod: Any, tables: str = "lines", skip: tuple = (), blocks: list | None = None,
                 drawings: list | None = None) -> list[RegionRecord]:
    """The regions of a pymupdf.Page in reading order (`order` 0, 1, 2...), without the blocks
    inside a box of `skip` (garbage text that OCR reads). `blocks` (its "dict" extraction with
    `text_flags`) and `drawings` (`get_cdrawings()`): when the caller has read them already."""
    if blocks is None:
        blocks = page_blocks(page, text_flags(mod))
    blocks = [b for b in blocks if b.get("type") == 0 and not any(_inside(_center(b["bbox"]), s) for s in skip)]
    blocks = merge_display(blocks)  # a display formula that MuPDF cut into blocks is one again
    found = _tables(page, mod, tables, drawings)
    blocks = [b for b in blocks if not any(_inside(_center(b["bbox"]), t.bbox) for t in found)]
    texts = [{**t, "formula": _display_latex(b)} for t, b in ((_block_text(b), b) for b in blocks) if t["text"]]
    body = _body_size(texts)
    height = page.cropbox.height
    vertical = sum(t["vertical"] for t in texts) > len(texts) / 2  # tategaki: columns right to left
    listing = mono_code_share(texts)
    regions = [_classify(t, body, height, vertical, listing) for t in texts] + found
    regions += _figures(page, [t["bbox"] for t in texts], page.cropbox.width * height)
    order = reading_order([r.bbox for r in regions], right_to_left=vertical)
    return [RegionRecord(kind=regions[i].kind, bbox=regions[i].bbox, order=k, content=regions[i].content,
                         source=regions[i].source or SOURCE, level=regions[i].level) for k, i in enumerate(order)]


# ---- text blocks ----------------------------------------------------------------------------
def _block_text(block: dict) -> dict:
    """A text block's lines joined into one text, with what the classifier needs."""
    lines, sizes, bold, mono, vertical = [], [], True, True, 0
    boxes, starts, steps = [], [], []  # each line's box, first glyph (x) and advance: a code block's rows
    for line in block.get("lines", ()):
        spans = [s for s in line.get("spans", ()) if s.get("text", "").strip()]
        if not spans:
            continue
        raw = "".join(s["text"] for s in line["spans"]).rstrip()
        boxes.append(tuple(line["bbox"]))
        steps.append((line["bbox"][2] - line["bbox"][0]) / max(len(raw), 1))
        starts.append(line["bbox"][0] + (len(raw) - len(raw.lstrip())) * steps[-1])
        math = line_has_math(line)  # a line with glyphs of a math font ("rawdict"): its formulas as $...$
        lines.append((line_text(line, block.get("rules", ())) if math else "".join(s["text"] for s in line["spans"])).strip())
        for s in spans:
            sizes += [round(s["size"], 1)] * len(s["text"].strip())
            bold &= bool(s["flags"] & BOLD) or "bold" in s["font"].lower()
            mono &= bool(s["flags"] & MONO) or any(m in s["font"].lower() for m in ("mono", "courier", "code"))
        vertical += line.get("wmode", 0) == 1 or abs(line.get("dir", (1, 0))[0]) < 0.5
    size = statistics.median(sizes) if sizes else 0.0
    return {"bbox": tuple(block["bbox"]), "lines": lines, "text": join_lines(lines), "size": size,
            "bold": bold and bool(lines), "mono": mono and bool(lines), "vertical": vertical > len(lines) / 2,
            "boxes": boxes, "starts": starts, "step": statistics.median(steps) if steps else 0.0}


def _display_latex(block: dict) -> str:
    """A block's display formula as LaTeX ("" when it is none): what the rules route classifies
    as `formula` (the layout route asks `layout_regions._formula` of the model's boxes instead)."""
    if block.get("formula") or any(line_has_math(ln) for ln in block["lines"]) and is_display(block["lines"]):
        return block_latex(block["lines"], block.get("rules", ()))
    return ""


def _body_size(texts: list[dict]) -> float:
    """The page's body font size: the size most of its characters have."""
    weights: dict[float, int] = {}
    for t in texts:
        weights[t["size"]] = weights.get(t["size"], 0) + len(t["text"])
    return max(weights, key=weights.get) if weights else 0.0


def mono_code_share(texts: list[dict]) -> float:
    """How code-like a page's monospaced lines are (`code_blocks.code_share`) over its texts
    (`_block_text`'s, or a line's each)."""
    return code_share([ln for t in texts if t["mono"] and not t["vertical"] for ln in t["lines"]])


def _classify(t: dict, body: float, height: float, vertical_page: bool, listing: float = 0.0) -> RegionRecord:
    """A text block's region by the rules of the module docstring; `listing`: its page's
    `mono_code_share`."""
    text, bbox, size = t["text"], t["bbox"], t["size"]
    kind, level, content = "text", 0, text
    in_margin = bbox[3] <= height * MARGIN or bbox[1] >= height * (1 - MARGIN)
    if in_margin and PAGE_NUMBER.match(text):
        kind = "page_number"
    elif t["vertical"] and not vertical_page:
        kind = "aside"  # text turned on a page of level text: an arXiv stamp, a margin note
    elif t.get("formula"):
        kind, content = "formula", t["formula"]
    elif t["mono"] and not t["vertical"] and is_code(t["lines"], listing):
        kind, content = "code", "\n".join(_code_lines(t))
    elif CAPTION.match(text):
        kind = "caption"
    elif body and size >= body * TITLE_RATIO and len(text) <= TITLE_MAX_CHARS and len(t["lines"]) <= 3:
        kind, level = "title", 1 if size >= body * TOP_TITLE_RATIO else 2
    elif t["bold"] and len(t["lines"]) == 1 and len(text) <= BOLD_TITLE_MAX_CHARS and not text.endswith((".", ":", ",")):
        kind, level = "title", 3
    elif LIST_ITEM.match(t["lines"][0]):
        kind, content = "list", "\n".join(_list_items(t["lines"]))
    elif body and size < body * FOOTNOTE_RATIO and bbox[1] >= height * FOOTNOTE_ZONE:
        kind = "footnote"
    source = FORMULA_SOURCE if kind == "formula" else SOURCE
    return RegionRecord(kind=kind, bbox=_box(bbox), order=0, content=content, source=source, level=level,
                        size=float(size), bold=bool(t["bold"]))


def _code_lines(t: dict) -> list[str]:
    """A code block's lines as rows (spans MuPDF cut into two lines on one baseline, a keyword
    set apart, are one line again), indented as set (`code_blocks.indented`)."""
    boxes, starts = t.get("boxes", []), t.get("starts", [])
    if not (len(boxes) == len(starts) == len(t["lines"])):
        return t["lines"]
    rows = group_lines(boxes)
    return indented([" ".join(t["lines"][i] for i in row) for row in rows], [starts[row[0]] for row in rows],
                    t.get("step", 0.0))


def _list_items(lines: list[str]) -> list[str]:
    """One text per list item: a line that starts with a bullet or an enumeration opens one,
    other lines continue it. Bullets are dropped (the Markdown writes its own); numbers stay."""
    items: list[list[str]] = []
    for line in lines:
        if LIST_ITEM.match(line) or not items:
            items.append([BULLET.sub("", line, count=1)])
        else:
            items[-1].append(line)
    return [join_lines(item) for item in items]


# ---- tables and figures -----------------------------------------------------------------------
def _tables(page: Any, mod: Any, mode: str, drawings: list | None = None) -> list[RegionRecord]:
    if mode not in TABLE_MODES:
        raise ValueError(f"tables={mode!r}; one of {TABLE_MODES}")
    if mode == "off":
        return []
    clip = None
    if mode == "lines":
        rules = _rules(page, drawings)
        if len(rules) < MIN_RULES:
            return []
        clip = mod.Rect(min(r[0] for r in rules) - 2, min(r[1] for r in rules) - 2,
                        max(r[2] for r in rules) + 2, max(r[3] for r in rules) + 2)
    out, words = [], None
    for table in page.find_tables(clip=clip, use_layout=mode == "layout").tables:
        words = page.get_text("words", flags=text_flags(mod)) if words is None else words
        rows, used = _cells(table, words)
        inside = sum(1 for w in words if _inside(_center(w[:4]), table.bbox))
        cells = [c for row in rows for c in row]
        if used < TABLE_MIN_WORDS * inside or sum(map(bool, cells)) < TABLE_MIN_FILL * len(cells):
            continue  # a form's grid or a frame around text: its text stays in the text blocks
        markdown = table_markdown(rows)
        if markdown:
            out.append(RegionRecord(kind="table", bbox=_box(table.bbox), order=0, content=markdown, source=SOURCE))
    return out


def _cells(table: Any, words: list[tuple]) -> tuple[list[list[str]], int]:
    """(a table's rows of cell texts, how many words they hold): each cell has the page's words
    whose center is in it, in MuPDF's order (PyMuPDF's own `extract` can shuffle characters:
    "0.965" -> "0965 .")."""
    rows, used = [], 0
    for row in table.rows:
        cells = []
        for cell in row.cells:
            inside = [] if cell is None else [w for w in words if _inside(_center(w[:4]), cell, 0)]
            cells.append(" ".join(w[4] for w in sorted(inside, key=lambda w: (w[5], w[6], w[7]))))
            used += len(inside)
        rows.append(cells)
    return rows, used


def _rules(page: Any, drawings: list | None = None) -> list[tuple[float, float, float, float]]:
    """Long horizontal lines (and thin filled bars) of the page's vector graphics (`drawings`:
    its `get_cdrawings()`, read here when not given)."""
    min_width = page.cropbox.width * RULE_MIN_WIDTH
    rules = []
    for path in page.get_cdrawings() if drawings is None else drawings:
        for item in path.get("items", ()):
            if item[0] == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                if abs(y1 - y0) < 1 and abs(x1 - x0) >= min_width:
                    rules.append((min(x0, x1), y0, max(x0, x1), y1))
            elif item[0] == "re":
                x0, y0, x1, y1 = item[1]
                if abs(x1 - x0) >= min_width:
                    rules.append((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
    return rules


def table_markdown(rows: list[list[Any]]) -> str:
    """A table's cells as a Markdown table (first row: the header); "" if it has fewer than two
    rows or two columns (a rule under a heading, an annotation's box: not a table)."""
    cells = [[" ".join(str(c or "").split()).replace("|", "\\|") for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if len(cells) < 2 or max(len(r) for r in cells) < 2:  # a header and one row, two columns at least
        return ""
    width = max(len(r) for r in cells)
    cells = [r + [""] * (width - len(r)) for r in cells]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + " --- |" * width]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells[1:]])


def _figures(page: Any, text_boxes: list, page_area: float) -> list[RegionRecord]:
    boxes = []
    for info in page.get_image_info():
        x0, y0, x1, y1 = info["bbox"]
        if (x1 - x0) * (y1 - y0) < MIN_FIGURE_AREA * page_area:
            continue
        if any(_inside(_center(t), info["bbox"]) for t in text_boxes):
            continue  # text over it: a scan with its OCR layer, or a background
        boxes.append(_box(info["bbox"]))
    return [RegionRecord(kind="figure", bbox=b, order=0, content="", source=SOURCE) for b in _merge(boxes)]


def _merge(boxes: list[tuple]) -> list[tuple]:
    """Overlapping boxes as one (an image cut in tiles is one figure)."""
    out: list[tuple] = []
    for b in boxes:
        for k, o in enumerate(out):
            if b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3]:
                out[k] = (min(b[0], o[0]), min(b[1], o[1]), max(b[2], o[2]), max(b[3], o[3]))
                break
        else:
            out.append(b)
    return out


def area(bbox) -> float:
    """A box's area (x0, y0, x1, y1), 0 for an empty or inverted one."""
    return max(bbox[2] - bbox[0], 0.0) * max(bbox[3] - bbox[1], 0.0)


def union(boxes: list) -> tuple[float, float, float, float]:
    """The smallest box holding every box of `boxes` (one at least)."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _center(bbox) -> tuple[float, float]:
    return (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2


def _inside(point, bbox, slack: float = 1.0) -> bool:
    return (bbox[0] - slack <= point[0] <= bbox[2] + slack) and (bbox[1] - slack <= point[1] <= bbox[3] + slack)


def _box(bbox) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in bbox)
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


# ---- the OCR branch's expand --------------------------------------------------------------------
def scan_regions(pages: list) -> list[list[RegionRecord]]:
    """Expand: a checked page routed to OCR is one full-page region without content (`whole_page`:
    OCR's layout cuts it into regions), for the OCR branch to render and read; a text-layer page has one region per block of garbage text in it
    (`ocr_boxes`, usually none) and one per image over most of it without text (`figure_boxes`);
    an empty page has none.
    A light stage of its own, so a scanned page goes on to OCR as soon as it is checked, without
    waiting for the text-layer pages of its batch to be cut into regions."""
    return [[RegionRecord(kind="text", bbox=(0.0, 0.0, p.width_pt, p.height_pt), order=0, whole_page=True)]
            if route_of(p) == "ocr" else _garbage_regions(p) for p in pages]


def _garbage_regions(page) -> list[RegionRecord]:
    """A text-layer page's blocks of garbage text (`PageRecord.ocr_boxes`) as regions for OCR, then
    its images over most of the page with no text on them (`PageRecord.figure_boxes`) as figures
    for OCR (`ocr.read_regions` decides whether their text reads as the page's)."""
    if route_of(page) != "text_layer":
        return []
    garbage = [RegionRecord(kind="text", bbox=_box(b), order=k) for k, b in enumerate(page.ocr_boxes)]
    return garbage + [RegionRecord(kind="figure", bbox=_box(b), order=len(garbage) + k, label="figure")
                      for k, b in enumerate(page.figure_boxes)]
