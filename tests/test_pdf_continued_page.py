"""A two-column page that begins with the end of the previous article (issue 38): it starts in
the middle of a sentence, then comes the new article's title across the page, then its two
columns. The carried-over end is body text, read first; the layout model calls a short one at
the top of the page a page-header, which dropped it (`layout_regions.paratext_kind`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.modalities.pdf.layout_regions import paratext_kind

W, H, MARGIN = 595, 842, 50
CARRIED = ["to be visited before the winter.", "open again."]  # the previous article's last words, per column
TITLE = "A New Survey of River Trade, 1850 to 1900"
LEFT = ["The river carried most of the province's grain until the railway came. Boats left the upper towns "
        "each spring.",
        "Merchants kept their own accounts, and few of them survive; those that do tell of steady trade in salt "
        "and timber."]
RIGHT = ["By the end of the century the boats were gone, and the wharves stood empty along the lower river.",
         "This survey gathers what the archives still hold, town by town, from the upper reaches to the sea."]
ORDER = [CARRIED[0], CARRIED[1], TITLE, LEFT[0][:30], LEFT[1][:30], RIGHT[0][:30], RIGHT[1][:30]]


def _page(path: Path) -> Path:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    mid = W / 2
    for text, x0, x1 in ((CARRIED[0], MARGIN, mid - 10), (CARRIED[1], mid + 10, W - MARGIN)):
        page.insert_textbox(pymupdf.Rect(x0, 50, x1, 120), text, fontsize=10, fontname="tiro")
    width = pymupdf.get_text_length(TITLE, "tibo", 20)
    page.insert_text(((W - width) / 2, 140), TITLE, fontsize=20, fontname="tibo")
    for k, (left, right) in enumerate(zip(LEFT, RIGHT)):
        y = 170 + 90 * k
        page.insert_textbox(pymupdf.Rect(MARGIN, y, mid - 10, y + 80), left, fontsize=10, fontname="tiro")
        page.insert_textbox(pymupdf.Rect(mid + 10, y, W - MARGIN, y + 80), right, fontsize=10, fontname="tiro")
    doc.save(path)
    return path


def _in_order(md: str) -> bool:
    at = [md.find(s) for s in ORDER]
    return -1 not in at and at == sorted(at)


@pytest.mark.parametrize("text, kind", [
    ("to be visited before the winter.", "text"), ("open again.", "text"), ("and so it ended!\u201d", "text"),
    ("Row and Column Access Control Support in IBM DB2 for i", "header"),
    ("Journal of Document Studies 12 (2026) 41-49", "header"), ("arXiv:2203.00274v2 [cs.CL] 1 Mar 2022", "header"),
    ("www.example.org.", "header"), ("THE SIEGE OF VICKSBURG.", "header"),
])
def test_a_header_that_ends_a_sentence_begun_on_the_previous_page_is_text(text, kind):
    """A box the model calls a header in the top zone is the end of a carried-over paragraph when
    it starts with a small letter and ends a sentence (two words at least: "www.example.org." is
    no sentence); a running head does not."""
    assert paratext_kind("header", (50, 50, 290, 62), text, False, (W, H), (50.0, 800.0)) == kind


def test_the_rules_read_the_carried_over_end_first(tmp_path):
    import pymupdf

    from curate.modalities.pdf.assemble import page_markdown
    from curate.modalities.pdf.documents import PdfPages
    from curate.modalities.pdf.pdf_text import PdfText
    from curate.modalities.pdf.regions import page_regions

    path = _page(tmp_path / "continued.pdf")
    page = PdfText().check([PdfPages()([str(path)])[0][0]])[0]
    md = page_markdown([(page, page_regions(pymupdf.open(path)[0], pymupdf), [])])[0].markdown
    assert _in_order(md), md


def test_the_layout_model_keeps_the_carried_over_end_and_reads_it_first(tmp_path):
    """It called the two short lines at the top page-headers: the page lost its first words."""
    pytest.importorskip("pymupdf.layout", reason="pymupdf-layout (the layout model) is not installed")
    from curate.modalities.pdf.assemble import page_markdown
    from curate.modalities.pdf.documents import PdfPages
    from curate.modalities.pdf.layout import Layout
    from curate.modalities.pdf.pdf_text import PdfText

    path = _page(tmp_path / "continued.pdf")
    page = PdfText().check([PdfPages()([str(path)])[0][0]])[0]
    regions = Layout(model="pymupdf").regions([page])[0]
    md = page_markdown([(page, regions, [])])[0].markdown
    assert _in_order(md) and md.startswith(CARRIED[0]), md
