"""The `table` check of `curate eval`: the page's tables (Markdown pipe tables and HTML tables
with rowspan/colspan) laid out on a grid, and a test's cell found with its neighbours.

A table test names a `cell` and any of `up`, `down`, `left`, `right` (the cell right next to it
in that direction; a spanning cell neighbours every cell along its side) and `top_heading`,
`left_heading` (walking up / left from the cell to a heading cell: a <th>, a <thead> row, or a
Markdown table's first row or first column; to the table's edge when there is none). Cells are
compared whole, after `normalize`, by `ratio` against 1 - max_diffs/len (at least 0.5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

from curate.modalities.pdf.eval_checks import normalize, ratio

Cell = tuple[int, int]
MIN_SIMILARITY = 0.5  # the floor of a cell's match threshold, however large max_diffs is


@dataclass
class Grid:
    """A table: each cell's text by its top-left (row, col), its span, which cells are
    headings, and the grid's occupancy (which cell covers each slot)."""

    text: dict = field(default_factory=dict)
    heads: set = field(default_factory=set)
    slots: list = field(default_factory=list)

    def neighbours(self, cell: Cell, dr: int, dc: int) -> set:
        """The nearest other cells from `cell` in direction (dr, dc), along its whole side."""
        found = set()
        for r, c in self._covered(cell):
            rr, cc = r + dr, c + dc
            while 0 <= rr < len(self.slots) and 0 <= cc < len(self.slots[rr]):
                other = self.slots[rr][cc]
                if other is not None and other != cell:
                    found.add(other)
                    break
                rr, cc = rr + dr, cc + dc
        return found

    def heading(self, cell: Cell, dr: int, dc: int) -> set:
        """The heading cells met walking from `cell` in direction (dr, dc); the cells at the
        table's edge when the walk meets none."""
        heads, ends, todo, seen = set(), set(), {cell}, set()
        while todo:
            cur = todo.pop()
            seen.add(cur)
            if cur in self.heads:
                heads.add(cur)
            nxt = self.neighbours(cur, dr, dc) - seen
            if not self.neighbours(cur, dr, dc):
                ends.add(cur)
            todo |= nxt
        return (heads - {cell}) or (ends - {cell})

    def _covered(self, cell: Cell) -> list[Cell]:
        return [(r, c) for r, row in enumerate(self.slots) for c, v in enumerate(row) if v == cell]


def build_grid(rows: list[list[tuple[str, int, int, bool]]]) -> Grid | None:
    """A Grid from rows of (text, rowspan, colspan, is_heading), placing each cell in the first
    slot its row leaves free (rowspans from the rows above take theirs first)."""
    g, carry = Grid(), {}  # carry: column -> (cell, rows still covered)
    for r, cells in enumerate(rows):
        slots, c, queue = [], 0, list(cells)
        while queue or any(col >= c for col in carry):
            if c in carry:
                cell, left = carry[c]
                slots.append(cell)
                carry = {**carry, c: (cell, left - 1)} if left > 1 else {k: v for k, v in carry.items() if k != c}
                c += 1
                continue
            if not queue:
                slots.append(None)
                c += 1
                continue
            text, rs, cs, head = queue.pop(0)
            cell = (r, c)
            g.text[cell] = text
            if head:
                g.heads.add(cell)
            for off in range(max(1, cs)):
                slots.append(cell)
                if rs > 1:
                    carry[c + off] = (cell, rs - 1)
            c += max(1, cs)
        g.slots.append(slots)
    if not g.text:
        return None
    width = max(len(s) for s in g.slots)
    g.slots = [s + [None] * (width - len(s)) for s in g.slots]
    return g


def markdown_tables(md: str) -> list[Grid]:
    """Pipe tables: runs of lines holding `|`, the dashed separator row dropped; the first row
    and first column are headings."""
    grids, run = [], []
    for line in md.split("\n") + [""]:
        if "|" in line:
            run.append(line)
            continue
        if len(run) >= 2:
            rows = []
            for ln in run:
                if set(ln.strip()) <= set("|-: "):
                    continue  # the separator row
                cells = [x.strip() for x in ln.strip().split("|")]
                cells = cells[1:] if cells and cells[0] == "" else cells
                cells = cells[:-1] if cells and cells[-1] == "" else cells
                if cells:
                    rows.append([(t, 1, 1, not rows or j == 0) for j, t in enumerate(cells)])
            grid = build_grid(rows) if rows else None
            if grid:
                grids.append(grid)
        run = []
    return grids


class _Html(HTMLParser):
    """Collects <table>s as rows of (text, rowspan, colspan, is_heading); <br> is a space."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.stack, self.cell, self.in_head = [], [], None, 0

    def handle_starttag(self, tag, attrs):
        """A table, row or cell opens (a cell remembers its spans and whether it is a heading)."""
        a = dict(attrs)
        if tag == "table":
            self.stack.append([])
        elif tag == "thead":
            self.in_head += 1
        elif tag == "tr" and self.stack:
            self.stack[-1].append([])
        elif tag in ("td", "th") and self.stack:
            if not self.stack[-1]:
                self.stack[-1].append([])
            self.cell = [[], _span(a.get("rowspan")), _span(a.get("colspan")), tag == "th" or self.in_head > 0]
        elif tag == "br" and self.cell is not None:
            self.cell[0].append(" ")

    def handle_endtag(self, tag):
        """A cell joins its row; a finished table joins the list."""
        if tag in ("td", "th") and self.cell is not None and self.stack:
            text, rs, cs, head = self.cell
            self.stack[-1][-1].append(("".join(text).strip(), rs, cs, head))
            self.cell = None
        elif tag == "thead":
            self.in_head = max(0, self.in_head - 1)
        elif tag == "table" and self.stack:
            self.tables.append(self.stack.pop())

    def handle_data(self, data):
        """Text inside a cell is its content; text elsewhere is not the table's."""
        if self.cell is not None:
            self.cell[0].append(data)


def _span(v) -> int:
    """A rowspan/colspan attribute as a positive int (1 when missing or not a number)."""
    try:
        return max(1, int(v))
    except (TypeError, ValueError):
        return 1


def html_tables(md: str) -> list[Grid]:
    """HTML <table>s anywhere in the page, with their spans and <th>/<thead> headings."""
    if "<table" not in md.lower():
        return []
    p = _Html()
    p.feed(md)
    p.close()
    return [g for g in (build_grid([r for r in t if r]) for t in p.tables) if g]


_DIRECTIONS = {"up": (-1, 0, False), "down": (1, 0, False), "left": (0, -1, False), "right": (0, 1, False),
               "top_heading": (-1, 0, True), "left_heading": (0, -1, True)}


def _threshold(want: str, k: int) -> float:
    return max(MIN_SIMILARITY, 1.0 - k / max(1, len(want)))


def check_table(test: dict, md: str) -> tuple[bool, str]:
    """table: some table holds a cell like `cell` whose named neighbours are like theirs."""
    k = int(test.get("max_diffs", 0))
    want = normalize(test["cell"])
    grids = ([] if test.get("ignore_markdown_tables") else markdown_tables(md)) + html_tables(md)
    if not grids:
        return False, "no table on the page"
    relations = {name: normalize(test[name]) for name in _DIRECTIONS if test.get(name)}
    why = f"no cell like {want[:40]!r} in {len(grids)} table(s)"
    for g in grids:
        for cell, text in g.text.items():
            if ratio(want, normalize(text)) < _threshold(want, k):
                continue
            missed = [name for name, other in relations.items() if not _related(g, cell, name, other, k)]
            if not missed:
                return True, ""
            why = f"cell {want[:40]!r} found, but not its {', '.join(missed)}"
    return False, why


def _related(g: Grid, cell: Cell, name: str, want: str, k: int) -> bool:
    dr, dc, walk = _DIRECTIONS[name]
    cells = g.heading(cell, dr, dc) if walk else g.neighbours(cell, dr, dc)
    return any(ratio(want, normalize(g.text[c])) >= _threshold(want, k) for c in cells)

