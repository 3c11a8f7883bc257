"""Regions -> page Markdown -> document Markdown: the reducers of PDF -> Markdown.

- `collect` reduces a page's regions (of one branch: the text layer's, or OCR's) to a list.
- `page_markdown` writes one page from its checked record and both branches' regions, in
  reading order: titles as `#`/`##`/`###` (by `level`), lists as `- item` (enumerations kept),
  tables as they come (Markdown, or HTML from a layout model), code fenced, figures as a
  placeholder (`FIGURE`), formulas as `$$...$$`; paratext (headers, footers, page numbers,
  asides) is dropped. The row says the page's route and why (`reason`), and the seconds its
  stages spent on it.
- `document_markdown` joins a document's pages in page order (the lineage order: a page's
  number is its ordinal, never a field), after two clean-ups across pages:
    - running headers and footers: a short line among the first or last `EDGE_BLOCKS` blocks of
      a page that comes back (page numbers ignored, so "Page 3" and "Page 4" are one line) on at least
      `REPEAT_MIN` pages within `REPEAT_WINDOW` pages around it (a window, so a header that
      changes with each chapter is still found) is dropped;
    - a table continued across a page break is merged into one (as MinerU 2.5 does): when a
      page ends with a table and the next page starts with one with the same number of
      columns, the second's rows are appended to the first (a repeated header row is dropped).
"""

from __future__ import annotations

import re
from collections import Counter

from curate.modalities.pdf.records import (
    PARATEXT,
    ROUTES,
    DocumentMarkdown,
    PageMarkdown,
    PageRecord,
    RegionRecord,
)

FIGURE = "![figure]()"  # a figure's placeholder: the Markdown of an image without a file
DEFAULT_TITLE_LEVEL = 2  # a title whose level is not known (a layout model's)
EDGE_BLOCKS = 2  # blocks at the top and at the bottom of a page that may be a running header/footer
EDGE_MAX_CHARS = 100  # longer lines are content, never a header
REPEAT_WINDOW = 4  # pages before and after a page where its header/footer is looked for
REPEAT_MIN = 3  # pages (itself included) within the window that must repeat a line
SHORT_LINE = 30  # a line this short ignores all its numbers when compared ("Page 3 of 9")
NUMBER_RE = re.compile(r"\d+")
EDGE_NUMBER_RE = re.compile(r"^[\divxlc]+\b|\b\d+$")  # a page number at the start or the end of a line
TABLE_ROW = re.compile(r"^\|.*\|$")
HTML_ROW = re.compile(r"<tr[\s>].*?</tr>", re.IGNORECASE | re.DOTALL)
HTML_CELL = re.compile(r"<t[dh][\s>]", re.IGNORECASE)


def collect(groups: list[list[RegionRecord]]) -> list[list[RegionRecord]]:
    """Reduce: a page's regions of one branch, as a list in region order (possibly empty)."""
    return [list(g) for g in groups]


def page_markdown(items: list[tuple[PageRecord, list[RegionRecord], list[RegionRecord]]]) -> list[PageMarkdown]:
    """Per page (its checked record, the text layer's regions, OCR's regions): its Markdown row."""
    return [_page(page, [*layer, *ocr]) for page, layer, ocr in items]


def _page(page: PageRecord, regions: list[RegionRecord]) -> PageMarkdown:
    regions = sorted(regions, key=lambda r: r.order)
    blocks = []
    for prev, region in zip([None, *regions], regions):
        block = region_markdown(region)
        if block and prev is not None and prev.kind == region.kind == "code" and blocks[-1].startswith("```"):
            blocks[-1] = blocks[-1][:-4] + block[3:]  # a listing cut into blocks is one fence
        elif block:
            blocks.append(block)
    markdown = "\n\n".join(blocks)
    route = _route(page, regions)
    return PageMarkdown(markdown=markdown, route=route, chars=len(markdown), regions=len(regions),
                        seconds=round(sum(r.seconds for r in regions), 6), width_pt=page.width_pt,
                        height_pt=page.height_pt, reason=page.text_reason)


def _route(page: PageRecord, regions: list[RegionRecord]) -> str:
    if page.text_usable:
        return "text_layer"
    if any(r.source == "rapidocr" for r in regions):
        return "ocr"
    return "empty" if not regions else "layout"


def region_markdown(region: RegionRecord) -> str:
    """One region as a Markdown block ("" for paratext and for regions without content)."""
    kind, text = region.kind, (region.content or "").strip()
    if kind in PARATEXT:
        return ""
    if kind == "figure":
        return FIGURE
    if not text:
        return ""
    if kind == "title":
        return "#" * min(region.level or DEFAULT_TITLE_LEVEL, 6) + " " + " ".join(text.split())
    if kind == "list":
        return "\n".join(item if re.match(r"^[(\[]?\w{1,3}[.)\]]\s", item) else f"- {item}"
                         for item in (ln.strip() for ln in text.splitlines()) if item)
    if kind == "code":
        return f"```\n{region.content.strip(chr(10))}\n```"
    if kind == "formula":
        return text if text.startswith("$") else f"$$\n{text}\n$$"
    return text


# ---- the document ----------------------------------------------------------------------------
def document_markdown(documents: list[list[PageMarkdown]]) -> list[DocumentMarkdown]:
    """Reduce: per document, its pages (in page order) as one Markdown document."""
    return [_document(pages) for pages in documents]


def _document(pages: list[PageMarkdown]) -> DocumentMarkdown:
    blocks = drop_running_lines([_blocks(p.markdown) for p in pages])
    merge_tables(blocks)
    markdown = "\n\n".join(b for page in blocks for b in page)
    routes = Counter(p.route for p in pages)
    title = next((b[2:].strip() for page in blocks for b in page if b.startswith("# ")), None)
    return DocumentMarkdown(markdown=markdown, pages=len(pages), chars=len(markdown),
                            routes={r: routes.get(r, 0) for r in ROUTES}, title=title)


def _blocks(markdown: str) -> list[str]:
    return [b for b in re.split(r"\n\s*\n", markdown) if b.strip()] if markdown else []


def _edge_key(block: str) -> str | None:
    """How a block compares with other pages' (page numbers ignored), or None if it cannot be
    a header: a short line ("Page 3 of 9") ignores all its numbers, a longer one only a number
    at its start or end ("12 Row and Column Access Control"), so numbered content lines of
    similar pages ("Step 3 of the install: ...") stay apart."""
    if "\n" in block or len(block) > EDGE_MAX_CHARS or block.startswith(("|", "<", "```")):
        return None
    text = " ".join(block.lower().split())
    return NUMBER_RE.sub("#", text) if len(text) <= SHORT_LINE else EDGE_NUMBER_RE.sub("#", text)


def drop_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages' blocks without their running headers and footers (see the module docstring)."""
    edges = []  # per page: {index of an edge block: its key}
    for blocks in pages:
        idx = set(range(min(EDGE_BLOCKS, len(blocks)))) | set(range(max(len(blocks) - EDGE_BLOCKS, 0), len(blocks)))
        edges.append({i: k for i in idx if (k := _edge_key(blocks[i])) is not None})
    keys = [set(e.values()) for e in edges]
    out = []
    for p, blocks in enumerate(pages):
        near = keys[max(p - REPEAT_WINDOW, 0): p + REPEAT_WINDOW + 1]
        drop = {i for i, k in edges[p].items() if sum(k in ks for ks in near) >= REPEAT_MIN}
        out.append([b for i, b in enumerate(blocks) if i not in drop])
    return out


def merge_tables(pages: list[list[str]]) -> None:
    """Merge, in place, a table that ends a page into the one that starts the next page when
    both have the same number of columns (the second page's table moves up into the first)."""
    last = None  # (page index, block index) of the table that ends the previous non-empty page
    for p, blocks in enumerate(pages):
        if not blocks:
            continue
        if last is not None and _columns(blocks[0]) and _columns(blocks[0]) == _columns(pages[last[0]][last[1]]):
            pages[last[0]][last[1]] = _join_tables(pages[last[0]][last[1]], blocks[0])
            del blocks[0]
            if not blocks:
                continue  # the page was only the table's continuation: it may continue further
        last = (p, len(blocks) - 1) if _columns(blocks[-1]) else None


def _columns(block: str) -> int:
    """Columns of a Markdown or HTML table block (0: not a table)."""
    lines = block.strip().splitlines()
    if len(lines) >= 2 and all(TABLE_ROW.match(ln.strip()) for ln in lines):
        return len(_cells(lines[0]))
    if block.lstrip().lower().startswith("<table"):
        row = HTML_ROW.search(block)
        return len(HTML_CELL.findall(row.group(0))) if row else 0
    return 0


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip()[1:-1])]


def _join_tables(first: str, second: str) -> str:
    if first.lstrip().lower().startswith("<table"):
        head, _, _ = first.rpartition("</table>")
        rows = HTML_ROW.findall(second)
        if rows and HTML_ROW.search(first) and rows[0] == HTML_ROW.search(first).group(0):
            rows = rows[1:]  # the header row repeated on the new page
        return head + "".join(rows) + "</table>"
    a, b = first.strip().splitlines(), second.strip().splitlines()
    rows = b[2:] if _cells(b[0]) == _cells(a[0]) else [b[0], *b[2:]]  # b[1] is the --- line
    return "\n".join(a + rows)
