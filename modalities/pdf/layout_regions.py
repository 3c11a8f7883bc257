"""A text-layer page's regions from a layout model's boxes and the PDF's own text spans.

PyMuPDF's layout model (`pymupdf.layout`, a graph network over the page's text boxes and a
small image model) labels boxes of the page: page-header, page-footer, title, section-header,
text, list-item, table, picture, caption, formula, footnote. Each box becomes one region of
that class (`LAYOUT_KINDS`); its text is the spans whose centre lies in it, lines joined into
one paragraph (`words.join_lines`). Then:

- headers and footers are paratext (kept as regions with their class, dropped from the
  Markdown) when they sit in the top or bottom `EDGE_ZONE` of the page, or run vertically in a
  side margin (an arXiv stamp); a box the model calls a header elsewhere is text. A lone page
  number in a margin is a `page_number`. This is the convention of every page kind, scans too
  (`scan_layout`), and the eval's (olmOCR-Bench's): running heads, footers of any number of
  lines (a copyright line, a letterhead's registered office), page numbers and margin stamps
  are absent; what the model calls text at the page's foot (a letter's sign-off) stays, and so
  does a "header" that ends a sentence begun on the previous page (`continues_sentence`: the
  model calls the short end of a carried-over paragraph at a page's top a page-header);
- a table's content comes from its cells (`tables.table_content`); a picture is a `figure`
  placeholder, and the text drawn inside it (axis labels, a diagram's words) is not body text;
- a text box set in a monospaced font is `code` (fenced, line by line) only when its lines, or
  its page's monospaced lines, look like code (`code_blocks.is_code`); prose in Courier is text;
- spans outside every box (the model missed them) keep the PDF's own blocks, classified by the
  rules of `regions` (nothing is lost);
- the regions are put in reading order by recursive XY-cut (`order.xy_cut`), body first, then
  the paratext.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import replace
from typing import Any

from curate.modalities.pdf import regions as rules
from curate.modalities.pdf.code_blocks import indented, is_code
from curate.modalities.pdf.order import group_lines, xy_cut
from curate.modalities.pdf.formulas import SOURCE as FORMULA_SOURCE
from curate.modalities.pdf.formulas import block_latex, is_display, line_has_math, page_blocks
from curate.modalities.pdf.records import PARATEXT, RegionRecord
from curate.modalities.pdf.tables import table_content
from curate.modalities.pdf.words import join_lines

SOURCE = "layout"
LAYOUT_KINDS = {"page-header": "header", "page-footer": "footer", "title": "title", "section-header": "title",
                "text": "text", "list-item": "list", "table": "table", "picture": "figure", "caption": "caption",
                "formula": "formula", "footnote": "footnote"}
EDGE_ZONE = 0.12  # top and bottom share of the page where a header or footer may sit
SIDE_ZONE = 0.12  # left and right share of the page where a vertical stamp is a margin note
TITLE_KEEP_RATIO = 0.9  # a `title` box under this share of the page's largest title's size is text
FIGURE_MAX_TEXT = 0.5  # a picture whose text lines cover this share of its box is text (labels cover little)
SECTION_LEVEL_RATIO = 1.3  # a section header this much above the body size is level 2, else 3
SENTENCE_END = (".", "!", "?", "\u2026")  # how a paragraph carried over from the previous page ends
CLOSERS = " \"')]\u201d\u2019\u00bb"  # quotes and brackets that may follow a sentence's end


def layout_regions(page: Any, mod: Any, boxes: list, skip: tuple = (), blocks: list | None = None,
                   drawings: list | None = None) -> list[RegionRecord]:
    """The regions of a pymupdf.Page from `boxes` ([x0, y0, x1, y1, class] of the layout model),
    in reading order; lines inside a box of `skip` (garbage text OCR reads) are left out.
    `blocks` (its "dict" extraction with `text_flags`) and `drawings` (`get_cdrawings()`): when
    the caller has read them already."""
    if blocks is None:
        blocks = page_blocks(page, rules.text_flags(mod))
    if drawings is None:
        drawings = page.get_cdrawings()
    view = View(page, drawings)
    if any(b[4] == "picture" for b in boxes):
        view.graphics_of(page)
    boxes = _trim_tables([(rules._box(b[:4]), b[4]) for b in boxes if b[4] in LAYOUT_KINDS])
    lines = [ln for ln in _lines(blocks) if not any(rules._inside(rules._center(ln["bbox"]), b) for b in skip)]
    for ln in lines:
        ln["vertical"] = ln["vertical"] != view.turned  # as the page is shown: /Rotate 90 turns vertical lines level
    view.vertical = sum(ln["vertical"] for ln in lines) > len(lines) / 2  # tategaki: columns right to left
    view.listing = rules.mono_code_share(lines)  # how code-like its monospaced lines are (code_blocks)
    owner = [_owner(line["bbox"], boxes) for line in lines]
    body = rules._body_size(lines)
    found: list[RegionRecord] = []
    boxes = _demote_titles(boxes, lines, owner)
    view.edges = _edges([(view.shown(b), label) for b, label in boxes])
    for k, (bbox, label) in enumerate(boxes):
        mine = [ln for ln, o in zip(lines, owner) if o == k]
        region = _region(page, mod, bbox, label, mine, body, view)
        if region is not None:  # the model's class stays with it: a table whose cells failed is text, labelled table
            found.append(replace(region, label=label))
    found += _leftovers([ln for ln, o in zip(lines, owner) if o is None], body, view)
    return _in_order(found, view)


class View:
    """The page as it is shown (its /Rotate applied): where margins are and which way is up.
    Boxes stay in unrotated points (records.py); `shown` maps one into the shown page."""

    def __init__(self, page: Any, drawings: list):
        self.matrix, self.turned = page.rotation_matrix, page.rotation in (90, 270)
        self.drawings = drawings  # the page's get_cdrawings(): figures and tables read them
        self.width, self.height = page.rect.width, page.rect.height
        self.vertical, self.edges, self.graphics, self.listing = False, (0.0, 0.0), [], 0.0
        self._rect = type(page.rect)

    def graphics_of(self, page: Any) -> None:
        """The boxes of the page's images and vector paths (what a figure is made of)."""
        self.graphics = [tuple(i["bbox"]) for i in page.get_image_info()]
        self.graphics += [tuple(d["rect"]) for d in self.drawings if "rect" in d]

    def shown(self, bbox) -> tuple[float, float, float, float]:
        return rules._box(self._rect(bbox) * self.matrix)


def _lines(blocks: list) -> list[dict]:
    """The page's text lines (of its "dict" blocks): bbox, text, median size, bold, vertical."""
    out = []
    for block in blocks:
        if block.get("type") != 0:
            continue
        for line in block.get("lines", ()):
            one = rules._block_text({"bbox": line["bbox"], "lines": [line], "rules": block.get("rules", ())})
            if one["text"]:
                one["block"] = tuple(block["bbox"])
                one["raw"], one["rules"] = line, block.get("rules", ())  # its glyphs, for formulas
                one["max"] = max(round(sp["size"], 1) for sp in line["spans"] if sp.get("text", "").strip())
                out.append(one)
    return out


def _owner(bbox, boxes: list) -> int | None:
    """The box holding a line: the one containing its centre (the smallest, if nested)."""
    c = rules._center(bbox)
    inside = [k for k, (b, _) in enumerate(boxes) if rules._inside(c, b)]
    return min(inside, key=lambda k: rules.area(boxes[k][0])) if inside else None


def _region(page, mod, bbox, label, lines, body, view: View) -> RegionRecord | None:
    kind = LAYOUT_KINDS[label]
    if kind == "figure":
        covered = sum(rules.area(ln["bbox"]) for ln in lines) / max(rules.area(bbox), 1e-6)
        if covered < FIGURE_MAX_TEXT and any(_overlaps(bbox, g) for g in view.graphics):
            return RegionRecord(kind="figure", bbox=bbox, order=0, content="", source=SOURCE)
        kind = "text"  # a "picture" with no image or drawing in it, or filled with lines, is text
    if kind == "table":
        content = table_content(page, mod, bbox, view.drawings)
        if content and table_fill(content) >= rules.TABLE_MIN_FILL:
            return RegionRecord(kind="table", bbox=bbox, order=0, content=content, source=SOURCE)
        kind = "text"  # cells that do not confirm it (a form's grid, mostly empty): keep its text
    if not lines:
        return None
    formula = _formula(kind, bbox, lines)
    if formula is not None:
        return formula
    if view.vertical:  # columns of vertical writing: MuPDF's own line order
        rows = [[i] for i in range(len(lines))]
    else:  # rows of the page as shown; a superscript or a split span joins its row
        rows = group_lines([view.shown(ln["bbox"]) for ln in lines])
    texts = [" ".join(lines[i]["text"] for i in row) for row in rows]
    text = join_lines(texts)
    sizes = statistics.median(ln["size"] for ln in lines)
    bold = all(ln["bold"] for ln in lines)
    vertical = sum(ln["vertical"] for ln in lines) > len(lines) / 2
    kind = _paratext(kind, view.shown(bbox), text, vertical and not view.vertical, view)
    level = 0
    content = text
    if kind == "title":
        level = 1 if label == "title" else (2 if body and sizes >= body * SECTION_LEVEL_RATIO else 3)
    elif kind == "list":
        content = "\n".join(rules._list_items(texts))
    elif kind == "text" and all(ln["mono"] for ln in lines) and not vertical and is_code(texts, view.listing):
        starts = [lines[row[0]]["starts"][0] for row in rows] if not view.turned else []
        kind, content = "code", "\n".join(indented(texts, starts, statistics.median(ln["step"] for ln in lines)))
    return RegionRecord(kind=kind, bbox=bbox, order=0, content=content, source=SOURCE, level=level,
                        size=float(sizes), bold=bold)


def _formula(kind: str, bbox, lines: list[dict]) -> RegionRecord | None:
    """A formula box (or a text or title box that is a display formula) with glyphs of a math font, as
    LaTeX (`formulas.block_latex`); None for other boxes, and for a formula without math fonts
    (its text is then kept as the model read it)."""
    raw = [ln["raw"] for ln in lines if "raw" in ln]
    if kind not in ("formula", "text", "title") or not raw or not any(line_has_math(r) for r in raw):
        return None
    if kind != "formula" and not is_display(raw):  # a "title" of math glyphs: a display the model misread
        return None
    tex = block_latex(raw, sorted({r for ln in lines for r in ln.get("rules", ())}))
    if not tex:
        return None
    return RegionRecord(kind="formula", bbox=bbox, order=0, content=tex, source=FORMULA_SOURCE,
                        size=float(statistics.median(ln["size"] for ln in lines)))


def _trim_tables(boxes: list) -> list:
    """Table boxes cut back to the edge of a caption box that overlaps their top or bottom (the
    model's table box can take in a line of its caption, which would become a row)."""
    captions = [b for b, label in boxes if label == "caption"]
    out = []
    for b, label in boxes:
        if label == "table":
            x0, y0, x1, y1 = b
            for c in captions:
                if _overlaps((x0, y0, x1, y1), c):
                    if (c[1] + c[3]) / 2 > (y0 + y1) / 2:
                        y1 = min(y1, c[1])
                    else:
                        y0 = max(y0, c[3])
            b = (x0, y0, x1, max(y1, y0))
        out.append((b, label))
    return out


def _demote_titles(boxes: list, lines: list[dict], owner: list) -> list:
    """Boxes labelled `title` whose text is clearly smaller than the page's largest title (an
    author line under the paper's title) become text."""
    sizes = {}
    for ln, o in zip(lines, owner):
        if o is not None and boxes[o][1] == "title":
            sizes.setdefault(o, []).append(ln["max"])
    if not sizes:
        return boxes
    size = {k: max(v) for k, v in sizes.items()}  # the largest glyphs: a title in small caps mixes sizes
    top = max(size.values())
    return [(b, "text" if label == "title" and size.get(k, top) < top * TITLE_KEEP_RATIO else label)
            for k, (b, label) in enumerate(boxes)]


def _edges(boxes: list) -> tuple[float, float]:
    """(top, bottom) of the page's body: the highest and lowest edge of its other boxes."""
    body = [b for b, label in boxes if label not in ("page-header", "page-footer")]
    return (min(b[1] for b in body), max(b[3] for b in body)) if body else (0.0, 0.0)


def _paratext(kind: str, bbox, text: str, turned: bool, view: View) -> str:
    """Headers, footers, page numbers and margin stamps by class and position, on the page as
    shown (`paratext_kind`)."""
    return paratext_kind(kind, bbox, text, turned, (view.width, view.height), view.edges)


def paratext_kind(kind: str, bbox, text: str, turned: bool, size: tuple[float, float],
                  edges: tuple[float, float]) -> str:
    """The kind of a region by its class and position (see the docstring), in any upright frame
    of `size` (width, height: points of the page as shown, or pixels of an upright scan), whose
    body spans `edges` (top, bottom): a header is in the top `EDGE_ZONE` or above all of the
    body, a footer likewise at the bottom, elsewhere they are text (and so is a header that
    ends a sentence begun on the previous page: `continues_sentence`); a lone page number in either
    zone is a `page_number`; `turned` text (across the page's own direction) in a side margin
    is a margin note (`aside`)."""
    (width, height) = size
    top = bbox[3] <= max(height * EDGE_ZONE, edges[0] + 1)
    bottom = bbox[1] >= min(height * (1 - EDGE_ZONE), edges[1] - 1)
    side = bbox[2] <= width * SIDE_ZONE or bbox[0] >= width * (1 - SIDE_ZONE)
    if turned and side:
        return "aside"
    if (top or bottom) and rules.PAGE_NUMBER.match(text):
        return "page_number"
    if kind == "header":
        return "header" if top and not continues_sentence(text) else "text"
    if kind == "footer":
        return "footer" if bottom else "text"
    return kind


def continues_sentence(text: str) -> bool:
    """Whether a text is the end of a sentence begun before it (the last words of a paragraph
    carried over from the previous page): its first letter is small, it ends a sentence, and it
    has two words at least. A running head is a title ("THE SIEGE OF VICKSBURG.", "Row and
    Column Access ..."), a reference ("Journal of ... 41-49", "arXiv:2203.00274v2") or an address."""
    first = next((c for c in text if c.isalpha()), "")
    return first.islower() and len(text.split()) >= 2 and text.rstrip(CLOSERS).endswith(SENTENCE_END)


def _leftovers(lines: list[dict], body: float, view: View) -> list[RegionRecord]:
    """Lines no layout box holds, grouped by their PDF block and classified by `regions`' rules."""
    by_block: dict[tuple, list[dict]] = {}
    for ln in lines:
        by_block.setdefault(ln["block"], []).append(ln)
    out = []
    for block, group in by_block.items():
        texts = [ln["text"] for ln in group]
        t = {"bbox": rules.union([ln["bbox"] for ln in group]), "lines": texts, "text": join_lines(texts),
             "size": statistics.median(ln["size"] for ln in group), "bold": all(ln["bold"] for ln in group),
             "mono": all(ln["mono"] for ln in group),
             "vertical": sum(ln["vertical"] for ln in group) > len(group) / 2,
             "boxes": [] if view.turned else [ln["bbox"] for ln in group],
             "starts": [] if view.turned else [ln["starts"][0] for ln in group],
             "step": statistics.median(ln["step"] for ln in group)}
        r = rules._classify(dict(t, bbox=view.shown(t["bbox"])), body, view.height, view.vertical, view.listing)
        out.append(RegionRecord(kind=r.kind, bbox=t["bbox"], order=0, content=r.content, source=rules.SOURCE,
                                level=r.level, size=float(t["size"]), bold=t["bold"]))
    return out


def _in_order(found: list[RegionRecord], view: View) -> list[RegionRecord]:
    """Body regions by XY-cut on the page as shown, then paratext (headers, footers, margin
    notes) likewise."""
    body = [r for r in found if r.kind not in PARATEXT]
    para = [r for r in found if r.kind in PARATEXT]
    order = [[group[i] for i in xy_cut([view.shown(r.bbox) for r in group], right_to_left=view.vertical)]
             for group in (body, para)]
    return [replace(r, order=k) for k, r in enumerate(order[0] + order[1])]


def table_fill(content: str) -> float:
    """The share of a table's cells (Markdown or HTML) that hold text."""
    if content.lstrip().startswith("<"):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", content, re.DOTALL)
    else:
        rows = [ln for ln in content.splitlines() if ln.startswith("|") and not set(ln) <= set("|- ")]
        cells = [c for ln in rows for c in re.split(r"(?<!\\)\|", ln.strip()[1:-1])]
    return sum(1 for c in cells if c.strip()) / max(len(cells), 1)


def _overlaps(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
