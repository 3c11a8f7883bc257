"""RapidOCR (CPU) as a backend: the Ocr protocol on small rendered images, text in reading order,
bad items as ItemFailures; and forced OCR on a page of the Vicksburg scan against its own OCR
text layer (one page: RapidOCR takes 5-10 s a page on this 2-core machine)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq
import pymupdf
import pytest
from curate.modalities.pdf.documents import PdfPages
from curate.modalities.pdf.records import PageImage, PageRecord, RegionRecord, RegionText, TextLine
from curate.modalities.pdf.render import Render
from curate.models.protocols import Ocr
from curate.modalities.pdf.ocr import RapidOcr, join_lines, lines_to_text, with_text
from curate.models.rapidocr import image_of as _image_of
from pdf_samples import REAL
from pdf_tokens import f1
from PIL import Image

import curate as cu
from curate.cli import main

LINES = ["Curate reads scanned pages", "with RapidOCR on the CPU"]
VICKSBURG_PAGE = 1  # page 50 of the book: text beside a figure, read in columns
MIN_OCR_F1 = 0.6


@pytest.fixture(scope="module")
def ocr() -> RapidOcr:
    return RapidOcr()


@pytest.fixture(scope="module")
def typeset() -> np.ndarray:
    """Two lines of text rendered at 150 dpi: an RGB image such as Render makes."""
    page = pymupdf.open().new_page(width=300, height=80)
    for i, line in enumerate(LINES):
        page.insert_text((12, 30 + 25 * i), line, fontsize=14)
    pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csRGB)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()


class Clock:
    """A stand-in for `time` in curate.modalities.pdf.ocr: each perf_counter() reading is a second
    after the last, so every timed span in it (start, then end) measures exactly 1 s, on any
    machine. What its `seconds` fields add up is then known exactly."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    import curate.modalities.pdf.ocr as rapidocr

    fake = Clock()
    monkeypatch.setattr(rapidocr, "time", fake)
    return fake


def test_rapidocr_is_an_ocr_backend_with_one_thread_per_actor(ocr):
    assert isinstance(ocr, Ocr) and RapidOcr.__call__ is RapidOcr.ocr
    with pytest.raises(ValueError, match="threads"):
        RapidOcr(threads=0)
    with pytest.raises(ValueError, match="CPU"):
        RapidOcr(device="cuda")


def test_every_image_form_reads_the_same_text_in_reading_order(ocr, typeset):
    page = PageRecord(path="x.pdf", index=0, width_pt=300, height_pt=80)
    region = RegionRecord(kind="text", bbox=(0, 0, 300, 80), order=0, crop=typeset)
    forms = [typeset, Image.fromarray(typeset), {"image": typeset, "id": "x#0"}, PageImage(page, typeset, 150 / 72), region]
    assert all(np.array_equal(_image_of(f), typeset) for f in forms)  # one image, whatever carries it
    (text,) = ocr.ocr(forms[3:4])
    assert text.lower().split("\n") == [ln.lower() for ln in LINES]


def test_regions_get_their_text_score_and_time_and_lose_their_crop(ocr, typeset, clock):
    region = RegionRecord(kind="text", bbox=(0, 0, 300, 80), order=0, crop=typeset, seconds=0.25)
    (read,) = ocr.ocr_regions([region])
    assert read.content.lower() == "\n".join(LINES).lower() and read.source == "rapidocr" and read.crop is None
    assert 0.5 < read.score <= 1 and read.seconds == 0.25 + 1.0  # its seconds so far, plus the OCR call's


def test_detection_then_recognition_by_line_reads_what_one_call_reads(ocr, typeset, clock):
    """The recipe's two Calls (detect_lines: region -> lines; read_lines: lines of any regions in
    one batch) and its reduce (join_lines, with_text) give the region that ocr_regions gives."""
    region = RegionRecord(kind="text", bbox=(0, 0, 300, 80), order=0, crop=typeset, seconds=0.25)
    blank = replace(region, crop=np.full((40, 120, 3), 255, np.uint8))
    lines, none, bad = ocr.detect_lines([region, blank, replace(region, crop=None)])
    assert none == [] and isinstance(bad, cu.ItemFailure) and isinstance(bad.cause, cu.InputError)
    assert len(lines) == len(LINES) and all(isinstance(ln, TextLine) and ln.text is None for ln in lines)
    assert all(ln.crop.ndim == 3 and ln.crop.shape[1] > ln.crop.shape[0] for ln in lines)  # lying flat, upright
    assert lines[0].box[1] < lines[1].box[1] and all(ln.box[2] <= typeset.shape[1] for ln in lines)
    twice = ocr.read_lines([*lines, *lines])  # one batch holding the lines of two regions
    assert [ln.text.lower() for ln in twice] == [ln.lower() for ln in LINES * 2]
    # each line: its share of its region's detection (1 s over 2 lines) and of the batch's reading (1 s over 4)
    assert all(ln.crop is None and 0.5 < ln.score <= 1 and ln.seconds == 0.5 + 0.25 for ln in twice)
    text, empty = join_lines([twice[:2][::-1], []])  # the reduce restores reading order from the boxes
    assert text.text.lower() == "\n".join(LINES).lower() and text.lines == 2 and empty == RegionText("")
    (read,) = with_text([(region, text)])
    (one_call,) = ocr.ocr_regions([region])
    assert (read.content, read.source, read.crop, read.kind) == (one_call.content, "rapidocr", None, "text")
    assert read.score == pytest.approx(one_call.score, abs=0.02)
    assert text.seconds == 2 * 0.75 and read.seconds == 0.25 + text.seconds  # the region's, plus its lines'


@pytest.fixture(scope="module")
def fax(ocr) -> tuple:
    """The fax letter's page as the recipe reads it (one full-page region): (region, its lines
    as detected, its RegionText). Read once: a page of RapidOCR takes 5-10 s here."""
    (pages,) = PdfPages()([str(REAL / "docling_scanned_fax_letter.pdf")])
    (image,) = Render()(pages[:1])
    region = RegionRecord(kind="text", bbox=(0, 0, pages[0].width_pt, pages[0].height_pt), order=0, crop=image.image)
    (lines,) = ocr.detect_lines([region])
    (text,) = join_lines([ocr.read_lines(lines)])
    return region, lines, text


def test_lines_of_a_real_scan_read_exactly_what_one_call_reads(ocr, fax):
    """The fax letter renders at 1653x2339 px, past RapidOCR's 2,000 px working size: its lines
    are cut from the image as RapidOCR sizes it, so both paths read the same pixels."""
    region, lines, text = fax
    (one_call,) = ocr.ocr_regions([region])
    assert max(region.crop.shape) > 2000 and text.text == one_call.content
    assert text.score == pytest.approx(one_call.score)
    assert "analogous electrical video signal" in text.text and text.orientation == 0
    height, width = region.crop.shape[:2]
    assert max(ln.box[2] for ln in lines) <= width and max(ln.box[3] for ln in lines) <= height


def test_the_fax_keeps_every_line_of_its_paragraph(fax):
    """RapidOCR's per-line angle classifier turned "This signal is used to modulate a carrier..."
    upside down (0.94 sure), read it as blanks (0.49, under text_score 0.5) and the line was lost.
    The line classifier is off: a page's orientation is decided once, for all its text."""
    _, lines, text = fax
    paragraph = ["In facsimile", "the subject copy", "cause the photocell", "This signal is used to modulate a carrier",
                 "remote destination over a radio"]
    at = [text.text.find(start) for start in paragraph]
    assert -1 not in at and at == sorted(at), text.text
    assert text.dropped <= 1 and text.lines == len(lines) - text.dropped  # at most the red stamp, which is no text
    (region,) = with_text([(fax[0], text)])  # its confidence reaches the region (the page: ocr_confidence)
    assert 0.9 < text.score <= 1 and region.score == text.score


def test_the_fax_margin_note_comes_after_the_body_and_the_footer_keeps_its_order(fax):
    text = fax[2].text
    assert text.index("Yours sincerely") < text.index("No. 1") and text.endswith("No. 1"), text
    office = next(ln for ln in text.splitlines() if "Office" in ln)  # "Registered Office: 60 Vicarage Lane, ..."
    assert office.index("Office") < office.index("60") < office.index("Lane"), office


def test_a_line_under_the_text_score_keeps_its_score_and_loses_its_text(typeset):
    strict = RapidOcr(text_score=1.01)  # no line can score this
    (lines,) = strict.detect_lines([RegionRecord(kind="text", bbox=(0, 0, 300, 80), order=0, crop=typeset)])
    read = strict.read_lines(lines)
    assert [ln.text for ln in read] == ["", ""] and all(ln.score > 0.5 for ln in read)
    assert join_lines([read]) == [RegionText("", None, 0, pytest.approx(sum(ln.seconds for ln in read)), dropped=2)]
    with pytest.raises(ValueError, match="rec_batch_num"):
        RapidOcr(rec_batch_num=0)


def test_a_bad_item_fails_alone(ocr):
    blank = np.full((40, 120, 3), 255, np.uint8)
    got = ocr.ocr([np.zeros((0, 10, 3), np.uint8), blank, None, np.zeros((8, 8), np.uint8)])
    assert got[1] == ""  # a page with no text reads as "", and the batch went on
    for bad in (got[0], got[2], got[3]):
        assert isinstance(bad, cu.ItemFailure) and isinstance(bad.cause, cu.InputError)
    assert "empty" in str(got[0].cause)


def test_boxes_are_joined_into_lines_and_paragraphs_in_reading_order():
    boxes = [(220, 10, 300, 30), (10, 12, 200, 30), (10, 40, 290, 60), (10, 110, 290, 130)]
    texts = ["world", "hello", "second line", "new paragraph"]
    assert lines_to_text(boxes, texts) == "hello world\nsecond line\n\nnew paragraph"
    assert lines_to_text([], []) == ""


# the last lines of the fax letter as RapidOCR boxes them (pixels of the rendered page)
FAX_END = [((352, 1518, 1364, 1556), "Probably you have uses for this facility in your organisation."),
           ((876, 1584, 1136, 1621), "Yours sincerely,"), ((876, 1798, 1044, 1826), "P.J. CROSS"),
           ((877, 1829, 1418, 1863), "Group Leader - Facsimile Research"),
           ((673, 2149, 1031, 2176), "Registered in England: No. 2038"), ((88, 2179, 153, 2208), "No. 1"),
           ((588, 2172, 788, 2202), "Registered Office:"), ((808, 2176, 938, 2196), "60 Vicara"),
           ((929, 2175, 1134, 2199), "Lane, Ilford. Essex."), ((274, 1194, 1396, 1233), "cause the photocell ...")]


def test_a_margin_note_comes_after_the_body_and_words_of_a_line_left_to_right():
    """The fax's margin "No. 1" sits on the footer's last line, left of the body: it comes after
    the body, as a paragraph of its own. The footer's boxes, whose tops differ by a few pixels,
    are read left to right ("60 Vicara" came after "Lane, ...", its top being 1 px lower)."""
    text = lines_to_text(*zip(*FAX_END))
    footer = "Registered in England: No. 2038\nRegistered Office: 60 Vicara Lane, Ilford. Essex."
    assert text.split("\n\n")[-3:] == ["P.J. CROSS\nGroup Leader - Facsimile Research", footer, "No. 1"], text
    titled = [((100, 10, 400, 30), "Title"), ((0, 40, 60, 60), "left"), ((100, 40, 200, 60), "cell")]
    assert lines_to_text(*zip(*titled)) == "Title\nleft cell"  # one wide line is a title, not a body: no margins


def test_forced_ocr_on_a_scan_agrees_with_its_own_ocr_layer(tmp_path):
    src = pymupdf.open(REAL / "pypdf_vicksburg_scan_ocr.pdf")
    layer = src[VICKSBURG_PAGE].get_text()
    src.select([VICKSBURG_PAGE])  # the page alone, its objects untouched (insert_pdf would redraw it bolder)
    src.save(tmp_path / "vicksburg_p50.pdf")
    rc = main(["run", "pdf_to_markdown", "--input", str(tmp_path / "vicksburg_p50.pdf"), "--output", str(tmp_path / "out"),
               "--executor", "local", "--no-progress", "--set", "pools.pdf_text.init.force_ocr=true"])
    assert rc == 0
    (page,) = pq.read_table(tmp_path / "out" / "pages").to_pylist()
    assert (page["route"], page["reason"]) == ("ocr", "forced OCR")
    score = f1(page["markdown"], layer)
    print(f"Vicksburg page {VICKSBURG_PAGE}: OCR vs its text layer, token F1 {score:.3f}; {page['seconds']:.1f} s")
    assert score >= MIN_OCR_F1
    # the running head ("THE SIEGE OF VICKSBURG." and the page number) is the page's header by layout and
    # position: read, kept as a region, left out of the Markdown (the eval's vicksburg_scan_ocr_p1_running_head)
    text = " ".join(page["markdown"].upper().split())
    assert "VICKSBURG" not in text and "SCATTERING DIRT FOR YARDS" in text
