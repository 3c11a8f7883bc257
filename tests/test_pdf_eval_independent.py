"""The independent eval set (curate.modalities.pdf.eval_independent): its rules on a tiny PDF
written here, and the committed tests/data/pdf_eval/independent.jsonl is what the generator
makes from the ground truth in ../shared/data/pdf-parse-bench-2025-q4, byte for byte."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from curate.errors import InputError
from curate.modalities.pdf import eval as ev
from curate.modalities.pdf import eval_independent as ei

DATA = Path(__file__).resolve().parent / "data" / "pdf_eval"
COMMITTED = DATA / "independent.jsonl"
BENCH = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdf-parse-bench-2025-q4"


def _pdf(tmp_path: Path, pages: list[list[str]]) -> Path:
    """A PDF with each page's lines of text, one under the other."""
    import pymupdf

    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page()
        for n, line in enumerate(lines):
            page.insert_text((56, 80 + 16 * n), line, fontsize=10)
    path = tmp_path / "doc.pdf"
    doc.save(path)
    return path


def test_formula_tex_drops_the_delimiters_only():
    assert ei.formula_tex("$$(-1)^{p}=-1$$") == "(-1)^{p}=-1"
    assert ei.formula_tex("$e=2.71828\\cdots $") == "e=2.71828\\cdots"
    assert ei.formula_tex("\\[ a+b \\]") == "a+b"
    assert ei.formula_tex("x^2") == "x^2"
    assert ei.formula_tex("$x=0\\ $") == "x=0\\ " and ei.formula_tex("$$a\\\\ $$") == "a\\\\"  # control space kept


def test_the_edit_budget_grows_with_the_text():
    assert ei.budget("x" * 19) == 0 and ei.budget("x" * 20) == 1 and ei.budget("x" * 85) == 4


def test_each_block_gets_its_page_and_a_formula_the_page_of_its_neighbours(tmp_path):
    first = "The first paragraph sits at the top of page one."
    second = "A second paragraph follows it on the same page."
    third = "The third paragraph opens the second page of it."
    pdf = _pdf(tmp_path, [[first, "x + y", second], [third]])
    blocks = [{"type": "text", "data": first}, {"type": "inline-formula", "data": "$x+y$"},
              {"type": "text", "data": second}, {"type": "display-formula", "data": "$$a^2$$"},
              {"type": "text", "data": third}, {"type": "text", "data": "Too short."},
              {"type": "text", "data": "This block is in no page of the document at all."}]
    counts = Counter()
    tests = ei.tests_for("doc", blocks, ei.TextLayer(pdf), counts)
    got = {t["id"]: (t["type"], t["page"]) for t in tests}
    assert got == {"doc_present_000": ("present", 1), "doc_math_001": ("math", 1), "doc_present_002": ("present", 1),
                   "doc_order_000_002": ("order", 1), "doc_present_004": ("present", 2)}, got
    assert counts == {"formula between pages": 1, "text shorter than MIN_PRESENT_CHARS": 1,
                      "text not found in the text layer": 1}
    order = next(t for t in tests if t["type"] == "order")
    assert (order["before"], order["after"]) == (first, second)
    assert next(t for t in tests if t["type"] == "math")["math"] == "x+y"


def test_a_block_is_found_across_line_breaks_hyphens_and_small_differences(tmp_path):
    pdf = _pdf(tmp_path, [["A paragraph broken over two lines with a hyphen-", "ated word and more words here."]])
    layer = ei.TextLayer(pdf)
    assert layer.locate("A paragraph broken over two lines with a hyphenated word and more words here.", 0)
    assert layer.locate("A paragraph broken ovr two lines with a hyphenated word and more words here.", 0)
    assert layer.locate("Nothing of the sort appears in this document at all.", 0) is None


def test_a_block_type_without_a_rule_stops_the_build(tmp_path):
    pdf = _pdf(tmp_path, [["Some text that is long enough to test."]])
    with pytest.raises(InputError, match="table"):
        ei.tests_for("doc", [{"type": "table", "data": "\\begin{tabular}"}], ei.TextLayer(pdf), Counter())


def test_the_committed_set_is_valid_and_covers_every_kind():
    skipped: dict = {}
    tests = ev.load_tests(COMMITTED, skipped)
    assert not skipped
    kinds = Counter(t["type"] for t in tests)
    assert set(kinds) == {"present", "order", "math"} and kinds["math"] > 1500 and kinds["present"] > 2000, kinds
    assert len({t["id"] for t in tests}) == len(tests), "test ids are unique"
    assert len({t["pdf"] for t in tests}) == 100


@pytest.mark.skipif(not BENCH.is_dir(), reason=f"the ground truth is not here: {BENCH} (shared data)")
def test_regenerating_the_independent_set_gives_the_committed_file():
    tests, left_out = ei.build(BENCH)
    assert ei.to_jsonl(tests) == COMMITTED.read_text(encoding="utf-8"), \
        "python -m curate.modalities.pdf.eval_independent ../shared/data/pdf-parse-bench-2025-q4 " \
        "tests/data/pdf_eval/independent.jsonl"
    formulas = sum(1 for gt in (BENCH / "ground_truth").glob("*.json")
                   for b in json.loads(gt.read_text()) if b["type"] != "text")
    assert sum(t["type"] == "math" for t in tests) + left_out.get("formula between pages", 0) == formulas
