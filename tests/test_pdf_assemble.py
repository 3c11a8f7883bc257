"""The page reducer's attributes (language, rotation, tables, figures, equations, OCR
confidence, text quality, heading fonts) and the document reducer's headings levelled across
pages and its title, on records and on the shared PDFs."""

from __future__ import annotations

import pytest
from curate.modalities.pdf.assemble import document_markdown, page_markdown, trusted_title
from curate.modalities.pdf.language import detect
from curate.modalities.pdf.records import PageRecord, RegionRecord
from pdf_rows import page_rows
from pdf_samples import REAL

ENGLISH = "The model reads each table with its text, row by row, and answers questions about it."


def _page(index: int = 0, **kw) -> PageRecord:
    kw = {"text_usable": True, "text_reason": "ok", **kw}
    return PageRecord(path="/data/paper.pdf", index=index, width_pt=600, height_pt=800, **kw)


def _region(kind: str, order: int, content: str | None = "", **kw) -> RegionRecord:
    return RegionRecord(kind=kind, bbox=(0, order * 10, 100, order * 10 + 5), order=order, content=content, **kw)


@pytest.mark.parametrize("text, code", [
    (ENGLISH, "en"), ("Das Modell liest jede Tabelle mit ihrem Text, Zeile für Zeile, und beantwortet Fragen.", "de"),
    ("モデルは各表をその文章と一緒に読み、質問に答えます。", "ja"), ("המודל קורא כל טבלה עם הטקסט שלה ועונה על שאלות", "he"),
])
def test_the_language_of_a_text_is_its_iso_639_1_code_with_a_confidence(text, code):
    found, confidence = detect(text)
    assert found == code and 0.5 < confidence <= 1.0
    assert detect("x") == ("", None) and detect("") == ("", None)
    assert detect("\x01\x02 " + text)[0] == code  # control characters CLD2 refuses are ignored


def test_a_page_row_carries_its_attributes():
    layer = [_region("title", 0, "Results", size=12.0, bold=True), _region("text", 1, ENGLISH),
             _region("table", 2, "| a | b |\n| --- | --- |\n| 1 | 2 |"), _region("figure", 3),
             _region("title", 4, "Discussion", size=11.0), _region("formula", 5, "E = mc^2")]
    (row,) = page_markdown([(_page(rotation=90), layer, [])])
    assert (row.language, row.rotation, row.has_table, row.has_figure, row.has_equation) == ("en", 90, True, True, True)
    assert row.language_score > 0.9 and row.text_quality == 1.0 and row.ocr_confidence is None
    assert row.titles == ((12.0, True), (11.0, False))
    numbers = "| - | - | - |\n| --- | --- | --- |\n" + "| 1 | | 2 |\n" * 20
    (table,) = page_markdown([(_page(), [_region("table", 0, numbers)], [])])
    assert table.text_quality == 1.0  # its pipes and rules are the Markdown's, not broken glyphs
    ocr = [_region("text", 0, "first line\nsecond line\nthird line", source="rapidocr", score=0.9),
           _region("text", 1, "a stamp", source="rapidocr", score=0.5), _region("text", 2, "unread", source="rapidocr")]
    (scan,) = page_markdown([(_page(text_usable=False, text_reason="no text layer", orientation=180), [], ocr)])
    assert scan.ocr_confidence == pytest.approx((0.9 * 3 + 0.5) / 4) and scan.rotation == 180  # weighted by lines
    assert (scan.has_table, scan.has_figure, scan.has_equation, scan.titles) == (False, False, False, ())
    (blank,) = page_markdown([(_page(text_usable=False, text_reason="blank page"), [], [])])
    assert (blank.language, blank.language_score, blank.text_quality) == ("", None, None)


def test_a_text_that_starts_like_a_heading_is_not_one():
    (row,) = page_markdown([(_page(), [_region("text", 0, "# 1 is the count"), _region("title", 1, "Real")], [])])
    assert row.markdown == "\\# 1 is the count\n\n## Real"


def test_headings_of_one_font_have_one_level_across_the_document():
    """Found in issue 23: "1 Introduction" was `##`, "2 Preliminaries" and "4 Experimental
    Setup" (the same font) another level: each page levelled its own headings."""
    def title(order, text, size, level):
        return _region("title", order, text, size=size, bold=True, level=level)
    pages = [[title(0, "TableFormer: Robust Transformer Modeling", 14.3, 2), title(1, "1 Introduction", 12.0, 2)],
             [title(0, "2 Preliminaries", 11.96, 3), title(1, "2.1 Tables", 11.0, 3)],
             [title(0, "4 Experimental Setup", 12.0, 1), title(1, "4.1 Data", 11.0, 2), _region("text", 2, ENGLISH)]]
    rows = page_markdown([(_page(i), regions, []) for i, regions in enumerate(pages)])
    (doc,) = document_markdown([rows])
    assert doc.markdown.split("\n\n")[:6] == ["# TableFormer: Robust Transformer Modeling", "## 1 Introduction",
                                              "## 2 Preliminaries", "### 2.1 Tables", "## 4 Experimental Setup",
                                              "### 4.1 Data"]
    assert doc.title == "TableFormer: Robust Transformer Modeling"


def test_the_title_is_the_trusted_metadata_else_the_first_page_s_largest_heading():
    for bad in ("", "untitled", "Front cover", "Microsoft Word - thesis.doc", "Binder1.pdf",
                "Screenshot 2025-07-29 at 00.15.56.png", "paper", "C:\\work\\draft"):
        assert trusted_title(bad, "/data/paper.pdf") == "", bad
    assert trusted_title(" 2010  Form 1040 ", "/data/f1040.pdf") == "2010 Form 1040"
    cover = [_region("title", 0, "Redpaper", size=70.0), _region("title", 1, "Front cover", size=24.0),
             _region("title", 2, "Row and Column Access Control", size=43.0), _region("text", 3, ENGLISH)]
    rows = page_markdown([(_page(0, doc_title="Binder1.pdf"), cover, [])])
    assert document_markdown([rows])[0].title == "Row and Column Access Control"
    rows = page_markdown([(_page(0, doc_title="Access Control in DB2"), cover, [])])
    assert rows[0].doc_title == "Access Control in DB2" == document_markdown([rows])[0].title


@pytest.mark.parametrize("name, title", [
    ("docling_redp5110_sampled.pdf", "Row and Column Access Control Support in IBM DB2 for i"),
    ("mineru_demo3_tableformer.pdf", "TABLEFORMER: Robust Transformer Modeling for Table-Text Encoding"),
])
def test_real_documents_get_their_title(name, title, monkeypatch):
    """Found in issue 23: `title` was null for 4 of 5 documents, "Front cover" for the redbook."""
    (doc,) = document_markdown([page_rows(REAL / name, monkeypatch, indexes=[0, 1])])
    assert doc.title == title


def test_the_tableformer_paper_s_sections_share_a_level(monkeypatch):
    (doc,) = document_markdown([page_rows(REAL / "mineru_demo3_tableformer.pdf", monkeypatch)])
    heads = [b for b in doc.markdown.split("\n\n") if b.startswith("#")]
    assert heads[0] == "# TABLEFORMER: Robust Transformer Modeling for Table-Text Encoding"
    for section in ("Abstract", "1 Introduction", "Acknowledgments", "References"):
        assert f"## {section}" in heads, heads


def test_the_metadata_title_reaches_the_pages_and_is_trusted_only_when_it_names_the_document():
    from curate.modalities.pdf.documents import PdfPages

    form, fax = PdfPages()([str(REAL / "pdfjs_prefilled_f1040.pdf"), str(REAL / "docling_scanned_fax_letter.pdf")])
    assert {p.doc_title for p in form} == {"2010 Form 1040"} and fax[0].doc_title.startswith("Screenshot")
    rows = page_markdown([(p, [_region("text", 0, ENGLISH)], []) for p in (form[0], fax[0])])
    assert [r.doc_title for r in rows] == ["2010 Form 1040", ""]


def test_a_word_hyphenated_across_two_text_regions_is_joined_once():
    layer = [_region("text", 0, "The recog-"), _region("text", 1, "nition of words split at line ends."),
             _region("text", 2, "A list-"), _region("text", 3, "Then a new sentence.")]
    (row,) = page_markdown([(_page(), layer, [])])
    assert row.markdown.startswith("The recognition of words split at line ends.\n\n")
    assert "A list-\n\nThen a new sentence." in row.markdown  # a capital after it: two paragraphs
