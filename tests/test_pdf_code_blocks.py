"""Code fences need evidence of code, not a monospaced font alone (`code_blocks`): prose set in
Courier (a scanned book's OCR text layer, a typewritten page) is text whose lines join and whose
line-end hyphens are resolved; a Python, C or shell listing in Courier stays fenced, line by line.
Both region makers are driven: the rules (`regions.page_regions`) and the layout model's path
(`layout_regions.layout_regions`, with a box given by hand, and through the model itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from curate.modalities.pdf.code_blocks import code_share, is_code, is_code_line

# an old book's page, composed for this test: a hyphen at a line end ("for-" + "ward") and prose
# with a semicolon, parentheses and numbers, none of it code
BOOK = ["The regiment broke camp at dawn on the third day, and marched",
        "along the river road toward the ferry, where the boats had",
        "been gathered during the night. The men were weary, for the",
        "rains had swollen every creek (the oldest farmers said they",
        "had seen nothing like it since 1844), and the wagons sank to",
        "their axles in the red clay. Toward noon the column halted in",
        "a grove of oaks, and the colonel, riding for-",
        "ward with his staff, surveyed the opposite shore with a glass;",
        "no enemy was to be seen."]
PYTHON = ["def mean(values):", '    """The arithmetic mean of a list."""', "    total = 0", "    for v in values:",
          "        total += v", "    return total / len(values)"]
C = ["#include <stdio.h>", "int main(void) {", "    int n = 10;", '    printf("%d\\n", n * n);', "    return 0;",
     "}"]
SHELL = ["$ ls -la /tmp", "total 8", "drwxr-xr-x  2 root root 4096 Jan  1 00:00 .", "$ echo done", "done"]
JOINED = "the colonel, riding forward with his staff, surveyed the opposite shore with a glass;"


@pytest.mark.parametrize("line", BOOK + ["* * *", "CHAPTER IV.", "\u2014 and so, -- it seemed -- the day was lost."])
def test_a_line_of_prose_is_not_code(line):
    assert not is_code_line(line)


@pytest.mark.parametrize("line", [ln for ln in PYTHON + C + SHELL if ln not in (PYTHON[1], SHELL[1], SHELL[2], SHELL[4], C[4])]
                         + ["{", "*/", "});", "import os", "from pathlib import Path", ">>> 1 + 1", "-p password",
                            "-- rewrite pdf file", "usage: mutool show [options] file.pdf", "<div id=\"part1\">"])
def test_a_line_of_code_is_code(line):
    assert is_code_line(line)


def test_a_block_is_code_by_its_own_lines_or_by_its_page():
    assert code_share(BOOK) == 0.0 and not is_code(BOOK)
    assert is_code(PYTHON) and is_code(C) and is_code(SHELL)
    comment = ["The global state contains an exception stack, resource store,", "etc. Most functions take a context."]
    assert not is_code(comment) and is_code(comment, page_share=0.3)  # a doc comment inside a listing page


def _courier_page(doc, lines: list[str], scan: bool) -> None:
    """A page with `lines` in Courier at 60 points from the left; `scan`: as a scan with an OCR
    text layer (the page's image under the same text, invisible)."""
    import pymupdf

    page = doc.new_page(width=595, height=842)
    for i, line in enumerate(lines):
        page.insert_text((60, 100 + 14 * i), line, fontname="cour", fontsize=10)
    if scan:
        png = page.get_pixmap(dpi=100, colorspace=pymupdf.csGRAY).tobytes("png")
        scanned = doc.new_page(width=595, height=842)
        scanned.insert_image(scanned.rect, stream=png)
        for i, line in enumerate(lines):
            scanned.insert_text((60, 100 + 14 * i), line, fontname="cour", fontsize=10, render_mode=3)
        doc.delete_page(len(doc) - 2)  # the typeset page: only its image stays


def _pdf(path: Path) -> Path:
    """Page 1: the book page as a scan with a Courier OCR layer; page 2: the three listings."""
    import pymupdf

    doc = pymupdf.open()
    _courier_page(doc, BOOK, scan=True)
    _courier_page(doc, PYTHON + [""] + C + [""] + SHELL, scan=False)
    doc.save(path)
    return path


def _markdown(path: Path, index: int, regions_of) -> tuple[str, list]:
    from curate.modalities.pdf.assemble import page_markdown
    from curate.modalities.pdf.documents import PdfPages
    from curate.modalities.pdf.pdf_text import PdfText

    page = PdfText().check([PdfPages()([str(path)])[0][index]])[0]
    assert page.text_usable, page.text_reason
    regions = regions_of(page)
    return page_markdown([(page, regions, [])])[0].markdown, regions


def _by_rules(path: Path, index: int) -> tuple[str, list]:
    import pymupdf

    from curate.modalities.pdf.regions import page_regions

    return _markdown(path, index, lambda page: page_regions(pymupdf.open(path)[index], pymupdf))


def _by_layout_box(path: Path, index: int) -> tuple[str, list]:
    """The layout path with one `text` box over the whole page (the model's call, given by hand)."""
    import pymupdf

    from curate.modalities.pdf.layout_regions import layout_regions

    def regions(page):
        pdf_page = pymupdf.open(path)[index]
        return layout_regions(pdf_page, pymupdf, [[40, 60, 560, 800, "text"]])

    return _markdown(path, index, regions)


@pytest.mark.parametrize("read", [_by_rules, _by_layout_box], ids=["rules", "layout"])
def test_prose_in_courier_is_a_paragraph_with_its_hyphens_resolved(tmp_path, read):
    """Issue 38: a 19th-century book page (a scan with a Courier text layer) came out inside a
    ``` fence, line by line, with "for-" and "ward" apart."""
    md, regions = read(_pdf(tmp_path / "courier.pdf"), 0)
    assert "```" not in md and not any(r.kind == "code" for r in regions), md
    assert JOINED in md and "The regiment broke camp at dawn on the third day, and marched along" in md


@pytest.mark.parametrize("read", [_by_rules, _by_layout_box], ids=["rules", "layout"])
def test_python_c_and_shell_in_courier_stay_fenced_line_by_line(tmp_path, read):
    """Line by line, and indented as they were (Python's blocks are its syntax)."""
    md, regions = read(_pdf(tmp_path / "courier.pdf"), 1)
    assert md.startswith("```") and md.endswith("```") and all(r.kind == "code" for r in regions), md
    assert all(line in md.splitlines() for line in PYTHON + C), md
    lines = [" ".join(ln.split()) for ln in md.splitlines()]
    assert all(" ".join(line.split()) in lines for line in SHELL), md


def test_indentation_set_by_position_comes_back_in_spaces():
    """A typesetter may indent code by moving the line, with no space glyphs: 12 points in a
    6-point advance are two characters."""
    from curate.modalities.pdf.code_blocks import indented

    assert indented(["if x:", "y = 1", "z"], [72.0, 84.0, 72.0], 6.0) == ["if x:", "  y = 1", "z"]
    assert indented(["a", "b"], [10.0, 20.0], 0.0) == ["a", "b"]  # no advance known: as they are


def test_the_layout_model_reads_the_courier_book_page_as_prose(tmp_path):
    pytest.importorskip("pymupdf.layout", reason="pymupdf-layout (the layout model) is not installed")
    from curate.modalities.pdf.layout import Layout

    path = _pdf(tmp_path / "courier.pdf")
    layout = Layout(model="pymupdf")
    md, regions = _markdown(path, 0, lambda page: layout.regions([page])[0])
    assert "```" not in md and JOINED in md, md
    md, regions = _markdown(path, 1, lambda page: layout.regions([page])[0])
    lines = [" ".join(ln.split()) for ln in md.splitlines()]
    assert "```" in md and all(" ".join(line.split()) in lines for line in PYTHON + C + SHELL), md
    assert all(line in md.splitlines() for line in PYTHON), md
