"""Layout only where it pays: a per-page test of whether PyMuPDF's layout model would change a
text-layer page's Markdown, from what the layout pool reads of the page anyway (its text
lines' geometry and fonts, its vector paths, its images). Pure functions over plain data, no
PyMuPDF: `facts` sums a page up, `decide` says whether to skip the model and why.

The model pays on a page that holds something the rules of `regions` read differently (the
measurement: docs/benchmarks.md, "Layout only where it pays"): columns (reading order), a table
without rules or with graphics, a figure (its text is no body text), a formula (math fonts,
scripts), a running head or footer (the model drops it from the page), captions, code and a
page turned by /Rotate. A page with none of these, one column of text under at most its
headings, reads the same both ways, and the rules take a few ms where the model takes 0.1-0.3 s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from curate.modalities.pdf.regions import BULLETS, CAPTION, MARGIN, MONO, PAGE_NUMBER, TITLE_RATIO

MIN_IMAGE_AREA = 0.01  # of the page: a smaller image is an icon or a bullet (regions.MIN_FIGURE_AREA)
MAX_PATHS = 2  # vector paths a skipped page may have: a rule under a heading, a frame (more: a table, a figure)
EDGE_ZONE = 0.12  # top and bottom share of the page where the model finds headers and footers (layout_regions)
COLUMN_GAP = 0.3, 0.7  # share of the page's width where the gap between two columns is looked for
COLUMN_STEP = 2.0  # points between the x positions tried for the gap
MAX_CROSSING = 0.1  # share of the lines that may cross the gap between columns (titles, a wide table)
MIN_COLUMN_LINES = 3  # lines each side of a gap that make two columns (a gap beside one line is a short line)
ROW_BAND = 3.0  # points: lines whose middles fall in one band of this height are one row
APART_GAP = 1.2  # a gap of this many line heights under the top row (over the bottom one) sets it apart
CELL_GAP = 2.0  # a gap of this many font sizes between two pieces of one row splits it into cells
MIN_GRID_ROWS = 2  # rows of two cells or more that make a table aligned by whitespace
SCRIPT_RISE = 0.2  # a span this share of its line's height above or below its baseline is a script
MAX_SCRIPTS = 2  # scripts a skipped page may have (a footnote mark, a trademark); more: formulas
MATH_FONT = re.compile(r"cmmi|cmsy|cmex|cmbsy|msam|msbm|math|symbol|stix|euler|eufm|rsfs|xits|asana|mt extra", re.I)
MATH_CHARS = re.compile("[\u2200-\u22ff\u2a00-\u2aff\u27c0-\u27ef\u2980-\u29ff\U0001d400-\U0001d7ff"
                        "\u0391-\u03a9\u03b1-\u03c9\u00b1\u00d7\u00f7\u221a\u2211\u222b]")
MAX_MATH_CHARS = 3  # math symbols (Greek, operators) a skipped page may have in its text
BULLET_SET = set(BULLETS)  # a bullet in a Symbol font is no formula
TURNED = 0.5  # share of a line's direction off the horizontal that makes it vertical


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What the skip test needs of one page, as counts (see `facts`)."""

    lines: int = 0
    images: int = 0  # images of at least MIN_IMAGE_AREA of the page
    paths: int = 0  # vector paths (PyMuPDF's get_cdrawings)
    rotation: int = 0
    vertical: int = 0  # lines not written left to right (a margin stamp, vertical writing)
    columns: bool = False  # two columns side by side
    grid_rows: int = 0  # rows cut into cells by wide gaps (a table without rules)
    edge_lines: int = 0  # lines in the top or bottom EDGE_ZONE (not a heading, not a page number in the margin)
    apart_lines: int = 0  # the top or bottom row of lines when a gap sets it apart (a running head, a footer)
    scripts: int = 0  # spans raised or lowered off their line (super- and subscripts)
    math_fonts: int = 0  # spans in a math font (CMMI, CMSY, a "Math" font): a formula, inline or display
    math_chars: int = 0  # math symbols (Greek letters, operators) in the text
    mono: int = 0  # lines in a monospaced font (code)
    captions: int = 0  # lines that open like a caption ("Figure 3", "Table 2")


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether the layout pool skips the model on a page, and why (for the page's reason)."""

    skip: bool
    why: str


def facts(blocks: list, paths: int, images: list, width: float, height: float, rotation: int = 0) -> PageFacts:
    """A page's facts from its "dict" text blocks (`blocks`), its count of vector `paths`, the
    bboxes of its `images` and its size in points (unrotated, as the blocks are)."""
    lines = []
    scripts = math_fonts = math_chars = mono = captions = vertical = 0
    for block in blocks:
        if block.get("type", 0) != 0:
            continue
        for line in block.get("lines", ()):
            spans = [s for s in line.get("spans", ()) if s.get("text", "").strip()]
            if not spans:
                continue
            text = "".join(s["text"] for s in spans).strip()
            d = line.get("dir", (1, 0))
            if line.get("wmode", 0) == 1 or abs(d[0]) < TURNED:
                vertical += 1
            lines.append((tuple(line["bbox"]), spans, text))
            size = max(s["size"] for s in spans)
            base = max(s.get("origin", (0, 0))[1] for s in spans if s["size"] == size)
            for s in spans:
                if abs(s.get("origin", (0, base))[1] - base) > SCRIPT_RISE * size and s["size"] < size:
                    scripts += 1
                math_fonts += bool(MATH_FONT.search(s.get("font", ""))) and not set(s["text"].strip()) <= BULLET_SET
            math_chars += len(MATH_CHARS.findall(text))
            mono += all(s["flags"] & MONO or "mono" in s.get("font", "").lower() or "courier" in
                        s.get("font", "").lower() for s in spans)
            captions += bool(CAPTION.match(text))
    body = _body_size(lines)
    area = width * height
    big = sum(1 for b in images if (b[2] - b[0]) * (b[3] - b[1]) >= MIN_IMAGE_AREA * area)
    edge = sum(1 for bbox, spans, text in lines
               if (bbox[3] <= height * EDGE_ZONE or bbox[1] >= height * (1 - EDGE_ZONE)) and not _heading(spans, body)
               and not _margin_number(bbox, text, height))
    return PageFacts(lines=len(lines), images=big, paths=paths, rotation=rotation, vertical=vertical,
                     columns=_two_columns([b for b, _, _ in lines], width), grid_rows=_grid_rows(lines),
                     edge_lines=edge, scripts=scripts, math_fonts=math_fonts, math_chars=math_chars,
                     apart_lines=_apart(lines, height, body), mono=mono, captions=captions)


def decide(f: PageFacts) -> Decision:
    """Skip the model on a page with nothing it would read differently; else run it, saying
    what it is there for (the first reason found)."""
    why = ("an image" if f.images else
           f"{f.paths} vector paths (a table or a figure)" if f.paths > MAX_PATHS else
           "turned by /Rotate" if f.rotation else
           "vertical text" if f.vertical else
           "two columns" if f.columns else
           f"{f.grid_rows} rows of cells (a table without rules)" if f.grid_rows >= MIN_GRID_ROWS else
           f"{f.math_fonts} spans in a math font (formulas)" if f.math_fonts else
           f"{f.math_chars} math symbols (formulas)" if f.math_chars > MAX_MATH_CHARS else
           f"{f.scripts} super- or subscripts (formulas)" if f.scripts > MAX_SCRIPTS else
           "a running head or footer" if f.edge_lines or f.apart_lines else
           "a caption" if f.captions else
           "monospaced lines (code)" if f.mono else "")
    if why:
        return Decision(False, why)
    return Decision(True, "single column, no tables, figures, formulas or running heads")


def image_features(f: PageFacts) -> bool:
    """Whether the model needs its image features on a page (features: auto): one with an image
    (a cover, a scan under its OCR layer: rf misses running heads and titles there) or with
    formulas (rf's formula boxes take in lines of the text around them); on other pages its
    boxes-only features (rf) read as well (docs/benchmarks.md, "Layout only where it pays")."""
    return bool(f.images or f.math_fonts or f.math_chars > MAX_MATH_CHARS)


def _two_columns(boxes: list, width: float) -> bool:
    """Lines on both sides of a vertical strip in the middle of the page that (almost) no line
    crosses (a title across both columns may), beside each other, not one above the other:
    two columns."""
    lo, hi = width * COLUMN_GAP[0], width * COLUMN_GAP[1]
    if not boxes or hi <= lo:
        return False
    steps = int((hi - lo) // COLUMN_STEP) + 1
    delta = [0] * (steps + 1)  # lines crossing each x = lo + k * COLUMN_STEP, by a difference array
    for b in boxes:
        first, last = max(0, int((b[0] - lo) // COLUMN_STEP) + 1), min(steps - 1, int((b[2] - lo) // COLUMN_STEP))
        if first <= last:
            delta[first] += 1
            delta[last + 1] -= 1
    best, n = None, 0
    for k in range(steps):
        n += delta[k]
        if best is None or n < best[0]:
            best = (n, lo + k * COLUMN_STEP)
    crossed, gap = best
    left = [b for b in boxes if b[2] <= gap]
    right = [b for b in boxes if b[0] >= gap]
    if crossed > max(1, len(boxes) * MAX_CROSSING) or min(len(left), len(right)) < MIN_COLUMN_LINES:
        return False
    return min(b[1] for b in right) < max(b[3] for b in left) and min(b[1] for b in left) < max(b[3] for b in right)


def _apart(lines: list, height: float, body: float) -> int:
    """Lines of the page's top and bottom rows that a gap of APART_GAP times their height sets
    apart from the rest: where the model finds running heads, footers and page numbers (above
    or below all of the body, wherever the page puts them: layout_regions.paratext_kind) and
    drops them, while the rules keep them. A heading (title-sized) and a page number in the
    rules' own margin are no such row."""
    out = 0
    for top in (True, False):
        first = min(lines, key=lambda ln: ln[0][1]) if top else max(lines, key=lambda ln: ln[0][3])
        mid, half = (first[0][1] + first[0][3]) / 2, (first[0][3] - first[0][1]) / 2
        row = [ln for ln in lines if abs((ln[0][1] + ln[0][3]) / 2 - mid) <= half]
        rest = [ln for ln in lines if abs((ln[0][1] + ln[0][3]) / 2 - mid) > half]
        if not rest:
            continue
        gap = (min(ln[0][1] for ln in rest) - max(ln[0][3] for ln in row) if top
               else min(ln[0][1] for ln in row) - max(ln[0][3] for ln in rest))
        if gap < APART_GAP * max(ln[0][3] - ln[0][1] for ln in row):
            continue
        box = (min(ln[0][0] for ln in row), min(ln[0][1] for ln in row), max(ln[0][2] for ln in row),
               max(ln[0][3] for ln in row))
        if any(_heading(ln[1], body) for ln in row) or _margin_number(box, " ".join(ln[2] for ln in row), height):
            continue
        out += len(row)
    return out


def _heading(spans: list, body: float) -> bool:
    """A line set larger than the body by the rules' title ratio: a heading, not a running head."""
    return max(s["size"] for s in spans) >= body * TITLE_RATIO


def _margin_number(bbox, text: str, height: float) -> bool:
    """A lone page number in the rules' top or bottom margin (`regions.MARGIN`): paratext to them too."""
    return bool(PAGE_NUMBER.match(text.strip())) and (bbox[3] <= height * MARGIN or bbox[1] >= height * (1 - MARGIN))


def _body_size(lines: list) -> float:
    """The font size most of the page's characters have."""
    weights: dict[float, int] = {}
    for _, spans, _ in lines:
        for s in spans:
            size = round(s["size"], 1)
            weights[size] = weights.get(size, 0) + len(s["text"].strip())
    return max(weights, key=weights.get) if weights else 0.0


def _grid_rows(lines: list) -> int:
    """Rows of the page (lines sharing a baseline band) cut into two or more pieces by gaps of
    CELL_GAP font sizes: the rows of a table aligned by whitespace."""
    rows: dict[int, list] = {}
    for bbox, spans, _ in lines:
        key = round((bbox[1] + bbox[3]) / 2 / ROW_BAND)
        for s in spans:
            rows.setdefault(key, []).append((s["bbox"][0], s["bbox"][2], s["size"]))
    count = 0
    for pieces in rows.values():
        pieces.sort()
        gaps = sum(1 for a, b in zip(pieces, pieces[1:]) if b[0] - a[1] > CELL_GAP * max(a[2], b[2]))
        count += gaps >= 1
    return count
