"""No readable page left empty (issue 38): a page, or an image over most of one, is never "a
figure" just because it has no text layer. Each case on a document made here (`pdf_no_layer`):
a handwritten letter and a page of notes scanned as images, a poster whose words are vector
outlines (alone, and under one line of real text), a letter's image under a typed heading; and
the two that stay figures: a photo with a sign in it and a bar chart. Plus the page's
`text_source`, its low-confidence warning and the routed recipe's rule for it."""

from __future__ import annotations

import re
from dataclasses import replace

import pyarrow.parquet as pq
import pytest
from curate.cli import EXIT_OK, main
from curate.modalities.pdf.assemble import FIGURE, page_markdown
from curate.modalities.pdf.documents import PdfPages
from curate.modalities.pdf.ocr import RapidOcr, read_regions
from curate.modalities.pdf.ocr_text import reads_as_text
from curate.modalities.pdf.pdf_text import PdfText
from curate.modalities.pdf.records import LOW_OCR_CONFIDENCE, TEXT_SOURCES, PageMarkdown, PageRecord, RegionRecord, \
    RegionText
from curate.modalities.pdf.routing import needs_vlm
from pdf_no_layer import (CHART_LABELS, EXHIBIT, FOOTER, LETTER, NOTES, POSTER, SIGN, chart_pdf, exhibit_pdf,
                          letter_pdf, notes_pdf, photo_pdf, poster_pdf)

pytest.importorskip("rapid_layout", reason="rapid-layout (curate[pdf]) runs the layout model on scans")

MIN_RECALL = 0.7  # share of the page's words its Markdown must hold (RapidOCR misreads a few slanted words)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def recall(markdown: str, lines: list[str]) -> float:
    """The share of the words of `lines` that `markdown` holds (each word as often as it comes)."""
    want, have = _words(" ".join(lines)), _words(markdown)
    left = {w: have.count(w) for w in set(have)}
    hits = 0
    for w in want:
        if left.get(w, 0) > 0:
            left[w] -= 1
            hits += 1
    return hits / len(want)


@pytest.fixture(scope="module")
def ocr() -> RapidOcr:
    return RapidOcr()


def _scan(ocr, path) -> PageMarkdown:
    from test_pdf_scan_layout import read_checked

    (pages,) = PdfPages()([str(path)])
    (checked,) = PdfText().check(pages[:1])
    assert checked.text == "" and checked.text_reason == "no text layer"  # no text layer at all: OCR's
    return read_checked(ocr, checked)[-1]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("no_layer")
    return {name: make(folder / f"{name}.pdf") for name, make in (
        ("letter", letter_pdf), ("notes", notes_pdf), ("poster", poster_pdf), ("photo", photo_pdf),
        ("chart", chart_pdf), ("exhibit", exhibit_pdf))}


# ---- pages with no text layer: the OCR route ------------------------------------------------------
@pytest.mark.parametrize("name, lines", [("letter", LETTER), ("notes", NOTES), ("poster", POSTER)])
def test_a_page_of_handwriting_or_drawn_words_is_read_not_one_figure(ocr, made, name, lines):
    row = _scan(ocr, made[name])
    got = recall(row.markdown, lines)
    print(f"{name}: recall {got:.2f}, OCR confidence {row.ocr_confidence}, {row.seconds:.1f} s\n{row.markdown}")
    assert row.markdown.strip() != FIGURE and got >= MIN_RECALL, row.markdown
    assert (row.route, row.text_source) == ("ocr", "ocr") and 0 < row.ocr_confidence <= 1


def test_a_photo_with_a_sign_and_a_chart_stay_figures(ocr, made):
    """Decided: an image whose OCR text does not read as prose (a sign, tick numbers, one-word
    labels) is a figure; its text stays on the region, out of the Markdown, as a figure's labels
    on a text-layer page do (layout_regions)."""
    photo, chart = _scan(ocr, made["photo"]), _scan(ocr, made["chart"])
    print(photo.markdown, "\n----\n", chart.markdown)
    for row, words in ((photo, SIGN.split()), (chart, CHART_LABELS)):
        assert FIGURE in row.markdown and not any(w in row.markdown for w in words), row.markdown
        assert row.has_figure and row.text_source == "ocr"


# ---- an image, or drawn words, over much of a text-layer page -----------------------------------
def _run(tmp_path, pdf, *sets) -> dict:
    out = tmp_path / "out"
    args = ["run", "pdf_to_markdown", "--input", str(pdf), "--output", str(out), "--executor", "local",
            "--no-progress", "--set", "pools.ocr.replicas=1"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == EXIT_OK
    (page,) = pq.read_table(out / "pages").to_pylist()
    return page


@pytest.mark.parametrize("model", ["pymupdf", "rules"])
def test_a_letter_under_a_typed_heading_is_read_into_the_page(tmp_path, made, model):
    page = _run(tmp_path, made["exhibit"], f"pools.layout.init.model={model}")
    md = page["markdown"]
    print(page["reason"], page["ocr_confidence"], "\n", md)
    assert EXHIBIT[0] in md and EXHIBIT[1] in md  # the text layer's own lines
    assert recall(md, LETTER) >= MIN_RECALL and FIGURE not in md, md
    assert (page["route"], page["text_source"]) == ("text_layer", "mixed")
    assert "read by OCR" in page["reason"] and page["ocr_confidence"] is not None


def test_words_drawn_as_outlines_over_one_line_of_real_text_are_read(tmp_path):
    pdf = poster_pdf(tmp_path / "poster.pdf", footer=FOOTER)
    page = _run(tmp_path, pdf)
    md = page["markdown"]
    print(page["reason"], "\n", md)
    assert recall(md, POSTER) >= MIN_RECALL and FIGURE not in md, md
    assert (page["route"], page["text_source"]) == ("text_layer", "mixed")
    # the real line: PyMuPDF's layout model calls it the page's footer (paratext, out of the Markdown)
    assert FOOTER in md or [e["kind"] for e in page["layout"]][-1] == "footer", page["layout"]


def test_a_figure_read_by_ocr_is_text_only_when_it_reads_as_prose():
    assert reads_as_text("\n".join(LETTER)) and reads_as_text("\n".join(NOTES))
    assert not reads_as_text("0\n10\n20\n30\n40\nApples Pears Plums\nFruit sold")  # a chart's ticks and labels
    assert not reads_as_text(SIGN) and not reads_as_text("")
    assert not reads_as_text("Figure 3: accuracy by epoch\n0.2\n0.4\n0.6\nepoch\nours baseline")
    page = PageRecord(path="x.pdf", index=0, width_pt=600, height_pt=800, text_usable=True, text_reason="ok")
    figure = RegionRecord(kind="figure", bbox=(10, 10, 590, 700), order=0, label="figure")
    layer_figure = RegionRecord(kind="figure", bbox=(10, 10, 590, 700), order=0, content="", source="layout")
    heading = RegionRecord(kind="title", bbox=(10, 720, 590, 740), order=1, content="A heading", source="layout")
    for text, kind, source in (("\n".join(LETTER), "text", "mixed"), (SIGN, "figure", "layer")):
        (got,) = read_regions([(page, figure, RegionText(text=text, score=0.8, lines=text.count("\n") + 1))])
        assert [(r.kind, r.label, r.content) for r in got] == [(kind, "figure", text)]
        (row,) = page_markdown([(page, [layer_figure, heading], got)])  # OCR's reading replaces the layer's figure
        assert row.markdown.count(FIGURE) == (kind == "figure") and row.text_source == source, row.markdown


# ---- the page's text source, its low confidence, and the routed recipe -----------------------------
def test_each_page_says_where_its_text_comes_from_and_warns_of_low_confidence():
    assert [PageMarkdown("x", r, 1).text_source for r in ("text_layer", "ocr", "layout", "empty")] == [
        "layer", "ocr", "vlm", "none"]
    assert set(TEXT_SOURCES) == {"layer", "ocr", "vlm", "mixed", "none"}
    with pytest.raises(ValueError, match="text_source"):
        PageMarkdown("x", "ocr", 1, text_source="scanner")
    scan = PageRecord(path="x.pdf", index=0, width_pt=600, height_pt=800, text_reason="no text layer")
    for score, warned in ((0.97, False), (0.62, True)):
        region = RegionRecord(kind="text", bbox=(0, 0, 600, 800), order=0, content="Dear Margaret,",
                              source="rapidocr", score=score)
        (row,) = page_markdown([(scan, [], [region])])
        assert row.text_source == "ocr" and row.ocr_confidence == score
        assert row.reason == ("no text layer; low OCR confidence 0.62 (< 0.90): misread words likely" if warned
                              else "no text layer"), row.reason
        assert bool(needs_vlm(row)) == warned and (score >= LOW_OCR_CONFIDENCE) != warned
        (again,) = page_markdown([(replace(scan, text_reason=row.reason), [], [region])])  # curate rerun
        assert again.reason == row.reason


def test_a_scan_ocr_wrote_no_text_for_goes_to_the_vlm():
    why = "OCR wrote no text on a page that shows an image or drawings"
    assert needs_vlm(PageMarkdown("", "ocr", 0)) == why  # handwriting OCR could not see
    assert needs_vlm(PageMarkdown(f"{FIGURE}\n\n{FIGURE}", "ocr", 22, ocr_confidence=0.99)) == why  # only figures
    assert needs_vlm(PageMarkdown(f"{FIGURE}\n\nFigure 2: the yield.", "ocr", 30, ocr_confidence=0.99)) == ""
    assert needs_vlm(PageMarkdown("", "empty", 0)) == "" and needs_vlm(PageMarkdown(FIGURE, "text_layer", 11)) == ""
