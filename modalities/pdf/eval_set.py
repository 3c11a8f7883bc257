"""PDFs with a known structure for `curate eval`, written with PyMuPDF: each one page, each built
to hold one of the cases a PDF reader gets wrong (two columns, a booktabs table, a table aligned
by whitespace alone, a running header and page number on a one-page paper, words hyphenated at
line ends, a page turned by /Rotate, a figure with text inside it, a scan turned upside down, a
scan of a paper's page with a running head, a table and a footer).
Their unit tests are written by hand in tests/data/pdf_eval/generated.jsonl.

    python -m curate.modalities.pdf.eval_set DIR    # writes DIR/eval_*.pdf

The same call gives the same files (no dates, fixed fonts and positions)."""

from __future__ import annotations

import sys
from pathlib import Path

A4 = (595.0, 842.0)  # points
MARGIN = 56.0  # points: a 2 cm margin, where running headers and page numbers sit outside the body
BODY = 10.0  # body font size in points
LEAD = 13.0  # body line height in points

LEFT_COLUMN = [
    "Column one opens the paper with a short account of why documents need careful reading.",
    "Readers of scanned archives lose hours when a page comes out with its columns interleaved.",
    "The left column ends with this sentence about the cost of interleaved columns.",
]
RIGHT_COLUMN = [
    "The right column begins only after the left column has been read to its end.",
    "It describes a method that finds the columns first and reads each from top to bottom.",
    "The method was tried on four hundred pages of reports from a regional archive.",
]
TABLE_ROWS = [["Model", "Precision", "Recall", "Pages"],
              ["Baseline", "71.2", "64.8", "120"],
              ["Layout", "83.5", "79.1", "120"],
              ["Layout+OCR", "88.9", "85.4", "96"]]
WHITESPACE_ROWS = [["City", "Population", "Area km2"],
                   ["Arlon", "30,574", "118.6"],
                   ["Bastogne", "16,275", "172.0"],
                   ["Virton", "11,474", "52.2"]]


def _paragraphs(page, rect, paras: list[str]) -> float:
    """Paragraphs set in `rect` one after the other, a blank line between; the y they end at."""
    import pymupdf

    y = rect[1]
    for text in paras:
        box = pymupdf.Rect(rect[0], y, rect[2], rect[3])
        left = page.insert_textbox(box, text, fontsize=BODY, fontname="tiro", lineheight=1.25)
        used = (box.height - left) if left >= 0 else box.height
        y += used + LEAD * 0.8
    return y


def two_columns(page) -> None:
    """A title across the page, then two columns of three paragraphs each."""
    page.insert_text((MARGIN, 90), "Reading Order in Two Columns", fontsize=18, fontname="hebo")
    mid = A4[0] / 2
    _paragraphs(page, (MARGIN, 120, mid - 10, 700), LEFT_COLUMN)
    _paragraphs(page, (mid + 10, 120, A4[0] - MARGIN, 700), RIGHT_COLUMN)


def _rows(page, x: list[float], y: float, rows: list[list[str]], bold_first: bool = True) -> list[float]:
    """Table rows set at column positions `x` from baseline `y`; the baselines used."""
    ys = []
    for i, row in enumerate(rows):
        for xx, cell in zip(x, row):
            page.insert_text((xx, y), cell, fontsize=BODY, fontname="hebo" if (bold_first and i == 0) else "helv")
        ys.append(y)
        y += LEAD + 4
    return ys


def booktabs(page) -> None:
    """A paragraph, a table caption, and a table ruled by three horizontal lines only."""
    _paragraphs(page, (MARGIN, 80, A4[0] - MARGIN, 200),
                ["Table 1 compares three readers on the same pages; the last read fewer pages because its OCR "
                 "step timed out on scans."])
    page.insert_text((MARGIN, 150), "Table 1: Precision and recall of three readers.", fontsize=BODY, fontname="tiro")
    x = [MARGIN, MARGIN + 130, MARGIN + 220, MARGIN + 300]
    ys = _rows(page, x, 180, TABLE_ROWS)
    right = MARGIN + 350
    for y, width in ((ys[0] - 14, 1.2), (ys[0] + 5, 0.6), (ys[-1] + 6, 1.2)):  # top, mid, bottom rules
        page.draw_line((MARGIN - 4, y), (right, y), width=width)
    _paragraphs(page, (MARGIN, ys[-1] + 40, A4[0] - MARGIN, 500),
                ["The layout reader gains most on pages with tables and columns."])


def borderless(page) -> None:
    """A paragraph and a table aligned by whitespace alone: no rules at all."""
    _paragraphs(page, (MARGIN, 80, A4[0] - MARGIN, 200),
                ["The towns of the province differ more in area than in population, as the figures below show."])
    ys = _rows(page, [MARGIN, MARGIN + 120, MARGIN + 230], 140, WHITESPACE_ROWS)
    _paragraphs(page, (MARGIN, ys[-1] + 30, A4[0] - MARGIN, 500),
                ["Figures are from the census of the year the survey was made."])


def running_header(page) -> None:
    """A one-page paper with a running head, a page number and a copyright footer around its body."""
    page.insert_text((MARGIN, 36), "Journal of Document Studies 12 (2026) 41-49", fontsize=8, fontname="tiro")
    page.insert_text((A4[0] - MARGIN - 120, 36), "Layout and Recognition 43", fontsize=8, fontname="tiro")
    page.insert_text((MARGIN, 110), "Headers Are Not Body Text", fontsize=16, fontname="hebo")
    _paragraphs(page, (MARGIN, 140, A4[0] - MARGIN, 700), [
        "A running head repeats the journal's name on every page, and a reader that keeps it puts the same "
        "words between every two paragraphs of the article.",
        "On a one-page paper there is no repetition to detect, so the reader must tell the header by its "
        "place on the page and its small type."])
    page.insert_text((A4[0] / 2 - 5, A4[1] - 30), "43", fontsize=8, fontname="tiro")
    page.insert_text((MARGIN, A4[1] - 44), "Copyright 2026 Document Studies Society. All rights reserved.", fontsize=7,
                     fontname="tiro")


HYPHENATED_LINES = [
    "The recog-",
    "nition of words split at line ends is a small matter that every",
    "reader meets. A state-of-the-",
    "art reader joins soft breaks and keeps the hyphen of a com-",
    "pound such as self-",
    "attention, which the text spells self-attention elsewhere too.",
]


def hyphenated(page) -> None:
    """A paragraph set line by line, its words broken at line ends with hyphens, soft and hard."""
    page.insert_text((MARGIN, 90), "Hyphens at Line Ends", fontsize=16, fontname="hebo")
    for i, line in enumerate(HYPHENATED_LINES):
        page.insert_text((MARGIN, 130 + i * LEAD), line, fontsize=BODY, fontname="tiro")


def rotated(page) -> None:
    """A landscape page stored portrait, its content drawn turned and the page given /Rotate 90 so
    that a viewer shows it upright (as scanners and printers store landscape pages)."""
    import pymupdf

    src = pymupdf.open()
    land = src.new_page(width=A4[1], height=A4[0])
    land.insert_text((MARGIN, 80), "A Page Turned Sideways", fontsize=16, fontname="hebo")
    _paragraphs(land, (MARGIN, 110, A4[1] - MARGIN, 500), [
        "This landscape page is stored portrait with a rotation of ninety degrees, so a viewer turns it upright.",
        "Its text must still come out in reading order, line by line."])
    page.show_pdf_page(page.rect, src, 0, rotate=90)
    page.set_rotation(90)


def figure(page) -> None:
    """A paragraph, a vector figure with labels inside its boxes, its caption, another paragraph."""
    _paragraphs(page, (MARGIN, 80, A4[0] - MARGIN, 200),
                ["The model reads a page in two stages, shown in Figure 1."])
    top = 130
    for i, label in enumerate(("Encoder", "Pooling", "Decoder")):
        x0 = MARGIN + 20 + i * 150
        page.draw_rect((x0, top + 30, x0 + 100, top + 90), color=(0, 0, 0), fill=(0.85, 0.9, 1.0), width=1)
        page.insert_text((x0 + 18, top + 65), label, fontsize=11, fontname="helv")
        if i:
            page.draw_line((x0 - 50, top + 60), (x0, top + 60), width=1)
    page.insert_text((MARGIN + 60, top + 20), "[CLS] tokens", fontsize=8, fontname="helv")
    page.insert_text((MARGIN, top + 120), "Figure 1: The two stages of the model.", fontsize=BODY, fontname="tiro")
    _paragraphs(page, (MARGIN, top + 150, A4[0] - MARGIN, 600),
                ["The first stage encodes each line; the second decodes the page's structure."])


SCAN_LINES = ["A scanned page turned upside down", "must be turned back before it is read."]


SCAN_SIZE = (420.0, 120.0)  # points: a strip of two lines
SCAN_DPI = 150  # a fax-like resolution


def upside_down_scan(page) -> None:
    """A scan (an image, no text layer) of two lines, the image turned 180 degrees."""
    import pymupdf

    src = pymupdf.open()
    typeset = src.new_page(width=SCAN_SIZE[0], height=SCAN_SIZE[1])
    for i, line in enumerate(SCAN_LINES):
        typeset.insert_text((30, 50 + 30 * i), line, fontsize=16, fontname="helv")
    pix = typeset.get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY)
    page.insert_image(page.rect, stream=pix.tobytes("png"), rotate=180)


# a scanned paper's page: a running head and footer around a title, body text and a ruled table
LAYOUT_SCAN_HEAD = "Journal of Document Studies 12 (2026) 41-49"
LAYOUT_SCAN_FOOT = "Copyright 2026 Document Studies Society. All rights reserved."
LAYOUT_SCAN_PAGE_NUMBER = "43"
LAYOUT_SCAN_TITLE = "Reading Scanned Pages by Layout"
LAYOUT_SCAN_BODY = [
    "Scanned pages have no text layer, so a reader must find the parts of the page from its pixels alone: the "
    "running head, the body, the tables and the footer with its page number.",
    "A layout model labels each part, and every line the recogniser reads is given the label of the box that "
    "holds it, so the header and the footer can be left out while no line of the body is lost.",
]
LAYOUT_SCAN_TAIL = "The table above was read from the boxes of its cells."


def layout_scan(page) -> None:
    """A scan (an image, no text layer) of a paper's page: a running head at the top, a title,
    two body paragraphs, a table ruled above and below (`TABLE_ROWS`), a closing sentence, and a
    copyright line and page number at the bottom."""
    import pymupdf

    src = pymupdf.open()
    typeset = src.new_page(width=A4[0], height=A4[1])
    typeset.insert_text((MARGIN, 36), LAYOUT_SCAN_HEAD, fontsize=8, fontname="tiro")
    typeset.insert_text((MARGIN, 110), LAYOUT_SCAN_TITLE, fontsize=16, fontname="hebo")
    y = _paragraphs(typeset, (MARGIN, 140, A4[0] - MARGIN, 420), LAYOUT_SCAN_BODY)
    ys = _rows(typeset, [MARGIN, MARGIN + 130, MARGIN + 220, MARGIN + 300], y + 30, TABLE_ROWS)
    for rule in (ys[0] - 14, ys[0] + 5, ys[-1] + 6):
        typeset.draw_line((MARGIN - 4, rule), (MARGIN + 350, rule), width=0.8)
    _paragraphs(typeset, (MARGIN, ys[-1] + 40, A4[0] - MARGIN, 700), [LAYOUT_SCAN_TAIL])
    typeset.insert_text((MARGIN, A4[1] - 44), LAYOUT_SCAN_FOOT, fontsize=7, fontname="tiro")
    typeset.insert_text((A4[0] / 2 - 5, A4[1] - 30), LAYOUT_SCAN_PAGE_NUMBER, fontsize=8, fontname="tiro")
    pix = typeset.get_pixmap(dpi=SCAN_DPI, colorspace=pymupdf.csGRAY)
    page.insert_image(page.rect, stream=pix.tobytes("png"))


SCANS = ("eval_upside_down_scan.pdf", "eval_layout_scan.pdf")  # read by OCR: 5-10 s a page on this machine

BUILDERS = {"eval_two_columns.pdf": two_columns, "eval_booktabs.pdf": booktabs, "eval_borderless.pdf": borderless,
            "eval_running_header.pdf": running_header, "eval_hyphenated.pdf": hyphenated,
            "eval_rotated.pdf": rotated, "eval_figure.pdf": figure, "eval_upside_down_scan.pdf": upside_down_scan,
            "eval_layout_scan.pdf": layout_scan}


def write_eval_set(folder: str | Path, names: list[str] | None = None) -> list[Path]:
    """The eval set's PDFs written into `folder` (all, or those `names`); their paths."""
    import pymupdf

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names or BUILDERS:
        doc = pymupdf.open()
        # fixed metadata and no random /ID: the same bytes every time
        doc.set_metadata({"producer": "curate eval_set", "creator": "curate eval_set", "creationDate": "",
                          "modDate": ""})
        size = SCAN_SIZE if BUILDERS[name] is upside_down_scan else A4
        BUILDERS[name](doc.new_page(width=size[0], height=size[1]))
        paths.append(folder / name)
        doc.save(paths[-1], no_new_id=True)
    return paths


if __name__ == "__main__":
    for p in write_eval_set(sys.argv[1] if len(sys.argv) > 1 else "eval_set"):
        print(p)
