"""Tables without rulings (issue 23, point 3): `tables.table_content` on the boxes PyMuPDF's layout
model gives for real tables, and on PDFs written here whose structure is known; and
`tables.table_from_boxes` on OCR boxes. Expected cells are written by hand from the rendered
pages (the text layer writes small caps and subscripts as plain letters: "TAPASBASE")."""

from __future__ import annotations

import re

import pymupdf
import pytest
from curate.errors import EngineError
from curate.modalities.pdf.assemble import merge_tables
from curate.modalities.pdf.tables import table_content, table_from_boxes
from pdf_samples import REAL

TABLEFORMER, PG9 = "mineru_demo3_tableformer.pdf", "docling_2305.03393v1-pg9.pdf"
REDBOOK, CHINESE = "docling_redp5110_sampled.pdf", "pymupdf_chinese_tables.pdf"
# boxes pymupdf-layout's model gives for these tables (page.get_layout(); layout_information),
# written out so the tests need no model run
TABLE2 = (83.1, 75.7, 511.9, 226.8)  # tableformer p6: booktabs, a spanning header, a vertical rule
TABLE3 = (96.2, 302.2, 264.0, 438.4)  # tableformer p6: booktabs, rules every two rows
TABLES_6_7 = (77.6, 75.7, 518.4, 234.4)  # tableformer p8: one box over two tables side by side
PG9_TABLE = (144.6, 341.4, 470.8, 466.2)  # rules every two rows, cells centered across both
REDBOOK_P9 = (70.8, 400.5, 536.8, 715.9)  # ruled, headers written upright
REDBOOK_P11 = (142.8, 110.4, 536.2, 197.1)  # ruled, a cell of two lines
CHINESE_T1, CHINESE_T2 = (109.1, 175.8, 496.6, 392.7), (90.6, 561.2, 505.5, 750.9)


def _page(name: str, number: int):
    return pymupdf.open(REAL / name)[number]


def _markdown(md: str) -> list[list[str]]:
    """A Markdown table's rows of cells (the --- line dropped)."""
    lines = md.splitlines()
    assert len(lines) >= 3 and set(lines[1].replace(" ", "")) <= set("|-"), md
    return [[c.strip() for c in ln.strip()[1:-1].split(" | ")] for ln in [lines[0], *lines[2:]]]


def _html(html: str) -> list[list[tuple[str, int, int]]]:
    """An HTML table's rows of (text, rowspan, colspan)."""
    assert html.startswith("<table>") and html.endswith("</table>"), html
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", html):
        cells = re.findall(r"<td((?: \w+=\"\d+\")*)>(.*?)</td>", row)
        rows.append([(text, int((re.search(r'rowspan="(\d+)"', a) or [0, 1])[1]),
                      int((re.search(r'colspan="(\d+)"', a) or [0, 1])[1])) for a, text in cells])
    return rows


def _single(*texts: str) -> list[tuple[str, int, int]]:
    return [(t, 1, 1) for t in texts]


# ---- real tables ------------------------------------------------------------------------------
def test_booktabs_table_2_has_its_spanning_headers_and_one_row_a_line():
    # before issue 23 this table came out as paragraphs with two rows a line
    rows = _html(table_content(_page(TABLEFORMER, 5), pymupdf, TABLE2))
    assert rows[0] == [("", 1, 1), ("Before Perturb", 1, 5), ("After Perturb", 1, 4)]
    test = ["test", "testsimple", "testcomplex", "testsmall"]
    assert rows[1] == _single("", "dev", *test, *test)
    body = [
        ["Eisenschlos et al. (2020)", "81.0", "81.0", "92.3", "75.6", "83.9", "–", "–", "–", "–"],
        ["Eisenschlos et al. (2021)", "–", "81.4", "–", "–", "–", "–", "–", "–", "–"],
        ["TAPASBASE", "72.8", "72.3", "84.8", "66.2", "74.4", "71.2", "83.4", "65.2", "72.5"],
        ["TABLEFORMERBASE", "75.1", "75.0", "88.2", "68.5", "77.1", "75.0", "88.2", "68.5", "77.1"],
        ["TAPASLARGE", "74.7", "74.5", "86.6", "68.6", "76.8", "73.7", "86.0", "67.7", "76.1"],
        ["TABLEFORMERLARGE", "77.2", "77.0", "90.2", "70.5", "80.3", "77.0", "90.2", "70.5", "80.3"],
        ["TAPASBASE inter", "78.4", "77.9", "90.1", "71.9", "80.5", "76.8", "89.5", "70.5", "79.7"],
        ["TABLEFORMERBASE inter", "79.7", "79.2", "91.6", "73.1", "81.7", "79.2", "91.6", "73.1", "81.7"],
        ["TAPASLARGE inter", "80.6", "80.6", "92.0", "74.9", "83.1", "79.2", "91.7", "73.0", "83.0"],
        ["TABLEFORMERLARGE inter", "82.0", "81.6", "93.3", "75.9", "84.6", "81.6", "93.3", "75.9", "84.6"],
    ]
    assert rows[2:] == [_single(*r) for r in body]


def test_booktabs_table_3_is_markdown_with_one_row_a_line():
    assert _markdown(table_content(_page(TABLEFORMER, 5), pymupdf, TABLE3)) == [
        ["Model", "dev", "test"],
        ["Herzig et al. (2020)", "–", "48.8"], ["Eisenschlos et al. (2021)", "–", "51.5"],
        ["TAPASBASE", "23.6", "24.1"], ["TABLEFORMERBASE", "34.4", "34.8"],
        ["TAPASLARGE", "40.8", "41.7"], ["TABLEFORMERLARGE", "42.5", "43.9"],
        ["TAPASBASE inter-sqa", "44.8", "45.1"], ["TABLEFORMERBASE inter-sqa", "46.7", "46.5"],
        ["TAPASLARGE inter-sqa", "49.9", "50.4"], ["TABLEFORMERLARGE inter-sqa", "51.3", "52.6"]]


def test_pairs_of_rows_between_rules_are_two_rows_with_the_shared_cells_spanning_both():
    # before issue 23 each pair (OTSL, HTML) was one row: "OTSL HTML | 0.965 0.969 | ..."
    rows = _html(table_content(_page(PG9, 0), pymupdf, PG9_TABLE))
    assert rows[0] == [("# enc-layers", 2, 1), ("# dec-layers", 2, 1), ("Language", 2, 1), ("TEDs", 1, 3),
                       ("mAP (0.75)", 2, 1), ("Inference time (secs)", 2, 1)]
    assert rows[1] == _single("simple", "complex", "all")
    values = [("6", "6", "0.965 0.934 0.955 0.88 2.73", "0.969 0.927 0.955 0.857 5.39"),
              ("4", "4", "0.938 0.904 0.927 0.853 1.97", "0.952 0.909 0.938 0.843 3.77"),
              ("2", "4", "0.923 0.897 0.915 0.859 1.91", "0.945 0.901 0.931 0.834 3.81"),
              ("4", "2", "0.952 0.92 0.942 0.857 1.22", "0.944 0.903 0.931 0.824 2")]
    expected = []
    for enc, dec, otsl, html in values:
        expected += [[(enc, 2, 1), (dec, 2, 1), *_single("OTSL", *otsl.split())], _single("HTML", *html.split())]
    assert rows[2:] == expected


def test_two_tables_side_by_side_in_one_box_come_out_as_two():
    left, right = table_content(_page(TABLEFORMER, 7), pymupdf, TABLES_6_7).split("\n\n")
    rows = _html(left)
    assert rows[:2] == [[("", 1, 1), ("Befor Perturb", 1, 2), ("After Perturb", 1, 2)], _single("", "ALL", "SEQ", "ALL", "V P")]
    body = [("TAPASBASE", "61.1", "31.3", "57.4", "14.0%"), ("TAPASBASE 1p", "63.4", "34.6", "63.4", "9.9%"),
            ("TAPASBASE 2p", "64.6", "35.6", "64.5", "8.4%"), ("TAPASBASE 4p", "65.1", "37.0", "65.0", "8.1%"),
            ("TAPASBASE 8p", "65.1", "37.3", "64.3", "7.2%"), ("TAPASBASE 16p", "62.4", "33.6", "62.2", "7.0%"),
            ("TABLEFORMERBASE", "66.7", "39.7", "66.7", "0.1%")]
    assert rows[2:9] == [_single(*r) for r in body]  # the box also holds Table 6's caption: a last row
    rows = _markdown(right)
    assert rows[:4] == [["", "ALL", "SEQ"], ["TABLEFORMERBASE", "62.1", "38.4"], ["- Same Row", "32.1", "2.8"],
                        ["- Same Column", "62.1", "37.7"]]
    assert rows[-1] == ["- All Column Related (# 2, 4, 6)", "54.5", "29.3"] and len(rows) == 15


def test_ruled_tables_keep_their_cells_upright_headers_and_multi_line_cells():
    rows = _markdown(table_content(_page(REDBOOK, 8), pymupdf, REDBOOK_P9))
    assert rows[0] == ["User action", "*JOBCTL", "QIBM_DB_SECADM", "QIBM_DB_SQLADM", "QIBM_DB_SYSMON", "No Authority"]
    assert rows[1] == ["SET CURRENT DEGREE (SQL statement)", "X", "", "X", "", ""]
    assert rows[4] == ["STRDBMON or ENDDBMON commands targeting a job that matches the current user", "X", "", "X", "X", "X"]
    assert len(rows) == 13 and all(len(r) == 6 for r in rows)
    rows = _markdown(table_content(_page(REDBOOK, 10), pymupdf, REDBOOK_P11))
    assert [r[0] for r in rows] == ["Special register", "USER or SESSION_USER", "CURRENT_USER", "SYSTEM_USER"]
    assert rows[2][1] == ("The effective user of the thread including adopted authority. When no adopted "
                          "authority is present, this has the same value as USER.")


def test_chinese_ruled_tables_have_multi_line_cells_as_one_cell():
    page = _page(CHINESE, 0)
    rows = _markdown(table_content(page, pymupdf, CHINESE_T1))
    meaning = "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低"
    both = "中诚信国际信用评级有限责任公司、联合资信评估有限公司"
    assert rows == [["年份", "主体信用评级", "涵义", "评级机构", "评级展望"],
                    ["2023", "AA+", meaning, both, "稳定"], ["2022", "AA+", meaning, both, "稳定"],
                    ["2021", "AA+", meaning, "联合资信评估有限公司", "稳定"], ["2020", "AA+", meaning, "联合资信评估有限公司", "稳定"]]
    rows = _markdown(table_content(page, pymupdf, CHINESE_T2))
    assert rows[0] == ["序号", "金融机构名称", "授信总额", "已使用情况", "剩余额度"]
    assert rows[2] == ["2", "徽商银行南京中山北路支行", "330,435.30", "256,735.30", "73,700.00"]
    assert rows[-1] == ["11", "上海银行盐城分行", "46,265.00", "46,265.00", "0.00"] and len(rows) == 12


def test_a_box_of_prose_or_of_nothing_is_not_a_table():
    page = _page(PG9, 0)
    assert table_content(page, pymupdf, (140, 180, 480, 280)) == ""  # a paragraph
    assert table_content(_page(TABLEFORMER, 5), pymupdf, (290, 300, 530, 700)) == ""  # a text column
    assert table_content(page, pymupdf, (0, 0, 40, 40)) == ""  # empty margin


# ---- generated tables ------------------------------------------------------------------------
def _write(page, x: float, y: float, text: str, right: bool = False, size: float = 10) -> None:
    width = pymupdf.get_text_length(text, fontsize=size) if right else 0.0
    page.insert_text((x - width, y), text, fontsize=size)


def test_a_borderless_whitespace_table_with_a_wrapped_cell():
    page = pymupdf.open().new_page(width=400, height=300)
    lines = [(60, "Name", "Description", "Qty"), (74, "bolt", "steel, zinc plated", "120"),
             (88, "nut", "brass, for the M4", "75"), (98, "", "bolts of row one", ""), (112, "washer", "nylon", "300")]
    for y, name, text, qty in lines:
        _write(page, 40, y, name)
        _write(page, 120, y, text)
        _write(page, 300, y, qty, right=True)
    assert _markdown(table_content(page, pymupdf, (35, 48, 305, 116))) == [
        ["Name", "Description", "Qty"], ["bolt", "steel, zinc plated", "120"],
        ["nut", "brass, for the M4 bolts of row one", "75"], ["washer", "nylon", "300"]]


def _booktabs(page, rules: list[float], x0: float = 40, x1: float = 360) -> None:
    for y in rules:
        page.draw_line((x0, y), (x1, y), width=0.6)


def test_a_booktabs_table_with_a_two_line_header_cell():
    page = pymupdf.open().new_page(width=400, height=300)
    _booktabs(page, [40, 80, 130])
    _write(page, 45, 56, "Model")
    _write(page, 300, 56, "Time", right=True)
    _write(page, 300, 68, "(ms)", right=True)
    _write(page, 200, 56, "Score", right=True)
    for k, (model, score, time) in enumerate([("base", "71.2", "12"), ("large", "74.9", "31"), ("huge", "75.3", "88")]):
        y = 95 + 13 * k
        _write(page, 45, y, model)
        _write(page, 200, y, score, right=True)
        _write(page, 300, y, time, right=True)
    assert _markdown(table_content(page, pymupdf, (42, 44, 358, 126))) == [
        ["Model", "Score", "Time (ms)"], ["base", "71.2", "12"], ["large", "74.9", "31"], ["huge", "75.3", "88"]]


def _centered(page, x0: float, x1: float, y: float, text: str) -> None:
    _write(page, (x0 + x1 - pymupdf.get_text_length(text, fontsize=10)) / 2, y, text)


def test_a_spanning_header_gets_colspan_and_its_neighbours_rowspan():
    page = pymupdf.open().new_page(width=400, height=300)
    _booktabs(page, [40, 80, 130])
    page.draw_line((150, 60), (250, 60), width=0.4)  # cmidrule under "Accuracy"
    _write(page, 45, 64, "Model")
    _centered(page, 170, 230 + pymupdf.get_text_length("test", fontsize=10), 56, "Accuracy")
    _centered(page, 280, 330 + pymupdf.get_text_length("gpu", fontsize=10), 56, "Speed")  # no rule under it
    for x, head in [(170, "dev"), (230, "test"), (280, "cpu"), (330, "gpu")]:
        _write(page, x, 72, head)
    for k, (model, *cells) in enumerate([("base", "70.1", "69.8", "3.1", "0.4"), ("large", "74.0", "73.5", "9.6", "1.2")]):
        for x, cell in zip([45, 170, 230, 280, 330], [model, *cells]):
            _write(page, x, 95 + 13 * k, cell)
    rows = _html(table_content(page, pymupdf, (42, 44, 358, 126)))
    assert rows == [[("Model", 2, 1), ("Accuracy", 1, 2), ("Speed", 1, 2)], _single("dev", "test", "cpu", "gpu"),
                    _single("base", "70.1", "69.8", "3.1", "0.4"), _single("large", "74.0", "73.5", "9.6", "1.2")]


# ---- OCR boxes, and tables continued across pages --------------------------------------------
def test_table_from_ocr_boxes_in_pixels():
    boxes = [(100, 40, 300, 64), (500, 40, 700, 64),  # a header over two columns each
             (20, 80, 70, 100), (100, 80, 180, 100), (220, 80, 300, 100), (500, 80, 580, 100), (620, 80, 700, 100),
             (20, 120, 50, 140), (100, 120, 180, 140), (220, 120, 300, 140), (500, 120, 580, 140),
             [(620, 120), (700, 120), (700, 140), (620, 140)]]  # a box as four corner points
    texts = ["Before", "After", "Model", "dev", "test", "dev", "test", "A", "1.0", "2.0", "3.0", "4.0"]
    assert _html(table_from_boxes(boxes, texts)) == [
        [("", 1, 1), ("Before", 1, 2), ("After", 1, 2)], _single("Model", "dev", "test", "dev", "test"),
        _single("A", "1.0", "2.0", "3.0", "4.0")]
    grid = [(20, 10, 80, 30), (200, 10, 260, 30), (20, 50, 80, 70), (200, 50, 260, 70), (200, 90, 260, 110)]
    assert _markdown(table_from_boxes(grid, ["Key", "Value", "a", "1", "  "])) == [["Key", "Value"], ["a", "1"]]
    assert table_from_boxes([], []) == "" and table_from_boxes([(0, 0, 10, 10)], ["alone"]) == ""
    with pytest.raises(EngineError, match="2 boxes but 1 texts"):  # the caller's bug, named
        table_from_boxes(grid[:2], ["Key"])
    with pytest.raises(EngineError, match="neither"):
        table_from_boxes([(1, 2, 3)], ["x"])


def test_table_from_what_rapidocr_reads_on_a_scanned_table():
    pytest.importorskip("rapidocr_onnxruntime", reason="rapidocr-onnxruntime (the pdf extra) is not installed")
    import numpy as np
    from curate.models.rapidocr import RapidOcrModel

    page = pymupdf.open().new_page(width=320, height=120)
    rows = [("Name", "Count", "Price"), ("apple", "12", "3.50"), ("melon", "4", "7.25"), ("cherry", "250", "9.00")]
    for k, row in enumerate(rows):
        for x, cell in zip((20, 140, 240), row):
            _write(page, x, 25 + 22 * k, cell, size=13)
    pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csRGB)  # a scan of it: pixels only
    rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()
    read = RapidOcrModel().read(rgb)
    assert _markdown(table_from_boxes([r["box"] for r in read], [r["text"] for r in read])) == [list(r) for r in rows]


def test_tables_continued_on_the_next_page_are_still_merged():
    doc = pymupdf.open()
    blocks = []
    for rows in ([("Item", "Qty"), ("bolt", "120"), ("nut", "75")], [("Item", "Qty"), ("washer", "300")]):
        page = doc.new_page(width=300, height=200)
        for k, (item, qty) in enumerate(rows):
            _write(page, 40, 40 + 14 * k, item)
            _write(page, 200, 40 + 14 * k, qty, right=True)
        blocks.append([table_content(page, pymupdf, (35, 28, 205, 50 + 14 * len(rows)))])
    merge_tables(blocks)
    assert _markdown(blocks[0][0]) == [["Item", "Qty"], ["bolt", "120"], ["nut", "75"], ["washer", "300"]] and blocks[1] == []
    html = table_content(_page(PG9, 0), pymupdf, PG9_TABLE)
    pages = [[html], [html]]
    merge_tables(pages)  # the repeated first header row is dropped, the body rows follow
    assert pages[1] == [] and pages[0][0].count("TEDs") == 1 and pages[0][0].count("OTSL") == 8


@pytest.mark.parametrize("box", [TABLE2, PG9_TABLE])
def test_a_layout_box_a_little_off_gives_the_same_table(box):
    page = _page(TABLEFORMER, 5) if box == TABLE2 else _page(PG9, 0)
    x0, y0, x1, y1 = box
    expected = table_content(page, pymupdf, box)
    assert table_content(page, pymupdf, (x0 - 1.5, y0 + 1, x1 + 1.5, y1 - 1)) == expected
    assert table_content(page, pymupdf, box, drawings=page.get_cdrawings()) == expected  # read once by the caller
