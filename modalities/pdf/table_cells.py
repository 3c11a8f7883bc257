"""A table's cells from the positions of its words and rules, whatever they were read from (a
page's text layer in `tables.table_content`, OCR boxes in `tables.table_from_boxes`): no
PyMuPDF here, only boxes, texts and rules.

- Words are grouped into text lines by their vertical centers, and a line's words into phrases
  (cell texts) where the gap between two words is under `GAP_RATIO` of the line's height and no
  vertical rule runs between them.
- Columns are the x-intervals the phrases cover. A phrase that covers a gap between two phrases
  of another line ("Before Perturb" over "test" and "test-simple"), or a short one centered over
  such a gap, does not make a column: it spans the columns it is centered on (`colspan`), and a
  phrase right above a partial rule (booktabs' `cmidrule`) spans the columns under the rule.
- Horizontal rules across the table cut its lines into bands. Without any, each line is a row.
  Between rules, a band of several lines is one row of multi-line cells (a ruled table's wrapped
  text) unless a column holds numbers on two of its lines, or two columns hold phrases too short
  to be wrapped text: then each line is a row (pairs of rows between rules). A line that only
  continues some of the row's columns, not the first, is its wrapped text; a line between two
  rows, in columns both leave empty, is a cell that spans both (`rowspan`).
- The first band of a table with rules is its header: one row, or two when a line of it holds a
  spanning cell with sub-headers below it (the other header cells then span both rows).
- A box whose cells hold prose (long cells, rows of one cell, a sparse grid, many cells
  spanning columns) is not a table.

A table whose cells are all single is Markdown (`regions.table_markdown`), else HTML.
"""

from __future__ import annotations

import html
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from curate.modalities.pdf.regions import table_markdown

GAP_RATIO = 0.6  # a gap this share of the line's height parts two cells (a space is about 0.25)
BULLET_GAP = 2.0  # ...but a bullet belongs to the item that follows it up to this far
BULLETS = "•◦▪▫‣⁃∙●○■□➢►*·\ufffd\uf0b7\uf0a7\uf0d8"  # no dashes: "–" is a table's empty value
LINE_CENTER = 0.35  # words whose centers are this many word heights apart are on one line (a cell
# centered between two rows is about half a height off both)
SIDE_RULE = 0.25  # rules this share of the box's width, on both sides of a gap no rule crosses: two tables
FULL_RULE = 0.6  # a horizontal rule at least this share of the table's width separates bands
SPAN_CENTER = 0.5  # a spanning header's center is this many line heights from its columns' center
WRAP_FILL = 0.8  # a wrapped line fills at least this share of its column (a short one is a row of its own)
MAX_CELL_WORDS = 10.0  # mean words per filled cell above which the box holds prose, not a table
SINGLE_ROWS = 0.5  # share of rows with one cell above which the box holds prose
MAX_SPANNING = 0.2  # share of cells spanning columns above which no grid holds the text (tables: a few headers)
MIN_FILL = 0.3  # share of the grid's cells that must hold text (else: labels on a figure)
NUMBER = re.compile(r"^[-–—+±~<>≤≥$€£¥%()\[\].,:/*\d\s]*\d[-–—+±%()\[\].,:/*\d\sA-Za-z]{0,3}$|^[-–—]$")
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef]")


@dataclass
class _Phrase:
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    cols: tuple[int, int] = (0, 0)  # first and last column it covers


@dataclass
class _Cell:
    text: str
    colspan: int = 1
    rowspan: int = 1


@dataclass
class _Row:
    cells: dict[int, _Cell] = field(default_factory=dict)  # first column -> cell


def cells_table(words: list[tuple], hrules: list[tuple], vrules: list[float], upright: list[tuple] = ()) -> str:
    """A table as Markdown or HTML ("" when it is not one) from its words (x0, y0, x1, y1, text;
    top-left origin), horizontal rules (x0, y, x1), the x of its vertical rules, and the lines of
    text that run up or down (x0, y0, x1, y1, text: each one phrase)."""
    if not words:
        return ""
    split = _gutter(words, hrules)
    if split is not None:  # two tables side by side in one box (one a column of a two-column page)
        halves = [([w for w in words if side(w[0] + w[2], 2 * split)], [r for r in hrules if side(r[0] + r[2], 2 * split)],
                   [x for x in vrules if side(x, split)], [u for u in upright if side(u[0] + u[2], 2 * split)])
                  for side in (float.__lt__, float.__gt__)]
        return "\n\n".join(t for t in (cells_table(*half) for half in halves) if t)
    lines = _lines(words, vrules) + [[_Phrase(*u[:5])] for u in upright]
    lines.sort(key=lambda ln: ln[0].y0 + ln[0].y1)
    phrases = [p for line in lines for p in line]
    width = max(p.x1 for p in phrases) - min(p.x0 for p in phrases)
    intervals = _columns(lines, vrules)
    ncols = len(intervals)
    cuts = sorted(y for x0, y, x1 in hrules if x1 - x0 >= FULL_RULE * width)
    _ruled_spans(lines, intervals, [r for r in hrules if r[2] - r[0] < FULL_RULE * width])
    bands = _bands(lines, cuts)
    rows: list[_Row] = []
    for k, band in enumerate(bands):
        if k == 0 and len(bands) > 1:
            rows += _header_rows(band)
        else:  # without rules across it, a table is a row a line
            rows += _band_rows(band, per_line=not cuts)
    return _render(rows, ncols)


def _gutter(words: list[tuple], hrules: list[tuple]) -> float | None:
    """The x between two tables set side by side: long rules on both sides, none across it, and
    no word across it either; None when the box holds one table."""
    x0, x1 = min(w[0] for w in words), max(w[2] for w in words)
    rules = sorted(r for r in hrules if r[2] - r[0] >= SIDE_RULE * (x1 - x0))
    reach = None
    for r in rules:
        if reach is not None and r[0] > reach:
            mid = float((reach + r[0]) / 2)
            if not any(w[0] < mid < w[2] for w in words):
                return mid
        reach = r[2] if reach is None else max(reach, r[2])
    return None


# ---- words -> lines of phrases ---------------------------------------------------------------
def _lines(words: list[tuple], vrules: list[float]) -> list[list[_Phrase]]:
    """Words grouped into text lines (top to bottom), each line's words into phrases (left to
    right)."""
    lines: list[list[tuple]] = []
    for w in sorted(words, key=lambda w: (w[1] + w[3]) / 2):
        for line in reversed(lines[-3:]):
            if abs(_center_y(line) - (w[1] + w[3]) / 2) <= LINE_CENTER * (w[3] - w[1]):
                line.append(w)
                break
        else:
            lines.append([w])
    return [_phrases(sorted(line, key=lambda w: w[0]), vrules) for line in lines]


def _center_y(line: list[tuple]) -> float:
    return sum(v[1] + v[3] for v in line) / (2 * len(line))


def _phrases(line: list[tuple], vrules: list[float]) -> list[_Phrase]:
    height = statistics.median(w[3] - w[1] for w in line)  # a footnote mark or subscript is smaller
    out: list[_Phrase] = []
    for w in line:
        gap = w[0] - out[-1].x1 if out else 0.0
        bullet = bool(out) and out[-1].text in BULLETS  # a list inside a cell: the bullet and its item
        if out and gap < (BULLET_GAP if bullet else GAP_RATIO) * height and not any(out[-1].x1 <= x <= w[0] for x in vrules):
            p = out[-1]
            out[-1] = _Phrase(p.x0, min(p.y0, w[1]), max(p.x1, w[2]), max(p.y1, w[3]), _join(p.text, w[4]))
        else:
            out.append(_Phrase(*w[:4], w[4]))
    return out


# ---- columns ---------------------------------------------------------------------------------
def _columns(lines: list[list[_Phrase]], vrules: list[float]) -> list[list[float]]:
    """Set each phrase's `cols`; returns the columns' x-intervals, left to right."""
    spanners = _spanners(lines)
    intervals: list[list[float]] = []
    for p in sorted((p for line in lines for p in line if id(p) not in spanners), key=lambda p: p.x0):
        if intervals and p.x0 < intervals[-1][1]:
            intervals[-1][1] = max(intervals[-1][1], p.x1)
        else:
            intervals.append([p.x0, p.x1])
    if not intervals:
        return []
    for line in lines:
        for p in line:
            center = (p.x0 + p.x1) / 2
            if id(p) not in spanners:  # its own column: the one holding its center
                k = min(range(len(intervals)), key=lambda k: _distance(center, intervals[k]))
                p.cols = (k, k)
            else:
                hit = [k for k, (a, b) in enumerate(intervals) if p.x0 < b and a < p.x1]
                hit = hit or [min(range(len(intervals)), key=lambda k: _distance(center, intervals[k]))]
                p.cols = (hit[0], hit[-1])
        for p in line:
            if id(p) in spanners:
                p.cols = _centered_span(p, line, intervals, vrules)
    return intervals


def _ruled_spans(lines: list[list[_Phrase]], intervals: list[list[float]], rules: list[tuple]) -> None:
    """A phrase right above a rule that covers two columns or more spans them (booktabs'
    `cmidrule` under a group header: "TEDs" over "simple complex all")."""
    for x0, y, x1 in rules:
        cols = [k for k, (a, b) in enumerate(intervals) if x0 - 1 <= (a + b) / 2 <= x1 + 1]
        above = [p for line in lines for p in line
                 if x0 <= (p.x0 + p.x1) / 2 <= x1 and p.y1 <= y + 1 and y - p.y1 <= p.y1 - p.y0]
        if len(cols) >= 2 and len(above) == 1:
            above[0].cols = (cols[0], cols[-1])


def _centered_span(p: _Phrase, line: list[_Phrase], intervals: list[list[float]], vrules: list[float]) -> tuple[int, int]:
    """The widest run of columns a spanning phrase is centered on (a header is centered over its
    columns, and often narrower than them), crossing no other phrase of its line nor a vertical
    rule the phrase does not cross itself."""
    taken = {c for q in line if q is not p for c in range(q.cols[0], q.cols[1] + 1)}

    def blocked(k: int) -> bool:  # a vertical rule between columns k and k + 1 the phrase does not cross
        return any(intervals[k][1] <= x <= intervals[k + 1][0] and not p.x0 < x < p.x1 for x in vrules)

    center, best = (p.x0 + p.x1) / 2, p.cols
    tolerance = SPAN_CENTER * (p.y1 - p.y0)
    for a in range(p.cols[0], -1, -1):
        if a < p.cols[0] and (a in taken or blocked(a)):
            break
        for b in range(p.cols[1], len(intervals)):
            if b > p.cols[1] and (b in taken or blocked(b - 1)):
                break
            if abs((intervals[a][0] + intervals[b][1]) / 2 - center) <= tolerance and b - a > best[1] - best[0]:
                best = (a, b)
    return best


def _spanners(lines: list[list[_Phrase]]) -> set[int]:
    """The ids of the phrases that span columns: a phrase that covers a gap between two phrases
    of another line ("Before Perturb" over "test" and "test-simple"), or one whose center no other
    phrase covers and that nearly fills a gap of another line (a short header centered over two
    columns: "Speed"). Gaps and phrases are counted by position: a regular table has few."""
    gaps: Counter = Counter()
    spans: Counter = Counter()
    for line in lines:
        gaps.update((round(a.x1, 1), round(b.x0, 1)) for a, b in zip(line, line[1:]))
        spans.update((round(p.x0, 1), round(p.x1, 1)) for p in line)
    out = set()
    for line in lines:
        for p in line:
            center, height = (p.x0 + p.x1) / 2, min(p.y1 - p.y0, p.x1 - p.x0)
            if any(p.x0 < g0 - 0.5 and g1 + 0.5 < p.x1 for g0, g1 in gaps):  # a line's own gaps touch it
                out.add(id(p))
            elif sum(n for (a, b), n in spans.items() if a <= center <= b) <= 1 and any(
                    g0 < center < g1 and p.x0 - g0 < height and g1 - p.x1 < height for g0, g1 in gaps):
                out.add(id(p))
    return out


def _distance(x: float, interval: list[float]) -> float:
    return 0.0 if interval[0] <= x <= interval[1] else min(abs(x - interval[0]), abs(x - interval[1]))


# ---- lines -> rows ---------------------------------------------------------------------------
def _bands(lines: list[list[_Phrase]], cuts: list[float]) -> list[list[list[_Phrase]]]:
    """Lines in groups between horizontal rules (empty groups dropped)."""
    bands: dict[int, list] = {}
    for line in lines:
        center = sum((p.y0 + p.y1) / 2 for p in line) / len(line)
        bands.setdefault(sum(c < center for c in cuts), []).append(line)
    return [bands[k] for k in sorted(bands)]


def _cols(line: list[_Phrase]) -> set[int]:
    return {c for p in line for c in range(p.cols[0], p.cols[1] + 1)}


def _merged(lines: list[list[_Phrase]]) -> _Row:
    """Lines as one row: each column's phrases top to bottom; a phrase joins the cell whose
    columns it shares (a spanning phrase keeps its span)."""
    row = _Row()
    for line in lines:
        for p in line:
            a, b = p.cols
            hit = [c for c, cell in row.cells.items() if c <= b and a <= c + cell.colspan - 1]
            texts = [row.cells[c].text for c in sorted(hit)]
            a, b = min([a, *hit]), max([b, *(c + row.cells[c].colspan - 1 for c in hit)])
            for c in hit:
                del row.cells[c]
            row.cells[a] = _Cell(_join(" ".join(texts), p.text), b - a + 1)
    return row


def _join(a: str, b: str) -> str:
    if not a:
        return b
    return a + ("" if CJK.match(a[-1]) and CJK.match(b[0]) else " ") + b


def _header_rows(band: list[list[_Phrase]]) -> list[_Row]:
    """The header band: one row, or two when a line holds a spanning cell with lines below it;
    then the header cells beside the spanning one take both rows (`rowspan`)."""
    split = next((k for k, line in enumerate(band[:-1]) if any(p.cols[1] > p.cols[0] for p in line)), None)
    if split is None:
        return [_merged(band)]
    top, below = _merged(band[: split + 1]), _merged(band[split + 1:])
    spanned = {c for c, cell in top.cells.items() if cell.colspan > 1 for c in range(c, c + cell.colspan)}
    for c in sorted(set(below.cells) - spanned):
        cell = below.cells.pop(c)
        top.cells[c] = _Cell(_join(top.cells[c].text, cell.text) if c in top.cells else cell.text, cell.colspan)
    for c, cell in top.cells.items():
        if c not in spanned:
            cell.rowspan = 2
    return [top, below] if below.cells else [top]


def _band_rows(band: list[list[_Phrase]], per_line: bool) -> list[_Row]:
    """A band's lines as rows: one row of multi-line cells, or one row a line (see the module)."""
    if len(band) == 1 or not (per_line or _rows_per_line(band)):
        return [_merged(band)]
    sets = [_cols(line) for line in band]
    mids: set[int] = set()  # a line between two rows, in columns both leave empty: a cell spanning them
    for k in range(1, len(band) - 1):
        if k - 1 not in mids and not sets[k] & (sets[k - 1] | sets[k + 1]):
            mids.add(k)
    rows: list[_Row] = []
    starts: dict[int, int] = {}  # line index -> the row it opened or joined
    for k, line in enumerate(band):
        if k in mids:
            continue
        last = rows[-1] if rows else None
        if last is not None and _continues(line, last):
            for p in line:
                cell = last.cells.setdefault(p.cols[0], _Cell(""))
                cell.text = _join(cell.text, p.text)
        else:
            rows.append(_merged([line]))
        starts[k] = len(rows) - 1
    for k in sorted(mids):
        above, below = starts[k - 1], starts.get(k + 1, starts[k - 1])
        for c, cell in _merged([band[k]]).cells.items():
            cell.rowspan = below - above + 1
            rows[above].cells[c] = cell
    return rows


def _rows_per_line(band: list[list[_Phrase]]) -> bool:
    """True when each line of the band is a row: a column holds numbers on two of its lines
    (numbers do not wrap), or two columns hold phrases too short to be wrapped text on two
    lines (wrapped text fills its column on every line but the last; one short line alone is
    a deliberate break inside a cell: "USER or" / "SESSION_USER")."""
    per_col: dict[int, list[_Phrase]] = {}
    for line in band:
        for p in line:
            if p.cols[0] == p.cols[1]:
                per_col.setdefault(p.cols[0], []).append(p)
    short = 0
    for ps in per_col.values():
        if len(ps) < 2:
            continue
        if sum(bool(NUMBER.match(p.text)) for p in ps) >= 2:
            return True
        width = max(p.x1 - p.x0 for p in ps)
        short += any(p.x1 - p.x0 < WRAP_FILL * width for p in ps[:-1])
    return short >= 2


def _continues(line: list[_Phrase], row: _Row) -> bool:
    """A line is the wrapped text of the row above when it fills fewer of its columns, not the
    first, and holds no number."""
    cols = _cols(line)
    filled = {c for k, cell in row.cells.items() for c in range(k, k + cell.colspan) if cell.text}
    return cols < filled and min(filled) not in cols and not any(NUMBER.match(p.text) for p in line)


# ---- rows -> Markdown or HTML ----------------------------------------------------------------
def _render(rows: list[_Row], ncols: int) -> str:
    rows = [r for r in rows if any(c.text for c in r.cells.values())]
    cells = [c for r in rows for c in r.cells.values() if c.text]
    if ncols < 2 or len(rows) < 2 or not cells:
        return ""
    if sum(len(c.text.split()) for c in cells) / len(cells) > MAX_CELL_WORDS:
        return ""  # prose in columns, not a table
    if sum(c.colspan * c.rowspan for c in cells) < MIN_FILL * ncols * len(rows):
        return ""
    if sum(sum(bool(c.text) for c in r.cells.values()) <= 1 for r in rows) > SINGLE_ROWS * len(rows):
        return ""  # lines of prose with a wide gap here and there
    if sum(c.colspan > 1 for c in cells) > MAX_SPANNING * len(cells):
        return ""  # columns of prose, or a figure's labels: lines across a grid that is not there
    if all(c.colspan == 1 and c.rowspan == 1 for r in rows for c in r.cells.values()):
        return table_markdown([[r.cells[c].text if c in r.cells else "" for c in range(ncols)] for r in rows])
    return _html(rows, ncols)


def _html(rows: list[_Row], ncols: int) -> str:
    covered: set[tuple[int, int]] = set()
    out = ["<table>"]
    for i, row in enumerate(rows):
        out.append("<tr>")
        c = 0
        while c < ncols:
            if (i, c) in covered:
                c += 1
                continue
            cell = row.cells.get(c, _Cell(""))
            span = min(cell.colspan, ncols - c)
            attrs = (f' rowspan="{cell.rowspan}"' if cell.rowspan > 1 else "") + (f' colspan="{span}"' if span > 1 else "")
            out.append(f"<td{attrs}>{html.escape(' '.join(cell.text.split()), quote=False)}</td>")
            covered |= {(i + dr, c + dc) for dr in range(cell.rowspan) for dc in range(span)}
            c += span
        out.append("</tr>")
    return "".join(out + ["</table>"])
