"""`curate eval`: each check of olmOCR-Bench's unit-test format on tiny pages written here, the
JSONL loader's errors, the hand-written ground truth (tests/data/pdf_eval) against the PDFs it
names, and one run of the default recipe on a handful of them with floors per kind."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from pdf_samples import REAL

from curate.cli import EXIT_ERROR, EXIT_OK, main
from curate.errors import InputError
from curate.modalities.pdf import eval as ev
from curate.modalities.pdf.eval_checks import (check_baseline, check_math, check_order, check_text, math_key,
                                               near_ends, near_starts, normalize, ratio)
from curate.modalities.pdf.eval_set import BUILDERS, SCANS, write_eval_set
from curate.modalities.pdf.eval_tables import check_table

DATA = Path(__file__).resolve().parent / "data" / "pdf_eval"
GROUND_TRUTH = [DATA / "shared.jsonl", DATA / "generated.jsonl"]


def _t(type_: str, **kw) -> dict:
    return {"pdf": "x.pdf", "page": 1, "id": "t", "type": type_, **kw}


# ---- text matching -------------------------------------------------------------------------
def test_normalize_drops_emphasis_and_unifies_quotes_dashes_and_spaces():
    assert normalize("**Bold**  and\n_it_ <br/> “q” – x") == 'Bold and it "q" - x'
    assert normalize("snake_case_name") == "snake_case_name"  # an identifier is not italics


def _edit_ends(p: str, t: str, k: int) -> list[int]:
    """Ends of substrings of t within k edits of p, by the textbook dynamic programme."""
    col = list(range(len(p) + 1))
    ends = []
    for j, c in enumerate(t, 1):
        new = [0]
        for i in range(1, len(p) + 1):
            new.append(min(col[i] + 1, new[i - 1] + 1, col[i - 1] + (p[i - 1] != c)))
        col = new
        if col[-1] <= k:
            ends.append(j)
    return ends


def test_near_ends_agrees_with_the_edit_distance_programme():
    rng = random.Random(23)
    for _ in range(400):
        p = "".join(rng.choice("abc") for _ in range(rng.randint(1, 7)))
        t = "".join(rng.choice("abc ") for _ in range(rng.randint(0, 18)))
        k = rng.randint(0, 2)
        assert near_ends(p, t, k) == _edit_ends(p, t, k), (p, t, k)


def test_near_starts_are_where_matches_begin():
    assert near_starts("cat", "a cat, a cot", 0) == [2]
    assert 9 in near_starts("cat", "a cat, a cot", 1)


def test_ratio_is_the_indel_similarity():
    assert ratio("abc", "abc") == 1.0
    assert ratio("abcd", "abXd") == pytest.approx(0.75)
    assert ratio("", "x") == 0.0


# ---- present / absent / order ----------------------------------------------------------------
def test_present_finds_text_exactly_or_within_max_diffs():
    md = "# Title\n\nThe **quick** brown fox jumps."
    assert check_text(_t("present", text="quick brown fox"), md) == (True, "")
    assert not check_text(_t("present", text="quick brwn fox"), md)[0]
    assert check_text(_t("present", text="quick brwn fox", max_diffs=1), md)[0]
    assert not check_text(_t("present", text="QUICK brown"), md)[0]
    assert check_text(_t("present", text="QUICK brown", case_sensitive=False), md)[0]


def test_present_and_absent_honour_first_n_and_last_n():
    md = "header words. " + "body " * 40 + "footer words."
    assert check_text(_t("present", text="header words", first_n=20), md)[0]
    assert not check_text(_t("present", text="footer words", first_n=20), md)[0]
    assert check_text(_t("absent", text="header words", last_n=30), md)[0]
    assert not check_text(_t("absent", text="footer words", last_n=30), md)[0]


def test_a_page_shorter_than_the_text_has_nothing_and_keeps_nothing():
    assert not check_text(_t("present", text="a long phrase"), "\n")[0]
    assert check_text(_t("absent", text="a long phrase"), "\n")[0]


def test_absent_fails_when_the_header_is_kept():
    md = "Journal of Tests 12\n\nBody text."
    ok, why = check_text(_t("absent", text="Journal of Tests 12"), md)
    assert not ok and "on the page" in why
    assert check_text(_t("absent", text="Journal of Tests 12"), "Body text only.")[0]


def test_order_needs_before_to_start_before_after():
    md = "Left column text. Right column text."
    assert check_order(_t("order", before="Left column", after="Right column"), md) == (True, "")
    ok, why = check_order(_t("order", before="Right column", after="Left column"), md)
    assert not ok and "comes before" in why
    assert "not found" in check_order(_t("order", before="Middle", after="Left column"), md)[1]
    assert check_order(_t("order", before="Left colunm", after="Right column", max_diffs=2), md)[0]


# ---- tables --------------------------------------------------------------------------------
MD_TABLE = "Intro\n\n| Model | P | R |\n|---|---|---|\n| Base | 71.2 | 64.8 |\n| Ours | 83.5 | 79.1 |\n\nAfter"
HTML_TABLE = ("<table><tr><th rowspan='2'>Model</th><th colspan='2'>Scores</th></tr>"
              "<tr><th>P</th><th>R</th></tr><tr><td>Base</td><td>71.2</td><td>64.8</td></tr></table>")


def test_table_cell_with_its_neighbours_in_a_markdown_table():
    ok = _t("table", cell="79.1", up="64.8", left="83.5", top_heading="R", left_heading="Ours")
    assert check_table(ok, MD_TABLE) == (True, "")
    ok, why = check_table(_t("table", cell="79.1", up="71.2"), MD_TABLE)
    assert not ok and "up" in why
    assert "no cell" in check_table(_t("table", cell="99.9"), MD_TABLE)[1]
    assert check_table(_t("table", cell="79.1"), "79.1 in a paragraph") == (False, "no table on the page")
    assert not check_table(_t("table", cell="79.1", ignore_markdown_tables=True), MD_TABLE)[0]


def test_html_spans_make_neighbours_along_the_whole_side():
    assert check_table(_t("table", cell="71.2", top_heading="P", up="P", left="Base"), HTML_TABLE)[0]
    assert check_table(_t("table", cell="64.8", top_heading="R"), HTML_TABLE)[0]
    assert check_table(_t("table", cell="Scores", down="R"), HTML_TABLE)[0]  # colspan 2 sits over P and R
    assert check_table(_t("table", cell="Base", up="Model"), HTML_TABLE)[0]  # rowspan 2 reaches row 3
    assert not check_table(_t("table", cell="Base", right="64.8"), HTML_TABLE)[0]


def test_two_rows_merged_into_one_cell_fail_the_cell():
    merged = "| Lang | TED |\n|---|---|\n| OTSL HTML | 0.965 0.969 |"
    assert not check_table(_t("table", cell="0.965", left="OTSL"), merged)[0]


# ---- math and baseline ---------------------------------------------------------------------
def test_math_matches_a_formula_in_any_delimiter_whatever_its_spacing():
    assert check_math(_t("math", math="a^2 + 8 = 12"), "text $a^{2}+8=12$ text")[0]
    assert check_math(_t("math", math="a^2 + 8 = 12"), "\\[ a^2 + 8 = 12 \\]")[0]
    assert not check_math(_t("math", math="a^2 + 8 = 12"), "a2 + 8 = 12")[0]
    assert not check_math(_t("math", math="a^2 + 8 = 12"), "$a^3 + 8 = 12$")[0]
    assert not check_math(_t("math", math="x", ignore_dollar_delimited=True), "$x$")[0]
    assert math_key("\\left( x \\right)") == "(x)"


def test_baseline_catches_blank_repeating_and_off_script_pages():
    assert check_baseline(_t("baseline"), "A real page.") == (True, "")
    assert not check_baseline(_t("baseline"), "  \n---\n")[0]
    assert not check_baseline(_t("baseline"), "Text " + "ab" * 40)[0]
    assert check_baseline(_t("baseline", max_repeats=50), "Text " + "ab" * 40)[0]
    assert not check_baseline(_t("baseline"), "English 中文")[0]
    assert check_baseline(_t("baseline", check_disallowed_characters=False), "English 中文")[0]
    assert check_baseline(_t("baseline", max_length=5), "![figure](x.png) 12")[0] is False
    assert check_baseline(_t("baseline", max_length=5, max_length_skips_image_alt_tags=True), "![figure](x.png) 12")[0]


# ---- loading tests and pages ---------------------------------------------------------------
def test_a_bad_test_file_names_each_bad_line_and_the_fix(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"pdf": "a.pdf", "page": 1, "id": "ok", "type": "present", "text": "x"}\nnot json\n'
                 '{"pdf": "a.pdf", "page": 0, "id": "p", "type": "present", "text": "x"}\n'
                 '{"pdf": "a.pdf", "page": 1, "id": "k", "type": "colour"}\n'
                 '{"pdf": "a.pdf", "page": 1, "id": "e", "type": "order", "before": "x"}\n')
    with pytest.raises(InputError) as exc:
        ev.load_tests(f)
    msg = str(exc.value)
    for part in ("line 2: not JSON", "line 3: page 0", "line 4: type 'colour'", "line 5:", "has no after", "needs pdf"):
        assert part in msg
    with pytest.raises(InputError, match="cannot read"):
        ev.load_tests(tmp_path / "missing.jsonl")


def test_kinds_this_eval_does_not_run_are_counted_when_asked(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"pdf": "a.pdf", "page": 1, "id": "f", "type": "footnote", "marker": "1"}\n'
                 '{"pdf": "a.pdf", "page": 1, "id": "ok", "type": "present", "text": "x"}\n')
    skipped: dict = {}
    assert [t["id"] for t in ev.load_tests(f, skipped)] == ["ok"] and skipped == {"footnote": 1}
    with pytest.raises(InputError, match="type 'footnote'"):
        ev.load_tests(f)


def test_a_page_is_found_by_path_or_file_name_and_a_missing_page_fails():
    pages = {("sub/a.pdf", 1): "Hello world", ("b.pdf", 2): None}
    assert ev.page_of(pages, "a.pdf", 1) == "Hello world"
    assert ev.page_of(pages, "sub/a.pdf", 1) == "Hello world"
    out = ev.evaluate([_t("present", pdf="a.pdf", text="Hello"), _t("present", pdf="b.pdf", page=2, text="x"),
                       _t("baseline", pdf="c.pdf")], pages)
    assert [o.passed for o in out] == [True, False, False]
    assert ev.rates(out) == {"present": (1, 2), "baseline": (0, 1), "overall": (1, 3)}
    assert "page missing" in out[1].why


def test_pages_from_rows_keys_by_relative_path_and_1_based_page():
    rows = [{"root_key": "sub/a.pdf@0123456789abcdef", "ordinal": 0, "status": "present", "markdown": "one"},
            {"root_key": "sub/a.pdf@0123456789abcdef", "ordinal": 1, "status": "failed", "markdown": None}]
    assert ev.pages_from_rows(rows) == {("sub/a.pdf", 1): "one", ("sub/a.pdf", 2): None}


def test_curate_eval_refuses_a_directory_without_pages(tmp_path, capsys):
    tests = tmp_path / "t.jsonl"
    tests.write_text(json.dumps(_t("baseline")))
    assert main(["eval", str(tmp_path), "--tests", str(tests)]) == EXIT_ERROR
    assert "no output 'pages'" in capsys.readouterr().err


# ---- ground truth --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("eval_set")
    write_eval_set(folder)
    return folder


def test_every_ground_truth_test_is_valid_and_names_a_page_that_exists(generated):
    import pymupdf

    ids = []
    for f in GROUND_TRUTH:
        for t in ev.load_tests(f):
            path = (REAL if (REAL / t["pdf"]).exists() else generated) / t["pdf"]
            with pymupdf.open(path) as doc:
                assert 1 <= t["page"] <= doc.page_count, t["id"]
            ids.append(t["id"])
    assert len(ids) == len(set(ids)), "test ids are unique"
    assert {t["pdf"] for t in ev.load_tests(DATA / "generated.jsonl")} == set(BUILDERS)


IDEAL = {  # what a perfect reader writes for each generated page, typed from eval_set's source by hand
    "eval_two_columns.pdf": "# Reading Order in Two Columns\n\nColumn one opens the paper with a short account of why "
    "documents need careful reading.\n\nReaders of scanned archives lose hours when a page comes out with its columns "
    "interleaved.\n\nThe left column ends with this sentence about the cost of interleaved columns.\n\nThe right "
    "column begins only after the left column has been read to its end.\n\nIt describes a method that finds the "
    "columns first and reads each from top to bottom.\n\nThe method was tried on four hundred pages of reports from "
    "a regional archive.",
    "eval_booktabs.pdf": "Table 1 compares three readers on the same pages.\n\nTable 1: Precision and recall of three "
    "readers.\n\n| Model | Precision | Recall | Pages |\n|---|---|---|---|\n| Baseline | 71.2 | 64.8 | 120 |\n"
    "| Layout | 83.5 | 79.1 | 120 |\n| Layout+OCR | 88.9 | 85.4 | 96 |\n\nThe layout reader gains most on pages with "
    "tables and columns.",
    "eval_borderless.pdf": "The towns of the province differ more in area than in population, as the figures below "
    "show.\n\n<table><tr><th>City</th><th>Population</th><th>Area km2</th></tr><tr><td>Arlon</td><td>30,574</td>"
    "<td>118.6</td></tr><tr><td>Bastogne</td><td>16,275</td><td>172.0</td></tr><tr><td>Virton</td><td>11,474</td>"
    "<td>52.2</td></tr></table>\n\nFigures are from the census of the year the survey was made.",
    "eval_running_header.pdf": "# Headers Are Not Body Text\n\nA running head repeats the journal's name on every "
    "page, and a reader that keeps it puts the same words between every two paragraphs of the article.\n\nOn a "
    "one-page paper there is no repetition to detect, so the reader must tell the header by its place on the page "
    "and its small type.",
    "eval_hyphenated.pdf": "# Hyphens at Line Ends\n\nThe recognition of words split at line ends is a small matter "
    "that every reader meets. A state-of-the-art reader joins soft breaks and keeps the hyphen of a compound such "
    "as self-attention, which the text spells self-attention elsewhere too.",
    "eval_rotated.pdf": "# A Page Turned Sideways\n\nThis landscape page is stored portrait with a rotation of ninety "
    "degrees, so a viewer turns it upright.\n\nIts text must still come out in reading order, line by line.",
    "eval_figure.pdf": "The model reads a page in two stages, shown in Figure 1.\n\n![Figure 1](figure-1.png)\n\n"
    "Figure 1: The two stages of the model.\n\nThe first stage encodes each line; the second decodes the page's "
    "structure.",
    "eval_upside_down_scan.pdf": "A scanned page turned upside down\nmust be turned back before it is read.",
    "eval_layout_scan.pdf": "# Reading Scanned Pages by Layout\n\nScanned pages have no text layer, so a reader must "
    "find the parts of the page from its pixels alone: the running head, the body, the tables and the footer with "
    "its page number.\n\nA layout model labels each part, and every line the recogniser reads is given the label "
    "of the box that holds it, so the header and the footer can be left out while no line of the body is lost.\n\n"
    "| Model | Precision | Recall | Pages |\n|---|---|---|---|\n| Baseline | 71.2 | 64.8 | 120 |\n"
    "| Layout | 83.5 | 79.1 | 120 |\n| Layout+OCR | 88.9 | 85.4 | 96 |\n\nThe table above was read from the boxes "
    "of its cells.",
}


def test_a_perfect_reader_passes_every_generated_test_and_a_kept_header_fails_one():
    pages = {(name, 1): md for name, md in IDEAL.items()}
    outcomes = ev.evaluate(ev.load_tests(DATA / "generated.jsonl"), pages)
    assert [o.id for o in outcomes if not o.passed] == []
    kept_header = {**pages, ("eval_running_header.pdf", 1): "Journal of Document Studies 12 (2026) 41-49\n\n"
                   + IDEAL["eval_running_header.pdf"]}
    failed = [o.id for o in ev.evaluate(ev.load_tests(DATA / "generated.jsonl"), kept_header) if not o.passed]
    assert failed == ["eval_running_header_journal"]


def test_the_eval_set_is_the_same_bytes_every_time(tmp_path, generated):
    again = write_eval_set(tmp_path, ["eval_two_columns.pdf", "eval_rotated.pdf"])
    for p in again:
        assert p.read_bytes() == (generated / p.name).read_bytes()


def test_the_eval_set_holds_the_structure_its_tests_assume(generated):
    import pymupdf

    with pymupdf.open(generated / "eval_two_columns.pdf") as doc:
        blocks = doc[0].get_text("blocks")
        mid = doc[0].rect.width / 2
        assert any(b[2] < mid and "left column ends" in b[4] for b in blocks)
        assert any(b[0] > mid and "right column begins" in b[4] for b in blocks)
    with pymupdf.open(generated / "eval_rotated.pdf") as doc:
        assert doc[0].rotation == 90
    for scan in SCANS:
        with pymupdf.open(generated / scan) as doc:
            assert doc[0].get_text().strip() == "" and doc[0].get_images(), scan
    with pymupdf.open(generated / "eval_booktabs.pdf") as doc:
        assert sum(1 for d in doc[0].get_drawings() for it in d["items"] if it[0] == "l") == 3


# ---- the default recipe against its floors -------------------------------------------------
RUN_PDFS = ["docling_2305.03393v1-pg9.pdf", "docling_code_and_formula.pdf", "pymupdf_chinese_tables.pdf",
            "docling_scanned_fax_letter.pdf"]  # shared PDFs of the CI run: short, and every kind among them
# Pass rates on these PDFs and the generated text-layer ones (the generated scans are left out: OCR
# time): at issue 23's start (main 3f9ace4) present 28/31, absent 2/12, order 13/17, table 6/19,
# math 0/1, baseline 12/12, overall 61/92; with the layout pool, tables and the text fixes 31/31,
# 12/12, 17/17, 19/19, 0/1, 12/12, 91/92. The floors sit a little under the second.
FLOORS = {"present": 0.95, "absent": 0.9, "order": 0.9, "table": 0.9, "math": 0.0, "baseline": 1.0,
          "overall": 0.9}


@pytest.fixture(scope="module")
def run_out(tmp_path_factory, generated) -> Path:
    inp = tmp_path_factory.mktemp("eval_in")
    for name in RUN_PDFS:
        (inp / name).symlink_to(REAL / name)
    for name in BUILDERS:
        if name not in SCANS:
            (inp / name).symlink_to(generated / name)
    out = inp.parent / "eval_out"
    assert main(["run", "pdf_to_markdown", "--input", str(inp), "--output", str(out), "--executor", "local",
                 "--no-progress"]) == EXIT_OK
    return out


def _pages(out: Path) -> dict:
    import pyarrow.parquet as pq

    parts = sorted((out / "pages").glob("*.parquet"))
    return ev.pages_from_rows(r for f in parts for r in pq.read_table(f).to_pylist())


def _run_tests() -> list[dict]:
    names = set(RUN_PDFS) | (set(BUILDERS) - set(SCANS))
    return [t for f in GROUND_TRUTH for t in ev.load_tests(f) if t["pdf"] in names]


def test_the_default_recipe_meets_its_floors_per_kind(run_out):
    got = ev.rates(ev.evaluate(_run_tests(), _pages(run_out)))
    assert set(got) == set(FLOORS), "every kind is tested"
    low = {k: f"{p}/{n}" for k, (p, n) in got.items() if p / n < FLOORS[k]}
    assert not low, f"under the floor: {low}"


def test_curate_eval_prints_rates_by_kind_side_by_side(run_out, tmp_path, capsys):
    tests = tmp_path / "t.jsonl"
    tests.write_text("\n".join(json.dumps(t) for t in _run_tests()))
    assert main(["eval", str(run_out), str(run_out), "--tests", str(tests), "--failures",
                 "--json", str(tmp_path / "r.json")]) == EXIT_OK
    out = capsys.readouterr().out
    table, failures = out.split("\n\n", 1)
    lines = {ln.split()[0]: ln for ln in table.splitlines()}
    for kind in FLOORS:
        assert kind in lines and lines[kind].count("%") == 2, out
    assert failures.count(" failed") == 2, failures  # a failed list per run (empty or not: the recipe improves)
    assert re.search(r"^math: (rendered with KaTeX|TeX compared)", table, re.M), "says which math check ran"
    saved = json.loads((tmp_path / "r.json").read_text())
    assert len(saved) == 2 and all(len(v) == len(_run_tests()) for v in saved.values())
