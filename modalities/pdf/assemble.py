"""Regions -> page Markdown -> document Markdown: the reducers of PDF -> Markdown.

- `collect` reduces a page's regions (of one branch: the text layer's, or OCR's) to a list
  (a scanned page's OCR region read into several regions gives them all, in order).
- `page_markdown` writes one page from its checked record and both branches' regions, in
  reading order: titles as `#`/`##`/`###` (by `level`), lists as `- item` (enumerations kept),
  tables as they come (Markdown, or HTML from a layout model), code fenced, figures as a
  placeholder (`FIGURE`), formulas as `$$...$$`; paratext (headers, footers, page numbers,
  asides) is dropped. Ligatures are written as letters and each word hyphenated at a line end
  is resolved by the page's words (`words.resolve`: no U+00AD is left). The row says the
  page's route and why (`reason`), the seconds its stages spent on it, and its attributes:
  language (`language.detect`), rotation, whether it has a table, a figure, an equation, its
  OCR confidence (`ocr_confidence`; under `records.LOW_OCR_CONFIDENCE` its reason warns of
  misread words), where its words come from (`text_source`: `records.TEXT_SOURCES`; `mixed` for
  a text-layer page with regions OCR read), its text's score (`text_quality.score`), the font of each
  heading (`titles`), the line-end hyphens it resolved (`hyphens`), the document's
  metadata title when it can be trusted (`trusted_title`), and its `layout`: every region it
  was written from (paratext too: what was left out), in reading order, its kind and box in
  points of the page as rendered (`page_layout`), for a viewer to draw on the page's image.
- `document_markdown` joins a document's pages in page order (the lineage order: a page's
  number is its ordinal, never a field), after these passes across pages:
    - each line-end hyphen decided again by the whole document's words (`words.reresolve`:
      "TABLE-" + "FORMER" is "TABLEFORMER" in a paper that writes TableFormer);
    - headings levelled over the document (`level_headings`): one level per font, the same
      font at the same level on every page;
    - running headers and footers: a short line among the first or last `EDGE_BLOCKS` blocks of
      a page that comes back (page numbers ignored, so "Page 3" and "Page 4" are one line) on at least
      `REPEAT_MIN` pages within `REPEAT_WINDOW` pages around it (a window, so a header that
      changes with each chapter is still found) is dropped;
    - a table continued across a page break is merged into one (as MinerU 2.5 does): when a
      page ends with a table and the next page starts with one with the same number of
      columns, the second's rows are appended to the first (a repeated header row is dropped).
  Its `title` is the metadata title when trustworthy, else the first page's largest heading
  (`title_heading`), else the document's first `#` heading.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from collections import Counter

from curate.modalities.pdf import text_quality, words
from curate.modalities.pdf.crops import displayed
from curate.modalities.pdf.formulas import SOURCE as FORMULA_SOURCE
from curate.modalities.pdf.language import detect as detect_language
from curate.modalities.pdf.order import xy_cut
from curate.modalities.pdf.records import (
    LOW_OCR_CONFIDENCE,
    PARATEXT,
    ROUTES,
    SOURCE_OF_ROUTE,
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
SPLIT_WORD = re.compile(r"[^\W\d_]-$")  # a text block ending in a letter and a hyphen: "the recog-"
TABLE_ROW = re.compile(r"^\|.*\|$")
HTML_ROW = re.compile(r"<tr[\s>].*?</tr>", re.IGNORECASE | re.DOTALL)
HTML_CELL = re.compile(r"<t[dh][\s>]", re.IGNORECASE)
HEADING = re.compile(r"^(#{1,6}) ")
MARKUP = re.compile(r"<[^<>\n]{1,200}>|-{3,}|[|#*`$]")  # HTML tags, table rules, Markdown's marks
OCR_SOURCE = "rapidocr"
SIZE_TOLERANCE = 0.5  # points: heading sizes this close are one font (rounding, a scaled page)
SAME_FIGURE = 0.5  # share of a text-layer figure's box an OCR-read image must cover to be that figure
LOW_CONFIDENCE_NOTE = re.compile(r"; low OCR confidence [^;]*")  # _reason's warning, in a recorded reason
MAX_LEVEL = 6  # Markdown's deepest heading
TITLE_MIN_WORDS = 2  # the document's title has words; "Redpaper" (70 pt) is a brand
MIN_TITLE_CHARS = 3  # a shorter /Title names nothing
PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "no title", "title", "document", "front cover",
                                "cover", "slide 1", "page 1", "none", "null"})
APP_TITLE = re.compile(r"^(?:microsoft (?:word|powerpoint|excel)|powerpoint presentation|word document)\b", re.I)
FILE_NAME = re.compile(r"\.(?:pdf|docx?|rtf|odt|pptx?|xlsx?|png|jpe?g|gif|tiff?|bmp|tex|dvi|e?ps|indd|qxd|txt|html?)$"
                       r"|^[a-z]:\\|[\\/][^\s\\/]+[\\/]", re.I)


def collect(groups: list[list]) -> list[list]:
    """Reduce: a page's regions of one branch, as a list in region order (possibly empty). A
    child whose value is a list (a scanned page OCR read into several regions:
    `ocr.read_regions`) gives its items in their order."""
    return [[v for child in g for v in (child if isinstance(child, list) else [child])] for g in groups]


def page_markdown(items: list[tuple[PageRecord, list[RegionRecord], list[RegionRecord]]]) -> list[PageMarkdown]:
    """Per page (its checked record, the text layer's regions, OCR's regions): its Markdown row."""
    return [_page(page, _merged(layer, ocr)) for page, layer, ocr in items]


page_markdown.requires = ("pycld2",)  # the page's language (language.detect); checked before a run starts


def _merged(layer: list[RegionRecord], ocr: list[RegionRecord]) -> list[RegionRecord]:
    """Both branches' regions of one page in one reading order: a text-layer page whose blocks
    of garbage OCR read has regions from each, ordered again together by XY-cut. An image OCR
    read as a figure (label "figure": `regions.scan_regions`) replaces the text layer's figure
    over it (one figure, or its text)."""
    if not (layer and ocr):
        return [*layer, *ocr]
    read = [r.bbox for r in ocr if r.label == "figure"]
    layer = [r for r in layer if not (r.kind == "figure" and any(_shared(r.bbox, b) >= SAME_FIGURE for b in read))]
    both = [*layer, *ocr]
    return [replace(both[i], order=k) for k, i in enumerate(xy_cut([r.bbox for r in both]))]


def _page(page: PageRecord, regions: list[RegionRecord]) -> PageMarkdown:
    regions = sorted(regions, key=lambda r: r.order)
    blocks, titles = [], []
    for prev, region in zip([None, *regions], regions):
        block = region_markdown(region)
        if block and prev is not None and prev.kind == region.kind == "code" and blocks[-1].startswith("```"):
            blocks[-1] = blocks[-1][:-4] + block[3:]  # a listing cut into blocks is one fence
        elif block and prev is not None and prev.kind == region.kind == "text" and SPLIT_WORD.search(blocks[-1]) \
                and block[:1].islower():
            blocks[-1] = words.join_lines([blocks[-1], block])  # a word hyphenated across two regions
        elif block:
            blocks.append(block)
            if region.kind == "title":
                titles.append((float(region.size), bool(region.bold)))
    markdown, hyphens = words.resolve(words.normalize("\n\n".join(blocks)))
    route = _route(page, regions)
    language, language_score = detect_language(markdown)
    confidence = ocr_confidence(regions)
    return PageMarkdown(markdown=markdown, route=route, chars=len(markdown), regions=len(regions),
                        seconds=round(sum(r.seconds for r in regions), 6), width_pt=page.width_pt,
                        height_pt=page.height_pt, reason=_reason(page, confidence) + layout_note(regions),
                        language=language,
                        language_score=language_score, rotation=_rotation(page, regions),
                        has_table=any((r.kind == "table" and (r.content or "").strip()) or r.label == "table"
                                      for r in regions),
                        has_figure=any(r.kind == "figure" for r in regions),
                        has_equation=any(r.kind == "formula" for r in regions),
                        equation_latex=equation_latex(regions),
                        ocr_confidence=confidence, text_quality=_quality(page, markdown),
                        titles=tuple(titles), hyphens=hyphens, doc_title=trusted_title(page.doc_title, page.path),
                        layout=page_layout(page, regions), text_source=text_source(page, route, regions))


def equation_latex(regions: list[RegionRecord]) -> bool | None:
    """Whether every formula region of a page was written as LaTeX from its text layer's glyphs
    (`formulas`); None for a page without one."""
    found = [r for r in regions if r.kind == "formula"]
    return all(r.source == FORMULA_SOURCE for r in found) if found else None


def _shared(a: tuple, b: tuple) -> float:
    """The share of box `a`'s area that box `b` covers."""
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0) / max((a[2] - a[0]) * (a[3] - a[1]), 1e-6)


def text_source(page: PageRecord, route: str, regions: list[RegionRecord]) -> str:
    """Where the page's words come from (records.TEXT_SOURCES): its route's source, or `mixed` for
    a text-layer page with a region OCR read that reached the Markdown (a block of garbage text,
    an image of text)."""
    if route == "text_layer" and any(r.source == OCR_SOURCE and region_markdown(r) not in ("", FIGURE)
                                     for r in regions):
        return "mixed"
    return SOURCE_OF_ROUTE[route]


def layout_note(regions: list[RegionRecord]) -> str:
    """What the layout pool says of how it read the page, for its `reason` ("; layout: skipped
    (single column, ...)" where it read it by the rules: layout.Layout; "" when it says nothing)."""
    note = next((r.note for r in regions if r.note), "")
    return f"; {note}" if note else ""


def _reason(page: PageRecord, confidence: float | None) -> str:
    """The text layer's verdict, and a warning when OCR read the page with low confidence (a
    page read again, `curate rerun`, keeps its recorded reason without its old warning)."""
    reason = LOW_CONFIDENCE_NOTE.sub("", page.text_reason)
    if confidence is None or confidence >= LOW_OCR_CONFIDENCE:
        return reason
    return f"{reason}; low OCR confidence {confidence:.2f} (< {LOW_OCR_CONFIDENCE:.2f}): misread words likely"


def page_layout(page: PageRecord, regions: list[RegionRecord]) -> tuple[dict, ...]:
    """A page's regions (sorted by `order`) as `PageMarkdown.layout` entries: the place each has
    in the Markdown's order (0, 1, 2...), its kind, and its box moved from the unrotated page
    (every route's `bbox`: records.py) to the page as rendered (`crops.displayed`: /Rotate
    applied, as `page.get_pixmap` shows it), kept within the page and rounded to 0.01 pt."""
    w, h = (page.height_pt, page.width_pt) if page.rotation in (90, 270) else (page.width_pt, page.height_pt)
    out = []
    for k, region in enumerate(regions):
        x0, y0, x1, y1 = displayed(region.bbox, page)
        x0, x1 = (round(min(max(0.0, v), w), 2) for v in (x0, x1))
        y0, y1 = (round(min(max(0.0, v), h), 2) for v in (y0, y1))
        out.append({"order": k, "kind": region.kind, "x0": x0, "y0": y0, "x1": x1, "y1": y1})
    return tuple(out)


def ocr_confidence(regions: list[RegionRecord]) -> float | None:
    """Mean recognition confidence of a page's OCR regions, each weighted by its lines of text
    (a region of 40 lines says more than a stamp of one); None when OCR read none."""
    scored = [(r.score, max(1, (r.content or "").count("\n") + 1)) for r in regions
              if r.source == OCR_SOURCE and r.score is not None]
    if not scored:
        return None
    return round(sum(s * n for s, n in scored) / sum(n for _, n in scored), 4)


def _quality(page: PageRecord, markdown: str) -> float | None:
    """The score of the page's text as written (its OCR text on an OCR page), without the
    Markdown's own syntax (a table's pipes and rules are no broken glyphs); the text layer's
    score when nothing was written."""
    if markdown.strip():
        return text_quality.score(MARKUP.sub(" ", markdown))[0]
    return page.text_quality


def trusted_title(title: str, path: str = "") -> str:
    """`title` (a document's /Title metadata) when it names the document, else "": not a
    placeholder ("untitled", "Front cover"), not an application's label ("Microsoft Word -
    x.doc"), not a file name ("Binder1.pdf", "Screenshot ... .png", the PDF's own name)."""
    title = " ".join((title or "").split())
    stem = os.path.splitext(os.path.basename(path))[0].lower() if path else ""
    if (len(title) < MIN_TITLE_CHARS or not any(c.isalpha() for c in title) or title.lower() in PLACEHOLDER_TITLES
            or APP_TITLE.match(title) or FILE_NAME.search(title) or (stem and title.lower() == stem)):
        return ""
    return title


def _rotation(page: PageRecord, regions: list[RegionRecord]) -> int:
    """How far the page's content is turned: what OCR found on it (it read it turned back), else
    its /Rotate."""
    found = next((r.orientation for r in regions if r.orientation), 0)
    return found or page.orientation or page.rotation


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
    return "\\" + text if HEADING.match(text) else text  # "# 1 item" in a text is no heading


# ---- the document ----------------------------------------------------------------------------
def document_markdown(documents: list[list[PageMarkdown]]) -> list[DocumentMarkdown]:
    """Reduce: per document, its pages (in page order) as one Markdown document."""
    return [_document(pages) for pages in documents]


def _document(pages: list[PageMarkdown]) -> DocumentMarkdown:
    vocab = words.vocabulary("\n".join(words.blank_spans(p.markdown, p.hyphens) for p in pages))
    texts = [words.reresolve(p.markdown, p.hyphens, vocab) if p.hyphens else p.markdown for p in pages]
    blocks = [_blocks(t) for t in texts]
    at = title_heading(blocks, pages)
    title = next((p.doc_title for p in pages if p.doc_title), "")
    title = title or (HEADING.sub("", blocks[at[0]][at[1]], count=1).strip() if at else "")
    blocks = drop_running_lines(level_headings(blocks, [p.titles for p in pages], at))
    merge_tables(blocks)
    markdown = "\n\n".join(b for page in blocks for b in page)
    routes = Counter(p.route for p in pages)
    title = title or next((b[2:].strip() for page in blocks for b in page if b.startswith("# ")), None)
    return DocumentMarkdown(markdown=markdown, pages=len(pages), chars=len(markdown),
                            routes={r: routes.get(r, 0) for r in ROUTES}, title=title or None)


def _headings(blocks: list[str], titles: tuple) -> list[tuple[int, tuple]]:
    """(block index, (size, bold)) of a page's heading blocks, paired with its `titles` in
    order; none when they do not pair up (a page written by another stage)."""
    found = [i for i, b in enumerate(blocks) if "\n" not in b and HEADING.match(b)]
    return list(zip(found, titles)) if len(found) == len(titles) else []


def level_headings(pages: list[list[str]], titles: list[tuple],
                   title_at: tuple[int, int] | None = None) -> list[list[str]]:
    """The pages' blocks with their headings levelled over the whole document, by font (size
    within `SIZE_TOLERANCE`, then bold before regular): the document's title heading
    (`title_at`: page, block) is `#`; the fonts of headings on more than one page (chapters,
    sections: the document's structure) take the next levels, largest first; a font seen on one
    page only (a cover's display lines) takes the level of the largest structural font not
    larger than it (the top one when it is larger than all, one below the last when smaller).
    Headings whose font is not known (size 0) keep their level."""
    paired = [_headings(blocks, t) for blocks, t in zip(pages, titles)]
    sizes = sorted({float(f[0]) for page in paired for _, f in page if f[0] > 0}, reverse=True)
    fonts = {(p, i): _style(*f, sizes) for p, page in enumerate(paired) for i, f in page if f[0] > 0}
    if not fonts:
        return pages
    seen: dict[tuple, set] = {}
    for (p, _), style in fonts.items():
        seen.setdefault(style, set()).add(p)
    several = len({p for p, _ in fonts}) > 1  # one page: every font is structural
    structural = sorted((st for st, ps in seen.items() if len(ps) > 1 or not several), key=_rank)
    first = 2 if title_at in fonts and fonts[title_at] not in structural else 1
    level = {st: min(first + k, MAX_LEVEL) for k, st in enumerate(structural)}
    out = [list(blocks) for blocks in pages]
    for (p, i), style in fonts.items():
        n = 1 if (p, i) == title_at else level.get(style) or _nearest(style, structural, level, first)
        out[p][i] = "#" * n + " " + HEADING.sub("", out[p][i], count=1)
    return out


def _style(size: float, bold: bool, sizes: list[float]) -> tuple[float, bool]:
    """A heading's font as compared across pages: its size snapped to the largest known size
    within `SIZE_TOLERANCE` (11.96 pt and 12 pt are one font)."""
    return next((s for s in sizes if abs(s - size) <= SIZE_TOLERANCE), size), bool(bold)


def _rank(style: tuple[float, bool]) -> tuple:
    return -style[0], not style[1]


def _nearest(style: tuple, structural: list[tuple], level: dict, first: int) -> int:
    """The level of a one-page font: that of the largest structural font not larger than it."""
    below = [st for st in structural if _rank(st) >= _rank(style)]
    if below:
        return level[below[0]]
    return min(level[structural[-1]] + 1, MAX_LEVEL) if structural else first


def title_heading(pages: list[list[str]], rows: list[PageMarkdown]) -> tuple[int, int] | None:
    """(page, block) of the first page's largest heading (by font size, else by level; of at
    least `TITLE_MIN_WORDS` words when there is one: a brand or a logo line is one word; never
    a placeholder such as "Front cover"), None when the first page with text has none."""
    first = next((p for p, blocks in enumerate(pages) if blocks), None)
    if first is None:
        return None
    sizes = dict(_headings(pages[first], rows[first].titles))
    heads = [(sizes.get(i, (0.0,))[0], -len(m.group(1)), -i, b[m.end():].strip())
             for i, b in enumerate(pages[first]) if "\n" not in b and (m := HEADING.match(b))
             and trusted_title(b[m.end():])]
    wordy = [h for h in heads if len(h[3].split()) >= TITLE_MIN_WORDS] or heads
    return (first, -max(wordy)[2]) if wordy else None


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
