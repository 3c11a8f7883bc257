"""Page rows of a real PDF for the tests of the page and document reducers: the text layer's
regions (`regions.page_regions`, tables off: these tests read words), their lines joined by
`words.join_lines` as the layout stage joins them, with each block's median font size and
weight (what the layout stage gives a region), through `assemble.page_markdown`."""

from __future__ import annotations

import statistics
from dataclasses import replace

from curate.modalities.pdf import assemble, regions, words
from curate.modalities.pdf.records import PageMarkdown, PageRecord


def page_rows(path, monkeypatch, indexes=None, doc_title: str = "") -> list[PageMarkdown]:
    """The PageMarkdown rows of the pages `indexes` (all when None) of the PDF at `path`."""
    import pymupdf

    monkeypatch.setattr(regions, "join_lines", words.join_lines)
    doc = pymupdf.open(path)
    rows = []
    for i in range(doc.page_count) if indexes is None else indexes:
        page = doc[i]
        fonts = _fonts(page, pymupdf)
        found = [replace(r, size=fonts.get(r.bbox, (0.0, False))[0], bold=fonts.get(r.bbox, (0.0, False))[1])
                 for r in regions.page_regions(page, pymupdf, tables="off")]
        record = PageRecord(path=str(path), index=i, width_pt=page.rect.width, height_pt=page.rect.height,
                            text_usable=True, text_reason="ok", doc_title=doc_title)
        rows += assemble.page_markdown([(record, found, [])])
    return rows


def _fonts(page, mod) -> dict:
    """{block bbox: (median span size, all spans bold)} of a page's text blocks."""
    out = {}
    for b in page.get_text("dict", flags=regions.text_flags(mod))["blocks"]:
        spans = [s for ln in b.get("lines", ()) for s in ln["spans"] if s["text"].strip()]
        if spans:
            out[tuple(float(v) for v in b["bbox"])] = (round(statistics.median(s["size"] for s in spans), 1),
                                                      all(s["flags"] & regions.BOLD for s in spans))
    return out
