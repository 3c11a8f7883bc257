"""Opening PDFs and rendering pages, stage by stage on real and hand-made files: PdfPages (the
document -> pages expand), PdfText.check (text layer and route), Render (pixels)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from curate.modalities.pdf.documents import DocumentCache, PdfPages
from curate.modalities.pdf.records import PageImage, PageRecord, RegionRecord
from curate.modalities.pdf.render import Render
from curate.modalities.pdf.regions import scan_regions
from curate.modalities.pdf.pdf_text import PdfText, route_of
from pdf_samples import REAL, scan_pdf, write_pdf, zero_page_pdf

import curate as cu

ENCRYPTED = REAL / "pypdf_encrypted_pw_openpassword.pdf"


def _failure(result) -> str:
    assert isinstance(result, cu.ItemFailure) and isinstance(result.cause, cu.InputError), result
    return str(result.cause)


def test_pages_are_small_records_with_geometry_and_render_scale():
    (pages,) = PdfPages()([str(REAL / "docling_scanned_fax_letter.pdf")])
    (page,) = pages
    assert (page.index, page.rotation, page.width_pt, page.height_pt) == (0, 90, 842.0, 595.0)
    assert page.scale == pytest.approx(200 / 72) and page.text == "" and page.password is None
    book = PdfPages()([REAL / "pymupdf_mupdf_explored.pdf"])[0]
    assert [p.index for p in book] == list(range(285)) and all(p.text == "" for p in book)


@pytest.mark.parametrize("name, words", [
    ("docling_not_a_pdf.pdf", ["not a PDF", "b'This is not a va'"]),
    ("pdfjs_bug1020226_broken.pdf", ["damaged", "recovered no page", "mutool clean"]),
    ("pypdf_encrypted_pw_openpassword.pdf", ["encrypted", "no password was given", "steps.pages.expand.init.passwords"]),
])
def test_each_bad_sample_is_an_item_failure_naming_the_file_and_the_fix(name, words):
    ok, bad = PdfPages()([str(REAL / "small_tiny.pdf"), str(REAL / name)])
    assert len(ok) == 1
    message = _failure(bad)
    assert str(REAL / name) in message and all(w in message for w in words), message


def test_bad_paths_and_files(tmp_path):
    (tmp_path / "empty.pdf").write_bytes(b"")
    (tmp_path / "dir.pdf").mkdir()
    cases = {str(tmp_path / "missing.pdf"): "no such file", str(tmp_path / "empty.pdf"): "the file is empty",
             str(tmp_path / "dir.pdf"): "is a directory", str(zero_page_pdf(tmp_path / "zero.pdf")): "has no pages",
             None: "a document input is a path"}
    results = PdfPages()(list(cases))
    for (path, words), result in zip(cases.items(), results):
        assert words in _failure(result)
    if os.geteuid() != 0:  # root reads anything
        locked = write_pdf(tmp_path / "locked.pdf", ["x"])
        locked.chmod(0)
        assert "cannot be read" in _failure(PdfPages()([str(locked)])[0])


def test_passwords_from_the_stage_or_the_input_open_an_encrypted_pdf():
    wrong = PdfPages(passwords=["nope", "also wrong"])([str(ENCRYPTED)])[0]
    assert "none of the 2 password(s) given opens it" in _failure(wrong)
    (page,) = PdfPages(passwords=["nope", "openpassword"])([str(ENCRYPTED)])[0]
    assert page.password == "openpassword"
    (page,) = PdfPages()([{"path": str(ENCRYPTED), "password": "openpassword"}])[0]
    checked = PdfText().check([page])[0]  # a worker opens it again with the page's password
    assert checked.text_usable and checked.text_chars > 100
    with pytest.raises(ValueError, match="list of texts"):
        PdfPages(passwords="openpassword")


def test_the_check_routes_each_page(tmp_path):
    text = write_pdf(tmp_path / "text.pdf", ["Words on a page, enough of them to judge the text layer."])
    scan = scan_pdf(tmp_path / "scan.pdf", ["A scanned line"])
    blank = REAL / "small_tiny.pdf"
    pages = [p for f in (text, scan, blank) for p in PdfPages()([str(f)])[0]]
    checked = PdfText().check(pages)
    assert [route_of(p) for p in checked] == ["text_layer", "ocr", "empty"]
    assert [p.text_reason for p in checked] == ["ok", "no text layer", "blank page"]
    forced = PdfText(force_ocr=True).check(pages)
    assert [route_of(p) for p in forced] == ["ocr", "ocr", "empty"]
    regions = PdfText().regions(checked)
    assert [r.kind for r in regions[0]] == ["text"] and regions[0][0].content.startswith("Words on a page")
    assert regions[1] == [] and regions[2] == []  # the OCR branch's own expand gives the scan its region
    assert [(r.content, r.bbox) for r in scan_regions(checked)[1]] == [(None, (0.0, 0.0, *scan_size(checked[1])))]


def scan_size(page: PageRecord) -> tuple[float, float]:
    return page.width_pt, page.height_pt


def test_a_page_that_cannot_be_loaded_fails_alone(tmp_path):
    path = write_pdf(tmp_path / "two.pdf", ["one", "two"])
    good = PdfPages()([str(path)])[0][0]
    ghost = PageRecord(path=str(path), index=7, width_pt=100, height_pt=100)  # the file has 2 pages
    checked = PdfText().check([good, ghost])
    assert checked[0].text.strip() == "one"
    assert "page 8 (index 7) cannot be loaded" in _failure(checked[1])
    rendered = Render()([good, ghost])
    assert isinstance(rendered[0], PageImage) and "cannot be loaded" in _failure(rendered[1])


def test_render_gives_rgb_pixels_at_the_page_scale_as_displayed():
    (fax,) = PdfPages()([str(REAL / "docling_scanned_fax_letter.pdf")])[0]
    (image,) = Render()([fax])
    w, h = fax.pixel_size
    assert image.image.shape == (w, h, 3) and image.image.dtype == np.uint8  # /Rotate 90: turned upright
    assert image.scale == fax.scale and image.page.text == ""
    region = RegionRecord(kind="text", bbox=(0, 0, fax.width_pt / 2, fax.height_pt / 2), order=0)
    (crop,) = Render().crops([(fax, region)])
    assert crop.crop.shape[2] == 3 and crop.crop.shape[0] * crop.crop.shape[1] == pytest.approx(w * h / 4, rel=0.02)
    assert crop.seconds > 0 and crop.content is None


def test_absurd_page_sizes_stay_within_the_pixel_cap(tmp_path):
    path = write_pdf(tmp_path / "huge.pdf", ["wide", "tall", "tiny"], size=(14400, 14400))
    pages = PdfPages()([str(path)])[0]
    assert all(max(p.pixel_size) == 3500 for p in pages)  # 200 in x 200 in: scaled down to the long side
    (image, *_) = Render()(pages[:1])
    assert image.image.shape == (3500, 3500, 3)
    capped = Render(max_pixels=1_000_000)(pages[:1])[0]
    assert "over the cap of 1,000,000 pixels" in _failure(capped)
    sliver = PageRecord(path=str(path), index=0, width_pt=14400, height_pt=0.1, scale=3500 / 14400)
    assert "nothing to read" in _failure(Render()([sliver])[0])


def test_the_document_cache_keeps_a_few_documents_open():
    cache = DocumentCache(size=2)
    files = [str(REAL / n) for n in ("small_tiny.pdf", "pdfjs_xref_missing.pdf", "docling_code_and_formula.pdf")]
    docs = [cache.get(f) for f in files]
    assert cache.get(files[2]) is docs[2] and cache.get(files[1]) is docs[1]
    assert cache.get(files[0]) is not docs[0] and docs[0].is_closed  # the least recently used went
    cache.close()
    with pytest.raises(ValueError):
        DocumentCache(size=0)


def test_the_document_cache_reopens_a_document_after_reopen_pages_loads():
    # MuPDF keeps what it parsed until the document closes: a long PDF's worker grew with it
    cache = DocumentCache(size=2, reopen_pages=3)
    (records,) = PdfPages()([str(REAL / "docling_redp5110_sampled.pdf")])
    first = cache.get(records[0].path)
    texts = [cache.page(records[i % len(records)]).get_text() for i in range(7)]
    assert cache.reopened == 2 and first.is_closed  # loads 4 and 7 opened it again
    assert texts == [cache.page(records[i % len(records)]).get_text() for i in range(7)]  # same pages
    cache.close()
    with pytest.raises(ValueError):
        DocumentCache(reopen_pages=0)


def test_a_repaired_pdf_opens_and_reads():
    (page,) = PdfPages()([str(REAL / "pdfjs_xref_missing.pdf")])[0]
    (checked,) = PdfText().check([page])
    assert checked.text.strip() == "Reduced test-case" and route_of(checked) == "text_layer"


def test_importing_the_pdf_stages_loads_no_heavy_module():
    modules = ["curate.modalities.pdf." + m for m in ("documents", "render", "regions", "assemble", "textlayer", "order")]
    modules += ["curate.modalities.pdf.pdf_text", "curate.modalities.pdf.ocr", "curate.models.rapidocr"]
    probe = ("import importlib, sys\n"
             f"for m in {modules!r}: importlib.import_module(m)\n"
             "print(sorted({n.split('.')[0] for n in sys.modules} & {'pymupdf', 'fitz', 'numpy', 'rapidocr_onnxruntime', "
             "'onnxruntime', 'ray'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def _fuzzed(tmp_path: Path) -> list[Path]:
    """A small real PDF cut short and with bytes overwritten (seeded: the same files every run)."""
    src = (REAL / "docling_code_and_formula.pdf").read_bytes()
    out = [tmp_path / f"cut{k}.pdf" for k in (3, 6, 9)]
    for path, k in zip(out, (3, 6, 9)):
        path.write_bytes(src[: len(src) * k // 10])
    for seed in range(4):
        rng, data = random.Random(seed), bytearray(src)
        for _ in range(200):
            data[rng.randrange(len(data))] = rng.randrange(256)
        out.append(tmp_path / f"flip{seed}.pdf")
        out[-1].write_bytes(bytes(data))
    return out


def test_fuzzed_files_give_what_mupdf_recovers_or_a_cause_never_an_exception(tmp_path):
    outcomes = PdfPages()([str(p) for p in _fuzzed(tmp_path)])
    recovered = [pages for pages in outcomes if not isinstance(pages, cu.ItemFailure)]
    assert 0 < len(recovered) < len(outcomes)  # some are repaired, some are beyond repair
    for failure in (o for o in outcomes if isinstance(o, cu.ItemFailure)):
        assert "damaged" in _failure(failure)
    pages = [p for ps in recovered for p in ps]
    checked = PdfText().check(pages)
    for result in (*checked, *PdfText().regions([c for c in checked if isinstance(c, PageRecord)]), *Render()(pages)):
        assert not isinstance(result, cu.ItemFailure) or isinstance(result.cause, cu.InputError)
