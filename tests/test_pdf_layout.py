"""Text-layer pages through the layout pool (PyMuPDF's layout model + the PDF's spans): reading
order of a two-column paper, headers and footers on a single page, figure text kept out of the
body, and the XY-cut and plain-page rules on their own.

Each real-PDF test reads only the pages it needs (the model costs about a second a page here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pdf_samples import REAL, write_pdf

pytest.importorskip("pymupdf.layout", reason="pymupdf-layout (the layout model) is not installed")

from curate.modalities.pdf.assemble import page_markdown  # noqa: E402
from curate.modalities.pdf.documents import PdfPages, pymupdf  # noqa: E402
from curate.modalities.pdf.layout import Layout, plain_page  # noqa: E402
from curate.modalities.pdf.order import xy_cut  # noqa: E402
from curate.modalities.pdf.pdf_text import PdfText  # noqa: E402

TABLEFORMER = REAL / "mineru_demo3_tableformer.pdf"


@pytest.fixture(scope="module")
def layout():
    return Layout(model="pymupdf")


def read(layout: Layout, path: Path, index: int):
    """(the page's Markdown row, its regions) through check + layout, as the recipe runs them."""
    page = PdfText().check([PdfPages()([str(path)])[0][index]])[0]
    regions = layout.regions([page])[0]
    return page_markdown([(page, regions, [])])[0], regions


def test_a_two_column_paper_reads_the_left_column_before_the_right(layout):
    row, _ = read(layout, TABLEFORMER, 0)
    md = row.markdown
    left, right = md.index("1 Introduction"), md.index("tables or rows into word sequences")
    assert md.index("Abstract") < left < right  # the right column used to come before "1 Introduction"
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert not any("Gupta" in h or "Google" in h for h in headings), headings  # the author block is text


def test_a_running_head_on_a_one_page_paper_is_a_header_not_body(layout):
    row, regions = read(layout, REAL / "docling_2305.03393v1-pg9.pdf", 0)
    assert "Table Structure Recognition 9" not in row.markdown
    assert "5.1 Hyper Parameter Optimization" in row.markdown
    assert any(r.kind == "header" and "Structure Recognition" in r.content for r in regions)  # kept, classed


def test_a_copyright_footer_is_dropped_on_the_page_that_has_it(layout):
    row, regions = read(layout, REAL / "docling_redp5110_sampled.pdf", 1)
    assert "Copyright IBM" not in row.markdown
    assert any(r.kind in ("footer", "page_number") for r in regions)


def test_text_inside_a_figure_stays_out_of_the_body(layout):
    row, regions = read(layout, TABLEFORMER, 2)
    assert "queenhn" not in row.markdown and "⬤" not in row.markdown
    assert not any(ln.startswith("#") and "[CLS]" in ln for ln in row.markdown.splitlines())
    assert any(r.kind == "figure" for r in regions) and "![figure]()" in row.markdown


def test_xy_cut_reads_columns_whose_paragraph_breaks_line_up_as_columns():
    title = (50, 10, 550, 30)
    left = [(50, 50, 290, 100), (50, 110, 290, 160)]
    right = [(310, 50, 550, 100), (310, 110, 550, 160)]  # breaks at the same heights as the left's
    assert xy_cut([right[1], left[1], title, right[0], left[0]]) == [2, 4, 1, 3, 0]
    assert xy_cut([left[0], right[0]], right_to_left=True) == [1, 0]


def test_xy_cut_puts_a_centred_block_that_bridges_the_gutter_above_the_columns():
    authors = [(200, 40, 400, 50), (220, 55, 380, 65)]
    left, right = (50, 80, 290, 300), (310, 80, 550, 300)
    assert xy_cut([right, authors[1], left, authors[0]]) == [3, 1, 2, 0]


def test_a_plain_page_skips_the_model_and_a_paper_page_does_not(tmp_path):
    mod = pymupdf()
    plain = mod.open(write_pdf(tmp_path / "plain.pdf", ["one line of plain text on its page"]))
    paper = mod.open(TABLEFORMER)
    assert plain_page(plain[0], mod) and not plain_page(paper[0], mod)


def test_the_boxes_only_feature_set_reads_the_paper_and_a_bad_one_is_refused(layout):
    """features: rf (the layout model without its image features) is the fast choice; on the
    two-column paper it gives the same reading order and headings as the default (the title
    one level down: without image features the model calls it a section header)."""
    fast = Layout(model="pymupdf", features="rf")
    page = PdfText().check([PdfPages()([str(TABLEFORMER)])[0][0]])[0]
    rows = [page_markdown([(page, lay.regions([page])[0], [])])[0].markdown for lay in (layout, fast)]
    for md in rows:
        assert md.index("Abstract") < md.index("1 Introduction") < md.index("tables or rows into word sequences")
    headings = [[ln.lstrip("# ") for ln in md.splitlines() if ln.startswith("#")] for md in rows]
    assert headings[0] == headings[1] and len(headings[0]) >= 3, headings
    with pytest.raises(ValueError, match="features='imf'; one of imf\\+rf, rf"):
        Layout(features="imf")


def test_a_page_whose_garbage_sits_in_a_few_blocks_keeps_its_good_text_and_ocr_reads_the_rest(layout):
    """Redbook p3: its shifted-cipher bullets made the whole page go to OCR (which loses the
    text layer's spaces and paragraphs); now only those blocks do."""
    from curate.modalities.pdf.regions import scan_regions

    page = PdfText().check([PdfPages()([str(REAL / "docling_redp5110_sampled.pdf")])[0][2]])[0]
    assert page.text_usable and len(page.ocr_boxes) == 5 and "garbage" in page.text_reason
    (to_ocr,) = scan_regions([page])
    assert [r.bbox for r in to_ocr] == [tuple(map(float, b)) for b in page.ocr_boxes]
    row = page_markdown([(page, layout.regions([page])[0], [])])[0]
    assert "Center of Excellence" in row.markdown and "üìÆ" not in row.markdown and "Ü" not in row.markdown


def test_a_box_the_model_calls_a_table_whose_cells_fail_is_text_that_still_counts_as_a_table(tmp_path):
    """The routed recipe sends a table the CPU could not structure to the VLM: the region is text
    (its cells did not confirm a table) but keeps the model's class, so the page has a table."""
    from curate.modalities.pdf.layout_regions import layout_regions
    from curate.modalities.pdf.routing import needs_vlm

    path = write_pdf(tmp_path / "prose.pdf", ["A sentence of prose that no grid of cells would confirm."])
    page = PdfText().check([PdfPages()([str(path)])[0][0]])[0]
    with pymupdf().open(path) as doc:
        regions = layout_regions(doc[0], pymupdf(), [[0, 0, 300, 60, "table"]])
    assert [(r.kind, r.label) for r in regions] == [("text", "table")]
    row = page_markdown([(page, regions, [])])[0]
    assert row.has_table and "prose" in row.markdown
    assert needs_vlm(row) == "a table the CPU route could not structure"
    plain = page_markdown([(page, [dataclasses.replace(r, label="text") for r in regions], [])])[0]
    assert not plain.has_table and needs_vlm(plain) == ""
