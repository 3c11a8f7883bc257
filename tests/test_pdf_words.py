"""Lines joined into paragraphs (`words.join_lines`) and line-end hyphens decided by the page,
then by the whole document (`words.resolve`, `words.reresolve`, through the reducers)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from curate.modalities.pdf import words
from curate.modalities.pdf.assemble import document_markdown, page_markdown
from curate.modalities.pdf.records import PageRecord, RegionRecord
from pdf_rows import page_rows
from pdf_samples import REAL

SHY = words.SOFT_HYPHEN


def test_lines_join_with_a_marker_at_each_possible_soft_break():
    assert words.join_lines(["A word that is hyph-", "enated here,", "and  spaced."]) == \
        f"A word that is hyph{SHY}enated here, and spaced."
    assert words.join_lines(["We use TABLE-", "FORMER: it"]) == f"We use TABLE{SHY}FORMER: it"
    assert words.join_lines(["a hy\u2010", "phen"]) == f"a hy{SHY}phen"  # U+2010 HYPHEN
    assert words.join_lines(["well-", "Known stays"]) == "well- Known stays"  # a capital after a lowercase word
    assert words.join_lines(["GPT-", "4 and x-", "2"]) == "GPT- 4 and x- 2"  # a digit: no word broken
    assert words.join_lines([f"a soft{SHY}", "ware"]) == "a software"  # the PDF's own soft hyphen
    assert words.join_lines(["日本", "語の文", "章"]) == "日本語の文章"
    assert words.join_lines(["the ﬁrst ﬂow, ﬀ ﬃ ﬄ ﬅ ﬆ"]) == "the first flow, ff ffi ffl st st"
    assert words.join_lines(["", "  "]) == ""


@pytest.mark.parametrize("left, right, others, word", [
    ("TABLE", "FORMER", "TableFormer is a model", "TABLEFORMER"),  # the joined form occurs
    ("table", "text", "table-text pairs and table-text QA, one tabletext", "table-text"),  # the more frequent
    ("self", "attention", "we use self-attention", "self-attention"),  # only the hyphenated form occurs
    ("self", "attention", "", "self-attention"),  # neither: a prefix that keeps its hyphen
    ("state-of-the", "art", "", "state-of-the-art"),  # neither: a compound broken at its hyphen
    ("exam", "ple", "", "example"),  # neither: a soft break
])
def test_a_line_end_hyphen_is_decided_by_the_other_occurrences(left, right, others, word):
    assert words.decide(left, right, words.vocabulary(others)) == word
    text, spans = words.resolve(f"{others} and {left}{SHY}{right}.")
    assert text == f"{others} and {word}." and SHY not in text
    (start, split, end), = spans
    assert (text[start:split], text[start:end]) == (left, word)


def test_the_document_decides_again_with_every_page_s_words():
    page = PageRecord(path="a.pdf", index=0, width_pt=600, height_pt=800, text_usable=True, text_reason="ok")
    first = RegionRecord(kind="text", bbox=(0, 0, 1, 1), order=0, content=f"a table{SHY}text model, a TABLE{SHY}FORMER.")
    second = RegionRecord(kind="text", bbox=(0, 0, 1, 1), order=0, content="Its table-text pairs; TableFormer")
    rows = page_markdown([(page, [first], []), (page, [second], [])])
    assert rows[0].markdown == "a tabletext model, a TABLEFORMER."  # the page alone: soft breaks
    assert all(SHY not in r.markdown for r in rows) and len(rows[0].hyphens) == 2
    (doc,) = document_markdown([rows])
    assert doc.markdown == "a table-text model, a TABLEFORMER.\n\nIts table-text pairs; TableFormer"


def test_the_tableformer_paper_keeps_its_hyphens_and_joins_its_soft_breaks(monkeypatch):
    """Found in issue 23: `TABLE- FORMER` (8 times), `tabletext` (3) beside `table-text` (22),
    `selfattention`, `state-of-theart`: the page-level joiner decided each break alone."""
    rows = page_rows(REAL / "mineru_demo3_tableformer.pdf", monkeypatch)
    (doc,) = document_markdown([rows])
    found = Counter(w.lower() for w in re.findall(r"[\w-]+(?:- \w+)?", doc.markdown))
    assert found["table- former"] == found["tabletext"] == found["selfattention"] == found["state-of-theart"] == 0
    assert found["table-text"] >= 22 and found["self-attention"] >= 7 and found["state-of-the-art"] >= 4
    assert SHY not in doc.markdown and all(SHY not in r.markdown for r in rows)
