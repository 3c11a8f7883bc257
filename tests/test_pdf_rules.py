"""The PDF modality's rules on plain values, no PDF needed: the text-layer verdict (routing),
reading order, line joining, tables, page and document Markdown, and the F1 helper of the tests."""

from __future__ import annotations

from dataclasses import replace

import pytest
from curate.modalities.pdf import assemble
from curate.modalities.pdf.assemble import (
    document_markdown,
    drop_running_lines,
    merge_tables,
    page_markdown,
)
from curate.modalities.pdf.order import group_lines, reading_order
from curate.modalities.pdf.records import PageMarkdown, PageRecord, RegionRecord
from curate.modalities.pdf.regions import (
    _list_items,
    scan_regions,
    table_markdown,
)
from curate.modalities.pdf.words import join_lines, resolve
from curate.modalities.pdf.textlayer import BLANK, NO_TEXT, OK, judge
from pdf_tokens import f1, tokens

PROSE = "The quick brown fox jumps over the lazy dog, twice: 1 2. " * 3


# ---- routing: the text layer's verdict -------------------------------------------------------
@pytest.mark.parametrize("text, cover, drawings, route, reason", [
    (PROSE, 0.0, 0, "text_layer", OK),
    ("Contents . . . . . . . . . . . 7\nPreface . . . . . . . . . . 9", 0.0, 0, "text_layer", OK),  # dot leaders
    ("あいうえお日本語", 0.0, 2, "text_layer", OK),  # too short to judge: kept
    ("", 0.0, 2, "empty", BLANK),  # a border and a rule
    ("", 0.9, 0, "ocr", NO_TEXT),  # a scan
    ("", 0.0, 400, "ocr", NO_TEXT),  # text drawn as outlines
    ("\ufffd" * 30 + "abc", 0.0, 0, "ocr", "garbage: 91% of its characters are U+FFFD"),
    ("\ue000\ue001\ue002 " * 10 + "word", 0.0, 0, "ocr", "garbage: 88% of its characters are U+FFFD, private-use"),
    ("\x01\x02\x03\x04" * 8, 0.0, 0, "ocr", "garbage: 100%"),
    ("#$%&'()*+,-./:;<=>?@[]^_`{|}~" * 2 + "ab", 0.0, 0, "ocr", "garbage: only 3% of its characters are letters"),
    ("12", 0.95, 0, "ocr", "scan: images cover 95% of the page"),  # a page number on a scan
    (PROSE * 2, 0.95, 0, "text_layer", OK),  # a scan with its own OCR layer
])
def test_the_verdict_routes_a_page(text, cover, drawings, route, reason):
    verdict = judge(text, image_cover=cover, drawings=drawings)
    assert verdict.route == route and verdict.reason.startswith(reason), verdict
    assert verdict.usable == (route == "text_layer")


def test_forced_ocr_takes_every_page_with_something_on_it():
    assert judge(PROSE, force_ocr=True).route == "ocr" and judge(PROSE, force_ocr=True).reason == "forced OCR"
    assert judge("", image_cover=0.5, force_ocr=True).route == "ocr"
    assert judge("", force_ocr=True).route == "empty"  # nothing to read


# ---- reading order -------------------------------------------------------------------------------
def test_two_columns_under_a_full_width_title_read_column_by_column():
    boxes = [(300, 120, 550, 200), (50, 40, 550, 80), (50, 120, 280, 200), (50, 210, 280, 300),
             (300, 210, 550, 300), (50, 320, 550, 360)]
    # title, left top, left bottom, right top, right bottom, then a full-width footer paragraph
    assert reading_order(boxes) == [1, 2, 3, 0, 4, 5]
    assert reading_order(boxes, right_to_left=True) == [1, 0, 4, 2, 3, 5]
    assert reading_order([]) == []


def test_one_column_reads_top_to_bottom_and_boxes_on_a_line_group_left_to_right():
    lines = [(50, 100 + 20 * i, 500 - 30 * (i % 3), 115 + 20 * i) for i in range(6)]
    assert reading_order(lines) == list(range(6))
    assert group_lines([(200, 10, 300, 20), (10, 11, 150, 21), (10, 40, 90, 50)]) == [[1, 0], [2]]


# ---- text of a block ----------------------------------------------------------------------------
def test_lines_join_with_spaces_dehyphenated_and_cjk_without_spaces():
    marked = join_lines(["A word that is hyph-", "enated here,", "and  spaced."])  # the page or document decides
    assert resolve(marked)[0] == "A word that is hyphenated here, and spaced."
    assert join_lines(["well-", "Known stays"]) == "well- Known stays"  # a capital: not a split word
    assert join_lines(["日本", "語の文", "章"]) == "日本語の文章"
    assert join_lines(["", "  "]) == ""


def test_list_items_drop_bullets_and_keep_numbers():
    lines = ["• first item", "continued", "\ufffd second", "3. third", "[4] fourth"]
    assert _list_items(lines) == ["first item continued", "second", "3. third", "[4] fourth"]


def test_a_table_is_markdown_with_a_header_row():
    md = table_markdown([["Name", "Value"], ["a|b", " 1\n2 "], [None, None], ["c", None]])
    assert md == "| Name | Value |\n| --- | --- |\n| a\\|b | 1 2 |\n| c |  |"
    assert table_markdown([["only one row", "x"]]) == "" and table_markdown([["a"], ["b"]]) == ""


def test_only_a_page_routed_to_ocr_gets_a_full_page_region_to_read():
    page = PageRecord(path="a.pdf", index=0, width_pt=600, height_pt=800)
    pages = [replace(page, text_usable=True, text_reason="ok"), replace(page, text_reason="no text layer"),
             replace(page, text_reason=BLANK)]
    layer, scan, blank = scan_regions(pages)
    assert layer == [] and blank == []
    assert [(r.kind, r.bbox, r.order, r.content) for r in scan] == [("text", (0.0, 0.0, 600, 800), 0, None)]


# ---- page Markdown -------------------------------------------------------------------------------
def _page(**kw) -> PageRecord:
    return PageRecord(path="a.pdf", index=0, width_pt=600, height_pt=800, text_usable=True, text_reason="ok", **kw)


def _region(kind: str, order: int, content: str | None = "", **kw) -> RegionRecord:
    return RegionRecord(kind=kind, bbox=(0, order * 10, 100, order * 10 + 5), order=order, content=content, **kw)


def test_page_markdown_writes_each_kind_in_reading_order():
    regions = [_region("text", 1, "Body text."), _region("title", 0, "Big  title", level=1),
               _region("list", 2, "one\n2. two"), _region("code", 3, "x = 1"), _region("code", 4, "y = 2"),
               _region("figure", 5), _region("page_number", 6, "12"), _region("header", 7, "Running head"),
               _region("title", 8, "Untold level"), _region("formula", 9, "E = mc^2"),
               _region("table", 10, "| a | b |\n| --- | --- |\n| 1 | 2 |")]
    (row,) = page_markdown([(_page(), regions[:6], regions[6:])])
    assert row.markdown == ("# Big title\n\nBody text.\n\n- one\n2. two\n\n```\nx = 1\ny = 2\n```\n\n"
                            f"{assemble.FIGURE}\n\n## Untold level\n\n$$\nE = mc^2\n$$\n\n| a | b |\n| --- | --- |\n| 1 | 2 |")
    assert (row.route, row.reason, row.regions, row.chars) == ("text_layer", "ok", 11, len(row.markdown))


def test_the_route_of_a_page_follows_its_verdict_and_its_regions():
    scan = PageRecord(path="a.pdf", index=0, width_pt=600, height_pt=800, text_reason="no text layer")
    ocr = _region("text", 0, "read", source="rapidocr", seconds=2.5)
    rows = page_markdown([(scan, [], [ocr]), (PageRecord(path="a.pdf", index=1, width_pt=1, height_pt=1,
                                                         text_reason=BLANK), [], [])])
    assert [(r.route, r.markdown, r.seconds) for r in rows] == [("ocr", "read", 2.5), ("empty", "", 0.0)]


# ---- document Markdown ----------------------------------------------------------------------------
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def test_running_headers_and_footers_are_dropped_and_content_stays():
    body = [[f"{WORDS[p]} {WORDS[(p + k) % 16]} paragraph {k}." for k in range(3)] for p in range(12)]
    pages = [[f"Chapter {1 + p // 6}: Things", *body[p], f"Page {p + 1}"] for p in range(12)]
    pages[5][2] = "Chapter 1: Things"  # the same text in the middle of a page is content
    kept = drop_running_lines(pages)
    assert kept[5][1] == "Chapter 1: Things" and len(kept[5]) == 3
    assert all(kept[p] == body[p] for p in range(12) if p != 5)  # header and page number gone everywhere
    alternating = [[f"Left head {p}" if p % 2 else "Right head", *body[p]] for p in range(8)]
    assert [b[0] for b in drop_running_lines(alternating)] == [body[p][0] for p in range(8)]
    assert drop_running_lines([["Title"], ["Title"]]) == [["Title"], ["Title"]]  # two pages: too few to tell


def test_a_table_continued_on_the_next_page_is_merged():
    head = "| a | b |\n| --- | --- |"
    pages = [["Intro", head + "\n| 1 | 2 |"], [head + "\n| 3 | 4 |", "After"], ["| x | y | z |\n| --- | --- | --- |"]]
    merge_tables(pages)
    assert pages == [["Intro", head + "\n| 1 | 2 |\n| 3 | 4 |"], ["After"], ["| x | y | z |\n| --- | --- | --- |"]]
    other = [["| a | b |\n| --- | --- |\n| 1 | 2 |"], ["| c | d |\n| --- | --- |\n| 3 | 4 |"]]
    merge_tables(other)  # a different first row: the continuation's header row is data
    assert other == [["| a | b |\n| --- | --- |\n| 1 | 2 |\n| c | d |\n| 3 | 4 |"], []]
    html = [["<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>"],
            ["<table><tr><th>a</th><th>b</th></tr><tr><td>3</td><td>4</td></tr></table>", "Text"]]
    merge_tables(html)
    assert html[0] == ["<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr></table>"]
    three = [["| a | b |\n| --- | --- |\n| 1 | 2 |"], ["Text"], ["| a | b |\n| --- | --- |\n| 3 | 4 |"]]
    merge_tables(three)  # not consecutive: kept apart
    assert three[2] == ["| a | b |\n| --- | --- |\n| 3 | 4 |"]


def test_the_document_joins_its_pages_in_order_and_counts_routes():
    rows = [PageMarkdown(markdown="# The Title\n\nFirst page.", route="text_layer", chars=0),
            PageMarkdown(markdown="", route="empty", chars=0),
            PageMarkdown(markdown="Scanned page.", route="ocr", chars=0)]
    (doc,) = document_markdown([rows])
    assert doc.markdown == "# The Title\n\nFirst page.\n\nScanned page." and doc.chars == len(doc.markdown)
    assert (doc.pages, doc.title) == (3, "The Title")
    assert doc.routes == {"text_layer": 1, "ocr": 1, "layout": 0, "empty": 1}
    assert document_markdown([[]])[0].markdown == ""


# ---- the tests' F1 helper -----------------------------------------------------------------------------
def test_tokens_and_f1_over_multisets():
    assert tokens("Hello, WORLD_42 ﬁne! 日本語 مرحبا") == ["hello", "world", "42", "fine", "日", "本", "語", "مرحبا"]
    assert f1("a b c", "a b c") == 1.0 and f1("", "") == 1.0 and f1("x", "y") == 0.0
    assert f1("a a b", "a b") == pytest.approx(0.8)  # precision 2/3, recall 1
