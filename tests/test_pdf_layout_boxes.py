"""A page row's `layout` lines up with the page as PyMuPDF renders it: each region the Markdown
was made from (paratext too), in reading order, its box in points of the rendered page (its
/Rotate applied), so that box * zoom frames the region's pixels in `page.get_pixmap` at that zoom.

Checked against what MuPDF itself shows, not against the conversion's own arithmetic:
- text-layer pages (generated at /Rotate 0, 90, 180 and 270, one with a cropbox off the media
  box's corner; the eval set's rotated page; a bundled and a shared real PDF), by the rules and by
  the layout model: each region's box holds the centres of the page's words (`get_text("words")`
  moved by `page.rotation_matrix`) that make its text, and the ink of the rendered page lies in
  the boxes;
- scans read by OCR (a scan turned on its page, one with /Rotate 90, one with both, and the fax
  letter, /Rotate 90): every box within the rendered page, over ink, and the page's ink inside
  the boxes;
- the column through a run: Parquet's list<struct<order, kind, x0, y0, x1, y1>>, the same type
  for a part whose pages have no regions, and a recorded row read back as the PageMarkdown it was.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pymupdf
import pytest
from pdf_samples import REAL
from test_pdf_scan_layout import read_checked

from curate.cli import EXIT_OK, main
from curate.io.parts import merge
from curate.io.rows import payload_fields, to_table
from curate.modalities.pdf.assemble import page_markdown
from curate.modalities.pdf.documents import PdfPages
from curate.modalities.pdf.eval_set import write_eval_set
from curate.modalities.pdf.layout import Layout
from curate.modalities.pdf.pdf_text import PdfText
from curate.modalities.pdf.records import LAYOUT_KEYS, PageMarkdown, PageRecord, RegionRecord
from curate.modalities.pdf.recorded import reread_page
from curate.modalities.pdf.regions import text_flags
from curate.rerun.recorded import RecordedRow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "data" / "pdfs"
ZOOM = 2.0  # the viewer's zoom in these checks: boxes are multiplied by it
INK = 128  # a grey level under this is ink
LAYOUT_TYPE = pa.list_(pa.struct([("order", pa.int64()), ("kind", pa.string()), ("x0", pa.float64()),
                                  ("y0", pa.float64()), ("x1", pa.float64()), ("y1", pa.float64())]))
TITLE = "Boxes on the Rendered Page"
PARAGRAPH = ["The viewer draws each region of this page", "on its rendered image, numbered in the",
             "order the Markdown reads them."]
NOTE = ["A second paragraph, further down,", "keeps the page lopsided."]
FOLIO = "7"
TEXT_KINDS = {"text", "title", "list", "caption", "footnote", "code", "header", "footer", "page_number", "aside"}


# ---- the checks -----------------------------------------------------------------------------
def _rendered(path: Path, index: int) -> tuple[pymupdf.Page, np.ndarray]:
    """The page (its document kept open by the page) and its grey pixels at ZOOM, as a viewer gets them."""
    page = pymupdf.open(path)[index]
    pix = page.get_pixmap(matrix=pymupdf.Matrix(ZOOM, ZOOM), colorspace=pymupdf.csGRAY, alpha=False)
    return page, np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.stride)[:, :pix.width]


def _pixels(entry: dict, pad: float = 0.0) -> tuple[int, int, int, int]:
    return (int(entry["x0"] * ZOOM - pad), int(entry["y0"] * ZOOM - pad),
            int(np.ceil(entry["x1"] * ZOOM + pad)), int(np.ceil(entry["y1"] * ZOOM + pad)))


def _ink_outside(gray: np.ndarray, layout: tuple, pad: float) -> float:
    """The share of the image's ink that no box (grown by `pad` pixels) holds."""
    ink = gray < INK
    held = np.zeros_like(ink)
    for entry in layout:
        x0, y0, x1, y1 = _pixels(entry, pad)
        held[max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)] = True
    return float((ink & ~held).sum() / max(ink.sum(), 1))


def _ink_in(gray: np.ndarray, entry: dict) -> int:
    x0, y0, x1, y1 = _pixels(entry)
    return int((gray[y0:y1, x0:x1] < INK).sum())


def _within_page(row: PageMarkdown, page: pymupdf.Page, gray: np.ndarray) -> None:
    """Every box inside the rendered page, and the page's size as rendered is what they are in."""
    assert gray.shape == (round(page.rect.height * ZOOM), round(page.rect.width * ZOOM))
    for e in row.layout:
        assert 0 <= e["x0"] <= e["x1"] <= page.rect.width + 0.01, e
        assert 0 <= e["y0"] <= e["y1"] <= page.rect.height + 0.01, e


def _shown_words(page: pymupdf.Page) -> list[tuple[str, pymupdf.Point]]:
    """The page's words with their centres on the page as rendered (text extraction gives points
    of the unrotated page; `rotation_matrix` is PyMuPDF's own move to the rendered one)."""
    words = page.get_text("words", flags=text_flags(pymupdf))
    return [(w[4], pymupdf.Point((w[0] + w[2]) / 2, (w[1] + w[3]) / 2) * page.rotation_matrix) for w in words]


def _holds(entry: dict, point: pymupdf.Point, slack: float = 0.5) -> bool:
    return (entry["x0"] - slack <= point.x <= entry["x1"] + slack
            and entry["y0"] - slack <= point.y <= entry["y1"] + slack)


def _check_text_page(path: Path, index: int, row: PageMarkdown, regions: list[RegionRecord],
                     min_words: float = 1.0) -> None:
    """A text-layer page's layout: one entry per region in order, each text region's box holding
    the words of its text (at least `min_words` of them: a real page's joined hyphens change a few),
    every word of the page in a box, and no ink of the rendered page outside the boxes."""
    page, gray = _rendered(path, index)
    _within_page(row, page, gray)
    ordered = sorted(regions, key=lambda r: r.order)
    assert [(e["order"], e["kind"]) for e in row.layout] == [(k, r.kind) for k, r in enumerate(ordered)]
    assert row.regions == len(row.layout) > 0
    words = _shown_words(page)
    for entry, region in zip(row.layout, ordered):
        if region.kind not in TEXT_KINDS or not (region.content or "").strip():
            continue
        inside = [w for w, c in words if _holds(entry, c)]
        wanted = region.content.split()
        found = sum(min(inside.count(w), wanted.count(w)) for w in set(wanted))
        assert found >= min_words * len(wanted), (entry, region.content, inside)
        assert _ink_in(gray, entry) > 0, entry
    lost = [w for w, c in words if not any(_holds(e, c) for e in row.layout)]
    assert len(lost) <= (1 - min_words) * len(words), lost
    if min_words == 1.0:  # a generated page: all its ink is text, in the boxes (glyphs' antialiased edges aside)
        assert _ink_outside(gray, row.layout, pad=2) < 0.005


def _generated_text_pdf(path: Path) -> Path:
    """One lopsided page of text (a title and a paragraph at the top left, a paragraph lower down,
    a page number at the bottom right) at each /Rotate, and one more at /Rotate 90 whose cropbox
    leaves a margin of the media box off."""
    doc = pymupdf.open()
    for rotation, crop in ((0, None), (90, None), (180, None), (270, None), (90, (40, 30, 380, 595))):
        page = doc.new_page(width=400, height=600)
        page.insert_text((60, 80), TITLE, fontsize=18, fontname="hebo")
        for i, line in enumerate(PARAGRAPH):
            page.insert_text((60, 120 + 14 * i), line, fontsize=10, fontname="helv")
        for i, line in enumerate(NOTE):
            page.insert_text((60, 300 + 14 * i), line, fontsize=10, fontname="helv")
        page.insert_text((340, 585), FOLIO, fontsize=9, fontname="helv")
        if crop:
            page.set_cropbox(pymupdf.Rect(crop))
        page.set_rotation(rotation)
    doc.save(path)
    return path


def _read_text(layout: Layout, path: Path) -> list[tuple[PageMarkdown, list[RegionRecord]]]:
    """Every page through check + layout + page_markdown, as the recipe runs them."""
    (pages,) = PdfPages()([str(path)])
    checked = PdfText().check(pages)
    found = layout.regions(checked)
    return list(zip(page_markdown([(p, r, []) for p, r in zip(checked, found)]), found))


MODELS = ["rules", pytest.param("pymupdf", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("pymupdf.layout") is None, reason="pymupdf-layout is not installed"))]


@pytest.fixture(scope="module")
def generated_text(tmp_path_factory) -> Path:
    return _generated_text_pdf(tmp_path_factory.mktemp("text") / "rotations.pdf")


@pytest.mark.parametrize("model", MODELS)
def test_text_layer_boxes_hold_their_words_on_the_rendered_page_at_every_rotation(generated_text, model):
    read = _read_text(Layout(model=model), generated_text)
    assert [row.rotation for row, _ in read] == [0, 90, 180, 270, 90]
    for index, (row, regions) in enumerate(read):
        assert row.route == "text_layer" and TITLE in row.markdown
        _check_text_page(generated_text, index, row, regions)
    upright = read[0][0]  # shown as stored: its page number is paratext, left out of the Markdown but drawn
    assert upright.layout[-1]["kind"] == "page_number" and FOLIO not in upright.markdown.split()
    turned = read[1][0].layout  # /Rotate 90: the page is shown 600 wide and 400 high, its title on the right
    assert max(e["x1"] for e in turned) > 400 and all(e["y1"] <= 400 for e in turned)
    title = next(e for e in turned if e["kind"] == "title")
    assert title["x0"] > 400 and title["y0"] > 50  # top-left when stored; turned a quarter clockwise when shown


@pytest.mark.parametrize("model", MODELS)
def test_real_text_pages_line_up_too(tmp_path, model):
    (rotated,) = write_eval_set(tmp_path, ["eval_rotated.pdf"])
    cases = [(rotated, 0), (EXAMPLES / "docling_2305.03393v1-pg9.pdf", 0), (REAL / "docling_redp5110_sampled.pdf", 1)]
    layout = Layout(model=model)
    for path, index in cases:
        if not path.exists():
            pytest.skip(f"{path} is not here (../shared/data/pdfs)")
        (pages,) = PdfPages()([str(path)])
        (checked,) = PdfText().check([pages[index]])
        (regions,) = layout.regions([checked])
        (row,) = page_markdown([(checked, regions, [])])
        _check_text_page(path, index, row, regions, min_words=0.9)
    if model == "pymupdf":  # the model classes the redbook's copyright line: paratext, drawn too
        assert any(e["kind"] in ("header", "footer", "page_number") for e in row.layout), row.layout


# ---- scans --------------------------------------------------------------------------------------
SCAN_TITLE = "Scanned Letters Drawn Back"
SCAN_LINES = [(100, "Each region of a scan is read by OCR"), (120, "from the page turned upright, and"),
              (140, "its box must come back to the page"), (200, "as a viewer shows it: a second"),
              (220, "paragraph, further down the page.")]


def _scan_pdf(path: Path) -> Path:
    """Three scans (images, no text layer) of one lopsided page of typed lines (a title and two
    paragraphs, all in its top left): the image turned a quarter on a landscape page; upright on
    a portrait page given /Rotate 90; and turned a quarter on a landscape page given /Rotate 180."""
    src = pymupdf.open()
    typed = src.new_page(width=360, height=480)
    typed.insert_text((36, 60), SCAN_TITLE, fontsize=20, fontname="hebo")
    for y, line in SCAN_LINES:
        typed.insert_text((36, y), line, fontsize=13, fontname="helv")
    png = typed.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY).tobytes("png")
    doc = pymupdf.open()
    for size, turn, rotation in (((480, 360), 90, 0), ((360, 480), 0, 90), ((480, 360), 90, 180)):
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_image(page.rect, stream=png, rotate=turn)
        page.set_rotation(rotation)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def ocr():
    pytest.importorskip("rapid_layout", reason="rapid-layout (curate[pdf]) cuts scans into regions")
    from curate.modalities.pdf.ocr import RapidOcr

    return RapidOcr()


def _read_scans(ocr, path: Path) -> list[tuple[PageRecord, list[RegionRecord], PageMarkdown]]:
    """Every page of a scanned PDF as the recipe reads it: a whole-page region, rendered as shown,
    turned upright and read by OCR, cut into regions by layout, written as a page row."""
    (pages,) = PdfPages()([str(path)])
    out = []
    for checked in PdfText().check(pages):
        _, _, _, regions, row = read_checked(ocr, checked)
        out.append((checked, regions, row))
    return out


def _check_scan(path: Path, index: int, row: PageMarkdown, outside: float) -> None:
    """Boxes within the rendered page, each over ink, and at most `outside` of the page's ink
    left out of them."""
    page, gray = _rendered(path, index)
    _within_page(row, page, gray)
    assert row.route == "ocr" and row.layout
    assert [e["order"] for e in row.layout] == list(range(len(row.layout)))
    for e in row.layout:
        assert _ink_in(gray, e) > 0, e
    assert _ink_outside(gray, row.layout, pad=3 * ZOOM) <= outside, _ink_outside(gray, row.layout, 3 * ZOOM)


def test_scan_boxes_come_back_to_the_page_as_rendered_however_it_was_turned(ocr, tmp_path):
    path = _scan_pdf(tmp_path / "scans.pdf")
    read = _read_scans(ocr, path)
    assert [p.rotation for p, _, _ in read] == [0, 90, 180]
    assert all(row.rotation in (90, 270) for _, _, row in read[:2])  # content OCR found turned, read turned back
    for index, (page, regions, row) in enumerate(read):
        assert SCAN_TITLE in row.markdown and len(row.layout) >= 2, row
        _check_scan(path, index, row, outside=0.02)
        # the text sits in one quarter of the page as stored: its boxes must be in that quarter as shown
        shown = pymupdf.open(path)[index].rect
        corner = pymupdf.Rect(min(e["x0"] for e in row.layout), min(e["y0"] for e in row.layout),
                              max(e["x1"] for e in row.layout), max(e["y1"] for e in row.layout))
        assert corner.width * corner.height < 0.5 * shown.width * shown.height, (corner, shown)


def test_the_fax_letters_boxes_frame_its_ink(ocr):
    path = REAL / "docling_scanned_fax_letter.pdf"
    if not path.exists():
        pytest.skip(f"{path} is not here (../shared/data/pdfs)")
    ((page, regions, row),) = _read_scans(ocr, path)
    assert page.rotation == 90 and len(row.layout) == len(regions) > 5
    _check_scan(path, 0, row, outside=0.2)  # its logo, signature and rules are no text: a tenth of its ink


def test_a_scan_read_whole_is_one_box_the_size_of_the_rendered_page(tmp_path):
    page = PageRecord(path="x.pdf", index=0, width_pt=400, height_pt=600, rotation=90, scale=1.0)
    region = RegionRecord(kind="text", bbox=(0.0, 0.0, 400.0, 600.0), order=0, content="all of it", source="rapidocr",
                          score=0.9)
    (row,) = page_markdown([(page, [], [region])])
    assert row.layout == ({"order": 0, "kind": "text", "x0": 0.0, "y0": 0.0, "x1": 600.0, "y1": 400.0},)


# ---- the column ---------------------------------------------------------------------------------
def test_the_column_is_a_list_of_structs_in_parquet_and_reads_back_as_it_was(tmp_path, generated_text):
    out = tmp_path / "out"
    given = ["--input", str(generated_text), "--input", str(EXAMPLES / "small_tiny.pdf")]
    assert main(["run", "pdf_to_markdown", *given, "--output", str(out), "--executor", "local", "--no-progress",
          "--set", "pools.layout.init.model=rules"]) == EXIT_OK
    table = pq.read_table(out / "pages")
    assert table.schema.field("layout").type == LAYOUT_TYPE
    rows = sorted(table.to_pylist(), key=lambda r: r["lineage"])
    assert len(rows) == 6 and rows[-1]["layout"] == [] and rows[-1]["route"] == "empty"  # the blank page: no boxes
    read = _read_text(Layout(model="rules"), generated_text)
    assert [r["layout"] for r in rows[:5]] == [list(row.layout) for row, _ in read]
    names = {f.name for f in fields(PageMarkdown)}
    for r in rows:  # a rerun's page as recorded: the PageMarkdown it was, and the same row again
        recorded = RecordedRow(entity_id=r["entity_id"], depth=1, ordinal=r["ordinal"], status=r["status"],
                               cause=None, fields={k: v for k, v in r.items() if k in names})
        (again,) = reread_page([(recorded, None)])
        assert isinstance(again.layout, tuple) and list(again.layout) == r["layout"]
        assert payload_fields(again)["layout"] == r["layout"]


def test_a_part_of_pages_without_regions_takes_the_columns_type_and_gives_it_back():
    entry = {"order": 0, "kind": "title", "x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0}
    full = to_table([payload_fields(PageMarkdown("# x", "text_layer", 3, 1, layout=[entry]))], {}, {})
    empty = to_table([payload_fields(PageMarkdown("", "empty", 0))], {}, {})
    assert full.schema.field("layout").type == LAYOUT_TYPE
    assert merge(empty.schema, full.schema).field("layout").type == LAYOUT_TYPE  # an empty part first
    assert merge(full.schema, empty.schema).field("layout").type == LAYOUT_TYPE
    later = to_table([payload_fields(PageMarkdown("", "empty", 0))], {}, {}, previous=full.schema)
    assert later.schema.field("layout").type == LAYOUT_TYPE


def test_a_layout_entry_is_checked_and_typed_as_its_column():
    row = PageMarkdown("x", "ocr", 1, layout=[{"y1": 4, "x1": 3, "kind": "text", "order": 0, "y0": 2, "x0": 1}])
    assert row.layout == ({"order": 0, "kind": "text", "x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0},)
    assert list(row.layout[0]) == list(LAYOUT_KEYS) and isinstance(row.layout[0]["x0"], float)
    with pytest.raises(ValueError, match="lacks y1"):
        PageMarkdown("x", "ocr", 1, layout=[{"order": 0, "kind": "text", "x0": 1, "y0": 2, "x1": 3}])
    with pytest.raises(ValueError, match="x0 <= x1"):
        PageMarkdown("x", "ocr", 1, layout=[{"order": 0, "kind": "text", "x0": 5, "y0": 2, "x1": 3, "y1": 4}])
